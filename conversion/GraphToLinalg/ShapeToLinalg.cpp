//===- ShapeToLinalg.cpp - Lowering of the shape op family ----------------===//
//
// Data movement becomes tensor ops where one fits (collapse/expand_shape for
// reshapes, extract_slice/insert_slice for slices, splits and concatenation,
// linalg.transpose) and a linalg.generic over the result otherwise: each
// result element computes the position it reads and takes it with
// tensor.extract (gathers, padding, tiling, resizing). Indices read from
// tensors are wrapped when negative and clamped to the dimension, so an
// index out of range never reads outside the tensor; a gather's or
// scatter's run-time indices are also checked (kiln.check_index), so that
// such an index fails the run, as ONNX has it.
//
// The lowerings need static shapes; an op whose shape is still dynamic is
// left for an error.
//
//===----------------------------------------------------------------------===//

#include "codegen/Utils/Utils.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace kiln {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Computes one result element from the result's indices and one scalar of
/// each input.
using IndexedBodyBuilder = llvm::function_ref<Value(
    OpBuilder &, Location, ArrayRef<Value> indices, ValueRange args)>;

/// A linalg.generic producing `resultType` whose body sees the result
/// indices (linalg.index) and the elements of `inputs` read through
/// `inputMaps`; `sizes` gives the result's where it has `?` ones.
Value buildIndexedGeneric(OpBuilder &b, Location loc,
                          RankedTensorType resultType, ValueRange inputs,
                          ArrayRef<AffineMap> inputMaps,
                          IndexedBodyBuilder body,
                          ArrayRef<OpFoldResult> sizes = {}) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init =
      sizes.empty()
          ? tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                    resultType.getElementType())
          : tensor::EmptyOp::create(b, loc, sizes, resultType.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rank; ++d)
          indices.push_back(linalg::IndexOp::create(nested, nestedLoc, d));
        Value result = body(nested, nestedLoc, indices, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

/// Converts an index element read from a tensor of graph element type
/// `graphType` to `index`.
Value toIndex(OpBuilder &b, Location loc, Value value, Type graphType) {
  if (isUnsignedInteger(graphType) || graphType.isInteger(1))
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), value);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
}

/// Clamps an index into [low, high].
Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t low,
                 int64_t high) {
  index = arith::MaxSIOp::create(b, loc, index, indexConstant(b, loc, low));
  return arith::MinSIOp::create(b, loc, index,
                                indexConstant(b, loc, std::max(high, low)));
}

/// Wraps a negative index by adding `size` (ONNX's indices from the end).
Value wrapNegative(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         index, indexConstant(b, loc, 0));
  Value wrapped =
      arith::AddIOp::create(b, loc, index, indexConstant(b, loc, size));
  return arith::SelectOp::create(b, loc, negative, wrapped, index);
}

/// Wraps a negative index by adding `size`, then clamps it into [0, size).
Value wrapAndClamp(OpBuilder &b, Location loc, Value index, int64_t size) {
  return clampIndex(b, loc, wrapNegative(b, loc, index, size), 0, size - 1);
}

/// The ONNX node an op comes from, "name (OpType)", or "" when unknown.
std::string nodeOf(Location loc) {
  std::string node;
  loc->walk([&](Location nested) {
    if (auto name = dyn_cast<NameLoc>(nested)) {
      node = name.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return node;
}

/// Checks the run-time indices of gather or scatter `op` (graph::
/// getIndexedDims): one reduction finds their least and greatest value, per
/// position of the last dimension where each position indexes a dimension
/// of its own, and a kiln.check_index per range fails the run when one lies
/// outside. Constant indices need no check here: the compiler refuses
/// those out of range (lib/Pipeline/Compiler.cpp).
void checkIndices(OpBuilder &b, Operation *op, Value indices) {
  std::optional<graph::IndexedDims> dims = graph::getIndexedDims(op);
  if (!dims || matchPattern(indices, m_Constant()))
    return;
  Location loc = op->getLoc();
  auto type = getTensorType(indices);
  auto elementType = cast<IntegerType>(type.getElementType());
  bool isUnsigned = isUnsignedInteger(
      cast<RankedTensorType>(dims->indices.getType()).getElementType());
  unsigned width = elementType.getWidth();
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  if (dims->perPosition) {
    shape.push_back(dims->sizes.size());
    outExprs.push_back(b.getAffineDimExpr(rank - 1));
    iterators.back() = utils::IteratorType::parallel;
  }
  auto outType = RankedTensorType::get(shape, elementType);
  auto constant = [&](const APInt &value) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(elementType, value));
  };
  Value least =
      createFilled(b, loc, outType,
                   constant(isUnsigned ? APInt::getMaxValue(width)
                                       : APInt::getSignedMaxValue(width)));
  Value greatest =
      createFilled(b, loc, outType,
                   constant(isUnsigned ? APInt::getMinValue(width)
                                       : APInt::getSignedMinValue(width)));
  MLIRContext *ctx = b.getContext();
  AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
  auto range = linalg::GenericOp::create(
      b, loc, TypeRange{outType, outType}, ValueRange{indices},
      ValueRange{least, greatest},
      {b.getMultiDimIdentityMap(rank), outMap, outMap}, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value low, high;
        if (isUnsigned) {
          low = arith::MinUIOp::create(nested, nestedLoc, args[0], args[1]);
          high = arith::MaxUIOp::create(nested, nestedLoc, args[0], args[2]);
        } else {
          low = arith::MinSIOp::create(nested, nestedLoc, args[0], args[1]);
          high = arith::MaxSIOp::create(nested, nestedLoc, args[0], args[2]);
        }
        linalg::YieldOp::create(nested, nestedLoc, ValueRange{low, high});
      });
  std::string source = nodeOf(loc);
  for (auto [j, size] : llvm::enumerate(dims->sizes)) {
    if (size <= 0)
      continue;
    SmallVector<Value> at;
    if (dims->perPosition)
      at.push_back(indexConstant(b, loc, j));
    auto toI64 = [&](Value value) -> Value {
      if (width == 64)
        return value;
      if (isUnsigned)
        return arith::ExtUIOp::create(b, loc, b.getI64Type(), value);
      return arith::ExtSIOp::create(b, loc, b.getI64Type(), value);
    };
    Value low =
        toI64(tensor::ExtractOp::create(b, loc, range.getResult(0), at));
    Value high =
        toI64(tensor::ExtractOp::create(b, loc, range.getResult(1), at));
    std::string what = "index";
    if (dims->perPosition)
      what = "index " + std::to_string(j) + " of a tuple";
    CheckIndexOp::create(b, loc, low, high, dims->least(size), size - 1, source,
                         what);
  }
}

template <typename Op> struct StaticLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  using Adaptor = typename Op::Adaptor;

  LogicalResult
  matchAndRewrite(Op op, Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!handlesSymbolicSizes() && !allStatic(op.getOperation()))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    SmallVector<Type> resultTypes;
    if (failed(this->getTypeConverter()->convertTypes(op->getResultTypes(),
                                                      resultTypes)))
      return rewriter.notifyMatchFailure(op, "result type not convertible");
    return lower(op, adaptor, resultTypes, rewriter);
  }

  virtual LogicalResult lower(Op op, Adaptor adaptor,
                              ArrayRef<Type> resultTypes,
                              ConversionPatternRewriter &rewriter) const = 0;

  /// Whether `lower` takes `?` sizes too (kiln.dim_symbols).
  virtual bool handlesSymbolicSizes() const { return false; }
};

//===----------------------------------------------------------------------===//
// Reshape and transpose
//===----------------------------------------------------------------------===//

struct ReshapeLowering : StaticLowering<graph::ReshapeOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ReshapeOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inType = getTensorType(input);
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    if (inType == outType) {
      rewriter.replaceOp(op, input);
      return success();
    }
    if (!inType.hasStaticShape() || !outType.hasStaticShape())
      return lowerSymbolic(op, input, outType, rewriter);
    // Through a 1-D tensor of every element: collapse, then expand.
    auto flatType = RankedTensorType::get({inType.getNumElements()},
                                          inType.getElementType());
    Value flat = input;
    if (inType.getRank() == 0) {
      flat = tensor::ExpandShapeOp::create(rewriter, loc, flatType, input,
                                           ArrayRef<ReassociationIndices>{});
    } else if (inType.getRank() > 1) {
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, inType.getRank()));
      flat = tensor::CollapseShapeOp::create(
          rewriter, loc, flatType, input, ArrayRef<ReassociationIndices>{all});
    }
    Value result = flat;
    if (outType.getRank() == 0) {
      result = tensor::CollapseShapeOp::create(
          rewriter, loc, outType, flat, ArrayRef<ReassociationIndices>{});
    } else if (outType.getRank() > 1) {
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, outType.getRank()));
      result = tensor::ExpandShapeOp::create(
          rewriter, loc, outType, flat, ArrayRef<ReassociationIndices>{all});
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  /// `?` sizes (kiln.dim_symbols): each result size is a constant, the
  /// input's at the same index (a `0` of the shape) or, for the `-1`, the
  /// element count over the others' product; through a 1-D tensor.
  LogicalResult lowerSymbolic(graph::ReshapeOp op, Value input,
                              RankedTensorType outType,
                              ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto inType = getTensorType(input);
    // (allow_zero matters only where the shape has a 0: a zero size.)
    if ((op.getAllowZero() && llvm::is_contained(op.getShape(), 0)) ||
        inType.getRank() == 0 || outType.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "a symbolic scalar reshape");
    SmallVector<OpFoldResult> inSizes =
        tensor::getMixedSizes(rewriter, loc, input);
    auto product = [&](ArrayRef<OpFoldResult> sizes) -> Value {
      Value result = indexConstant(rewriter, loc, 1);
      for (OpFoldResult size : sizes)
        result = arith::MulIOp::create(
            rewriter, loc, result,
            getValueOrCreateConstantIndexOp(rewriter, loc, size));
      return result;
    };
    SmallVector<OpFoldResult> outSizes;
    int64_t inferred = -1;
    for (auto [d, spec] : llvm::enumerate(op.getShape())) {
      if (spec == 0 && int64_t(d) < inType.getRank())
        outSizes.push_back(inSizes[d]);
      else if (spec > 0)
        outSizes.push_back(rewriter.getIndexAttr(spec));
      else
        inferred = d, outSizes.push_back(OpFoldResult());
    }
    if (inferred >= 0) {
      SmallVector<OpFoldResult> others(outSizes);
      others.erase(others.begin() + inferred);
      outSizes[inferred] = arith::DivUIOp::create(
                               rewriter, loc, product(inSizes), product(others))
                               .getResult();
    }
    // The sizes that the type knows (a `-1` beside `?` sizes copied).
    for (int64_t d = 0; d < outType.getRank(); ++d)
      if (!outType.isDynamicDim(d))
        outSizes[d] = rewriter.getIndexAttr(outType.getDimSize(d));
    // Directly where dimensions only split or merge (heads out of a
    // hidden size and back): through a 1-D tensor, an expansion into two
    // or more run-time sizes at once is one that upstream's lowering of
    // strided metadata cannot take (it crashed on [b*s*128] to [b, s, 4,
    // 32]).
    if (auto reassociation =
            getReassociationIndicesForReshape(inType, outType)) {
      Value result;
      if (outType.getRank() < inType.getRank())
        result = tensor::CollapseShapeOp::create(rewriter, loc, outType, input,
                                                 *reassociation);
      else
        result = tensor::ExpandShapeOp::create(rewriter, loc, outType, input,
                                               *reassociation, outSizes);
      rewriter.replaceOp(op, result);
      return success();
    }
    if (llvm::count_if(outType.getShape(), ShapedType::isDynamic) > 1)
      return rewriter.notifyMatchFailure(
          op, "two run-time sizes out of one dimension");
    ReassociationIndices all =
        llvm::to_vector(llvm::seq<int64_t>(0, inType.getRank()));
    Value flat = input;
    if (inType.getRank() > 1)
      flat = tensor::CollapseShapeOp::create(
          rewriter, loc, input, ArrayRef<ReassociationIndices>{all});
    Value result = flat;
    if (outType.getRank() > 1) {
      ReassociationIndices outAll =
          llvm::to_vector(llvm::seq<int64_t>(0, outType.getRank()));
      result = tensor::ExpandShapeOp::create(
          rewriter, loc, outType, flat, ArrayRef<ReassociationIndices>{outAll},
          outSizes);
    } else if (result.getType() != outType) {
      result = tensor::CastOp::create(rewriter, loc, outType, result);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

struct TransposeLowering : StaticLowering<graph::TransposeOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::TransposeOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    Value input = adaptor.getInput();
    SmallVector<OpFoldResult> sizes;
    for (int64_t p : op.getPerm())
      sizes.push_back(tensor::getMixedSize(rewriter, op.getLoc(), input, p));
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), sizes,
                                         outType.getElementType());
    auto transpose = linalg::TransposeOp::create(rewriter, op.getLoc(), input,
                                                 init, op.getPerm());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

//===----------------------------------------------------------------------===//
// Concat, split, slice
//===----------------------------------------------------------------------===//

/// tensor.insert_slice of each input into an empty tensor. Bufferization
/// (after kiln-codegen-duplicate-destinations has pointed each input's empty
/// tensor at its slice) has the op that makes an input write it in place,
/// at its strides where a dimension before the axis is above 1; an input
/// that no op writes (a constant, an argument) is copied in.
struct ConcatLowering : StaticLowering<graph::ConcatOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ConcatOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    int64_t rank = outType.getRank(), axis = op.getAxis();
    SmallVector<Value> inputs;
    SmallVector<int64_t> starts;
    int64_t offset = 0;
    for (Value input : adaptor.getInputs()) {
      int64_t size = getTensorType(input).getDimSize(axis);
      if (size == 0)
        continue;
      inputs.push_back(input);
      starts.push_back(offset);
      offset += size;
    }
    if (inputs.size() == 1) {
      rewriter.replaceOp(op, inputs.front());
      return success();
    }
    Value result = tensor::EmptyOp::create(rewriter, loc, outType.getShape(),
                                           outType.getElementType());
    for (auto [input, start] : llvm::zip(inputs, starts)) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(start);
      SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(
          rewriter.getContext(), getTensorType(input).getShape());
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Reads `input` at `offsets[d] + steps[d] * i` along every dimension `d`
/// with one linalg.generic (a strided, possibly reversed, window), `sizes`
/// giving the result's where it has `?` ones. The
/// element is read with tensor.extract: an input indexing map would make
/// linalg derive the loop bounds from the larger input.
Value buildStridedWindow(OpBuilder &b, Location loc, Value input,
                         RankedTensorType resultType, ArrayRef<int64_t> offsets,
                         ArrayRef<int64_t> steps,
                         ArrayRef<OpFoldResult> sizes = {}) {
  return buildIndexedGeneric(
      b, loc, resultType, {}, {},
      [&](OpBuilder &nested, Location nestedLoc, ArrayRef<Value> ivs,
          ValueRange) -> Value {
        SmallVector<Value> at;
        for (auto [d, iv] : llvm::enumerate(ivs)) {
          Value scaled =
              arith::MulIOp::create(nested, nestedLoc, iv,
                                    indexConstant(nested, nestedLoc, steps[d]));
          at.push_back(arith::AddIOp::create(
              nested, nestedLoc, scaled,
              indexConstant(nested, nestedLoc, offsets[d])));
        }
        return tensor::ExtractOp::create(nested, nestedLoc, input, at);
      },
      sizes);
}

struct SplitLowering : StaticLowering<graph::SplitOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::SplitOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    int64_t axis = op.getAxis();
    int64_t rank = op.getInput().getType().getRank();
    SmallVector<Value> results;
    SmallVector<int64_t> offsets(rank, 0), steps(rank, 1);
    for (Type type : resultTypes) {
      auto outType = cast<RankedTensorType>(type);
      // `?` dimensions (not the axis: SymbolicDims) are taken whole.
      SmallVector<OpFoldResult> sizes;
      if (!outType.hasStaticShape())
        sizes =
            tensor::getMixedSizes(rewriter, op.getLoc(), adaptor.getInput());
      if (!sizes.empty())
        sizes[axis] = rewriter.getIndexAttr(outType.getDimSize(axis));
      results.push_back(buildStridedWindow(rewriter, op.getLoc(),
                                           adaptor.getInput(), outType, offsets,
                                           steps, sizes));
      offsets[axis] += outType.getDimSize(axis);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

/// A `?` dimension is taken whole (SymbolicDims refuses a slice of one):
/// the window's size there is the input's.
struct SliceLowering : StaticLowering<graph::SliceOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::SliceOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    SmallVector<int64_t> starts(op.getStarts()), steps(op.getSteps());
    SmallVector<OpFoldResult> sizes;
    if (!outType.hasStaticShape())
      for (int64_t d = 0; d < outType.getRank(); ++d) {
        if (!outType.isDynamicDim(d)) {
          sizes.push_back(rewriter.getIndexAttr(outType.getDimSize(d)));
          continue;
        }
        starts[d] = 0;
        steps[d] = 1;
        sizes.push_back(
            tensor::getMixedSize(rewriter, op.getLoc(), adaptor.getInput(), d));
      }
    rewriter.replaceOp(op, buildStridedWindow(rewriter, op.getLoc(),
                                              adaptor.getInput(), outType,
                                              starts, steps, sizes));
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

/// One tensor.dim per dimension, as i64.
struct ShapeLowering : StaticLowering<graph::ShapeOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ShapeOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < getTensorType(input).getRank(); ++d)
      sizes.push_back(arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI64Type(),
          tensor::DimOp::create(rewriter, loc, input, d)));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, resultTypes[0],
                                                        sizes);
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

/// A kiln.check_index of the size against its range, and the size
/// clamped into it.
struct CheckSizeLowering : StaticLowering<graph::CheckSizeOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::CheckSizeOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value size = tensor::ExtractOp::create(rewriter, loc, adaptor.getInput(),
                                           ValueRange{});
    // (I64Attr reads as uint64_t.)
    int64_t low = op.getLow(), high = op.getHigh();
    CheckIndexOp::create(rewriter, loc, size, size, low, high, nodeOf(loc),
                         op.getWhat());
    auto bound = [&](int64_t value) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI64IntegerAttr(value));
    };
    Value clamped = arith::MinSIOp::create(
        rewriter, loc, arith::MaxSIOp::create(rewriter, loc, size, bound(low)),
        bound(high));
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, resultTypes[0],
                                                        clamped);
    return success();
  }
};

/// A tensor.extract_slice from 0, as long as the other tensor's axis.
struct PrefixLowering : StaticLowering<graph::PrefixOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::PrefixOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, input);
    sizes[op.getAxis()] = tensor::getMixedSize(rewriter, loc, adaptor.getLike(),
                                               op.getLikeAxis());
    int64_t rank = sizes.size();
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, cast<RankedTensorType>(resultTypes[0]), input,
        SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)), sizes,
        SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

struct GatherLowering : StaticLowering<graph::GatherOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::GatherOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    Value data = adaptor.getData();
    auto dataType = getTensorType(data);
    // `?` sizes in the indices only (a sequence of token ids).
    if (!dataType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static data");
    checkIndices(rewriter, op, adaptor.getIndices());
    int64_t axis = op.getAxis();
    SmallVector<OpFoldResult> sizes;
    if (!outType.hasStaticShape()) {
      for (int64_t d = 0; d < axis; ++d)
        sizes.push_back(rewriter.getIndexAttr(dataType.getDimSize(d)));
      llvm::append_range(sizes, tensor::getMixedSizes(rewriter, op.getLoc(),
                                                      adaptor.getIndices()));
      for (int64_t d = axis + 1; d < dataType.getRank(); ++d)
        sizes.push_back(rewriter.getIndexAttr(dataType.getDimSize(d)));
    }
    int64_t indexRank = op.getIndices().getType().getRank();
    int64_t rank = outType.getRank();
    Type indexType = op.getIndices().getType().getElementType();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < indexRank; ++i)
      exprs.push_back(getAffineDimExpr(axis + i, ctx));
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), outType, adaptor.getIndices(),
        AffineMap::get(rank, 0, exprs, ctx),
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Value position =
              wrapAndClamp(b, loc, toIndex(b, loc, args[0], indexType),
                           dataType.getDimSize(axis));
          SmallVector<Value> at(ivs.take_front(axis));
          at.push_back(position);
          llvm::append_range(at, ivs.drop_front(axis + indexRank));
          return tensor::ExtractOp::create(b, loc, data, at);
        },
        sizes);
    rewriter.replaceOp(op, result);
    return success();
  }
  bool handlesSymbolicSizes() const override { return true; }
};

struct GatherElementsLowering : StaticLowering<graph::GatherElementsOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::GatherElementsOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    checkIndices(rewriter, op, adaptor.getIndices());
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    Value data = adaptor.getData();
    int64_t axis = op.getAxis();
    int64_t axisSize = getTensorType(data).getDimSize(axis);
    Type indexType = op.getIndices().getType().getElementType();
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), outType, adaptor.getIndices(),
        rewriter.getMultiDimIdentityMap(outType.getRank()),
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          SmallVector<Value> at(ivs);
          at[axis] = wrapAndClamp(b, loc, toIndex(b, loc, args[0], indexType),
                                  axisSize);
          return tensor::ExtractOp::create(b, loc, data, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherNDLowering : StaticLowering<graph::GatherNDOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::GatherNDOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    checkIndices(rewriter, op, adaptor.getIndices());
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto dataType = getTensorType(data);
    auto indicesType = getTensorType(indices);
    int64_t batchDims = op.getBatchDims();
    int64_t indexRank = indicesType.getRank();
    int64_t depth = indicesType.getDimSize(indexRank - 1);
    Type indexType = op.getIndices().getType().getElementType();
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), outType, {}, {},
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          SmallVector<Value> at(ivs.take_front(batchDims));
          SmallVector<Value> indexAt(ivs.take_front(indexRank - 1));
          indexAt.push_back(Value());
          for (int64_t j = 0; j < depth; ++j) {
            indexAt.back() = indexConstant(b, loc, j);
            Value raw = tensor::ExtractOp::create(b, loc, indices, indexAt);
            at.push_back(wrapAndClamp(b, loc, toIndex(b, loc, raw, indexType),
                                      dataType.getDimSize(batchDims + j)));
          }
          llvm::append_range(at, ivs.drop_front(indexRank - 1));
          return tensor::ExtractOp::create(b, loc, data, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// Combines an update with the element it lands on; `graphType` is the
/// element type before conversion (its signedness picks max and min).
Value combineScatter(OpBuilder &b, Location loc,
                     graph::ScatterReduction reduction, Value old, Value update,
                     Type graphType) {
  Type type = old.getType();
  bool isFloat = isa<FloatType>(type), isBool = type.isInteger(1);
  bool isUnsigned = isUnsignedInteger(graphType) || isBool;
  switch (reduction) {
  case graph::ScatterReduction::None:
    return update;
  case graph::ScatterReduction::Add:
    if (isFloat)
      return arith::AddFOp::create(b, loc, old, update);
    if (isBool)
      return arith::OrIOp::create(b, loc, old, update);
    return arith::AddIOp::create(b, loc, old, update);
  case graph::ScatterReduction::Mul:
    if (isFloat)
      return arith::MulFOp::create(b, loc, old, update);
    if (isBool)
      return arith::AndIOp::create(b, loc, old, update);
    return arith::MulIOp::create(b, loc, old, update);
  case graph::ScatterReduction::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, old, update);
    if (isUnsigned)
      return arith::MaxUIOp::create(b, loc, old, update);
    return arith::MaxSIOp::create(b, loc, old, update);
  case graph::ScatterReduction::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, old, update);
    if (isUnsigned)
      return arith::MinUIOp::create(b, loc, old, update);
    return arith::MinSIOp::create(b, loc, old, update);
  }
  llvm_unreachable("every reduction is handled");
}

/// Wraps a negative index by adding `size`; `inRange` becomes whether the
/// result lies in [0, size).
Value wrapIndex(OpBuilder &b, Location loc, Value index, int64_t size,
                Value &inRange) {
  Value zero = indexConstant(b, loc, 0);
  index = wrapNegative(b, loc, index, size);
  Value low =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, zero);
  Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index,
                                     indexConstant(b, loc, size));
  Value both = arith::AndIOp::create(b, loc, low, high);
  inRange = inRange ? arith::AndIOp::create(b, loc, inRange, both) : both;
  return index;
}

/// Where one update goes: its position in the result and whether every
/// index of it was in range, from the loop's indices over the updates.
using ScatterTarget = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, ValueRange updateIndices, Value &inRange)>;

/// `data` with each element of `updates` combined into the position `target`
/// gives it, in order: a loop nest over the updates carrying the result, so
/// that later updates see earlier ones (duplicates and reductions). An
/// update out of range is dropped.
Value buildScatter(OpBuilder &b, Location loc, Value data, Value updates,
                   graph::ScatterReduction reduction, Type graphType,
                   ScatterTarget target) {
  auto updatesType = getTensorType(updates);
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t size : updatesType.getShape()) {
    lbs.push_back(indexConstant(b, loc, 0));
    ubs.push_back(indexConstant(b, loc, size));
    steps.push_back(indexConstant(b, loc, 1));
  }
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps, ValueRange{data},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs,
          ValueRange carried) -> scf::ValueVector {
        Value result = carried[0];
        Value inRange;
        SmallVector<Value> at = target(nb, nloc, ivs, inRange);
        auto write = [&](OpBuilder &wb, Location wloc) {
          Value update = tensor::ExtractOp::create(wb, wloc, updates, ivs);
          Value old = tensor::ExtractOp::create(wb, wloc, result, at);
          Value value =
              combineScatter(wb, wloc, reduction, old, update, graphType);
          scf::YieldOp::create(
              wb, wloc,
              ValueRange{tensor::InsertOp::create(wb, wloc, value, result, at)
                             .getResult()});
        };
        auto keep = [&](OpBuilder &wb, Location wloc) {
          scf::YieldOp::create(wb, wloc, ValueRange{result});
        };
        return {scf::IfOp::create(nb, nloc, inRange, write, keep).getResult(0)};
      });
  if (nest.results.empty())
    return data; // no updates
  return nest.results[0];
}

struct ScatterElementsLowering : StaticLowering<graph::ScatterElementsOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ScatterElementsOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    checkIndices(rewriter, op, adaptor.getIndices());
    Value indices = adaptor.getIndices();
    int64_t axis = op.getAxis();
    int64_t axisSize = getTensorType(adaptor.getData()).getDimSize(axis);
    Type indexType = op.getIndices().getType().getElementType();
    Value result = buildScatter(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getUpdates(),
        op.getReduction(), op.getData().getType().getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange ivs, Value &inRange) {
          SmallVector<Value> at(ivs);
          Value raw = tensor::ExtractOp::create(b, loc, indices, ivs);
          at[axis] = wrapIndex(b, loc, toIndex(b, loc, raw, indexType),
                               axisSize, inRange);
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ScatterNDLowering : StaticLowering<graph::ScatterNDOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ScatterNDOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    checkIndices(rewriter, op, adaptor.getIndices());
    Value indices = adaptor.getIndices();
    auto dataType = getTensorType(adaptor.getData());
    auto indicesType = getTensorType(indices);
    int64_t indexRank = indicesType.getRank();
    int64_t depth = indicesType.getDimSize(indexRank - 1);
    Type indexType = op.getIndices().getType().getElementType();
    Value result = buildScatter(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getUpdates(),
        op.getReduction(), op.getData().getType().getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange ivs, Value &inRange) {
          // updates[u..., r...] goes to data[indices[u..., :], r...].
          SmallVector<Value> at;
          SmallVector<Value> indexAt(ivs.take_front(indexRank - 1));
          indexAt.push_back(Value());
          for (int64_t j = 0; j < depth; ++j) {
            indexAt.back() = indexConstant(b, loc, j);
            Value raw = tensor::ExtractOp::create(b, loc, indices, indexAt);
            at.push_back(wrapIndex(b, loc, toIndex(b, loc, raw, indexType),
                                   dataType.getDimSize(j), inRange));
          }
          llvm::append_range(at, ivs.drop_front(indexRank - 1));
          return at;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Expand, tile, pad
//===----------------------------------------------------------------------===//

struct ExpandLowering : StaticLowering<graph::ExpandOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::ExpandOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Value result = buildBroadcastElementwise(
        rewriter, op.getLoc(), cast<RankedTensorType>(resultTypes[0]),
        adaptor.getInput(),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
  // A `?` size is the input's (SymbolicDims).
  bool handlesSymbolicSizes() const override { return true; }
};

struct TileLowering : StaticLowering<graph::TileOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::TileOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto inType = getTensorType(input);
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), cast<RankedTensorType>(resultTypes[0]), {}, {},
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange) -> Value {
          SmallVector<Value> at;
          for (auto [d, iv] : llvm::enumerate(ivs))
            at.push_back(arith::RemUIOp::create(
                b, loc, iv, indexConstant(b, loc, inType.getDimSize(d))));
          return tensor::ExtractOp::create(b, loc, input, at);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A pad by non-negative amounts is the input in the result's interior and
/// a border: with `constant`, a tensor.pad (kiln-codegen-pad-in-place then
/// has the input's producer write the interior directly and fills only the
/// border); with `reflect` and `edge`, the same tensor.pad, whose border is
/// then overwritten box by box (kiln-codegen-fill-borders' boxes), each box
/// read from the input at its mirrored or clamped positions: a copy, and
/// small gathers for the border. A crop (a negative amount), or an empty
/// input, is one linalg.generic over the whole result: the position read is
/// the result index less the padding before, mirrored (reflect) or clamped
/// (edge, and constant, which then selects the padding value outside the
/// input). That one generic was the only form before: a gather per element,
/// which the consumer fused into itself (a Sigmoid of a reflect-padded
/// 32x256x256 map took 1.4 ms, 0.34 without the pad).
struct PadLowering : StaticLowering<graph::PadOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::PadOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto inType = getTensorType(input);
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    int64_t rank = inType.getRank();
    StringRef mode = op.getMode();
    ArrayRef<int64_t> pads = op.getPads();
    if (inType.getNumElements() == 0) {
      if (mode != "constant" && outType.getNumElements() != 0)
        return rewriter.notifyMatchFailure(op, "edge or reflect padding of "
                                               "an empty tensor");
    }
    double padValue = op.getValue().convertToDouble();
    Location loc = op.getLoc();
    // The element at index `ivs` of the box of the result at `offsets` of
    // `sizes`. Along a dimension where the box lies within the input, the
    // position read is the index less the padding before, as it is.
    auto element = [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
                       ArrayRef<int64_t> offsets,
                       ArrayRef<int64_t> sizes) -> Value {
      Value inside;
      SmallVector<Value> at;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t size = inType.getDimSize(d);
        int64_t first = offsets[d] - pads[d];
        Value position = arith::SubIOp::create(b, loc, ivs[d],
                                               indexConstant(b, loc, -first));
        if (first >= 0 && first + sizes[d] <= size) {
          at.push_back(position);
          continue;
        }
        if (mode == "reflect" && size > 1) {
          // -p -> p, and size - 1 + p -> size - 1 - p.
          Value zero = indexConstant(b, loc, 0);
          Value negated = arith::SubIOp::create(b, loc, zero, position);
          position = arith::MaxSIOp::create(b, loc, position, negated);
          Value last = indexConstant(b, loc, 2 * (size - 1));
          Value mirrored = arith::SubIOp::create(b, loc, last, position);
          position = arith::MinSIOp::create(b, loc, position, mirrored);
        }
        if (mode == "constant") {
          Value ok =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, position,
                                    indexConstant(b, loc, size));
          inside = inside ? arith::AndIOp::create(b, loc, inside, ok) : ok;
        }
        at.push_back(clampIndex(b, loc, position, 0, size - 1));
      }
      if (inType.getNumElements() == 0)
        return createScalarConstant(b, loc, outType.getElementType(), padValue);
      Value value = tensor::ExtractOp::create(b, loc, input, at);
      if (!inside)
        return value;
      Value fill =
          createScalarConstant(b, loc, outType.getElementType(), padValue);
      return arith::SelectOp::create(b, loc, inside, value, fill);
    };

    bool crops = llvm::any_of(pads, [](int64_t p) { return p < 0; });
    if (crops || inType.getNumElements() == 0) {
      SmallVector<int64_t> origin(rank, 0);
      Value result = buildIndexedGeneric(
          rewriter, loc, outType, {}, {},
          [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs, ValueRange) {
            return element(b, loc, ivs, origin, outType.getShape());
          });
      rewriter.replaceOp(op, result);
      return success();
    }

    ArrayRef<int64_t> low = pads.take_front(rank), high = pads.drop_front(rank);
    Value result =
        padTensor(rewriter, loc, input, low, high,
                  createScalarConstant(rewriter, loc, outType.getElementType(),
                                       mode == "constant" ? padValue : 0.0));
    if (mode != "constant") {
      // The border as boxes (bordersOf). They read the interior, where the
      // input's producer writes (kiln-codegen-pad-in-place), and are
      // written into the same buffer: bufferization cannot tell that the
      // two never overlap and reads the interior from a copy (one pass over
      // the input, 0.28 ms of 1.1 for a 32x256x256 map).
      SmallVector<int64_t> interior(low);
      llvm::append_range(interior, inType.getShape());
      auto borders = codegen::bordersOf(outType.getShape(), interior);
      SmallVector<Value> boxes;
      for (const auto &border : borders)
        boxes.push_back(buildIndexedGeneric(
            rewriter, loc, outType.clone(border.second), {}, {},
            [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs, ValueRange) {
              return element(b, loc, ivs, border.first, border.second);
            }));
      for (auto [box, border] : llvm::zip_equal(boxes, borders))
        result = tensor::InsertSliceOp::create(
            rewriter, loc, box, result,
            getAsIndexOpFoldResult(rewriter.getContext(), border.first),
            getAsIndexOpFoldResult(rewriter.getContext(), border.second),
            SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1)));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Trilu, one-hot
//===----------------------------------------------------------------------===//

struct TriluLowering : StaticLowering<graph::TriluOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::TriluOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    int64_t rank = outType.getRank();
    bool upper = op.getUpper();
    // The run-time k, clamped so that the difference below cannot wrap.
    Value dynamicK;
    if (adaptor.getDynamicK()) {
      Location loc = op.getLoc();
      Value k = tensor::ExtractOp::create(rewriter, loc, adaptor.getDynamicK());
      int64_t limit =
          outType.getDimSize(rank - 1) + outType.getDimSize(rank - 2);
      k = arith::MaxSIOp::create(
          rewriter, loc, k,
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                       -limit));
      k = arith::MinSIOp::create(
          rewriter, loc, k,
          arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                       limit));
      dynamicK =
          arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), k);
    }
    int64_t k = op.getK();
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), outType, adaptor.getInput(),
        rewriter.getMultiDimIdentityMap(rank),
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Value diff =
              arith::SubIOp::create(b, loc, ivs[rank - 1], ivs[rank - 2]);
          Value keep = arith::CmpIOp::create(
              b, loc,
              upper ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
              diff, dynamicK ? dynamicK : indexConstant(b, loc, k));
          Value zero =
              createScalarConstant(b, loc, outType.getElementType(), 0.0);
          return arith::SelectOp::create(b, loc, keep, args[0], zero);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct OneHotLowering : StaticLowering<graph::OneHotOp> {
  using StaticLowering::StaticLowering;
  LogicalResult lower(graph::OneHotOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    int64_t rank = outType.getRank(), axis = op.getAxis();
    int64_t depth = op.getDepth();
    Value values = adaptor.getValues();
    Value off = tensor::ExtractOp::create(
        rewriter, loc, values, ValueRange{indexConstant(rewriter, loc, 0)});
    Value on = tensor::ExtractOp::create(
        rewriter, loc, values, ValueRange{indexConstant(rewriter, loc, 1)});
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        exprs.push_back(getAffineDimExpr(d, ctx));
    Type indexType = op.getIndices().getType().getElementType();
    Value result = buildIndexedGeneric(
        rewriter, loc, outType, adaptor.getIndices(),
        AffineMap::get(rank, 0, exprs, ctx),
        [&](OpBuilder &b, Location nestedLoc, ArrayRef<Value> ivs,
            ValueRange args) -> Value {
          Value index = toIndex(b, nestedLoc, args[0], indexType);
          Value zero = indexConstant(b, nestedLoc, 0);
          Value negative = arith::CmpIOp::create(
              b, nestedLoc, arith::CmpIPredicate::slt, index, zero);
          Value wrapped = arith::AddIOp::create(
              b, nestedLoc, index, indexConstant(b, nestedLoc, depth));
          index =
              arith::SelectOp::create(b, nestedLoc, negative, wrapped, index);
          Value hit = arith::CmpIOp::create(
              b, nestedLoc, arith::CmpIPredicate::eq, index, ivs[axis]);
          return arith::SelectOp::create(b, nestedLoc, hit, on, off);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// Resize as ONNX's reference computes it: every result index is mapped to a
/// (fractional) input coordinate in f32, then rounded (nearest) or
/// interpolated between its two neighbours in every resized dimension
/// (linear).
struct ResizeLowering : StaticLowering<graph::ResizeOp> {
  using StaticLowering::StaticLowering;

  /// The input coordinate of result index `iv` along one dimension.
  static Value originalCoordinate(OpBuilder &b, Location loc, Value iv,
                                  StringRef transform, double scale,
                                  int64_t inSize, int64_t outSize,
                                  double roiStart, double roiEnd) {
    Type f32 = b.getF32Type();
    auto constant = [&](double v) {
      return createScalarConstant(b, loc, f32, v);
    };
    Value x = arith::UIToFPOp::create(
        b, loc, f32, arith::IndexCastUIOp::create(b, loc, b.getI64Type(), iv));
    if (transform == "align_corners") {
      // The resized length is scale * inSize unrounded, as in ONNX's
      // reference: downsampling 4 by 0.6 maps index 1 to 3 / 1.4, not 3 / 1.
      double outLength = scale * static_cast<double>(inSize);
      if (outLength == 1.0)
        return constant(0.0);
      return arith::MulFOp::create(
          b, loc, x,
          constant(static_cast<double>(inSize - 1) / (outLength - 1)));
    }
    if (transform == "asymmetric")
      return arith::DivFOp::create(b, loc, x, constant(scale));
    if (transform == "tf_crop_and_resize") {
      double last = static_cast<double>(inSize - 1);
      if (outSize == 1)
        return constant(0.5 * (roiStart + roiEnd) * last);
      return arith::AddFOp::create(
          b, loc, constant(roiStart * last),
          arith::MulFOp::create(b, loc, x,
                                constant((roiEnd - roiStart) * last /
                                         static_cast<double>(outSize - 1))));
    }
    if (transform == "pytorch_half_pixel" && outSize == 1)
      return constant(0.0);
    if (transform == "half_pixel_symmetric") {
      // half_pixel, shifted so that the resized length's rounding is shared
      // by both ends: offset = in/2 * (1 - out / (scale * in)).
      double offset = static_cast<double>(inSize) / 2 *
                      (1 - static_cast<double>(outSize) /
                               (scale * static_cast<double>(inSize)));
      Value shifted = arith::AddFOp::create(b, loc, x, constant(0.5));
      Value scaled = arith::DivFOp::create(b, loc, shifted, constant(scale));
      return arith::AddFOp::create(b, loc, scaled, constant(offset - 0.5));
    }
    // half_pixel and pytorch_half_pixel.
    Value shifted = arith::AddFOp::create(b, loc, x, constant(0.5));
    Value scaled = arith::DivFOp::create(b, loc, shifted, constant(scale));
    return arith::SubFOp::create(b, loc, scaled, constant(0.5));
  }

  /// originalCoordinate at compile time, in the same f32 operations (each
  /// constant rounded to f32 as createScalarConstant rounds it), or nothing
  /// for tf_crop_and_resize.
  static std::optional<float> originalCoordinateOf(int64_t index,
                                                   StringRef transform,
                                                   double scale, int64_t inSize,
                                                   int64_t outSize) {
    auto f = [](double v) { return static_cast<float>(v); };
    float x = static_cast<float>(static_cast<uint64_t>(index));
    if (transform == "align_corners") {
      double outLength = scale * static_cast<double>(inSize);
      if (outLength == 1.0)
        return 0.0f;
      return x * f(static_cast<double>(inSize - 1) / (outLength - 1));
    }
    if (transform == "asymmetric")
      return x / f(scale);
    if (transform == "tf_crop_and_resize")
      return std::nullopt;
    if (transform == "pytorch_half_pixel" && outSize == 1)
      return 0.0f;
    if (transform == "half_pixel_symmetric") {
      double offset = static_cast<double>(inSize) / 2 *
                      (1 - static_cast<double>(outSize) /
                               (scale * static_cast<double>(inSize)));
      return (x + f(0.5)) / f(scale) + f(offset - 0.5);
    }
    return (x + f(0.5)) / f(scale) - f(0.5);
  }

  /// Per result index of dimension `d`, what nearest or two-tap linear
  /// resizing reads, computed at compile time: the position (nearest) or
  /// the low and high positions and the high one's weight (linear). The
  /// body then reads them from constant tables (one element per index)
  /// instead of computing them per element: a bilinear upsample's inner
  /// loop was some forty scalar ops per element (DeepLabV3's final 16x
  /// upsample of 21 classes, 1.4 ms at 21 GFLOP/s).
  struct Table {
    SmallVector<int32_t> low, high;
    SmallVector<float> weight;
  };
  static std::optional<Table> tableOf(bool nearest, StringRef nearestMode,
                                      StringRef transform, double scale,
                                      int64_t inSize, int64_t outSize) {
    Table table;
    for (int64_t i = 0; i < outSize; ++i) {
      std::optional<float> coordinate =
          originalCoordinateOf(i, transform, scale, inSize, outSize);
      if (!coordinate)
        return std::nullopt;
      float x = *coordinate;
      auto clamp = [&](int64_t v) {
        return static_cast<int32_t>(std::clamp<int64_t>(v, 0, inSize - 1));
      };
      if (nearest) {
        float rounded = nearestMode == "floor"  ? std::floor(x)
                        : nearestMode == "ceil" ? std::ceil(x)
                        : nearestMode == "round_prefer_ceil"
                            ? std::floor(x + 0.5f)
                            : std::ceil(x - 0.5f);
        table.low.push_back(clamp(static_cast<int64_t>(rounded)));
        continue;
      }
      x = std::min(std::max(x, 0.0f), static_cast<float>(inSize - 1));
      float floor = std::floor(x);
      int32_t low = clamp(static_cast<int64_t>(floor));
      table.low.push_back(low);
      table.high.push_back(clamp(int64_t(low) + 1));
      table.weight.push_back(x - floor);
    }
    return table;
  }

  LogicalResult lower(graph::ResizeOp op, Adaptor adaptor,
                      ArrayRef<Type> resultTypes,
                      ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    auto inType = getTensorType(input);
    auto outType = cast<RankedTensorType>(resultTypes[0]);
    int64_t rank = inType.getRank();
    if (inType.getNumElements() == 0)
      return rewriter.notifyMatchFailure(op, "empty input");
    StringRef transform = op.getCoordinateTransformationMode();
    StringRef nearestMode = op.getNearestMode();
    bool nearest = op.getMode() == "nearest";
    bool cubic = op.getMode() == "cubic";
    double a = op.getCubicCoeffA().convertToDouble();
    bool excludeOutside = op.getExcludeOutside();
    bool antialias = op.getAntialias();
    SmallVector<double> roi(2 * rank, 0.0);
    if (op.getRoi())
      roi.assign(op.getRoi()->begin(), op.getRoi()->end());
    else
      std::fill(roi.begin() + rank, roi.end(), 1.0);
    bool crop = transform == "tf_crop_and_resize";
    ArrayRef<double> scales = op.getScales();
    Type elementType = outType.getElementType();
    // The tables of the resized dimensions, where every one has one
    // (nearest, or linear without antialiasing), as inputs of the generic:
    // for dimension d, its positions (and the high positions and weights),
    // read through (d0, ..., dn) -> (dd).
    SmallVector<Value> tableInputs;
    SmallVector<AffineMap> tableMaps;
    SmallVector<int64_t> tableArg(rank, -1);
    bool tabulated = !cubic && !antialias && !crop;
    SmallVector<std::optional<Table>> tables(rank);
    for (int64_t d = 0; tabulated && d < rank; ++d) {
      int64_t inSize = inType.getDimSize(d), outSize = outType.getDimSize(d);
      if (inSize == outSize && scales[d] == 1.0)
        continue;
      tables[d] =
          tableOf(nearest, nearestMode, transform, scales[d], inSize, outSize);
      tabulated = tables[d].has_value();
    }
    // Linear in several dimensions: one pass per dimension, innermost
    // first (its gathers along the contiguous dimension run on the smaller
    // tensor; every later pass reads two whole rows). The taps' product
    // becomes nested two-tap sums: the same value up to f32 rounding.
    int64_t resized =
        llvm::count_if(tables, [](auto &t) { return t.has_value(); });
    if (tabulated && !nearest && resized > 1 && isa<FloatType>(elementType)) {
      Location loc = op.getLoc();
      Value current = input;
      SmallVector<int64_t> shape(inType.getShape());
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (!tables[d])
          continue;
        int64_t outSize = outType.getDimSize(d);
        shape[d] = outSize;
        auto map = AffineMap::get(rank, 0, rewriter.getAffineDimExpr(d));
        auto table = [&](auto values, Type element) -> Value {
          return arith::ConstantOp::create(
              rewriter, loc,
              DenseElementsAttr::get(RankedTensorType::get({outSize}, element),
                                     ArrayRef(values)));
        };
        Value source = current;
        current = buildIndexedGeneric(
            rewriter, loc, RankedTensorType::get(shape, elementType),
            {table(tables[d]->low, rewriter.getI32Type()),
             table(tables[d]->high, rewriter.getI32Type()),
             table(tables[d]->weight, rewriter.getF32Type())},
            {map, map, map},
            [&](OpBuilder &b, Location nloc, ArrayRef<Value> ivs,
                ValueRange args) -> Value {
              SmallVector<Value> position(ivs);
              auto read = [&](Value index) -> Value {
                position[d] = arith::IndexCastOp::create(
                    b, nloc, b.getIndexType(), index);
                Value element =
                    tensor::ExtractOp::create(b, nloc, source, position);
                return element.getType() == b.getF32Type()
                           ? element
                           : arith::ExtFOp::create(b, nloc, b.getF32Type(),
                                                   element)
                                 .getResult();
              };
              Value w = args[2];
              Value low = read(args[0]), high = read(args[1]);
              // low + w * (high - low)
              Value sum = arith::AddFOp::create(
                  b, nloc, low,
                  arith::MulFOp::create(
                      b, nloc, w, arith::SubFOp::create(b, nloc, high, low)));
              if (elementType.isF32())
                return sum;
              if (elementType.getIntOrFloatBitWidth() > 32)
                return arith::ExtFOp::create(b, nloc, elementType, sum);
              return arith::TruncFOp::create(b, nloc, elementType, sum);
            });
      }
      rewriter.replaceOp(op, current);
      return success();
    }
    if (tabulated) {
      Location loc = op.getLoc();
      for (int64_t d = 0; d < rank; ++d) {
        if (!tables[d])
          continue;
        int64_t outSize = outType.getDimSize(d);
        auto map = AffineMap::get(rank, 0, rewriter.getAffineDimExpr(d));
        auto addTable = [&](auto values, Type element) {
          tableInputs.push_back(arith::ConstantOp::create(
              rewriter, loc,
              DenseElementsAttr::get(RankedTensorType::get({outSize}, element),
                                     ArrayRef(values))));
          tableMaps.push_back(map);
        };
        tableArg[d] = tableInputs.size();
        addTable(tables[d]->low, rewriter.getI32Type());
        if (!nearest) {
          addTable(tables[d]->high, rewriter.getI32Type());
          addTable(tables[d]->weight, rewriter.getF32Type());
        }
      }
    }
    Value result = buildIndexedGeneric(
        rewriter, op.getLoc(), outType, tableInputs, tableMaps,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> ivs,
            ValueRange tableArgs) -> Value {
          Type f32 = b.getF32Type();
          auto constant = [&](double v) {
            return createScalarConstant(b, loc, f32, v);
          };
          auto toIdx = [&](Value f) -> Value {
            Value i = arith::FPToSIOp::create(b, loc, b.getI64Type(), f);
            return arith::IndexCastOp::create(b, loc, b.getIndexType(), i);
          };
          // For each dimension: the one position (nearest, or a dimension
          // that keeps its size), or the taps of the interpolation, each a
          // position and its weight.
          SmallVector<Value> at;
          SmallVector<SmallVector<std::pair<Value, Value>>> taps(rank);
          // tf_crop_and_resize: whether the position falls outside the input.
          Value outside;
          for (int64_t d = 0; d < rank; ++d) {
            int64_t inSize = inType.getDimSize(d);
            int64_t outSize = outType.getDimSize(d);
            bool fullRoi = roi[d] == 0.0 && roi[rank + d] == 1.0;
            if (inSize == outSize && scales[d] == 1.0 && (!crop || fullRoi)) {
              at.push_back(ivs[d]);
              continue;
            }
            if (tableArg[d] >= 0) {
              auto position = [&](int64_t k) -> Value {
                return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                  tableArgs[tableArg[d] + k]);
              };
              if (nearest) {
                at.push_back(position(0));
                continue;
              }
              at.push_back(Value());
              Value w = tableArgs[tableArg[d] + 2];
              taps[d] = {{position(0),
                          arith::SubFOp::create(b, loc, constant(1.0), w)},
                         {position(1), w}};
              continue;
            }
            Value x =
                originalCoordinate(b, loc, ivs[d], transform, scales[d], inSize,
                                   outSize, roi[d], roi[rank + d]);
            if (crop) {
              Value out = arith::OrIOp::create(
                  b, loc,
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                        constant(0.0)),
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x,
                                        constant(double(inSize - 1))));
              outside =
                  outside ? arith::OrIOp::create(b, loc, outside, out) : out;
            }
            if (nearest) {
              Value rounded;
              if (nearestMode == "floor") {
                rounded = math::FloorOp::create(b, loc, x);
              } else if (nearestMode == "ceil") {
                rounded = math::CeilOp::create(b, loc, x);
              } else if (nearestMode == "round_prefer_ceil") {
                rounded = math::FloorOp::create(
                    b, loc, arith::AddFOp::create(b, loc, x, constant(0.5)));
              } else {
                rounded = math::CeilOp::create(
                    b, loc, arith::SubFOp::create(b, loc, x, constant(0.5)));
              }
              at.push_back(clampIndex(b, loc, toIdx(rounded), 0, inSize - 1));
              continue;
            }
            at.push_back(Value());
            // Linear's two taps, or (antialiased downsampling) that kernel
            // widened by 1 / scale.
            double s = antialias ? std::min(scales[d], 1.0) : 1.0;
            if (!cubic && s == 1.0) {
              x = arith::MaximumFOp::create(b, loc, x, constant(0.0));
              x = arith::MinimumFOp::create(
                  b, loc, x, constant(static_cast<double>(inSize - 1)));
              Value floor = math::FloorOp::create(b, loc, x);
              Value low = clampIndex(b, loc, toIdx(floor), 0, inSize - 1);
              Value high = clampIndex(
                  b, loc,
                  arith::AddIOp::create(b, loc, low, indexConstant(b, loc, 1)),
                  0, inSize - 1);
              Value w = arith::SubFOp::create(b, loc, x, floor);
              taps[d] = {{low, arith::SubFOp::create(b, loc, constant(1.0), w)},
                         {high, w}};
              continue;
            }
            // As ONNX's reference: the fraction t of x in (0, 1] (1 when x is
            // whole, from the index below), taps at floor + i for i in
            // [first, 1 - first], each weighted by the kernel at (i - t) * s:
            // Keys' cubic (first = -1 unscaled) or the triangle (first = 0
            // unscaled); antialiased weights renormalized.
            int64_t first = cubic ? int64_t(std::floor(-2 / s)) + 1
                                  : int64_t(std::floor(-1 / s)) + 1;
            Value floor = math::FloorOp::create(b, loc, x);
            Value t = arith::SubFOp::create(b, loc, x, floor);
            Value whole = arith::CmpFOp::create(
                b, loc, arith::CmpFPredicate::OEQ, t, constant(0.0));
            t = arith::SelectOp::create(b, loc, whole, constant(1.0), t);
            floor = arith::SelectOp::create(
                b, loc, whole,
                arith::SubFOp::create(b, loc, floor, constant(1.0)), floor);
            auto mul = [&](Value p, Value q) -> Value {
              return arith::MulFOp::create(b, loc, p, q);
            };
            auto add = [&](Value p, double q) -> Value {
              return arith::AddFOp::create(b, loc, p, constant(q));
            };
            auto kernel = [&](Value dist) -> Value {
              dist = math::AbsFOp::create(b, loc, dist);
              if (!cubic)
                return arith::MaximumFOp::create(
                    b, loc, arith::SubFOp::create(b, loc, constant(1.0), dist),
                    constant(0.0));
              // Keys: ((a + 2) d - (a + 3)) d^2 + 1 up to 1, ((a d - 5a) d +
              // 8a) d - 4a up to 2, 0 beyond.
              Value nearWeight =
                  add(mul(mul(add(mul(constant(a + 2), dist), -(a + 3)), dist),
                          dist),
                      1.0);
              Value farWeight =
                  add(mul(add(mul(add(mul(constant(a), dist), -5 * a), dist),
                              8 * a),
                          dist),
                      -4 * a);
              Value isNear = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OLE, dist, constant(1.0));
              Value isFar = arith::CmpFOp::create(
                  b, loc, arith::CmpFPredicate::OLT, dist, constant(2.0));
              return arith::SelectOp::create(
                  b, loc, isNear, nearWeight,
                  arith::SelectOp::create(b, loc, isFar, farWeight,
                                          constant(0.0)));
            };
            Value base = toIdx(floor);
            SmallVector<Value> weights, positions;
            for (int64_t i = first; i <= 1 - first; ++i) {
              Value dist =
                  mul(arith::SubFOp::create(b, loc, constant(double(i)), t),
                      constant(s));
              weights.push_back(kernel(dist));
              positions.push_back(arith::AddIOp::create(
                  b, loc, base, indexConstant(b, loc, i)));
            }
            auto normalize = [&](bool onlyInside) {
              Value total = constant(0.0);
              for (auto [k, p] : llvm::enumerate(positions)) {
                if (onlyInside) {
                  Value inside = arith::AndIOp::create(
                      b, loc,
                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                            p, indexConstant(b, loc, 0)),
                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                            p, indexConstant(b, loc, inSize)));
                  weights[k] = arith::SelectOp::create(
                      b, loc, inside, weights[k], constant(0.0));
                }
                total = arith::AddFOp::create(b, loc, total, weights[k]);
              }
              for (Value &w : weights)
                w = arith::DivFOp::create(b, loc, w, total);
            };
            if (antialias)
              normalize(/*onlyInside=*/false);
            if (excludeOutside)
              normalize(/*onlyInside=*/true);
            for (auto [p, w] : llvm::zip(positions, weights))
              taps[d].push_back({clampIndex(b, loc, p, 0, inSize - 1), w});
          }
          auto extrapolate = [&](Value v) -> Value {
            if (!outside)
              return v;
            Value fill = createScalarConstant(
                b, loc, v.getType(),
                op.getExtrapolationValue().convertToDouble());
            return arith::SelectOp::create(b, loc, outside, fill, v);
          };
          if (nearest)
            return extrapolate(tensor::ExtractOp::create(b, loc, input, at));
          // Sum over every combination of the interpolated dimensions'
          // taps, in f32.
          SmallVector<int64_t> interpolated;
          for (int64_t d = 0; d < rank; ++d)
            if (!taps[d].empty())
              interpolated.push_back(d);
          Value sum = constant(0.0);
          SmallVector<size_t> choice(interpolated.size(), 0);
          while (true) {
            SmallVector<Value> position(at);
            Value factor = constant(1.0);
            for (auto [i, d] : llvm::enumerate(interpolated)) {
              position[d] = taps[d][choice[i]].first;
              factor = arith::MulFOp::create(b, loc, factor,
                                             taps[d][choice[i]].second);
            }
            Value element = tensor::ExtractOp::create(b, loc, input, position);
            if (element.getType() != f32)
              element = arith::ExtFOp::create(b, loc, f32, element);
            sum = arith::AddFOp::create(
                b, loc, sum, arith::MulFOp::create(b, loc, factor, element));
            size_t i = 0;
            while (i < choice.size() &&
                   ++choice[i] == taps[interpolated[i]].size())
              choice[i++] = 0;
            if (i == choice.size())
              break;
          }
          if (elementType == f32)
            return extrapolate(sum);
          if (elementType.getIntOrFloatBitWidth() > 32)
            return extrapolate(arith::ExtFOp::create(b, loc, elementType, sum));
          return extrapolate(arith::TruncFOp::create(b, loc, elementType, sum));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateShapeToLinalgPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns) {
  patterns.add<ConcatLowering, ExpandLowering, GatherElementsLowering,
               ScatterElementsLowering, ScatterNDLowering, GatherLowering,
               GatherNDLowering, OneHotLowering, PadLowering, ReshapeLowering,
               CheckSizeLowering, PrefixLowering, ResizeLowering, ShapeLowering,
               SliceLowering, SplitLowering, TileLowering, TransposeLowering,
               TriluLowering>(converter, patterns.getContext());
}

} // namespace kiln
