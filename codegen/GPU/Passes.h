//===- Passes.h - NVIDIA GPU code generation passes -------------*- C++ -*-===//

#ifndef KILN_CODEGEN_GPU_PASSES_H
#define KILN_CODEGEN_GPU_PASSES_H

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace kiln::gpu {

using namespace kiln::codegen;

/// On the entry function: the bytes of the constants segment
/// (kiln-gpu-externalize-constants), which the runtime uploads.
inline constexpr llvm::StringLiteral kConstantsSizeAttr = attr::kConstantsSize;
/// The global holding that segment.
inline constexpr llvm::StringLiteral kConstantsGlobal = "kiln_constants";
/// The GPU module that holds every kernel of a model.
inline constexpr llvm::StringLiteral kKernelModule = "kiln_kernels";
/// On a kernel's host stub: grid x, y, z, then block x, y, z
/// (kiln-gpu-lower-launches).
inline constexpr llvm::StringLiteral kLaunchAttr = attr::kGPULaunch;
/// The suffix of a kernel's host twin (kiln-gpu-emulate).
inline constexpr llvm::StringLiteral kEmulatedSuffix = "_emu";

#define GEN_PASS_DECL
#include "codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/GPU/Passes.h.inc"

} // namespace kiln::gpu

#endif // KILN_CODEGEN_GPU_PASSES_H
