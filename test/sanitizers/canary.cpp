//===- canary.cpp - Proof that the sanitizer build's checks are live ------===//
//
// tools/test.sh --sanitizers runs the whole test suite on the sanitizer
// build (KILN_ENABLE_SANITIZERS). A suite that passes there says nothing if
// the sanitizers are not really active (a flag lost, a runtime not loaded),
// so the mode first runs this program, built with the same flags, and
// requires each report below:
//   kiln-sanitizer-canary heap      AddressSanitizer: heap-buffer-overflow
//   kiln-sanitizer-canary use       AddressSanitizer: heap-use-after-free
//   kiln-sanitizer-canary overflow  runtime error: signed integer overflow
//   kiln-sanitizer-canary shift     runtime error: shift exponent
//
//===----------------------------------------------------------------------===//

#include <climits>
#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: kiln-sanitizer-canary heap|use|overflow|shift\n");
    return 2;
  }
  // Sizes and values the optimiser cannot see through.
  volatile int eight = 8;
  const char *what = argv[1];
  int result = 0;
  if (!std::strcmp(what, "heap")) {
    int *p = new int[eight];
    result = p[eight]; // one past the end
    delete[] p;
  } else if (!std::strcmp(what, "use")) {
    int *p = new int[eight];
    delete[] p;
    result = p[0];
  } else if (!std::strcmp(what, "overflow")) {
    volatile int big = INT_MAX;
    result = big + eight;
  } else if (!std::strcmp(what, "shift")) {
    volatile int by = eight * 8;
    result = 1 << by;
  } else {
    std::fprintf(stderr, "kiln-sanitizer-canary: unknown check '%s'\n", what);
    return 2;
  }
  // Reached only where the sanitizer did not stop the program.
  std::printf("kiln-sanitizer-canary: '%s' was not reported (%d)\n", what,
              result);
  return 0;
}
