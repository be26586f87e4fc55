//===- PromoteAccumulators.cpp - Reduction accumulators in registers ------===//
//
// convert-linalg-to-parallel-loops accumulates a reduction in memory: each
// iteration of the reduction loop loads the output element and stores it
// back. On the GPU nothing tells the NVPTX back end that the kernel's
// pointers do not alias, so that load and store stay in the loop, one round
// trip through the cache per multiply-add. This pass carries the element in
// a loop-carried value instead, loaded once before the loop and stored once
// after it, innermost loop first so that a loop nest is promoted whole.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Buffers.h"
#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUPROMOTEACCUMULATORS
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

/// Whether anything in `loop` other than `load` and `store` may touch the
/// bytes of `extent`; unknown effects count as touching everything.
bool othersTouch(scf::ForOp loop, const Extent &extent, Operation *load,
                 Operation *store) {
  for (Operation &op : loop.getBody()->getOperations()) {
    if (&op == load || &op == store)
      continue;
    SmallVector<Value> reads, writes;
    if (!effectsOf(&op, reads, writes))
      return true;
    for (Value value : llvm::concat<Value>(reads, writes))
      if (extentOf(value).overlaps(extent))
        return true;
  }
  return false;
}

/// Promotes one accumulator of `loop` if it has one: a load and a later
/// store in the loop's body (not nested), of the same element of the same
/// buffer, at indices fixed for the loop, that nothing else in the loop
/// touches. Returns the new loop, or null.
scf::ForOp promoteOne(RewriterBase &rewriter, scf::ForOp loop) {
  Block *body = loop.getBody();
  for (auto load : body->getOps<memref::LoadOp>()) {
    if (!loop.isDefinedOutsideOfLoop(load.getMemRef()) ||
        !llvm::all_of(load.getIndices(), [&](Value index) {
          return loop.isDefinedOutsideOfLoop(index);
        }))
      continue;
    memref::StoreOp store;
    for (Operation *op = load->getNextNode(); op; op = op->getNextNode())
      if (auto candidate = dyn_cast<memref::StoreOp>(op))
        if (candidate.getMemRef() == load.getMemRef() &&
            candidate.getIndices() == load.getIndices()) {
          store = candidate;
          break;
        }
    if (!store || othersTouch(loop, extentOf(load.getMemRef()), load, store))
      continue;
    // Before the loop: the first value; in it, the carried one; after it,
    // the last, stored once.
    rewriter.setInsertionPoint(loop);
    Value first = memref::LoadOp::create(rewriter, load.getLoc(),
                                         load.getMemRef(), load.getIndices());
    Value stored = store.getValueToStore();
    FailureOr<LoopLikeOpInterface> replaced =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalYields(
                rewriter, first, /*replaceInitOperandUsesInLoop=*/false,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  return SmallVector<Value>{stored};
                });
    if (failed(replaced))
      return nullptr;
    auto promoted = cast<scf::ForOp>(replaced->getOperation());
    rewriter.replaceOp(load, promoted.getRegionIterArgs().back());
    rewriter.setInsertionPointAfter(promoted);
    memref::StoreOp::create(rewriter, store.getLoc(),
                            promoted.getResults().back(), store.getMemRef(),
                            store.getIndices());
    rewriter.eraseOp(store);
    return promoted;
  }
  return nullptr;
}

struct GPUPromoteAccumulatorsPass
    : impl::GPUPromoteAccumulatorsBase<GPUPromoteAccumulatorsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Innermost loops first: the load and store that promoting a loop puts
    // around it are then in its parent's body, for the parent's turn.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops)
      while (scf::ForOp promoted = promoteOne(rewriter, loop))
        loop = promoted;
    // A multiply feeding an add may become one fused multiply-add (PTX's
    // mul.rn and add.rn forbid ptxas to fuse them): half the instructions
    // of a reduction, and one rounding instead of two, as the CPU's FMA
    // code has.
    if (contract)
      getOperation().walk([](Operation *op) {
        if (isa<arith::MulFOp, arith::AddFOp, arith::SubFOp>(op))
          if (auto math = dyn_cast<arith::ArithFastMathInterface>(op))
            op->setAttr(
                math.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(
                    op->getContext(), math.getFastMathFlagsAttr().getValue() |
                                          arith::FastMathFlags::contract));
      });
  }
};

} // namespace
} // namespace kiln::gpu
