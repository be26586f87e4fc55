//===- GraphShapeUtils.h - Shape helpers for graph ops ----------*- C++ -*-===//
//
// Shape arithmetic shared by the verifiers and type inference of graph ops.
// Dynamic dimensions are ShapedType::kDynamic throughout.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H
#define KILN_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace kiln::graph {

/// Formats a shape as ONNX users read it: [1,3,?,224].
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The numpy broadcast of two shapes, or std::nullopt when they do not
/// broadcast. A dynamic dimension against 1 or itself stays dynamic.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Output size of one spatial dimension of a convolution or pooling window.
/// Returns kDynamic when `inputSize` is dynamic.
int64_t convOutputSize(int64_t inputSize, int64_t kernelSize, int64_t stride,
                       int64_t padBegin, int64_t padEnd, int64_t dilation,
                       bool ceilMode = false);

/// Whether a static shape has at most `limit` elements, counted without
/// overflow: a shape whose product wraps around (a splat constant can have
/// any shape) does not pass as small. A shape with a zero has none.
bool hasAtMostElements(llvm::ArrayRef<int64_t> shape, int64_t limit);

/// Whether declared result types agree with inferred ones: same element
/// types and ranks, and equal dimensions wherever both are static.
bool areCompatibleResultTypes(mlir::TypeRange inferred,
                              mlir::TypeRange declared);

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_GRAPHSHAPEUTILS_H
