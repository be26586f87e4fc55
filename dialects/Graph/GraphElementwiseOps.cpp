//===- GraphElementwiseOps.cpp - Elementwise ops --------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

/// The numpy broadcast of the shapes of `values`, or an error naming them.
static FailureOr<SmallVector<int64_t>>
inferBroadcastShape(std::optional<Location> loc, ValueRange values) {
  SmallVector<int64_t> shape;
  for (Value value : values) {
    auto type = cast<RankedTensorType>(value.getType());
    auto broadcast = broadcastShapes(shape, type.getShape());
    if (!broadcast) {
      std::string shapes;
      for (auto [i, v] : llvm::enumerate(values)) {
        if (i)
          shapes += i + 1 == values.size() ? " and " : ", ";
        shapes += formatShape(cast<RankedTensorType>(v.getType()).getShape());
      }
      return emitOptionalError(loc, "operand shapes ", shapes,
                               " do not broadcast");
    }
    shape = std::move(*broadcast);
  }
  return shape;
}

/// Checks that `lhs` and `rhs` have one element type.
static LogicalResult verifySameElementType(std::optional<Location> loc,
                                           Value lhs, Value rhs) {
  Type lhsElement = getElementTypeOrSelf(lhs.getType());
  Type rhsElement = getElementTypeOrSelf(rhs.getType());
  if (lhsElement != rhsElement)
    return emitOptionalError(loc, "operands have different element types: ",
                             lhsElement, " and ", rhsElement);
  return success();
}

/// The encoding of a broadcast result of rank `rank`: the one that every
/// operand of that rank has (a blocked layout, where the operands of lower
/// rank broadcast along its dimensions), or none.
static Attribute getBroadcastEncoding(ValueRange values, size_t rank) {
  Attribute encoding;
  for (Value value : values) {
    auto type = cast<RankedTensorType>(value.getType());
    if (static_cast<size_t>(type.getRank()) != rank)
      continue;
    if (!type.getEncoding() || (encoding && encoding != type.getEncoding()))
      return {};
    encoding = type.getEncoding();
  }
  return encoding;
}

/// Infers the type of a broadcast binary op: the broadcast shape with
/// `resultElement`, or the operands' element type when it is null.
static LogicalResult
inferBroadcastBinary(std::optional<Location> loc, Value lhs, Value rhs,
                     Type resultElement,
                     SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifySameElementType(loc, lhs, rhs)))
    return failure();
  auto shape = inferBroadcastShape(loc, {lhs, rhs});
  if (failed(shape))
    return failure();
  if (!resultElement)
    resultElement = getElementTypeOrSelf(lhs.getType());
  inferredReturnTypes.push_back(RankedTensorType::get(
      *shape, resultElement, getBroadcastEncoding({lhs, rhs}, shape->size())));
  return success();
}

#define KILN_BROADCAST_BINARY_OP(OpClass, resultElement)                       \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    (void)context;                                                             \
    return inferBroadcastBinary(loc, adaptor.getLhs(), adaptor.getRhs(),       \
                                resultElement, inferredReturnTypes);           \
  }

KILN_BROADCAST_BINARY_OP(AddOp, Type())
KILN_BROADCAST_BINARY_OP(SubOp, Type())
KILN_BROADCAST_BINARY_OP(MulOp, Type())
KILN_BROADCAST_BINARY_OP(DivOp, Type())
KILN_BROADCAST_BINARY_OP(MaxOp, Type())
KILN_BROADCAST_BINARY_OP(MinOp, Type())
KILN_BROADCAST_BINARY_OP(ModOp, Type())
KILN_BROADCAST_BINARY_OP(PReluOp, Type())
KILN_BROADCAST_BINARY_OP(ShiftLeftOp, Type())
KILN_BROADCAST_BINARY_OP(ShiftRightOp, Type())
KILN_BROADCAST_BINARY_OP(AndOp, Type())
KILN_BROADCAST_BINARY_OP(OrOp, Type())
KILN_BROADCAST_BINARY_OP(XorOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseAndOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseOrOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseXorOp, Type())
KILN_BROADCAST_BINARY_OP(EqualOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(LessOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(LessEqualOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(GreaterOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(GreaterEqualOp, IntegerType::get(context, 1))

#undef KILN_BROADCAST_BINARY_OP

LogicalResult
PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                        Adaptor adaptor,
                        SmallVectorImpl<Type> &inferredReturnTypes) {
  Type base = getElementTypeOrSelf(adaptor.getLhs().getType());
  auto shape = inferBroadcastShape(loc, {adaptor.getLhs(), adaptor.getRhs()});
  if (failed(shape))
    return failure();
  inferredReturnTypes.push_back(RankedTensorType::get(*shape, base));
  return success();
}

LogicalResult
WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          Adaptor adaptor,
                          SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifySameElementType(loc, adaptor.getLhs(), adaptor.getRhs())))
    return failure();
  auto shape = inferBroadcastShape(
      loc, {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()});
  if (failed(shape))
    return failure();
  inferredReturnTypes.push_back(RankedTensorType::get(
      *shape, getElementTypeOrSelf(adaptor.getLhs().getType())));
  return success();
}

//===----------------------------------------------------------------------===//
// Float classification
//===----------------------------------------------------------------------===//

static LogicalResult inferFloatClass(MLIRContext *context, Value input,
                                     SmallVectorImpl<Type> &inferred) {
  inferred.push_back(cast<RankedTensorType>(input.getType())
                         .clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferFloatClass(context, adaptor.getInput(), inferred);
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferFloatClass(context, adaptor.getInput(), inferred);
}

//===----------------------------------------------------------------------===//
// Folders
//
// Exporters compute shapes with small graphs (Shape -> Gather -> Cast -> Mul
// -> Equal -> Where -> Concat -> Expand...), so the elementwise ops fold on
// small constants; Kiln's static shapes need those chains to end in
// constants. Integers follow their element type's signedness (i1 is
// unsigned), wrap around like the generated code, and never fold a division
// by zero.
//===----------------------------------------------------------------------===//

/// Constants with more elements than this are not folded: folding is for
/// shape arithmetic, not for computing on weights.
static constexpr int64_t kMaxFoldElements = 4096;

/// The constant `attr` as a DenseElementsAttr small enough to fold, or null.
static DenseElementsAttr getFoldable(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense ||
      !hasAtMostElements(dense.getType().getShape(), kMaxFoldElements))
    return {};
  return dense;
}

/// The elements of `dense` as `T`: one for a splat, else all of them.
template <typename T>
static SmallVector<T> readElements(DenseElementsAttr dense) {
  if (dense.isSplat())
    return {dense.getSplatValue<T>()};
  return llvm::to_vector(dense.getValues<T>());
}

/// For every element of `shape` (row-major), the linear index of the element
/// of `operand` that broadcasts to it (numpy rules); 0 for a splat.
static SmallVector<int64_t> getBroadcastIndices(ArrayRef<int64_t> shape,
                                                DenseElementsAttr operand) {
  int64_t count = ShapedType::getNumElements(shape);
  if (operand.isSplat())
    return SmallVector<int64_t>(count, 0);
  ArrayRef<int64_t> operandShape = operand.getType().getShape();
  int64_t rank = shape.size(), offset = rank - operandShape.size();
  // The operand's stride along each result dimension, 0 where it broadcasts.
  SmallVector<int64_t> strides(rank, 0);
  for (int64_t d = rank - 1, stride = 1; d >= offset; --d) {
    int64_t size = operandShape[d - offset];
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  SmallVector<int64_t> indices, position(rank, 0);
  indices.reserve(count);
  for (int64_t i = 0, index = 0; i < count; ++i) {
    indices.push_back(index);
    for (int64_t d = rank - 1; d >= 0; --d) {
      index += strides[d];
      if (++position[d] < shape[d])
        break;
      index -= strides[d] * shape[d];
      position[d] = 0;
    }
  }
  return indices;
}

/// Folds an elementwise op: broadcasts the constant `operands`, read as `In`
/// (APInt, APFloat, bool or Attribute), to the shape of `type` and computes
/// each result element with `fn(ArrayRef<In>) -> std::optional<Out>`. Null
/// when an operand is not a small constant or `fn` refuses an element. All
/// splat operands give a splat.
template <typename In, typename Out, typename Fn>
static Attribute foldBroadcast(Type type, ArrayRef<Attribute> operands, Fn fn) {
  auto resultType = dyn_cast<RankedTensorType>(type);
  if (!resultType || !resultType.hasStaticShape() ||
      !hasAtMostElements(resultType.getShape(), kMaxFoldElements))
    return {};
  SmallVector<DenseElementsAttr> dense;
  bool allSplat = true;
  for (Attribute operand : operands) {
    DenseElementsAttr attr = getFoldable(operand);
    if (!attr)
      return {};
    dense.push_back(attr);
    allSplat &= attr.isSplat();
  }
  SmallVector<SmallVector<In>> values;
  for (DenseElementsAttr attr : dense)
    values.push_back(readElements<In>(attr));

  SmallVector<In> args;
  auto compute = [&](auto index) -> std::optional<Out> {
    args.clear();
    for (auto [i, operandValues] : llvm::enumerate(values))
      args.push_back(operandValues[index(i)]);
    return fn(ArrayRef<In>(args));
  };
  SmallVector<Out> results;
  if (allSplat) {
    std::optional<Out> value = compute([](size_t) { return 0; });
    if (!value)
      return {};
    results.push_back(*value);
  } else {
    SmallVector<SmallVector<int64_t>> indices;
    for (DenseElementsAttr attr : dense)
      indices.push_back(getBroadcastIndices(resultType.getShape(), attr));
    for (int64_t e = 0, n = resultType.getNumElements(); e < n; ++e) {
      std::optional<Out> value =
          compute([&](size_t i) { return indices[i][e]; });
      if (!value)
        return {};
      results.push_back(*value);
    }
  }
  return DenseElementsAttr::get(resultType, ArrayRef<Out>(results));
}

static bool isUnsignedElement(Type element) {
  return element.isUnsignedInteger() || element.isInteger(1);
}

/// Folds a binary arithmetic op on integers (`intFn(a, b, isUnsigned)`) or
/// floats (`floatFn(a, b)`); either may refuse an element with nullopt.
template <typename IntFn, typename FloatFn>
static Attribute foldArithmetic(Operation *op, ArrayRef<Attribute> operands,
                                IntFn intFn, FloatFn floatFn) {
  Type type = op->getResult(0).getType();
  Type element = getElementTypeOrSelf(type);
  if (isa<FloatType>(element))
    return foldBroadcast<APFloat, APFloat>(
        type, operands, [&](ArrayRef<APFloat> v) -> std::optional<APFloat> {
          return floatFn(v[0], v[1]);
        });
  if (!element.isIntOrIndex())
    return {};
  bool isUnsigned = isUnsignedElement(element);
  return foldBroadcast<APInt, APInt>(
      type, operands, [&](ArrayRef<APInt> v) -> std::optional<APInt> {
        return intFn(v[0], v[1], isUnsigned);
      });
}

static APFloat addFloats(APFloat a, const APFloat &b) {
  a.add(b, APFloat::rmNearestTiesToEven);
  return a;
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a + b; }, addFloats);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a - b; },
      [](APFloat a, const APFloat &b) {
        a.subtract(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a * b; },
      [](APFloat a, const APFloat &b) {
        a.multiply(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (isUnsigned)
          return a.udiv(b);
        bool overflow = false;
        APInt quotient = a.sdiv_ov(b, overflow); // Truncates toward zero.
        if (overflow)
          return std::nullopt;
        return quotient;
      },
      [](APFloat a, const APFloat &b) {
        a.divide(b, APFloat::rmNearestTiesToEven);
        return a;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool isUnsigned) {
        return isUnsigned ? llvm::APIntOps::umax(a, b)
                          : llvm::APIntOps::smax(a, b);
      },
      [](const APFloat &a, const APFloat &b) { return maximum(a, b); });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool isUnsigned) {
        return isUnsigned ? llvm::APIntOps::umin(a, b)
                          : llvm::APIntOps::smin(a, b);
      },
      [](const APFloat &a, const APFloat &b) { return minimum(a, b); });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  bool fmod = getFmod();
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [&](const APInt &a, const APInt &b,
          bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (isUnsigned)
          return a.urem(b);
        APInt remainder = a.srem(b);
        // Floored division: the remainder takes the divisor's sign.
        if (!fmod && !remainder.isZero() &&
            remainder.isNegative() != b.isNegative())
          remainder += b;
        return remainder;
      },
      [&](APFloat a, const APFloat &b) {
        a.mod(b);
        if (!fmod && !a.isNaN()) {
          if (a.isZero()) {
            if (a.isNegative() != b.isNegative())
              a.changeSign();
          } else if (a.isNegative() != b.isNegative()) {
            a = addFloats(a, b);
          }
        }
        return a;
      });
}

OpFoldResult BitwiseAndOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a & b; },
      [](const APFloat &, const APFloat &) { return std::nullopt; });
}

OpFoldResult BitwiseOrOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a | b; },
      [](const APFloat &, const APFloat &) { return std::nullopt; });
}

OpFoldResult BitwiseXorOp::fold(FoldAdaptor adaptor) {
  return foldArithmetic(
      *this, adaptor.getOperands(),
      [](const APInt &a, const APInt &b, bool) { return a ^ b; },
      [](const APFloat &, const APFloat &) { return std::nullopt; });
}

/// Folds a binary op on booleans.
template <typename Fn>
static Attribute foldLogical(Operation *op, ArrayRef<Attribute> operands,
                             Fn fn) {
  return foldBroadcast<bool, bool>(
      op->getResult(0).getType(), operands,
      [&](ArrayRef<bool> v) -> std::optional<bool> { return fn(v[0], v[1]); });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldLogical(*this, adaptor.getOperands(),
                     [](bool a, bool b) { return a && b; });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldLogical(*this, adaptor.getOperands(),
                     [](bool a, bool b) { return a || b; });
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldLogical(*this, adaptor.getOperands(),
                     [](bool a, bool b) { return a != b; });
}

/// An element of an integer or float constant as a double.
static double toDouble(Attribute element) {
  if (auto floatAttr = dyn_cast<FloatAttr>(element))
    return floatAttr.getValueAsDouble();
  auto intAttr = cast<IntegerAttr>(element);
  if (isUnsignedElement(intAttr.getType()))
    return static_cast<double>(intAttr.getValue().getZExtValue());
  return static_cast<double>(intAttr.getValue().getSExtValue());
}

/// `value` converted to the number type `element`: floats round to nearest,
/// integers round toward zero; nullopt for NaN or out of range integers.
static std::optional<Attribute> fromAPFloat(APFloat value, Type element) {
  if (auto floatType = dyn_cast<FloatType>(element)) {
    bool losesInfo = false;
    value.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                  &losesInfo);
    return FloatAttr::get(floatType, value);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  APSInt result(width, isUnsignedElement(element));
  bool isExact = false;
  if (value.convertToInteger(result, APFloat::rmTowardZero, &isExact) &
      APFloat::opInvalidOp)
    return std::nullopt;
  return IntegerAttr::get(element, result);
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  Type element = getElementTypeOrSelf(getType());
  if (!isa<FloatType>(element) && !element.isInteger())
    return {};
  // As the generated code: in f64, rounded toward zero for an integer base.
  return foldBroadcast<Attribute, Attribute>(
      getType(), adaptor.getOperands(),
      [&](ArrayRef<Attribute> v) -> std::optional<Attribute> {
        return fromAPFloat(APFloat(std::pow(toDouble(v[0]), toDouble(v[1]))),
                           element);
      });
}

/// Folds a comparison; `accept` says which outcomes of comparing the lhs to
/// the rhs give true (NaN compares unordered, hence false).
static Attribute foldCompare(Operation *op, ArrayRef<Attribute> operands,
                             function_ref<bool(APFloat::cmpResult)> accept) {
  Type resultType = op->getResult(0).getType();
  Type element = getElementTypeOrSelf(op->getOperand(0).getType());
  if (isa<FloatType>(element))
    return foldBroadcast<APFloat, bool>(
        resultType, operands, [&](ArrayRef<APFloat> v) -> std::optional<bool> {
          return accept(v[0].compare(v[1]));
        });
  if (!element.isInteger())
    return {};
  bool isUnsigned = isUnsignedElement(element);
  return foldBroadcast<APInt, bool>(
      resultType, operands, [&](ArrayRef<APInt> v) -> std::optional<bool> {
        int order = v[0] == v[1]                                     ? 0
                    : (isUnsigned ? v[0].ult(v[1]) : v[0].slt(v[1])) ? -1
                                                                     : 1;
        return accept(order < 0    ? APFloat::cmpLessThan
                      : order == 0 ? APFloat::cmpEqual
                                   : APFloat::cmpGreaterThan);
      });
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpEqual;
  });
}

OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpLessThan;
  });
}

OpFoldResult LessEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpLessThan || r == APFloat::cmpEqual;
  });
}

OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpGreaterThan;
  });
}

OpFoldResult GreaterEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(*this, adaptor.getOperands(), [](APFloat::cmpResult r) {
    return r == APFloat::cmpGreaterThan || r == APFloat::cmpEqual;
  });
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  return foldBroadcast<Attribute, Attribute>(
      getType(), adaptor.getOperands(),
      [](ArrayRef<Attribute> v) -> std::optional<Attribute> {
        // The op may not be verified yet (the importer folds as it builds).
        auto condition = dyn_cast<IntegerAttr>(v[0]);
        if (!condition)
          return std::nullopt;
        return condition.getValue().getBoolValue() ? v[1] : v[2];
      });
}

/// Folds a unary op on integers (`intFn(a, isUnsigned)`) or floats
/// (`floatFn(a)`); either may refuse an element with nullopt.
template <typename IntFn, typename FloatFn>
static Attribute foldUnary(Operation *op, Attribute operand, IntFn intFn,
                           FloatFn floatFn) {
  Type type = op->getResult(0).getType();
  Type element = getElementTypeOrSelf(type);
  if (isa<FloatType>(element))
    return foldBroadcast<APFloat, APFloat>(
        type, operand, [&](ArrayRef<APFloat> v) -> std::optional<APFloat> {
          return floatFn(v[0]);
        });
  if (!element.isInteger())
    return {};
  bool isUnsigned = isUnsignedElement(element);
  return foldBroadcast<APInt, APInt>(
      type, operand, [&](ArrayRef<APInt> v) -> std::optional<APInt> {
        return intFn(v[0], isUnsigned);
      });
}

static std::optional<APFloat> noFloatFold(const APFloat &) {
  return std::nullopt;
}

OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(),
      [](const APInt &a, bool isUnsigned) {
        return !isUnsigned && a.isNegative() ? APInt::getZero(a.getBitWidth())
                                             : a;
      },
      [](const APFloat &a) {
        return a.isNegative() && !a.isNaN() ? APFloat::getZero(a.getSemantics())
                                            : a;
      });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(),
      [](const APInt &a, bool isUnsigned) { return isUnsigned ? a : a.abs(); },
      [](const APFloat &a) { return abs(a); });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(), [](const APInt &a, bool) { return -a; },
      [](const APFloat &a) { return neg(a); });
}

OpFoldResult SignOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(),
      [](const APInt &a, bool isUnsigned) {
        unsigned width = a.getBitWidth();
        if (a.isZero())
          return APInt::getZero(width);
        if (!isUnsigned && a.isNegative())
          return APInt::getAllOnes(width);
        return APInt(width, 1);
      },
      [](const APFloat &a) {
        if (a.isNaN() || a.isZero())
          return a;
        APFloat one = APFloat::getOne(a.getSemantics());
        return a.isNegative() ? neg(one) : one;
      });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  return foldBroadcast<bool, bool>(
      getType(), adaptor.getInput(),
      [](ArrayRef<bool> v) -> std::optional<bool> { return !v[0]; });
}

OpFoldResult BitwiseNotOp::fold(FoldAdaptor adaptor) {
  return foldUnary(
      *this, adaptor.getInput(), [](const APInt &a, bool) { return ~a; },
      noFloatFold);
}

/// Folds a float op rounding to an integral value in `mode`.
static Attribute foldRounding(Operation *op, Attribute operand,
                              APFloat::roundingMode mode) {
  return foldUnary(
      op, operand,
      [](const APInt &, bool) -> std::optional<APInt> { return std::nullopt; },
      [&](APFloat a) {
        a.roundToIntegral(mode);
        return a;
      });
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getInput(), APFloat::rmTowardNegative);
}

OpFoldResult CeilOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getInput(), APFloat::rmTowardPositive);
}

OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  return foldRounding(*this, adaptor.getInput(), APFloat::rmNearestTiesToEven);
}

/// One element converted from `from` to `to` as graph.cast does.
static std::optional<Attribute> castElement(Attribute value, Type to) {
  if (to.isInteger(1)) {
    if (auto floatAttr = dyn_cast<FloatAttr>(value))
      return IntegerAttr::get(to, !floatAttr.getValue().isZero());
    return IntegerAttr::get(to, !cast<IntegerAttr>(value).getValue().isZero());
  }
  if (auto floatAttr = dyn_cast<FloatAttr>(value))
    return fromAPFloat(floatAttr.getValue(), to);
  auto intAttr = cast<IntegerAttr>(value);
  bool isUnsigned = isUnsignedElement(intAttr.getType());
  const APInt &input = intAttr.getValue();
  if (auto floatType = dyn_cast<FloatType>(to)) {
    APFloat result(floatType.getFloatSemantics());
    result.convertFromAPInt(input, /*IsSigned=*/!isUnsigned,
                            APFloat::rmNearestTiesToEven);
    return FloatAttr::get(floatType, result);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  return IntegerAttr::get(to, isUnsigned ? input.zextOrTrunc(width)
                                         : input.sextOrTrunc(width));
}

/// The 8- and 4-bit floats and 4- and 2-bit integers, which graph ops only
/// cast from and to.
static bool isNarrowElement(Type type) {
  if (isa<FloatType>(type))
    return type.getIntOrFloatBitWidth() <= 8;
  return type.isInteger(2) || type.isInteger(4);
}

LogicalResult CastOp::verify() {
  StringRef mode = getRoundMode();
  if (mode != "up" && mode != "down" && mode != "nearest")
    return emitOpError() << "round_mode must be \"up\", \"down\" or "
                            "\"nearest\", got \""
                         << mode << "\"";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  Type to = getElementTypeOrSelf(getType());
  Type from = getElementTypeOrSelf(getInput().getType());
  if (!(isa<FloatType>(to) || to.isInteger()) ||
      !(isa<FloatType>(from) || from.isInteger()))
    return {};
  // APFloat's rounding and overflow rules are not ONNX's for these (saturation,
  // the float-to-int4 wrap): only the lowering converts them.
  if (isNarrowElement(to) || isNarrowElement(from))
    return {};
  return foldBroadcast<Attribute, Attribute>(
      getType(), adaptor.getInput(),
      [&](ArrayRef<Attribute> v) { return castElement(v[0], to); });
}

//===----------------------------------------------------------------------===//
// BitCastOp
//===----------------------------------------------------------------------===//

unsigned BitCastOp::getStorageBits(Type type) {
  return type.isInteger(1) ? 8 : type.getIntOrFloatBitWidth();
}

LogicalResult BitCastOp::verify() {
  Type from = getInput().getType().getElementType();
  Type to = getResult().getType().getElementType();
  if (getStorageBits(from) != getStorageBits(to))
    return emitOpError() << "cannot reinterpret " << from << " as " << to
                         << ": they differ in width";
  return success();
}
