//===- Passes.h - CPU code generation passes --------------------*- C++ -*-===//

#ifndef KILN_CODEGEN_CPU_PASSES_H
#define KILN_CODEGEN_CPU_PASSES_H

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

namespace kiln::cpu {

/// The algorithm kiln-cpu-select-conv-algorithm chose for a convolution.
constexpr llvm::StringLiteral kConvAlgorithmAttr = "kiln.conv_algorithm";
/// On a function: one line per convolution, its algorithm and the estimates.
constexpr llvm::StringLiteral kConvReportAttr = "kiln.conv_algorithms";
/// On the entry function: the bytes of the workspace that
/// kiln-cpu-plan-memory planned, which the caller provides.
constexpr llvm::StringLiteral kWorkspaceSizeAttr = "kiln.workspace_size";

#define GEN_PASS_DECL
#include "codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/CPU/Passes.h.inc"

/// Every convolution algorithm: im2col, direct, winograd-2x3, winograd-4x3,
/// winograd-6x3.
llvm::ArrayRef<llvm::StringLiteral> convAlgorithmNames();

/// Whether `name` is one of convAlgorithmNames().
bool isConvAlgorithmName(llvm::StringRef name);

/// M for "winograd-Mx3", nothing for another algorithm name.
std::optional<int> winogradTileOf(llvm::StringRef algorithm);

/// Whether Winograd F(m, 3) applies: 3x3, stride 1, undilated, f32, static
/// shapes, constant weights.
bool isWinogradCandidate(mlir::linalg::Conv2DNchwFchwOp conv);

/// The values of a constant f32 tensor, held inline or as a resource blob,
/// or of a reshape or linalg.transpose of one.
std::optional<llvm::SmallVector<double>> constantValues(mlir::Value value);

/// The largest divisor of `size` that is at most `limit` (at least 1): a
/// tile size that leaves no remainder.
int64_t largestDivisor(int64_t size, int64_t limit);

/// The ONNX node name of a convolution, from its location, or "conv#INDEX".
std::string convLayerName(mlir::Operation *op, unsigned index);

/// Attributes kiln-cpu-outline-kernels puts on each kernel: its
/// floating-point operations per call (i64, 0 when unknown) and the ONNX
/// nodes it computes (a string). They survive lowering to the LLVM dialect
/// and become the model's kernel table.
inline constexpr llvm::StringLiteral kKernelFlopsAttr = "kiln.kernel_flops";
inline constexpr llvm::StringLiteral kKernelSourceAttr = "kiln.kernel_source";

/// Patterns of kiln-cpu-conv-to-im2col: NCHW 2-D convolutions on tensors
/// become an im2col copy and a contraction.
void populateConvToIm2ColPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-copy-repeated-results: a value returned more than
/// once is returned as copies after its first occurrence.
void populateCopyRepeatedResultsPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-fuse-elementwise: elementwise producers into
/// elementwise consumers only.
void populateFuseElementwisePatterns(mlir::RewritePatternSet &patterns,
                                     bool broadcasts = true);

/// Patterns of kiln-cpu-lower-copies: memref.copy becomes linalg.copy.
void populateLowerCopiesPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-reorder-loops: generalize contractions and move the
/// unit-stride output loop innermost; with a `transposeBlock` above 0,
/// transposes that move the innermost dimension go through square register
/// blocks of that side.
void populateReorderLoopsPatterns(mlir::RewritePatternSet &patterns,
                                  int64_t transposeBlock);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_PASSES_H
