//===- ConstantValues.h - Reading and making float constants ----*- C++ -*-===//
//
// The folding passes compute new weights from old ones. These helpers read
// the elements of a `graph.constant` (inline `dense` or a `dense_resource`
// blob) as doubles and build a constant of a given type from doubles, as a
// blob when it is large, so that folded weights are held like imported ones.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_GRAPH_TRANSFORMS_CONSTANTVALUES_H
#define KILN_DIALECTS_GRAPH_TRANSFORMS_CONSTANTVALUES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace kiln::graph {

/// The elements of `value` in row-major order when it is a graph.constant of
/// floats (f32 and f64 blobs, or inline f16/bf16/f32/f64); nothing otherwise.
std::optional<llvm::SmallVector<double>> getFloatElements(mlir::Value value);

/// A graph.constant of `type` (a static float tensor) holding `values`,
/// rounded to its element type.
mlir::Value createFloatConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                mlir::RankedTensorType type,
                                llvm::ArrayRef<double> values);

/// When `value` is a float constant that broadcasts against a tensor of
/// `resultRank` dimensions along dimension `channelDim` only (all its other
/// dimensions are 1 after numpy's right alignment), its `channels` values, one
/// per index of that dimension (a single element is repeated); otherwise
/// nothing.
std::optional<llvm::SmallVector<double>> getPerChannelValues(mlir::Value value,
                                                             int64_t resultRank,
                                                             int64_t channelDim,
                                                             int64_t channels);

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_TRANSFORMS_CONSTANTVALUES_H
