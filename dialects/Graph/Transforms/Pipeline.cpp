//===- Pipeline.cpp - The graph-level optimisation pipeline ---------------===//

#include "dialects/Graph/Transforms/Pipeline.h"

#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildGraphOptimizationPipeline(OpPassManager &pm,
                                    const GraphOptimizationOptions &options) {
  if (!options.enable)
    return;
  // First, so that every later pass sees f32 ops (and constants).
  if (options.widenHalf)
    pm.addNestedPass<func::FuncOp>(graph::createGraphWidenHalf());
  pm.addNestedPass<func::FuncOp>(graph::createGraphInferShapes());
  pm.addNestedPass<func::FuncOp>(graph::createGraphFoldEmptyTensors());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Before the passes that rewrite convolutions and pools (a 1-D
  // convolution takes its Pad before it becomes 2-D; the blocked layout then
  // sees no Pad between the window op and the ops before it).
  pm.addNestedPass<func::FuncOp>(graph::createGraphFoldPads());
  // After folding, so that weights and per-channel parameters are constants;
  // BatchNorm folding before fusion, so that an activation meets its conv.
  pm.addNestedPass<func::FuncOp>(graph::createGraphFoldBatchNorm());
  // After BatchNorm folding (which folds into a 1-D convolution as into a
  // 2-D one), before fusion (the activations meet the 2-D convolutions);
  // transposed convolutions first, so that a 1-D one becomes a 2-D
  // convolution too.
  pm.addNestedPass<func::FuncOp>(graph::createGraphConvTransposeAsConv());
  pm.addNestedPass<func::FuncOp>(graph::createGraphConv1DAs2D());
  pm.addNestedPass<func::FuncOp>(graph::createGraphPruneConvTaps());
  // After pruning (fewer depth taps to stack), before fusion (the 2-D
  // convolution takes the epilogues that follow).
  pm.addNestedPass<func::FuncOp>(graph::createGraphStackDepthTaps());
  pm.addNestedPass<func::FuncOp>(graph::createGraphFuseEpilogues());
  // After fusion, so that the blocked ops carry their epilogues.
  if (options.layoutBlock > 0) {
    graph::GraphBlockedLayoutOptions layout;
    layout.block = options.layoutBlock;
    pm.addNestedPass<func::FuncOp>(graph::createGraphBlockedLayout(layout));
    if (options.integerContractions || options.bf16Contractions) {
      graph::GraphMarkIntegerContractionsOptions mark;
      mark.integers = options.integerContractions;
      mark.bf16 = options.bf16Contractions;
      pm.addNestedPass<func::FuncOp>(
          graph::createGraphMarkIntegerContractions(mark));
    }
  }
  if (options.splitReductions)
    pm.addNestedPass<func::FuncOp>(graph::createGraphSplitReductions());
  // Weights replaced by folding are dead now.
  pm.addPass(createCanonicalizerPass());
}

} // namespace kiln
