//===- FuseEpilogues.cpp - Bias, residual and activation into one op ------===//
//
// A convolution or matrix product is usually followed by elementwise ops on
// its result: a bias, a residual addition, an activation. Each of them reads
// and writes the whole tensor once more. Here they become the epilogue of one
// graph.fused_conv / graph.fused_matmul, which code generation applies to
// each output tile while it is still in registers.
//
// The epilogue is `activation(contraction + bias + residual)`, so ops are
// taken in that order: an Add only while the fused op has no activation yet,
// an activation only once. Each pattern takes one op into the contraction
// that defines its operand, when that contraction has no other use.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFUSEEPILOGUES
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// The epilogue of a fused op, or of a plain contraction (nothing yet).
struct Epilogue {
  Value bias, residual;
  Activation activation = Activation::None;
  SmallVector<float> params;
};

/// A contraction whose epilogue may grow: a float conv or matmul, fused or
/// not, whose result has no other use than the op being fused.
Operation *getFusable(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || !value.hasOneUse() ||
      !isa<FloatType>(cast<RankedTensorType>(value.getType()).getElementType()))
    return nullptr;
  if (isa<ConvOp, MatMulOp, FusedConvOp, FusedMatMulOp>(op))
    return op;
  return nullptr;
}

Epilogue getEpilogue(Operation *op) {
  Epilogue epilogue;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    epilogue.bias = conv.getBias();
  } else if (auto fused = dyn_cast<FusedConvOp>(op)) {
    epilogue = {fused.getBias(), fused.getResidual(), fused.getActivation(),
                SmallVector<float>(fused.getActivationParams())};
  } else if (auto fused = dyn_cast<FusedMatMulOp>(op)) {
    epilogue = {fused.getBias(), fused.getResidual(), fused.getActivation(),
                SmallVector<float>(fused.getActivationParams())};
  }
  return epilogue;
}

/// Replaces `user` by the contraction `op` with `epilogue`, built where
/// `user` is (all its operands are defined above it), and erases `op`.
void replaceWithFused(PatternRewriter &rewriter, Operation *op, Operation *user,
                      const Epilogue &epilogue) {
  rewriter.setInsertionPoint(user);
  Location loc = rewriter.getFusedLoc({op->getLoc(), user->getLoc()});
  Type type = user->getResult(0).getType();
  auto activation =
      ActivationAttr::get(rewriter.getContext(), epilogue.activation);
  DenseF32ArrayAttr params = rewriter.getDenseF32ArrayAttr(epilogue.params);
  auto buildConv = [&](auto conv) -> Value {
    return FusedConvOp::create(
        rewriter, loc, type, conv.getInput(), conv.getWeight(), epilogue.bias,
        epilogue.residual, conv.getStridesAttr(), conv.getPadsAttr(),
        conv.getDilationsAttr(), conv.getGroupAttr(), activation, params);
  };
  auto buildMatMul = [&](auto matmul) -> Value {
    return FusedMatMulOp::create(rewriter, loc, type, matmul.getLhs(),
                                 matmul.getRhs(), epilogue.bias,
                                 epilogue.residual, activation, params);
  };
  Value fused;
  if (auto conv = dyn_cast<ConvOp>(op))
    fused = buildConv(conv);
  else if (auto conv = dyn_cast<FusedConvOp>(op))
    fused = buildConv(conv);
  else if (auto matmul = dyn_cast<MatMulOp>(op))
    fused = buildMatMul(matmul);
  else
    fused = buildMatMul(cast<FusedMatMulOp>(op));
  rewriter.replaceOp(user, fused);
  rewriter.eraseOp(op);
}

/// `contraction + other`: a bias when `other` is one value per output channel
/// (a constant for convolutions, whose bias then absorbs it; any vector of
/// one value per column for matrix products that have none), a residual
/// when it has the result's type.
struct FuseAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    for (int i = 0; i < 2; ++i) {
      Operation *contraction = getFusable(op->getOperand(i));
      Value other = op->getOperand(1 - i);
      if (!contraction || contraction->getResult(0).getType() != resultType)
        continue;
      Epilogue epilogue = getEpilogue(contraction);
      if (epilogue.activation != Activation::None || epilogue.residual)
        continue;
      if (succeeded(addBias(rewriter, contraction, other, epilogue))) {
        replaceWithFused(rewriter, contraction, op, epilogue);
        return success();
      }
      if (other.getType() == resultType) {
        epilogue.residual = other;
        replaceWithFused(rewriter, contraction, op, epilogue);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(
        op, "no operand is a contraction used only here with an epilogue "
            "that can take a bias or a residual");
  }

  /// Makes `other` part of the epilogue's bias when it is one.
  static LogicalResult addBias(PatternRewriter &rewriter,
                               Operation *contraction, Value other,
                               Epilogue &epilogue) {
    auto resultType =
        cast<RankedTensorType>(contraction->getResult(0).getType());
    bool isConv = isa<ConvOp, FusedConvOp>(contraction);
    int64_t channelDim = isConv ? 1 : resultType.getRank() - 1;
    if (resultType.getRank() < 1 || resultType.isDynamicDim(channelDim))
      return failure();
    int64_t channels = resultType.getDimSize(channelDim);
    auto biasType =
        RankedTensorType::get({channels}, resultType.getElementType());
    auto otherType = cast<RankedTensorType>(other.getType());
    if (!isConv && !epilogue.bias && otherType == biasType) {
      epilogue.bias = other;
      return success();
    }
    std::optional<SmallVector<double>> values =
        getPerChannelValues(other, resultType.getRank(), channelDim, channels);
    if (!values)
      return failure();
    if (epilogue.bias) {
      std::optional<SmallVector<double>> old = getFloatElements(epilogue.bias);
      if (!old || static_cast<int64_t>(old->size()) != channels)
        return failure();
      for (int64_t c = 0; c < channels; ++c)
        (*values)[c] += (*old)[c];
    }
    rewriter.setInsertionPoint(contraction);
    epilogue.bias =
        createFloatConstant(rewriter, other.getLoc(), biasType, *values);
    return success();
  }
};

/// An activation op with a fixed counterpart in the epilogue.
template <typename OpTy, Activation activation>
struct FuseActivation : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Operation *contraction = getFusable(op->getOperand(0));
    if (!contraction || contraction->getResult(0).getType() != op.getType())
      return rewriter.notifyMatchFailure(
          op, "operand is not a contraction used only here");
    Epilogue epilogue = getEpilogue(contraction);
    if (epilogue.activation != Activation::None)
      return rewriter.notifyMatchFailure(op, "already has an activation");
    epilogue.activation = activation;
    epilogue.params = getParams(op);
    if (auto gelu = dyn_cast<GeluOp>(op.getOperation());
        gelu && gelu.getTanhApproximation())
      epilogue.activation = Activation::GeluTanh;
    replaceWithFused(rewriter, contraction, op, epilogue);
    return success();
  }

  static SmallVector<float> getParams(OpTy op) {
    if constexpr (std::is_same_v<OpTy, LeakyReluOp>)
      return {op.getAlpha().convertToFloat()};
    if constexpr (std::is_same_v<OpTy, HardSigmoidOp>)
      return {op.getAlpha().convertToFloat(), op.getBeta().convertToFloat()};
    return {};
  }
};

/// Clip, which the importer makes a Max and a Min with constants: a Max by a
/// splat becomes clip [c, +inf], and a Min by a splat lowers the upper bound
/// of a clip that has none yet (or makes clip [-inf, c]).
template <typename OpTy> struct FuseClipBound : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isMax = std::is_same_v<OpTy, MaxOp>;
    constexpr float inf = std::numeric_limits<float>::infinity();
    for (int i = 0; i < 2; ++i) {
      Operation *contraction = getFusable(op->getOperand(i));
      if (!contraction || contraction->getResult(0).getType() != op.getType())
        continue;
      std::optional<SmallVector<double>> bound =
          getFloatElements(op->getOperand(1 - i));
      if (!bound || bound->empty() ||
          llvm::any_of(*bound, [&](double v) { return v != bound->front(); }))
        continue;
      float value = bound->front();
      Epilogue epilogue = getEpilogue(contraction);
      if (epilogue.activation == Activation::None) {
        epilogue.activation = Activation::Clip;
        epilogue.params = isMax ? SmallVector<float>{value, inf}
                                : SmallVector<float>{-inf, value};
      } else if (!isMax && epilogue.activation == Activation::Clip &&
                 epilogue.params[1] == inf && value >= epilogue.params[0]) {
        epilogue.params[1] = value;
      } else {
        continue;
      }
      replaceWithFused(rewriter, contraction, op, epilogue);
      return success();
    }
    return rewriter.notifyMatchFailure(
        op, "not a bound by a splat constant on a contraction used only here "
            "that can take it");
  }
};

/// A Gemm followed by an op the epilogue can take becomes a fused_matmul
/// first: `alpha * A * op(B) + beta * C` with a constant B is `A * B'` with
/// `B' = alpha * op(B)` computed here (no transpose left for run time), and
/// C, one value per column, is the bias.
struct GemmToFusedMatMul : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GemmOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    // Rows that the run decides (a sequence): the Gemm lowering takes
    // static shapes only, a fused_matmul takes these.
    bool runTimeRows =
        type.getRank() == 2 && type.isDynamicDim(0) && !type.isDynamicDim(1);
    if ((!type.hasStaticShape() && !runTimeRows) || type.getRank() != 2 ||
        !isa<FloatType>(type.getElementType()) || op.getTransA())
      return rewriter.notifyMatchFailure(op, "needs a float Gemm with static "
                                             "columns, without trans_a");
    if (!runTimeRows && (!op.getResult().hasOneUse() ||
                         !isa<AddOp, ReluOp, LeakyReluOp, SigmoidOp, TanhOp,
                              HardSigmoidOp, HardSwishOp, GeluOp, MaxOp, MinOp>(
                             *op.getResult().getUsers().begin())))
      return rewriter.notifyMatchFailure(op, "no epilogue op to fuse");
    auto bType = cast<RankedTensorType>(op.getB().getType());
    std::optional<SmallVector<double>> b = getFloatElements(op.getB());
    if (!b)
      return rewriter.notifyMatchFailure(op, "B is not a constant");
    int64_t n = type.getDimSize(1);
    int64_t k = b->size() / n;
    double alpha = op.getAlpha().convertToDouble();
    SmallVector<double> weight(k * n);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        weight[i * n + j] =
            alpha * (*b)[op.getTransB() ? j * k + i : i * n + j];
    Value bias;
    if (Value c = op.getC()) {
      std::optional<SmallVector<double>> values =
          getPerChannelValues(c, 2, 1, n);
      if (!values)
        return rewriter.notifyMatchFailure(op,
                                           "C is not a constant per column");
      for (double &v : *values)
        v *= op.getBeta().convertToDouble();
      bias = createFloatConstant(
          rewriter, c.getLoc(),
          RankedTensorType::get({n}, type.getElementType()), *values);
    }
    Value rhs = createFloatConstant(
        rewriter, op.getB().getLoc(),
        RankedTensorType::get({k, n}, bType.getElementType()), weight);
    rewriter.replaceOpWithNewOp<FusedMatMulOp>(
        op, type, op.getA(), rhs, bias, /*residual=*/Value(),
        ActivationAttr::get(getContext(), Activation::None),
        rewriter.getDenseF32ArrayAttr({}));
    return success();
  }
};

struct GraphFuseEpiloguesPass
    : impl::GraphFuseEpiloguesBase<GraphFuseEpiloguesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseEpiloguesPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateFuseEpiloguesPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<FuseAdd, FuseClipBound<MaxOp>, FuseClipBound<MinOp>,
               GemmToFusedMatMul>(ctx);
  patterns.add<FuseActivation<ReluOp, Activation::Relu>,
               FuseActivation<LeakyReluOp, Activation::LeakyRelu>,
               FuseActivation<SigmoidOp, Activation::Sigmoid>,
               FuseActivation<TanhOp, Activation::Tanh>,
               FuseActivation<HardSigmoidOp, Activation::HardSigmoid>,
               FuseActivation<HardSwishOp, Activation::HardSwish>,
               FuseActivation<GeluOp, Activation::Gelu>>(ctx);
}

} // namespace kiln::graph
