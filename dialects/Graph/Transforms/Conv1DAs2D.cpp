//===- Conv1DAs2D.cpp - 1-D convolutions as 2-D ones of height 1 ----------===//
//
// Kiln's fast convolutions (the blocked layout, direct and Winograd kernels,
// epilogues) are 2-D: a 1-D convolution (audio and sequence models) was a
// plain loop nest, 13x slower than onnxruntime on a Conv1d stack. [N, C, L]
// is [N, C, 1, L], so each 1-D convolution becomes a 2-D one of height 1
// between two reshapes, and the reshape back to 3-D is moved down through
// the elementwise ops after it (activations, residual adds), so that they
// meet the convolution as epilogues and the next convolution's reshape to
// 4-D cancels it: a chain of 1-D layers runs in 4-D, blocked, throughout.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHCONV1DAS2D
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

Value reshapeTo(PatternRewriter &rewriter, Location loc, Value value,
                ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  return ReshapeOp::create(rewriter, loc, type.clone(shape), value,
                           rewriter.getDenseI64ArrayAttr(shape),
                           rewriter.getBoolAttr(false));
}

/// `value` reshaped; a constant (a filter) becomes the reshaped constant,
/// its blob shared, so that the passes that want constant weights (the
/// blocked layout) see one.
Value reshapeConstantTo(PatternRewriter &rewriter, Location loc, Value value,
                        ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType()).clone(shape);
  if (auto constant = value.getDefiningOp<ConstantOp>()) {
    Attribute attr = constant.getValue();
    if (auto dense = dyn_cast<DenseElementsAttr>(attr))
      return ConstantOp::create(rewriter, loc, dense.reshape(type));
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
      return ConstantOp::create(
          rewriter, loc,
          DenseResourceElementsAttr::get(type, resource.getRawHandle()));
  }
  return reshapeTo(rewriter, loc, value, shape);
}

/// `shape` with a 1 inserted before its last dimension (a rank-0 shape is
/// left alone): [.., C, L] -> [.., C, 1, L].
SmallVector<int64_t> withUnitHeight(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  if (!result.empty())
    result.insert(result.end() - 1, 1);
  return result;
}

struct Conv1DAs2D : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp conv,
                                PatternRewriter &rewriter) const override {
    if (conv.getNumSpatialDims() != 1)
      return rewriter.notifyMatchFailure(conv, "not a 1-D convolution");
    RankedTensorType inputType = conv.getInput().getType();
    RankedTensorType weightType = conv.getWeight().getType();
    auto resultType = cast<RankedTensorType>(conv.getType());
    if (!inputType.hasStaticShape() || !weightType.hasStaticShape() ||
        !resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(conv, "dynamic shapes");
    Location loc = conv.getLoc();
    ArrayRef<int64_t> pads = conv.getPads();
    Value input = reshapeTo(rewriter, loc, conv.getInput(),
                            withUnitHeight(inputType.getShape()));
    Value weight = reshapeConstantTo(rewriter, loc, conv.getWeight(),
                                     withUnitHeight(weightType.getShape()));
    Value y = ConvOp::create(
        rewriter, loc, resultType.clone(withUnitHeight(resultType.getShape())),
        input, weight, conv.getBias(),
        rewriter.getDenseI64ArrayAttr({1, conv.getStrides()[0]}),
        rewriter.getDenseI64ArrayAttr({0, pads[0], 0, pads[1]}),
        rewriter.getDenseI64ArrayAttr({1, conv.getDilations()[0]}),
        conv.getGroupAttr());
    rewriter.replaceOp(conv,
                       reshapeTo(rewriter, loc, y, resultType.getShape()));
    return success();
  }
};

/// A reshape that removes the unit height that withUnitHeight inserted.
bool dropsUnitHeight(ReshapeOp reshape) {
  auto from = reshape.getInput().getType();
  auto to = cast<RankedTensorType>(reshape.getType());
  return from.hasStaticShape() && to.hasStaticShape() && to.getRank() >= 1 &&
         from.getShape() == ArrayRef<int64_t>(withUnitHeight(to.getShape()));
}

/// The elementwise ops a height-dropping reshape moves down through: each
/// result element reads its operands' (broadcast) elements at its own
/// position, so the op computes the same on [.., C, 1, L] operands.
bool isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, ReluOp, AbsOp,
             NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, ErfOp, TanhOp,
             SigmoidOp, HardSwishOp, SoftplusOp, SoftsignOp, MishOp,
             LeakyReluOp, EluOp, CeluOp, SeluOp, ThresholdedReluOp,
             HardSigmoidOp, GeluOp>(op);
}

/// elementwise(reshape(y4), b) -> reshape(elementwise(y4, reshape(b))), for
/// operands of the 3-D result's rank or lower, each given the unit height.
struct SinkUnitHeightReshape : OpTraitRewritePattern<OpTrait::OneResult> {
  using OpTraitRewritePattern::OpTraitRewritePattern;

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isElementwise(op))
      return failure();
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || !resultType.hasStaticShape() || resultType.getRank() < 2)
      return failure();
    bool found = false;
    for (Value operand : op->getOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type || !type.hasStaticShape() ||
          type.getRank() > resultType.getRank())
        return failure();
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      found |= reshape && type.getRank() == resultType.getRank() &&
               dropsUnitHeight(reshape);
    }
    if (!found)
      return rewriter.notifyMatchFailure(op, "no height-dropping reshape");
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      auto type = cast<RankedTensorType>(operand.getType());
      auto reshape = operand.getDefiningOp<ReshapeOp>();
      if (reshape && type.getRank() == resultType.getRank() &&
          dropsUnitHeight(reshape))
        operands.push_back(reshape.getInput());
      else if (type.getRank() == 0)
        operands.push_back(operand);
      else
        operands.push_back(
            reshapeTo(rewriter, loc, operand, withUnitHeight(type.getShape())));
    }
    Operation *wide = rewriter.clone(*op);
    wide->setOperands(operands);
    wide->getResult(0).setType(
        resultType.clone(withUnitHeight(resultType.getShape())));
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, wide->getResult(0),
                                     resultType.getShape()));
    return success();
  }
};

/// reshape(reshape(x)) -> reshape(x), or x where the shapes agree: the
/// reshape to 4-D before a convolution meets the one to 3-D after the last.
struct FoldReshapePair : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto inner = reshape.getInput().getDefiningOp<ReshapeOp>();
    auto type = cast<RankedTensorType>(reshape.getType());
    if (!inner || !type.hasStaticShape() ||
        !inner.getInput().getType().hasStaticShape())
      return failure();
    if (inner.getInput().getType() == type) {
      rewriter.replaceOp(reshape, inner.getInput());
      return success();
    }
    rewriter.replaceOp(reshape, reshapeTo(rewriter, reshape.getLoc(),
                                          inner.getInput(), type.getShape()));
    return success();
  }
};

struct GraphConv1DAs2DPass : impl::GraphConv1DAs2DBase<GraphConv1DAs2DPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<Conv1DAs2D, FoldReshapePair>(&getContext());
    patterns.add<SinkUnitHeightReshape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::graph
