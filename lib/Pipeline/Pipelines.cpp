//===- Pipelines.cpp - Kiln's pass pipelines ------------------------------===//

#include "lib/Pipeline/Pipelines.h"

#include "codegen/CPU/Passes.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

void buildGraphOptimizationPipeline(OpPassManager &pm,
                                    const GraphOptimizationOptions &options) {
  if (!options.enable)
    return;
  pm.addNestedPass<func::FuncOp>(graph::createGraphInferShapes());
  pm.addNestedPass<func::FuncOp>(graph::createGraphFoldEmptyTensors());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After folding, so that weights and per-channel parameters are constants;
  // BatchNorm folding before fusion, so that an activation meets its conv.
  if (options.foldBatchNorm)
    pm.addNestedPass<func::FuncOp>(graph::createGraphFoldBatchNorm());
  if (options.fuseEpilogues)
    pm.addNestedPass<func::FuncOp>(graph::createGraphFuseEpilogues());
  // After fusion, so that the blocked ops carry their epilogues.
  if (options.layoutBlock > 0) {
    graph::GraphBlockedLayoutOptions layout;
    layout.block = options.layoutBlock;
    pm.addNestedPass<func::FuncOp>(graph::createGraphBlockedLayout(layout));
  }
  // Weights replaced by folding are dead now.
  pm.addPass(createCanonicalizerPass());
}

void buildLowerToLinalgPipeline(OpPassManager &pm) {
  pm.addPass(createConvertGraphToLinalg());
  pm.addPass(createCanonicalizerPass());
}

/// The canonicalizer of the code-generation pipeline: no block merging, which
/// on a large model's kernels cost more than it gave (LLVM merges blocks).
static std::unique_ptr<Pass> createCodegenCanonicalizer() {
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Normal);
  return createCanonicalizerPass(config);
}

void buildCPUCodegenPipeline(OpPassManager &pm,
                             const CPUCodegenOptions &options) {
  if (!options.tuningDB.empty()) {
    cpu::CPUApplyKernelConfigsOptions configs;
    configs.tuningDB = options.tuningDB;
    configs.target = options.targetKey;
    configs.vectorWidth = options.vectorWidth;
    configs.parallel = options.parallel;
    pm.addPass(cpu::createCPUApplyKernelConfigs(configs));
  }
  if (options.fuseElementwise)
    pm.addNestedPass<func::FuncOp>(cpu::createCPUFuseElementwise());
  cpu::CPUSelectConvAlgorithmOptions select;
  select.algorithm = options.convAlgorithm;
  select.overrides.assign(options.convAlgorithmOverrides.begin(),
                          options.convAlgorithmOverrides.end());
  select.vectorWidth = options.vectorWidth;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUSelectConvAlgorithm(select));
  pm.addNestedPass<func::FuncOp>(cpu::createCPUConvToWinograd());
  // A Winograd layer ends in an elementwise sum with its bias, fused here
  // with the layer's epilogue (not with the bias's broadcast: see the
  // pass's broadcasts option).
  if (options.fuseElementwise) {
    cpu::CPUFuseElementwiseOptions fuse;
    fuse.broadcasts = false;
    pm.addNestedPass<func::FuncOp>(cpu::createCPUFuseElementwise(fuse));
  }
  if (options.convToIm2Col)
    pm.addNestedPass<func::FuncOp>(cpu::createCPUConvToIm2Col());
  // Register-blocked vector code for contractions (loops for the rest, below),
  // constant matmul weights first laid out as the blocks read them.
  pm.addNestedPass<func::FuncOp>(cpu::createCPUPadInPlace());
  if (options.vectorizeContractions) {
    cpu::CPUPackWeightsOptions pack;
    pack.vectorWidth = options.vectorWidth;
    pm.addNestedPass<func::FuncOp>(cpu::createCPUPackWeights(pack));
    cpu::CPUTileAndVectorizeOptions vectorize;
    vectorize.vectorWidth = options.vectorWidth;
    vectorize.rows = options.rows;
    vectorize.parallel = options.parallel;
    pm.addNestedPass<func::FuncOp>(cpu::createCPUTileAndVectorize(vectorize));
  }
  // The other loop nests on threads too.
  if (options.parallel)
    pm.addNestedPass<func::FuncOp>(cpu::createCPUParallelize());
  pm.addPass(createCodegenCanonicalizer());
  pm.addPass(createCSEPass());

  // Tensors to buffers. Function results become output parameters that the
  // caller provides, and the buffers that were returned are written in place.
  pm.addNestedPass<func::FuncOp>(cpu::createCPUCopyRepeatedResults());
  pm.addNestedPass<func::FuncOp>(cpu::createCPUDuplicateDestinations());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  if (options.planMemory)
    pm.addNestedPass<func::FuncOp>(cpu::createCPUPlanMemory());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createForallToParallelLoopPass());

  pm.addPass(cpu::createCPUFlattenGlobals());
  pm.addNestedPass<func::FuncOp>(cpu::createCPULowerCopies());
  pm.addNestedPass<func::FuncOp>(cpu::createCPUReorderLoops());
  // n-D vector transfers become 1-D ones in registers, not a memory copy.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // One function per loop nest: LLVM optimizes each kernel on its own.
  pm.addPass(cpu::createCPUOutlineKernels());
  // Vectorizable arithmetic instead of a libm call per element (after the
  // kernel table counted each function as one operation).
  pm.addNestedPass<func::FuncOp>(cpu::createCPUApproximateMath());
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createLowerAffinePass());
  if (options.parallel) {
    pm.addPass(createConvertSCFToOpenMPPass());
    // Inlines the alloca scopes around parallel bodies that allocate nothing;
    // a scope must not hold the several blocks that control flow makes.
    pm.addPass(createCodegenCanonicalizer());
  }
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCodegenCanonicalizer());
}

namespace {
/// What kiln-opt's kiln-cpu-codegen takes of CPUCodegenOptions.
struct CodegenPipelineOptions
    : public PassPipelineOptions<CodegenPipelineOptions> {
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("multithreaded code (OpenMP), as "
                                       "kiln-compile makes by default"),
                        llvm::cl::init(false)};
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<>(
      "kiln-graph-optimize", "Graph-level optimisation of the graph dialect",
      [](OpPassManager &pm) {
        buildGraphOptimizationPipeline(pm, GraphOptimizationOptions());
      });
  PassPipelineRegistration<>(
      "kiln-lower-to-linalg",
      "Lowers the graph dialect to linalg, tensor, arith and math",
      [](OpPassManager &pm) { buildLowerToLinalgPipeline(pm); });
  PassPipelineRegistration<CodegenPipelineOptions>(
      "kiln-cpu-codegen",
      "Bufferizes linalg on tensors and lowers it to the LLVM dialect",
      [](OpPassManager &pm, const CodegenPipelineOptions &pipelineOptions) {
        CPUCodegenOptions options;
        options.parallel = pipelineOptions.parallel;
        buildCPUCodegenPipeline(pm, options);
      });
}

} // namespace kiln
