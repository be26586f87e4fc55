//===- LowerCopies.cpp - memref.copy as linalg.copy -----------------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENLOWERCOPIES
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

struct CopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::CopyOp copy,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                copy.getTarget());
    return success();
  }
};

struct CodegenLowerCopiesPass
    : impl::CodegenLowerCopiesBase<CodegenLowerCopiesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateLowerCopiesPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateLowerCopiesPatterns(RewritePatternSet &patterns) {
  patterns.add<CopyToLinalg>(patterns.getContext());
}

} // namespace kiln::codegen
