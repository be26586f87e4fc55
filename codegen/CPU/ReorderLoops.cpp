//===- ReorderLoops.cpp - Unit-stride innermost loops for contractions ----===//
//
// The loop order chosen here lets LLVM's loop vectorizer do the work on
// contractions that are lowered to plain loops: the innermost loop runs over
// the output's last dimension with unit stride in the output and in at least
// one input. Tiled and register-blocked kernels replace this for the hot ops;
// this keeps every other contraction reasonable.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUREORDERLOOPS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether `expr` is `dim` plus something else, with coefficient 1 on `dim`:
/// the access moves by one element when loop `dim` moves by one.
bool isUnitStrideIn(AffineExpr expr, unsigned dim) {
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return d.getPosition() == dim;
  if (auto add = dyn_cast<AffineBinaryOpExpr>(expr);
      add && add.getKind() == AffineExprKind::Add)
    return (isUnitStrideIn(add.getLHS(), dim) &&
            !add.getRHS().isFunctionOfDim(dim)) ||
           (isUnitStrideIn(add.getRHS(), dim) &&
            !add.getLHS().isFunctionOfDim(dim));
  return false;
}

/// The loop order that puts the unit-stride output loop innermost, or an
/// empty vector when the current order should stay.
SmallVector<unsigned> chooseOrder(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() != 1)
    return {};
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outputMap.getNumResults() == 0)
    return {};
  auto last = dyn_cast<AffineDimExpr>(outputMap.getResults().back());
  if (!last)
    return {};
  unsigned inner = last.getPosition();
  bool contiguousInput =
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = op.getMatchingIndexingMap(in);
        return map.getNumResults() > 0 &&
               isUnitStrideIn(map.getResults().back(), inner);
      });
  if (!contiguousInput)
    return {};
  unsigned numLoops = op.getNumLoops();
  if (inner == numLoops - 1)
    return {};
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < numLoops; ++i)
    if (i != inner && iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0; i < numLoops; ++i)
    if (iterators[i] == utils::IteratorType::reduction)
      order.push_back(i);
  order.push_back(inner);
  return order;
}

struct ReorderContractionLoops : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<unsigned> order = chooseOrder(op);
    if (order.empty())
      return rewriter.notifyMatchFailure(op, "the order is already right");
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generalized))
        return rewriter.notifyMatchFailure(op, "cannot generalize");
      generic = *generalized;
    }
    if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
      return rewriter.notifyMatchFailure(op, "cannot interchange");
    return success();
  }
};

struct CPUReorderLoopsPass : impl::CPUReorderLoopsBase<CPUReorderLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateReorderLoopsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateReorderLoopsPatterns(RewritePatternSet &patterns) {
  patterns.add<ReorderContractionLoops>(patterns.getContext());
}

} // namespace kiln::cpu
