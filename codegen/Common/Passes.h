//===- Passes.h - Code generation passes of every target --------*- C++ -*-===//

#ifndef KILN_CODEGEN_COMMON_PASSES_H
#define KILN_CODEGEN_COMMON_PASSES_H

#include "codegen/Utils/Utils.h"
#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>

namespace kiln::codegen {

/// The algorithm a target's selection chose for a convolution, which
/// kiln-codegen-conv-to-winograd and kiln-codegen-conv-to-im2col carry out.
constexpr llvm::StringLiteral kConvAlgorithmAttr = attr::kConvAlgorithm;
/// On the entry function: the bytes of the workspace that
/// kiln-codegen-plan-memory planned, which the caller provides.
constexpr llvm::StringLiteral kWorkspaceSizeAttr = attr::kWorkspaceSize;
/// What kiln-codegen-outline-kernels puts on each kernel (a KernelAttr: its
/// floating-point operations per call, 0 when unknown, and the ONNX nodes it
/// computes). It survives lowering to the LLVM dialect and becomes the
/// model's kernel table.
inline constexpr llvm::StringLiteral kKernelAttr = attr::kKernel;

/// The thread-local slot where kiln-codegen-lower-index-checks records a
/// run's first failed index check (its number + 1, and the index), which
/// the model ABI's kiln_abi_run clears and reads.
inline constexpr llvm::StringLiteral kRunErrorGlobal = "kiln.run_error";

#define GEN_PASS_DECL
#include "codegen/Common/Passes.h.inc"

/// Floating-point operations of one execution of `op` with its regions,
/// counted from constant trip counts (kiln-codegen-outline-kernels' rule),
/// or the most a loop can run where a bound is an affine.min or max (a
/// remainder; a convolution's taps that skip padding count whole); nullopt
/// when a loop's trip count is unknown.
std::optional<uint64_t> countFlops(mlir::Operation *op);

/// The ONNX nodes a loop nest came from, from the names in its location
/// ("conv1 (Conv)"), at most three, joined by ", ".
std::string sourceNodes(mlir::Location loc);

#define GEN_PASS_REGISTRATION
#include "codegen/Common/Passes.h.inc"

/// Whether Winograd F(m, 3) applies: 3x3, stride 1, undilated, f32, static
/// shapes, constant weights.
bool isWinogradCandidate(mlir::linalg::Conv2DNchwFchwOp conv);

/// Patterns of kiln-codegen-conv-to-im2col: NCHW 2-D convolutions on
/// tensors become an im2col copy and a contraction.
void populateConvToIm2ColPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-codegen-copy-repeated-results: a value returned more
/// than once is returned as copies after its first occurrence.
void populateCopyRepeatedResultsPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-codegen-fuse-elementwise: elementwise producers into
/// elementwise consumers only.
void populateFuseElementwisePatterns(mlir::RewritePatternSet &patterns,
                                     bool broadcasts = true);

/// Patterns of kiln-codegen-lower-copies: memref.copy becomes linalg.copy.
void populateLowerCopiesPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_PASSES_H
