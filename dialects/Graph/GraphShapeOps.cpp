//===- GraphShapeOps.cpp - Shape and data-movement ops --------------------===//
//
// Type inference, verifiers and folders of the shape ops. The folders
// evaluate small constant tensors (the shape arithmetic that exporters emit:
// Shape -> Gather -> Concat -> Reshape) so that the shape operands of later
// ops become constants.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

using namespace mlir;
using namespace kiln::graph;

/// Constants with more elements than this are not folded: folding is for
/// shape arithmetic, not for computing on weights.
static constexpr int64_t kMaxFoldElements = 4096;

static bool isDynamic(int64_t size) { return ShapedType::isDynamic(size); }

/// The elements of a constant operand small enough to fold, or std::nullopt.
static std::optional<SmallVector<Attribute>> getFoldableValues(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense ||
      !hasAtMostElements(dense.getType().getShape(), kMaxFoldElements))
    return std::nullopt;
  return llvm::to_vector(dense.getValues<Attribute>());
}

/// The static result type of `op` when it can hold a folded constant.
static RankedTensorType getStaticResultType(Operation *op) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() ||
      !hasAtMostElements(type.getShape(), kMaxFoldElements))
    return {};
  return type;
}

/// Row-major strides of a static shape. A shape with a zero dimension may
/// have others of any size (no element is ever indexed): its strides
/// saturate rather than overflow.
static SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    if (__builtin_mul_overflow(strides[d + 1], shape[d + 1], &strides[d]))
      strides[d] = std::numeric_limits<int64_t>::max();
  return strides;
}

/// The multi-index of linear position `linear` in a static shape.
static SmallVector<int64_t> delinearize(int64_t linear,
                                        ArrayRef<int64_t> shape) {
  SmallVector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : linear % shape[d];
    linear = shape[d] == 0 ? 0 : linear / shape[d];
  }
  return index;
}

/// Builds the folded constant of `op` from a function giving the element at
/// each multi-index of its (static) result.
static Attribute
buildFolded(Operation *op,
            llvm::function_ref<Attribute(ArrayRef<int64_t>)> element) {
  RankedTensorType type = getStaticResultType(op);
  if (!type)
    return {};
  SmallVector<Attribute> values;
  values.reserve(type.getNumElements());
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    Attribute value = element(delinearize(i, type.getShape()));
    if (!value)
      return {};
    values.push_back(value);
  }
  return DenseElementsAttr::get(type, values);
}

/// The integer value of an index element, or std::nullopt.
static std::optional<int64_t> getIndexValue(Attribute attr) {
  if (auto intAttr = dyn_cast<IntegerAttr>(attr))
    return intAttr.getType().isUnsignedInteger()
               ? static_cast<int64_t>(intAttr.getValue().getZExtValue())
               : intAttr.getValue().getSExtValue();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  bool allowZero = adaptor.getAllowZero();
  SmallVector<int64_t> result;
  int64_t inferIndex = -1;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (size < -1)
      return emitOptionalError(loc, "shape entry ", i, " is ", size,
                               "; sizes must be >= -1");
    if (size == -1) {
      if (inferIndex >= 0)
        return emitOptionalError(loc, "shape ", formatShape(shape),
                                 " has more than one -1");
      inferIndex = i;
      result.push_back(ShapedType::kDynamic);
      continue;
    }
    if (size == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= input.getRank())
        return emitOptionalError(loc, "shape entry ", i,
                                 " is 0 (copy the input size) but the input ",
                                 formatShape(input.getShape()), " has rank ",
                                 input.getRank());
      result.push_back(input.getDimSize(i));
      continue;
    }
    result.push_back(size);
  }
  if (allowZero && inferIndex >= 0 && llvm::is_contained(shape, 0))
    return emitOptionalError(loc, "shape ", formatShape(shape),
                             " has both -1 and 0 with allow_zero set");
  if (input.hasStaticShape()) {
    int64_t known = 1;
    bool allKnown = true;
    for (auto [i, size] : llvm::enumerate(result)) {
      if (static_cast<int64_t>(i) == inferIndex)
        continue;
      if (isDynamic(size))
        allKnown = false;
      else if (__builtin_mul_overflow(known, size, &known))
        return emitOptionalError(loc, "shape ", formatShape(shape),
                                 " has more elements than a tensor can hold");
    }
    int64_t total = input.getNumElements();
    if (allKnown && inferIndex >= 0) {
      if (known == 0 || total % known != 0)
        return emitOptionalError(loc, "cannot reshape ",
                                 formatShape(input.getShape()), " to ",
                                 formatShape(shape), ": ", total,
                                 " elements are not a multiple of ", known);
      result[inferIndex] = total / known;
    } else if (allKnown && known != total) {
      return emitOptionalError(
          loc, "cannot reshape ", formatShape(input.getShape()), " (", total,
          " elements) to ", formatShape(result), " (", known, " elements)");
    }
  }
  // Every `?` size of the input copied by a `0` at its index: the `-1`
  // is the quotient of the static sizes left.
  bool dynamicCopied =
      !input.hasStaticShape() && !allowZero && inferIndex >= 0 &&
      llvm::all_of(llvm::seq<int64_t>(0, input.getRank()), [&](int64_t d) {
        return !input.isDynamicDim(d) ||
               (d < int64_t(shape.size()) && shape[d] == 0);
      });
  if (dynamicCopied) {
    int64_t in = 1, out = 1;
    bool overflow = false;
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (!input.isDynamicDim(d) &&
          !(d < int64_t(shape.size()) && shape[d] == 0))
        overflow |= __builtin_mul_overflow(in, input.getDimSize(d), &in);
    for (auto [i, size] : llvm::enumerate(shape))
      if (int64_t(i) != inferIndex && size != 0)
        overflow |= __builtin_mul_overflow(out, size, &out);
    if (!overflow && out > 0 && in % out == 0)
      result[inferIndex] = in / out;
  }
  inferred.push_back(RankedTensorType::get(result, input.getElementType()));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (dense && getType().hasStaticShape())
    return dense.reshape(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[p]) {
      valid = false;
      break;
    }
    seen[p] = true;
  }
  if (!valid)
    return emitOptionalError(loc, "perm ", formatShape(perm),
                             " is not a permutation of the ", rank,
                             " dimensions of the input");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  auto values = getFoldableValues(adaptor.getInput());
  if (!values)
    return {};
  SmallVector<int64_t> strides = getStrides(getInput().getType().getShape());
  return buildFolded(*this, [&](ArrayRef<int64_t> index) {
    int64_t linear = 0;
    for (auto [d, i] : llvm::enumerate(index))
      linear += i * strides[perm[d]];
    return (*values)[linear];
  });
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front().getType());
  int64_t rank = first.getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             rank);
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, value] : llvm::enumerate(inputs.drop_front())) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != rank)
      return emitOptionalError(loc, "input ", i + 1, " of type ", type,
                               " differs in element type or rank from input "
                               "0 of type ",
                               first);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = type.getDimSize(d);
      if (d == axis) {
        if (isDynamic(shape[d]) || isDynamic(size))
          shape[d] = ShapedType::kDynamic;
        else if (__builtin_add_overflow(shape[d], size, &shape[d]))
          return emitOptionalError(loc,
                                   "the inputs add up to more than a "
                                   "tensor can hold along axis ",
                                   axis);
        continue;
      }
      if (isDynamic(shape[d]))
        shape[d] = size;
      else if (!isDynamic(size) && size != shape[d])
        return emitOptionalError(
            loc, "input ", i + 1, " has shape ", formatShape(type.getShape()),
            ", which differs from ", formatShape(first.getShape()),
            " outside axis ", axis);
    }
  }
  // Inputs in one layout (all #graph.blocked<c>, concatenated along their
  // blocks) give a result in it.
  Attribute encoding = first.getEncoding();
  for (Value value : inputs)
    if (cast<RankedTensorType>(value.getType()).getEncoding() != encoding)
      encoding = {};
  inferred.push_back(
      RankedTensorType::get(shape, first.getElementType(), encoding));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  SmallVector<SmallVector<Attribute>> inputs;
  for (Attribute attr : adaptor.getInputs()) {
    auto values = getFoldableValues(attr);
    if (!values)
      return {};
    inputs.push_back(std::move(*values));
  }
  int64_t axis = getAxis();
  return buildFolded(*this, [&](ArrayRef<int64_t> index) -> Attribute {
    int64_t position = index[axis];
    for (auto [value, attrs] : llvm::zip(getInputs(), inputs)) {
      ArrayRef<int64_t> shape =
          cast<RankedTensorType>(value.getType()).getShape();
      if (position >= shape[axis]) {
        position -= shape[axis];
        continue;
      }
      SmallVector<int64_t> local(index);
      local[axis] = position;
      SmallVector<int64_t> strides = getStrides(shape);
      int64_t linear = 0;
      for (auto [i, s] : llvm::zip(local, strides))
        linear += i * s;
      return attrs[linear];
    }
    return {};
  });
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (sizes.empty() || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
    return emitOptionalError(loc, "sizes ", formatShape(sizes),
                             " must be one or more non-negative sizes");
  int64_t total = 0;
  for (int64_t s : sizes)
    if (__builtin_add_overflow(total, s, &total))
      return emitOptionalError(loc, "sizes ", formatShape(sizes),
                               " add up to more than a tensor can hold");
  int64_t axisSize = input.getDimSize(axis);
  if (!isDynamic(axisSize) && total != axisSize)
    return emitOptionalError(loc, "sizes ", formatShape(sizes), " add up to ",
                             total, ", not to the size ", axisSize, " of axis ",
                             axis);
  for (int64_t s : sizes) {
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] = s;
    inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  }
  return success();
}

/// A constant splits into constants (shape arithmetic: an expanded
/// AffineGrid splits its size input into N, C, H and W).
LogicalResult SplitOp::fold(FoldAdaptor adaptor,
                            SmallVectorImpl<OpFoldResult> &results) {
  auto values = getFoldableValues(adaptor.getInput());
  if (!values)
    return failure();
  ArrayRef<int64_t> inputShape = getInput().getType().getShape();
  SmallVector<int64_t> strides = getStrides(inputShape);
  int64_t axis = getAxis(), offset = 0;
  SmallVector<OpFoldResult> folded;
  for (auto [result, size] : llvm::zip(getResults(), getSizes())) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || !type.hasStaticShape())
      return failure();
    SmallVector<Attribute> elements;
    elements.reserve(type.getNumElements());
    for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
      SmallVector<int64_t> index = delinearize(i, type.getShape());
      index[axis] += offset;
      int64_t linear = 0;
      for (auto [d, at] : llvm::enumerate(index))
        linear += at * strides[d];
      elements.push_back((*values)[linear]);
    }
    folded.push_back(DenseElementsAttr::get(type, elements));
    offset += size;
  }
  results.append(folded.begin(), folded.end());
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// ShapeOp, PrefixOp
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  inferred.push_back(
      RankedTensorType::get({input.getRank()}, IntegerType::get(context, 64)));
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto input = getInput().getType();
  if (!input.hasStaticShape())
    return {};
  return DenseIntElementsAttr::get(getType(), input.getShape());
}

LogicalResult CheckSizeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult CheckSizeOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() != 0 || !type.getElementType().isSignlessInteger(64))
    return emitOpError("checks a 0-D i64 tensor, not ") << type;
  // (I64Attr reads as uint64_t.)
  int64_t low = getLow(), high = getHigh();
  if (low > high)
    return emitOpError("has an empty range [") << low << ", " << high << "]";
  return success();
}

OpFoldResult CheckSizeOp::fold(FoldAdaptor adaptor) {
  // A constant within the range needs no check; one outside it stays, and
  // fails the run.
  auto value = dyn_cast_or_null<DenseIntElementsAttr>(adaptor.getInput());
  if (!value)
    return {};
  int64_t size = (*value.getValues<APInt>().begin()).getSExtValue();
  if (size < int64_t(getLow()) || size > int64_t(getHigh()))
    return {};
  return value;
}

LogicalResult PrefixOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto like = cast<RankedTensorType>(adaptor.getLike().getType());
  int64_t axis = adaptor.getAxis(), likeAxis = adaptor.getLikeAxis();
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  if (likeAxis < 0 || likeAxis >= like.getRank())
    return emitOptionalError(loc, "like_axis ", likeAxis,
                             " is out of range for rank ", like.getRank());
  int64_t size = like.getDimSize(likeAxis);
  if (!isDynamic(size) && !input.isDynamicDim(axis) &&
      size > input.getDimSize(axis))
    return emitOptionalError(loc, "a prefix of ", size,
                             " entries of an axis of ", input.getDimSize(axis));
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = size;
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult PrefixOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(ends.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOptionalError(loc, "expected ", rank,
                             " starts, ends and steps, got ", starts.size(),
                             ", ", ends.size(), " and ", steps.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d);
    int64_t start = starts[d], end = ends[d], step = steps[d];
    if (step == 0)
      return emitOptionalError(loc, "step of dimension ", d, " is 0");
    if (isDynamic(size)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    // An empty axis gives an empty one, at any start and step (a negative
    // step's clamped start 0 and end -1 would otherwise read index 0).
    if (size == 0) {
      shape.push_back(0);
      continue;
    }
    bool valid = step > 0
                     ? (start >= 0 && start <= size && end >= 0 && end <= size)
                     : (start >= 0 && start <= std::max<int64_t>(size - 1, 0) &&
                        end >= -1 && end <= size - 1);
    if (!valid)
      return emitOptionalError(loc, "dimension ", d, " of size ", size,
                               ": start ", start, " and end ", end,
                               " are out of range for step ", step);
    int64_t extent = step > 0 ? end - start : start - end;
    // In unsigned arithmetic: a step of INT64_MIN has no negation.
    uint64_t absStep = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    shape.push_back(extent <= 0 ? 0
                                : int64_t(1 + uint64_t(extent - 1) / absStep));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }) &&
      llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }))
    return getInput();
  auto values = getFoldableValues(adaptor.getInput());
  if (!values)
    return {};
  SmallVector<int64_t> strides = getStrides(getInput().getType().getShape());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  return buildFolded(*this, [&](ArrayRef<int64_t> index) {
    int64_t linear = 0;
    for (auto [d, i] : llvm::enumerate(index))
      linear += (starts[d] + i * steps[d]) * strides[d];
    return (*values)[linear];
  });
}

//===----------------------------------------------------------------------===//
// Gather ops
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for data of rank ",
                             data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto data = getFoldableValues(adaptor.getData());
  auto indices = getFoldableValues(adaptor.getIndices());
  if (!data || !indices)
    return {};
  ArrayRef<int64_t> dataShape = getData().getType().getShape();
  ArrayRef<int64_t> indexShape = getIndices().getType().getShape();
  SmallVector<int64_t> dataStrides = getStrides(dataShape);
  SmallVector<int64_t> indexStrides = getStrides(indexShape);
  int64_t axis = getAxis();
  int64_t indexRank = indexShape.size();
  return buildFolded(*this, [&](ArrayRef<int64_t> index) -> Attribute {
    int64_t indexLinear = 0;
    for (int64_t i = 0; i < indexRank; ++i)
      indexLinear += index[axis + i] * indexStrides[i];
    std::optional<int64_t> position = getIndexValue((*indices)[indexLinear]);
    if (!position)
      return {};
    if (*position < 0)
      *position += dataShape[axis];
    if (*position < 0 || *position >= dataShape[axis])
      return {};
    int64_t linear = 0;
    for (int64_t d = 0, e = dataShape.size(); d < e; ++d) {
      int64_t i = d < axis    ? index[d]
                  : d == axis ? *position
                              : index[d + indexRank - 1];
      linear += i * dataStrides[d];
    }
    return (*data)[linear];
  });
}

LogicalResult
GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (data.getRank() != indices.getRank())
    return emitOptionalError(loc, "data of rank ", data.getRank(),
                             " and indices of rank ", indices.getRank(),
                             " must have the same rank");
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for data of rank ",
                             data.getRank());
  inferred.push_back(indices.clone(data.getElementType()));
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t batchDims = adaptor.getBatchDims();
  int64_t dataRank = data.getRank(), indexRank = indices.getRank();
  if (indexRank < 1 || batchDims < 0 ||
      batchDims >= std::min(dataRank, indexRank))
    return emitOptionalError(loc, "batch_dims ", batchDims,
                             " must be less than the ranks of data (", dataRank,
                             ") and indices (", indexRank, ")");
  int64_t depth = indices.getDimSize(indexRank - 1);
  if (isDynamic(depth) || depth < 1 || depth > dataRank - batchDims)
    return emitOptionalError(
        loc, "the last dimension of indices ", formatShape(indices.getShape()),
        " must be static and between 1 and ", dataRank - batchDims);
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(batchDims + depth));
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterElementsOp, ScatterNDOp
//===----------------------------------------------------------------------===//

LogicalResult
ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  int64_t axis = adaptor.getAxis();
  if (data.getRank() != indices.getRank() ||
      indices.getShape() != updates.getShape())
    return emitOptionalError(loc, "indices ", formatShape(indices.getShape()),
                             " and updates ", formatShape(updates.getShape()),
                             " must have one shape, of the rank of data ",
                             formatShape(data.getShape()));
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for data of rank ",
                             data.getRank());
  if (updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "updates must have the element type of data");
  inferred.push_back(data);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  int64_t indexRank = indices.getRank();
  int64_t depth = indexRank < 1 ? -1 : indices.getDimSize(indexRank - 1);
  if (isDynamic(depth) || depth < 1 || depth > data.getRank())
    return emitOptionalError(
        loc, "the last dimension of indices ", formatShape(indices.getShape()),
        " must be static and between 1 and ", data.getRank());
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(depth));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "updates ", formatShape(updates.getShape()),
                             " must have the shape ", formatShape(expected));
  if (updates.getElementType() != data.getElementType())
    return emitOptionalError(loc, "updates must have the element type of data");
  inferred.push_back(data);
  return success();
}

//===----------------------------------------------------------------------===//
// ExpandOp, TileOp, PadOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  if (llvm::any_of(shape, [](int64_t s) { return s < 0; }))
    return emitOptionalError(loc, "shape ", formatShape(shape),
                             " has a negative size");
  auto result = broadcastShapes(input.getShape(), shape);
  if (!result)
    return emitOptionalError(loc, "input shape ", formatShape(input.getShape()),
                             " does not broadcast to ", formatShape(shape));
  inferred.push_back(RankedTensorType::get(*result, input.getElementType()));
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (dense && dense.isSplat() && getType().hasStaticShape())
    return DenseElementsAttr::get(getType(), dense.getSplatValue<Attribute>());
  return {};
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> repeats = adaptor.getRepeats();
  if (static_cast<int64_t>(repeats.size()) != input.getRank() ||
      llvm::any_of(repeats, [](int64_t r) { return r < 0; }))
    return emitOptionalError(loc, "repeats ", formatShape(repeats),
                             " must have one non-negative entry per "
                             "dimension of the input ",
                             formatShape(input.getShape()));
  SmallVector<int64_t> shape;
  for (auto [size, repeat] : llvm::zip(input.getShape(), repeats)) {
    int64_t tiled = size;
    if (!isDynamic(size) && __builtin_mul_overflow(size, repeat, &tiled))
      return emitOptionalError(loc, "repeats ", formatShape(repeats),
                               " make more elements than a tensor can hold");
    shape.push_back(tiled);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return emitOptionalError(loc, "expected ", 2 * rank, " pads for rank ",
                             rank, ", got ", pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d);
    if (isDynamic(size)) {
      shape.push_back(size);
      continue;
    }
    int64_t padded;
    if (__builtin_add_overflow(size, pads[d], &padded) ||
        __builtin_add_overflow(padded, pads[d + rank], &padded))
      return emitOptionalError(loc, "pads ", formatShape(pads),
                               " make dimension ", d,
                               " larger than a tensor can hold");
    if (padded < 0)
      return emitOptionalError(loc, "pads ", formatShape(pads),
                               " remove more than the ", size,
                               " entries of dimension ", d);
    shape.push_back(padded);
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  if (llvm::all_of(getPads(), [](int64_t pad) { return pad == 0; }) &&
      getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult PadOp::verify() {
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOpError("mode must be constant, reflect or edge, got '")
           << mode << "'";
  ArrayRef<int64_t> pads = getPads();
  int64_t rank = getInput().getType().getRank();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = getInput().getType().getDimSize(d);
    int64_t most = std::max(pads[d], pads[d + rank]);
    if (isDynamic(size) || most <= 0)
      continue;
    if (mode == "reflect" && most >= size)
      return emitOpError("reflect padding of ")
             << most << " needs more than " << size << " entries in dimension "
             << d;
    if (mode == "edge" && size == 0)
      return emitOpError("edge padding of empty dimension ") << d;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TriluOp, OneHotOp
//===----------------------------------------------------------------------===//

LogicalResult TriluOp::verify() {
  if (getInput().getType().getRank() < 2)
    return emitOpError("input must have rank >= 2, got ")
           << getInput().getType();
  if (getDynamicK() && getDynamicK().getType().getRank() != 0)
    return emitOpError("dynamic_k must be a scalar, got ")
           << getDynamicK().getType();
  return success();
}

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto values = cast<RankedTensorType>(adaptor.getValues().getType());
  if (values.getRank() != 1 || values.getDimSize(0) != 2)
    return emitOptionalError(loc,
                             "values must be a tensor of 2 elements "
                             "(off, on), got ",
                             values);
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis > indices.getRank())
    return emitOptionalError(loc, "axis ", axis,
                             " is out of range for indices of rank ",
                             indices.getRank());
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + axis, adaptor.getDepth());
  inferred.push_back(RankedTensorType::get(shape, values.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ResizeOp
//===----------------------------------------------------------------------===//

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  ArrayRef<double> scales = adaptor.getScales();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(scales.size()) != rank)
    return emitOptionalError(loc, "expected ", rank, " sizes and scales, got ",
                             sizes.size(), " and ", scales.size());
  if (llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
      llvm::any_of(scales, [](double s) { return !(s > 0); }))
    return emitOptionalError(loc, "sizes ", formatShape(sizes),
                             " must be non-negative and scales positive");
  inferred.push_back(RankedTensorType::get(sizes, input.getElementType()));
  return success();
}

LogicalResult ResizeOp::verify() {
  StringRef mode = getMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return emitOpError("mode must be nearest, linear or cubic, got '")
           << mode << "'";
  StringRef transform = getCoordinateTransformationMode();
  if (transform != "half_pixel" && transform != "half_pixel_symmetric" &&
      transform != "pytorch_half_pixel" && transform != "align_corners" &&
      transform != "asymmetric" && transform != "tf_crop_and_resize")
    return emitOpError("coordinate_transformation_mode must be half_pixel, "
                       "half_pixel_symmetric, pytorch_half_pixel, "
                       "align_corners, asymmetric or tf_crop_and_resize, got '")
           << transform << "'";
  int64_t rank = getInput().getType().getRank();
  if ((transform == "tf_crop_and_resize") !=
      (getRoi().has_value() && int64_t(getRoi()->size()) == 2 * rank))
    return emitOpError("tf_crop_and_resize, and it only, takes a roi of 2 x ")
           << rank << " values";
  StringRef nearest = getNearestMode();
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return emitOpError("nearest_mode must be round_prefer_floor, "
                       "round_prefer_ceil, floor or ceil, got '")
           << nearest << "'";
  if (getAntialias() && mode == "nearest")
    return emitOpError("antialias is for linear and cubic resizing");
  if (mode != "nearest" && !isa<FloatType>(getType().getElementType()))
    return emitOpError() << mode << " resizing needs a float tensor, got "
                         << getInput().getType();
  return success();
}

std::optional<IndexedDims> kiln::graph::getIndexedDims(Operation *op) {
  auto sizeOf = [](Value data, int64_t dim) {
    return cast<RankedTensorType>(data.getType()).getDimSize(dim);
  };
  IndexedDims dims;
  if (auto gather = dyn_cast<GatherOp>(op)) {
    dims.indices = gather.getIndices();
    dims.sizes = {sizeOf(gather.getData(), gather.getAxis())};
  } else if (auto gather = dyn_cast<GatherElementsOp>(op)) {
    dims.indices = gather.getIndices();
    dims.sizes = {sizeOf(gather.getData(), gather.getAxis())};
  } else if (auto scatter = dyn_cast<ScatterElementsOp>(op)) {
    dims.indices = scatter.getIndices();
    dims.sizes = {sizeOf(scatter.getData(), scatter.getAxis())};
  } else if (isa<GatherNDOp, ScatterNDOp>(op)) {
    Value data = op->getOperand(0);
    dims.indices = op->getOperand(1);
    int64_t first = 0;
    if (auto gather = dyn_cast<GatherNDOp>(op))
      first = gather.getBatchDims();
    auto indexType = cast<RankedTensorType>(dims.indices.getType());
    if (indexType.getRank() == 0 ||
        ShapedType::isDynamic(indexType.getShape().back()))
      return std::nullopt;
    for (int64_t j = 0; j < indexType.getShape().back(); ++j)
      dims.sizes.push_back(sizeOf(data, first + j));
    dims.perPosition = true;
  } else {
    return std::nullopt;
  }
  if (llvm::any_of(dims.sizes, ShapedType::isDynamic))
    return std::nullopt;
  dims.fromZero = op->hasAttr(attr::kIndicesFromZero);
  return dims;
}
