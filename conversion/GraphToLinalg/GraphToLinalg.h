//===- GraphToLinalg.h - Graph to linalg conversion -------------*- C++ -*-===//
//
// The lowering of the graph dialect to linalg/tensor/arith/math. Patterns are
// grouped by op family, one file each, as the dialect's ops are.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_GRAPHTOLINALG_GRAPHTOLINALG_H
#define KILN_CONVERSION_GRAPHTOLINALG_GRAPHTOLINALG_H

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {

#define GEN_PASS_DECL
#include "conversion/GraphToLinalg/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "conversion/GraphToLinalg/Passes.h.inc"

/// Converts the graph dialect's types to what linalg computes on: unsigned
/// integer element types become signless of the same width, and the
/// #graph.blocked encoding is dropped (the 5-D shape keeps the layout).
class GraphTypeConverter : public mlir::TypeConverter {
public:
  GraphTypeConverter();
};

/// The attribute that marks the linalg.generic a graph.blocked_conv lowers to,
/// a dictionary of its `strides` and `dilations` (two i64 each). Lowering
/// and CPU code generation share it: kiln-cpu-select-conv-algorithm chooses
/// the algorithm of such a convolution, kiln-codegen-conv-to-winograd and
/// kiln-cpu-tile-and-vectorize compute it.
constexpr llvm::StringLiteral kBlockedConvAttr = attr::kBlockedConv;

/// The input channel block that a `kiln.blocked_conv` generic reads for
/// output channel block `ko` and reduction block `ci`: `ci` where the input
/// has the weight's `groupBlocks` channel blocks, else (a grouped
/// convolution of inputBlocks / groupBlocks groups of whole blocks; see
/// graph.blocked_conv) the block `ci` of `ko`'s group,
/// `(ko floordiv (outputBlocks / groups)) * groupBlocks + ci`. The
/// lowering writes it and code generation matches it, so tiles of output
/// blocks must not cross a group.
inline mlir::AffineExpr blockedConvInputBlock(mlir::AffineExpr ko,
                                              mlir::AffineExpr ci,
                                              int64_t inputBlocks,
                                              int64_t groupBlocks,
                                              int64_t outputBlocks) {
  if (inputBlocks == groupBlocks)
    return ci;
  int64_t groups = inputBlocks / groupBlocks;
  return ko.floorDiv(outputBlocks / groups) * groupBlocks + ci;
}

/// All patterns of the conversion.
void populateGraphToLinalgPatterns(const mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);

// One function per op family (see dialects/Graph/Graph*Ops.td).
void populateCoreToLinalgPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns);
void populateElementwiseToLinalgPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns);
void populateLayoutToLinalgPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);
void populateNNToLinalgPatterns(const mlir::TypeConverter &converter,
                                mlir::RewritePatternSet &patterns);
void populateShapeToLinalgPatterns(const mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);
void populateReductionToLinalgPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
void populateSelectionToLinalgPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
void populateRecurrentToLinalgPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOLINALG_GRAPHTOLINALG_H
