//===- ReductionToLinalg.cpp - Lowering of reductions and softmax ---------===//
//
// A reduction becomes a linalg.generic over the input's dimensions with
// reduction iterators on the reduced axes, whose output (a linalg.fill of the
// reduction's identity) holds the kept dimensions; tensor.expand_shape puts
// back the size-1 dimensions of `keepdims`. Softmax and its kin reduce first
// (the maximum, then the sum of exponentials) and normalise in a last
// elementwise linalg.generic that reads the reduced tensors through
// projections. CumSum is a generic with one extra reduction dimension that
// runs over the scanned axis (quadratic in the axis' length, but a plain
// linalg op that tiles and vectorises like any other).
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The sizes of the dimensions of `input` that are not in `axes`.
SmallVector<OpFoldResult> keptSizes(OpBuilder &b, Location loc, Value input,
                                    ArrayRef<int64_t> axes) {
  SmallVector<OpFoldResult> kept;
  for (auto [d, size] : llvm::enumerate(tensor::getMixedSizes(b, loc, input)))
    if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
      kept.push_back(size);
  return kept;
}

/// The map from a rank-`rank` iteration space to the dimensions not in
/// `axes`.
AffineMap keptDimsMap(int64_t rank, ArrayRef<int64_t> axes, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// A tensor of `sizes` filled with `value`.
Value createFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Value value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, value.getType());
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

/// The largest (or lowest) value of a float or integer type: +-inf for
/// floats, the extreme integer (signed or unsigned) otherwise.
Value createExtreme(OpBuilder &b, Location loc, Type type, bool largest,
                    bool isUnsigned) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                                  /*Negative=*/!largest)));
  unsigned width = type.getIntOrFloatBitWidth();
  APInt value = isUnsigned ? (largest ? APInt::getMaxValue(width)
                                      : APInt::getMinValue(width))
                           : (largest ? APInt::getSignedMaxValue(width)
                                      : APInt::getSignedMinValue(width));
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

/// max(a, b) or min(a, b) of floats (NaN propagating) or integers.
Value createMaxMin(OpBuilder &b, Location loc, Value lhs, Value rhs, bool max,
                   bool isUnsigned) {
  if (isa<FloatType>(lhs.getType()))
    return max ? arith::MaximumFOp::create(b, loc, lhs, rhs).getResult()
               : arith::MinimumFOp::create(b, loc, lhs, rhs).getResult();
  if (isUnsigned)
    return max ? arith::MaxUIOp::create(b, loc, lhs, rhs).getResult()
               : arith::MinUIOp::create(b, loc, lhs, rhs).getResult();
  return max ? arith::MaxSIOp::create(b, loc, lhs, rhs).getResult()
             : arith::MinSIOp::create(b, loc, lhs, rhs).getResult();
}

Value createAdd(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::AddFOp::create(b, loc, lhs, rhs);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

Value createMul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType()))
    return arith::MulFOp::create(b, loc, lhs, rhs);
  return arith::MulIOp::create(b, loc, lhs, rhs);
}

/// Whether an integer element type compares as unsigned: ui* types, and i1
/// (a boolean, whose "true" is 1, not -1).
bool comparesUnsigned(Type graphElementType) {
  return isUnsignedInteger(graphElementType) || graphElementType.isInteger(1);
}

/// Computes the new accumulator from one input element, the elements of the
/// extra operands (reduced tensors read at the kept dimensions) and the
/// accumulator.
using ReduceBodyBuilder = function_ref<Value(
    OpBuilder &, Location, Value element, ValueRange extra, Value acc)>;

/// Reduces `input` over `axes` into a tensor of its other dimensions,
/// starting from `init`; `extra` are tensors of the kept dimensions that the
/// body reads too.
Value buildReduce(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes, ValueRange extra, Value init,
                  ReduceBodyBuilder body) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  AffineMap kept = keptDimsMap(rank, axes, ctx);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  maps.append(extra.size() + 1, kept);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (int64_t axis : axes)
    iterators[axis] = utils::IteratorType::reduction;
  SmallVector<Value> inputs = {input};
  llvm::append_range(inputs, extra);
  Value out = createFilled(b, loc, keptSizes(b, loc, input, axes), init);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{out.getType()}, inputs, ValueRange{out}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.front(),
                            args.slice(1, extra.size()), args.back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

/// Computes one result element from one input element and the elements of
/// the reduced tensors at the same kept position.
using NormalizeBodyBuilder =
    function_ref<Value(OpBuilder &, Location, Value element, ValueRange)>;

/// An elementwise generic over `input` that also reads `reduced` (tensors of
/// the dimensions not in `axes`), producing `elementType` elements.
Value buildNormalize(OpBuilder &b, Location loc, Value input,
                     ArrayRef<int64_t> axes, ValueRange reduced,
                     Type elementType, NormalizeBodyBuilder body) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  maps.append(reduced.size(), keptDimsMap(rank, axes, ctx));
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<Value> inputs = {input};
  llvm::append_range(inputs, reduced);
  Value out = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, input), elementType);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{out.getType()}, inputs, ValueRange{out}, maps,
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.front(),
                            args.slice(1, reduced.size()));
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

/// Gives `reduced` (the kept dimensions of a rank-`rank` input) the type
/// `resultType`: with `keepdims`, expands the reduced axes back as size-1
/// dimensions.
Value finishReduction(OpBuilder &b, Location loc, Value reduced,
                      ArrayRef<int64_t> axes, int64_t rank, bool keepdims,
                      RankedTensorType resultType) {
  if (keepdims && !axes.empty()) {
    // Each kept dimension forms a group with the reduced ones that follow it;
    // leading reduced dimensions join the first group.
    SmallVector<ReassociationIndices> groups;
    SmallVector<OpFoldResult> sizes;
    SmallVector<OpFoldResult> keptSizes =
        tensor::getMixedSizes(b, loc, reduced);
    ReassociationIndices pending;
    for (int64_t d = 0; d < rank; ++d) {
      if (llvm::is_contained(axes, d)) {
        sizes.push_back(b.getIndexAttr(1));
        if (groups.empty())
          pending.push_back(d);
        else
          groups.back().push_back(d);
        continue;
      }
      sizes.push_back(keptSizes[groups.size()]);
      pending.push_back(d);
      groups.push_back(pending);
      pending.clear();
    }
    auto expandedType = RankedTensorType::get(
        SmallVector<int64_t>(llvm::map_range(
            sizes,
            [](OpFoldResult size) {
              std::optional<int64_t> value = getConstantIntValue(size);
              return value ? *value : ShapedType::kDynamic;
            })),
        resultType.getElementType());
    reduced = tensor::ExpandShapeOp::create(b, loc, expandedType, reduced,
                                            groups, sizes);
  }
  if (reduced.getType() != resultType)
    reduced = tensor::CastOp::create(b, loc, resultType, reduced);
  return reduced;
}

/// The number of elements of `input` in the dimensions `axes`, as a scalar
/// of `type`.
Value createCount(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes, Type type) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  int64_t staticCount = 1;
  Value dynamicCount;
  for (int64_t axis : axes) {
    if (std::optional<int64_t> size = getConstantIntValue(sizes[axis])) {
      staticCount *= *size;
      continue;
    }
    Value size = cast<Value>(sizes[axis]);
    dynamicCount =
        dynamicCount ? arith::MulIOp::create(b, loc, dynamicCount, size) : size;
  }
  if (!dynamicCount)
    return createScalarConstant(b, loc, type, static_cast<double>(staticCount));
  Value count = arith::MulIOp::create(
      b, loc, dynamicCount,
      arith::ConstantIndexOp::create(b, loc, staticCount));
  Value asInt = arith::IndexCastOp::create(
      b, loc, isa<FloatType>(type) ? b.getI64Type() : type, count);
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::SIToFPOp::create(b, loc, floatType, asInt);
  return asInt;
}

/// max(x) over `axes` with +-inf (which would give NaN in x - max) replaced by
/// 0, the shift that keeps exp(x - shift) in range.
Value buildShift(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> axes) {
  Type element = cast<RankedTensorType>(input.getType()).getElementType();
  // The shift only keeps exp in range; any finite one gives the same result.
  // A NaN need not win the maximum (maxnumf skips it, a plain vmaxps on x86
  // where maximumf takes five instructions): the NaN still reaches the sum
  // through its exponential, and every result is NaN either way.
  Value max = buildReduce(
      b, loc, input, axes, {},
      createExtreme(b, loc, element, /*largest=*/false, false),
      [](OpBuilder &nb, Location nl, Value x, ValueRange, Value acc) {
        return arith::MaxNumFOp::create(nb, nl, x, acc).getResult();
      });
  auto type = cast<RankedTensorType>(max.getType());
  return buildBroadcastElementwise(
      b, loc, type, {max}, [](OpBuilder &nb, Location nl, ValueRange args) {
        Value m = args[0];
        Value inf = createExtreme(nb, nl, m.getType(), true, false);
        Value abs = math::AbsFOp::create(nb, nl, m);
        Value finite =
            arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OLT, abs, inf);
        Value zero = createScalarConstant(nb, nl, m.getType(), 0.0);
        return arith::SelectOp::create(nb, nl, finite, m, zero);
      });
}

/// sum(exp(x - shift)) over `axes`.
Value buildSumExp(OpBuilder &b, Location loc, Value input,
                  ArrayRef<int64_t> axes, Value shift, Type accumulate = {}) {
  Type element = cast<RankedTensorType>(input.getType()).getElementType();
  if (!accumulate)
    accumulate = element;
  return buildReduce(b, loc, input, axes, {shift},
                     createScalarConstant(b, loc, accumulate, 0.0),
                     [accumulate](OpBuilder &nb, Location nl, Value x,
                                  ValueRange extra, Value acc) {
                       Value shifted =
                           arith::SubFOp::create(nb, nl, x, extra[0]);
                       Value e = math::ExpOp::create(nb, nl, shifted);
                       if (e.getType() != accumulate)
                         e = arith::ExtFOp::create(nb, nl, accumulate, e);
                       return arith::AddFOp::create(nb, nl, acc, e);
                     });
}

//===----------------------------------------------------------------------===//
// ReduceSum and its kin
//===----------------------------------------------------------------------===//

enum class ReduceKind {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  LogSum,
  LogSumExp,
  SumSquare
};

template <typename Op> struct ReduceLowering : OpConversionPattern<Op> {
  ReduceLowering(const TypeConverter &converter, MLIRContext *ctx,
                 ReduceKind kind)
      : OpConversionPattern<Op>(converter, ctx), kind(kind) {}

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    Type element = inputType.getElementType();
    bool isFloat = isa<FloatType>(element);
    bool isUnsigned =
        comparesUnsigned(op.getInput().getType().getElementType());
    if (!isFloat && (kind == ReduceKind::L2 || kind == ReduceKind::LogSum ||
                     kind == ReduceKind::LogSumExp))
      return rewriter.notifyMatchFailure(op, "needs a float element type");
    ArrayRef<int64_t> axes = op.getAxes();
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));

    Value reduced;
    if (kind == ReduceKind::LogSumExp) {
      // log(sum(exp(x))) = shift + log(sum(exp(x - shift))), shift = max(x).
      Value shift = buildShift(rewriter, loc, input, axes);
      Value sum = buildSumExp(rewriter, loc, input, axes, shift);
      reduced = buildBroadcastElementwise(
          rewriter, loc, cast<RankedTensorType>(sum.getType()), {sum, shift},
          [](OpBuilder &b, Location l, ValueRange args) {
            Value log = math::LogOp::create(b, l, args[0]);
            return arith::AddFOp::create(b, l, log, args[1]);
          });
    } else {
      reduced = buildReduce(
          rewriter, loc, input, axes, {},
          createInit(rewriter, loc, element, isUnsigned),
          [&](OpBuilder &b, Location l, Value x, ValueRange, Value acc) {
            return combine(b, l, prepare(b, l, x, isUnsigned), acc, isUnsigned);
          });
      if (kind == ReduceKind::Mean || kind == ReduceKind::L2 ||
          kind == ReduceKind::LogSum) {
        Value count = kind == ReduceKind::Mean
                          ? createCount(rewriter, loc, input, axes, element)
                          : Value();
        reduced = buildBroadcastElementwise(
            rewriter, loc, cast<RankedTensorType>(reduced.getType()), {reduced},
            [&](OpBuilder &b, Location l, ValueRange args) -> Value {
              Value x = args[0];
              if (kind == ReduceKind::L2)
                return math::SqrtOp::create(b, l, x);
              if (kind == ReduceKind::LogSum)
                return math::LogOp::create(b, l, x);
              if (isFloat)
                return arith::DivFOp::create(b, l, x, count);
              if (isUnsigned)
                return arith::DivUIOp::create(b, l, x, count);
              return arith::DivSIOp::create(b, l, x, count);
            });
      }
    }
    rewriter.replaceOp(op, finishReduction(rewriter, loc, reduced, axes,
                                           inputType.getRank(),
                                           op.getKeepdims(), resultType));
    return success();
  }

  /// The reduction's identity.
  Value createInit(OpBuilder &b, Location loc, Type element,
                   bool isUnsigned) const {
    switch (kind) {
    case ReduceKind::Max:
      return createExtreme(b, loc, element, /*largest=*/false, isUnsigned);
    case ReduceKind::Min:
      return createExtreme(b, loc, element, /*largest=*/true, isUnsigned);
    case ReduceKind::Prod:
      return createScalarConstant(b, loc, element, 1.0);
    default:
      return createScalarConstant(b, loc, element, 0.0);
    }
  }

  /// The per-element part: |x| or x * x where the formula has one.
  Value prepare(OpBuilder &b, Location loc, Value x, bool isUnsigned) const {
    switch (kind) {
    case ReduceKind::L1:
      if (isa<FloatType>(x.getType()))
        return math::AbsFOp::create(b, loc, x);
      return isUnsigned ? x : math::AbsIOp::create(b, loc, x).getResult();
    case ReduceKind::L2:
    case ReduceKind::SumSquare:
      return createMul(b, loc, x, x);
    default:
      return x;
    }
  }

  Value combine(OpBuilder &b, Location loc, Value x, Value acc,
                bool isUnsigned) const {
    switch (kind) {
    case ReduceKind::Max:
      return createMaxMin(b, loc, x, acc, /*max=*/true, isUnsigned);
    case ReduceKind::Min:
      return createMaxMin(b, loc, x, acc, /*max=*/false, isUnsigned);
    case ReduceKind::Prod:
      return createMul(b, loc, acc, x);
    default:
      return createAdd(b, loc, acc, x);
    }
  }

  ReduceKind kind;
};

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax
//===----------------------------------------------------------------------===//

template <typename Op> struct SoftmaxLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isLog = std::is_same_v<Op, graph::LogSoftmaxOp>;
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    ArrayRef<int64_t> axes = op.getAxes();
    Type element = cast<RankedTensorType>(input.getType()).getElementType();
    Value shift = buildShift(rewriter, loc, input, axes);
    // f16 and bf16 exponentials are summed in f32, and the sum rounded once
    // (as ONNX's function body, Exp then ReduceSum, gives it): a long row
    // summed in half precision loses the small terms.
    Type accumulate = element;
    if (auto floatType = dyn_cast<FloatType>(element);
        floatType && floatType.getWidth() < 32)
      accumulate = rewriter.getF32Type();
    Value sum = buildSumExp(rewriter, loc, input, axes, shift, accumulate);
    // Softmax multiplies by the sum's reciprocal, one division a row: a
    // vector division is ten times a multiply's cost, and it was the last
    // pass's bound (onnxruntime's kernel scales by 1 / sum too; the result
    // is within an ulp of the quotient). LogSoftmax subtracts log(sum).
    bool reciprocal = !isLog && accumulate == element;
    Value factor = sum;
    if (reciprocal)
      factor = buildBroadcastElementwise(
          rewriter, loc, cast<RankedTensorType>(sum.getType()), {sum},
          [](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value one = createScalarConstant(b, l, args[0].getType(), 1.0);
            return arith::DivFOp::create(b, l, one, args[0]);
          });
    Value result = buildNormalize(
        rewriter, loc, input, axes, {shift, factor}, element,
        [&](OpBuilder &b, Location l, Value x, ValueRange reduced) -> Value {
          Value shifted = arith::SubFOp::create(b, l, x, reduced[0]);
          Value sum = reduced[1];
          if (sum.getType() != x.getType())
            sum = arith::TruncFOp::create(b, l, x.getType(), sum);
          if (isLog)
            return arith::SubFOp::create(b, l, shifted,
                                         math::LogOp::create(b, l, sum));
          Value e = math::ExpOp::create(b, l, shifted);
          if (reciprocal)
            return arith::MulFOp::create(b, l, e, sum);
          return arith::DivFOp::create(b, l, e, sum);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The row-major position of the current element within the reduced axes, as
/// an i64 inside a linalg.generic over `sizes`.
Value createLinearIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> sizes,
                        ArrayRef<int64_t> axes) {
  Value linear = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t axis : axes) {
    Value size = arith::ConstantIndexOp::create(b, loc, sizes[axis]);
    Value index = linalg::IndexOp::create(b, loc, axis);
    linear = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, linear, size), index);
  }
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), linear);
}

/// Hardmax: the maximum, then the first position holding it, then a one-hot
/// tensor of that position.
struct HardmaxLowering : OpConversionPattern<graph::HardmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::HardmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    ArrayRef<int64_t> axes = op.getAxes();
    if (llvm::any_of(axes,
                     [&](int64_t axis) { return type.isDynamicDim(axis); }))
      return rewriter.notifyMatchFailure(op, "needs static reduced axes");
    bool isUnsigned =
        comparesUnsigned(op.getInput().getType().getElementType());
    Type element = type.getElementType();
    Value max = buildReduce(
        rewriter, loc, input, axes, {},
        createExtreme(rewriter, loc, element, false, isUnsigned),
        [&](OpBuilder &b, Location l, Value x, ValueRange, Value acc) {
          return createMaxMin(b, l, x, acc, true, isUnsigned);
        });
    ArrayRef<int64_t> shape = type.getShape();
    Value first = buildReduce(
        rewriter, loc, input, axes, {max},
        createExtreme(rewriter, loc, rewriter.getI64Type(), true, false),
        [&](OpBuilder &b, Location l, Value x, ValueRange extra, Value acc) {
          Value isMax = isa<FloatType>(x.getType())
                            ? arith::CmpFOp::create(
                                  b, l, arith::CmpFPredicate::OEQ, x, extra[0])
                                  .getResult()
                            : arith::CmpIOp::create(
                                  b, l, arith::CmpIPredicate::eq, x, extra[0])
                                  .getResult();
          Value position = createLinearIndex(b, l, shape, axes);
          Value candidate = arith::SelectOp::create(b, l, isMax, position, acc);
          return arith::MinSIOp::create(b, l, candidate, acc);
        });
    Value result = buildNormalize(
        rewriter, loc, input, axes, {first}, element,
        [&](OpBuilder &b, Location l, Value x, ValueRange reduced) -> Value {
          Value position = createLinearIndex(b, l, shape, axes);
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            position, reduced[0]);
          return arith::SelectOp::create(
              b, l, hit, createScalarConstant(b, l, element, 1.0),
              createScalarConstant(b, l, element, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

template <typename Op> struct ArgReduceLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<Op, graph::ArgMaxOp>;
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxis();
    bool last = op.getSelectLastIndex();
    bool isUnsigned =
        comparesUnsigned(op.getInput().getType().getElementType());
    Type element = type.getElementType();
    bool isFloat = isa<FloatType>(element);

    SmallVector<OpFoldResult> sizes = keptSizes(rewriter, loc, input, {axis});
    Value values = createFilled(
        rewriter, loc, sizes,
        createExtreme(rewriter, loc, element, /*largest=*/!isMax, isUnsigned));
    Value indices = createFilled(
        rewriter, loc, sizes,
        createScalarConstant(rewriter, loc, rewriter.getI64Type(), 0.0));
    AffineMap kept = keptDimsMap(rank, {axis}, ctx);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators[axis] = utils::IteratorType::reduction;

    // The new element wins when it is strictly better, or as good with
    // select_last_index.
    arith::CmpFPredicate floatPredicate =
        isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
              : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
    arith::CmpIPredicate intPredicate =
        isUnsigned ? (isMax ? (last ? arith::CmpIPredicate::uge
                                    : arith::CmpIPredicate::ugt)
                            : (last ? arith::CmpIPredicate::ule
                                    : arith::CmpIPredicate::ult))
                   : (isMax ? (last ? arith::CmpIPredicate::sge
                                    : arith::CmpIPredicate::sgt)
                            : (last ? arith::CmpIPredicate::sle
                                    : arith::CmpIPredicate::slt));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{values.getType(), indices.getType()},
        ValueRange{input}, ValueRange{values, indices},
        {rewriter.getMultiDimIdentityMap(rank), kept, kept}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value wins =
              isFloat ? arith::CmpFOp::create(b, l, floatPredicate, x, best)
                            .getResult()
                      : arith::CmpIOp::create(b, l, intPredicate, x, best)
                            .getResult();
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{
                  arith::SelectOp::create(b, l, wins, x, best),
                  arith::SelectOp::create(b, l, wins, index, bestIndex)});
        });
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOp(op, finishReduction(rewriter, loc, generic.getResult(1),
                                           {axis}, rank, op.getKeepdims(),
                                           resultType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// out[..., i, ...] = sum (CumSum) or product (CumProd) over j of
/// x[..., j, ...] where j runs over the positions before i (after i with
/// `reverse`), i itself included unless `exclusive`. The iteration space is
/// the input's with one more (reduction) dimension for j.
template <typename OpTy, bool product>
struct CumulativeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxis();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();

    SmallVector<AffineExpr> inputExprs;
    for (int64_t d = 0; d < rank; ++d)
      inputExprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    AffineMap inputMap = AffineMap::get(rank + 1, 0, inputExprs, ctx);
    AffineMap outputMap =
        AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank);
    SmallVector<utils::IteratorType> iterators(rank + 1,
                                               utils::IteratorType::parallel);
    iterators[rank] = utils::IteratorType::reduction;

    Type element = type.getElementType();
    double identity = product ? 1.0 : 0.0;
    Value out =
        createFilled(rewriter, loc, tensor::getMixedSizes(rewriter, loc, input),
                     createScalarConstant(rewriter, loc, element, identity));
    arith::CmpIPredicate predicate =
        reverse ? (exclusive ? arith::CmpIPredicate::ugt
                             : arith::CmpIPredicate::uge)
                : (exclusive ? arith::CmpIPredicate::ult
                             : arith::CmpIPredicate::ule);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{out.getType()}, ValueRange{input},
        ValueRange{out}, {inputMap, outputMap}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = linalg::IndexOp::create(b, l, axis);
          Value j = linalg::IndexOp::create(b, l, rank);
          Value counts = arith::CmpIOp::create(b, l, predicate, j, i);
          Value term = arith::SelectOp::create(
              b, l, counts, args[0],
              createScalarConstant(b, l, element, identity));
          Value combined;
          if (!product)
            combined = createAdd(b, l, args[1], term);
          else if (isa<FloatType>(element))
            combined = arith::MulFOp::create(b, l, args[1], term);
          else
            combined = arith::MulIOp::create(b, l, args[1], term);
          linalg::YieldOp::create(b, l, combined);
        });
    Value result = generic.getResult(0);
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getType()));
    if (result.getType() != resultType)
      result = tensor::CastOp::create(rewriter, loc, resultType, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

/// TopK in two generics over the input's dimensions plus one (reduction)
/// dimension j that runs along the axis again:
///   rank[i]  = #{j : x[j] better than x[i], or equal with j < i}
///   out[r]   = x[i] and i for the i with rank[i] == r, for r < k.
/// Quadratic in the axis' length; the ranks form a permutation, so each r
/// meets exactly one i.
struct TopKLowering : OpConversionPattern<graph::TopKOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    int64_t rank = type.getRank();
    int64_t axis = op.getAxis();
    bool largest = op.getLargest();
    bool isUnsigned =
        comparesUnsigned(op.getInput().getType().getElementType());
    Type element = type.getElementType();
    Type i64 = rewriter.getI64Type();

    // Maps of the (rank + 1)-D space: the tensor's own dimensions, or the
    // axis replaced by the extra dimension.
    AffineMap own =
        AffineMap::getMultiDimIdentityMap(rank + 1, ctx).getMajorSubMap(rank);
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      exprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    AffineMap alongExtra = AffineMap::get(rank + 1, 0, exprs, ctx);
    SmallVector<utils::IteratorType> iterators(rank + 1,
                                               utils::IteratorType::parallel);
    iterators[rank] = utils::IteratorType::reduction;

    arith::CmpFPredicate floatBetter =
        largest ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT;
    arith::CmpIPredicate intBetter =
        largest ? (isUnsigned ? arith::CmpIPredicate::ugt
                              : arith::CmpIPredicate::sgt)
                : (isUnsigned ? arith::CmpIPredicate::ult
                              : arith::CmpIPredicate::slt);
    Value ranksInit =
        createFilled(rewriter, loc, tensor::getMixedSizes(rewriter, loc, input),
                     createScalarConstant(rewriter, loc, i64, 0.0));
    Value ranks =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{ranksInit.getType()},
            ValueRange{input, input}, ValueRange{ranksInit},
            {own, alongExtra, own}, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value xi = args[0], xj = args[1];
              Value better, equal;
              if (isa<FloatType>(element)) {
                better = arith::CmpFOp::create(b, l, floatBetter, xj, xi);
                equal = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              xj, xi);
              } else {
                better = arith::CmpIOp::create(b, l, intBetter, xj, xi);
                equal = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              xj, xi);
              }
              Value i = linalg::IndexOp::create(b, l, axis);
              Value j = linalg::IndexOp::create(b, l, rank);
              Value before =
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, i);
              Value counts = arith::OrIOp::create(
                  b, l, better, arith::AndIOp::create(b, l, equal, before));
              Value one = arith::ExtUIOp::create(b, l, i64, counts);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddIOp::create(b, l, args[2], one)});
            })
            .getResult(0);

    auto valuesType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getValues().getType()));
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    SmallVector<OpFoldResult> outSizes =
        tensor::getMixedSizes(rewriter, loc, input);
    outSizes[axis] = rewriter.getIndexAttr(op.getK());
    Value values =
        createFilled(rewriter, loc, outSizes,
                     createScalarConstant(rewriter, loc, element, 0.0));
    Value indices = createFilled(rewriter, loc, outSizes,
                                 createScalarConstant(rewriter, loc, i64, 0.0));
    auto select = linalg::GenericOp::create(
        rewriter, loc, TypeRange{values.getType(), indices.getType()},
        ValueRange{input, ranks}, ValueRange{values, indices},
        {alongExtra, alongExtra, own, own}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value r = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, axis));
          Value i = arith::IndexCastOp::create(
              b, l, i64, linalg::IndexOp::create(b, l, rank));
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[1], r);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, hit, args[0], args[2]),
                         arith::SelectOp::create(b, l, hit, i, args[3])});
        });
    SmallVector<Value> results = {select.getResult(0), select.getResult(1)};
    if (results[0].getType() != valuesType)
      results[0] =
          tensor::CastOp::create(rewriter, loc, valuesType, results[0]);
    if (results[1].getType() != indicesType)
      results[1] =
          tensor::CastOp::create(rewriter, loc, indicesType, results[1]);
    rewriter.replaceOp(op, results);
    return success();
  }
};

template <typename Op>
void addReduce(const TypeConverter &converter, RewritePatternSet &patterns,
               ReduceKind kind) {
  patterns.add<ReduceLowering<Op>>(converter, patterns.getContext(), kind);
}

} // namespace

void populateReductionToLinalgPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  addReduce<graph::ReduceSumOp>(converter, patterns, ReduceKind::Sum);
  addReduce<graph::ReduceMeanOp>(converter, patterns, ReduceKind::Mean);
  addReduce<graph::ReduceMaxOp>(converter, patterns, ReduceKind::Max);
  addReduce<graph::ReduceMinOp>(converter, patterns, ReduceKind::Min);
  addReduce<graph::ReduceProdOp>(converter, patterns, ReduceKind::Prod);
  addReduce<graph::ReduceL1Op>(converter, patterns, ReduceKind::L1);
  addReduce<graph::ReduceL2Op>(converter, patterns, ReduceKind::L2);
  addReduce<graph::ReduceLogSumOp>(converter, patterns, ReduceKind::LogSum);
  addReduce<graph::ReduceLogSumExpOp>(converter, patterns,
                                      ReduceKind::LogSumExp);
  addReduce<graph::ReduceSumSquareOp>(converter, patterns,
                                      ReduceKind::SumSquare);
  patterns.add<
      SoftmaxLowering<graph::SoftmaxOp>, SoftmaxLowering<graph::LogSoftmaxOp>,
      HardmaxLowering, ArgReduceLowering<graph::ArgMaxOp>,
      ArgReduceLowering<graph::ArgMinOp>,
      CumulativeLowering<graph::CumSumOp, /*product=*/false>,
      CumulativeLowering<graph::CumProdOp, /*product=*/true>, TopKLowering>(
      converter, patterns.getContext());
}

} // namespace kiln
