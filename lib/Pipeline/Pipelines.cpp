//===- Pipelines.cpp - Kiln's pass pipelines ------------------------------===//

#include "lib/Pipeline/Pipelines.h"

#include "lib/Target/GPUTarget.h"

#include "codegen/CPU/Passes.h"
#include "codegen/Common/KernelConfig.h"
#include "codegen/GPU/Passes.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kiln {

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

/// Tensors to buffers. Function results become output parameters that the
/// caller provides, and the buffers that were returned are written in place;
/// the others are planned into one workspace. With `hoistFromLoops`, the
/// buffers allocated inside loops (a recurrence's per-step temporaries) are
/// allocated once before them, so that the plan places them too (a GPU
/// kernel cannot allocate, and the threads of a block must share them).
static void addBufferizationPasses(OpPassManager &pm,
                                   bool hoistFromLoops = false) {
  // Run-time sizes read from the function's arguments, not from the ops
  // before (`tensor.dim` of a layer's result, which is the dimension of the
  // layer before's, and so on): bufferization compares slices at run-time
  // offsets by bounding their values, each comparison walking those chains
  // back through the model. A dynamic BERT-base spent 150 of its 190 s of
  // compilation there; six layers of it 16.7 -> 0.9 s.
  pm.addPass(memref::createResolveShapedTypeResultDimsPass());
  pm.addPass(createCodegenCanonicalizer());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenCopyRepeatedResults());
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenDuplicateDestinations());
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenFillBorders());
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
  if (hoistFromLoops)
    pm.addNestedPass<func::FuncOp>(
        bufferization::createBufferLoopHoistingPass());
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenPlanMemory());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createForallToParallelLoopPass());
}

/// Loops, memrefs and arithmetic to the LLVM dialect, with the bare-pointer
/// calling convention; `parallel` lowers scf.parallel to OpenMP.
static void addLowerToLLVMPasses(OpPassManager &pm, bool parallel) {
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createLowerAffinePass());
  if (parallel) {
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
  // A function of run-time sizes (a dynamic model's entry) keeps its memref
  // descriptors: the bare-pointer convention has no place for the sizes.
  // With OpenMP, convert-openmp-to-llvm converts it so; without, nothing
  // did, and the model failed to translate.
  if (!parallel)
    pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCodegenCanonicalizer());
}

void buildCPUCodegenPipeline(OpPassManager &pm,
                             const CPUCodegenOptions &options) {
  // Configurations from a tuning database: the convolutions' and
  // contractions' on the ops as lowered, the loop nests' on the fused ops
  // as they will run.
  auto applyKernelConfigs = [&](StringRef stage) {
    if (options.tuningDB.empty())
      return;
    codegen::CodegenApplyKernelConfigsOptions configs;
    configs.tuningDB = options.tuningDB;
    configs.target = options.targetKey;
    configs.vectorWidth = options.vectorWidth;
    configs.parallel = options.parallel;
    configs.stage = stage.str();
    pm.addPass(codegen::createCodegenApplyKernelConfigs(configs));
  };
  applyKernelConfigs("kernels");
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenFuseElementwise());
  applyKernelConfigs("loop-nests");
  cpu::CPUSelectConvAlgorithmOptions select;
  select.algorithm = options.convAlgorithm;
  select.overrides.assign(options.convAlgorithmOverrides.begin(),
                          options.convAlgorithmOverrides.end());
  select.vectorWidth = options.vectorWidth;
  const ConvCostModel &costs = options.convCosts;
  select.transformCost = costs.transform;
  select.directCost = costs.direct;
  select.passCost = costs.pass;
  select.blockedTransformCostF2 = costs.blockedTransformF2;
  select.blockedTransformCost = costs.blockedTransform;
  select.weightCost = costs.weight;
  select.winogradCachedFloats = costs.winogradCachedFloats;
  select.spillCost = costs.spill;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUSelectConvAlgorithm(select));
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenConvToWinograd());
  // A Winograd layer ends in an elementwise sum with its bias, fused here
  // with the layer's epilogue (not with the bias's broadcast: see the
  // pass's broadcasts option).
  codegen::CodegenFuseElementwiseOptions fuse;
  fuse.broadcasts = false;
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenFuseElementwise(fuse));
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenConvToIm2Col());
  // Ops over a run-time number of rows (a sequence length) in static
  // blocks of rows, which the passes below take as static ops. A block
  // reads the whole weight (the column tiles go outside its row tiles), so
  // a product of a weight beyond the L2 share runs its blocks of 64 rows
  // and more inside a loop over the weight's panels, each panel read once
  // for all of them: BERT-base at 384 tokens read its 9.4 MB feed-forward
  // weights three times in blocks of 128.
  cpu::CPUTileSymbolicRowsOptions symbolicRows;
  symbolicRows.blocks = {128, 64, 8, 1};
  symbolicRows.panelColumns = 2 * options.vectorWidth;
  symbolicRows.panelRows = options.rows;
  symbolicRows.panelWeightBytes = options.cachedWeightBytes;
  symbolicRows.parallel = options.parallel;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUTileSymbolicRows(symbolicRows));
  // Register-blocked vector code for contractions (loops for the rest, below),
  // constant matmul weights first laid out as the blocks read them.
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenPadInPlace());
  cpu::CPUPackWeightsOptions pack;
  pack.vectorWidth = options.vectorWidth;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUPackWeights(pack));
  cpu::CPUTileAndVectorizeOptions vectorize;
  vectorize.vectorWidth = options.vectorWidth;
  vectorize.rows = options.rows;
  vectorize.parallel = options.parallel;
  vectorize.cachedWeightBytes = options.cachedWeightBytes;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUTileAndVectorize(vectorize));
  // The other loop nests on threads too.
  if (options.parallel)
    pm.addNestedPass<func::FuncOp>(cpu::createCPUParallelize());
  pm.addPass(createCodegenCanonicalizer());
  pm.addPass(createCSEPass());

  addBufferizationPasses(pm);

  pm.addPass(codegen::createCodegenFlattenGlobals());
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenLowerCopies());
  cpu::CPUReorderLoopsOptions reorder;
  reorder.transposeBlock = options.transposeBlock;
  reorder.vectorWidth = options.vectorWidth;
  pm.addNestedPass<func::FuncOp>(cpu::createCPUReorderLoops(reorder));
  // n-D vector transfers become 1-D ones in registers, not a memory copy.
  pm.addPass(createConvertVectorToSCFPass(
      VectorTransferToSCFOptions().enableFullUnroll()));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // One function per loop nest: LLVM optimizes each kernel on its own.
  pm.addPass(codegen::createCodegenOutlineKernels());
  // Vectorizable arithmetic instead of a libm call per element (after the
  // kernel table counted each function as one operation).
  pm.addNestedPass<func::FuncOp>(cpu::createCPUApproximateMath());
  // Constant weights fetched ahead of the tile steps that read them.
  pm.addNestedPass<func::FuncOp>(cpu::createCPUPrefetchWeights());
  // The integer convolutions' dot products, after bufferization (which
  // takes no op of unknown effects, as an intrinsic call is).
  cpu::CPULowerDotProductsOptions dots;
  dots.instruction = options.int8Dot;
  dots.lanes = options.int8DotLanes;
  dots.bf16Instruction = options.bf16Dot;
  dots.bf16Lanes = options.bf16DotLanes;
  pm.addNestedPass<func::FuncOp>(cpu::createCPULowerDotProducts(dots));
  // Out-of-range indices fail the run (after outlining: a check stays in
  // the code that runs on the caller's thread).
  pm.addPass(codegen::createCodegenLowerIndexChecks());
  addLowerToLLVMPasses(pm, options.parallel);
}

void buildGPUCodegenPipeline(OpPassManager &pm,
                             const GPUCodegenOptions &options) {
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenFuseElementwise());
  // Convolutions as matmuls, which the GPU tiles through shared memory.
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenConvToIm2Col());
  addBufferizationPasses(pm, /*hoistFromLoops=*/true);
  // Out-of-range indices fail the run: the kernels clamp them and record
  // the first in the run's error slot in device memory, an argument after
  // the workspace, which the runtime reads after the run.
  codegen::CodegenLowerIndexChecksOptions checks;
  checks.slot = "argument";
  pm.addPass(codegen::createCodegenLowerIndexChecks(checks));
  pm.addNestedPass<func::FuncOp>(codegen::createCodegenLowerCopies());
  gpu::GPUTileContractionsOptions tiles;
  tiles.implicitGemm = options.implicitGemm;
  pm.addNestedPass<func::FuncOp>(gpu::createGPUTileContractions(tiles));
  pm.addNestedPass<func::FuncOp>(gpu::createGPUReduceRows());
  pm.addNestedPass<func::FuncOp>(gpu::createGPUParallelLoopsFirst());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(gpu::createGPUExternalizeConstants());
  pm.addPass(createCodegenCanonicalizer());
  pm.addNestedPass<func::FuncOp>(gpu::createGPUPromoteAccumulators());
  gpu::GPUMapToLaunchOptions map;
  map.blockSize = options.blockSize;
  pm.addNestedPass<func::FuncOp>(gpu::createGPUMapToLaunch(map));
  pm.addPass(gpu::createGPULowerLaunches());
  if (options.emulation)
    pm.addPass(gpu::createGPUEmulate());

  // The kernels: NVVM, then PTX for each architecture.
  OpPassManager &device = pm.nest<mlir::gpu::GPUModuleOp>();
  device.addPass(createLowerAffinePass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createLowerAffinePass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  // Kernel parameters are plain device pointers (kiln-gpu-map-to-launch
  // leaves whole buffers only).
  nvvm.useBarePtrCallConv = true;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createReconcileUnrealizedCastsPass());
  device.addPass(createCodegenCanonicalizer());
  device.addPass(createCSEPass());
  for (const std::string &arch : options.archs) {
    GpuNVVMAttachTargetOptions target;
    target.moduleMatcher = gpu::kKernelModule.str();
    target.chip = arch;
    target.optLevel = 3;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));

  // The host: it enqueues the launches (and runs the emulated kernels).
  addLowerToLLVMPasses(pm, /*parallel=*/false);
}

/// The largest size a symbolic dimension may take (2^31 - 1): far above
/// any batch, and every size computation stays in range.
constexpr int64_t kMaxSymbolSize = (int64_t(1) << 31) - 1;

llvm::Expected<PipelineOptions>
resolvePipelineOptions(const CompileOptions &options) {
  // A GPU model's host code only enqueues launches: any x86-64 server of the
  // last decade runs it (x86-64-v3: AVX2, FMA, F16C). With emulation it also
  // runs the kernels, on the machine that compiles (the host CPU, as for the
  // x86-64 target), whose half-precision conversions they use.
  std::string hostCPU = options.cpu;
  if (options.target == "nvptx" && hostCPU.empty() && !options.gpuEmulation)
    hostCPU = "x86-64-v3";
  llvm::Expected<TargetInfo> target = resolveTarget(
      options.target, hostCPU, options.features, options.sveVectorBits);
  if (!target)
    return target.takeError();
  PipelineOptions result;
  result.target = *target;
  for (const auto &[name, bounds] : options.dynamicDims)
    if (bounds.first < 1 || bounds.second < bounds.first ||
        bounds.second > kMaxSymbolSize)
      return llvm::createStringError(
          "--dynamic-dims " + name + "=" + std::to_string(bounds.first) + ".." +
          std::to_string(bounds.second) +
          ": the bounds must satisfy 1 <= MIN <= MAX <= " +
          std::to_string(kMaxSymbolSize));

  result.graph.enable = options.optimizeGraph;
  if (options.layoutBlock < 0 || options.layoutBlock > 1024)
    return llvm::createStringError(
        "--layout-block=" + std::to_string(options.layoutBlock) +
        " is not a block size (1 to 1024 channels, or 0 for the target's "
        "vector width)");
  switch (options.layout) {
  case Layout::NC1HWC0:
    // The same layout, named as Ascend's toolchains name it: C0 is 16
    // unless --layout-block says otherwise, whatever the vector width.
    result.graph.layoutBlock =
        options.layoutBlock > 0 ? options.layoutBlock : 16;
    break;
  case Layout::Auto:
    // The GPU's kernels map one thread per element of any layout; NCHW
    // until a blocked layout pays there.
    result.graph.layoutBlock = result.target.arch == TargetArch::NVPTX ? 0
                               : options.layoutBlock > 0
                                   ? options.layoutBlock
                                   : result.target.vectorWidthF32;
    break;
  case Layout::Blocked:
    result.graph.layoutBlock = options.layoutBlock > 0
                                   ? options.layoutBlock
                                   : result.target.vectorWidthF32;
    break;
  case Layout::NCHW:
    result.graph.layoutBlock = 0;
    break;
  }
  // The GPU reduces by warps and blocks; the CPU by results on threads.
  result.graph.splitReductions = result.target.arch != TargetArch::NVPTX;
  // The CPU's code computes f16 models in f32 (as onnxruntime's CPU kernels
  // do); a GPU has half-precision arithmetic.
  result.graph.widenHalf = result.target.arch != TargetArch::NVPTX;
  // Integer convolutions where the blocked layout's block is the dot
  // product's width (an NC1HWC0 block of 16 on an 8-lane target is not).
  result.graph.integerContractions =
      result.target.int8DotLanes > 0 &&
      result.graph.layoutBlock == result.target.int8DotLanes;
  if (options.precision != "fp32" && options.precision != "bf16")
    return llvm::createStringError("--precision=" + options.precision +
                                   " is not a precision (fp32 or bf16)");
  if (options.precision == "bf16") {
    if (result.target.bf16Dot.empty())
      return llvm::createStringError(
          "--precision=bf16 needs a CPU with bf16 dot products (x86 "
          "AVX512-BF16, e.g. --cpu=sapphirerapids or znver4; AArch64 BF16, "
          "e.g. --cpu=neoverse-v1); " +
          result.target.cpu + " has none");
    if (result.graph.layoutBlock != result.target.bf16DotLanes)
      return llvm::createStringError(
          "--precision=bf16 needs the blocked layout at the target's vector "
          "width (--layout=blocked without --layout-block)");
    result.graph.bf16Contractions = true;
  }
  result.batchSplit = spell(options.batchSplit);
  if (result.target.arch == TargetArch::NVPTX &&
      options.batchSplit == BatchSplit::Auto)
    result.batchSplit = "off"; // a GPU has room for the whole batch
  result.batchSplitCacheBytes = result.target.batchSplitCacheBytes;

  // Code generation for a CPU.
  CPUCodegenOptions &cpu = result.cpu;
  cpu.vectorWidth = result.target.vectorWidthF32;
  cpu.rows = result.target.registerBlockRows();
  cpu.int8Dot = result.target.int8Dot;
  cpu.int8DotLanes = result.target.int8DotLanes;
  cpu.bf16Dot = result.target.bf16Dot;
  cpu.bf16DotLanes = result.target.bf16DotLanes;
  cpu.convCosts = result.target.convCosts;
  cpu.cachedWeightBytes = result.target.cachedWeightBytes;
  cpu.transposeBlock = result.target.transposeBlock;
  // Multithreading goes through LLVM's OpenMP runtime (libomp.so.5) on
  // both architectures, unless the user asks for code without it.
  cpu.parallel = options.openMP;
  std::vector<std::string> algorithms = optionValues("conv-algorithm");
  auto known = [&](const std::string &name) {
    return llvm::is_contained(algorithms, name);
  };
  std::string list = llvm::join(algorithms, ", ");
  if (!known(options.convAlgorithm))
    return llvm::createStringError("unknown convolution algorithm '" +
                                   options.convAlgorithm + "' (expected " +
                                   list + ")");
  cpu.convAlgorithm = options.convAlgorithm;
  for (const auto &[layer, algorithm] : options.convAlgorithms) {
    if (layer.empty() || algorithm == "auto" || !known(algorithm))
      return llvm::createStringError(
          "bad convolution algorithm '" + layer + "=" + algorithm +
          "' (expected LAYER=ALGORITHM with one of " + list + " but auto)");
    cpu.convAlgorithmOverrides.push_back(layer + "=" + algorithm);
  }
  cpu.tuningDB = options.tuningDB;
  if (result.target.arch == TargetArch::NVPTX) {
    if (!options.tuningDB.empty())
      return llvm::createStringError(
          "--tuning-db is for CPU targets; the nvptx target has no tuned "
          "kernels yet");
    llvm::Expected<std::vector<std::string>> archs =
        resolveGPUArchs(options.gpuArch);
    if (!archs)
      return archs.takeError();
    result.gpu.archs = std::move(*archs);
    llvm::Expected<std::string> toolkit = findCUDAToolkit(options.cudaPath);
    if (!toolkit)
      return toolkit.takeError();
    result.gpu.toolkit = *toolkit;
    result.gpu.emulation = options.gpuEmulation;
    result.gpu.implicitGemm = options.gpuImplicitGemm;
  } else if (!options.gpuArch.empty() || options.gpuEmulation ||
             options.gpuImplicitGemm) {
    return llvm::createStringError(
        std::string(options.gpuEmulation      ? "--gpu-emulation"
                    : options.gpuImplicitGemm ? "--gpu-implicit-gemm"
                                              : "--gpu-arch") +
        " is for the nvptx target");
  }
  cpu.targetKey = result.target.triple + "/" + result.target.cpu;
  if (!options.features.empty())
    cpu.targetKey += "/" + options.features;
  if (!options.tuningDB.empty()) {
    // Read now, so that a malformed database fails before the import.
    llvm::Expected<codegen::TuningDatabase> database =
        codegen::TuningDatabase::load(options.tuningDB);
    if (!database)
      return database.takeError();
    result.tuningDatabase =
        std::make_shared<codegen::TuningDatabase>(std::move(*database));
  }
  return result;
}

void buildPipeline(OpPassManager &pm, const PipelineOptions &options,
                   PipelineStage first, PipelineStage last) {
  auto runs = [&](PipelineStage stage) {
    return first <= stage && stage <= last;
  };
  if (runs(PipelineStage::Graph))
    buildGraphOptimizationPipeline(pm, options.graph);
  if (runs(PipelineStage::Linalg)) {
    pm.addPass(graph::createGraphMakeEntry());
    graph::GraphSplitBatchOptions split;
    split.mode = options.batchSplit;
    split.cacheBytes = options.batchSplitCacheBytes;
    pm.addNestedPass<func::FuncOp>(graph::createGraphSplitBatch(split));
    buildLowerToLinalgPipeline(pm);
  }
  if (runs(PipelineStage::LLVM)) {
    switch (options.target.arch) {
    case TargetArch::X86_64:
    case TargetArch::AArch64:
      buildCPUCodegenPipeline(pm, options.cpu);
      break;
    case TargetArch::NVPTX:
      buildGPUCodegenPipeline(pm, options.gpu);
      break;
    }
  }
}

namespace {
/// kiln-opt's kiln-graph-optimize: GraphOptimizationOptions.
struct GraphPipelineOptions : public PassPipelineOptions<GraphPipelineOptions> {
  Option<int64_t> layoutBlock{
      *this, "layout-block",
      llvm::cl::desc("channels per block of the blocked layout (0: NCHW)"),
      llvm::cl::init(0)};
  Option<bool> bf16Contractions{
      *this, "bf16-contractions",
      llvm::cl::desc("bf16 operands for float convolutions and matrix "
                     "products (--precision=bf16)"),
      llvm::cl::init(false)};
  Option<bool> integerContractions{
      *this, "integer-contractions",
      llvm::cl::desc("compute convolutions of proven 8-bit operands in "
                     "integers (targets with 8-bit dot products)"),
      llvm::cl::init(false)};
  Option<bool> splitReductions{
      *this, "split-reductions",
      llvm::cl::desc("split large reductions with few results into parts "
                     "for the CPU's threads"),
      llvm::cl::init(false)};
  Option<bool> widenHalf{
      *this, "widen-half",
      llvm::cl::desc("compute f16 tensors in f32, keeping the function's "
                     "signature (CPU targets)"),
      llvm::cl::init(false)};
};

/// kiln-opt's kiln-cpu-codegen: CPUCodegenOptions, with the defaults of an
/// AVX-512 CPU; kiln-compile --print-pipeline shows a target's values.
struct CodegenPipelineOptions
    : public PassPipelineOptions<CodegenPipelineOptions> {
  Option<std::string> convAlgorithm{
      *this, "conv-algorithm",
      llvm::cl::desc("every convolution's algorithm (auto: the cost model)"),
      llvm::cl::init("auto")};
  ListOption<std::string> convAlgorithmOverrides{
      *this, "conv-algorithm-overrides",
      llvm::cl::desc("LAYER=ALGORITHM for single layers")};
  Option<int64_t> vectorWidth{*this, "vector-width",
                              llvm::cl::desc("fp32 lanes per vector"),
                              llvm::cl::init(16)};
  Option<int64_t> rows{*this, "rows",
                       llvm::cl::desc("output rows per register block"),
                       llvm::cl::init(8)};
  Option<std::string> int8Dot{
      *this, "int8-dot",
      llvm::cl::desc("the target's 8-bit dot-product instruction: vpdpbusd, "
                     "usdot, sdot or none")};
  Option<int64_t> int8DotLanes{
      *this, "int8-dot-lanes",
      llvm::cl::desc("lanes of the target's 8-bit dot product (0: none)"),
      llvm::cl::init(0)};
  Option<std::string> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("the target's bf16 dot-product instruction: vdpbf16ps, "
                     "bfdot or none")};
  Option<int64_t> bf16DotLanes{
      *this, "bf16-dot-lanes",
      llvm::cl::desc("lanes of the target's bf16 dot product (0: none)"),
      llvm::cl::init(0)};
  Option<bool> parallel{*this, "parallel",
                        llvm::cl::desc("multithreaded code (OpenMP), as "
                                       "kiln-compile makes by default"),
                        llvm::cl::init(false)};
  Option<std::string> tuningDB{
      *this, "tuning-db", llvm::cl::desc("a tuning database (JSON lines)")};
  Option<std::string> targetKey{
      *this, "target-key",
      llvm::cl::desc("the target as the tuning database names it")};
};
/// kiln-opt's kiln-gpu-codegen: GPUCodegenOptions.
struct GPUPipelineOptions : public PassPipelineOptions<GPUPipelineOptions> {
  ListOption<std::string> archs{
      *this, "gpu-arch", llvm::cl::desc("GPU architectures (default sm_80)")};
  Option<std::string> toolkit{
      *this, "cuda-path",
      llvm::cl::desc("the CUDA toolkit's root, for libdevice")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("threads per block"),
                            llvm::cl::init(256)};
  Option<bool> emulation{*this, "emulation",
                         llvm::cl::desc("host twins of the kernels"),
                         llvm::cl::init(false)};
  Option<bool> implicitGemm{*this, "implicit-gemm",
                            llvm::cl::desc("convolutions as implicit GEMMs"),
                            llvm::cl::init(false)};
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<GraphPipelineOptions>(
      "kiln-graph-optimize", "Graph-level optimisation of the graph dialect",
      [](OpPassManager &pm, const GraphPipelineOptions &pipelineOptions) {
        GraphOptimizationOptions options;
        options.layoutBlock = pipelineOptions.layoutBlock;
        options.integerContractions = pipelineOptions.integerContractions;
        options.bf16Contractions = pipelineOptions.bf16Contractions;
        options.splitReductions = pipelineOptions.splitReductions;
        options.widenHalf = pipelineOptions.widenHalf;
        buildGraphOptimizationPipeline(pm, options);
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
        options.convAlgorithm = pipelineOptions.convAlgorithm;
        options.convAlgorithmOverrides.assign(
            pipelineOptions.convAlgorithmOverrides.begin(),
            pipelineOptions.convAlgorithmOverrides.end());
        options.vectorWidth = pipelineOptions.vectorWidth;
        options.rows = pipelineOptions.rows;
        options.int8Dot = pipelineOptions.int8Dot;
        options.int8DotLanes = pipelineOptions.int8DotLanes;
        options.bf16Dot = pipelineOptions.bf16Dot;
        options.bf16DotLanes = pipelineOptions.bf16DotLanes;
        options.parallel = pipelineOptions.parallel;
        options.tuningDB = pipelineOptions.tuningDB;
        options.targetKey = pipelineOptions.targetKey;
        buildCPUCodegenPipeline(pm, options);
      });
  PassPipelineRegistration<GPUPipelineOptions>(
      "kiln-gpu-codegen",
      "Bufferizes linalg on tensors, maps it to NVIDIA GPU kernels (PTX in a "
      "gpu.binary) and lowers the host code to the LLVM dialect",
      [](OpPassManager &pm, const GPUPipelineOptions &pipelineOptions) {
        GPUCodegenOptions options;
        if (!pipelineOptions.archs.empty())
          options.archs.assign(pipelineOptions.archs.begin(),
                               pipelineOptions.archs.end());
        options.toolkit = pipelineOptions.toolkit;
        options.blockSize = pipelineOptions.blockSize;
        options.emulation = pipelineOptions.emulation;
        options.implicitGemm = pipelineOptions.implicitGemm;
        buildGPUCodegenPipeline(pm, options);
      });
}

} // namespace kiln
