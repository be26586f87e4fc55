//===- FuseElementwise.cpp - Elementwise chains as one loop nest ----------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENFUSEELEMENTWISE
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// Whether `producer` reads only tensors smaller than its result (a
/// broadcast of a bias or a scale): computing it again costs no memory
/// traffic.
bool isBroadcast(Operation *producer) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
  if (!linalgOp || linalgOp->getNumResults() != 1)
    return false;
  auto resultType = dyn_cast<ShapedType>(linalgOp->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape())
    return false;
  return llvm::all_of(linalgOp.getDpsInputs(), [&](Value input) {
    auto type = dyn_cast<ShapedType>(input.getType());
    return !type || (type.hasStaticShape() &&
                     type.getNumElements() < resultType.getNumElements());
  });
}

/// Fuse only into consumers whose loops are all parallel (each element of
/// the producer is then read once). A producer that other ops read too is
/// fused only when it is a broadcast: upstream fusion keeps such a producer
/// alive for its other users, so its value would be computed twice, and a
/// residual block's output (read by the next convolution and by the next
/// residual sum) was recomputed inside the next block's epilogue, which then
/// no longer fused into the convolution.
bool intoElementwiseConsumer(OpOperand *operand, bool broadcasts) {
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer || consumer.getNumLoops() != consumer.getNumParallelLoops())
    return false;
  Value value = operand->get();
  bool broadcast = isBroadcast(value.getDefiningOp());
  if (broadcast && !broadcasts)
    return false;
  bool onlyHere = llvm::all_of(value.getUsers(), [&](Operation *user) {
    return user == consumer.getOperation();
  });
  return onlyHere || broadcast;
}

struct CodegenFuseElementwisePass
    : impl::CodegenFuseElementwiseBase<CodegenFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseElementwisePatterns(patterns, broadcasts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateFuseElementwisePatterns(RewritePatternSet &patterns,
                                     bool broadcasts) {
  linalg::populateElementwiseOpsFusionPatterns(
      patterns, [broadcasts](OpOperand *operand) {
        return intoElementwiseConsumer(operand, broadcasts);
      });
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
}

} // namespace kiln::codegen
