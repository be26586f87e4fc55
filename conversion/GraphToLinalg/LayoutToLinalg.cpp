//===- LayoutToLinalg.cpp - Lowering of the blocked-layout ops ------------===//
//
// The type converter drops the #graph.blocked encoding: the 5-D shape
// N x C1 x H x W x c carries the layout from here on. Conversions are a pad
// or slice of the channels, a reshape and a transpose. A blocked convolution
// is one linalg.generic, tagged `kiln.blocked_conv`:
//   out[n, ko, oh, ow, o] += in[n, ci, oh * s + y * d, ow * s + x * d, i]
//                            * w[ko, ci, y, x, i, o]
// which kiln-cpu-lower-blocked-conv (codegen/CPU/LowerBlockedConv.cpp)
// expands by the algorithm chosen for the layer: a direct convolution (one
// register-blocked contraction per window position) or Winograd.
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;

namespace kiln {
namespace {

/// Pads the H and W dimensions (2 and 3) of a 5-D tensor with `padValue`.
Value padSpatial(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> low,
                 ArrayRef<int64_t> high, Value padValue) {
  return padTensor(b, loc, value, {0, 0, low[0], low[1], 0},
                   {0, 0, high[0], high[1], 0}, padValue);
}

struct ToBlockedLowering : OpConversionPattern<graph::ToBlockedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::ToBlockedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    if (!getTensorType(input).hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    ArrayRef<int64_t> shape = getTensorType(input).getShape();
    int64_t blocks = resultType.getDimSize(1), c = resultType.getDimSize(4);
    Type element = resultType.getElementType();
    // Channels padded with zeros to blocks * c.
    if (blocks * c != shape[1]) {
      SmallVector<int64_t> low = {0, 0, 0, 0};
      SmallVector<int64_t> high = {0, blocks * c - shape[1], 0, 0};
      input = tensor::PadOp::create(
          rewriter, loc,
          RankedTensorType::get({shape[0], blocks * c, shape[2], shape[3]},
                                element),
          input, getAsIndexOpFoldResult(rewriter.getContext(), low),
          getAsIndexOpFoldResult(rewriter.getContext(), high),
          createScalarConstant(rewriter, loc, element, 0.0));
    }
    // [N, C1 * c, H, W] -> [N, C1, c, H, W] -> [N, C1, H, W, c].
    Value split = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({shape[0], blocks, c, shape[2], shape[3]},
                              element),
        input, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    Value init =
        tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), element);
    rewriter.replaceOp(
        op, linalg::TransposeOp::create(rewriter, loc, split, init,
                                        ArrayRef<int64_t>{0, 1, 3, 4, 2})
                .getResult()[0]);
    return success();
  }
};

struct FromBlockedLowering : OpConversionPattern<graph::FromBlockedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::FromBlockedOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    if (!getTensorType(input).hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    ArrayRef<int64_t> shape = getTensorType(input).getShape();
    Type element = resultType.getElementType();
    // [N, C1, H, W, c] -> [N, C1, c, H, W] -> [N, C1 * c, H, W] -> [N, C, H,
    // W].
    Value init = tensor::EmptyOp::create(
        rewriter, loc,
        ArrayRef<int64_t>{shape[0], shape[1], shape[4], shape[2], shape[3]},
        element);
    Value moved = linalg::TransposeOp::create(rewriter, loc, input, init,
                                              ArrayRef<int64_t>{0, 1, 4, 2, 3})
                      .getResult()[0];
    Value joined = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get(
            {shape[0], shape[1] * shape[4], shape[2], shape[3]}, element),
        moved, SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    if (resultType.getDimSize(1) == shape[1] * shape[4]) {
      rewriter.replaceOp(op, joined);
      return success();
    }
    SmallVector<OpFoldResult> offsets(4, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(rewriter.getContext(), resultType.getShape());
    SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, resultType, joined, offsets, sizes, strides);
    return success();
  }
};

/// The bias [K1, c] broadcast to `type` [N, K1, OH, OW, c], or zeros.
Value createBlockedConvInit(OpBuilder &b, Location loc, RankedTensorType type,
                            Value bias) {
  if (!bias)
    return createFilled(b, loc, type,
                        createScalarConstant(b, loc, type.getElementType(), 0));
  MLIRContext *ctx = b.getContext();
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {AffineMap::get(5, 0, {d(1), d(4)}, ctx),
                                 AffineMap::getMultiDimIdentityMap(5, ctx)};
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, bias, empty, maps, getIterators(5, 0),
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

struct BlockedConvLowering : OpConversionPattern<graph::BlockedConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::BlockedConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    Value weight = adaptor.getWeight();
    if (!getTensorType(input).hasStaticShape() ||
        !getTensorType(weight).hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    if (!resultType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "computes in f32 only");
    Type element = resultType.getElementType();
    ArrayRef<int64_t> pads = op.getPads();
    ArrayRef<int64_t> strides = op.getStrides();
    ArrayRef<int64_t> dilations = op.getDilations();
    input =
        padSpatial(rewriter, loc, input, pads.take_front(2), pads.drop_front(2),
                   createScalarConstant(rewriter, loc, element, 0.0));
    Value init =
        createBlockedConvInit(rewriter, loc, resultType, adaptor.getBias());

    // One contraction over the channel blocks and the window, tagged for
    // kiln-cpu-lower-blocked-conv, which expands it by the algorithm that
    // kiln-cpu-select-conv-algorithm chose (one contraction per window
    // position, or Winograd). Untouched, it is a correct loop nest.
    // d0 n, d1 ko, d2 oh, d3 ow, d4 o | d5 ci, d6 y, d7 x, d8 i.
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineMap> maps = {
        AffineMap::get(9, 0,
                       {d(0), d(5), d(2) * strides[0] + d(6) * dilations[0],
                        d(3) * strides[1] + d(7) * dilations[1], d(8)},
                       ctx),
        AffineMap::get(9, 0, {d(1), d(5), d(6), d(7), d(8), d(4)}, ctx),
        AffineMap::get(9, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
    auto conv = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, ValueRange{input, weight}, init,
        maps, getIterators(5, 4),
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
          linalg::YieldOp::create(
              nb, nloc,
              ValueRange{arith::AddFOp::create(nb, nloc, args[2], product)});
        });
    conv->setAttr(
        kBlockedConvAttr,
        rewriter.getDictionaryAttr(
            {rewriter.getNamedAttr("strides",
                                   rewriter.getDenseI64ArrayAttr(strides)),
             rewriter.getNamedAttr("dilations",
                                   rewriter.getDenseI64ArrayAttr(dilations))}));

    Value residual = adaptor.getResidual();
    graph::Activation activation = op.getActivation();
    if (!residual && activation == graph::Activation::None) {
      rewriter.replaceOp(op, conv.getResult(0));
      return success();
    }
    SmallVector<Value> operands = {conv.getResult(0)};
    if (residual)
      operands.push_back(residual);
    ArrayRef<float> params = op.getActivationParams();
    rewriter.replaceOp(
        op, buildBroadcastElementwise(
                rewriter, loc, resultType, operands,
                [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
                  Value x = args[0];
                  if (args.size() > 1)
                    x = arith::AddFOp::create(nb, nloc, x, args[1]);
                  return buildActivation(nb, nloc, activation, params, x);
                }));
    return success();
  }
};

struct BlockedMaxPoolLowering : OpConversionPattern<graph::BlockedMaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::BlockedMaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    RankedTensorType inputType = getTensorType(input);
    if (!inputType.hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    auto element = dyn_cast<FloatType>(resultType.getElementType());
    if (!element)
      return rewriter.notifyMatchFailure(op, "pools floats only");
    ArrayRef<int64_t> kernel = op.getKernelShape();
    ArrayRef<int64_t> strides = op.getStrides();
    ArrayRef<int64_t> dilations = op.getDilations();
    ArrayRef<int64_t> pads = op.getPads();
    // End pads extended so that every ceil-mode window lies inside.
    SmallVector<int64_t> low, high;
    for (int i = 0; i < 2; ++i) {
      int64_t needed = (resultType.getDimSize(2 + i) - 1) * strides[i] +
                       dilations[i] * (kernel[i] - 1) + 1;
      int64_t have = inputType.getDimSize(2 + i) + pads[i] + pads[2 + i];
      low.push_back(pads[i]);
      high.push_back(pads[2 + i] + std::max<int64_t>(needed - have, 0));
    }
    Value lowest = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getFloatAttr(element,
                              APFloat::getInf(element.getFloatSemantics(),
                                              /*Negative=*/true)));
    input = padSpatial(rewriter, loc, input, low, high, lowest);
    Value init = createFilled(rewriter, loc, resultType, lowest);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, element);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // d0 n, d1 cb, d2 oh, d3 ow, d4 i | d5 y, d6 x.
    SmallVector<AffineMap> maps = {
        AffineMap::get(7, 0,
                       {d(0), d(1), d(2) * strides[0] + d(5) * dilations[0],
                        d(3) * strides[1] + d(6) * dilations[1], d(4)},
                       ctx),
        AffineMap::get(7, 0, {d(5), d(6)}, ctx),
        AffineMap::get(7, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
    rewriter.replaceOp(
        op, linalg::GenericOp::create(
                rewriter, loc, TypeRange{resultType}, ValueRange{input, window},
                init, maps, getIterators(5, 2),
                [](OpBuilder &nb, Location nloc, ValueRange args) {
                  linalg::YieldOp::create(nb, nloc,
                                          ValueRange{arith::MaximumFOp::create(
                                              nb, nloc, args[0], args[2])});
                })
                .getResult(0));
    return success();
  }
};

} // namespace

void populateLayoutToLinalgPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ToBlockedLowering, FromBlockedLowering, BlockedConvLowering,
               BlockedMaxPoolLowering>(converter, patterns.getContext());
}

} // namespace kiln
