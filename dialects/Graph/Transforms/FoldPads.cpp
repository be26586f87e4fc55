//===- FoldPads.cpp - A Pad folded into the window op that reads it -------===//
//
// Exporters often pad explicitly in front of a convolution or a pool:
// torch.onnx writes `avg_pool2d(padding=1)` as a Pad and an AveragePool
// without padding (Inception-v3 has nine), Keras models put ZeroPadding2D
// before their stride-2 convolutions and pools, and tf2onnx does the same
// for asymmetric SAME padding. A Pad is a copy of the whole tensor, and the
// blocked layout has no Pad, so each one also costs a trip out of the
// blocked layout and back. The window ops take padding themselves: a zero
// Pad of the spatial dimensions folds into a convolution's pads, and into an
// AveragePool's with `count_include_pad` (the explicit zeros counted, as
// they were); a -inf Pad folds into a MaxPool's pads (padding never wins),
// and so does a zero Pad of a ReLU's output, whose zeros never win either
// where every window still reads the input. A pool's padding stays smaller
// than its window, as ONNX wants.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFOLDPADS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// The spatial padding (all begins, then all ends) of `pad`, a constant Pad
/// of NC(D)HW data, when it pads nothing but the spatial dimensions and by
/// no negative amount; none otherwise.
std::optional<SmallVector<int64_t>> spatialPads(PadOp pad) {
  if (pad.getMode() != "constant")
    return std::nullopt;
  int64_t rank = pad.getInput().getType().getRank();
  if (rank < 3)
    return std::nullopt;
  ArrayRef<int64_t> pads = pad.getPads();
  for (int64_t d : {int64_t(0), int64_t(1)})
    if (pads[d] != 0 || pads[rank + d] != 0)
      return std::nullopt;
  SmallVector<int64_t> spatial;
  for (int64_t side = 0; side < 2; ++side)
    for (int64_t d = 2; d < rank; ++d) {
      int64_t amount = pads[side * rank + d];
      if (amount < 0)
        return std::nullopt;
      spatial.push_back(amount);
    }
  return spatial;
}

/// The Pad that `input` comes from, with its spatial padding (spatialPads)
/// in as many entries as the window op's `numPads`; none otherwise.
std::optional<std::pair<PadOp, SmallVector<int64_t>>>
padBefore(Value input, size_t numPads) {
  auto pad = input.getDefiningOp<PadOp>();
  if (!pad)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> extra = spatialPads(pad);
  if (!extra || extra->size() != numPads)
    return std::nullopt;
  return std::make_pair(pad, std::move(*extra));
}

/// `pads` + `extra`, entry by entry.
SmallVector<int64_t> addPads(ArrayRef<int64_t> pads, ArrayRef<int64_t> extra) {
  SmallVector<int64_t> sum(pads);
  for (auto [to, amount] : llvm::zip_equal(sum, extra))
    to += amount;
  return sum;
}

/// Whether a pool may have `pads`: each smaller than its window, as ONNX
/// (and graph's verifier) wants.
bool padsFitKernel(ArrayRef<int64_t> pads, ArrayRef<int64_t> kernel) {
  int64_t dims = kernel.size();
  for (int64_t d = 0; d < dims; ++d)
    if (pads[d] >= kernel[d] || pads[dims + d] >= kernel[d])
      return false;
  return true;
}

/// Whether a pool's windows over the padded input all end inside it: then
/// `ceil_mode` adds no partial window, and it does not matter whether the
/// padding is the Pad's (part of the input) or the pool's own (where no
/// window may start at the end). Needs static spatial sizes.
bool noPartialWindows(RankedTensorType padded, ArrayRef<int64_t> kernel,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                      ArrayRef<int64_t> pads) {
  int64_t dims = kernel.size();
  for (int64_t d = 0; d < dims; ++d) {
    int64_t size = padded.getDimSize(2 + d);
    if (ShapedType::isDynamic(size))
      return false;
    int64_t extent = (kernel[d] - 1) * dilations[d] + 1;
    int64_t span = size + pads[d] + pads[dims + d] - extent;
    if (span < 0 || span % strides[d] != 0)
      return false;
  }
  return true;
}

struct FoldPadIntoConv : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    auto found = padBefore(conv.getInput(), conv.getPads().size());
    if (!found || found->first.getValue().convertToDouble() != 0.0)
      return rewriter.notifyMatchFailure(conv, "no spatial zero Pad before");
    PadOp pad = found->first;
    ArrayRef<int64_t> extra = found->second;
    SmallVector<int64_t> pads = addPads(conv.getPads(), extra);
    rewriter.modifyOpInPlace(conv, [&] {
      conv.getInputMutable().assign(pad.getInput());
      conv.setPads(pads);
    });
    return success();
  }
};

struct FoldPadIntoAveragePool : OpRewritePattern<AveragePoolOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AveragePoolOp pool,
                                PatternRewriter &rewriter) const override {
    auto found = padBefore(pool.getInput(), pool.getPads().size());
    if (!found || found->first.getValue().convertToDouble() != 0.0)
      return rewriter.notifyMatchFailure(pool, "no spatial zero Pad before");
    PadOp pad = found->first;
    ArrayRef<int64_t> extra = found->second;
    // The Pad's zeros count in each window's divisor; the pool's own
    // padding must count too, or be none.
    if (!pool.getCountIncludePad() &&
        llvm::any_of(pool.getPads(), [](int64_t p) { return p != 0; }))
      return rewriter.notifyMatchFailure(pool, "padding that does not count");
    if (pool.getCeilMode() &&
        !noPartialWindows(pad.getType(), pool.getKernelShape(),
                          pool.getStrides(), pool.getDilations(),
                          pool.getPads()))
      return rewriter.notifyMatchFailure(pool, "partial ceil-mode windows");
    SmallVector<int64_t> pads = addPads(pool.getPads(), extra);
    if (!padsFitKernel(pads, pool.getKernelShape()))
      return rewriter.notifyMatchFailure(pool, "pads as large as the window");
    rewriter.modifyOpInPlace(pool, [&] {
      pool.getInputMutable().assign(pad.getInput());
      pool.setPads(pads);
      pool.setCountIncludePad(true);
    });
    return success();
  }
};

struct FoldPadIntoMaxPool : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MaxPoolOp pool,
                                PatternRewriter &rewriter) const override {
    auto found = padBefore(pool.getInput(), pool.getPads().size());
    if (!found)
      return rewriter.notifyMatchFailure(pool, "no spatial Pad before");
    PadOp pad = found->first;
    ArrayRef<int64_t> extra = found->second;
    ArrayRef<int64_t> kernel = pool.getKernelShape();
    ArrayRef<int64_t> dilations = pool.getDilations();
    SmallVector<int64_t> pads = addPads(pool.getPads(), extra);
    if (!padsFitKernel(pads, kernel))
      return rewriter.notifyMatchFailure(pool, "pads as large as the window");
    double value = pad.getValue().convertToDouble();
    bool never = std::isinf(value) && value < 0;
    if (!never && value == 0.0 && pad.getInput().getDefiningOp<ReluOp>()) {
      // Zeros lose to a ReLU's outputs, or tie, as long as every window
      // reads at least one of them: windows of consecutive taps, padded by
      // less than their length (checked above).
      never = llvm::all_of(dilations, [](int64_t d) { return d == 1; });
    }
    if (!never)
      return rewriter.notifyMatchFailure(pool, "padding that could win");
    if (pool.getCeilMode() &&
        !noPartialWindows(pad.getType(), kernel, pool.getStrides(), dilations,
                          pool.getPads()))
      return rewriter.notifyMatchFailure(pool, "partial ceil-mode windows");
    rewriter.modifyOpInPlace(pool, [&] {
      pool.getInputMutable().assign(pad.getInput());
      pool.setPads(pads);
    });
    return success();
  }
};

struct GraphFoldPadsPass : impl::GraphFoldPadsBase<GraphFoldPadsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldPadIntoConv, FoldPadIntoAveragePool, FoldPadIntoMaxPool>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::graph
