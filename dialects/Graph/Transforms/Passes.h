//===- Passes.h - Passes of the graph dialect -------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
#define KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H

#include "dialects/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::graph {

/// The attributes by which the graph passes hand the model's interface to
/// the model ABI, at the other end of code generation (they stay on the
/// entry function down to the LLVM dialect); dialects/Kiln/KilnAttributes.h
/// says what each holds.
constexpr llvm::StringLiteral kNameAttr = attr::kName;
constexpr llvm::StringLiteral kModelInputsAttr = attr::kInputs;
constexpr llvm::StringLiteral kModelOutputsAttr = attr::kOutputs;
constexpr llvm::StringLiteral kBatchRepeatAttr = attr::kBatchRepeat;
constexpr llvm::StringLiteral kBatchSplitAttr = attr::kBatchSplit;
constexpr llvm::StringLiteral kDimsAttr = attr::kDims;
constexpr llvm::StringLiteral kSymbolsAttr = attr::kSymbols;

#define GEN_PASS_DECL
#include "dialects/Graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Graph/Transforms/Passes.h.inc"

/// BatchNormalization, and Mul and Add by per-channel constants, folded into
/// the constant weights of the Conv or Gemm before them.
void populateFoldBatchNormPatterns(mlir::RewritePatternSet &patterns);

/// Bias, residual and activation ops taken into graph.fused_conv and
/// graph.fused_matmul.
void populateFuseEpiloguesPatterns(mlir::RewritePatternSet &patterns);

/// 2-D convolutions with constant weights, pools and the elementwise ops,
/// BatchNorms and concats between them put into the blocked layout NCHWc
/// with `block` channels per block (kiln-graph-blocked-layout).
void populateBlockedLayoutPatterns(mlir::RewritePatternSet &patterns,
                                   int64_t block);

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
