//===- FoldBatchNorm.cpp - Per-channel affine ops into weights ------------===//
//
// At inference, BatchNormalization is a per-channel affine map
//   y = x * s + t,  s = scale / sqrt(var + epsilon),  t = bias - mean * s,
// and so are a Mul and an Add by a per-channel constant. Following a
// convolution (or a Gemm) whose weights are constants, the map folds into
// them: filter m is multiplied by s[m], and the bias becomes b * s + t. The
// op then disappears from the graph at no cost.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/ConstantValues.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFOLDBATCHNORM
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

/// A per-channel affine map `x * scale + shift`.
struct ChannelAffine {
  SmallVector<double> scale, shift;
};

/// Folds `affine` into the constant filter `weight` and bias `bias` (or
/// none) of `conv`, whose `filters` output channels it maps: `scaleFilter`
/// multiplies each filter element by its output channel's scale, `make`
/// builds the op that replaces `user` (the op that applied the map) from
/// the new filter and bias. Fails, changing nothing, when the filter or the
/// bias is not a constant.
LogicalResult
foldIntoFilter(PatternRewriter &rewriter, Operation *conv, Value weight,
               Value bias, int64_t filters, Operation *user,
               const ChannelAffine &affine,
               function_ref<void(MutableArrayRef<double>)> scaleFilter,
               function_ref<Value(Location, Value, Value)> make) {
  std::optional<SmallVector<double>> filter = getFloatElements(weight);
  if (!filter)
    return rewriter.notifyMatchFailure(user, "filter is not a constant");
  SmallVector<double> newBias(filters, 0.0);
  if (bias) {
    std::optional<SmallVector<double>> values = getFloatElements(bias);
    if (!values)
      return rewriter.notifyMatchFailure(user, "bias is not a constant");
    newBias = std::move(*values);
  }
  scaleFilter(*filter);
  for (int64_t m = 0; m < filters; ++m)
    newBias[m] = newBias[m] * affine.scale[m] + affine.shift[m];
  rewriter.setInsertionPoint(conv);
  Location loc = conv->getLoc();
  auto weightType = cast<RankedTensorType>(weight.getType());
  Value folded =
      make(rewriter.getFusedLoc({loc, user->getLoc()}),
           createFloatConstant(rewriter, loc, weightType, *filter),
           createFloatConstant(
               rewriter, loc,
               RankedTensorType::get({filters}, weightType.getElementType()),
               newBias));
  rewriter.replaceOp(user, folded);
  rewriter.eraseOp(conv);
  return success();
}

/// Rewrites `conv` as a convolution whose output is `affine` applied to the
/// old one, replacing `user`: filter `m` is scaled by the map of channel m.
LogicalResult foldIntoConv(PatternRewriter &rewriter, ConvOp conv,
                           Operation *user, const ChannelAffine &affine) {
  int64_t filters = conv.getWeight().getType().getDimSize(0);
  return foldIntoFilter(
      rewriter, conv, conv.getWeight(), conv.getBias(), filters, user, affine,
      [&](MutableArrayRef<double> filter) {
        int64_t perFilter = filter.size() / filters;
        for (int64_t m = 0; m < filters; ++m)
          for (int64_t i = 0; i < perFilter; ++i)
            filter[m * perFilter + i] *= affine.scale[m];
      },
      [&](Location loc, Value weight, Value bias) -> Value {
        return ConvOp::create(rewriter, loc, user->getResult(0).getType(),
                              conv.getInput(), weight, bias, conv.getStrides(),
                              conv.getPads(), conv.getDilations(),
                              conv.getGroup());
      });
}

/// The convolution that defines `value` when `value` is its only use, has
/// static filter count and the same type as `result`.
ConvOp getFoldableConv(Value value, Value result) {
  auto conv = value.getDefiningOp<ConvOp>();
  if (!conv || !conv.getResult().hasOneUse() ||
      conv.getWeight().getType().isDynamicDim(0) ||
      cast<RankedTensorType>(result.getType()).getElementType() !=
          conv.getType().getElementType())
    return nullptr;
  return conv;
}

/// The same for a transposed convolution, whose filter is [C, M/G, k...]:
/// output channel m = g * M/G + j reads filter column j of group g's input
/// channels.
LogicalResult foldIntoConvTranspose(PatternRewriter &rewriter,
                                    ConvTransposeOp conv, Operation *user,
                                    const ChannelAffine &affine) {
  RankedTensorType weightType = conv.getWeight().getType();
  int64_t channels = weightType.getDimSize(0);
  int64_t groupFilters = weightType.getDimSize(1), groups = conv.getGroup();
  int64_t filters = groups * groupFilters;
  if (channels % groups != 0 || channels * groupFilters == 0 ||
      static_cast<int64_t>(affine.scale.size()) != filters)
    return rewriter.notifyMatchFailure(user, "channels do not match");
  return foldIntoFilter(
      rewriter, conv, conv.getWeight(), conv.getBias(), filters, user, affine,
      [&](MutableArrayRef<double> filter) {
        int64_t taps = filter.size() / (channels * groupFilters);
        int64_t groupChannels = channels / groups;
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t j = 0; j < groupFilters; ++j) {
            double s = affine.scale[(c / groupChannels) * groupFilters + j];
            for (int64_t t = 0; t < taps; ++t)
              filter[(c * groupFilters + j) * taps + t] *= s;
          }
      },
      [&](Location loc, Value weight, Value bias) -> Value {
        return ConvTransposeOp::create(
            rewriter, loc, user->getResult(0).getType(), conv.getInput(),
            weight, bias, conv.getStridesAttr(), conv.getPadsAttr(),
            conv.getDilationsAttr(), conv.getOutputPaddingAttr(),
            conv.getGroupAttr());
      });
}

/// The transposed convolution that defines `value` when `value` is its only
/// use, with a static filter and the element type of `result`.
ConvTransposeOp getFoldableConvTranspose(Value value, Value result) {
  auto conv = value.getDefiningOp<ConvTransposeOp>();
  if (!conv || !conv.getResult().hasOneUse() ||
      !conv.getWeight().getType().hasStaticShape() ||
      cast<RankedTensorType>(result.getType()).getElementType() !=
          conv.getType().getElementType())
    return nullptr;
  return conv;
}

/// The filter count of a transposed convolution (its result's channels).
int64_t transposedFilters(ConvTransposeOp conv) {
  return conv.getWeight().getType().getDimSize(1) * conv.getGroup();
}

/// The per-channel map of a batch_norm whose parameters are constants.
std::optional<ChannelAffine> getBatchNormAffine(BatchNormOp op,
                                                int64_t channels) {
  auto scale = getFloatElements(op.getScale());
  auto bias = getFloatElements(op.getBias());
  auto mean = getFloatElements(op.getMean());
  auto var = getFloatElements(op.getVar());
  if (!scale || !bias || !mean || !var)
    return std::nullopt;
  for (auto *values : {&*scale, &*bias, &*mean, &*var})
    if (static_cast<int64_t>(values->size()) != channels)
      return std::nullopt;
  double epsilon = op.getEpsilon().convertToDouble();
  ChannelAffine affine;
  for (int64_t c = 0; c < channels; ++c) {
    double s = (*scale)[c] / std::sqrt((*var)[c] + epsilon);
    affine.scale.push_back(s);
    affine.shift.push_back((*bias)[c] - (*mean)[c] * s);
  }
  return affine;
}

struct FoldBatchNormIntoConv : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    ConvOp conv = getFoldableConv(op.getInput(), op.getResult());
    if (!conv)
      return rewriter.notifyMatchFailure(
          op, "input is not a convolution used only here");
    int64_t filters = conv.getWeight().getType().getDimSize(0);
    std::optional<ChannelAffine> affine = getBatchNormAffine(op, filters);
    if (!affine)
      return rewriter.notifyMatchFailure(
          op, "scale, bias, mean or var is not a constant of one element "
              "per channel");
    return foldIntoConv(rewriter, conv, op, *affine);
  }
};

/// BatchNormalization after a transposed convolution (decoders, GAN
/// generators): into its filter and bias, as into a convolution's.
struct FoldBatchNormIntoConvTranspose : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    ConvTransposeOp conv =
        getFoldableConvTranspose(op.getInput(), op.getResult());
    if (!conv)
      return rewriter.notifyMatchFailure(
          op, "input is not a transposed convolution used only here");
    std::optional<ChannelAffine> affine =
        getBatchNormAffine(op, transposedFilters(conv));
    if (!affine)
      return rewriter.notifyMatchFailure(
          op, "scale, bias, mean or var is not a constant of one element "
              "per channel");
    return foldIntoConvTranspose(rewriter, conv, op, *affine);
  }
};

/// BatchNormalization after a Gemm: the map scales the columns of the
/// result, that is, the columns of B (its rows when transposed), and becomes
/// the new C.
struct FoldBatchNormIntoGemm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    auto gemm = op.getInput().getDefiningOp<GemmOp>();
    if (!gemm || !gemm.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(op, "input is not a Gemm used only "
                                             "here");
    auto resultType = cast<RankedTensorType>(gemm.getType());
    if (!resultType.hasStaticShape() || resultType.getRank() != 2)
      return rewriter.notifyMatchFailure(op, "needs a static 2-D Gemm");
    int64_t n = resultType.getDimSize(1);
    std::optional<ChannelAffine> affine = getBatchNormAffine(op, n);
    std::optional<SmallVector<double>> b = getFloatElements(gemm.getB());
    if (!affine || !b)
      return rewriter.notifyMatchFailure(op, "non-constant parameters or B");
    SmallVector<double> c(n, 0.0);
    if (Value oldC = gemm.getC()) {
      std::optional<SmallVector<double>> values =
          getPerChannelValues(oldC, 2, 1, n);
      if (!values)
        return rewriter.notifyMatchFailure(op,
                                           "C is not a constant per column");
      c = std::move(*values);
    }
    double alpha = gemm.getAlpha().convertToDouble();
    double beta = gemm.getBeta().convertToDouble();
    int64_t k = b->size() / n;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)
        (*b)[gemm.getTransB() ? j * k + i : i * n + j] *=
            alpha * affine->scale[j];
    for (int64_t j = 0; j < n; ++j)
      c[j] = beta * c[j] * affine->scale[j] + affine->shift[j];
    rewriter.setInsertionPoint(gemm);
    Location loc = gemm.getLoc();
    auto bType = cast<RankedTensorType>(gemm.getB().getType());
    Value newB = createFloatConstant(rewriter, loc, bType, *b);
    Value newC = createFloatConstant(
        rewriter, loc, RankedTensorType::get({n}, bType.getElementType()), c);
    auto folded = GemmOp::create(
        rewriter, rewriter.getFusedLoc({loc, op.getLoc()}), op.getType(),
        gemm.getA(), newB, newC, rewriter.getF32FloatAttr(1.0f),
        rewriter.getF32FloatAttr(1.0f), gemm.getTransAAttr(),
        gemm.getTransBAttr());
    rewriter.replaceOp(op, folded.getResult());
    rewriter.eraseOp(gemm);
    return success();
  }
};

/// `conv * c` and `conv + c` for a constant `c` with one value per output
/// channel (or a single value). Not where the result is rounded (a
/// requantisation: the convolution of integers, then the scale): folded,
/// the scale would round inside every product, and a value near a tie
/// could round the other way.
template <typename OpTy>
struct FoldChannelConstantIntoConv : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (llvm::any_of(op->getUsers(),
                     [](Operation *user) { return isa<RoundOp>(user); }))
      return rewriter.notifyMatchFailure(op, "its result is rounded");
    auto resultType = cast<RankedTensorType>(op.getType());
    for (int operand = 0; operand < 2; ++operand) {
      ConvOp conv = getFoldableConv(op->getOperand(operand), op.getResult());
      ConvTransposeOp transposed =
          conv ? nullptr
               : getFoldableConvTranspose(op->getOperand(operand),
                                          op.getResult());
      Operation *producer = conv ? conv.getOperation() : transposed;
      if (!producer || producer->getResult(0).getType() != resultType)
        continue;
      int64_t filters = conv ? conv.getWeight().getType().getDimSize(0)
                             : transposedFilters(transposed);
      std::optional<SmallVector<double>> values = getPerChannelValues(
          op->getOperand(1 - operand), resultType.getRank(), 1, filters);
      if (!values)
        continue;
      ChannelAffine affine;
      if constexpr (std::is_same_v<OpTy, MulOp>) {
        affine.scale = std::move(*values);
        affine.shift.assign(filters, 0.0);
      } else {
        affine.scale.assign(filters, 1.0);
        affine.shift = std::move(*values);
      }
      if (conv)
        return foldIntoConv(rewriter, conv, op, affine);
      return foldIntoConvTranspose(rewriter, transposed, op, affine);
    }
    return rewriter.notifyMatchFailure(
        op, "not a convolution and a constant of one value per channel");
  }
};

struct GraphFoldBatchNormPass
    : impl::GraphFoldBatchNormBase<GraphFoldBatchNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFoldBatchNormPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateFoldBatchNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldBatchNormIntoConv, FoldBatchNormIntoConvTranspose,
               FoldBatchNormIntoGemm, FoldChannelConstantIntoConv<MulOp>,
               FoldChannelConstantIntoConv<AddOp>>(patterns.getContext());
}

} // namespace kiln::graph
