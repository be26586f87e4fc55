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

namespace kiln::cpu {

#define GEN_PASS_DECL
#include "codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/CPU/Passes.h.inc"

/// Patterns of kiln-cpu-conv-to-im2col: NCHW 2-D convolutions on tensors
/// become an im2col copy and a contraction.
void populateConvToIm2ColPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-copy-repeated-results: a value returned more than
/// once is returned as copies after its first occurrence.
void populateCopyRepeatedResultsPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-fuse-elementwise: elementwise producers into
/// elementwise consumers only.
void populateFuseElementwisePatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-lower-copies: memref.copy becomes linalg.copy.
void populateLowerCopiesPatterns(mlir::RewritePatternSet &patterns);

/// Patterns of kiln-cpu-reorder-loops: generalize contractions and move the
/// unit-stride output loop innermost.
void populateReorderLoopsPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_PASSES_H
