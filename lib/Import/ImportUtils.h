//===- ImportUtils.h - Small helpers of the importers ----------*- C++ -*-===//
//
// Helpers shared by the importers that build an operator from several graph
// ops (ImportComposite.cpp, ImportQuantized.cpp, ImportShape.cpp,
// ImportRunTimeShapes.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORT_IMPORTUTILS_H
#define KILN_LIB_IMPORT_IMPORTUTILS_H

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

namespace kiln::import {

inline mlir::RankedTensorType tensorType(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

inline mlir::Type elementType(mlir::Value value) {
  return tensorType(value).getElementType();
}

/// A rank-0 graph.constant of `element` holding `value`.
inline mlir::Value createScalar(NodeImporter &node, mlir::Type element,
                                double value) {
  auto type = mlir::RankedTensorType::get({}, element);
  mlir::Attribute scalar;
  if (auto floatType = llvm::dyn_cast<mlir::FloatType>(element))
    scalar = mlir::FloatAttr::get(floatType, value);
  else if (element.isInteger(1))
    scalar = mlir::BoolAttr::get(node.getContext(), value != 0.0);
  else
    scalar = mlir::IntegerAttr::get(element, static_cast<int64_t>(value));
  return node.create<graph::ConstantOp>(
      llvm::cast<mlir::TypedAttr>(mlir::DenseElementsAttr::get(type, scalar)));
}

/// A graph.constant of i64 `values` with `shape` ({} for a scalar).
inline mlir::Value createI64Constant(NodeImporter &node,
                                     llvm::ArrayRef<int64_t> shape,
                                     llvm::ArrayRef<int64_t> values) {
  auto type =
      mlir::RankedTensorType::get(shape, node.getBuilder().getI64Type());
  return graph::ConstantOp::create(
      node.getBuilder(), node.getLoc(),
      llvm::cast<mlir::TypedAttr>(
          mlir::DenseIntElementsAttr::get(type, values)));
}

/// `input` converted to `element` (itself when it already has it).
inline mlir::Value castTo(NodeImporter &node, mlir::Value input,
                          mlir::Type element) {
  if (!input || elementType(input) == element)
    return input;
  return graph::CastOp::create(node.getBuilder(), node.getLoc(),
                               tensorType(input).clone(element), input);
}

/// The axes [from, rank).
inline llvm::SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  llvm::SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

/// Normalizes `axis` for rank `rank`; an error names the node when it is out
/// of range.
inline mlir::FailureOr<int64_t> normalizeAxis(NodeImporter &node, int64_t axis,
                                              int64_t rank) {
  if (axis < -rank || axis >= rank) {
    node.emitError() << "axis " << axis << " is out of range for rank " << rank;
    return mlir::failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// Elementwise graph ops on values that may be null (after an error,
/// reported at the node): a null operand gives a null result, checked once
/// at the end.
struct NullSafe {
  NodeImporter &node;

  mlir::Value scalar(double v, mlir::Type element) {
    return createScalar(node, element, v);
  }
  template <typename OpTy> mlir::Value binary(mlir::Value a, mlir::Value b) {
    return a && b ? node.create<OpTy>(a, b) : mlir::Value();
  }
  template <typename OpTy> mlir::Value unary(mlir::Value a) {
    return a ? node.create<OpTy>(a) : mlir::Value();
  }
  mlir::Value add(mlir::Value a, mlir::Value b) {
    return binary<graph::AddOp>(a, b);
  }
  mlir::Value sub(mlir::Value a, mlir::Value b) {
    return binary<graph::SubOp>(a, b);
  }
  mlir::Value mul(mlir::Value a, mlir::Value b) {
    return binary<graph::MulOp>(a, b);
  }
  mlir::Value div(mlir::Value a, mlir::Value b) {
    return binary<graph::DivOp>(a, b);
  }
  mlir::Value equal(mlir::Value a, mlir::Value b) {
    return binary<graph::EqualOp>(a, b);
  }
  mlir::Value less(mlir::Value a, mlir::Value b) {
    return binary<graph::LessOp>(a, b);
  }
  mlir::Value greater(mlir::Value a, mlir::Value b) {
    return binary<graph::GreaterOp>(a, b);
  }
  mlir::Value logicalOr(mlir::Value a, mlir::Value b) {
    return binary<graph::OrOp>(a, b);
  }
  mlir::Value max(mlir::Value a, mlir::Value b) {
    return a && b ? node.create<graph::MaxOp>(mlir::ValueRange{a, b})
                  : mlir::Value();
  }
  mlir::Value min(mlir::Value a, mlir::Value b) {
    return a && b ? node.create<graph::MinOp>(mlir::ValueRange{a, b})
                  : mlir::Value();
  }
  mlir::Value floor(mlir::Value a) { return unary<graph::FloorOp>(a); }
  mlir::Value where(mlir::Value c, mlir::Value a, mlir::Value b) {
    return c && a && b ? node.create<graph::WhereOp>(c, a, b) : mlir::Value();
  }
  mlir::Value cast(mlir::Value a, mlir::Type element) {
    return castTo(node, a, element);
  }
};

} // namespace kiln::import

#endif // KILN_LIB_IMPORT_IMPORTUTILS_H
