//===- Registration.cpp - Register Kiln's dialects and passes -------------===//

#include "lib/Pipeline/Registration.h"
#include "lib/Pipeline/Pipelines.h"

#include "codegen/CPU/Passes.h"
#include "codegen/GPU/Passes.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/Transforms/Passes.h"
#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace kiln {

void registerDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, graph::GraphDialect, mlir::func::FuncDialect>();
}

void registerPassesAndPipelines() {
  graph::registerGraphPasses();
  registerGraphToLinalgPasses();
  codegen::registerCodegenPasses();
  cpu::registerCPUPasses();
  gpu::registerGPUPasses();
  registerPipelines();
}

} // namespace kiln
