//===- Pipeline.h - The graph-level optimisation pipeline -------*- C++ -*-===//
//
// The graph passes in the order kiln-compile runs them (the
// kiln-graph-optimize stage of lib/Pipeline/Pipelines.h), kept with the
// passes so that a tool that links only the graph dialect (the importer's
// fuzzing harness, test/fuzz) runs the same pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_GRAPH_TRANSFORMS_PIPELINE_H
#define KILN_DIALECTS_GRAPH_TRANSFORMS_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>

namespace kiln {

struct GraphOptimizationOptions {
  /// Refine shapes, canonicalize, fold constants and remove dead values.
  bool enable = true;
  /// Channels per block of the blocked layout NCHWc that convolutions and
  /// max pools take (kiln-graph-blocked-layout); 0 keeps NCHW.
  int64_t layoutBlock = 0;
  /// Mark the blocked convolutions of 8-bit integer operands for integer
  /// arithmetic (kiln-graph-mark-integer-contractions): for targets whose 8-bit
  /// dot-product instructions code generation uses (TargetInfo::int8DotLanes).
  bool integerContractions = false;
  /// Mark the other float convolutions and matrix products with constant
  /// weights for bf16 operands (--precision=bf16).
  bool bf16Contractions = false;
  /// Split large reductions with few results into parts that threads share
  /// (kiln-graph-split-reductions): for the CPU, whose code runs a
  /// reduction's results on threads.
  bool splitReductions = false;
  /// Compute f16 tensors in f32, keeping the model's signature
  /// (kiln-graph-widen-half): for CPUs, whose code generation has no
  /// half-precision arithmetic.
  bool widenHalf = false;
};

/// Graph-level optimisation on the graph dialect.
void buildGraphOptimizationPipeline(mlir::OpPassManager &pm,
                                    const GraphOptimizationOptions &options);

} // namespace kiln

#endif // KILN_DIALECTS_GRAPH_TRANSFORMS_PIPELINE_H
