//===- ModelCall.h - Calls into a model's code ------------------*- C++ -*-===//
//
// Internal to the runtime. A model's functions (kiln_abi_describe,
// kiln_abi_run, the emulator's host twins of its GPU kernels) are LLVM's
// code, not built with UBSan. In the sanitizer build, UBSan's
// -fsanitize=function check of an indirect call reads a type signature
// from the 8 bytes before the callee: for a function that starts the
// model's mapping, those lie outside it, and the check itself faults. The
// calls below are the ones exempt from that check.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MODELCALL_H
#define KILN_RUNTIME_MODELCALL_H

#if defined(__clang__)
#define KILN_CALLS_MODEL_CODE __attribute__((no_sanitize("function")))
#else
#define KILN_CALLS_MODEL_CODE
#endif

namespace kiln::runtime {

/// Calls `function`, a model's, with `args`.
template <typename Result, typename... Params, typename... Args>
KILN_CALLS_MODEL_CODE inline Result callModel(Result (*function)(Params...),
                                              Args... args) {
  return function(args...);
}

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MODELCALL_H
