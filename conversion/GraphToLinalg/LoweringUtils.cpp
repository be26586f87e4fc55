//===- LoweringUtils.cpp - Helpers shared by graph lowerings --------------===//

#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;

namespace kiln {

RankedTensorType getTensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

bool allStatic(TypeRange types) {
  return llvm::all_of(
      types, [](Type t) { return cast<RankedTensorType>(t).hasStaticShape(); });
}

bool allStatic(Operation *op) {
  return allStatic(op->getOperandTypes()) && allStatic(op->getResultTypes());
}

Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value createFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  return createFilled(
      b, loc, type, createScalarConstant(b, loc, type.getElementType(), value));
}

Value padTensor(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> low,
                ArrayRef<int64_t> high, Value padValue) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return value;
  RankedTensorType type = getTensorType(value);
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < shape.size(); ++i)
    shape[i] += low[i] + high[i];
  return tensor::PadOp::create(b, loc, type.clone(shape), value,
                               getAsIndexOpFoldResult(b.getContext(), low),
                               getAsIndexOpFoldResult(b.getContext(), high),
                               padValue);
}

SmallVector<utils::IteratorType> getIterators(int64_t parallel,
                                              int64_t reduction) {
  SmallVector<utils::IteratorType> iterators(parallel,
                                             utils::IteratorType::parallel);
  iterators.append(reduction, utils::IteratorType::reduction);
  return iterators;
}

SmallVector<OpFoldResult> getBroadcastSizes(OpBuilder &b, Location loc,
                                            RankedTensorType resultType,
                                            ValueRange operands) {
  int64_t rank = resultType.getRank();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = resultType.getDimSize(d);
    if (!ShapedType::isDynamic(size)) {
      sizes.push_back(b.getIndexAttr(size));
      continue;
    }
    // Take the dimension from an operand that has it at full size: one whose
    // aligned dimension is not a static 1.
    OpFoldResult found;
    for (Value operand : operands) {
      auto type = cast<RankedTensorType>(operand.getType());
      int64_t offset = rank - type.getRank();
      if (d < offset)
        continue;
      int64_t operandSize = type.getDimSize(d - offset);
      if (operandSize == 1)
        continue;
      found =
          ShapedType::isDynamic(operandSize)
              ? OpFoldResult(tensor::DimOp::create(b, loc, operand, d - offset)
                                 .getResult())
              : OpFoldResult(b.getIndexAttr(operandSize));
      break;
    }
    sizes.push_back(found ? found : OpFoldResult(b.getIndexAttr(1)));
  }
  return sizes;
}

Value createEmptyTensor(OpBuilder &b, Location loc, RankedTensorType type,
                        ArrayRef<OpFoldResult> sizes) {
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

Value buildBroadcastElementwise(OpBuilder &b, Location loc,
                                RankedTensorType resultType,
                                ValueRange operands, ScalarBodyBuilder body,
                                Value init) {
  int64_t rank = resultType.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t offset = rank - type.getRank();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      bool broadcast =
          type.getDimSize(d) == 1 && resultType.getDimSize(d + offset) != 1;
      exprs.push_back(broadcast ? getAffineConstantExpr(0, ctx)
                                : getAffineDimExpr(d + offset, ctx));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, ctx));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));

  if (!init)
    init = createEmptyTensor(b, loc, resultType,
                             getBroadcastSizes(b, loc, resultType, operands));
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, operands, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  Value result = generic.getResult(0);
  if (result.getType() != resultType)
    result = tensor::CastOp::create(b, loc, resultType, result);
  return result;
}

Value createScalarConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  if (isa<IndexType>(type))
    return arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

bool isUnsignedInteger(Type graphElementType) {
  return graphElementType.isUnsignedInteger();
}

Value buildSoftplus(OpBuilder &b, Location loc, Value x) {
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), 0));
  Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
  Value tail =
      math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, negAbs));
  return arith::AddFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, x, zero), tail);
}

Value buildSoftsign(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), 1));
  Value denom =
      arith::AddFOp::create(b, loc, one, math::AbsFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, x, denom);
}

Value buildActivation(OpBuilder &b, Location loc, graph::Activation activation,
                      ArrayRef<float> params, Value x) {
  auto c = [&](double value) {
    return arith::ConstantOp::create(b, loc,
                                     b.getFloatAttr(x.getType(), value));
  };
  auto clamp = [&](Value v, double low, double high) -> Value {
    if (!std::isinf(low))
      v = arith::MaximumFOp::create(b, loc, v, c(low));
    if (!std::isinf(high))
      v = arith::MinimumFOp::create(b, loc, v, c(high));
    return v;
  };
  auto mul = [&](Value l, Value r) -> Value {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) -> Value {
    return arith::AddFOp::create(b, loc, l, r);
  };
  switch (activation) {
  case graph::Activation::None:
    return x;
  case graph::Activation::Relu:
    return arith::MaximumFOp::create(b, loc, x, c(0));
  case graph::Activation::Clip:
    return clamp(x, params[0], params[1]);
  case graph::Activation::LeakyRelu: {
    Value negative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, c(0));
    return arith::SelectOp::create(b, loc, negative, mul(c(params[0]), x), x);
  }
  case graph::Activation::Sigmoid: {
    Value expNeg =
        math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, c(1), add(c(1), expNeg));
  }
  case graph::Activation::Tanh:
    return math::TanhOp::create(b, loc, x);
  case graph::Activation::HardSigmoid:
    return clamp(add(mul(c(params[0]), x), c(params[1])), 0, 1);
  case graph::Activation::HardSwish:
    return mul(x, clamp(add(mul(x, c(1.0 / 6)), c(0.5)), 0, 1));
  case graph::Activation::Gelu: {
    Value erf = math::ErfOp::create(b, loc, mul(x, c(M_SQRT1_2)));
    return mul(mul(c(0.5), x), add(c(1), erf));
  }
  case graph::Activation::GeluTanh: {
    Value cube = mul(x, mul(x, x));
    Value poly = add(x, mul(c(0.044715), cube));
    Value inner =
        math::TanhOp::create(b, loc, mul(c(std::sqrt(2.0 / M_PI)), poly));
    return mul(mul(c(0.5), x), add(c(1), inner));
  }
  }
  llvm_unreachable("unknown activation");
}

/// Number of window elements of each output position along one dimension
/// that lie in [begin, end) of the unpadded input's coordinates.
SmallVector<int64_t> countWindowElements(int64_t outSize, int64_t kernel,
                                         int64_t stride, int64_t dilation,
                                         int64_t padBegin, int64_t begin,
                                         int64_t end) {
  SmallVector<int64_t> counts;
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t count = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t position = o * stride - padBegin + k * dilation;
      if (position >= begin && position < end)
        ++count;
    }
    counts.push_back(count);
  }
  return counts;
}

} // namespace kiln
