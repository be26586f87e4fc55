//===- LowerBlockedConv.cpp - Direct convolutions in the blocked layout ---===//
//
// A blocked convolution (see BlockedConv.h) left for the direct algorithm
// becomes kh * kw contractions, one per window position (y, x), each
// accumulating into the last:
//
//   out[n, ko, oh, ow, o] += in[n, ci, oh * s + y * d, ow * s + x * d, i]
//                            * w[ko, ci, y, x, i, o]
//
// where the input is a strided slice and the weight a [K1, C1, ci, c] slice,
// so that every map is a projected permutation: each contraction's N is the
// output's innermost dimension o (one vector of c lanes), its M is ow, and
// kiln-cpu-tile-and-vectorize register-blocks it. No im2col copy is made.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/BlockedConv.h"
#include "codegen/CPU/KernelConfig.h"
#include "codegen/CPU/Passes.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPULOWERBLOCKEDCONV
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {

std::optional<BlockedConv> matchBlockedConv(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return std::nullopt;
  auto tag = generic->getAttrOfType<DictionaryAttr>(kBlockedConvAttr);
  if (!tag || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1)
    return std::nullopt;
  auto strides = tag.getAs<DenseI64ArrayAttr>("strides");
  auto dilations = tag.getAs<DenseI64ArrayAttr>("dilations");
  if (!strides || !dilations || strides.size() != 2 || dilations.size() != 2)
    return std::nullopt;

  BlockedConv conv;
  conv.op = generic;
  conv.input = generic.getDpsInputs()[0];
  conv.weight = generic.getDpsInputs()[1];
  conv.init = generic.getDpsInits()[0];
  auto inputType = dyn_cast<RankedTensorType>(conv.input.getType());
  auto weightType = dyn_cast<RankedTensorType>(conv.weight.getType());
  auto outputType = dyn_cast<RankedTensorType>(conv.init.getType());
  if (!inputType || !weightType || !outputType || inputType.getRank() != 5 ||
      weightType.getRank() != 6 || outputType.getRank() != 5 ||
      !inputType.hasStaticShape() || !weightType.hasStaticShape() ||
      !outputType.hasStaticShape() || !inputType.getElementType().isF32() ||
      !weightType.getElementType().isF32() ||
      !outputType.getElementType().isF32())
    return std::nullopt;
  conv.inputShape.assign(inputType.getShape().begin(),
                         inputType.getShape().end());
  conv.weightShape.assign(weightType.getShape().begin(),
                          weightType.getShape().end());
  conv.outputShape.assign(outputType.getShape().begin(),
                          outputType.getShape().end());
  for (int i = 0; i < 2; ++i) {
    conv.strides[i] = strides[i];
    conv.dilations[i] = dilations[i];
  }

  // The maps and iterators the tag promises.
  MLIRContext *ctx = op->getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {
      AffineMap::get(9, 0,
                     {d(0), d(5),
                      d(2) * conv.strides[0] + d(6) * conv.dilations[0],
                      d(3) * conv.strides[1] + d(7) * conv.dilations[1], d(8)},
                     ctx),
      AffineMap::get(9, 0, {d(1), d(5), d(6), d(7), d(8), d(4)}, ctx),
      AffineMap::get(9, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  if (generic.getIndexingMapsArray() != ArrayRef<AffineMap>(maps))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (auto [index, iterator] : llvm::enumerate(iterators))
    if (iterator != (index < 5 ? utils::IteratorType::parallel
                               : utils::IteratorType::reduction))
      return std::nullopt;
  if (!linalg::detail::isContractionBody(
          *generic.getBlock(), [](Operation *first, Operation *second) {
            return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
          }))
    return std::nullopt;
  // The channel blocks and the block sizes agree.
  if (conv.weightShape[1] != conv.inputShape[1] ||
      conv.weightShape[4] != conv.inputShape[4] ||
      conv.weightShape[0] != conv.outputShape[1] ||
      conv.weightShape[5] != conv.outputShape[4] ||
      conv.inputShape[0] != conv.outputShape[0])
    return std::nullopt;
  return conv;
}

bool isWinogradCandidate(const BlockedConv &conv) {
  if (conv.kernelHeight() != 3 || conv.kernelWidth() != 3)
    return false;
  if (conv.strides[0] != 1 || conv.strides[1] != 1 || conv.dilations[0] != 1 ||
      conv.dilations[1] != 1)
    return false;
  // The filter transform happens at compile time.
  Attribute weights;
  if (!matchPattern(conv.weight, m_Constant(&weights)))
    return false;
  return isa<DenseElementsAttr>(weights) ||
         isa<DenseF32ResourceElementsAttr>(weights);
}

namespace {

/// One register-blocked contraction per window position.
struct BlockedConvToDirect : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<BlockedConv> conv = matchBlockedConv(op);
    if (!conv)
      return rewriter.notifyMatchFailure(op, "not a blocked convolution");
    if (auto algorithm = op->getAttrOfType<StringAttr>(kConvAlgorithmAttr);
        algorithm && algorithm.getValue() != "direct")
      return rewriter.notifyMatchFailure(op, "another algorithm");

    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = rewriter.getF32Type();
    ArrayRef<int64_t> in = conv->inputShape;
    ArrayRef<int64_t> out = conv->outputShape;
    ArrayRef<int64_t> wshape = conv->weightShape;
    auto sliceType =
        RankedTensorType::get({in[0], in[1], out[2], out[3], in[4]}, element);
    auto tapType = RankedTensorType::get(
        {wshape[0], wshape[1], wshape[4], wshape[5]}, element);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // d0 n, d1 ko, d2 oh, d3 ow, d4 o | d5 ci, d6 i.
    SmallVector<AffineMap> maps = {
        AffineMap::get(7, 0, {d(0), d(5), d(2), d(3), d(6)}, ctx),
        AffineMap::get(7, 0, {d(1), d(5), d(6), d(4)}, ctx),
        AffineMap::get(7, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
    SmallVector<utils::IteratorType> iterators(5,
                                               utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    auto fma = [](OpBuilder &nb, Location nloc, ValueRange args) {
      Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
      linalg::YieldOp::create(
          nb, nloc,
          ValueRange{arith::AddFOp::create(nb, nloc, args[2], product)});
    };
    Value result = conv->init;
    for (int64_t y = 0; y < wshape[2]; ++y) {
      for (int64_t x = 0; x < wshape[3]; ++x) {
        Value slice = conv->input;
        if (sliceType.getShape() != in || conv->strides[0] != 1 ||
            conv->strides[1] != 1) {
          SmallVector<OpFoldResult> offsets = getAsIndexOpFoldResult(
              ctx, ArrayRef<int64_t>{0, 0, y * conv->dilations[0],
                                     x * conv->dilations[1], 0});
          SmallVector<OpFoldResult> sizes =
              getAsIndexOpFoldResult(ctx, sliceType.getShape());
          SmallVector<OpFoldResult> steps = getAsIndexOpFoldResult(
              ctx,
              ArrayRef<int64_t>{1, 1, conv->strides[0], conv->strides[1], 1});
          slice = tensor::ExtractSliceOp::create(
              rewriter, loc, sliceType, conv->input, offsets, sizes, steps);
        }
        SmallVector<OpFoldResult> offsets =
            getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{0, 0, y, x, 0, 0});
        SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(
            ctx, ArrayRef<int64_t>{wshape[0], wshape[1], 1, 1, wshape[4],
                                   wshape[5]});
        SmallVector<OpFoldResult> steps(6, rewriter.getIndexAttr(1));
        Value tap = tensor::ExtractSliceOp::create(
            rewriter, loc, tapType, conv->weight, offsets, sizes, steps);
        auto contraction = linalg::GenericOp::create(
            rewriter, loc, TypeRange{result.getType()}, ValueRange{slice, tap},
            result, maps, iterators, fma);
        copyKernelConfig(op, contraction);
        result = contraction.getResult(0);
      }
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CPULowerBlockedConvPass
    : impl::CPULowerBlockedConvBase<CPULowerBlockedConvPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<BlockedConvToDirect>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
