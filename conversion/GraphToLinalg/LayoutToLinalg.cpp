//===- LayoutToLinalg.cpp - Lowering of the blocked-layout ops ------------===//
//
// The type converter drops the #graph.blocked encoding: the 5-D shape
// N x C1 x H x W x c carries the layout from here on. Conversions are a pad
// or slice of the channels, a reshape and a transpose. A blocked convolution
// is one linalg.generic, tagged `kiln.blocked_conv`:
//   out[n, ko, oh, ow, o] += in[n, ci, oh * s + y * d, ow * s + x * d, i]
//                            * w[ko, ci, y, x, i, o]
// which the CPU passes compute by the algorithm chosen for the layer:
// Winograd (kiln-codegen-conv-to-winograd) or direct, register-blocked as it is
// (kiln-cpu-tile-and-vectorize). A convolution marked `kiln.integer_input`
// or `kiln.bf16` (kiln-graph-mark-integer-contractions) is computed in 8-bit
// integers or bf16 instead, its input block split into groups of four or two
// channels (see buildPackedBlockedConv).
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"
#include "conversion/GraphToLinalg/PackedForm.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/ConstantValues.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>
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

/// The input of a blocked convolution (one-group or depthwise) padded on H
/// and W by its `pads` with `padValue` (zeros by default), after checking
/// that the shapes are static and the result f32.
template <typename ConvOp>
FailureOr<Value>
padConvInput(ConversionPatternRewriter &rewriter, ConvOp op, Value input,
             Value weight, RankedTensorType resultType, Value padValue = {}) {
  if (!getTensorType(input).hasStaticShape() ||
      !getTensorType(weight).hasStaticShape() || !resultType.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "needs static shapes");
  if (!resultType.getElementType().isF32())
    return rewriter.notifyMatchFailure(op, "computes in f32 only");
  ArrayRef<int64_t> pads = op.getPads();
  if (!padValue)
    padValue = createScalarConstant(rewriter, op.getLoc(),
                                    resultType.getElementType(), 0.0);
  return padSpatial(rewriter, op.getLoc(), input, pads.take_front(2),
                    pads.drop_front(2), padValue);
}

/// A blocked convolution marked for a packed form (PackedForm: 8-bit
/// integers, or bf16): the input converted (bytes x - low, padded with the
/// byte of a 0; or bf16), the weight in the element type with each output
/// lane's group of input channels in a row ([K1, C1, kh, kw, ci/g, c, g]),
/// the accumulators starting from the bias (plus, for int8, low times each
/// filter's sum: what the shift took away), and the reduction over the
/// input block split into groups, innermost in both operands:
///
///   acc[n, ko, oh, ow, o] += ext(in[n, ci, oh*s + y*d, ow*s + x*d, ig, j])
///                            * ext(w[ko, ci, y, x, ig, o, j])
///
/// the shape of the dot-product instructions, tagged `kiln.blocked_conv`
/// like the f32 form. Returns the accumulators, or failure when the weight
/// or bias is not what the mark promises.
FailureOr<Value> buildPackedBlockedConv(ConversionPatternRewriter &rewriter,
                                        graph::BlockedConvOp op, Value input,
                                        const PackedForm &form) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  std::optional<SmallVector<double>> weights =
      graph::getFloatElements(op.getWeight());
  RankedTensorType weightType = op.getWeight().getType();
  RankedTensorType inputType = getTensorType(input);
  if (!weights || !weightType.hasStaticShape() || !inputType.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "no constant weight");
  if (!form.holds(*weights))
    return rewriter.notifyMatchFailure(op, "weights are not 8-bit integers");
  std::optional<SmallVector<double>> bias;
  if (op.getBias()) {
    bias = graph::getFloatElements(op.getBias());
    if (!bias || (form.isInteger() && llvm::any_of(*bias, [](double b) {
                    return b != std::nearbyint(b) ||
                           std::abs(b) > double(1 << 30);
                  })))
      return rewriter.notifyMatchFailure(op, "bias is not integers");
  }
  ArrayRef<int64_t> w = weightType.getShape(); // K1 C1 kh kw ci c
  int64_t blocks = w[0], block = w[5], depth = w[4];
  int64_t perFilter = w[1] * w[2] * w[3] * depth;
  // The input block in whole groups: an image's 3 channels get a fourth
  // (int8) of zero weights.
  int64_t group = form.group;
  int64_t groups = (depth + group - 1) / group;

  // The weight as [K1, C1, kh, kw, groups, c, group], and the
  // accumulators' start per output channel.
  SmallVector<double> packed(
      blocks * (perFilter / depth) * groups * block * group, 0.0);
  SmallVector<double> start(blocks * block, 0.0);
  for (int64_t k = 0; k < blocks; ++k)
    for (int64_t r = 0; r < perFilter; ++r) {
      int64_t i = r % depth, outer = r / depth; // outer: (c1, y, x)
      for (int64_t o = 0; o < block; ++o) {
        double value = (*weights)[((k * perFilter) + r) * block + o];
        int64_t to =
            (((k * perFilter / depth + outer) * groups + i / group) * block +
             o) *
                group +
            i % group;
        packed[to] = value;
        start[k * block + o] += value * form.low;
      }
    }
  if (bias)
    for (int64_t c = 0; c < blocks * block; ++c)
      start[c] += (*bias)[c];
  Value weight = form.constant(
      rewriter, loc, {w[0], w[1], w[2], w[3], groups, block, group}, packed);
  Value startValue = form.start(rewriter, loc, {blocks, block}, start);

  // The input converted, padded with the element of a 0 (around the image,
  // and up to whole groups of channels).
  Value converted = form.convertInput(rewriter, loc, input);
  ArrayRef<int64_t> pads = op.getPads();
  Value padded =
      padTensor(rewriter, loc, converted, {0, 0, pads[0], pads[1], 0},
                {0, 0, pads[2], pads[3], groups * group - depth},
                form.zero(rewriter, loc));
  SmallVector<int64_t> groupedShape(getTensorType(padded).getShape());
  groupedShape.back() = groups;
  groupedShape.push_back(group);
  Value grouped = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get(groupedShape, form.element), padded,
      SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3}, {4, 5}});

  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  auto accType = RankedTensorType::get(resultType.getShape(), form.acc);
  Value init = createBlockedConvInit(rewriter, loc, accType, startValue);
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  // d0 n, d1 ko, d2 oh, d3 ow, d4 o | d5 ci, d6 y, d7 x, d8 ig, d9 j.
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineExpr inputBlock =
      blockedConvInputBlock(d(1), d(5), inputType.getDimSize(1), w[1], w[0]);
  SmallVector<AffineMap> maps = {
      AffineMap::get(10, 0,
                     {d(0), inputBlock, d(2) * strides[0] + d(6) * dilations[0],
                      d(3) * strides[1] + d(7) * dilations[1], d(8), d(9)},
                     ctx),
      AffineMap::get(10, 0, {d(1), d(5), d(6), d(7), d(8), d(4), d(9)}, ctx),
      AffineMap::get(10, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  auto conv = linalg::GenericOp::create(
      rewriter, loc, TypeRange{accType}, ValueRange{grouped, weight}, init,
      maps, getIterators(5, 5),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        form.body(nb, nloc, args);
      });
  conv->setAttr(kBlockedConvAttr,
                BlockedConvAttr::get(ctx, strides, dilations));
  return conv.getResult(0);
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
    Value weight = adaptor.getWeight();
    if (std::optional<PackedForm> form = PackedForm::of(op, rewriter)) {
      FailureOr<Value> acc =
          buildPackedBlockedConv(rewriter, op, adaptor.getInput(), *form);
      if (failed(acc))
        return failure();
      // The accumulators as floats, then the residual and the activation.
      SmallVector<Value> operands = {*acc};
      if (Value residual = adaptor.getResidual())
        operands.push_back(residual);
      graph::Activation activation = op.getActivation();
      ArrayRef<float> params = op.getActivationParams();
      rewriter.replaceOp(
          op, buildBroadcastElementwise(
                  rewriter, loc, resultType, operands,
                  [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
                    Value x = form->toFloat(nb, nloc, args[0]);
                    if (args.size() > 1)
                      x = arith::AddFOp::create(nb, nloc, x, args[1]);
                    return buildActivation(nb, nloc, activation, params, x);
                  }));
      return success();
    }
    FailureOr<Value> padded =
        padConvInput(rewriter, op, adaptor.getInput(), weight, resultType);
    if (failed(padded))
      return failure();
    Value input = *padded;
    ArrayRef<int64_t> strides = op.getStrides();
    ArrayRef<int64_t> dilations = op.getDilations();
    Value init =
        createBlockedConvInit(rewriter, loc, resultType, adaptor.getBias());

    // One contraction over the channel blocks and the window, tagged for the
    // CPU passes, which compute it by the algorithm that
    // kiln-cpu-select-conv-algorithm chose (direct, or Winograd). Untouched,
    // it is a correct loop nest.
    // d0 n, d1 ko, d2 oh, d3 ow, d4 o | d5 ci, d6 y, d7 x, d8 i.
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    ArrayRef<int64_t> w = getTensorType(weight).getShape();
    AffineExpr inputBlock = blockedConvInputBlock(
        d(1), d(5), getTensorType(input).getDimSize(1), w[1], w[0]);
    SmallVector<AffineMap> maps = {
        AffineMap::get(9, 0,
                       {d(0), inputBlock,
                        d(2) * strides[0] + d(6) * dilations[0],
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
    conv->setAttr(kBlockedConvAttr,
                  BlockedConvAttr::get(ctx, strides, dilations));

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

/// Windows of at most this many positions are pooled by poolBySlices.
constexpr int64_t kMaxSlicedWindow = 16;

/// The kh * kw strided slices of a padded blocked `input` that the window
/// positions (y, x) read for every output position, each of `resultType`:
/// slice (y, x) starts at (y * dh, x * dw) and steps by the strides.
SmallVector<Value> windowSlices(OpBuilder &b, Location loc, Value input,
                                RankedTensorType resultType,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> slices;
  for (int64_t y = 0; y < kernel[0]; ++y)
    for (int64_t x = 0; x < kernel[1]; ++x)
      slices.push_back(tensor::ExtractSliceOp::create(
          b, loc, resultType, input,
          getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{0, 0, y * dilations[0],
                                                        x * dilations[1], 0}),
          getAsIndexOpFoldResult(ctx, resultType.getShape()),
          getAsIndexOpFoldResult(
              ctx, ArrayRef<int64_t>{1, 1, strides[0], strides[1], 1})));
  return slices;
}

/// Pools a padded blocked `input` into `resultType` with one all-parallel
/// linalg.generic whose operands are the kh * kw strided slices of the
/// input at the window positions, combined by `combine` in its body: every
/// map is a projected permutation with the contiguous block innermost, so
/// the loop vectorizes, and the output is written once. (A generic with the
/// window as reduction loops left the window innermost and ran scalar: 0.6
/// GFLOP/s, 44% of SqueezeNet's time.)
Value poolBySlices(
    OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> dilations,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> out = resultType.getShape();
  SmallVector<Value> slices =
      windowSlices(b, loc, input, resultType, kernel, strides, dilations);
  SmallVector<AffineMap> maps(slices.size() + 1,
                              AffineMap::getMultiDimIdentityMap(5, ctx));
  Value init =
      tensor::EmptyOp::create(b, loc, out, resultType.getElementType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, slices, init, maps,
             getIterators(5, 0),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value acc = args[0];
               for (Value next : args.drop_front().drop_back())
                 acc = combine(nb, nloc, acc, next);
               linalg::YieldOp::create(nb, nloc, acc);
             })
      .getResult(0);
}

/// Whether a window too large for one poolBySlices (more than
/// kMaxSlicedWindow positions) pools by rows and then by columns, each pass
/// by slices: a maximum or a sum over kh x kw is one over kh of one over kw.
/// A 5x5 max pool (YOLO's SPPF) ran through the reduction loops at 0.9
/// GFLOP/s, 44x onnxruntime's time. Not a global pool (one output
/// position), whose reduction loops keep a vector of accumulators.
bool poolsSeparably(ArrayRef<int64_t> kernel, RankedTensorType resultType) {
  return kernel[0] * kernel[1] > kMaxSlicedWindow &&
         kernel[0] <= kMaxSlicedWindow && kernel[1] <= kMaxSlicedWindow &&
         resultType.getDimSize(2) * resultType.getDimSize(3) > 1;
}

/// poolBySlices over the rows of the window (into the padded input's
/// columns), then over its columns.
Value poolSeparably(
    OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> dilations,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  SmallVector<int64_t> rowsShape(resultType.getShape());
  rowsShape[3] = getTensorType(input).getDimSize(3);
  Value rows =
      poolBySlices(b, loc, input, resultType.clone(rowsShape), {kernel[0], 1},
                   {strides[0], 1}, {dilations[0], 1}, combine);
  return poolBySlices(b, loc, rows, resultType, {1, kernel[1]}, {1, strides[1]},
                      {1, dilations[1]}, combine);
}

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
    auto maximum = [](OpBuilder &nb, Location nloc, Value a, Value b) {
      return arith::MaximumFOp::create(nb, nloc, a, b).getResult();
    };
    if (kernel[0] * kernel[1] <= kMaxSlicedWindow) {
      rewriter.replaceOp(op, poolBySlices(rewriter, loc, input, resultType,
                                          kernel, strides, dilations, maximum));
      return success();
    }
    if (poolsSeparably(kernel, resultType)) {
      rewriter.replaceOp(op,
                         poolSeparably(rewriter, loc, input, resultType, kernel,
                                       strides, dilations, maximum));
      return success();
    }
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

/// A depthwise convolution as one elementwise linalg.generic over the
/// output N x C1 x OH x OW x c whose body holds the whole window:
///   out[n, cb, oh, ow, i] = act(bias[cb, i] + residual[n, cb, oh, ow, i]
///       + sum over (y, x) of in[n, cb, oh * s + y * d, ow * s + x * d, i]
///                            * w[cb, y, x, i])
/// with one operand per window position (a strided slice of the padded
/// input, a [C1, c] slice of the weight). Every map is a projected
/// permutation with the contiguous i innermost, so the loop over i is one
/// vector of c lanes, and the output is written once with its epilogue.
/// Of the forms measured on MobileNetV2's layers (docs/passes.md), kh * kw
/// accumulating generics (one pass over the output each) and one generic
/// with (y, x) as reduction loops (and a separate epilogue pass) were both
/// slower.
struct BlockedDepthwiseConvLowering
    : OpConversionPattern<graph::BlockedDepthwiseConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::BlockedDepthwiseConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value weight = adaptor.getWeight();
    // Marked kiln.integer_input (kiln-graph-mark-integer-contractions): the
    // input is 8-bit integers less a zero point, x = byte + low, and the
    // weights int8 values. The input is read as its bytes (a quarter of
    // the f32 bytes, written so by its producer's epilogue), padded with
    // the byte of a 0, and each tap multiplies the byte in f32: exact, as
    // every product and sum is an integer below 2^24, and low times each
    // filter's sum goes into the bias.
    //
    // Only where the stride reads at least four input pixels per output
    // pixel (2 x 2): converting each tap's byte costs two instructions
    // more per vector, which at stride 1 (nine taps of one pixel each)
    // outweighed the bytes saved; MobileNetV2 QDQ's stride-2 layer
    // 112x112x96 -> 56x56 0.186 -> 0.114 ms, its stride-1 ones 30% slower.
    std::optional<PackedForm> form = PackedForm::of(op, rewriter);
    ArrayRef<int64_t> opStrides = op.getStrides();
    if (form && (!form->isInteger() || opStrides[0] * opStrides[1] < 4))
      form.reset();
    std::optional<SmallVector<double>> bytesBias;
    if (form) {
      std::optional<SmallVector<double>> weights =
          graph::getFloatElements(op.getWeight());
      if (!weights || !form->holds(*weights))
        return rewriter.notifyMatchFailure(op, "weights are not int8 values");
      ArrayRef<int64_t> shape = op.getWeight().getType().getShape();
      int64_t blocks = shape[0], taps = shape[1] * shape[2], lanes = shape[3];
      bytesBias = SmallVector<double>(blocks * lanes, 0.0);
      if (Value bias = op.getBias()) {
        std::optional<SmallVector<double>> values =
            graph::getFloatElements(bias);
        if (!values || values->size() != bytesBias->size())
          return rewriter.notifyMatchFailure(op, "bias is not a constant");
        *bytesBias = *values;
      }
      for (int64_t cb = 0; cb < blocks; ++cb)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t i = 0; i < lanes; ++i)
            (*bytesBias)[cb * lanes + i] +=
                double(form->low) * (*weights)[(cb * taps + t) * lanes + i];
      if (!op.getBias() && form->low == 0)
        bytesBias.reset();
    }
    FailureOr<Value> padded =
        form ? padConvInput(
                   rewriter, op,
                   form->convertInput(rewriter, loc, adaptor.getInput()),
                   weight, resultType, form->zero(rewriter, loc))
             : padConvInput(rewriter, op, adaptor.getInput(), weight,
                            resultType);
    if (failed(padded))
      return failure();
    Value input = *padded;
    Type element = resultType.getElementType();
    ArrayRef<int64_t> strides = op.getStrides();
    ArrayRef<int64_t> dilations = op.getDilations();
    // One input operand per window position (y, x): the input at the
    // output positions shifted by (y, x) (a strided slice), and the
    // weight's [C1, c] slice at (y, x); then the bias and the residual. The
    // body sums the window's products and applies the epilogue, so that
    // the result is written once, and every map is a projected permutation
    // with the contiguous i innermost.
    ArrayRef<int64_t> wshape = getTensorType(weight).getShape();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap identity = AffineMap::getMultiDimIdentityMap(5, ctx);
    // d0 n, d1 cb, d2 oh, d3 ow, d4 i.
    AffineMap perChannel = AffineMap::get(5, 0, {d(1), d(4)}, ctx);
    SmallVector<Value> operands =
        windowSlices(rewriter, loc, input,
                     resultType.clone(getTensorType(input).getElementType()),
                     {wshape[1], wshape[2]}, strides, dilations);
    SmallVector<AffineMap> maps(operands.size(), identity);
    for (int64_t y = 0; y < wshape[1]; ++y) {
      for (int64_t x = 0; x < wshape[2]; ++x) {
        SmallVector<OpFoldResult> offsets =
            getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{0, y, x, 0});
        SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(
            ctx, ArrayRef<int64_t>{wshape[0], 1, 1, wshape[3]});
        SmallVector<OpFoldResult> steps(4, rewriter.getIndexAttr(1));
        operands.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc,
            RankedTensorType::get({wshape[0], wshape[3]}, element), weight,
            offsets, sizes, steps));
        maps.push_back(perChannel);
      }
    }
    int64_t taps = wshape[1] * wshape[2];
    Value bias = adaptor.getBias(), residual = adaptor.getResidual();
    if (bytesBias)
      bias = arith::ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(
              RankedTensorType::get({wshape[0], wshape[3]}, element),
              ArrayRef<float>(
                  SmallVector<float>(bytesBias->begin(), bytesBias->end()))));
    if (bias) {
      operands.push_back(bias);
      maps.push_back(perChannel);
    }
    if (residual) {
      operands.push_back(residual);
      maps.push_back(identity);
    }
    maps.push_back(identity);
    Value init =
        tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), element);
    graph::Activation activation = op.getActivation();
    ArrayRef<float> params = op.getActivationParams();
    rewriter.replaceOp(
        op,
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{resultType}, operands, init, maps,
            getIterators(5, 0),
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              Value acc = bias ? args[2 * taps]
                               : createScalarConstant(nb, nloc, element, 0.0);
              for (int64_t k = 0; k < taps; ++k) {
                Value x = args[k];
                if (form)
                  x = arith::UIToFPOp::create(nb, nloc, element, x);
                acc = arith::AddFOp::create(
                    nb, nloc, acc,
                    arith::MulFOp::create(nb, nloc, x, args[taps + k]));
              }
              if (residual)
                acc = arith::AddFOp::create(nb, nloc, acc,
                                            args[2 * taps + (bias ? 1 : 0)]);
              linalg::YieldOp::create(
                  nb, nloc, buildActivation(nb, nloc, activation, params, acc));
            })
            .getResult(0));
    return success();
  }
};

/// The window sums of a zero-padded input (a reduction over the window like
/// blocked_max_pool's), divided by the number of window elements that count
/// at each output position, as graph.average_pool counts them.
struct BlockedAveragePoolLowering
    : OpConversionPattern<graph::BlockedAveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::BlockedAveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    RankedTensorType inputType = getTensorType(input);
    if (!inputType.hasStaticShape() || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    if (!resultType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "computes in f32 only");
    Type element = resultType.getElementType();
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
    input = padSpatial(rewriter, loc, input, low, high,
                       createScalarConstant(rewriter, loc, element, 0.0));
    Value sum;
    auto add = [](OpBuilder &nb, Location nloc, Value a, Value b) {
      return arith::AddFOp::create(nb, nloc, a, b).getResult();
    };
    if (kernel[0] * kernel[1] <= kMaxSlicedWindow) {
      sum = poolBySlices(rewriter, loc, input, resultType, kernel, strides,
                         dilations, add);
    } else if (poolsSeparably(kernel, resultType)) {
      sum = poolSeparably(rewriter, loc, input, resultType, kernel, strides,
                          dilations, add);
    } else {
      // A large window (a global pool): the window as reduction loops
      // outside the block's channels, so that the innermost loop reads
      // the block's c contiguous floats and adds them to c accumulators (a
      // vector). With the window innermost it summed each channel alone at
      // a stride of c: EfficientNet-B0's 112x112 squeeze-and-excitation
      // pool ran at 2 GFLOP/s.
      Value init = createFilled(rewriter, loc, resultType, 0.0);
      Value window = tensor::EmptyOp::create(rewriter, loc, kernel, element);
      auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
      // d0 n, d1 cb, d2 oh, d3 ow, d4 y (reduction), d5 x (reduction), d6 i.
      SmallVector<AffineMap> maps = {
          AffineMap::get(7, 0,
                         {d(0), d(1), d(2) * strides[0] + d(4) * dilations[0],
                          d(3) * strides[1] + d(5) * dilations[1], d(6)},
                         ctx),
          AffineMap::get(7, 0, {d(4), d(5)}, ctx),
          AffineMap::get(7, 0, {d(0), d(1), d(2), d(3), d(6)}, ctx)};
      SmallVector<utils::IteratorType> iterators = getIterators(7, 0);
      iterators[4] = iterators[5] = utils::IteratorType::reduction;
      sum = linalg::GenericOp::create(
                rewriter, loc, TypeRange{resultType}, ValueRange{input, window},
                init, maps, iterators,
                [](OpBuilder &nb, Location nloc, ValueRange args) {
                  linalg::YieldOp::create(nb, nloc,
                                          ValueRange{arith::AddFOp::create(
                                              nb, nloc, args[0], args[2])});
                })
                .getResult(0);
    }

    // Divisors: the window elements that count, per output position (oh,
    // ow), as a [OH, OW, 1] tensor that broadcasts along the blocks.
    SmallVector<double> divisors;
    SmallVector<SmallVector<int64_t>> counts;
    for (int i = 0; i < 2; ++i) {
      int64_t inSize = inputType.getDimSize(2 + i);
      int64_t begin = op.getCountIncludePad() ? -pads[i] : 0;
      int64_t end = op.getCountIncludePad() ? inSize + pads[2 + i] : inSize;
      counts.push_back(countWindowElements(resultType.getDimSize(2 + i),
                                           kernel[i], strides[i], dilations[i],
                                           pads[i], begin, end));
    }
    for (int64_t h : counts[0])
      for (int64_t w : counts[1])
        divisors.push_back(static_cast<double>(h * w));
    Value divisor;
    if (llvm::all_equal(divisors)) {
      divisor = createScalarConstant(rewriter, loc, element, divisors.front());
    } else {
      auto divisorType = RankedTensorType::get(
          {resultType.getDimSize(2), resultType.getDimSize(3), 1}, element);
      SmallVector<Attribute> values;
      for (double value : divisors)
        values.push_back(rewriter.getFloatAttr(element, value));
      divisor = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(divisorType, values));
    }
    SmallVector<Value> operands = {sum};
    if (isa<RankedTensorType>(divisor.getType()))
      operands.push_back(divisor);
    rewriter.replaceOp(
        op, buildBroadcastElementwise(
                rewriter, loc, resultType, operands,
                [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
                  return arith::DivFOp::create(
                      nb, nloc, args[0], args.size() > 1 ? args[1] : divisor);
                }));
    return success();
  }
};

} // namespace

void populateLayoutToLinalgPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns) {
  patterns.add<ToBlockedLowering, FromBlockedLowering, BlockedConvLowering,
               BlockedMaxPoolLowering>(converter, patterns.getContext());
  patterns.add<BlockedDepthwiseConvLowering, BlockedAveragePoolLowering>(
      converter, patterns.getContext());
}

} // namespace kiln
