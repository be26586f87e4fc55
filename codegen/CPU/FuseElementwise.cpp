//===- FuseElementwise.cpp - Elementwise chains as one loop nest ----------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUFUSEELEMENTWISE
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Fuse only into consumers whose loops are all parallel: each element of
/// the producer is then read once, and fusion recomputes nothing.
bool intoElementwiseConsumer(OpOperand *operand) {
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  return consumer && consumer.getNumLoops() == consumer.getNumParallelLoops();
}

struct CPUFuseElementwisePass
    : impl::CPUFuseElementwiseBase<CPUFuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseElementwisePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateFuseElementwisePatterns(RewritePatternSet &patterns) {
  linalg::populateElementwiseOpsFusionPatterns(patterns,
                                               intoElementwiseConsumer);
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
}

} // namespace kiln::cpu
