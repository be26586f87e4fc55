//===- NNToLinalg.cpp - Lowering of the NN op family ----------------------===//
//
// Convolutions, matrix products, pooling and normalizations. Named linalg ops
// are used where one fits (convolutions without or with groups, depthwise
// convolutions, 2-D pooling, matmul, batch_matmul) and linalg.generic
// elsewhere. Padding is a tensor.pad in front of the op. 16-bit floats are
// computed in f32 and truncated at the end.
//
// The lowerings need static shapes: kiln-compile refines them before
// lowering, and an op whose shape is still dynamic is left for an error.
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"
#include "conversion/GraphToLinalg/PackedForm.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/ConstantValues.h"

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

void yieldValue(OpBuilder &b, Location loc, Value value) {
  linalg::YieldOp::create(b, loc, value);
}

bool allStatic(ValueRange values) {
  return llvm::all_of(
      values, [](Value v) { return !v || getTensorType(v).hasStaticShape(); });
}

/// The element type that `elementType` is computed in: f32 for 16-bit
/// floats, itself otherwise.
Type getComputeType(Type elementType) {
  if (elementType.isF16() || elementType.isBF16())
    return Float32Type::get(elementType.getContext());
  return elementType;
}

DenseIntElementsAttr getI64Vector(OpBuilder &b, ArrayRef<int64_t> values) {
  return DenseIntElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(values.size())},
                            b.getI64Type()),
      values);
}

/// Extends or truncates the float elements of `value` to `elementType`.
Value castElements(OpBuilder &b, Location loc, Value value, Type elementType) {
  RankedTensorType type = getTensorType(value);
  if (type.getElementType() == elementType)
    return value;
  return buildBroadcastElementwise(
      b, loc, type.clone(elementType), value,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        if (elementType.getIntOrFloatBitWidth() >
            args[0].getType().getIntOrFloatBitWidth())
          return arith::ExtFOp::create(nb, nloc, elementType, args[0]);
        return arith::TruncFOp::create(nb, nloc, elementType, args[0]);
      });
}

/// Reshapes a static tensor to `shape` (same number of elements) with
/// collapse_shape and expand_shape.
Value reshapeTo(OpBuilder &b, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  RankedTensorType type = getTensorType(value);
  if (type.getShape() == shape)
    return value;
  auto target = type.clone(shape);
  if (auto reassociation = getReassociationIndicesForReshape(type, target)) {
    if (target.getRank() < type.getRank())
      return tensor::CollapseShapeOp::create(b, loc, target, value,
                                             *reassociation);
    return tensor::ExpandShapeOp::create(b, loc, target, value, *reassociation);
  }
  // No direct reassociation: go through one dimension.
  ReassociationIndices all(type.getRank());
  for (int64_t i = 0; i < type.getRank(); ++i)
    all[i] = i;
  Value flat = value;
  if (type.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc, type.clone({type.getNumElements()}), value,
        ArrayRef<ReassociationIndices>{all});
  if (target.getRank() == 1)
    return flat;
  ReassociationIndices outAll(target.getRank());
  for (int64_t i = 0; i < target.getRank(); ++i)
    outAll[i] = i;
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       ArrayRef<ReassociationIndices>{outAll});
}

/// Broadcasts `value` to `shape` with numpy rules (a copy when needed).
Value broadcastTo(OpBuilder &b, Location loc, Value value,
                  ArrayRef<int64_t> shape) {
  RankedTensorType type = getTensorType(value);
  if (type.getShape() == shape)
    return value;
  return buildBroadcastElementwise(
      b, loc, type.clone(shape), value,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

/// Broadcasts the 1-D `vector` along dimension `dim` of `type`.
Value broadcastAlongDim(OpBuilder &b, Location loc, Value vector,
                        RankedTensorType type, int64_t dim) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<int64_t> added;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != dim)
      added.push_back(d);
  return linalg::BroadcastOp::create(b, loc, vector, empty, added)
      ->getResult(0);
}

/// The identity-like map (d0, ..., d{n-1}) -> (d{dims[0]}, ...).
AffineMap getDimsMap(MLIRContext *ctx, int64_t numDims,
                     ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

/// Reduces `input` over its dimensions [keep, rank) into a tensor of its
/// first `keep` dimensions, starting from `initValue` and combining with
/// `combine(builder, loc, element, accumulator)`.
Value reduceTrailing(
    OpBuilder &b, Location loc, Value input, int64_t keep, double initValue,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  RankedTensorType type = getTensorType(input);
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  auto resultType = RankedTensorType::get(type.getShape().take_front(keep),
                                          type.getElementType());
  Value init = createFilled(b, loc, resultType, initValue);
  SmallVector<AffineMap> maps = {
      b.getMultiDimIdentityMap(rank),
      getDimsMap(ctx, rank, llvm::to_vector(llvm::seq<int64_t>(0, keep)))};
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, input, init, maps,
             getIterators(keep, rank - keep),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               yieldValue(nb, nloc, combine(nb, nloc, args[0], args[1]));
             })
      .getResult(0);
}

Value addScalars(OpBuilder &b, Location loc, Value x, Value acc) {
  return arith::AddFOp::create(b, loc, x, acc);
}

/// `(x - mean) / sqrt(var + epsilon)` with the mean and (biased) variance of
/// `x` over its dimensions [first, rank); `x` holds floats. The sums run on
/// `x - p`, `p` the first element of each normalized group (shifted data):
/// where the group's values lie close together far from zero, or are all
/// equal, the deviations come out exact instead of the rounding of a large
/// sum (with a variance near 0, `rsqrt(var + eps)` multiplies that
/// rounding by up to 316 for eps = 1e-5).
Value buildNormalized(OpBuilder &b, Location loc, Value x, int64_t first,
                      double epsilon) {
  RankedTensorType type = getTensorType(x);
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  MLIRContext *ctx = b.getContext();
  int64_t count = 1;
  for (int64_t d = first; d < rank; ++d)
    count *= type.getDimSize(d);

  // The statistics' sizes: the kept dimensions, `?` where x's are (the
  // normalized ones are static: `count` is their product).
  auto statsType =
      RankedTensorType::get(type.getShape().take_front(first), element);
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
  SmallVector<OpFoldResult> statsSizes(sizes.begin(), sizes.begin() + first);
  auto zeroStats = [&]() {
    Value empty = tensor::EmptyOp::create(b, loc, statsSizes, element);
    Value zero = createScalarConstant(b, loc, element, 0.0);
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  };
  SmallVector<OpFoldResult> pivotSizes(statsSizes);
  pivotSizes.append(rank - first, b.getIndexAttr(1));
  Value pivot = tensor::ExtractSliceOp::create(
      b, loc, statsType, x,
      getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(rank, 0)), pivotSizes,
      getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(rank, 1)));
  Value countValue = createScalarConstant(b, loc, element, count);
  AffineMap full = b.getMultiDimIdentityMap(rank);
  AffineMap kept =
      getDimsMap(ctx, rank, llvm::to_vector(llvm::seq<int64_t>(0, first)));
  auto shifted = [&](OpBuilder &nb, Location nloc, Value value, Value p) {
    return arith::SubFOp::create(nb, nloc, value, p).getResult();
  };
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{statsType}, ValueRange{x, pivot}, zeroStats(),
          {full, kept, kept}, getIterators(first, rank - first),
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            yieldValue(
                nb, nloc,
                arith::AddFOp::create(
                    nb, nloc, shifted(nb, nloc, args[0], args[1]), args[2]));
          })
          .getResult(0);

  // Sum of squared deviations, from the mean rather than by E[x^2] - E[x]^2.
  Value squares =
      linalg::GenericOp::create(
          b, loc, TypeRange{statsType}, ValueRange{x, pivot, sum}, zeroStats(),
          {full, kept, kept, kept}, getIterators(first, rank - first),
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value mean = arith::DivFOp::create(nb, nloc, args[2], countValue);
            Value dev = arith::SubFOp::create(
                nb, nloc, shifted(nb, nloc, args[0], args[1]), mean);
            Value sq = arith::MulFOp::create(nb, nloc, dev, dev);
            yieldValue(nb, nloc, arith::AddFOp::create(nb, nloc, sq, args[3]));
          })
          .getResult(0);

  Value epsValue = createScalarConstant(b, loc, element, epsilon);
  Value init = tensor::EmptyOp::create(b, loc, sizes, element);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{x, pivot, sum, squares}, init,
             {full, kept, kept, kept, full}, getIterators(rank, 0),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value mean =
                   arith::DivFOp::create(nb, nloc, args[2], countValue);
               Value var = arith::DivFOp::create(nb, nloc, args[3], countValue);
               Value inv = math::RsqrtOp::create(
                   nb, nloc, arith::AddFOp::create(nb, nloc, var, epsValue));
               Value dev = arith::SubFOp::create(
                   nb, nloc, shifted(nb, nloc, args[0], args[1]), mean);
               yieldValue(nb, nloc, arith::MulFOp::create(nb, nloc, dev, inv));
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// A grouped convolution as a linalg.generic, for the cases no named op
/// covers. `input` is [N, G, C/G, spatial...] (already padded), `weight`
/// [G, M/G, C/G, k...] and `init` [N, G, M/G, out...].
Value buildGenericGroupedConv(OpBuilder &b, Location loc, Value input,
                              Value weight, Value init,
                              ArrayRef<int64_t> strides,
                              ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  int64_t spatial = strides.size();
  // Loops: n, g, m, out..., c, k...
  int64_t numLoops = 3 + spatial + 1 + spatial;
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  int64_t cLoop = 3 + spatial, kLoop = 4 + spatial;
  SmallVector<AffineExpr> inputExprs = {dim(0), dim(1), dim(cLoop)};
  SmallVector<AffineExpr> weightExprs = {dim(1), dim(2), dim(cLoop)};
  SmallVector<AffineExpr> outExprs = {dim(0), dim(1), dim(2)};
  for (int64_t i = 0; i < spatial; ++i) {
    inputExprs.push_back(dim(3 + i) * strides[i] +
                         dim(kLoop + i) * dilations[i]);
    weightExprs.push_back(dim(kLoop + i));
    outExprs.push_back(dim(3 + i));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inputExprs, ctx),
                                 AffineMap::get(numLoops, 0, weightExprs, ctx),
                                 AffineMap::get(numLoops, 0, outExprs, ctx)};
  Type accType = getTensorType(init).getElementType();
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{input, weight}, init,
             maps, getIterators(3 + spatial, 1 + spatial),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value x = args[0], w = args[1];
               if (x.getType() != accType) {
                 x = arith::ExtFOp::create(nb, nloc, accType, x);
                 w = arith::ExtFOp::create(nb, nloc, accType, w);
               }
               Value product = arith::MulFOp::create(nb, nloc, x, w);
               yieldValue(nb, nloc,
                          arith::AddFOp::create(nb, nloc, product, args[2]));
             })
      .getResult(0);
}

/// Accumulates the convolution of the padded `input` [N, C, ...] with
/// `weight` [M, C/group, k...] into `init` [N, M, out...].
Value buildConv(OpBuilder &b, Location loc, Value input, Value weight,
                Value init, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> dilations, int64_t group) {
  RankedTensorType inputType = getTensorType(input);
  RankedTensorType weightType = getTensorType(weight);
  RankedTensorType initType = getTensorType(init);
  int64_t spatial = strides.size();
  int64_t channels = inputType.getDimSize(1);
  int64_t filters = weightType.getDimSize(0);
  Attribute stridesAttr = getI64Vector(b, strides);
  Attribute dilationsAttr = getI64Vector(b, dilations);
  TypeRange resultTypes(initType);
  SmallVector<Value> inputs = {input, weight};

  if (group == 1) {
    if (spatial == 1)
      return linalg::Conv1DNcwFcwOp::create(b, loc, resultTypes, inputs, init,
                                            stridesAttr, dilationsAttr)
          .getResult(0);
    if (spatial == 2)
      return linalg::Conv2DNchwFchwOp::create(b, loc, resultTypes, inputs, init,
                                              stridesAttr, dilationsAttr)
          .getResult(0);
    if (spatial == 3)
      return linalg::Conv3DNcdhwFcdhwOp::create(
                 b, loc, resultTypes, inputs, init, stridesAttr, dilationsAttr)
          .getResult(0);
  }

  // Depthwise: one filter per channel, weight [C, 1, k...] -> [C, k...].
  if (group == channels && filters == channels && spatial <= 3) {
    SmallVector<int64_t> shape = {channels};
    llvm::append_range(shape, weightType.getShape().drop_front(2));
    Value kernel = reshapeTo(b, loc, weight, shape);
    SmallVector<Value> depthwiseInputs = {input, kernel};
    if (spatial == 1)
      return linalg::DepthwiseConv1DNcwCwOp::create(b, loc, resultTypes,
                                                    depthwiseInputs, init,
                                                    stridesAttr, dilationsAttr)
          .getResult(0);
    if (spatial == 2)
      return linalg::DepthwiseConv2DNchwChwOp::create(
                 b, loc, resultTypes, depthwiseInputs, init, stridesAttr,
                 dilationsAttr)
          .getResult(0);
    return linalg::DepthwiseConv3DNcdhwCdhwOp::create(
               b, loc, resultTypes, depthwiseInputs, init, stridesAttr,
               dilationsAttr)
        .getResult(0);
  }

  // Grouped: split the channel dimensions into [group, per group].
  auto splitDim = [&](Value value, int64_t dim) {
    ArrayRef<int64_t> shape = getTensorType(value).getShape();
    SmallVector<int64_t> split(shape.take_front(dim));
    split.push_back(group);
    split.push_back(shape[dim] / group);
    llvm::append_range(split, shape.drop_front(dim + 1));
    return reshapeTo(b, loc, value, split);
  };
  Value groupedInput = splitDim(input, 1);
  Value groupedWeight = splitDim(weight, 0);
  Value groupedInit = splitDim(init, 1);
  Value result;
  if (spatial == 2)
    result = linalg::Conv2DNgchwGfchwOp::create(
                 b, loc, TypeRange(groupedInit.getType()),
                 ValueRange{groupedInput, groupedWeight}, groupedInit,
                 stridesAttr, dilationsAttr)
                 .getResult(0);
  else
    result = buildGenericGroupedConv(b, loc, groupedInput, groupedWeight,
                                     groupedInit, strides, dilations);
  return reshapeTo(b, loc, result, initType.getShape());
}

/// The initial accumulator of a convolution: its bias broadcast along the
/// channels, or zeros.
Value createConvInit(OpBuilder &b, Location loc, RankedTensorType accType,
                     Value bias) {
  if (!bias)
    return createFilled(b, loc, accType, 0.0);
  bias = castElements(b, loc, bias, accType.getElementType());
  return broadcastAlongDim(b, loc, bias, accType, 1);
}

/// A convolution of static shapes computed in its compute type (f32 for
/// 16-bit floats), the bias as the initial accumulator.
template <typename ConvLikeOp>
FailureOr<Value> buildConvAccumulator(ConversionPatternRewriter &rewriter,
                                      ConvLikeOp op, Value input, Value weight,
                                      Value bias, RankedTensorType resultType) {
  Location loc = op.getLoc();
  if (!allStatic({input, weight}) || !resultType.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "needs static shapes");
  Type element = resultType.getElementType();
  int64_t spatial = op.getNumSpatialDims();
  ArrayRef<int64_t> pads = op.getPads();
  SmallVector<int64_t> low = {0, 0}, high = {0, 0};
  llvm::append_range(low, pads.take_front(spatial));
  llvm::append_range(high, pads.drop_front(spatial));
  input = padTensor(rewriter, loc, input, low, high,
                    createScalarConstant(rewriter, loc, element, 0.0));
  auto accType = resultType.clone(getComputeType(element));
  Value init = createConvInit(rewriter, loc, accType, bias);
  return buildConv(rewriter, loc, input, weight, init, op.getStrides(),
                   op.getDilations(), op.getGroup());
}

struct ConvLowering : OpConversionPattern<graph::ConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    FailureOr<Value> result = buildConvAccumulator(
        rewriter, op, adaptor.getInput(), adaptor.getWeight(),
        adaptor.getBias(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, castElements(rewriter, op.getLoc(), *result,
                                        resultType.getElementType()));
    return success();
  }
};

/// ConvTranspose as a convolution: the input with stride - 1 zeros inserted
/// between its elements and padded by dilation * (k - 1) - pad on each side
/// (plus output_padding at the end), convolved with the kernel flipped and
/// its two channel dimensions swapped within each group. Where a pad exceeds
/// dilation * (k - 1), the convolution is computed on a larger input and the
/// result sliced.
struct ConvTransposeLowering : OpConversionPattern<graph::ConvTransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::ConvTransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput(), weight = adaptor.getWeight();
    if (!allStatic({input, weight}) || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Type element = resultType.getElementType();
    RankedTensorType inputType = getTensorType(input);
    RankedTensorType weightType = getTensorType(weight);
    int64_t rank = inputType.getRank(), spatial = rank - 2;
    int64_t group = op.getGroup();
    ArrayRef<int64_t> strides = op.getStrides(), pads = op.getPads(),
                      dilations = op.getDilations(),
                      outputPadding = op.getOutputPadding();

    // Zero-inserted, padded input.
    SmallVector<int64_t> low(spatial), paddedShape(inputType.getShape());
    SmallVector<int64_t> offsets = {0, 0}, sliceStrides = {1, 1};
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t span = dilations[i] * (weightType.getDimSize(2 + i) - 1);
      low[i] = span - pads[i];
      int64_t high = span - pads[spatial + i] + outputPadding[i];
      int64_t inSize = inputType.getDimSize(2 + i);
      paddedShape[2 + i] = std::max<int64_t>(low[i], 0) +
                           (inSize - 1) * strides[i] + 1 +
                           std::max<int64_t>(high, 0);
      offsets.push_back(std::max<int64_t>(low[i], 0));
      sliceStrides.push_back(strides[i]);
    }
    Value zeros =
        createFilled(rewriter, loc, inputType.clone(paddedShape), 0.0);
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(ctx, inputType.getShape());
    Value padded = tensor::InsertSliceOp::create(
        rewriter, loc, input, zeros, getAsIndexOpFoldResult(ctx, offsets),
        sizes, getAsIndexOpFoldResult(ctx, sliceStrides));

    // Kernel [C, M/G, k...] -> [G, M/G, C/G, k...] flipped -> [M, C/G, k...].
    int64_t channels = weightType.getDimSize(0);
    int64_t perGroupOut = weightType.getDimSize(1);
    SmallVector<int64_t> groupedShape = {group, channels / group, perGroupOut};
    llvm::append_range(groupedShape, weightType.getShape().drop_front(2));
    Value groupedWeight = reshapeTo(rewriter, loc, weight, groupedShape);
    SmallVector<int64_t> flippedShape = {group, perGroupOut, channels / group};
    llvm::append_range(flippedShape, weightType.getShape().drop_front(2));
    SmallVector<AffineExpr> readExprs = {getAffineDimExpr(0, ctx),
                                         getAffineDimExpr(2, ctx),
                                         getAffineDimExpr(1, ctx)};
    for (int64_t i = 0; i < spatial; ++i)
      readExprs.push_back(weightType.getDimSize(2 + i) - 1 -
                          getAffineDimExpr(3 + i, ctx));
    int64_t loops = 3 + spatial;
    Value flipped =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{weightType.clone(flippedShape)},
            groupedWeight,
            tensor::EmptyOp::create(rewriter, loc, flippedShape,
                                    weightType.getElementType())
                .getResult(),
            {AffineMap::get(loops, 0, readExprs, ctx),
             rewriter.getMultiDimIdentityMap(loops)},
            getIterators(loops, 0),
            [](OpBuilder &nb, Location nloc, ValueRange args) {
              linalg::YieldOp::create(nb, nloc, args[0]);
            })
            .getResult(0);
    SmallVector<int64_t> kernelShape = {group * perGroupOut, channels / group};
    llvm::append_range(kernelShape, weightType.getShape().drop_front(2));
    Value kernel = reshapeTo(rewriter, loc, flipped, kernelShape);

    // Stride-1 convolution, then the slice that the pads keep.
    SmallVector<int64_t> convShape(resultType.getShape().take_front(2));
    SmallVector<int64_t> resultOffsets = {0, 0};
    for (int64_t i = 0; i < spatial; ++i) {
      convShape.push_back(paddedShape[2 + i] -
                          dilations[i] * (weightType.getDimSize(2 + i) - 1));
      resultOffsets.push_back(std::max<int64_t>(low[i], 0) - low[i]);
    }
    auto accType = RankedTensorType::get(convShape, getComputeType(element));
    Value init = createConvInit(rewriter, loc, accType, adaptor.getBias());
    SmallVector<int64_t> ones(spatial, 1);
    Value result =
        buildConv(rewriter, loc, padded, kernel, init, ones, dilations, group);
    if (convShape != resultType.getShape())
      result = tensor::ExtractSliceOp::create(
          rewriter, loc, result, getAsIndexOpFoldResult(ctx, resultOffsets),
          getAsIndexOpFoldResult(ctx, resultType.getShape()),
          getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(rank, 1)));
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// A matrix product whose operands have symbolic dimensions (numpy
/// semantics, both at least matrices) as one linalg.generic over the
/// result's dimensions and the reduction, each operand's batch broadcast
/// where it is a static 1, accumulated in the compute type. The loop path:
/// correct at any size, not yet tiled for speed.
FailureOr<Value> buildSymbolicMatMul(ConversionPatternRewriter &rewriter,
                                     Operation *op, Value lhs, Value rhs,
                                     RankedTensorType resultType) {
  Location loc = op->getLoc();
  MLIRContext *ctx = rewriter.getContext();
  RankedTensorType a = getTensorType(lhs), b = getTensorType(rhs);
  int64_t rank = resultType.getRank();
  if (a.getRank() < 2 || b.getRank() < 2 || rank < 2)
    return rewriter.notifyMatchFailure(op, "a symbolic vector operand");
  Type accElement = getComputeType(resultType.getElementType());
  // Rows times a matrix (a projection: [batch, seq, K] x [K, N]): the
  // rows collapsed into one dimension, a 2-D product (which
  // kiln-cpu-tile-symbolic-rows runs in static blocks whose weights
  // kiln-cpu-pack-weights packs), expanded back. (Not where two row
  // dimensions are `?`: upstream's expand-strided-metadata crashes on an
  // expansion into two run-time sizes, in MLIR 22.)
  if (b.getRank() == 2 && a.getRank() > 2 &&
      llvm::count_if(a.getShape().drop_back(), ShapedType::isDynamic) <= 1) {
    ReassociationIndices rows =
        llvm::to_vector(llvm::seq<int64_t>(0, a.getRank() - 1));
    SmallVector<ReassociationIndices> groups = {rows, {a.getRank() - 1}};
    Value flat = tensor::CollapseShapeOp::create(rewriter, loc, lhs, groups);
    auto flatType = RankedTensorType::get(
        {getTensorType(flat).getDimSize(0), resultType.getDimSize(rank - 1)},
        resultType.getElementType());
    FailureOr<Value> product =
        buildSymbolicMatMul(rewriter, op, flat, rhs, flatType);
    if (failed(product))
      return failure();
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, lhs);
    sizes.back() = tensor::getMixedSize(rewriter, loc, *product, 1);
    return tensor::ExpandShapeOp::create(rewriter, loc,
                                         resultType.clone(accElement), *product,
                                         groups, sizes)
        .getResult();
  }
  // d0..d{rank-1}: the result's dimensions, d{rank}: the reduction.
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  auto operandMap = [&](RankedTensorType type, bool isLhs) {
    int64_t offset = rank - type.getRank();
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i + 2 < type.getRank(); ++i)
      exprs.push_back(type.getDimSize(i) == 1 &&
                              resultType.getDimSize(i + offset) != 1
                          ? getAffineConstantExpr(0, ctx)
                          : d(i + offset));
    if (isLhs)
      exprs.append({d(rank - 2), d(rank)});
    else
      exprs.append({d(rank), d(rank - 1)});
    return AffineMap::get(rank + 1, 0, exprs, ctx);
  };
  SmallVector<AffineExpr> resultExprs;
  for (int64_t i = 0; i < rank; ++i)
    resultExprs.push_back(d(i));
  SmallVector<AffineMap> maps = {operandMap(a, true), operandMap(b, false),
                                 AffineMap::get(rank + 1, 0, resultExprs, ctx)};
  // The result's sizes: each batch dimension from an operand that has it
  // at full size, M from the left, N from the right.
  auto dimOf = [&](Value v, int64_t i) -> OpFoldResult {
    RankedTensorType type = getTensorType(v);
    if (!type.isDynamicDim(i))
      return rewriter.getIndexAttr(type.getDimSize(i));
    return tensor::DimOp::create(rewriter, loc, v, i).getResult();
  };
  SmallVector<OpFoldResult> sizes;
  for (int64_t i = 0; i + 2 < rank; ++i) {
    OpFoldResult size = rewriter.getIndexAttr(1);
    for (Value operand : {lhs, rhs}) {
      int64_t j = i - (rank - getTensorType(operand).getRank());
      if (j >= 0 && getTensorType(operand).getDimSize(j) != 1) {
        size = dimOf(operand, j);
        break;
      }
    }
    sizes.push_back(size);
  }
  sizes.push_back(dimOf(lhs, a.getRank() - 2));
  sizes.push_back(dimOf(rhs, b.getRank() - 1));
  auto accType = resultType.clone(accElement);
  Value zero = createScalarConstant(rewriter, loc, accElement, 0.0);
  Value empty = tensor::EmptyOp::create(rewriter, loc, sizes, accElement);
  Value init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
  SmallVector<utils::IteratorType> iterators = getIterators(rank, 1);
  Value result =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs}, init,
          maps, iterators,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            auto extend = [&](Value v) -> Value {
              if (v.getType() == accElement || !isa<FloatType>(accElement))
                return v;
              return arith::ExtFOp::create(nb, nloc, accElement, v);
            };
            Value x = extend(args[0]), y = extend(args[1]), sum;
            if (isa<FloatType>(accElement))
              sum = arith::AddFOp::create(
                  nb, nloc, args[2], arith::MulFOp::create(nb, nloc, x, y));
            else
              sum = arith::AddIOp::create(
                  nb, nloc, args[2], arith::MulIOp::create(nb, nloc, x, y));
            linalg::YieldOp::create(nb, nloc, sum);
          })
          .getResult(0);
  if (result.getType() != accType)
    result = tensor::CastOp::create(rewriter, loc, accType, result);
  return result;
}

/// A matrix product of static shapes (numpy semantics) computed in its
/// compute type (f32 for 16-bit floats), reshaped to `resultType`'s shape.
FailureOr<Value> buildMatMulAccumulator(ConversionPatternRewriter &rewriter,
                                        Operation *op, Value lhs, Value rhs,
                                        RankedTensorType resultType) {
  Location loc = op->getLoc();
  if (!allStatic({lhs, rhs}) || !resultType.hasStaticShape())
    return buildSymbolicMatMul(rewriter, op, lhs, rhs, resultType);
  Type element = resultType.getElementType();
  Type accElement = getComputeType(element);

  // Promote 1-D operands to matrices.
  SmallVector<int64_t> a(getTensorType(lhs).getShape());
  SmallVector<int64_t> b(getTensorType(rhs).getShape());
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  lhs = reshapeTo(rewriter, loc, lhs, a);
  rhs = reshapeTo(rewriter, loc, rhs, b);
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  SmallVector<int64_t> batch = *graph::broadcastShapes(
      ArrayRef<int64_t>(a).drop_back(2), ArrayRef<int64_t>(b).drop_back(2));
  int64_t batchSize = 1;
  for (int64_t d : batch)
    batchSize *= d;

  SmallVector<int64_t> fullShape = batch;
  fullShape.append({m, n});
  Value result;
  if (b.size() == 2) {
    // [batch..., M, K] x [K, N]: fold the batch into the rows.
    Value rows = reshapeTo(rewriter, loc, lhs, {batchSize * m, k});
    auto accType = RankedTensorType::get({batchSize * m, n}, accElement);
    result = linalg::MatmulOp::create(rewriter, loc, TypeRange{accType},
                                      ValueRange{rows, rhs},
                                      createFilled(rewriter, loc, accType, 0.0))
                 .getResult(0);
  } else {
    SmallVector<int64_t> lhsShape = batch, rhsShape = batch;
    lhsShape.append({m, k});
    rhsShape.append({k, n});
    Value lhs3 =
        reshapeTo(rewriter, loc, broadcastTo(rewriter, loc, lhs, lhsShape),
                  {batchSize, m, k});
    Value rhs3 =
        reshapeTo(rewriter, loc, broadcastTo(rewriter, loc, rhs, rhsShape),
                  {batchSize, k, n});
    auto accType = RankedTensorType::get({batchSize, m, n}, accElement);
    result = linalg::BatchMatmulOp::create(
                 rewriter, loc, TypeRange{accType}, ValueRange{lhs3, rhs3},
                 createFilled(rewriter, loc, accType, 0.0))
                 .getResult(0);
  }
  result = reshapeTo(rewriter, loc, result, fullShape);
  return reshapeTo(rewriter, loc, result, resultType.getShape());
}

/// A matrix product marked for a packed form (PackedForm: an activation of
/// 8-bit integers times a constant int8 matrix, or bf16 operands; see
/// kiln-graph-mark-integer-contractions): the activation's rows [R, K]
/// converted (bytes x - low, or bf16; K padded to whole groups with the
/// element of a 0), the matrix as [K/g, N, g] (each column's group of rows
/// in a row), low * colsum(W) (int8) or zeros as the accumulators' start,
/// and the reduction split into groups, innermost in both operands:
///
///   acc[r, n] += ext(x[r, q, j]) * ext(w[q, n, j])
///
/// the shape of the dot-product instructions, which
/// kiln-cpu-tile-and-vectorize recognises by it. Returns the product as
/// `resultType` (f32), or failure when the matrix is not what the mark
/// promises.
FailureOr<Value> buildPackedMatMul(ConversionPatternRewriter &rewriter,
                                   Operation *op, Value matrix, Value lhs,
                                   RankedTensorType resultType,
                                   const PackedForm &form) {
  Location loc = op->getLoc();
  MLIRContext *ctx = rewriter.getContext();
  auto rhsType = dyn_cast<RankedTensorType>(matrix.getType());
  std::optional<SmallVector<double>> weights = graph::getFloatElements(matrix);
  RankedTensorType lhsType = getTensorType(lhs);
  if (!weights || !rhsType || rhsType.getRank() != 2 ||
      !lhsType.hasStaticShape() || lhsType.getRank() < 2 ||
      !resultType.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "no constant matrix");
  if (!form.holds(*weights))
    return rewriter.notifyMatchFailure(op, "the matrix is not 8-bit integers");
  int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1);
  int64_t rows = lhsType.getNumElements() / k;
  int64_t group = form.group;
  int64_t groups = (k + group - 1) / group;
  SmallVector<double> packed(groups * n * group, 0.0);
  SmallVector<double> start(n, 0.0);
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col) {
      double value = (*weights)[row * n + col];
      packed[((row / group) * n + col) * group + row % group] = value;
      start[col] += value * form.low;
    }
  Value weight = form.constant(rewriter, loc, {groups, n, group}, packed);
  Value startValue = form.start(rewriter, loc, {n}, start);

  // Converted before the reshape to rows, so that the conversion fuses
  // with the op that makes the activation (a quantisation's epilogue then
  // writes the bytes): after the reshape it was a loop nest of its own,
  // which read f32 and wrote the bytes again (BERT-base's FFN input
  // 1x128x3072: 0.055 ms a layer).
  Value converted = reshapeTo(rewriter, loc,
                              form.convertInput(rewriter, loc, lhs), {rows, k});
  Value padded = padTensor(rewriter, loc, converted, {0, 0},
                           {0, groups * group - k}, form.zero(rewriter, loc));
  Value grouped = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({rows, groups, group}, form.element),
      padded, SmallVector<ReassociationIndices>{{0}, {1, 2}});

  auto accType = RankedTensorType::get({rows, n}, form.acc);
  Value init =
      linalg::BroadcastOp::create(
          rewriter, loc, startValue,
          tensor::EmptyOp::create(rewriter, loc, accType.getShape(), form.acc),
          ArrayRef<int64_t>{0})
          .getResult()[0];
  // d0 r, d1 n | d2 q, d3 j.
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {d(0), d(2), d(3)}, ctx),
                                 AffineMap::get(4, 0, {d(2), d(1), d(3)}, ctx),
                                 AffineMap::get(4, 0, {d(0), d(1)}, ctx)};
  Value acc = linalg::GenericOp::create(
                  rewriter, loc, TypeRange{accType},
                  ValueRange{grouped, weight}, init, maps, getIterators(2, 2),
                  [&](OpBuilder &nb, Location nloc, ValueRange args) {
                    form.body(nb, nloc, args);
                  })
                  .getResult(0);
  // Reshaped before the conversion, which then fuses with the ops after
  // it into the product's epilogue.
  Value shaped = reshapeTo(rewriter, loc, acc, resultType.getShape());
  if (!form.isInteger())
    return shaped;
  return buildBroadcastElementwise(
      rewriter, loc, resultType, shaped,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        return form.toFloat(nb, nloc, args[0]);
      });
}

struct MatMulLowering : OpConversionPattern<graph::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    if (std::optional<PackedForm> form = PackedForm::of(op, rewriter)) {
      FailureOr<Value> result = buildPackedMatMul(
          rewriter, op, op.getRhs(), adaptor.getLhs(), resultType, *form);
      if (failed(result))
        return failure();
      rewriter.replaceOp(op, *result);
      return success();
    }
    FailureOr<Value> result = buildMatMulAccumulator(
        rewriter, op, adaptor.getLhs(), adaptor.getRhs(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, castElements(rewriter, op.getLoc(), *result,
                                        resultType.getElementType()));
    return success();
  }
};

/// graph.einsum as one linalg.generic: a loop per letter, the output's
/// letters first (parallel), the summed ones after (reductions, in the order
/// they first appear); each operand read through its letters, a size-1
/// dimension as index 0 (broadcast), a repeated letter as a diagonal. The
/// product of the operands is accumulated in the compute type (f32 for
/// 16-bit floats).
struct EinsumLowering : OpConversionPattern<graph::EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    auto parsed = graph::EinsumOp::parseEquation(op.getEquation());
    if (failed(parsed) || !allStatic(adaptor.getInputs()) ||
        !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    auto &[terms, output] = *parsed;
    std::string letters = output;
    for (const std::string &term : terms)
      for (char c : term)
        if (!StringRef(letters).contains(c))
          letters += c;
    auto dimOf = [&](char c) {
      return getAffineDimExpr(StringRef(letters).find(c), ctx);
    };
    SmallVector<AffineMap> maps;
    for (auto [term, input] : llvm::zip(terms, adaptor.getInputs())) {
      SmallVector<AffineExpr> exprs;
      ArrayRef<int64_t> shape = getTensorType(input).getShape();
      for (auto [c, size] : llvm::zip(term, shape))
        exprs.push_back(size == 1 ? getAffineConstantExpr(0, ctx) : dimOf(c));
      maps.push_back(AffineMap::get(letters.size(), 0, exprs, ctx));
    }
    SmallVector<AffineExpr> outputExprs;
    for (char c : output)
      outputExprs.push_back(dimOf(c));
    maps.push_back(AffineMap::get(letters.size(), 0, outputExprs, ctx));

    Type element = resultType.getElementType();
    Type accElement = getComputeType(element);
    Value init = createFilled(rewriter, loc, resultType.clone(accElement), 0.0);
    bool isFloat = isa<FloatType>(accElement);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, adaptor.getInputs(),
        ValueRange{init}, maps,
        getIterators(output.size(), letters.size() - output.size()),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value product;
          for (Value v : args.drop_back()) {
            if (v.getType() != accElement)
              v = arith::ExtFOp::create(b, l, accElement, v);
            product = !product ? v
                      : isFloat
                          ? arith::MulFOp::create(b, l, product, v).getResult()
                          : arith::MulIOp::create(b, l, product, v).getResult();
          }
          Value sum = isFloat
                          ? arith::AddFOp::create(b, l, args.back(), product)
                                .getResult()
                          : arith::AddIOp::create(b, l, args.back(), product)
                                .getResult();
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(
        op, castElements(rewriter, loc, generic.getResult(0), element));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

/// `activation(accumulator + bias + residual)` as one elementwise op into a
/// tensor of `resultType`: the epilogue that code generation applies to each
/// output tile in registers. `bias` (optional) broadcasts numpy-style; it is
/// null for convolutions, which start their accumulators from it.
Value buildEpilogue(OpBuilder &b, Location loc, Value accumulator, Value bias,
                    Value residual, graph::Activation activation,
                    ArrayRef<float> params, RankedTensorType resultType) {
  Type accElement = getTensorType(accumulator).getElementType();
  if (!bias && !residual && activation == graph::Activation::None)
    return castElements(b, loc, accumulator, resultType.getElementType());
  SmallVector<Value> operands = {accumulator};
  if (bias)
    operands.push_back(bias);
  if (residual)
    operands.push_back(residual);
  return buildBroadcastElementwise(
      b, loc, resultType, operands,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        auto extend = [&](Value v) -> Value {
          if (v.getType() == accElement)
            return v;
          return arith::ExtFOp::create(nb, nloc, accElement, v);
        };
        Value x = args[0];
        for (Value addend : args.drop_front())
          x = arith::AddFOp::create(nb, nloc, x, extend(addend));
        x = buildActivation(nb, nloc, activation, params, x);
        if (x.getType() != resultType.getElementType())
          x = arith::TruncFOp::create(nb, nloc, resultType.getElementType(), x);
        return x;
      });
}

struct FusedConvLowering : OpConversionPattern<graph::FusedConvOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::FusedConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    if (!allStatic({adaptor.getResidual()}))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    FailureOr<Value> result = buildConvAccumulator(
        rewriter, op, adaptor.getInput(), adaptor.getWeight(),
        adaptor.getBias(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op,
                       buildEpilogue(rewriter, op.getLoc(), *result,
                                     /*bias=*/nullptr, adaptor.getResidual(),
                                     op.getActivation(),
                                     op.getActivationParams(), resultType));
    return success();
  }
};

struct FusedMatMulLowering : OpConversionPattern<graph::FusedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::FusedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    // A symbolic dimension takes the loop path, whose epilogue broadcasts
    // as elementwise ops do.
    if (resultType.hasStaticShape() &&
        !allStatic({adaptor.getBias(), adaptor.getResidual()}))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    std::optional<PackedForm> form = PackedForm::of(op, rewriter);
    FailureOr<Value> result =
        form ? buildPackedMatMul(rewriter, op, op.getRhs(), adaptor.getLhs(),
                                 resultType, *form)
             : buildMatMulAccumulator(rewriter, op, adaptor.getLhs(),
                                      adaptor.getRhs(), resultType);
    if (failed(result))
      return failure();
    rewriter.replaceOp(
        op, buildEpilogue(rewriter, op.getLoc(), *result, adaptor.getBias(),
                          adaptor.getResidual(), op.getActivation(),
                          op.getActivationParams(), resultType));
    return success();
  }
};

struct GemmLowering : OpConversionPattern<graph::GemmOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value a = adaptor.getA(), b = adaptor.getB(), c = adaptor.getC();
    if (!allStatic({a, b, c}) || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Type element = resultType.getElementType();
    double alpha = op.getAlpha().convertToFloat();
    double beta = op.getBeta().convertToFloat();
    bool isFloat = isa<FloatType>(element);
    if (!isFloat && (alpha != 1.0 || beta != 1.0))
      return rewriter.notifyMatchFailure(
          op, "alpha and beta other than 1 need a float element type");

    auto transpose = [&](Value value) {
      RankedTensorType type = getTensorType(value);
      Value empty = tensor::EmptyOp::create(
          rewriter, loc, {type.getDimSize(1), type.getDimSize(0)},
          type.getElementType());
      return linalg::TransposeOp::create(rewriter, loc, value, empty,
                                         ArrayRef<int64_t>{1, 0})
          ->getResult(0);
    };
    if (op.getTransA())
      a = transpose(a);
    if (op.getTransB())
      b = transpose(b);

    Type accElement = getComputeType(element);
    auto accType = resultType.clone(accElement);
    Value init;
    bool scaleAfter = alpha != 1.0;
    if (c && !scaleAfter) {
      // Accumulate onto beta * C.
      init = buildBroadcastElementwise(
          rewriter, loc, accType, c,
          [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
            Value value = args[0];
            if (value.getType() != accElement)
              value = arith::ExtFOp::create(nb, nloc, accElement, value);
            if (beta == 1.0)
              return value;
            return arith::MulFOp::create(
                nb, nloc, value,
                createScalarConstant(nb, nloc, accElement, beta));
          });
    } else {
      init = createFilled(rewriter, loc, accType, 0.0);
    }
    Value result = linalg::MatmulOp::create(rewriter, loc, TypeRange{accType},
                                            ValueRange{a, b}, init)
                       .getResult(0);
    if (scaleAfter) {
      SmallVector<Value> operands = {result};
      if (c)
        operands.push_back(c);
      result = buildBroadcastElementwise(
          rewriter, loc, accType, operands,
          [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
            Value value = arith::MulFOp::create(
                nb, nloc, args[0],
                createScalarConstant(nb, nloc, accElement, alpha));
            if (args.size() == 1)
              return value;
            Value cValue = args[1];
            if (cValue.getType() != accElement)
              cValue = arith::ExtFOp::create(nb, nloc, accElement, cValue);
            cValue = arith::MulFOp::create(
                nb, nloc, cValue,
                createScalarConstant(nb, nloc, accElement, beta));
            return arith::AddFOp::create(nb, nloc, value, cValue);
          });
    }
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Pools the (padded) `input` [N, C, spatial...] into `init` [N, C, out...]
/// with `combine(builder, loc, element, accumulator)`, as a linalg.generic
/// reading `input[n, c, out * stride + k * dilation]`.
Value buildGenericPool(
    OpBuilder &b, Location loc, Value input, Value init,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> dilations,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  MLIRContext *ctx = b.getContext();
  int64_t spatial = kernel.size();
  int64_t loops = 2 + 2 * spatial;
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineExpr> inputExprs = {dim(0), dim(1)};
  SmallVector<AffineExpr> outExprs = {dim(0), dim(1)};
  for (int64_t i = 0; i < spatial; ++i) {
    inputExprs.push_back(dim(2 + i) * strides[i] +
                         dim(2 + spatial + i) * dilations[i]);
    outExprs.push_back(dim(2 + i));
  }
  // The window tensor only gives the kernel loops their sizes.
  Value window = tensor::EmptyOp::create(b, loc, kernel,
                                         getTensorType(init).getElementType());
  SmallVector<int64_t> windowDims;
  for (int64_t i = 0; i < spatial; ++i)
    windowDims.push_back(2 + spatial + i);
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, inputExprs, ctx),
                                 getDimsMap(ctx, loops, windowDims),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{input, window}, init,
             maps, getIterators(2 + spatial, spatial),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               yieldValue(nb, nloc, combine(nb, nloc, args[0], args[2]));
             })
      .getResult(0);
}

/// Pads of a pooling op for its input, with the end pads extended so that
/// every window of a ceil-mode output lies inside the padded input.
void getPoolPads(RankedTensorType inputType, RankedTensorType resultType,
                 ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                 SmallVectorImpl<int64_t> &low,
                 SmallVectorImpl<int64_t> &high) {
  int64_t spatial = kernel.size();
  low.assign({0, 0});
  high.assign({0, 0});
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed = (resultType.getDimSize(2 + i) - 1) * strides[i] +
                     dilations[i] * (kernel[i] - 1) + 1;
    int64_t have = inputType.getDimSize(2 + i) + pads[i] + pads[spatial + i];
    low.push_back(pads[i]);
    high.push_back(pads[spatial + i] + std::max<int64_t>(needed - have, 0));
  }
}

struct MaxPoolLowering : OpConversionPattern<graph::MaxPoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::MaxPoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    if (!allStatic(input) || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Type element = resultType.getElementType();
    Type graphElement = op.getResult().getType().getElementType();
    bool isUnsigned = isUnsignedInteger(graphElement);

    // The lowest value of the element type: padding never wins.
    TypedAttr lowest;
    if (auto floatType = dyn_cast<FloatType>(element))
      lowest = rewriter.getFloatAttr(
          floatType, APFloat::getInf(floatType.getFloatSemantics(),
                                     /*Negative=*/true));
    else
      lowest = rewriter.getIntegerAttr(
          element,
          isUnsigned
              ? APInt::getMinValue(element.getIntOrFloatBitWidth())
              : APInt::getSignedMinValue(element.getIntOrFloatBitWidth()));
    Value lowestValue = arith::ConstantOp::create(rewriter, loc, lowest);

    SmallVector<int64_t> low, high;
    getPoolPads(getTensorType(input), resultType, op.getKernelShape(),
                op.getStrides(), op.getPads(), op.getDilations(), low, high);
    Value padded = padTensor(rewriter, loc, input, low, high, lowestValue);
    Value init = createFilled(rewriter, loc, resultType, lowestValue);
    Value result;
    if (isa<FloatType>(element) && op.getNumSpatialDims() == 2) {
      Value window =
          tensor::EmptyOp::create(rewriter, loc, op.getKernelShape(), element);
      result =
          linalg::PoolingNchwMaxOp::create(
              rewriter, loc, TypeRange{resultType}, ValueRange{padded, window},
              init, getI64Vector(rewriter, op.getStrides()),
              getI64Vector(rewriter, op.getDilations()))
              .getResult(0);
    } else {
      result = buildGenericPool(
          rewriter, loc, padded, init, op.getKernelShape(), op.getStrides(),
          op.getDilations(),
          [&](OpBuilder &nb, Location nloc, Value x, Value acc) -> Value {
            if (isa<FloatType>(element))
              return arith::MaximumFOp::create(nb, nloc, x, acc);
            if (isUnsigned)
              return arith::MaxUIOp::create(nb, nloc, x, acc);
            return arith::MaxSIOp::create(nb, nloc, x, acc);
          });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AveragePoolLowering : OpConversionPattern<graph::AveragePoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::AveragePoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    if (!allStatic(input) || !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    RankedTensorType inputType = getTensorType(input);
    Type element = resultType.getElementType();
    Type accElement = getComputeType(element);
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      pads = op.getPads(), dilations = op.getDilations();
    int64_t spatial = kernel.size();

    SmallVector<int64_t> low, high;
    getPoolPads(inputType, resultType, kernel, strides, pads, dilations, low,
                high);
    input = castElements(rewriter, loc, input, accElement);
    Value padded =
        padTensor(rewriter, loc, input, low, high,
                  createScalarConstant(rewriter, loc, accElement, 0.0));
    auto accType = resultType.clone(accElement);
    Value init = createFilled(rewriter, loc, accType, 0.0);
    Value sum;
    if (spatial == 2) {
      Value window = tensor::EmptyOp::create(rewriter, loc, kernel, accElement);
      sum = linalg::PoolingNchwSumOp::create(rewriter, loc, TypeRange{accType},
                                             ValueRange{padded, window}, init,
                                             getI64Vector(rewriter, strides),
                                             getI64Vector(rewriter, dilations))
                .getResult(0);
    } else {
      sum = buildGenericPool(rewriter, loc, padded, init, kernel, strides,
                             dilations, addScalars);
    }

    // Divisors: the window elements that count, per output position.
    SmallVector<int64_t> outShape(resultType.getShape().drop_front(2));
    SmallVector<double> divisors = {1.0};
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t inSize = inputType.getDimSize(2 + i);
      int64_t begin = op.getCountIncludePad() ? -pads[i] : 0;
      int64_t end =
          op.getCountIncludePad() ? inSize + pads[spatial + i] : inSize;
      SmallVector<int64_t> counts =
          countWindowElements(outShape[i], kernel[i], strides[i], dilations[i],
                              pads[i], begin, end);
      SmallVector<double> next;
      for (double d : divisors)
        for (int64_t count : counts)
          next.push_back(d * count);
      divisors = std::move(next);
    }
    bool uniform = llvm::all_equal(divisors);
    Value result;
    if (uniform) {
      Value divisor =
          createScalarConstant(rewriter, loc, accElement, divisors.front());
      result = buildBroadcastElementwise(
          rewriter, loc, accType, sum,
          [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
            return arith::DivFOp::create(nb, nloc, args[0], divisor);
          });
    } else {
      auto divisorType = RankedTensorType::get(outShape, accElement);
      SmallVector<Attribute> values;
      for (double d : divisors)
        values.push_back(rewriter.getFloatAttr(accElement, d));
      Value divisorTensor = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(divisorType, values));
      result = buildBroadcastElementwise(
          rewriter, loc, accType, {sum, divisorTensor},
          [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
            return arith::DivFOp::create(nb, nloc, args[0], args[1]);
          });
    }
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

/// GlobalAveragePool and GlobalMaxPool: a reduction over the spatial
/// dimensions into [N, C], expanded back to [N, C, 1, ...].
template <typename Op, bool IsMax>
struct GlobalPoolLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getResult().getType()));
    Value input = adaptor.getInput();
    if (!allStatic(input))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Type element = resultType.getElementType();
    Type accElement = getComputeType(element);
    input = castElements(rewriter, loc, input, accElement);
    RankedTensorType inputType = getTensorType(input);
    Value result;
    if (IsMax) {
      auto floatType = cast<FloatType>(accElement);
      double lowest = -std::numeric_limits<double>::infinity();
      (void)floatType;
      result = reduceTrailing(
          rewriter, loc, input, 2, lowest,
          [](OpBuilder &nb, Location nloc, Value x, Value acc) -> Value {
            return arith::MaximumFOp::create(nb, nloc, x, acc);
          });
    } else {
      Value sum = reduceTrailing(rewriter, loc, input, 2, 0.0, addScalars);
      int64_t count = inputType.getNumElements() /
                      (inputType.getDimSize(0) * inputType.getDimSize(1));
      Value divisor = createScalarConstant(rewriter, loc, accElement, count);
      result = buildBroadcastElementwise(
          rewriter, loc, getTensorType(sum), sum,
          [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
            return arith::DivFOp::create(nb, nloc, args[0], divisor);
          });
    }
    result = castElements(rewriter, loc, result, element);
    rewriter.replaceOp(op,
                       reshapeTo(rewriter, loc, result, resultType.getShape()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

struct BatchNormLowering : OpConversionPattern<graph::BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::BatchNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!allStatic(adaptor.getOperands()))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    RankedTensorType type = getTensorType(adaptor.getInput());
    Type element = type.getElementType();
    Type accElement = getComputeType(element);
    int64_t rank = type.getRank();
    MLIRContext *ctx = rewriter.getContext();
    AffineMap full = rewriter.getMultiDimIdentityMap(rank);
    AffineMap channel = getDimsMap(ctx, rank, {1});
    Value eps = createScalarConstant(rewriter, loc, accElement,
                                     op.getEpsilon().convertToFloat());
    Value init =
        tensor::EmptyOp::create(rewriter, loc, type.getShape(), element);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{type}, adaptor.getOperands(), init,
            {full, channel, channel, channel, channel, full},
            getIterators(rank, 0),
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              SmallVector<Value> v;
              for (Value arg : args.drop_back())
                v.push_back(
                    arg.getType() == accElement
                        ? arg
                        : arith::ExtFOp::create(nb, nloc, accElement, arg)
                              .getResult());
              // (x - mean) * scale / sqrt(var + eps) + bias
              Value inv = math::RsqrtOp::create(
                  nb, nloc, arith::AddFOp::create(nb, nloc, v[4], eps));
              Value factor = arith::MulFOp::create(nb, nloc, v[1], inv);
              Value dev = arith::SubFOp::create(nb, nloc, v[0], v[3]);
              Value y = arith::AddFOp::create(
                  nb, nloc, arith::MulFOp::create(nb, nloc, dev, factor), v[2]);
              if (y.getType() != element)
                y = arith::TruncFOp::create(nb, nloc, element, y);
              linalg::YieldOp::create(nb, nloc, y);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `normalized * scale + bias`, with the operands broadcast as numpy does
/// after `align` maps each to the result's dimensions.
Value applyScaleAndBias(OpBuilder &b, Location loc, Value normalized,
                        Value scale, Value bias) {
  SmallVector<Value> operands = {normalized, scale};
  if (bias)
    operands.push_back(bias);
  return buildBroadcastElementwise(
      b, loc, getTensorType(normalized), operands,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        Value y = arith::MulFOp::create(nb, nloc, args[0], args[1]);
        if (args.size() == 3)
          y = arith::AddFOp::create(nb, nloc, y, args[2]);
        return y;
      });
}

struct InstanceNormLowering : OpConversionPattern<graph::InstanceNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::InstanceNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!allStatic(adaptor.getOperands()))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    RankedTensorType type = getTensorType(adaptor.getInput());
    Type element = type.getElementType();
    Type accElement = getComputeType(element);
    int64_t rank = type.getRank();
    Value x = castElements(rewriter, loc, adaptor.getInput(), accElement);
    Value normalized =
        buildNormalized(rewriter, loc, x, 2, op.getEpsilon().convertToFloat());
    // Per-channel parameters as [C, 1, ...] so that they broadcast.
    auto perChannel = [&](Value param) {
      SmallVector<int64_t> shape = {type.getDimSize(1)};
      shape.append(rank - 2, 1);
      return reshapeTo(rewriter, loc,
                       castElements(rewriter, loc, param, accElement), shape);
    };
    Value result = applyScaleAndBias(rewriter, loc, normalized,
                                     perChannel(adaptor.getScale()),
                                     perChannel(adaptor.getBias()));
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

struct LayerNormLowering : OpConversionPattern<graph::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = getTensorType(adaptor.getInput());
    // `?` only before the normalized dimensions (kiln.dim_symbols).
    if (!allStatic({adaptor.getScale(), adaptor.getBias()}) ||
        llvm::any_of(type.getShape().drop_front(op.getAxis()),
                     ShapedType::isDynamic))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Type element = type.getElementType();
    Type accElement = getComputeType(element);
    Value x = castElements(rewriter, loc, adaptor.getInput(), accElement);
    Value normalized = buildNormalized(rewriter, loc, x, op.getAxis(),
                                       op.getEpsilon().convertToFloat());
    Value bias = adaptor.getBias();
    if (bias)
      bias = castElements(rewriter, loc, bias, accElement);
    Value result = applyScaleAndBias(
        rewriter, loc, normalized,
        castElements(rewriter, loc, adaptor.getScale(), accElement), bias);
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

/// LRN: the squares summed over a window of channels (a pooling of the
/// channel dimension, padded with zeros), then the elementwise formula.
struct LRNLowering : OpConversionPattern<graph::LRNOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::LRNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!allStatic(adaptor.getInput()))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = getTensorType(adaptor.getInput());
    Type element = type.getElementType();
    Type accElement = getComputeType(element);
    int64_t rank = type.getRank(), size = op.getSize();
    Value x = castElements(rewriter, loc, adaptor.getInput(), accElement);
    auto accType = getTensorType(x);
    Value squares = buildBroadcastElementwise(
        rewriter, loc, accType, x,
        [](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
          return arith::MulFOp::create(nb, nloc, args[0], args[0]);
        });
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    low[1] = (size - 1) / 2;
    high[1] = size / 2;
    Value padded =
        padTensor(rewriter, loc, squares, low, high,
                  createScalarConstant(rewriter, loc, accElement, 0.0));
    // Loops: the result's dimensions, then the window.
    SmallVector<AffineExpr> readExprs;
    for (int64_t d = 0; d < rank; ++d)
      readExprs.push_back(d == 1 ? getAffineDimExpr(1, ctx) +
                                       getAffineDimExpr(rank, ctx)
                                 : getAffineDimExpr(d, ctx));
    Value window = tensor::EmptyOp::create(rewriter, loc, {size}, accElement);
    Value sums =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{accType}, ValueRange{padded, window},
            createFilled(rewriter, loc, accType, 0.0),
            {AffineMap::get(rank + 1, 0, readExprs, ctx),
             getDimsMap(ctx, rank + 1, {rank}),
             getDimsMap(ctx, rank + 1,
                        llvm::to_vector(llvm::seq<int64_t>(0, rank)))},
            getIterators(rank, 1),
            [](OpBuilder &nb, Location nloc, ValueRange args) {
              yieldValue(nb, nloc,
                         arith::AddFOp::create(nb, nloc, args[0], args[2]));
            })
            .getResult(0);
    Value scale = createScalarConstant(
        rewriter, loc, accElement,
        static_cast<double>(op.getAlpha().convertToFloat()) / size);
    Value bias = createScalarConstant(rewriter, loc, accElement,
                                      op.getBias().convertToFloat());
    double betaValue = op.getBeta().convertToFloat();
    Value beta = createScalarConstant(rewriter, loc, accElement, betaValue);
    Value negativeBeta =
        createScalarConstant(rewriter, loc, accElement, -betaValue);
    // With a positive bias and a non-negative alpha the base is positive,
    // and base^-beta is exp(-beta * log(base)), or for the usual beta of
    // 0.75 (AlexNet's, Inception's) 1 / (sqrt(base) * sqrt(sqrt(base))):
    // both vectorize, where math.powf is a libm call per element (0.5
    // GFLOP/s, a fifth of Inception v1's time).
    bool positiveBase = op.getBias().convertToFloat() > 0 &&
                        op.getAlpha().convertToFloat() >= 0;
    Value result = buildBroadcastElementwise(
        rewriter, loc, accType, {x, sums},
        [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
          Value base = arith::AddFOp::create(
              nb, nloc, bias, arith::MulFOp::create(nb, nloc, scale, args[1]));
          if (positiveBase && betaValue == 0.75) {
            Value root = math::SqrtOp::create(nb, nloc, base);
            Value denom = arith::MulFOp::create(
                nb, nloc, root, math::SqrtOp::create(nb, nloc, root));
            return arith::DivFOp::create(nb, nloc, args[0], denom);
          }
          if (positiveBase) {
            Value power = math::ExpOp::create(
                nb, nloc,
                arith::MulFOp::create(nb, nloc, negativeBeta,
                                      math::LogOp::create(nb, nloc, base)));
            return arith::MulFOp::create(nb, nloc, args[0], power);
          }
          Value denom = math::PowFOp::create(nb, nloc, base, beta);
          return arith::DivFOp::create(nb, nloc, args[0], denom);
        });
    rewriter.replaceOp(op, castElements(rewriter, loc, result, element));
    return success();
  }
};

} // namespace

void populateNNToLinalgPatterns(const TypeConverter &converter,
                                RewritePatternSet &patterns) {
  patterns.add<AveragePoolLowering, BatchNormLowering, ConvLowering,
               ConvTransposeLowering, EinsumLowering, FusedConvLowering,
               FusedMatMulLowering, GemmLowering,
               GlobalPoolLowering<graph::GlobalAveragePoolOp, false>,
               GlobalPoolLowering<graph::GlobalMaxPoolOp, true>,
               InstanceNormLowering, LayerNormLowering, LRNLowering,
               MatMulLowering, MaxPoolLowering>(converter,
                                                patterns.getContext());
}

} // namespace kiln
