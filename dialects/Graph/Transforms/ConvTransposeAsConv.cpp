//===- ConvTransposeAsConv.cpp - Transposed convolutions by phases --------===//
//
// A transposed convolution of stride s lowered as a convolution of the input
// with s - 1 zeros inserted between its elements multiplies zeros s^d times
// in d dimensions, outside Kiln's 2-D kernels: a decoder of three stride-2
// layers ran 5.5x slower than onnxruntime. Output o of a 1-D transposed
// convolution with filter w, stride s and pad p sums x[q - j] w[phi + s j]
// over j, where phi = (o + p) mod s and q = (o + p) div s: for each phase
// phi, a stride-1 convolution of the unchanged input with the taps phi,
// phi + s, ... of the filter, reversed. The s^d phases are one convolution
// with s^d times the filters (each phase's taps, zero-padded to the longest
// phase), whose results interleave into the output: a reshape, a transpose
// ([N, M, s..., Q...] -> [N, M, Q, s, ...]) and a slice. The same products,
// and none by an inserted zero; the convolution then takes the blocked
// layout and its kernels like any other.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHCONVTRANSPOSEASCONV
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// Filters above this many elements (after the rewrite) are left to the
/// zero-insertion lowering rather than made at compile time.
constexpr int64_t kMaxFilterElements = int64_t(1) << 26;

/// Strides above this are left to the zero-insertion lowering.
constexpr int64_t kMaxStride = 64;

struct ConvTransposeAsConv : OpRewritePattern<ConvTransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvTransposeOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType weightType = op.getWeight().getType();
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!inputType.hasStaticShape() || !weightType.hasStaticShape() ||
        !resultType.hasStaticShape() || inputType.getNumElements() == 0 ||
        resultType.getNumElements() == 0)
      return rewriter.notifyMatchFailure(op, "dynamic or empty shapes");
    if (!llvm::all_of(op.getDilations(), [](int64_t d) { return d == 1; }))
      return rewriter.notifyMatchFailure(op, "dilated");
    std::optional<SmallVector<double>> filter =
        getFloatElements(op.getWeight());
    if (!filter)
      return rewriter.notifyMatchFailure(op, "a filter that is not constant");
    std::optional<SmallVector<double>> bias;
    if (op.getBias()) {
      bias = getFloatElements(op.getBias());
      if (!bias)
        return rewriter.notifyMatchFailure(op, "a bias that is not constant");
    }

    int64_t rank = inputType.getRank(), d = rank - 2;
    ArrayRef<int64_t> in = inputType.getShape(), k = weightType.getShape(),
                      out = resultType.getShape(), strides = op.getStrides(),
                      pads = op.getPads();
    int64_t n = in[0], channels = in[1], groups = op.getGroup();
    if (channels % groups != 0)
      return rewriter.notifyMatchFailure(op, "channels do not match");
    int64_t groupChannels = channels / groups, groupFilters = k[1];
    int64_t filters = groups * groupFilters;
    if (out[1] != filters || k[0] != channels)
      return rewriter.notifyMatchFailure(op, "channels do not match");
    // Strides and kernels of sizes a model has: the phases (the product of
    // the strides) multiply the filters.
    for (int64_t i = 0; i < d; ++i)
      if (strides[i] < 1 || strides[i] > kMaxStride || k[2 + i] < 1)
        return rewriter.notifyMatchFailure(op, "a stride or kernel size");

    // Per spatial dimension: taps per phase, the convolution's pads, and
    // where the output starts in the interleaved phases.
    SmallVector<int64_t> taps(d), low(d), high(d), convSize(d), start(d);
    int64_t phases = 1, tapCount = 1;
    for (int64_t i = 0; i < d; ++i) {
      int64_t s = strides[i], p = pads[i], size = k[2 + i], length = in[2 + i];
      taps[i] = (size + s - 1) / s;
      int64_t first = p / s, last = (out[2 + i] - 1 + p) / s;
      low[i] = std::max<int64_t>(taps[i] - 1 - first, 0);
      int64_t qFirst = taps[i] - 1 - low[i];
      int64_t count = last - qFirst + 1;
      high[i] = std::max<int64_t>(count - length - low[i] + taps[i] - 1, 0);
      convSize[i] = length + low[i] + high[i] - taps[i] + 1;
      start[i] = p - qFirst * s;
      if (convSize[i] < count || start[i] < 0)
        return rewriter.notifyMatchFailure(op, "phases out of range");
      if (llvm::MulOverflow(phases, s, phases) ||
          llvm::MulOverflow(tapCount, taps[i], tapCount))
        return rewriter.notifyMatchFailure(op, "too large a filter");
    }
    int64_t convFilters, filterElements;
    if (llvm::MulOverflow(filters, phases, convFilters) ||
        llvm::MulOverflow(convFilters, groupChannels, filterElements) ||
        llvm::MulOverflow(filterElements, tapCount, filterElements) ||
        filterElements > kMaxFilterElements)
      return rewriter.notifyMatchFailure(op, "too large a filter");

    // The filter [C, M/G, K...] as [M * S, C/G, J...]: output channel
    // (m, phi...) reads taps phi + s (J - 1 - t) of filter m.
    SmallVector<int64_t> convWeightShape = {convFilters, groupChannels};
    llvm::append_range(convWeightShape, taps);
    SmallVector<double> weight(convFilters * groupChannels * tapCount, 0.0);
    SmallVector<int64_t> kStrides(rank, 1);
    for (int64_t i = rank - 2; i >= 0; --i)
      kStrides[i] = kStrides[i + 1] * k[i + 1];
    SmallVector<int64_t> phi(d), t(d);
    for (int64_t m = 0; m < filters; ++m) {
      int64_t g = m / groupFilters, mLocal = m % groupFilters;
      for (int64_t ph = 0; ph < phases; ++ph) {
        for (int64_t i = d - 1, r = ph; i >= 0; --i) {
          phi[i] = r % strides[i];
          r /= strides[i];
        }
        int64_t row = m * phases + ph;
        for (int64_t c = 0; c < groupChannels; ++c) {
          for (int64_t tap = 0; tap < tapCount; ++tap) {
            for (int64_t i = d - 1, r = tap; i >= 0; --i) {
              t[i] = r % taps[i];
              r /= taps[i];
            }
            int64_t offset =
                (g * groupChannels + c) * kStrides[0] + mLocal * kStrides[1];
            bool inside = true;
            for (int64_t i = 0; i < d && inside; ++i) {
              int64_t kk = phi[i] + strides[i] * (taps[i] - 1 - t[i]);
              inside = kk < k[2 + i];
              offset += kk * kStrides[2 + i];
            }
            if (inside)
              weight[(row * groupChannels + c) * tapCount + tap] =
                  (*filter)[offset];
          }
        }
      }
    }

    Location loc = op.getLoc();
    Type element = resultType.getElementType();
    auto tensor = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, element);
    };
    Value convWeight =
        createFloatConstant(rewriter, loc, tensor(convWeightShape), weight);
    Value convBias;
    if (bias) {
      SmallVector<double> repeated;
      for (double b : *bias)
        repeated.append(phases, b);
      convBias =
          createFloatConstant(rewriter, loc, tensor({convFilters}), repeated);
    }
    SmallVector<int64_t> convShape = {n, convFilters};
    llvm::append_range(convShape, convSize);
    SmallVector<int64_t> convPads(low);
    llvm::append_range(convPads, high);
    Value y = ConvOp::create(
        rewriter, loc, tensor(convShape), op.getInput(), convWeight, convBias,
        rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(d, 1)),
        rewriter.getDenseI64ArrayAttr(convPads),
        rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(d, 1)),
        op.getGroupAttr());

    // An activation after it applies to the phases before they interleave
    // (elementwise, it commutes with moving elements), next to the
    // convolution, which kiln-graph-fuse-epilogues then gives it.
    Operation *activation = nullptr;
    if (op->hasOneUse()) {
      Operation *user = *op->getUsers().begin();
      if (isa<ReluOp, LeakyReluOp, SigmoidOp, TanhOp, EluOp, SeluOp, CeluOp,
              HardSigmoidOp, HardSwishOp, GeluOp>(user) &&
          user->getNumOperands() == 1 && user->getNumResults() == 1 &&
          user->getResult(0).getType() == resultType)
        activation = user;
    }
    if (activation) {
      Operation *moved = rewriter.clone(*activation);
      rewriter.modifyOpInPlace(moved, [&] {
        moved->setOperand(0, y);
        moved->getResult(0).setType(y.getType());
      });
      y = moved->getResult(0);
    }

    // [N, M * S, Q...] -> [N, M, s..., Q...] -> [N, M, Q1, s1, Q2, s2, ...]
    // -> [N, M, Q1 s1, ...], then the output's window.
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
      return ReshapeOp::create(rewriter, loc, tensor(shape), v,
                               rewriter.getDenseI64ArrayAttr(shape),
                               rewriter.getBoolAttr(false));
    };
    SmallVector<int64_t> split = {n, filters}, perm = {0, 1},
                         interleaved = {n, filters}, moved = {n, filters};
    llvm::append_range(split, strides);
    llvm::append_range(split, convSize);
    for (int64_t i = 0; i < d; ++i) {
      perm.append({2 + d + i, 2 + i});
      moved.append({convSize[i], strides[i]});
      interleaved.push_back(convSize[i] * strides[i]);
    }
    if (phases > 1) {
      y = reshape(y, split);
      y = TransposeOp::create(rewriter, loc, tensor(moved), y,
                              rewriter.getDenseI64ArrayAttr(perm));
      y = reshape(y, interleaved);
    }
    if (ArrayRef<int64_t>(interleaved) != out) {
      SmallVector<int64_t> starts = {0, 0}, ends = {n, filters};
      for (int64_t i = 0; i < d; ++i) {
        starts.push_back(start[i]);
        ends.push_back(start[i] + out[2 + i]);
      }
      y = SliceOp::create(
          rewriter, loc, resultType, y, rewriter.getDenseI64ArrayAttr(starts),
          rewriter.getDenseI64ArrayAttr(ends),
          rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    }
    if (activation) {
      rewriter.replaceOp(activation, y);
      rewriter.eraseOp(op);
    } else {
      rewriter.replaceOp(op, y);
    }
    return success();
  }
};

struct GraphConvTransposeAsConvPass
    : impl::GraphConvTransposeAsConvBase<GraphConvTransposeAsConvPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvTransposeAsConv>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::graph
