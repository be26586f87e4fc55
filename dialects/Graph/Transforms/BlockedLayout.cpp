//===- BlockedLayout.cpp - Convolutions and pools in NCHWc ----------------===//
//
// Puts 2-D convolutions with constant weights and 2-D max pools into the
// blocked layout NCHWc (#graph.blocked<c>): their data operands go through
// graph.to_blocked, their results come back through graph.from_blocked, and
// the weights are re-laid out at compile time. Between two ops that both
// take the layout, from_blocked meets to_blocked and the pair folds away, so
// only the graph's edges (and ops that cannot take the layout) keep a
// conversion.
//
// To make another op take the layout: add a blocked form of it to
// GraphLayoutOps.td, a pattern here that converts its operands and result,
// and its lowering in conversion/GraphToLinalg/LayoutToLinalg.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHBLOCKEDLAYOUT
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// The number of blocks of `block` channels that hold `channels`.
int64_t numBlocks(int64_t channels, int64_t block) {
  return (channels + block - 1) / block;
}

/// The blocked type of the NCHW type `type` in blocks of `block`.
RankedTensorType getBlockedType(RankedTensorType type, int64_t block) {
  ArrayRef<int64_t> shape = type.getShape();
  return RankedTensorType::get(
      {shape[0], numBlocks(shape[1], block), shape[2], shape[3], block},
      type.getElementType(), BlockedLayoutAttr::get(type.getContext(), block));
}

Value toBlocked(PatternRewriter &rewriter, Location loc, Value value,
                int64_t block) {
  auto type = cast<RankedTensorType>(value.getType());
  return ToBlockedOp::create(rewriter, loc, getBlockedType(type, block), value);
}

/// Whether `type` is a static 4-D f32 tensor (NCHW).
bool isStaticNCHW(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 4 && tensor.hasStaticShape() &&
         tensor.getElementType().isF32();
}

/// Whether `value` is the result of an op that this pass puts (or has put)
/// into the blocked layout.
bool mayBeBlocked(Value value) {
  Operation *op = value.getDefiningOp();
  return op && isa<FromBlockedOp, ConvOp, FusedConvOp, MaxPoolOp>(op);
}

/// The weight [K, C, kh, kw] as [K1, C1, kh, kw, ci, c]: element
/// [ko, cb, y, x, i, o] is filter ko * c + o, channel cb * ci + i, zero in
/// the padding.
SmallVector<double> blockWeight(ArrayRef<double> weight,
                                ArrayRef<int64_t> shape, int64_t inBlock,
                                int64_t block) {
  int64_t filters = shape[0], channels = shape[1], kh = shape[2], kw = shape[3];
  int64_t filterBlocks = numBlocks(filters, block);
  int64_t channelBlocks = numBlocks(channels, inBlock);
  SmallVector<double> blocked(filterBlocks * channelBlocks * kh * kw * inBlock *
                              block);
  for (int64_t k = 0; k < filters; ++k)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          int64_t index =
              ((((k / block) * channelBlocks + ch / inBlock) * kh + y) * kw +
               x) *
                  inBlock * block +
              (ch % inBlock) * block + k % block;
          blocked[index] = weight[((k * channels + ch) * kh + y) * kw + x];
        }
  return blocked;
}

/// A 2-D graph.conv or graph.fused_conv of one group with constant weights
/// (and bias) becomes a graph.blocked_conv.
template <typename ConvLikeOp> struct BlockConv : OpRewritePattern<ConvLikeOp> {
  BlockConv(MLIRContext *ctx, int64_t block)
      : OpRewritePattern<ConvLikeOp>(ctx), block(block) {}

  LogicalResult matchAndRewrite(ConvLikeOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getGroup() != 1)
      return rewriter.notifyMatchFailure(op, "grouped convolution");
    if (!isStaticNCHW(op.getInput().getType()) ||
        !isStaticNCHW(op.getResult().getType()) ||
        !isStaticNCHW(op.getWeight().getType()))
      return rewriter.notifyMatchFailure(op,
                                         "not a static 2-D f32 convolution");
    std::optional<SmallVector<double>> weight =
        getFloatElements(op.getWeight());
    if (!weight)
      return rewriter.notifyMatchFailure(op, "weight is not a constant");
    std::optional<SmallVector<double>> bias;
    if (op.getBias()) {
      bias = getFloatElements(op.getBias());
      if (!bias)
        return rewriter.notifyMatchFailure(op, "bias is not a constant");
    }

    Location loc = op.getLoc();
    RankedTensorType weightType = op.getWeight().getType();
    ArrayRef<int64_t> wshape = weightType.getShape();
    // An input of fewer channels than a block (an image's 3) is one block
    // of its own size, not a block mostly of padding, unless it comes from
    // an op that is (or will be) blocked, whose blocks it keeps so that the
    // conversions between them cancel.
    int64_t inBlock = block;
    if (wshape[1] < block && !mayBeBlocked(op.getInput()))
      inBlock = wshape[1];
    int64_t filterBlocks = numBlocks(wshape[0], block);
    auto blockedWeightType =
        RankedTensorType::get({filterBlocks, numBlocks(wshape[1], inBlock),
                               wshape[2], wshape[3], inBlock, block},
                              weightType.getElementType());
    Value blockedWeight =
        createFloatConstant(rewriter, loc, blockedWeightType,
                            blockWeight(*weight, wshape, inBlock, block));
    Value blockedBias;
    if (bias) {
      SmallVector<double> padded(*bias);
      padded.resize(filterBlocks * block, 0.0);
      blockedBias = createFloatConstant(
          rewriter, loc,
          RankedTensorType::get({filterBlocks, block},
                                op.getBias().getType().getElementType()),
          padded);
    }

    Value input = toBlocked(rewriter, loc, op.getInput(), inBlock);
    Value residual;
    auto activation = Activation::None;
    ArrayRef<float> params;
    if constexpr (std::is_same_v<ConvLikeOp, FusedConvOp>) {
      if (op.getResidual())
        residual = toBlocked(rewriter, loc, op.getResidual(), block);
      activation = op.getActivation();
      params = op.getActivationParams();
    }
    RankedTensorType resultType = op.getResult().getType();
    Value blocked = BlockedConvOp::create(
        rewriter, loc, getBlockedType(resultType, block), input, blockedWeight,
        blockedBias, residual, op.getStrides(), op.getPads(), op.getDilations(),
        activation, params);
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, blocked);
    return success();
  }

  int64_t block;
};

/// A 2-D f32 graph.max_pool becomes a graph.blocked_max_pool.
struct BlockMaxPool : OpRewritePattern<MaxPoolOp> {
  BlockMaxPool(MLIRContext *ctx, int64_t block)
      : OpRewritePattern(ctx), block(block) {}

  LogicalResult matchAndRewrite(MaxPoolOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticNCHW(op.getInput().getType()) ||
        !isStaticNCHW(op.getResult().getType()))
      return rewriter.notifyMatchFailure(op, "not a static 2-D f32 pool");
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getResult().getType();
    Value input = toBlocked(rewriter, loc, op.getInput(), block);
    Value blocked = BlockedMaxPoolOp::create(
        rewriter, loc, getBlockedType(resultType, block), input,
        op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations(),
        op.getCeilMode());
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, blocked);
    return success();
  }

  int64_t block;
};

struct GraphBlockedLayoutPass
    : impl::GraphBlockedLayoutBase<GraphBlockedLayoutPass> {
  using GraphBlockedLayoutBase::GraphBlockedLayoutBase;

  void runOnOperation() override {
    if (block <= 0) {
      getOperation().emitError() << "block must be positive, got " << block;
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateBlockedLayoutPatterns(patterns, block);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateBlockedLayoutPatterns(RewritePatternSet &patterns, int64_t block) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BlockConv<ConvOp>, BlockConv<FusedConvOp>, BlockMaxPool>(ctx,
                                                                        block);
}

} // namespace kiln::graph
