//===- CopyRepeatedResults.cpp - One value per function result ------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENCOPYREPEATEDRESULTS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
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

struct CodegenCopyRepeatedResultsPass
    : impl::CodegenCopyRepeatedResultsBase<CodegenCopyRepeatedResultsPass> {
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

} // namespace kiln::codegen
