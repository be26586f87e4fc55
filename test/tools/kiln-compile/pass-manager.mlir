// kiln-compile takes MLIR's pass-manager options, and prints its pipeline.
// RUN: kiln-compile %s --emit=graph --mlir-print-ir-after-all -o %t.mlir 2>&1 | FileCheck %s --check-prefix=IR
// RUN: kiln-compile %s --mlir-timing -o %t.so 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: kiln-compile %s --print-pipeline --emit=linalg | FileCheck %s --check-prefix=PIPELINE

func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}) -> (tensor<2x3xf32> {kiln.name = "y"}) {
  %0 = graph.relu %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// IR: IR Dump After GraphWidenHalf (kiln-graph-widen-half)
// IR: IR Dump After GraphInferShapes (kiln-graph-infer-shapes)
// IR: IR Dump After GraphFuseEpilogues (kiln-graph-fuse-epilogues)

// One report per stage.
// TIMING: Execution time report
// TIMING: GraphWidenHalf
// TIMING: GraphInferShapes
// TIMING: Execution time report
// TIMING: GraphMakeEntry
// TIMING: Execution time report
// TIMING: CodegenOutlineKernels

// PIPELINE: builtin.module(func.func(kiln-graph-widen-half),func.func(kiln-graph-infer-shapes)
// PIPELINE-SAME: kiln-graph-make-entry{name=kiln_model_main}
// PIPELINE-SAME: kiln-convert-graph-to-linalg
// PIPELINE-NOT: kiln-cpu-
