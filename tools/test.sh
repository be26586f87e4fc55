#!/usr/bin/env bash
# Kiln's whole test suite, from a fresh clone: installs what is missing
# (tools/setup.sh), builds once into build/ (ccache keeps rebuilds fast), then
# runs the lit tests, the unit tests (ctest), the Python tests (pytest) and
# the format check, and prints one summary line:
#   kiln: N passed, N failed, N skipped
# A skipped test (lit's Unsupported, pytest's skip) is counted apart, never
# as passed, and each skip's reason is printed. What setup installs (qemu,
# the AArch64 sysroot) must be there: its absence fails the run.
# Usage: tools/test.sh               (KILN_BUILD_DIR overrides build/)
#        tools/test.sh --sanitizers  the same suite, every step on the
#          AddressSanitizer and UBSan build (build-asan/): lit, the unit
#          tests, pytest (its Python preloads the ASan runtime), after a
#          check that the sanitizers report what they must. Slower: about
#          an hour here (docs/reliability.md).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sanitize=0
case "${1:-}" in
  "") ;;
  --sanitizers) sanitize=1 ;;
  *) echo "usage: tools/test.sh [--sanitizers]" >&2; exit 2 ;;
esac
base=${KILN_BUILD_DIR:-$root/build}
build=$base
build_type=Release
build_flags=()
if (( sanitize )); then
  build=$base-asan
  build_type=RelWithDebInfo
  build_flags=(-DKILN_ENABLE_SANITIZERS=ON)
fi
llvm=/usr/lib/llvm-22

tools/setup.sh --quiet || exit 1
export PATH="$llvm/bin:$PATH"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Paths inside the checkout hash as relative ones, so that a fresh clone
# elsewhere (CI) still hits the cache.
export CCACHE_BASEDIR="$root"
# The sanitizer build has debug information, whose compilation directory
# ccache would otherwise hash: each clone would miss every object.
export CCACHE_NOHASHDIR=1
ccache --max-size=5G >/dev/null 2>&1 || true

step() { echo; echo "== $*"; }

# Adds the counts of the ctest run logged in $log to the totals; a run that
# reports nothing counts as one failure.
count_ctest() {
  local total fails
  total=$(sed -nE 's/.* tests failed out of ([0-9]+).*/\1/p' "$log" | tail -1)
  fails=$(sed -nE 's/.* ([0-9]+) tests failed out of.*/\1/p' "$log" | tail -1)
  total=${total:-0}; fails=${fails:-0}
  if [[ $total == 0 ]] && ! grep -q "No tests were found" "$log"; then fails=1; fi
  passed=$((passed + total - fails)); failed=$((failed + fails))
}

step "configure and build ($build)"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=$build_type "${build_flags[@]}" \
    -DCMAKE_C_COMPILER="$llvm/bin/clang" \
    -DCMAKE_CXX_COMPILER="$llvm/bin/clang++" \
    -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
    -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null || exit 1
fi
ninja -C "$build" all kiln-doc || { echo "kiln: the build failed"; exit 1; }

passed=0
failed=0
skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# LLVM's bump allocators poison their free space for ASan in code inlined
# into Kiln's instrumented objects, while the same allocators inside
# Debian's uninstrumented libMLIR hand that space out without unpoisoning
# it: a false "use-after-poison" in MLIR's own code. allow_user_poisoning=0
# turns only that manual poisoning off; ASan's own redzones stay.
asan_options=allow_user_poisoning=0

if (( sanitize )); then
  step "the sanitizers are live ($build)"
  # A suite that passes on a sanitizer build proves nothing if the checks
  # are off: the canary (test/sanitizers/canary.cpp, built with Kiln's
  # flags) must be stopped by each report, and Kiln's own programs and
  # libraries must call into ASan and UBSan.
  live=1
  declare -A canary=([heap]="AddressSanitizer: heap-buffer-overflow"
                     [use]="AddressSanitizer: heap-use-after-free"
                     [overflow]="runtime error: signed integer overflow"
                     [shift]="runtime error: shift exponent")
  for check in "${!canary[@]}"; do
    if "$build/bin/kiln-sanitizer-canary" "$check" >"$log" 2>&1 ||
       ! grep -q "${canary[$check]}" "$log"; then
      echo "failed: the canary's '$check' was not stopped by '${canary[$check]}'"
      cat "$log"; live=0
    fi
  done
  mapfile -t instrumented < <(ls "$build"/bin/kiln-compile "$build"/bin/kiln-opt \
    "$build"/bin/kiln-run "$build"/lib/libkiln_runtime.so "$build"/python/kiln/_kiln*.so)
  (( ${#instrumented[@]} == 5 )) || { echo "failed: a program or library is missing"; live=0; }
  for f in "${instrumented[@]}"; do
    # Read whole, not piped into grep -q: its early exit would fail nm
    # under pipefail.
    symbols=$(nm -D "$f" 2>/dev/null)
    if ! grep -q "__asan_report_load" <<<"$symbols" ||
       ! grep -q "__ubsan_handle_" <<<"$symbols"; then
      echo "failed: $f does not call ASan and UBSan"; live=0
    fi
  done
  if (( live )); then
    echo "sanitizers: the canary's 4 reports seen; ${#instrumented[@]} programs and libraries instrumented"
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  # Every program below stops at its first report. Leaks are checked in
  # Kiln's programs; Python keeps its objects at exit by design, so its
  # runs (pytest) do not.
  export ASAN_OPTIONS=$asan_options:detect_leaks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

step "lit tests"
PATH="$root/.venv/bin:$PATH" "$llvm/bin/lit" -sv "$build/test" 2>&1 | tee "$log"
lit_pass=$(grep -E '^\s+(Passed|Expectedly Failed)\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
lit_fail=$(grep -E '^\s+(Failed|Unexpectedly Passed|Unresolved|Timed Out)\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
lit_skip=$(grep -E '^\s+(Unsupported|Skipped|Excluded)\s*:' "$log" | awk -F: '{s+=$2} END {print s+0}')
echo "lit: $lit_pass passed, $lit_fail failed, $lit_skip skipped"
passed=$((passed + lit_pass)); failed=$((failed + lit_fail)); skipped=$((skipped + lit_skip))

step "unit tests (ctest)"
ctest --test-dir "$build" --output-on-failure -j2 2>&1 | tee "$log"
count_ctest

step "bad-input tests under AddressSanitizer and UBSan ($base-asan)"
# The importer's and the runtime's unit tests hold every bad-input case
# (malformed models, hostile external data, wrong tensors at run time); they
# run again in a sanitizer build, where any memory error fails them.
asan="$base-asan"
# The codegen harness links the whole compiler, which only the sanitizer
# mode builds with the sanitizers; the default run keeps to the importer
# and the runtime, whose sanitizer build takes minutes.
fuzzers=(import model-proto model-file tensor-file)
(( sanitize )) && fuzzers=(import model-proto codegen model-file tensor-file)
if (( sanitize )); then
  echo "(the whole suite runs on $asan in this mode: the unit tests above were these)"
else
  if [[ ! -f "$asan/build.ninja" ]]; then
    cmake -G Ninja -S "$root" -B "$asan" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_ENABLE_SANITIZERS=ON \
      -DCMAKE_C_COMPILER="$llvm/bin/clang" \
      -DCMAKE_CXX_COMPILER="$llvm/bin/clang++" \
      -DLLVM_EXTERNAL_LIT="$llvm/bin/lit" \
      -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null || exit 1
  fi
  asan_tests=(kiln_runtime_tests KilnImportTests)
  if ninja -C "$asan" kiln-run "${asan_tests[@]}" "${fuzzers[@]/#/kiln-fuzz-}" \
    >"$log" 2>&1; then
    for t in "${asan_tests[@]}"; do
      (cd "$asan" &&
        ASAN_OPTIONS=$asan_options:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
          "$asan/bin/$t" --gtest_brief=1) 2>&1 | tee "$log"
      t_pass=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log" | tail -1)
      t_fail=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
      [[ -z "$t_pass$t_fail" ]] && t_fail=1  # crashed before its summary
      passed=$((passed + ${t_pass:-0})); failed=$((failed + ${t_fail:-0}))
    done
  else
    tail -30 "$log"; echo "the sanitizer build failed"; failed=$((failed + 1))
  fi
fi

step "fuzzing harnesses, a fixed seed and count of inputs each, and their regressions ($asan)"
# libFuzzer with ASan and UBSan (docs/reliability.md): each harness replays
# the inputs that once crashed it (test/fuzz/regressions/<harness>/), then
# mutates its seed corpus (test/fuzz/corpus/<harness>/, the importer's for
# the ModelProto mutator and for codegen, which runs that mutator's models
# through the whole compiler; copied: libFuzzer adds to the folder it is given)
# for a fixed count of inputs from a fixed seed, so that the step gives the
# same answer for the same build (about 20 s each here, 120 s at most). A
# crash, hang, leak or sanitizer report fails the step and leaves the input
# in $asan/fuzz-artifacts/
declare -A fuzz_runs=([import]=4000 [model-proto]=400 [codegen]=200
                      [model-file]=100000 [tensor-file]=200000)
# Extra arguments by harness (none now: the model-file harness checks, but
# does not load, a file whose seal holds, which libFuzzer forges by writing
# the checksum it saw computed into the seal; a re-sealed file is a crafted
# one, which is code the user chose to load).
declare -A fuzz_args=()
# libFuzzer's link puts libstdc++ ahead of the shared ASan runtime, which
# ASan's start-up check refuses; libstdc++ defines no malloc, so the order
# loses nothing, and the check is off for the harnesses.
fuzz_env=(ASAN_OPTIONS=$asan_options:detect_leaks=1:verify_asan_link_order=0)
for h in "${fuzzers[@]}"; do
  bin="$asan/bin/kiln-fuzz-$h"
  if [[ ! -x "$bin" ]]; then
    echo "failed: $bin was not built"; failed=$((failed + 1)); continue
  fi
  work="$asan/fuzz-work/$h"; artifacts="$asan/fuzz-artifacts/$h/"
  rm -rf "$work"; mkdir -p "$work" "$artifacts"
  seeds=$h
  [[ $h == model-proto || $h == codegen ]] && seeds=import
  cp "$root/test/fuzz/corpus/$seeds/"* "$work/"
  # codegen replays the ModelProto mutator's finds too, down to an object.
  regression_dirs=("$root/test/fuzz/regressions/$h")
  [[ $h == codegen ]] && regression_dirs+=("$root/test/fuzz/regressions/model-proto")
  mapfile -t regressions < <(for d in "${regression_dirs[@]}"; do
                               ls "$d"/* 2>/dev/null; done)
  ok=1
  if (( ${#regressions[@]} )) &&
     ! (cd "$work" && env "${fuzz_env[@]}" "$bin" "${regressions[@]}") >"$log" 2>&1; then
    tail -30 "$log"; ok=0
  fi
  if (( ok )) && ! (cd "$work" && env "${fuzz_env[@]}" "$bin" -seed=1 -runs="${fuzz_runs[$h]}" \
      ${fuzz_args[$h]:-} \
      -max_total_time=120 -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$artifacts" -print_final_stats=1 "$work") >"$log" 2>&1; then
    tail -30 "$log"; ok=0
  fi
  if (( ok )); then
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log")
    echo "fuzz $h: ${#regressions[@]} regression input(s), ${runs:-?} runs, no finding"
    passed=$((passed + 1))
  else
    echo "failed: fuzz $h (inputs in $artifacts)"; failed=$((failed + 1))
  fi
done

tsan="$base-tsan"
step "the runtime's concurrency tests under ThreadSanitizer ($tsan)"
# Many threads on one handle, several handles and models at once, the last
# release on another thread (docs/reliability.md): a runtime-only build with
# -fsanitize=thread, where any data race fails the test.
if [[ ! -f "$tsan/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$tsan" -DKILN_RUNTIME_ONLY=ON \
    -DKILN_ENABLE_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$llvm/bin/clang" \
    -DCMAKE_CXX_COMPILER="$llvm/bin/clang++" >/dev/null || exit 1
fi
tsan_test="$tsan/test/unit/runtime/kiln_runtime_tests"
if ninja -C "$tsan" kiln_runtime_tests >"$log" 2>&1; then
  if ! nm "$tsan_test" | grep " __tsan_init$" >/dev/null; then
    echo "failed: $tsan_test is not built with ThreadSanitizer"
    failed=$((failed + 1))
  else
    TSAN_OPTIONS=halt_on_error=1 "$tsan_test" --gtest_brief=1 \
      --gtest_filter='Concurrency.*:AddModel.SerialisesConcurrentRuns' 2>&1 | tee "$log"
    t_pass=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?.*/\1/p' "$log" | tail -1)
    t_fail=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | tail -1)
    [[ -z "$t_pass$t_fail" ]] && t_fail=1  # a race report stops the run
    passed=$((passed + ${t_pass:-0})); failed=$((failed + ${t_fail:-0}))
  fi
else
  tail -30 "$log"; echo "the ThreadSanitizer build failed"; failed=$((failed + 1))
fi

step "AArch64: cross-built runtime and kiln-run, unit tests under qemu"
# tools/setup.sh installs the cross sysroot and qemu-user: their absence is
# a failure, not a reason to skip.
arm=${KILN_AARCH64_BUILD_DIR:-$base-aarch64}
if [[ -f /usr/aarch64-linux-gnu/lib/libc.so.6 ]] && command -v qemu-aarch64 >/dev/null; then
  if [[ ! -f "$arm/build.ninja" ]]; then
    cmake -G Ninja -S "$root" -B "$arm" -DKILN_RUNTIME_ONLY=ON \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" >/dev/null || exit 1
  fi
  if ninja -C "$arm" >"$log" 2>&1; then
    ctest --test-dir "$arm" --output-on-failure -j2 2>&1 | tee "$log"
    count_ctest
  else
    tail -30 "$log"; echo "the AArch64 cross build failed"; failed=$((failed + 1))
  fi
  export KILN_AARCH64_BUILD_DIR="$arm"  # for test/aarch64 (pytest)
else
  echo "failed: no AArch64 sysroot (/usr/aarch64-linux-gnu) or no qemu-aarch64 (tools/setup.sh installs them)"
  failed=$((failed + 1))
fi

# Ops and models against onnxruntime (ResNet-50, MobileNetV2 and BERT-base
# among them; the other large models are deselected, see test_models.py), the
# Python API, the ONNX conformance suite, and the AArch64 tests under qemu,
# which must run (KILN_REQUIRE_AARCH64).
step "Python tests (pytest)"
py_dirs=(test/python test/conformance test/aarch64)
py_env=()
if (( sanitize )); then
  # The Python module leaves ASan's runtime to its process: Python preloads
  # the shared runtime that Kiln's programs link too (CMakeLists.txt).
  py_env=(LD_PRELOAD="$("$llvm/bin/clang" -print-file-name=libclang_rt.asan-x86_64.so)"
          ASAN_OPTIONS=$asan_options:detect_leaks=0)
fi
env "${py_env[@]}" \
  PYTHONPATH="$build/python:$root/python:${PYTHONPATH:-}" KILN_BUILD_DIR="$build" \
  KILN_REQUIRE_AARCH64=1 \
  "$root/.venv/bin/python" -m pytest -q -m "not large" -rs "${py_dirs[@]}" 2>&1 | tee "$log"
# pytest's closing line, e.g. "528 passed, 12 deselected in 435.47s".
summary=$(grep -E '[0-9]+ (passed|failed|errors?|skipped).* in [0-9.]+s' "$log" | tail -1)
py_pass=$(grep -oE '[0-9]+ passed' <<<"$summary" | grep -oE '[0-9]+')
py_fail=$(grep -oE '[0-9]+ (failed|error|errors)' <<<"$summary" | awk '{s+=$1} END {print s+0}')
py_skip=$(grep -oE '[0-9]+ skipped' <<<"$summary" | grep -oE '[0-9]+')
[[ -z "$summary" ]] && py_fail=1  # pytest died before its summary
passed=$((passed + ${py_pass:-0})); failed=$((failed + ${py_fail:-0}))
skipped=$((skipped + ${py_skip:-0}))

step "format check (clang-format, LLVM style)"
mapfile -t sources < <(git ls-files '*.c' '*.cpp' '*.h')
if "$llvm/bin/clang-format" --dry-run --Werror "${sources[@]}" 2>"$log"; then
  echo "format: ${#sources[@]} files clean"
  passed=$((passed + 1))
else
  head -20 "$log"
  echo "format: files differ from clang-format; run tools/format.sh"
  failed=$((failed + 1))
fi

echo
echo "kiln: $passed passed, $failed failed, $skipped skipped"
[[ $failed == 0 ]]
