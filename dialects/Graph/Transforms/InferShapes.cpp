//===- InferShapes.cpp - Refine result shapes of graph ops ----------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/IR/TypeUtilities.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHINFERSHAPES
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {

/// Number of static dimensions, the measure of how much a type says.
int64_t countStaticDims(RankedTensorType type) {
  return llvm::count_if(type.getShape(),
                        [](int64_t d) { return !ShapedType::isDynamic(d); });
}

/// The meet of two compatible tensor types: every dimension static in either.
RankedTensorType refine(RankedTensorType a, RankedTensorType b) {
  SmallVector<int64_t> shape(a.getShape());
  for (auto [i, d] : llvm::enumerate(b.getShape()))
    if (ShapedType::isDynamic(shape[i]))
      shape[i] = d;
  return a.clone(shape);
}

struct GraphInferShapesPass
    : kiln::graph::impl::GraphInferShapesBase<GraphInferShapesPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    func.walk([&](InferTypeOpInterface op) {
      if (op->getDialect() != getGraphDialect(op))
        return;
      SmallVector<Type> inferred;
      if (failed(op.inferReturnTypes(op->getContext(), op->getLoc(),
                                     op->getOperands(), op->getAttrDictionary(),
                                     op->getPropertiesStorage(),
                                     op->getRegions(), inferred)))
        return;
      for (auto [result, type] : llvm::zip_equal(op->getResults(), inferred)) {
        auto current = dyn_cast<RankedTensorType>(result.getType());
        auto better = dyn_cast<RankedTensorType>(type);
        if (!current || !better || current.getRank() != better.getRank())
          continue;
        RankedTensorType refined = refine(current, better);
        if (countStaticDims(refined) > countStaticDims(current))
          result.setType(refined);
      }
    });
    // The function returns what its return op returns.
    func.walk([&](func::ReturnOp ret) {
      auto type = func.getFunctionType();
      func.setType(FunctionType::get(func.getContext(), type.getInputs(),
                                     ret.getOperandTypes()));
    });
  }

  static Dialect *getGraphDialect(Operation *op) {
    return op->getContext()->getLoadedDialect<GraphDialect>();
  }
};

} // namespace
