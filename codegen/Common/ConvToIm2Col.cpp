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

struct Conv2DNchwFchwToIm2Col : OpRewritePattern<linalg::Conv2DNchwFchwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv2DNchwFchwOp conv,
                                PatternRewriter &rewriter) const override {
    if (!conv.hasPureTensorSemantics())
      return rewriter.notifyMatchFailure(conv, "expects tensors");
    if (std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(conv);
        algorithm && *algorithm != ConvAlgorithm::Im2Col)
      return rewriter.notifyMatchFailure(conv, "another algorithm");
    auto inputType = dyn_cast<RankedTensorType>(conv.getInputs()[0].getType());
    auto filterType = dyn_cast<RankedTensorType>(conv.getInputs()[1].getType());
    auto outputType =
        dyn_cast<RankedTensorType>(conv.getOutputs()[0].getType());
    if (!inputType || !filterType || !outputType ||
        !inputType.hasStaticShape() || !filterType.hasStaticShape() ||
        !outputType.hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "expects static shapes");
    Type elementType = outputType.getElementType();
    if (inputType.getElementType() != elementType ||
        filterType.getElementType() != elementType)
      return rewriter.notifyMatchFailure(conv, "mixed element types");

    Location loc = conv.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t n = inputType.getDimSize(0), c = inputType.getDimSize(1);
    int64_t f = filterType.getDimSize(0), kh = filterType.getDimSize(2),
            kw = filterType.getDimSize(3);
    int64_t oh = outputType.getDimSize(2), ow = outputType.getDimSize(3);
    SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
    int64_t k = c * kh * kw, p = oh * ow;

    Value input = conv.getInputs()[0];
    Value columns;
    bool pointwise = kh == 1 && kw == 1 && strides[0] == 1 && strides[1] == 1 &&
                     inputType.getDimSize(2) == oh &&
                     inputType.getDimSize(3) == ow;
    if (pointwise) {
      // The input is already [N, C, H*W].
      columns = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({n, k, p}, elementType), input,
          SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    } else {
      // columns[n, c, i, j, y, x] = input[n, c, y*sh + i*dh, x*sw + j*dw]
      auto columnsType =
          RankedTensorType::get({n, c, kh, kw, oh, ow}, elementType);
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, columnsType.getShape(), elementType);
      AffineExpr dn, dc, di, dj, dy, dx;
      bindDims(ctx, dn, dc, di, dj, dy, dx);
      AffineMap inputMap =
          AffineMap::get(6, 0,
                         {dn, dc, dy * strides[0] + di * dilations[0],
                          dx * strides[1] + dj * dilations[1]},
                         ctx);
      SmallVector<AffineMap> maps = {inputMap,
                                     rewriter.getMultiDimIdentityMap(6)};
      SmallVector<utils::IteratorType> iterators(6,
                                                 utils::IteratorType::parallel);
      Value copied = linalg::GenericOp::create(
                         rewriter, loc, columnsType, ValueRange{input},
                         ValueRange{empty}, maps, iterators,
                         [](OpBuilder &b, Location nestedLoc, ValueRange args) {
                           linalg::YieldOp::create(b, nestedLoc, args[0]);
                         })
                         .getResult(0);
      columns = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({n, k, p}, elementType), copied,
          SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5}});
    }

    Value filter = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({f, k}, elementType),
        conv.getInputs()[1], SmallVector<ReassociationIndices>{{0}, {1, 2, 3}});
    auto resultType = RankedTensorType::get({n, f, p}, elementType);
    Value init = tensor::CollapseShapeOp::create(
        rewriter, loc, resultType, conv.getOutputs()[0],
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});

    // result[n, f, p] += filter[f, k] * columns[n, k, p]
    AffineExpr en, ef, ep, ek;
    bindDims(ctx, en, ef, ep, ek);
    SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {ef, ek}, ctx),
                                   AffineMap::get(4, 0, {en, ek, ep}, ctx),
                                   AffineMap::get(4, 0, {en, ef, ep}, ctx)};
    SmallVector<utils::IteratorType> iterators = {
        utils::IteratorType::parallel, utils::IteratorType::parallel,
        utils::IteratorType::parallel, utils::IteratorType::reduction};
    auto contraction = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{filter, columns},
        ValueRange{init}, maps, iterators,
        [](OpBuilder &b, Location nestedLoc, ValueRange args) {
          Value mul = arith::MulFOp::create(b, nestedLoc, args[0], args[1]);
          Value add = arith::AddFOp::create(b, nestedLoc, mul, args[2]);
          linalg::YieldOp::create(b, nestedLoc, add);
        });
    // The convolution's register-blocking knobs steer its contraction.
    copyKernelConfig(conv, contraction);
    Value product = contraction.getResult(0);
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        conv, outputType, product,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    return success();
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
  patterns.add<Conv2DNchwFchwToIm2Col>(patterns.getContext());
}

} // namespace kiln::codegen
