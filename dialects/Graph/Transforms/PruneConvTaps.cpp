//===- PruneConvTaps.cpp - Filter taps that only ever read padding --------===//
//
// A dilated convolution on a small feature map reads zero padding with most
// of its taps: DeepLabV3's ASPP applies 3x3 convolutions dilated by 12, 24
// and 36 to a 7x7 map (at a 224x224 input), where every tap but the centre
// one falls outside the map for every output pixel. Those taps add zeros.
// This pass cuts the filter down to the taps that can read the input, per
// spatial dimension, and the padding with it: ASPP's three become 1x1
// convolutions without padding, nine times less work.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHPRUNECONVTAPS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// Whether tap `i` of a dimension reads the input (of `size` elements,
/// padded by `padBegin` before) for some output index in [0, outSize).
bool tapReadsInput(int64_t i, int64_t size, int64_t outSize, int64_t stride,
                   int64_t dilation, int64_t padBegin) {
  int64_t offset = i * dilation - padBegin; // input index of output 0
  // The first output index whose input index is >= 0.
  int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  return first < outSize && first * stride + offset < size;
}

/// The largest filter whose taps are read (a splat constant can describe
/// any size without holding it).
constexpr int64_t kMaxScannedWeight = int64_t(1) << 28;

struct PruneDeadTaps : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    RankedTensorType inputType = conv.getInput().getType();
    RankedTensorType weightType = conv.getWeight().getType();
    auto resultType = cast<RankedTensorType>(conv.getType());
    if (!inputType.hasStaticShape() || !weightType.hasStaticShape() ||
        !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "dynamic shapes");
    // An empty convolution may have a kernel of any size (a weight of 2^62
    // taps and no channel): the loops over its taps would not end.
    if (inputType.getNumElements() == 0 || weightType.getNumElements() == 0 ||
        resultType.getNumElements() == 0)
      return rewriter.notifyMatchFailure(conv, "an empty convolution");
    // Only a constant filter is cut, and the taps are scanned one by one:
    // check that first, so that a filter of 2^62 taps computed at run time
    // (which the compiler refuses later) is not scanned.
    if (!conv.getWeight().getDefiningOp<ConstantOp>() ||
        !hasAtMostElements(weightType.getShape(), kMaxScannedWeight))
      return rewriter.notifyMatchFailure(conv, "weight is not a constant");
    int64_t dims = conv.getNumSpatialDims();
    ArrayRef<int64_t> strides = conv.getStrides(),
                      dilations = conv.getDilations(), pads = conv.getPads();
    SmallVector<int64_t> lo(dims), hi(dims), newPads(pads);
    bool pruned = false;
    for (int64_t d = 0; d < dims; ++d) {
      int64_t k = weightType.getDimSize(2 + d);
      int64_t size = inputType.getDimSize(2 + d);
      int64_t outSize = resultType.getDimSize(2 + d);
      int64_t first = k, last = -1;
      for (int64_t i = 0; i < k; ++i)
        if (tapReadsInput(i, size, outSize, strides[d], dilations[d],
                          pads[d])) {
          first = std::min(first, i);
          last = i;
        }
      if (last < 0)
        return rewriter.notifyMatchFailure(conv, "no tap reads the input");
      // Keep the padding non-negative: taps the padding still covers stay.
      first = std::min(first, pads[d] / dilations[d]);
      last = std::max(last, k - 1 - pads[dims + d] / dilations[d]);
      lo[d] = first;
      hi[d] = last;
      newPads[d] = pads[d] - first * dilations[d];
      newPads[dims + d] = pads[dims + d] - (k - 1 - last) * dilations[d];
      pruned |= first > 0 || last < k - 1;
    }
    if (!pruned)
      return rewriter.notifyMatchFailure(conv, "every tap reads the input");
    std::optional<SmallVector<double>> weight =
        getFloatElements(conv.getWeight());
    if (!weight)
      return rewriter.notifyMatchFailure(conv, "weight is not a constant");

    // The kept window of every filter.
    SmallVector<int64_t> shape(weightType.getShape());
    SmallVector<int64_t> newShape(shape);
    for (int64_t d = 0; d < dims; ++d)
      newShape[2 + d] = hi[d] - lo[d] + 1;
    int64_t filters = shape[0] * shape[1];
    int64_t oldWindow = 1, newWindow = 1;
    for (int64_t d = 0; d < dims; ++d) {
      oldWindow *= shape[2 + d];
      newWindow *= newShape[2 + d];
    }
    SmallVector<double> kept;
    kept.reserve(filters * newWindow);
    SmallVector<int64_t> index(dims);
    for (int64_t f = 0; f < filters; ++f)
      for (int64_t w = 0; w < newWindow; ++w) {
        // w's position in the new window, then in the old one.
        int64_t rest = w, old = 0, scale = 1;
        for (int64_t d = dims - 1; d >= 0; --d) {
          index[d] = rest % newShape[2 + d] + lo[d];
          rest /= newShape[2 + d];
        }
        for (int64_t d = dims - 1; d >= 0; --d) {
          old += index[d] * scale;
          scale *= shape[2 + d];
        }
        kept.push_back((*weight)[f * oldWindow + old]);
      }
    // A window of one tap has no use for dilation.
    SmallVector<int64_t> newDilations(dilations);
    for (int64_t d = 0; d < dims; ++d)
      if (newShape[2 + d] == 1)
        newDilations[d] = 1;
    rewriter.setInsertionPoint(conv);
    Value newWeight = createFloatConstant(
        rewriter, conv.getLoc(),
        RankedTensorType::get(newShape, weightType.getElementType()), kept);
    rewriter.replaceOpWithNewOp<ConvOp>(
        conv, resultType, conv.getInput(), newWeight, conv.getBias(),
        conv.getStrides(), rewriter.getDenseI64ArrayAttr(newPads),
        rewriter.getDenseI64ArrayAttr(newDilations), conv.getGroup());
    return success();
  }
};

struct GraphPruneConvTapsPass
    : impl::GraphPruneConvTapsBase<GraphPruneConvTapsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<PruneDeadTaps>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::graph
