//===- ElementwiseToLinalg.cpp - Lowering of elementwise ops --------------===//
//
// Every elementwise op becomes one linalg.generic whose indexing maps do the
// broadcasting; the scalar computation is built by a small function per op.
//
// Transcendental functions on f16 and bf16 are computed in f32 (the operand
// is extended, the result truncated): libm has no half-precision entry points
// and f32 keeps the precision ONNX runtimes give.
//
// Adding an op: write its scalar function (a lambda below) and register it
// with addElementwise (any op) or addFloatUnary (a float-only unary op).
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"
#include "conversion/GraphToLinalg/NarrowFloats.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// Lowers an elementwise graph op with `ScalarFn` computing one element.
/// `ScalarFn(OpBuilder &, Location, Op, ValueRange scalars) -> Value`.
template <typename Op, typename ScalarFn>
struct ElementwiseLowering : OpConversionPattern<Op> {
  ElementwiseLowering(const TypeConverter &converter, MLIRContext *ctx,
                      ScalarFn fn)
      : OpConversionPattern<Op>(converter, ctx), fn(fn) {}

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op->getResult(0).getType()));
    Value result = buildBroadcastElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return fn(b, loc, op, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  ScalarFn fn;
};

template <typename Op, typename ScalarFn>
void addElementwise(const TypeConverter &converter, RewritePatternSet &patterns,
                    ScalarFn fn) {
  patterns.add(std::make_unique<ElementwiseLowering<Op, ScalarFn>>(
      converter, patterns.getContext(), fn));
}

/// The graph-level (possibly unsigned) element type of operand `i` of `op`.
Type operandElement(Operation *op, unsigned i = 0) {
  return getElementTypeOrSelf(op->getOperand(i).getType());
}

Value constant(OpBuilder &b, Location loc, Type type, double value) {
  return createScalarConstant(b, loc, type, value);
}

/// Converts a float scalar to another float type (through f32 between f16
/// and bf16).
Value convertFloat(OpBuilder &b, Location loc, Value x, FloatType to) {
  auto from = cast<FloatType>(x.getType());
  if (from == to)
    return x;
  if (from.getWidth() < to.getWidth())
    return arith::ExtFOp::create(b, loc, to, x);
  if (from.isF64() && to.getWidth() == 16)
    return truncateF64ToHalf(b, loc, x, to);
  if (from.getWidth() > to.getWidth())
    return arith::TruncFOp::create(b, loc, to, x);
  return arith::TruncFOp::create(
      b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), x));
}

/// The float type transcendental functions on `type` are computed in.
FloatType computeType(OpBuilder &b, Type type) {
  auto floatType = cast<FloatType>(type);
  return floatType.getWidth() < 32 ? b.getF32Type() : floatType;
}

/// Converts a scalar of any graph element type (`graphElement` says whether
/// an integer is unsigned) to the float type `to`.
Value toFloat(OpBuilder &b, Location loc, Value x, Type graphElement,
              FloatType to) {
  if (isa<FloatType>(x.getType()))
    return convertFloat(b, loc, x, to);
  if (isUnsignedInteger(graphElement) || graphElement.isInteger(1))
    return arith::UIToFPOp::create(b, loc, to, x);
  return arith::SIToFPOp::create(b, loc, to, x);
}

// Scalar helpers on one float type.
Value fconst(OpBuilder &b, Location loc, Value like, double value) {
  return constant(b, loc, like.getType(), value);
}
Value fadd(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value fsub(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value fmul(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value fdiv(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::DivFOp::create(b, loc, x, y);
}
Value fmax(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}
Value fmin(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MinimumFOp::create(b, loc, x, y);
}
Value fcmp(OpBuilder &b, Location loc, arith::CmpFPredicate pred, Value x,
           Value y) {
  return arith::CmpFOp::create(b, loc, pred, x, y);
}
Value select(OpBuilder &b, Location loc, Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
/// A binary op computed by FloatOp on floats, SIntOp on signed and UIntOp on
/// unsigned integers.
template <typename FloatOp, typename SIntOp, typename UIntOp>
Value binary(OpBuilder &b, Location loc, Operation *op, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return FloatOp::create(b, loc, args[0], args[1]);
  if (isUnsignedInteger(operandElement(op)))
    return UIntOp::create(b, loc, args[0], args[1]);
  return SIntOp::create(b, loc, args[0], args[1]);
}

/// An integer (or boolean) binary op that is the same for any signedness.
template <typename IntOp>
Value bitwise(OpBuilder &b, Location loc, Operation *, ValueRange args) {
  return IntOp::create(b, loc, args[0], args[1]);
}

/// A comparison: `floatPred` on floats, `signedPred` or `unsignedPred` on
/// integers (booleans compare as unsigned).
template <arith::CmpFPredicate floatPred, arith::CmpIPredicate signedPred,
          arith::CmpIPredicate unsignedPred>
Value compare(OpBuilder &b, Location loc, Operation *op, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return arith::CmpFOp::create(b, loc, floatPred, args[0], args[1]);
  Type element = operandElement(op);
  bool isUnsigned = isUnsignedInteger(element) || element.isInteger(1);
  return arith::CmpIOp::create(b, loc, isUnsigned ? unsignedPred : signedPred,
                               args[0], args[1]);
}

/// ONNX Mod: C fmod (truncated) or Python % (floored).
Value modScalar(OpBuilder &b, Location loc, graph::ModOp op, ValueRange args) {
  Value lhs = args[0], rhs = args[1];
  Value zero = constant(b, loc, lhs.getType(), 0);
  if (isa<FloatType>(lhs.getType())) {
    Value rem = arith::RemFOp::create(b, loc, lhs, rhs);
    if (op.getFmod())
      return rem;
    // Floored: a non-zero remainder whose sign differs from the divisor's
    // moves by one divisor; a zero one takes the divisor's sign.
    Value isZero = fcmp(b, loc, arith::CmpFPredicate::OEQ, rem, zero);
    Value signsDiffer = arith::XOrIOp::create(
        b, loc, fcmp(b, loc, arith::CmpFPredicate::OLT, rem, zero),
        fcmp(b, loc, arith::CmpFPredicate::OLT, rhs, zero));
    Value adjusted = select(b, loc, signsDiffer,
                            arith::AddFOp::create(b, loc, rem, rhs), rem);
    return select(b, loc, isZero, math::CopySignOp::create(b, loc, rem, rhs),
                  adjusted);
  }
  if (isUnsignedInteger(operandElement(op)))
    return arith::RemUIOp::create(b, loc, lhs, rhs);
  Value rem = arith::RemSIOp::create(b, loc, lhs, rhs);
  if (op.getFmod())
    return rem;
  Value nonZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, zero);
  Value signsDiffer = arith::XOrIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rem, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, rhs, zero));
  Value adjust = arith::AndIOp::create(b, loc, nonZero, signsDiffer);
  return select(b, loc, adjust, arith::AddIOp::create(b, loc, rem, rhs), rem);
}

/// ONNX BitShift with the amount read as unsigned: an amount of at least the
/// bit width shifts everything out (sign fill for a signed right shift).
template <bool left>
Value shiftScalar(OpBuilder &b, Location loc, Operation *op, ValueRange args) {
  Value x = args[0], amount = args[1];
  Type type = x.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  Value widthValue = constant(b, loc, type, width);
  Value tooFar = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       amount, widthValue);
  if (!left && !isUnsignedInteger(operandElement(op))) {
    Value clamped =
        select(b, loc, tooFar, constant(b, loc, type, width - 1), amount);
    return arith::ShRSIOp::create(b, loc, x, clamped);
  }
  Value zero = constant(b, loc, type, 0);
  Value safe = select(b, loc, tooFar, zero, amount);
  Value shifted = left ? Value(arith::ShLIOp::create(b, loc, x, safe))
                       : Value(arith::ShRUIOp::create(b, loc, x, safe));
  return select(b, loc, tooFar, zero, shifted);
}

/// ONNX Pow. Integer powers are computed in f64 and truncated back, which is
/// exact while the result fits 53 bits.
Value powScalar(OpBuilder &b, Location loc, graph::PowOp op, ValueRange args) {
  Type baseElement = operandElement(op, 0);
  Type exponentElement = operandElement(op, 1);
  Type resultType = args[0].getType();
  FloatType compute = isa<FloatType>(resultType) ? computeType(b, resultType)
                                                 : FloatType(b.getF64Type());
  Value base = toFloat(b, loc, args[0], baseElement, compute);
  Value exponent = toFloat(b, loc, args[1], exponentElement, compute);
  Value result = math::PowFOp::create(b, loc, base, exponent);
  if (auto floatType = dyn_cast<FloatType>(resultType))
    return convertFloat(b, loc, result, floatType);
  if (isUnsignedInteger(baseElement))
    return arith::FPToUIOp::create(b, loc, resultType, result);
  return arith::FPToSIOp::create(b, loc, resultType, result);
}

/// ONNX Sign on any number.
Value signScalar(OpBuilder &b, Location loc, Operation *op, ValueRange args) {
  Value x = args[0];
  Type type = x.getType();
  Value zero = constant(b, loc, type, 0);
  Value one = constant(b, loc, type, 1);
  if (isa<FloatType>(type)) {
    // Zero and NaN map to themselves.
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
    Value negative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
    Value minusOne = constant(b, loc, type, -1);
    return arith::SelectOp::create(
        b, loc, positive, one,
        arith::SelectOp::create(b, loc, negative, minusOne, x));
  }
  Value nonZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  Value magnitude = arith::SelectOp::create(b, loc, nonZero, one, zero);
  if (isUnsignedInteger(operandElement(op)))
    return magnitude;
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  return arith::SelectOp::create(b, loc, negative, constant(b, loc, type, -1),
                                 magnitude);
}

/// ONNX Cast: every numeric type and bool to every other. The narrow floats
/// go through f32 (NarrowFloats.h).
Value castScalar(OpBuilder &b, Location loc, graph::CastOp op,
                 ValueRange args) {
  Value x = args[0];
  Type from = operandElement(op);
  Type to = getElementTypeOrSelf(op.getResult().getType());
  if (from == to)
    return x;
  if (isNarrowFloat(from)) {
    x = decodeNarrowFloat(b, loc, x);
    from = x.getType();
    if (from == to)
      return x;
  }
  if (isNarrowFloat(to)) {
    Value wide = from.isF32() ? x : toFloat(b, loc, x, from, b.getF32Type());
    return encodeNarrowFloat(b, loc, wide, cast<FloatType>(to),
                             op.getSaturate(), op.getRoundMode());
  }
  Type toScalar = to.isUnsignedInteger()
                      ? Type(b.getIntegerType(to.getIntOrFloatBitWidth()))
                      : to;
  bool fromUnsigned = isUnsignedInteger(from) || from.isInteger(1);
  if (x.getType() == toScalar && !isa<FloatType>(toScalar))
    return x;
  if (to.isInteger(1)) {
    Value zero = constant(b, loc, x.getType(), 0);
    if (isa<FloatType>(x.getType()))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (auto toFloatType = dyn_cast<FloatType>(toScalar))
    return toFloat(b, loc, x, from, toFloatType);
  if (isa<FloatType>(x.getType())) {
    // Into 4- and 2-bit integers, signed or not, the value wraps (as NumPy's
    // ml_dtypes, ONNX's reference, does): through i64.
    if (toScalar.getIntOrFloatBitWidth() < 8)
      return arith::TruncIOp::create(
          b, loc, toScalar, arith::FPToSIOp::create(b, loc, b.getI64Type(), x));
    if (to.isUnsignedInteger())
      return arith::FPToUIOp::create(b, loc, toScalar, x);
    return arith::FPToSIOp::create(b, loc, toScalar, x);
  }
  unsigned fromWidth = x.getType().getIntOrFloatBitWidth();
  unsigned toWidth = toScalar.getIntOrFloatBitWidth();
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, toScalar, x);
  if (fromUnsigned)
    return arith::ExtUIOp::create(b, loc, toScalar, x);
  return arith::ExtSIOp::create(b, loc, toScalar, x);
}

/// Computes a float unary function in f32 for f16 and bf16 operands.
/// `FloatFn(OpBuilder &, Location, Op, Value x) -> Value`, with `x` of the
/// compute type.
template <typename Op, typename FloatFn>
void addFloatUnary(const TypeConverter &converter, RewritePatternSet &patterns,
                   FloatFn fn) {
  addElementwise<Op>(
      converter, patterns,
      [fn](OpBuilder &b, Location loc, Op op, ValueRange args) -> Value {
        auto type = cast<FloatType>(args[0].getType());
        FloatType compute = computeType(b, type);
        Value x = convertFloat(b, loc, args[0], compute);
        return convertFloat(b, loc, fn(b, loc, op, x), type);
      });
}

/// A float unary op that is one math-dialect op.
template <typename Op, typename MathOp>
void addMathUnary(const TypeConverter &converter, RewritePatternSet &patterns) {
  addFloatUnary<Op>(converter, patterns,
                    [](OpBuilder &b, Location loc, Op, Value x) -> Value {
                      return MathOp::create(b, loc, x);
                    });
}

} // namespace

void populateElementwiseToLinalgPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns) {
  using FPred = arith::CmpFPredicate;
  using IPred = arith::CmpIPredicate;

  // Binary arithmetic.
  addElementwise<graph::AddOp>(
      converter, patterns, binary<arith::AddFOp, arith::AddIOp, arith::AddIOp>);
  addElementwise<graph::SubOp>(
      converter, patterns, binary<arith::SubFOp, arith::SubIOp, arith::SubIOp>);
  addElementwise<graph::MulOp>(
      converter, patterns, binary<arith::MulFOp, arith::MulIOp, arith::MulIOp>);
  addElementwise<graph::DivOp>(
      converter, patterns,
      binary<arith::DivFOp, arith::DivSIOp, arith::DivUIOp>);
  addElementwise<graph::MaxOp>(
      converter, patterns,
      binary<arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>);
  addElementwise<graph::MinOp>(
      converter, patterns,
      binary<arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>);
  addElementwise<graph::ModOp>(converter, patterns, modScalar);
  addElementwise<graph::PowOp>(converter, patterns, powScalar);
  addElementwise<graph::PReluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *, ValueRange args) -> Value {
        Value x = args[0], slope = args[1];
        Value zero = constant(b, loc, x.getType(), 0);
        if (isa<FloatType>(x.getType()))
          return select(b, loc, fcmp(b, loc, FPred::OLT, x, zero),
                        fmul(b, loc, x, slope), x);
        Value negative = arith::CmpIOp::create(b, loc, IPred::slt, x, zero);
        return select(b, loc, negative, arith::MulIOp::create(b, loc, x, slope),
                      x);
      });

  // Bits and booleans.
  addElementwise<graph::ShiftLeftOp>(converter, patterns, shiftScalar<true>);
  addElementwise<graph::ShiftRightOp>(converter, patterns, shiftScalar<false>);
  addElementwise<graph::AndOp>(converter, patterns, bitwise<arith::AndIOp>);
  addElementwise<graph::OrOp>(converter, patterns, bitwise<arith::OrIOp>);
  addElementwise<graph::XorOp>(converter, patterns, bitwise<arith::XOrIOp>);
  addElementwise<graph::BitwiseAndOp>(converter, patterns,
                                      bitwise<arith::AndIOp>);
  addElementwise<graph::BitwiseOrOp>(converter, patterns,
                                     bitwise<arith::OrIOp>);
  addElementwise<graph::BitwiseXorOp>(converter, patterns,
                                      bitwise<arith::XOrIOp>);
  auto allOnes = [](OpBuilder &b, Location loc, Operation *,
                    ValueRange args) -> Value {
    Value ones = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(args[0].getType(), -1));
    return arith::XOrIOp::create(b, loc, args[0], ones);
  };
  addElementwise<graph::NotOp>(converter, patterns, allOnes);
  addElementwise<graph::BitwiseNotOp>(converter, patterns, allOnes);

  // Comparisons and selection.
  addElementwise<graph::EqualOp>(converter, patterns,
                                 compare<FPred::OEQ, IPred::eq, IPred::eq>);
  addElementwise<graph::LessOp>(converter, patterns,
                                compare<FPred::OLT, IPred::slt, IPred::ult>);
  addElementwise<graph::LessEqualOp>(
      converter, patterns, compare<FPred::OLE, IPred::sle, IPred::ule>);
  addElementwise<graph::GreaterOp>(converter, patterns,
                                   compare<FPred::OGT, IPred::sgt, IPred::ugt>);
  addElementwise<graph::GreaterEqualOp>(
      converter, patterns, compare<FPred::OGE, IPred::sge, IPred::uge>);
  addElementwise<graph::WhereOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *, ValueRange args) -> Value {
        return select(b, loc, args[0], args[1], args[2]);
      });
  addElementwise<graph::CastOp>(converter, patterns, castScalar);
  addElementwise<graph::BitCastOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::BitCastOp op,
         ValueRange args) -> Value {
        Type to = getElementTypeOrSelf(op.getResult().getType());
        Type from = args[0].getType();
        // A bool is the byte 0 or 1.
        if (from.isInteger(1))
          return arith::ExtUIOp::create(b, loc, b.getIntegerType(8), args[0]);
        if (to.isInteger(1)) {
          Value byte =
              arith::BitcastOp::create(b, loc, b.getIntegerType(8), args[0]);
          return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, byte,
                                       constant(b, loc, byte.getType(), 0));
        }
        Type target =
            to.isInteger() ? b.getIntegerType(to.getIntOrFloatBitWidth()) : to;
        if (from == target)
          return args[0];
        return arith::BitcastOp::create(b, loc, target, args[0]);
      });

  // Unary ops on any number.
  addElementwise<graph::ReluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *, ValueRange args) -> Value {
        Value zero = constant(b, loc, args[0].getType(), 0);
        if (isa<FloatType>(args[0].getType()))
          return fmax(b, loc, args[0], zero);
        return arith::MaxSIOp::create(b, loc, args[0], zero);
      });
  addElementwise<graph::AbsOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *op, ValueRange args) -> Value {
        if (isa<FloatType>(args[0].getType()))
          return math::AbsFOp::create(b, loc, args[0]);
        if (isUnsignedInteger(operandElement(op)))
          return args[0];
        return math::AbsIOp::create(b, loc, args[0]);
      });
  addElementwise<graph::NegOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *, ValueRange args) -> Value {
        if (isa<FloatType>(args[0].getType()))
          return arith::NegFOp::create(b, loc, args[0]);
        return arith::SubIOp::create(
            b, loc, constant(b, loc, args[0].getType(), 0), args[0]);
      });
  addElementwise<graph::SignOp>(converter, patterns, signScalar);

  // Float functions.
  addMathUnary<graph::ExpOp, math::ExpOp>(converter, patterns);
  addMathUnary<graph::LogOp, math::LogOp>(converter, patterns);
  addMathUnary<graph::SqrtOp, math::SqrtOp>(converter, patterns);
  addMathUnary<graph::FloorOp, math::FloorOp>(converter, patterns);
  addMathUnary<graph::CeilOp, math::CeilOp>(converter, patterns);
  addMathUnary<graph::RoundOp, math::RoundEvenOp>(converter, patterns);
  addMathUnary<graph::SinOp, math::SinOp>(converter, patterns);
  addMathUnary<graph::CosOp, math::CosOp>(converter, patterns);
  addMathUnary<graph::TanOp, math::TanOp>(converter, patterns);
  addMathUnary<graph::AsinOp, math::AsinOp>(converter, patterns);
  addMathUnary<graph::AcosOp, math::AcosOp>(converter, patterns);
  addMathUnary<graph::AtanOp, math::AtanOp>(converter, patterns);
  addMathUnary<graph::SinhOp, math::SinhOp>(converter, patterns);
  addMathUnary<graph::CoshOp, math::CoshOp>(converter, patterns);
  addMathUnary<graph::AsinhOp, math::AsinhOp>(converter, patterns);
  addMathUnary<graph::AcoshOp, math::AcoshOp>(converter, patterns);
  addMathUnary<graph::AtanhOp, math::AtanhOp>(converter, patterns);
  addMathUnary<graph::ErfOp, math::ErfOp>(converter, patterns);
  addMathUnary<graph::TanhOp, math::TanhOp>(converter, patterns);
  addFloatUnary<graph::ReciprocalOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return fdiv(b, loc, fconst(b, loc, x, 1), x);
      });
  addFloatUnary<graph::SigmoidOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return buildActivation(b, loc, graph::Activation::Sigmoid, {}, x);
      });
  addFloatUnary<graph::HardSwishOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return buildActivation(b, loc, graph::Activation::HardSwish, {}, x);
      });
  addFloatUnary<graph::SoftplusOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return buildSoftplus(b, loc, x);
      });
  addFloatUnary<graph::SoftsignOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return buildSoftsign(b, loc, x);
      });
  addFloatUnary<graph::MishOp>(
      converter, patterns, [](OpBuilder &b, Location loc, auto, Value x) {
        return fmul(b, loc, x,
                    math::TanhOp::create(b, loc, buildSoftplus(b, loc, x)));
      });

  // Float activations with parameters.
  addFloatUnary<graph::LeakyReluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::LeakyReluOp op, Value x) {
        return buildActivation(b, loc, graph::Activation::LeakyRelu,
                               {op.getAlpha().convertToFloat()}, x);
      });
  addFloatUnary<graph::EluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::EluOp op, Value x) {
        Value alpha = fconst(b, loc, x, op.getAlpha().convertToDouble());
        Value expm1 =
            fsub(b, loc, math::ExpOp::create(b, loc, x), fconst(b, loc, x, 1));
        return select(b, loc, fcmp(b, loc, FPred::OLT, x, fconst(b, loc, x, 0)),
                      fmul(b, loc, alpha, expm1), x);
      });
  addFloatUnary<graph::CeluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::CeluOp op, Value x) {
        Value alpha = fconst(b, loc, x, op.getAlpha().convertToDouble());
        Value zero = fconst(b, loc, x, 0);
        Value expm1 =
            fsub(b, loc, math::ExpOp::create(b, loc, fdiv(b, loc, x, alpha)),
                 fconst(b, loc, x, 1));
        return fadd(b, loc, fmax(b, loc, x, zero),
                    fmin(b, loc, fmul(b, loc, alpha, expm1), zero));
      });
  addFloatUnary<graph::SeluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::SeluOp op, Value x) {
        Value alpha = fconst(b, loc, x, op.getAlpha().convertToDouble());
        Value gamma = fconst(b, loc, x, op.getGamma().convertToDouble());
        Value negative = fsub(
            b, loc, fmul(b, loc, alpha, math::ExpOp::create(b, loc, x)), alpha);
        return fmul(b, loc, gamma,
                    select(b, loc,
                           fcmp(b, loc, FPred::OGT, x, fconst(b, loc, x, 0)), x,
                           negative));
      });
  addFloatUnary<graph::ThresholdedReluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::ThresholdedReluOp op, Value x) {
        Value alpha = fconst(b, loc, x, op.getAlpha().convertToDouble());
        return select(b, loc, fcmp(b, loc, FPred::OGT, x, alpha), x,
                      fconst(b, loc, x, 0));
      });
  addFloatUnary<graph::HardSigmoidOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::HardSigmoidOp op, Value x) {
        return buildActivation(
            b, loc, graph::Activation::HardSigmoid,
            {op.getAlpha().convertToFloat(), op.getBeta().convertToFloat()}, x);
      });
  addFloatUnary<graph::GeluOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::GeluOp op, Value x) {
        return buildActivation(b, loc,
                               op.getTanhApproximation()
                                   ? graph::Activation::GeluTanh
                                   : graph::Activation::Gelu,
                               {}, x);
      });

  // Float classification (no computation in f32 needed).
  addElementwise<graph::IsNaNOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, Operation *, ValueRange args) -> Value {
        return fcmp(b, loc, FPred::UNO, args[0], args[0]);
      });
  addElementwise<graph::IsInfOp>(
      converter, patterns,
      [](OpBuilder &b, Location loc, graph::IsInfOp op,
         ValueRange args) -> Value {
        Value x = args[0];
        Value result = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
        if (op.getDetectPositive())
          result = arith::OrIOp::create(
              b, loc, result,
              fcmp(b, loc, FPred::OEQ, x, fconst(b, loc, x, INFINITY)));
        if (op.getDetectNegative())
          result = arith::OrIOp::create(
              b, loc, result,
              fcmp(b, loc, FPred::OEQ, x, fconst(b, loc, x, -INFINITY)));
        return result;
      });
}

} // namespace kiln
