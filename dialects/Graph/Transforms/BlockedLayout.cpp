//===- BlockedLayout.cpp - CNNs in the blocked layout NCHWc ---------------===//
//
// Puts 2-D convolutions with constant weights (one group, narrow groups of
// whole channel blocks, or depthwise) and 2-D max pools into the blocked
// layout NCHWc (#graph.blocked<c>): their data operands go through
// graph.to_blocked, their results come back through graph.from_blocked,
// and the weights are re-laid out at compile time. Between two ops that
// both take the layout, from_blocked meets to_blocked and the pair folds
// away, so only the graph's edges (and ops that cannot take the layout)
// keep a conversion. The ops between
// convolutions (average and global pools, BatchNorm, elementwise ops,
// channel concats) take the layout where an operand comes from
// from_blocked, that is, where it removes a conversion.
//
// To make another op take the layout: add a blocked form of it to
// GraphLayoutOps.td (or let its result type keep the encoding, as the
// elementwise ops and concat do), a pattern here that converts its
// operands and result, and its lowering in
// conversion/GraphToLinalg/LayoutToLinalg.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

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

/// The unary ops that take the layout: those that map finite numbers to
/// finite numbers. The padding channels of a blocked tensor hold finite
/// values (zeros, or an activation of zero) that no op reads as data: a
/// convolution multiplies them by zero weights, and from_blocked drops them.
/// An op that can make them infinite or NaN (Log, Reciprocal, Exp) would
/// spread NaNs through the zero weights.
bool isBlockableUnary(Operation *op) {
  return isa<ReluOp, LeakyReluOp, EluOp, SigmoidOp, TanhOp, HardSigmoidOp,
             HardSwishOp, NegOp, AbsOp, RoundOp, FloorOp, CeilOp>(op);
}

/// The binary ops that take the layout. Div only by one nonzero finite
/// constant (a QuantizeLinear's scale): by a tensor, or per channel, the
/// padding channels would make 0 / 0.
bool isBlockableBinary(Operation *op) {
  if (isa<AddOp, SubOp, MulOp, MaxOp, MinOp>(op))
    return true;
  auto div = dyn_cast<DivOp>(op);
  if (!div)
    return false;
  std::optional<SmallVector<double>> divisor = getFloatElements(div.getRhs());
  return divisor && divisor->size() == 1 && divisor->front() != 0.0 &&
         std::isfinite(divisor->front());
}

/// Whether `value` is the result of an op that this pass puts (or has put)
/// into the blocked layout. `depth` bounds the walk through elementwise ops.
bool mayBeBlocked(Value value, int depth = 4) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return false;
  if (isa<FromBlockedOp, ConvOp, FusedConvOp, MaxPoolOp, AveragePoolOp,
          GlobalAveragePoolOp, GlobalMaxPoolOp, BatchNormOp>(op))
    return true;
  if (depth == 0 ||
      !(isBlockableUnary(op) || isBlockableBinary(op) || isa<ConcatOp>(op)))
    return false;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    return mayBeBlocked(operand, depth - 1);
  });
}

/// The blocked tensor that `value` (NCHW) was converted from with blocks of
/// `block`, or null: an op that reads it can take the layout and remove the
/// conversion.
Value getBlockedSource(Value value, int64_t block) {
  auto from = value.getDefiningOp<FromBlockedOp>();
  if (!from)
    return {};
  auto layout = dyn_cast_or_null<BlockedLayoutAttr>(
      from.getInput().getType().getEncoding());
  return layout && layout.getC() == block ? from.getInput() : Value();
}

/// The weight [K, C / groups, kh, kw] as [K1, C1g, kh, kw, ci, c]: element
/// [ko, cb, y, x, i, o] is filter f = ko * c + o and channel cb * ci + i of
/// f's group, zero in the padding. Groups are merged `merged` at a time
/// (see mergedGroups): the channel is then one of f's merged group, zero
/// where it is not in f's own group. One group: [K1, C1, kh, kw, ci, c].
SmallVector<double> blockWeight(ArrayRef<double> weight,
                                ArrayRef<int64_t> shape, int64_t inBlock,
                                int64_t block, int64_t groups = 1,
                                int64_t merged = 1) {
  int64_t filters = shape[0], channels = shape[1], kh = shape[2], kw = shape[3];
  int64_t perGroup = filters / groups;
  int64_t filterBlocks = numBlocks(filters, block);
  int64_t channelBlocks = numBlocks(merged * channels, inBlock);
  SmallVector<double> blocked(filterBlocks * channelBlocks * kh * kw * inBlock *
                              block);
  for (int64_t k = 0; k < filters; ++k) {
    // The group's first channel within its merged group.
    int64_t first = (k / perGroup % merged) * channels;
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x) {
          int64_t local = first + ch;
          int64_t index =
              ((((k / block) * channelBlocks + local / inBlock) * kh + y) * kw +
               x) *
                  inBlock * block +
              (local % inBlock) * block + k % block;
          blocked[index] = weight[((k * channels + ch) * kh + y) * kw + x];
        }
  }
  return blocked;
}

/// The most groups of a grouped convolution merged into one group of whole
/// blocks. Merged groups compute their weights' zeros between the groups,
/// so a merge of m costs m times the grouped convolution's multiply-adds;
/// up to 4 that still beats the grouped product through im2col with its
/// layout conversions (ResNeXt's groups of 4 channels at a block of 16).
constexpr int64_t kMaxMergedGroups = 4;

/// The most filter blocks per group of a grouped convolution in the blocked
/// layout. Wider groups (AlexNet's 128 and 192 filters) are full-width
/// matrix products through im2col, 210-220 GFLOP/s on its 13x13 maps
/// against 150 for the direct blocked convolution; narrow ones (ResNeXt's
/// 4 to 32, RegNet's 8) are thin products whose copies and layout
/// conversions cost more than the convolution.
constexpr int64_t kMaxGroupFilterBlocks = 4;

/// How many neighbouring groups of a convolution of `groups` groups, each
/// of `channels` input channels and `filters` filters, make one group whose
/// channels and filters are whole blocks of `block`: the fewest, at most
/// kMaxMergedGroups; nothing when none does. Where they do not divide
/// `groups`, the last merged group is completed by groups of the padding
/// channels (zero weights), which the blocked tensors must hold: RegNet's 13
/// groups of 8 channels are 7 merged groups, the 7 blocks of 104 channels.
std::optional<int64_t> mergedGroups(int64_t groups, int64_t channels,
                                    int64_t filters, int64_t block) {
  for (int64_t m = 1; m <= std::min(groups, kMaxMergedGroups); ++m) {
    if ((m * channels) % block != 0 || (m * filters) % block != 0)
      continue;
    int64_t merged = (groups + m - 1) / m;
    if (merged * (m * channels / block) ==
            numBlocks(groups * channels, block) &&
        merged * (m * filters / block) == numBlocks(groups * filters, block))
      return m;
  }
  return std::nullopt;
}

/// The constant weight and (optional) bias of a convolution, or nothing
/// when either is not a constant.
template <typename ConvLikeOp>
std::optional<
    std::pair<SmallVector<double>, std::optional<SmallVector<double>>>>
getConstantParameters(ConvLikeOp op) {
  std::optional<SmallVector<double>> weight = getFloatElements(op.getWeight());
  if (!weight)
    return std::nullopt;
  std::optional<SmallVector<double>> bias;
  if (op.getBias()) {
    bias = getFloatElements(op.getBias());
    if (!bias)
      return std::nullopt;
  }
  return std::make_pair(std::move(*weight), std::move(bias));
}

/// The values `bias` of the operand `original` as a [blocks, block]
/// constant of its element type, zero in the padding channels; a null
/// value without a bias.
Value createBlockedBias(PatternRewriter &rewriter, Location loc, Value original,
                        const std::optional<SmallVector<double>> &bias,
                        int64_t blocks, int64_t block) {
  if (!bias)
    return nullptr;
  SmallVector<double> padded(*bias);
  padded.resize(blocks * block, 0.0);
  return createFloatConstant(
      rewriter, loc,
      RankedTensorType::get({blocks, block},
                            getElementTypeOrSelf(original.getType())),
      padded);
}

/// Replaces the convolution `op` by BlockedOp on the blocked `input` with the
/// blocked `weight` and `bias`, taking a graph.fused_conv's residual and
/// activation along, and converts the result back to NCHW.
template <typename BlockedOp, typename ConvLikeOp>
void replaceWithBlocked(PatternRewriter &rewriter, ConvLikeOp op, Value input,
                        Value weight, Value bias, int64_t block) {
  Location loc = op.getLoc();
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
  Value blocked =
      BlockedOp::create(rewriter, loc, getBlockedType(resultType, block), input,
                        weight, bias, residual, op.getStrides(), op.getPads(),
                        op.getDilations(), activation, params);
  rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, blocked);
}

/// A 2-D graph.conv or graph.fused_conv with constant weights (and bias)
/// becomes a graph.blocked_conv: of one group, or grouped (not depthwise)
/// where a few neighbouring groups make whole blocks of channels and
/// filters (see mergedGroups).
template <typename ConvLikeOp> struct BlockConv : OpRewritePattern<ConvLikeOp> {
  BlockConv(MLIRContext *ctx, int64_t block)
      : OpRewritePattern<ConvLikeOp>(ctx), block(block) {}

  LogicalResult matchAndRewrite(ConvLikeOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticNCHW(op.getInput().getType()) ||
        !isStaticNCHW(op.getResult().getType()) ||
        !isStaticNCHW(op.getWeight().getType()))
      return rewriter.notifyMatchFailure(op,
                                         "not a static 2-D f32 convolution");
    // Nothing to block, and a zero among huge dimensions (a weight of 2^62
    // channels and no element) would loop for ever in blockWeight.
    if (op.getInput().getType().getNumElements() == 0 ||
        op.getWeight().getType().getNumElements() == 0 ||
        op.getResult().getType().getNumElements() == 0)
      return rewriter.notifyMatchFailure(op, "an empty convolution");
    ArrayRef<int64_t> wshape = op.getWeight().getType().getShape();
    int64_t groups = op.getGroup();
    FailureOr<int64_t> merged = mergeGroups(op, rewriter);
    if (failed(merged))
      return failure();
    auto parameters = getConstantParameters(op);
    if (!parameters)
      return rewriter.notifyMatchFailure(op,
                                         "weight or bias is not a constant");
    auto &[weight, bias] = *parameters;

    Location loc = op.getLoc();
    // An input of fewer channels than a block (an image's 3) is one block
    // of its own size, not a block mostly of padding, unless it comes from
    // an op that is (or will be) blocked, whose blocks it keeps so that the
    // conversions between them cancel.
    int64_t inBlock = block;
    if (groups == 1 && wshape[1] < block && !mayBeBlocked(op.getInput()))
      inBlock = wshape[1];
    int64_t filterBlocks = numBlocks(wshape[0], block);
    auto blockedWeightType = RankedTensorType::get(
        {filterBlocks, numBlocks(*merged * wshape[1], inBlock), wshape[2],
         wshape[3], inBlock, block},
        op.getWeight().getType().getElementType());
    Value blockedWeight = createFloatConstant(
        rewriter, loc, blockedWeightType,
        blockWeight(weight, wshape, inBlock, block, groups, *merged));
    Value blockedBias = createBlockedBias(rewriter, loc, op.getBias(), bias,
                                          filterBlocks, block);
    Value input = toBlocked(rewriter, loc, op.getInput(), inBlock);
    replaceWithBlocked<BlockedConvOp>(rewriter, op, input, blockedWeight,
                                      blockedBias, block);
    return success();
  }

  /// How many of `op`'s groups make one group of whole blocks (1 without
  /// groups; see mergedGroups), or failure where a grouped convolution
  /// keeps NCHW: depthwise (BlockDepthwiseConv's), groups that no merge
  /// makes whole blocks, 1x1 groups that would need merging, wide groups.
  FailureOr<int64_t> mergeGroups(ConvLikeOp op,
                                 PatternRewriter &rewriter) const {
    int64_t groups = op.getGroup();
    if (groups == 1)
      return 1;
    ArrayRef<int64_t> wshape = op.getWeight().getType().getShape();
    int64_t channels = op.getInput().getType().getDimSize(1);
    if (groups == channels && wshape[0] == channels)
      return rewriter.notifyMatchFailure(op, "depthwise");
    if (wshape[0] % groups != 0 || wshape[1] * groups != channels)
      return rewriter.notifyMatchFailure(op, "groups do not divide the shapes");
    std::optional<int64_t> merged =
        mergedGroups(groups, wshape[1], wshape[0] / groups, block);
    if (!merged)
      return rewriter.notifyMatchFailure(
          op, "groups do not make whole blocks of channels");
    // A 1x1 grouped convolution needs no im2col copy: merging its groups
    // would only multiply its work (ShuffleNet's groups of 28 to 136
    // channels, 2.5 -> 4.2 ms merged).
    if (*merged > 1 && wshape[2] * wshape[3] == 1)
      return rewriter.notifyMatchFailure(op, "1x1 groups narrower than blocks");
    if (*merged * (wshape[0] / groups) > kMaxGroupFilterBlocks * block)
      return rewriter.notifyMatchFailure(op, "wide groups");
    return *merged;
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

/// The weight [C, 1, kh, kw] of a depthwise convolution as [C1, kh, kw, c]:
/// element [cb, y, x, i] is the filter of channel cb * c + i, zero in the
/// padding.
SmallVector<double> blockDepthwiseWeight(ArrayRef<double> weight,
                                         ArrayRef<int64_t> shape,
                                         int64_t block) {
  int64_t channels = shape[0], kh = shape[2], kw = shape[3];
  SmallVector<double> blocked(numBlocks(channels, block) * kh * kw * block);
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        blocked[(((ch / block) * kh + y) * kw + x) * block + ch % block] =
            weight[(ch * kh + y) * kw + x];
  return blocked;
}

/// A 2-D depthwise graph.conv or graph.fused_conv (group = channels =
/// filters: one filter per channel) with constant weights (and bias)
/// becomes a graph.blocked_depthwise_conv. Other grouped convolutions are
/// BlockConv's.
template <typename ConvLikeOp>
struct BlockDepthwiseConv : OpRewritePattern<ConvLikeOp> {
  BlockDepthwiseConv(MLIRContext *ctx, int64_t block)
      : OpRewritePattern<ConvLikeOp>(ctx), block(block) {}

  LogicalResult matchAndRewrite(ConvLikeOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticNCHW(op.getInput().getType()) ||
        !isStaticNCHW(op.getResult().getType()) ||
        !isStaticNCHW(op.getWeight().getType()))
      return rewriter.notifyMatchFailure(op,
                                         "not a static 2-D f32 convolution");
    ArrayRef<int64_t> wshape = op.getWeight().getType().getShape();
    int64_t channels = op.getInput().getType().getDimSize(1);
    if (op.getGroup() == 1 || static_cast<int64_t>(op.getGroup()) != channels ||
        wshape[0] != channels || wshape[1] != 1)
      return rewriter.notifyMatchFailure(
          op, "not depthwise (group = channels = filters)");
    auto parameters = getConstantParameters(op);
    if (!parameters)
      return rewriter.notifyMatchFailure(op,
                                         "weight or bias is not a constant");
    auto &[weight, bias] = *parameters;

    Location loc = op.getLoc();
    Type element = op.getWeight().getType().getElementType();
    int64_t blocks = numBlocks(channels, block);
    Value blockedWeight = createFloatConstant(
        rewriter, loc,
        RankedTensorType::get({blocks, wshape[2], wshape[3], block}, element),
        blockDepthwiseWeight(weight, wshape, block));
    Value blockedBias =
        createBlockedBias(rewriter, loc, op.getBias(), bias, blocks, block);
    Value input = toBlocked(rewriter, loc, op.getInput(), block);
    replaceWithBlocked<BlockedDepthwiseConvOp>(
        rewriter, op, input, blockedWeight, blockedBias, block);
    return success();
  }

  int64_t block;
};

/// A 2-D f32 graph.average_pool of a blocked tensor becomes a
/// graph.blocked_average_pool.
struct BlockAveragePool : OpRewritePattern<AveragePoolOp> {
  BlockAveragePool(MLIRContext *ctx, int64_t block)
      : OpRewritePattern(ctx), block(block) {}

  LogicalResult matchAndRewrite(AveragePoolOp op,
                                PatternRewriter &rewriter) const override {
    if (!isStaticNCHW(op.getInput().getType()) ||
        !isStaticNCHW(op.getResult().getType()))
      return rewriter.notifyMatchFailure(op, "not a static 2-D f32 pool");
    Value input = getBlockedSource(op.getInput(), block);
    if (!input)
      return rewriter.notifyMatchFailure(op, "input is not blocked");
    RankedTensorType resultType = op.getResult().getType();
    Value blocked = BlockedAveragePoolOp::create(
        rewriter, op.getLoc(), getBlockedType(resultType, block), input,
        op.getKernelShape(), op.getStrides(), op.getPads(), op.getDilations(),
        op.getCeilMode(), op.getCountIncludePad());
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, blocked);
    return success();
  }

  int64_t block;
};

/// A GlobalAveragePool (GlobalMaxPool) of a blocked tensor becomes a
/// graph.blocked_average_pool (graph.blocked_max_pool) whose window is the
/// whole H x W: its result N x C1 x 1 x 1 x c is cheap to convert back.
template <typename GlobalPoolOp>
struct BlockGlobalPool : OpRewritePattern<GlobalPoolOp> {
  BlockGlobalPool(MLIRContext *ctx, int64_t block)
      : OpRewritePattern<GlobalPoolOp>(ctx), block(block) {}

  LogicalResult matchAndRewrite(GlobalPoolOp op,
                                PatternRewriter &rewriter) const override {
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    if (!isStaticNCHW(inputType) || !isStaticNCHW(resultType))
      return rewriter.notifyMatchFailure(op, "not a static 2-D f32 pool");
    Value input = getBlockedSource(op.getInput(), block);
    if (!input)
      return rewriter.notifyMatchFailure(op, "input is not blocked");
    Location loc = op.getLoc();
    SmallVector<int64_t> kernel = {inputType.getDimSize(2),
                                   inputType.getDimSize(3)};
    SmallVector<int64_t> ones = {1, 1}, pads = {0, 0, 0, 0};
    RankedTensorType blockedType = getBlockedType(resultType, block);
    Value blocked;
    if constexpr (std::is_same_v<GlobalPoolOp, GlobalMaxPoolOp>)
      blocked = BlockedMaxPoolOp::create(rewriter, loc, blockedType, input,
                                         kernel, ones, pads, ones,
                                         /*ceil_mode=*/false);
    else
      blocked = BlockedAveragePoolOp::create(
          rewriter, loc, blockedType, input, kernel, ones, pads, ones,
          /*ceil_mode=*/false, /*count_include_pad=*/false);
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, blocked);
    return success();
  }

  int64_t block;
};

/// The values of `value`, a constant that broadcasts against an NCHW
/// tensor of `channels` channels along the channels only, one per channel;
/// also through a graph.reshape of a constant (a dense_resource, which the
/// reshape does not fold).
std::optional<SmallVector<double>> getPerChannelConstant(Value value,
                                                         int64_t channels) {
  if (auto values = getPerChannelValues(value, /*resultRank=*/4,
                                        /*channelDim=*/1, channels))
    return values;
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  RankedTensorType type = reshape.getType();
  if (type.getRank() > 4 || !type.hasStaticShape())
    return std::nullopt;
  int64_t offset = 4 - type.getRank();
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i + offset != 1 && type.getDimSize(i) != 1)
      return std::nullopt;
  std::optional<SmallVector<double>> values =
      getFloatElements(reshape.getInput());
  if (!values || static_cast<int64_t>(values->size()) != channels)
    return std::nullopt;
  return values;
}

/// One value per channel as a [C1, 1, 1, c] constant (zero in the
/// padding), which broadcasts along the channels of a blocked tensor.
Value createPerChannelConstant(OpBuilder &builder, Location loc,
                               ArrayRef<double> values, Type element,
                               int64_t block) {
  int64_t blocks = numBlocks(values.size(), block);
  SmallVector<double> padded(values);
  padded.resize(blocks * block, 0.0);
  return createFloatConstant(
      builder, loc, RankedTensorType::get({blocks, 1, 1, block}, element),
      padded);
}

/// Whether an NCHW operand of `type` broadcasts against `result` keeping
/// its channels: the same channels, every other dimension the result's or
/// 1 (a squeeze-and-excitation scale, [N, C, 1, 1], against [N, C, H, W]).
/// Its blocked form then broadcasts the same way against the blocked
/// result.
bool broadcastsAlongChannels(Type type, RankedTensorType result) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !isStaticNCHW(tensor) ||
      tensor.getDimSize(1) != result.getDimSize(1))
    return false;
  for (int64_t i : {0, 2, 3})
    if (tensor.getDimSize(i) != result.getDimSize(i) &&
        tensor.getDimSize(i) != 1)
      return false;
  return true;
}

/// An elementwise op (isBlockableUnary, isBlockableBinary) whose tensor
/// operands are all blocked, of the result's NCHW shape or broadcasting
/// along its channels (broadcastsAlongChannels), computes on the
/// blocked tensors: the same op on N x C1 x H x W x c. Constant operands
/// that broadcast per channel ([C, 1, 1] or [1, C, 1, 1]) are re-laid out
/// to [C1, 1, 1, c] (zero padded), which broadcasts the same way against the
/// blocked shape; single-element ones stay. The op is rewritten only when
/// it removes a conversion: at least one operand comes from from_blocked,
/// and every other operand is such a constant.
struct BlockElementwise : RewritePattern {
  BlockElementwise(MLIRContext *ctx, int64_t block)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx), block(block) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isBlockableUnary(op) && !isBlockableBinary(op))
      return rewriter.notifyMatchFailure(op, "not an op that takes the layout");
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    if (!isStaticNCHW(resultType))
      return rewriter.notifyMatchFailure(op, "result is not static 4-D f32");
    Location loc = op->getLoc();
    int64_t channels = resultType.getDimSize(1);
    // Each operand as it will be: blocked, kept, or per-channel values to
    // re-lay out. Nothing is created until every operand qualifies: a
    // pattern that creates ops and then fails never lets the greedy driver
    // converge.
    SmallVector<Value> operands;
    SmallVector<std::optional<SmallVector<double>>> perChannel;
    bool removesConversion = false;
    for (Value operand : op->getOperands()) {
      perChannel.emplace_back();
      if (broadcastsAlongChannels(operand.getType(), resultType)) {
        if (Value blocked = getBlockedSource(operand, block)) {
          operands.push_back(blocked);
          removesConversion = true;
          continue;
        }
      }
      auto type = cast<RankedTensorType>(operand.getType());
      if (type.hasStaticShape() && type.getNumElements() == 1 &&
          getFloatElements(operand)) {
        operands.push_back(operand);
        continue;
      }
      perChannel.back() = getPerChannelConstant(operand, channels);
      if (!perChannel.back())
        return rewriter.notifyMatchFailure(
            op, "an operand is neither blocked nor a per-channel constant");
      operands.push_back(nullptr);
    }
    if (!removesConversion)
      return rewriter.notifyMatchFailure(op, "no operand is blocked");
    for (auto [operand, values] : llvm::zip(operands, perChannel))
      if (values)
        operand = createPerChannelConstant(rewriter, loc, *values,
                                           resultType.getElementType(), block);
    OperationState state(loc, op->getName(), operands,
                         TypeRange{getBlockedType(resultType, block)},
                         op->getAttrs());
    Operation *blocked = rewriter.create(state);
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType,
                                               blocked->getResult(0));
    return success();
  }

  int64_t block;
};

/// A graph.batch_norm of a blocked tensor with constant parameters (one
/// that no convolution before it absorbed: DenseNet's after a concat) is
/// `x * s + t` on the blocked tensor, with s = scale / sqrt(var + epsilon)
/// and t = bias - mean * s per channel as [C1, 1, 1, c] constants.
struct BlockBatchNorm : OpRewritePattern<BatchNormOp> {
  BlockBatchNorm(MLIRContext *ctx, int64_t block)
      : OpRewritePattern(ctx), block(block) {}

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType resultType = op.getResult().getType();
    if (!isStaticNCHW(resultType))
      return rewriter.notifyMatchFailure(op, "not a static 4-D f32 tensor");
    Value input = getBlockedSource(op.getInput(), block);
    if (!input)
      return rewriter.notifyMatchFailure(op, "input is not blocked");
    int64_t channels = resultType.getDimSize(1);
    SmallVector<SmallVector<double>> params;
    for (Value param :
         {op.getScale(), op.getBias(), op.getMean(), op.getVar()}) {
      std::optional<SmallVector<double>> values = getFloatElements(param);
      if (!values || static_cast<int64_t>(values->size()) != channels)
        return rewriter.notifyMatchFailure(
            op, "parameters are not per-channel constants");
      params.push_back(std::move(*values));
    }
    double epsilon = op.getEpsilon().convertToDouble();
    SmallVector<double> scale(channels), shift(channels);
    for (int64_t ch = 0; ch < channels; ++ch) {
      scale[ch] = params[0][ch] / std::sqrt(params[3][ch] + epsilon);
      shift[ch] = params[1][ch] - params[2][ch] * scale[ch];
    }
    Location loc = op.getLoc();
    Type element = resultType.getElementType();
    RankedTensorType blockedType = getBlockedType(resultType, block);
    Value scaled = MulOp::create(
        rewriter, loc, blockedType, input,
        createPerChannelConstant(rewriter, loc, scale, element, block));
    Value shifted = AddOp::create(
        rewriter, loc, blockedType, scaled,
        createPerChannelConstant(rewriter, loc, shift, element, block));
    rewriter.replaceOpWithNewOp<FromBlockedOp>(op, resultType, shifted);
    return success();
  }

  int64_t block;
};

/// A concatenation along the channels of blocked tensors, each of whole
/// blocks (channels a multiple of the block, so no padding lies between
/// them), is a concatenation along C1 of the blocked tensors.
struct BlockConcat : OpRewritePattern<ConcatOp> {
  BlockConcat(MLIRContext *ctx, int64_t block)
      : OpRewritePattern(ctx), block(block) {}

  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getAxis() != 1 || !isStaticNCHW(op.getResult().getType()))
      return rewriter.notifyMatchFailure(op, "not a 4-D f32 channel concat");
    SmallVector<Value> inputs;
    for (Value input : op.getInputs()) {
      Value blocked = getBlockedSource(input, block);
      if (!blocked)
        return rewriter.notifyMatchFailure(op, "an input is not blocked");
      if (cast<RankedTensorType>(input.getType()).getDimSize(1) % block != 0)
        return rewriter.notifyMatchFailure(
            op, "an input's channels are not whole blocks");
      inputs.push_back(blocked);
    }
    RankedTensorType resultType = op.getResult().getType();
    Value blocked = ConcatOp::create(
        rewriter, op.getLoc(), getBlockedType(resultType, block), inputs, 1);
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
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      getOperation().emitError()
          << "the blocked layout did not converge (an internal error)";
      return signalPassFailure();
    }
  }
};

} // namespace

void populateBlockedLayoutPatterns(RewritePatternSet &patterns, int64_t block) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BlockConv<ConvOp>, BlockConv<FusedConvOp>, BlockMaxPool>(ctx,
                                                                        block);
  patterns.add<BlockDepthwiseConv<ConvOp>, BlockDepthwiseConv<FusedConvOp>,
               BlockAveragePool, BlockGlobalPool<GlobalAveragePoolOp>,
               BlockGlobalPool<GlobalMaxPoolOp>, BlockElementwise,
               BlockBatchNorm, BlockConcat>(ctx, block);
}

} // namespace kiln::graph
