//===- StackDepthTaps.cpp - A 3-D convolution as one 2-D convolution
//-------===//
//
// A 3-D convolution (video models: R3D, MC3, R(2+1)D) computed through
// im2col builds a patch matrix 27 times its input for a 3x3x3 filter (173
// MB for R3D-18's first stage at 8x112x112), which the matrix product then
// streams from memory at a third of the 2-D convolutions' speed. But a
// 3-D convolution is a 2-D one in disguise: output depth d reads input
// depths d * stride + dz * dilation - pad for the depth taps dz. Copying
// the input once per depth tap, shifted, and stacking the copies along the
// channels gives a 2-D input with depth taps x channels channels, one 2-D
// image per output depth; a 2-D convolution of it with the filter's depth
// taps moved next to its channels is the 3-D convolution, exactly (the
// same products, summed in another order). The copies cost the depth taps
// times the input (3x, not 27x), and the 2-D convolution takes Kiln's
// blocked layout and its epilogues like any other. A filter of one pixel
// (a temporal convolution) is left to im2col, whose stacking is the same
// without the transposes.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHSTACKDEPTHTAPS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

struct StackDepthTaps : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    RankedTensorType inputType = conv.getInput().getType();
    RankedTensorType weightType = conv.getWeight().getType();
    auto resultType = cast<RankedTensorType>(conv.getType());
    if (conv.getNumSpatialDims() != 3)
      return rewriter.notifyMatchFailure(conv, "not a 3-D convolution");
    if (!inputType.hasStaticShape() || !weightType.hasStaticShape() ||
        !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "dynamic shapes");
    if (inputType.getNumElements() == 0 || weightType.getNumElements() == 0 ||
        resultType.getNumElements() == 0)
      return rewriter.notifyMatchFailure(conv, "an empty convolution");
    ArrayRef<int64_t> in = inputType.getShape(), w = weightType.getShape(),
                      out = resultType.getShape();
    int64_t n = in[0], channels = in[1], depth = in[2], height = in[3],
            width = in[4];
    int64_t filters = w[0], groupChannels = w[1], taps = w[2];
    int64_t groups = conv.getGroup(), outDepth = out[2];
    ArrayRef<int64_t> strides = conv.getStrides(), pads = conv.getPads(),
                      dilations = conv.getDilations();
    if (channels != groups * groupChannels)
      return rewriter.notifyMatchFailure(conv, "channels do not match");
    // The stacked input is `taps` times the input: beyond that (a filter
    // deeper than a few taps) im2col's matrix is no worse.
    if (taps > 7)
      return rewriter.notifyMatchFailure(conv, "too many depth taps");
    // A filter of one pixel (R(2+1)D's temporal convolutions) is a matrix
    // product over the stacked taps either way; im2col's stacking needs no
    // transposes, and measured faster (docs/performance.md).
    if (w[3] * w[4] == 1)
      return rewriter.notifyMatchFailure(conv, "a 1x1 spatial window");
    int64_t batch;
    if (llvm::MulOverflow(n, outDepth, batch) ||
        !hasAtMostElements(weightType.getShape(), int64_t(1) << 28))
      return rewriter.notifyMatchFailure(conv, "too large");

    Location loc = conv.getLoc();
    Type element = inputType.getElementType();
    auto tensor = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, element);
    };
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
      return ReshapeOp::create(rewriter, loc, tensor(shape), v,
                               rewriter.getDenseI64ArrayAttr(shape),
                               rewriter.getBoolAttr(false));
    };
    // [N, C, D, H, W] -> [N, D, C, H, W], padded along D.
    Value x = TransposeOp::create(
        rewriter, loc, tensor({n, depth, channels, height, width}),
        conv.getInput(), rewriter.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
    int64_t padded = depth + pads[0] + pads[3];
    if (pads[0] != 0 || pads[3] != 0)
      x = PadOp::create(
          rewriter, loc, tensor({n, padded, channels, height, width}), x,
          rewriter.getDenseI64ArrayAttr(
              {0, pads[0], 0, 0, 0, 0, pads[3], 0, 0, 0}),
          rewriter.getStringAttr("constant"), rewriter.getF64FloatAttr(0.0));
    // One shifted copy per depth tap, [N, Dout, G, 1, C/G, H, W], stacked
    // next to the channels of each group.
    SmallVector<Value> shifted;
    for (int64_t dz = 0; dz < taps; ++dz) {
      int64_t start = dz * dilations[0];
      int64_t end = start + (outDepth - 1) * strides[0] + 1;
      if (end > padded)
        return rewriter.notifyMatchFailure(conv, "depth out of range");
      Value slice = SliceOp::create(
          rewriter, loc, tensor({n, outDepth, channels, height, width}), x,
          rewriter.getDenseI64ArrayAttr({0, start, 0, 0, 0}),
          rewriter.getDenseI64ArrayAttr({n, end, channels, height, width}),
          rewriter.getDenseI64ArrayAttr({1, strides[0], 1, 1, 1}));
      shifted.push_back(reshape(
          slice, {n, outDepth, groups, 1, groupChannels, height, width}));
    }
    Value stacked =
        taps == 1 ? shifted.front()
                  : ConcatOp::create(rewriter, loc,
                                     tensor({n, outDepth, groups, taps,
                                             groupChannels, height, width}),
                                     shifted, rewriter.getI64IntegerAttr(3));
    Value input2d =
        reshape(stacked, {batch, groups * taps * groupChannels, height, width});

    // The filter [M, C/G, KD, KH, KW] as [M, KD * C/G, KH, KW].
    int64_t kh = w[3], kw = w[4];
    SmallVector<int64_t> weightShape = {filters, taps * groupChannels, kh, kw};
    Value weight;
    if (std::optional<SmallVector<double>> values =
            getFloatElements(conv.getWeight())) {
      SmallVector<double> moved(values->size());
      int64_t window = kh * kw;
      for (int64_t m = 0; m < filters; ++m)
        for (int64_t c = 0; c < groupChannels; ++c)
          for (int64_t dz = 0; dz < taps; ++dz)
            for (int64_t k = 0; k < window; ++k)
              moved[((m * taps + dz) * groupChannels + c) * window + k] =
                  (*values)[((m * groupChannels + c) * taps + dz) * window + k];
      weight = createFloatConstant(
          rewriter, loc,
          RankedTensorType::get(weightShape, weightType.getElementType()),
          moved);
    } else {
      Value moved = TransposeOp::create(
          rewriter, loc,
          RankedTensorType::get({filters, taps, groupChannels, kh, kw},
                                weightType.getElementType()),
          conv.getWeight(), rewriter.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
      weight = ReshapeOp::create(
          rewriter, loc,
          RankedTensorType::get(weightShape, weightType.getElementType()),
          moved, rewriter.getDenseI64ArrayAttr(weightShape),
          rewriter.getBoolAttr(false));
    }

    int64_t outHeight = out[3], outWidth = out[4];
    Value y = ConvOp::create(
        rewriter, loc, tensor({batch, filters, outHeight, outWidth}), input2d,
        weight, conv.getBias(),
        rewriter.getDenseI64ArrayAttr({strides[1], strides[2]}),
        rewriter.getDenseI64ArrayAttr({pads[1], pads[2], pads[4], pads[5]}),
        rewriter.getDenseI64ArrayAttr({dilations[1], dilations[2]}),
        conv.getGroupAttr());
    y = reshape(y, {n, outDepth, filters, outHeight, outWidth});
    rewriter.replaceOpWithNewOp<TransposeOp>(
        conv, resultType, y, rewriter.getDenseI64ArrayAttr({0, 2, 1, 3, 4}));
    return success();
  }
};

struct GraphStackDepthTapsPass
    : impl::GraphStackDepthTapsBase<GraphStackDepthTapsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StackDepthTaps>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::graph
