//===- ObjectEmitter.h - LLVM IR to optimised object code -------*- C++ -*-===//

#ifndef KILN_LIB_TARGET_OBJECTEMITTER_H
#define KILN_LIB_TARGET_OBJECTEMITTER_H

#include "lib/Target/TargetInfo.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <string>

namespace kiln {

/// Sets the module's triple and data layout for `machine` and runs LLVM's
/// O3 pipeline over it. A non-zero `sveVectorBits` fixes the SVE vector
/// length of every function (see TargetInfo::sveVectorBits).
llvm::Error optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                           unsigned sveVectorBits = 0);

/// Emits `module` as an ELF relocatable object into `object`.
llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       std::string &object);

/// Emits `module` as target assembly into `assembly`.
llvm::Error emitAssembly(llvm::Module &module, llvm::TargetMachine &machine,
                         std::string &assembly);

} // namespace kiln

#endif // KILN_LIB_TARGET_OBJECTEMITTER_H
