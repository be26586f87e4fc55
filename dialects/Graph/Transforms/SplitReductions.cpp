//===- SplitReductions.cpp - Large reductions to few results, in parts ----===//
//
// A reduction over nearly everything of a large tensor (the minimum and the
// maximum of a whole activation that DynamicQuantizeLinear takes, a loss, a
// norm) has one result, or a few, and so no parallel loop for the CPU's
// threads to share: it ran on one thread. Reading the reduced elements as
// [outer, parts, rest] and reducing `rest` first, then `parts`, gives the
// first reduction `outer * parts` independent results, which
// kiln-cpu-parallelize spreads over the threads; the second reduces a few
// values. The split is fixed when the model compiles, so results do not
// depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHSPLITREDUCTIONS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {

/// Reductions with fewer results than this are split: too few to share.
constexpr int64_t kMaxResults = 8;
/// The parts of a split, and the least elements each part reduces.
constexpr int64_t kParts = 16;
constexpr int64_t kMinPerPart = 4096;

template <typename Reduce> struct SplitReduction : OpRewritePattern<Reduce> {
  using OpRewritePattern<Reduce>::OpRewritePattern;

  LogicalResult matchAndRewrite(Reduce op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
    if (!type || !type.hasStaticShape() || type.getRank() == 0 ||
        !isa<FloatType>(type.getElementType()))
      return failure();
    // The reduced axes must be the trailing ones, so that the reduced
    // elements of each result lie together.
    ArrayRef<int64_t> axes = op.getAxes();
    int64_t rank = type.getRank(), first = rank - int64_t(axes.size());
    if (axes.empty())
      return failure();
    for (auto [i, axis] : llvm::enumerate(axes))
      if (axis != first + int64_t(i))
        return failure();
    ArrayRef<int64_t> shape = type.getShape();
    int64_t outer = 1, reduced = 1;
    for (int64_t d = 0; d < first; ++d)
      outer *= shape[d];
    for (int64_t d = first; d < rank; ++d)
      reduced *= shape[d];
    if (outer >= kMaxResults || reduced % kParts != 0 ||
        reduced / kParts < kMinPerPart)
      return failure();

    Location loc = op.getLoc();
    int64_t rest = reduced / kParts;
    Value parts = ReshapeOp::create(rewriter, loc, op.getInput(),
                                    ArrayRef<int64_t>{outer, kParts, rest},
                                    /*allowZero=*/false);
    Value partial = Reduce::create(rewriter, loc, parts, ArrayRef<int64_t>{2},
                                   /*keepdims=*/false);
    Value whole = Reduce::create(rewriter, loc, partial, ArrayRef<int64_t>{1},
                                 /*keepdims=*/false);
    auto resultType = cast<RankedTensorType>(op.getType());
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, whole, resultType.getShape(),
                                           /*allowZero=*/false);
    return success();
  }
};

struct GraphSplitReductionsPass
    : kiln::graph::impl::GraphSplitReductionsBase<GraphSplitReductionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Those whose parts combine as the whole does: a mean of equal parts'
    // means is the mean.
    patterns.add<SplitReduction<ReduceMaxOp>, SplitReduction<ReduceMinOp>,
                 SplitReduction<ReduceSumOp>, SplitReduction<ReduceMeanOp>>(
        &getContext());
    GreedyRewriteConfig config;
    config.setMaxIterations(1);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
