//===- FoldEmptyTensors.cpp - Values with no elements become constants ----===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHFOLDEMPTYTENSORS
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {

bool isEmpty(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 0;
}

Value emptyConstant(OpBuilder &builder, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return ConstantOp::create(
      builder, loc, DenseElementsAttr::get(tensor, ArrayRef<Attribute>{}));
}

struct GraphFoldEmptyTensorsPass
    : kiln::graph::impl::GraphFoldEmptyTensorsBase<GraphFoldEmptyTensorsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    OpBuilder builder(func.getBody());
    for (BlockArgument arg : func.getArguments()) {
      if (!isEmpty(arg.getType()) || arg.use_empty())
        continue;
      builder.setInsertionPointToStart(&func.getBody().front());
      arg.replaceAllUsesWith(
          emptyConstant(builder, arg.getLoc(), arg.getType()));
    }
    SmallVector<Operation *> toErase;
    func.walk([&](Operation *op) {
      if (!isa<GraphDialect>(op->getDialect()) || isa<ConstantOp>(op) ||
          op->getNumResults() == 0 ||
          !llvm::all_of(op->getResultTypes(), isEmpty))
        return;
      builder.setInsertionPoint(op);
      for (Value result : op->getResults())
        result.replaceAllUsesWith(
            emptyConstant(builder, op->getLoc(), result.getType()));
      toErase.push_back(op);
    });
    for (Operation *op : toErase)
      op->erase();
  }
};

} // namespace
