//===- GraphReductionOps.cpp - Reductions, softmax and scans --------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace kiln::graph;

/// Why `axes` are not dimensions of a rank-`rank` tensor listed in strictly
/// increasing order, or an empty string when they are.
static std::string describeBadAxes(ArrayRef<int64_t> axes, int64_t rank) {
  std::string message;
  llvm::raw_string_ostream os(message);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank) {
      os << "axis " << axis << " is out of range for rank " << rank
         << " (axes must be in [0, " << rank << "))";
      break;
    }
    if (i > 0 && axes[i - 1] >= axis) {
      os << "axes " << formatShape(axes) << " must be strictly increasing";
      break;
    }
  }
  return message;
}

static LogicalResult checkAxes(std::optional<Location> loc,
                               ArrayRef<int64_t> axes, int64_t rank) {
  std::string message = describeBadAxes(axes, rank);
  if (message.empty())
    return success();
  return emitOptionalError(loc, message);
}

/// The type of `input` reduced over `axes`.
static LogicalResult inferReducedType(std::optional<Location> loc, Type input,
                                      ArrayRef<int64_t> axes, bool keepdims,
                                      Type elementType,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(input);
  if (failed(checkAxes(loc, axes, type.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0, e = type.getRank(); d < e; ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

#define KILN_REDUCE_INFER(OpTy)                                                \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferred) {                                       \
    Type input = adaptor.getInput().getType();                                 \
    return inferReducedType(                                                   \
        loc, input, adaptor.getAxes(), adaptor.getKeepdims(),                  \
        cast<ShapedType>(input).getElementType(), inferred);                   \
  }

KILN_REDUCE_INFER(ReduceSumOp)
KILN_REDUCE_INFER(ReduceMeanOp)
KILN_REDUCE_INFER(ReduceMaxOp)
KILN_REDUCE_INFER(ReduceMinOp)
KILN_REDUCE_INFER(ReduceProdOp)
KILN_REDUCE_INFER(ReduceL1Op)
KILN_REDUCE_INFER(ReduceL2Op)
KILN_REDUCE_INFER(ReduceLogSumOp)
KILN_REDUCE_INFER(ReduceLogSumExpOp)
KILN_REDUCE_INFER(ReduceSumSquareOp)

#undef KILN_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax
//===----------------------------------------------------------------------===//

static LogicalResult verifySoftmaxLike(Operation *op, ArrayRef<int64_t> axes) {
  if (axes.empty())
    return op->emitOpError("needs at least one axis");
  auto type = cast<RankedTensorType>(op->getOperand(0).getType());
  std::string message = describeBadAxes(axes, type.getRank());
  if (!message.empty())
    return op->emitOpError(message);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxLike(*this, getAxes());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxLike(*this, getAxes());
}
LogicalResult HardmaxOp::verify() {
  return verifySoftmaxLike(*this, getAxes());
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

#define KILN_ARG_REDUCE_INFER(OpTy)                                            \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &inferred) {                                       \
    int64_t axis = adaptor.getAxis();                                          \
    return inferReducedType(loc, adaptor.getInput().getType(), {axis},         \
                            adaptor.getKeepdims(),                             \
                            IntegerType::get(context, 64), inferred);          \
  }

KILN_ARG_REDUCE_INFER(ArgMaxOp)
KILN_ARG_REDUCE_INFER(ArgMinOp)

#undef KILN_ARG_REDUCE_INFER

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// A cumulative op's axis must name a dimension of its input.
template <typename OpTy> static LogicalResult verifyCumulative(OpTy op) {
  int64_t rank = op.getInput().getType().getRank();
  // The attribute's getter is unsigned: read it as the signed value it holds.
  auto axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ")
           << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult CumSumOp::verify() { return verifyCumulative(*this); }
LogicalResult CumProdOp::verify() { return verifyCumulative(*this); }

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  int64_t k = adaptor.getK();
  if (failed(checkAxes(loc, {axis}, type.getRank())))
    return failure();
  int64_t size = type.getDimSize(axis);
  if (!ShapedType::isDynamic(size) && k > size)
    return emitOptionalError(loc, "k = ", k, " is larger than dimension ", axis,
                             " of ", type, " (", size, ")");
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = k;
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  inferred.push_back(
      RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// NonZero, Unique, NonMaxSuppression
//===----------------------------------------------------------------------===//

static RankedTensorType getI64Type(MLIRContext *context,
                                   ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, IntegerType::get(context, 64));
}

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t count =
      type.hasStaticShape() ? type.getNumElements() : ShapedType::kDynamic;
  inferred.push_back(getI64Type(context, {type.getRank(), count}));
  inferred.push_back(getI64Type(context, {}));
  return success();
}

LogicalResult UniqueOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(loc, {axis}, type.getRank())))
    return failure();
  int64_t slices = type.getDimSize(axis);
  inferred.push_back(type);
  for (int i = 0; i < 3; ++i)
    inferred.push_back(getI64Type(context, {slices}));
  inferred.push_back(getI64Type(context, {}));
  return success();
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  auto boxes = cast<RankedTensorType>(adaptor.getBoxes().getType());
  auto scores = cast<RankedTensorType>(adaptor.getScores().getType());
  if (boxes.getRank() != 3 || scores.getRank() != 3)
    return emitOptionalError(loc, "boxes ", boxes, " and scores ", scores,
                             " must have rank 3");
  auto isScalar = [](Value value) {
    return !value || cast<RankedTensorType>(value.getType()).getRank() == 0;
  };
  if (!isScalar(adaptor.getMaxBoxes()) ||
      !isScalar(adaptor.getIouThreshold()) ||
      !isScalar(adaptor.getScoreThreshold()))
    return emitOptionalError(loc, "max_boxes, iou_threshold and "
                                  "score_threshold must be scalars");
  auto agree = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (!agree(boxes.getDimSize(2), 4) ||
      !agree(boxes.getDimSize(0), scores.getDimSize(0)) ||
      !agree(boxes.getDimSize(1), scores.getDimSize(2)))
    return emitOptionalError(loc, "boxes ", boxes,
                             " must be batch x boxes x 4 and scores ", scores,
                             " batch x classes x boxes");
  int64_t bound = adaptor.getBound();
  if (!ShapedType::isDynamic(boxes.getDimSize(1)) &&
      bound > boxes.getDimSize(1))
    return emitOptionalError(loc, "bound ", bound, " is above the ",
                             boxes.getDimSize(1), " boxes");
  int64_t rows = ShapedType::kDynamic;
  if (!ShapedType::isDynamic(scores.getDimSize(0)) &&
      !ShapedType::isDynamic(scores.getDimSize(1)))
    rows = scores.getDimSize(0) * scores.getDimSize(1) * bound;
  inferred.push_back(getI64Type(context, {rows, 3}));
  inferred.push_back(getI64Type(context, {}));
  return success();
}
