//===- ConvToIm2Col.cpp - Convolutions as im2col and a contraction --------===//
//
// The im2col rewrite (K. Chellapilla, S. Puri, P. Simard, "High Performance
// Convolutional Neural Networks for Document Processing", 2006) trades a copy
// of the input, one column per output pixel and one row per filter tap, for a
// convolution that becomes one large contraction.
//
// Kiln's version for NCHW keeps the output pixels as two dimensions while it
// copies, so that the copy's innermost loop runs along an input row (unit
// stride for stride-1 convolutions) instead of computing a division and a
// remainder per element; the [C*KH*KW, OH*OW] matrix is then a free reshape.
// A 1x1 convolution with stride 1 needs no copy at all: the input already is
// that matrix. Extending it: other layouts (NHWC, NCHWc) need their own
// copy maps; the contraction side stays the same.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/KernelConfig.h"
#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENCONVTOIM2COL
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// Whether im2col applies to `conv`: tensors of one element type and static
/// shapes, and no other algorithm chosen for it.
LogicalResult checkIm2Col(linalg::LinalgOp conv, PatternRewriter &rewriter) {
  if (!conv.hasPureTensorSemantics())
    return rewriter.notifyMatchFailure(conv, "expects tensors");
  if (std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(conv);
      algorithm && *algorithm != ConvAlgorithm::Im2Col)
    return rewriter.notifyMatchFailure(conv, "another algorithm");
  Type elementType;
  for (Value value : conv->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "expects static shapes");
    if (elementType && type.getElementType() != elementType)
      return rewriter.notifyMatchFailure(conv, "mixed element types");
    elementType = type.getElementType();
  }
  return success();
}

/// Replaces `conv` by the contraction
///   result[n, (g,) f, p] += filter[(g,) f, k] * columns[n, (g,) k, p]
/// into `init` (the output collapsed to `resultType` by `outputGroups`),
/// expanded back to the output's shape.
void replaceByContraction(PatternRewriter &rewriter, linalg::LinalgOp conv,
                          Value filter, Value columns, Value init,
                          RankedTensorType resultType,
                          ArrayRef<ReassociationIndices> outputGroups,
                          bool grouped) {
  MLIRContext *ctx = rewriter.getContext();
  int g = grouped ? 1 : 0;
  int loops = 4 + g;
  AffineExpr en = getAffineDimExpr(0, ctx), eg = getAffineDimExpr(1, ctx),
             ef = getAffineDimExpr(1 + g, ctx),
             ep = getAffineDimExpr(2 + g, ctx),
             ek = getAffineDimExpr(3 + g, ctx);
  SmallVector<AffineMap> maps =
      grouped
          ? SmallVector<AffineMap>{AffineMap::get(loops, 0, {eg, ef, ek}, ctx),
                                   AffineMap::get(loops, 0, {en, eg, ek, ep},
                                                  ctx),
                                   AffineMap::get(loops, 0, {en, eg, ef, ep},
                                                  ctx)}
          : SmallVector<AffineMap>{AffineMap::get(loops, 0, {ef, ek}, ctx),
                                   AffineMap::get(loops, 0, {en, ek, ep}, ctx),
                                   AffineMap::get(loops, 0, {en, ef, ep}, ctx)};
  SmallVector<utils::IteratorType> iterators(loops - 1,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);
  auto contraction = linalg::GenericOp::create(
      rewriter, conv.getLoc(), resultType, ValueRange{filter, columns},
      ValueRange{init}, maps, iterators,
      [](OpBuilder &b, Location nestedLoc, ValueRange args) {
        Value mul = arith::MulFOp::create(b, nestedLoc, args[0], args[1]);
        Value add = arith::AddFOp::create(b, nestedLoc, mul, args[2]);
        linalg::YieldOp::create(b, nestedLoc, add);
      });
  // The convolution's register-blocking knobs steer its contraction.
  copyKernelConfig(conv, contraction);
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
      conv, conv->getResult(0).getType(), contraction.getResult(0),
      outputGroups);
}

/// The im2col copy: a tensor of `columnsType` (the window positions, then
/// the output positions) whose element at every index is `input` read
/// through `inputExprs` of those indices.
Value copyWindows(PatternRewriter &rewriter, Location loc, Value input,
                  RankedTensorType columnsType,
                  ArrayRef<AffineExpr> inputExprs) {
  int64_t rank = columnsType.getRank();
  Value empty = tensor::EmptyOp::create(rewriter, loc, columnsType.getShape(),
                                        columnsType.getElementType());
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, inputExprs, rewriter.getContext()),
      rewriter.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             rewriter, loc, columnsType, ValueRange{input}, ValueRange{empty},
             maps, iterators,
             [](OpBuilder &b, Location nestedLoc, ValueRange args) {
               linalg::YieldOp::create(b, nestedLoc, args[0]);
             })
      .getResult(0);
}

/// Rewrites `conv`, a 2-D NCHW convolution, as an im2col copy and a
/// contraction. With `grouped` it is `linalg.conv_2d_ngchw_gfchw` (input
/// [N, G, C, H, W], filter [G, F, C, KH, KW], output [N, G, F, OH, OW]), and
/// every tensor keeps the group dimension after N (the filter's first),
/// which the contraction has as a batch loop; else
/// `linalg.conv_2d_nchw_fchw`.
LogicalResult rewriteAsIm2Col(linalg::LinalgOp conv, ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> dilations, bool grouped,
                              PatternRewriter &rewriter) {
  if (failed(checkIm2Col(conv, rewriter)))
    return failure();
  Value input = conv.getDpsInputOperand(0)->get();
  Value filterValue = conv.getDpsInputOperand(1)->get();
  Value output = conv.getDpsInitOperand(0)->get();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filterValue.getType());
  auto outputType = cast<RankedTensorType>(output.getType());
  Type elementType = outputType.getElementType();

  Location loc = conv.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  // With groups, each shape has one more dimension: the group's.
  int g = grouped ? 1 : 0;
  int64_t n = inputType.getDimSize(0), c = inputType.getDimSize(1 + g);
  int64_t groups = grouped ? inputType.getDimSize(1) : 1;
  int64_t f = filterType.getDimSize(g), kh = filterType.getDimSize(2 + g),
          kw = filterType.getDimSize(3 + g);
  int64_t oh = outputType.getDimSize(2 + g), ow = outputType.getDimSize(3 + g);
  int64_t k = c * kh * kw, p = oh * ow;
  auto withGroups = [&](SmallVector<int64_t> shape, int at) {
    if (grouped)
      shape.insert(shape.begin() + at, groups);
    return shape;
  };
  // Reassociations over the shapes with the group's dimension, given those
  // without it (whose group-free indices shift by one after `at`).
  auto regroup = [&](SmallVector<ReassociationIndices> groupsFree, int at) {
    if (!grouped)
      return groupsFree;
    SmallVector<ReassociationIndices> result;
    for (auto [i, indices] : llvm::enumerate(groupsFree)) {
      if (int(i) == at)
        result.push_back({at});
      ReassociationIndices shifted;
      for (int64_t index : indices)
        shifted.push_back(index >= at ? index + 1 : index);
      result.push_back(shifted);
    }
    return result;
  };

  Value columns;
  bool pointwise = kh == 1 && kw == 1 && strides[0] == 1 && strides[1] == 1 &&
                   inputType.getDimSize(2 + g) == oh &&
                   inputType.getDimSize(3 + g) == ow;
  if (pointwise) {
    // The input is already [N, (G,) C, H*W].
    columns = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get(withGroups({n, k, p}, 1), elementType), input,
        regroup({{0}, {1}, {2, 3}}, 1));
  } else {
    // columns[n, (g,) c, i, j, y, x] =
    //     input[n, (g,) c, y*sh + i*dh, x*sw + j*dw]
    auto columnsType = RankedTensorType::get(
        withGroups({n, c, kh, kw, oh, ow}, 1), elementType);
    int rank = 6 + g;
    SmallVector<AffineExpr> d;
    for (int i = 0; i < rank; ++i)
      d.push_back(getAffineDimExpr(i, ctx));
    // Without groups: n c i j y x; with: n g c i j y x.
    AffineExpr dn = d[0], di = d[2 + g], dj = d[3 + g], dy = d[4 + g],
               dx = d[5 + g];
    SmallVector<AffineExpr> inputExprs = {dn};
    if (grouped)
      inputExprs.push_back(d[1]);
    inputExprs.push_back(d[1 + g]);
    inputExprs.push_back(dy * strides[0] + di * dilations[0]);
    inputExprs.push_back(dx * strides[1] + dj * dilations[1]);
    Value copied = copyWindows(rewriter, loc, input, columnsType, inputExprs);
    columns = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get(withGroups({n, k, p}, 1), elementType), copied,
        regroup({{0}, {1, 2, 3}, {4, 5}}, 1));
  }

  Value filter = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get(withGroups({f, k}, 0), elementType),
      filterValue, regroup({{0}, {1, 2, 3}}, 0));
  auto resultType =
      RankedTensorType::get(withGroups({n, f, p}, 1), elementType);
  Value init = tensor::CollapseShapeOp::create(
      rewriter, loc, resultType, output, regroup({{0}, {1}, {2, 3}}, 1));

  replaceByContraction(rewriter, conv, filter, columns, init, resultType,
                       regroup({{0}, {1}, {2, 3}}, 1), grouped);
  return success();
}

/// A 3-D NCDHW convolution (video models' R3D, MC3, R(2+1)D) as an im2col
/// copy `[N, C, KD, KH, KW, OD, OH, OW]` and the same contraction as the
/// 2-D case over `[N, C*KD*KH*KW, OD*OH*OW]`. Without it, 3-D convolutions
/// ran as scalar loops (R3D-18's stem at 2.7 GFLOP/s).
struct Conv3DNcdhwFcdhwToIm2Col : OpRewritePattern<linalg::Conv3DNcdhwFcdhwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv3DNcdhwFcdhwOp conv,
                                PatternRewriter &rewriter) const override {
    if (failed(checkIm2Col(conv, rewriter)))
      return failure();
    Value input = conv.getInputs()[0], filterValue = conv.getInputs()[1],
          output = conv.getOutputs()[0];
    auto inputType = cast<RankedTensorType>(input.getType());
    auto filterType = cast<RankedTensorType>(filterValue.getType());
    auto outputType = cast<RankedTensorType>(output.getType());
    Type elementType = outputType.getElementType();
    SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());

    Location loc = conv.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    constexpr int s = 3; // spatial dimensions
    int64_t n = inputType.getDimSize(0), c = inputType.getDimSize(1);
    int64_t f = filterType.getDimSize(0);
    int64_t taps = 1, pixels = 1;
    bool pointwise = true;
    for (int i = 0; i < s; ++i) {
      taps *= filterType.getDimSize(2 + i);
      pixels *= outputType.getDimSize(2 + i);
      pointwise &= filterType.getDimSize(2 + i) == 1 && strides[i] == 1 &&
                   inputType.getDimSize(2 + i) == outputType.getDimSize(2 + i);
    }
    int64_t k = c * taps;
    Value columns;
    if (pointwise) {
      columns = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({n, k, pixels}, elementType),
          input, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3, 4}});
    } else {
      // columns[n, c, kd, kh, kw, od, oh, ow] =
      //     input[n, c, od*sd + kd*dd, oh*sh + kh*dh, ow*sw + kw*dw]
      SmallVector<int64_t> shape = {n, c};
      for (int i = 0; i < s; ++i)
        shape.push_back(filterType.getDimSize(2 + i));
      for (int i = 0; i < s; ++i)
        shape.push_back(outputType.getDimSize(2 + i));
      auto columnsType = RankedTensorType::get(shape, elementType);
      SmallVector<AffineExpr> exprs = {getAffineDimExpr(0, ctx),
                                       getAffineDimExpr(1, ctx)};
      for (int i = 0; i < s; ++i)
        exprs.push_back(getAffineDimExpr(2 + s + i, ctx) * strides[i] +
                        getAffineDimExpr(2 + i, ctx) * dilations[i]);
      Value copied = copyWindows(rewriter, loc, input, columnsType, exprs);
      columns = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({n, k, pixels}, elementType),
          copied,
          SmallVector<ReassociationIndices>{{0}, {1, 2, 3, 4}, {5, 6, 7}});
    }
    Value filter = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({f, k}, elementType), filterValue,
        SmallVector<ReassociationIndices>{{0}, {1, 2, 3, 4}});
    auto resultType = RankedTensorType::get({n, f, pixels}, elementType);
    SmallVector<ReassociationIndices> outputGroups = {{0}, {1}, {2, 3, 4}};
    Value init = tensor::CollapseShapeOp::create(rewriter, loc, resultType,
                                                 output, outputGroups);
    replaceByContraction(rewriter, conv, filter, columns, init, resultType,
                         outputGroups, /*grouped=*/false);
    return success();
  }
};

struct Conv2DNchwFchwToIm2Col : OpRewritePattern<linalg::Conv2DNchwFchwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv2DNchwFchwOp conv,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
    return rewriteAsIm2Col(conv, strides, dilations, /*grouped=*/false,
                           rewriter);
  }
};

/// A grouped convolution (not a depthwise one, which has an op and a path
/// of its own): ShuffleNet's 1x1 convolutions in four groups ran as scalar
/// loops at 16 to 60 GFLOP/s.
struct Conv2DNgchwGfchwToIm2Col : OpRewritePattern<linalg::Conv2DNgchwGfchwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv2DNgchwGfchwOp conv,
                                PatternRewriter &rewriter) const override {
    SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
    return rewriteAsIm2Col(conv, strides, dilations, /*grouped=*/true,
                           rewriter);
  }
};

struct CodegenConvToIm2ColPass
    : impl::CodegenConvToIm2ColBase<CodegenConvToIm2ColPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateConvToIm2ColPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateConvToIm2ColPatterns(RewritePatternSet &patterns) {
  patterns.add<Conv2DNchwFchwToIm2Col, Conv2DNgchwGfchwToIm2Col,
               Conv3DNcdhwFcdhwToIm2Col>(patterns.getContext());
}

} // namespace kiln::codegen
