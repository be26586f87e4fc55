//===- CopyRepeatedResults.cpp - One value per function result ------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUCOPYREPEATEDRESULTS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

struct CopyRepeatedResult : OpRewritePattern<func::ReturnOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(func::ReturnOp op,
                                PatternRewriter &rewriter) const override {
    llvm::SmallPtrSet<Value, 8> seen;
    SmallVector<Value> operands(op.getOperands());
    bool changed = false;
    for (Value &operand : operands) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type || seen.insert(operand).second)
        continue;
      operand = bufferization::AllocTensorOp::create(
          rewriter, op.getLoc(), type, /*dynamicSizes=*/ValueRange(),
          /*copy=*/operand, /*memory_space=*/IntegerAttr());
      changed = true;
    }
    if (!changed)
      return rewriter.notifyMatchFailure(op, "no tensor is returned twice");
    rewriter.modifyOpInPlace(op, [&] { op->setOperands(operands); });
    return success();
  }
};

struct CPUCopyRepeatedResultsPass
    : impl::CPUCopyRepeatedResultsBase<CPUCopyRepeatedResultsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateCopyRepeatedResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateCopyRepeatedResultsPatterns(RewritePatternSet &patterns) {
  patterns.add<CopyRepeatedResult>(patterns.getContext());
}

} // namespace kiln::cpu
