//===- HalfStorage.h - f32 weights stored as f16 ----------------*- C++ -*-===//
//
// A half-precision model computes in f32 on the CPU (kiln-graph-widen-half),
// so its weights, converted when compiling, would take twice the bytes of
// the model they came from. Every large f32 constant whose values are all
// f16 values (those weights, and their packed and padded forms) is stored
// as f16 instead, and converted back into a zero-initialised (.bss) f32
// array by a constructor when the model is loaded: the shared object keeps
// the f16 model's size, and the kernels read the f32 arrays as before.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_HALFSTORAGE_H
#define KILN_LIB_TARGET_HALFSTORAGE_H

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdint>

namespace kiln {

/// Stores the module's large f32 constants that f16 holds exactly as f16,
/// converted by a constructor in code for `machine`'s architecture's
/// baseline (it runs when the model loads, before the runtime checks the
/// CPU's features); returns the bytes saved.
uint64_t storeConstantsAsHalf(llvm::Module &module,
                              const llvm::TargetMachine &machine);

} // namespace kiln

#endif // KILN_LIB_TARGET_HALFSTORAGE_H
