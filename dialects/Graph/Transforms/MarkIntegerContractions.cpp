//===- MarkIntegerContractions.cpp - Products of 8-bit integer operands ---===//
//
// A quantised model imports as f32 arithmetic on integer values
// (lib/Import/ImportQuantized.cpp): an activation is quantised by
// round(x / scale) clamped to the 8-bit range, shifted by its zero point,
// and convolved with (or multiplied by) a weight of integer values in
// [-128, 127]. This pass proves that of a blocked convolution's or a matrix
// product's operands, from the ops that make its input (a small value-range
// analysis over the graph ops that quantise), and records the input's range
// on it as `kiln.integer_input`; the lowering then computes it in 8-bit
// integers with 32-bit accumulators, which the CPU code generation runs on
// dot-product instructions.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include <cmath>

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHMARKINTEGERCONTRACTIONS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// The values a tensor's elements may take, all integers: [low, high].
struct IntegerRange {
  int64_t low, high;
};

/// Bounds beyond which a range is as good as unbounded; sums of two stay far
/// from overflow.
constexpr int64_t kUnbounded = int64_t(1) << 40;

IntegerRange clampRange(int64_t low, int64_t high) {
  return {std::clamp(low, -kUnbounded, kUnbounded),
          std::clamp(high, -kUnbounded, kUnbounded)};
}

/// The range of a constant of integer values, or nothing.
std::optional<IntegerRange> constantRange(Value value) {
  std::optional<SmallVector<double>> values = getFloatElements(value);
  if (!values || values->empty())
    return std::nullopt;
  double low = values->front(), high = values->front();
  for (double v : *values) {
    if (!std::isfinite(v) || v != std::nearbyint(v) ||
        std::abs(v) >= double(kUnbounded))
      return std::nullopt;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  return IntegerRange{int64_t(low), int64_t(high)};
}

/// The range of `value` when every element is provably an integer, or
/// nothing. Follows the ops that quantisation imports to (Round, Max, Min,
/// Add and Sub of integers, Relu) and those that move elements without
/// changing them (layout conversions, max pools, reshapes), `depth` ops
/// deep at most.
std::optional<IntegerRange> integerRange(Value value, int depth = 12) {
  if (depth == 0)
    return std::nullopt;
  // An integer tensor of 16 bits at most: its type's range (a uint8
  // activation, however it was computed).
  if (auto type = dyn_cast<IntegerType>(getElementTypeOrSelf(value.getType()));
      type && type.getWidth() <= 16) {
    unsigned width = type.getWidth();
    if (type.isUnsigned() || width == 1)
      return IntegerRange{0, (int64_t(1) << width) - 1};
    return IntegerRange{-(int64_t(1) << (width - 1)),
                        (int64_t(1) << (width - 1)) - 1};
  }
  Operation *op = value.getDefiningOp();
  if (!op)
    return std::nullopt;
  auto operand = [&](unsigned i) {
    return integerRange(op->getOperand(i), depth - 1);
  };
  if (isa<ConstantOp>(op))
    return constantRange(value);
  // Round to an integer: any integer (NaN aside, which no clamp below
  // turns into a number either).
  if (isa<RoundOp>(op))
    return IntegerRange{-kUnbounded, kUnbounded};
  // Ops that only move elements. A conversion to the blocked layout pads
  // the channels with zeros.
  if (isa<ToBlockedOp>(op)) {
    std::optional<IntegerRange> in = operand(0);
    if (!in)
      return std::nullopt;
    return IntegerRange{std::min<int64_t>(in->low, 0),
                        std::max<int64_t>(in->high, 0)};
  }
  // A max pool's window always holds an element of its input; a cast to a
  // float holds an integer exactly (below 2^24).
  if (isa<FromBlockedOp, ReshapeOp, TransposeOp, BlockedMaxPoolOp>(op))
    return operand(0);
  if (isa<CastOp>(op) && isa<FloatType>(getElementTypeOrSelf(value.getType())))
    return operand(0);
  if (isa<ReluOp>(op)) {
    std::optional<IntegerRange> in = operand(0);
    if (!in)
      return std::nullopt;
    return IntegerRange{std::max<int64_t>(in->low, 0),
                        std::max<int64_t>(in->high, 0)};
  }
  if (!isa<MaxOp, MinOp, AddOp, SubOp>(op) || op->getNumOperands() != 2)
    return std::nullopt;
  std::optional<IntegerRange> a = operand(0), b = operand(1);
  if (!a || !b)
    return std::nullopt;
  if (isa<MaxOp>(op))
    return IntegerRange{std::max(a->low, b->low), std::max(a->high, b->high)};
  if (isa<MinOp>(op))
    return IntegerRange{std::min(a->low, b->low), std::min(a->high, b->high)};
  if (isa<AddOp>(op))
    return clampRange(a->low + b->low, a->high + b->high);
  return clampRange(a->low - b->high, a->high - b->low);
}

/// Whether `range` is what the integer lowering takes: 256 consecutive
/// integers at most, holding 0.
bool isByteRange(std::optional<IntegerRange> range) {
  return range && range->low <= 0 && range->high >= 0 &&
         range->high - range->low <= 255;
}

/// The input range to record on `conv` (a blocked or a depthwise
/// convolution), when its operands are 8-bit integers: the input within
/// 256 consecutive integers that hold 0 (an 8-bit value less its zero
/// point; padding is 0), the weight in [-128, 127], and the bias (if any)
/// integers that f32 holds exactly. A blocked convolution then computes in
/// 8-bit dot products; a depthwise one reads its input as bytes (its
/// products stay f32, exact on such integers).
template <typename ConvOp>
std::optional<IntegerRange> integerConvInput(ConvOp conv) {
  RankedTensorType inputType = conv.getInput().getType();
  if (!inputType.hasStaticShape() || !inputType.getElementType().isF32())
    return std::nullopt;
  std::optional<IntegerRange> weight = constantRange(conv.getWeight());
  if (!weight || weight->low < -128 || weight->high > 127)
    return std::nullopt;
  if (Value bias = conv.getBias()) {
    std::optional<IntegerRange> range = constantRange(bias);
    if (!range || range->low < -(int64_t(1) << 24) ||
        range->high > (int64_t(1) << 24))
      return std::nullopt;
  }
  std::optional<IntegerRange> input = integerRange(conv.getInput());
  if (!isByteRange(input))
    return std::nullopt;
  return input;
}

/// Records `conv`'s input range (integerConvInput), or removes a stale one.
template <typename ConvOp> void markConv(ConvOp conv) {
  std::optional<IntegerRange> input = integerConvInput(conv);
  if (!input) {
    conv->removeAttr(attr::kIntegerInput);
    return;
  }
  conv->setAttr(
      attr::kIntegerInput,
      DenseI64ArrayAttr::get(conv.getContext(), {input->low, input->high}));
}

/// Whether `value` is a constant matrix of int8 values.
bool isInt8Matrix(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  std::optional<IntegerRange> range = constantRange(value);
  return type && type.getRank() == 2 && range && range->low >= -128 &&
         range->high <= 127;
}

/// The constant matrix `value` is, folding a transpose of a constant (a
/// Gemm's transB) into a new constant before `user`; nothing when it is not
/// one.
std::optional<Value> constantMatrix(Value value, Operation *user) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  if (getFloatElements(value))
    return value;
  auto transpose = value.getDefiningOp<TransposeOp>();
  std::optional<SmallVector<double>> input =
      transpose ? getFloatElements(transpose.getInput()) : std::nullopt;
  if (!input || transpose.getPerm() != ArrayRef<int64_t>{1, 0})
    return std::nullopt;
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  SmallVector<double> values(input->size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      values[r * columns + c] = (*input)[c * rows + r];
  OpBuilder builder(user);
  return createFloatConstant(builder, transpose.getLoc(), type, values);
}

/// The matrix whose values `value` takes: itself, or a transpose's input.
Value matrixSource(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  return transpose && transpose.getPerm() == ArrayRef<int64_t>{1, 0}
             ? transpose.getInput()
             : value;
}

/// Marks a matrix product `op` (graph.matmul or graph.fused_matmul: an
/// activation times a constant int8 matrix) when its activation is 8-bit
/// integers. An activation less a zero point known only at run time
/// (DynamicQuantizeLinear's, as onnxruntime's quantize_dynamic writes) is
/// `a - z` with `a` a uint8 tensor and `z` a scalar: its range is 511 values
/// wide, but the product is a * W - z * colsum(W), and a * W is 8-bit. The
/// product takes `a`, and z * colsum(W) goes after it: subtracted from a
/// matmul's result (a new op), or from a fused matmul's bias (before its
/// activation).
template <typename MatMulLike> void markMatMul(MatMulLike op) {
  auto resultType = dyn_cast<RankedTensorType>(op.getType());
  auto lhsType = dyn_cast<RankedTensorType>(op.getLhs().getType());
  if (!resultType || !lhsType || !resultType.hasStaticShape() ||
      !lhsType.hasStaticShape() || lhsType.getRank() < 2 ||
      !lhsType.getElementType().isF32())
    return;
  // The matrix (a transpose folded) is made only for a product marked.
  if (!isInt8Matrix(matrixSource(op.getRhs())))
    return;
  MLIRContext *ctx = op.getContext();
  auto mark = [&](Operation *product, IntegerRange range) {
    product->setAttr(attr::kIntegerInput,
                     DenseI64ArrayAttr::get(ctx, {range.low, range.high}));
  };
  std::optional<IntegerRange> lhs = integerRange(op.getLhs());
  if (isByteRange(lhs)) {
    op.getRhsMutable().assign(*constantMatrix(op.getRhs(), op));
    mark(op, *lhs);
    return;
  }
  auto sub = op.getLhs().template getDefiningOp<SubOp>();
  if (!sub || sub.getLhs().getType() != lhsType)
    return;
  auto zeroType = dyn_cast<RankedTensorType>(sub.getRhs().getType());
  std::optional<IntegerRange> bytes = integerRange(sub.getLhs());
  if (!zeroType || zeroType.getNumElements() != 1 || !isByteRange(bytes) ||
      !integerRange(sub.getRhs()))
    return;
  // colsum(W), one per column.
  std::optional<Value> rhs = constantMatrix(op.getRhs(), op);
  auto rhsType = cast<RankedTensorType>(rhs->getType());
  int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
  SmallVector<double> weights = *getFloatElements(*rhs);
  SmallVector<double> sums(n, 0.0);
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col)
      sums[col] += weights[row * n + col];
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type f32 = builder.getF32Type();
  auto sumsType = RankedTensorType::get({n}, f32);
  Value sumsValue = createFloatConstant(builder, loc, sumsType, sums);
  std::optional<SmallVector<int64_t>> shiftShape =
      broadcastShapes(zeroType.getShape(), sumsType.getShape());
  if (!shiftShape)
    return;
  Value shift =
      MulOp::create(builder, loc, RankedTensorType::get(*shiftShape, f32),
                    sub.getRhs(), sumsValue);
  if constexpr (std::is_same_v<MatMulLike, FusedMatMulOp>) {
    // bias - z * colsum(W), or its negation without a bias.
    Value bias = op.getBias();
    Value newBias;
    if (bias) {
      auto biasType = cast<RankedTensorType>(bias.getType());
      std::optional<SmallVector<int64_t>> shape =
          broadcastShapes(biasType.getShape(), *shiftShape);
      if (!shape)
        return;
      newBias = SubOp::create(builder, loc, RankedTensorType::get(*shape, f32),
                              bias, shift);
    } else {
      newBias = NegOp::create(builder, loc, shift.getType(), shift);
    }
    op.getLhsMutable().assign(sub.getLhs());
    op.getRhsMutable().assign(*rhs);
    if (bias)
      op.getBiasMutable().assign(newBias);
    else
      op.getBiasMutable().append(newBias);
    mark(op, *bytes);
  } else {
    auto product =
        MatMulOp::create(builder, loc, resultType, sub.getLhs(), *rhs);
    mark(product, *bytes);
    Value result = SubOp::create(builder, loc, resultType, product, shift);
    op.replaceAllUsesWith(result);
    op.erase();
  }
}

/// Marks `op` (a blocked convolution, matmul or fused matmul of f32 not
/// marked integer) for bf16 operands when its weight is a constant.
void markBF16(Operation *op) {
  if (op->hasAttr(attr::kIntegerInput) ||
      !getElementTypeOrSelf(op->getResult(0).getType()).isF32())
    return;
  if (auto conv = dyn_cast<BlockedConvOp>(op)) {
    if (!getFloatElements(conv.getWeight()) ||
        !conv.getInput().getType().hasStaticShape())
      return;
  } else {
    auto lhsType = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!lhsType || !lhsType.hasStaticShape() || lhsType.getRank() < 2)
      return;
    std::optional<Value> rhs = constantMatrix(op->getOperand(1), op);
    if (!rhs)
      return;
    op->setOperand(1, *rhs);
  }
  op->setAttr(attr::kBF16, UnitAttr::get(op->getContext()));
}

struct GraphMarkIntegerContractionsPass
    : impl::GraphMarkIntegerContractionsBase<GraphMarkIntegerContractionsPass> {
  using GraphMarkIntegerContractionsBase::GraphMarkIntegerContractionsBase;

  void runOnOperation() override {
    if (integers) {
      SmallVector<Operation *> products;
      getOperation().walk([&](Operation *op) {
        if (isa<MatMulOp, FusedMatMulOp>(op) &&
            !op->hasAttr(attr::kIntegerInput))
          products.push_back(op);
      });
      for (Operation *op : products) {
        if (auto matmul = dyn_cast<MatMulOp>(op))
          markMatMul(matmul);
        else
          markMatMul(cast<FusedMatMulOp>(op));
      }
      getOperation().walk([](BlockedConvOp conv) { markConv(conv); });
      getOperation().walk([](BlockedDepthwiseConvOp conv) { markConv(conv); });
    }
    if (bf16) {
      SmallVector<Operation *> products;
      getOperation().walk([&](Operation *op) {
        if (isa<BlockedConvOp, MatMulOp, FusedMatMulOp>(op))
          products.push_back(op);
      });
      for (Operation *op : products)
        markBF16(op);
    }
  }
};

} // namespace
} // namespace kiln::graph
