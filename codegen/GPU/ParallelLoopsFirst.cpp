//===- ParallelLoopsFirst.cpp - Reductions innermost, for the mapping -----===//

#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUPARALLELLOOPSFIRST
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

struct GPUParallelLoopsFirstPass
    : impl::GPUParallelLoopsFirstBase<GPUParallelLoopsFirstPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation().walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      // The parallel loops in their order, then the reductions in theirs.
      SmallVector<unsigned> order;
      for (auto [i, kind] : llvm::enumerate(iterators))
        if (kind == utils::IteratorType::parallel)
          order.push_back(i);
      unsigned numParallel = order.size();
      for (auto [i, kind] : llvm::enumerate(iterators))
        if (kind != utils::IteratorType::parallel)
          order.push_back(i);
      if (llvm::equal(order, llvm::seq<unsigned>(0, order.size())) ||
          numParallel == 0)
        continue;
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized))
          continue; // left as it is: correct, if slower
        generic = *generalized;
      }
      (void)linalg::interchangeGenericOp(rewriter, generic, order);
    }
  }
};

} // namespace
} // namespace kiln::gpu
