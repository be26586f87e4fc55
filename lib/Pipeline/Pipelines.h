//===- Pipelines.h - Kiln's pass pipelines ----------------------*- C++ -*-===//
//
// The whole compilation, from the imported graph dialect to the LLVM
// dialect, is one pass pipeline built by one function, buildPipeline, from
// one validated options struct, PipelineOptions, which resolvePipelineOptions
// makes from kiln-compile's options before anything is imported. kiln-compile
// runs that pipeline stage by stage and prints it (--print-pipeline); kiln-opt
// runs the printed text and gets the same module.
//
// Each stage is also a function of its own options struct, registered with
// kiln-opt under its flag so that a stage can be run alone on textual IR:
//
//   kiln-graph-optimize    graph dialect -> optimised graph dialect
//   kiln-lower-to-linalg   graph dialect -> linalg/tensor/arith/math
//   kiln-cpu-codegen       linalg on tensors -> LLVM dialect for a CPU
//   kiln-gpu-codegen       linalg on tensors -> PTX and host LLVM dialect
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_PIPELINE_PIPELINES_H
#define KILN_LIB_PIPELINE_PIPELINES_H

#include "codegen/Common/KernelConfig.h"
#include "dialects/Graph/Transforms/Pipeline.h"
#include "kiln/compiler.h"
#include "lib/Target/TargetInfo.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// Lowering of the graph dialect to linalg and friends on tensors.
void buildLowerToLinalgPipeline(mlir::OpPassManager &pm);

struct CPUCodegenOptions {
  /// The convolution algorithm of every layer not in convAlgorithmOverrides:
  /// "auto" (the cost model), or one of codegen::convAlgorithmNames().
  std::string convAlgorithm = "auto";
  /// LAYER=ALGORITHM entries for single layers (ONNX node names).
  std::vector<std::string> convAlgorithmOverrides;
  /// fp32 elements per vector register of the target (TargetInfo).
  int64_t vectorWidth = 16;
  /// Output rows per register block.
  int64_t rows = 8;
  /// The target's 8-bit dot-product instruction and its lanes ("" and 0
  /// for none; TargetInfo::int8Dot).
  std::string int8Dot;
  int64_t int8DotLanes = 0;
  /// The target's bf16 dot-product instruction and its lanes
  /// (TargetInfo::bf16Dot).
  std::string bf16Dot;
  int64_t bf16DotLanes = 0;
  /// The target's cost model of the convolution algorithms, the L2 share a
  /// blocked convolution's weights may take, and the side of the register
  /// blocks of transposes (0: none); TargetInfo's values.
  ConvCostModel convCosts;
  int64_t cachedWeightBytes = 512 << 10;
  int64_t transposeBlock = 16;
  /// Run the output tiles of contractions on several threads (OpenMP: the
  /// model then needs libomp.so.5, and kiln_abi_run sets its thread count).
  bool parallel = false;
  /// A tuning database (JSON lines) whose configurations for `targetKey`
  /// steer the kernels that have one; empty: every kernel takes defaults.
  std::string tuningDB;
  /// The target as the tuning database names it (triple/cpu[/features]).
  std::string targetKey;
};

/// CPU code generation: bufferization (function results become caller-owned
/// output buffers), loops, and lowering to the LLVM dialect with the bare
/// pointer calling convention (one pointer per tensor argument).
void buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                             const CPUCodegenOptions &options);

struct GPUCodegenOptions {
  /// The GPU architectures, e.g. {"sm_80", "sm_90"} (resolveGPUArchs): one
  /// PTX module each, which the driver assembles into cubins.
  std::vector<std::string> archs = {"sm_80"};
  /// The CUDA toolkit's root, whose libdevice the PTX links (math
  /// functions); empty: upstream's lookup ($CUDA_HOME, PATH).
  std::string toolkit;
  /// Threads per block of the one-thread-per-element kernels.
  int64_t blockSize = 256;
  /// Host twins of the kernels, which the CUDA driver emulator runs
  /// (kiln-compile --gpu-emulation).
  bool emulation = false;
  /// Convolutions as implicit GEMMs (kiln-gpu-tile-contractions'
  /// implicit-gemm).
  bool implicitGemm = false;
};

/// NVIDIA GPU code generation: the same bufferization and memory plan as the
/// CPU's, the constants as one segment, one gpu.launch per loop nest in one
/// GPU module (`@kiln_kernels`) lowered to NVVM and to a gpu.binary of PTX
/// per architecture, and the host code, which calls one stub per launch, in
/// the LLVM dialect.
void buildGPUCodegenPipeline(mlir::OpPassManager &pm,
                             const GPUCodegenOptions &options);

/// The stages of the whole pipeline, in order.
enum class PipelineStage {
  Graph,  ///< graph optimisation (kiln-graph-optimize)
  Linalg, ///< the entry function and its batch, then the lowering to linalg
  LLVM    ///< the target's code generation, down to the LLVM dialect
};

/// Everything that decides the pass pipeline, validated and resolved for
/// one target. Built by resolvePipelineOptions only.
struct PipelineOptions {
  TargetInfo target;
  GraphOptimizationOptions graph;
  /// kiln-graph-split-batch's mode ("auto", "on" or "off") and cache size.
  std::string batchSplit = "auto";
  int64_t batchSplitCacheBytes = 16 << 20;
  /// Code generation for a CPU target (x86-64 and AArch64).
  CPUCodegenOptions cpu;
  /// Code generation for the nvptx target (its host code is x86-64).
  GPUCodegenOptions gpu;
  /// The tuning database of `cpu.tuningDB`, read once while resolving (the
  /// driver reports from it; the pass reads the file itself, so that the
  /// textual pipeline stands alone).
  std::shared_ptr<const codegen::TuningDatabase> tuningDatabase;
};

/// Checks every option of `options` and resolves its target: an unknown
/// target, CPU, feature, layout block, convolution algorithm or an
/// unreadable tuning database fails here, before any import, with the list
/// of valid values where there is one.
llvm::Expected<PipelineOptions>
resolvePipelineOptions(const CompileOptions &options);

/// Adds the passes of the stages `first` to `last` (both included) for
/// `options.target` to `pm`, a pass manager on a builtin.module.
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options,
                   PipelineStage first, PipelineStage last);

/// Registers the pipelines above with the global pipeline registry.
void registerPipelines();

} // namespace kiln

#endif // KILN_LIB_PIPELINE_PIPELINES_H
