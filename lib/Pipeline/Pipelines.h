//===- Pipelines.h - Kiln's pass pipelines ----------------------*- C++ -*-===//
//
// The stages of compilation as pass pipelines. Each is a function of an
// options struct, and each is registered with kiln-opt under its flag so that
// a stage can be run alone on textual IR:
//
//   kiln-graph-optimize    graph dialect -> optimised graph dialect
//   kiln-lower-to-linalg   graph dialect -> linalg/tensor/arith/math
//   kiln-cpu-codegen       linalg on tensors -> LLVM dialect for a CPU
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_PIPELINE_PIPELINES_H
#define KILN_LIB_PIPELINE_PIPELINES_H

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace kiln {

struct GraphOptimizationOptions {
  /// Refine shapes, canonicalize, fold constants and remove dead values.
  bool enable = true;
  /// Fold BatchNormalization and per-channel Mul/Add into Conv and Gemm
  /// weights (kiln-graph-fold-batch-norm).
  bool foldBatchNorm = true;
  /// Fuse bias, residual and activation into graph.fused_conv and
  /// graph.fused_matmul (kiln-graph-fuse-epilogues).
  bool fuseEpilogues = true;
  /// Channels per block of the blocked layout NCHWc that convolutions and
  /// max pools take (kiln-graph-blocked-layout); 0 keeps NCHW.
  int64_t layoutBlock = 0;
};

/// Graph-level optimisation on the graph dialect.
void buildGraphOptimizationPipeline(mlir::OpPassManager &pm,
                                    const GraphOptimizationOptions &options);

/// Lowering of the graph dialect to linalg and friends on tensors.
void buildLowerToLinalgPipeline(mlir::OpPassManager &pm);

struct CPUCodegenOptions {
  /// Fuse elementwise linalg ops into their producers before bufferization.
  bool fuseElementwise = true;
  /// Rewrite 2-D convolutions as im2col plus a contraction.
  bool convToIm2Col = true;
  /// The convolution algorithm of every layer not in convAlgorithmOverrides:
  /// "auto" (the cost model), "im2col", "direct" or "winograd-Mx3".
  std::string convAlgorithm = "auto";
  /// LAYER=ALGORITHM entries for single layers (ONNX node names).
  std::vector<std::string> convAlgorithmOverrides;
  /// Register-block and vectorize contractions.
  bool vectorizeContractions = true;
  /// fp32 elements per vector register of the target (TargetInfo).
  int64_t vectorWidth = 16;
  /// Output rows per register block.
  int64_t rows = 8;
  /// Place intermediate buffers in one workspace reused by liveness.
  bool planMemory = true;
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

/// Registers the pipelines above with the global pipeline registry.
void registerPipelines();

} // namespace kiln

#endif // KILN_LIB_PIPELINE_PIPELINES_H
