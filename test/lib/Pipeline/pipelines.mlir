// Each registered pipeline runs alone in kiln-opt, with its options.
// RUN: kiln-opt %s --kiln-graph-optimize | FileCheck %s --check-prefix=GRAPH
// RUN: kiln-opt %s --kiln-graph-optimize=layout-block=8 | FileCheck %s --check-prefix=BLOCKED
// RUN: kiln-opt %s --kiln-graph-optimize --kiln-lower-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: kiln-opt %s --kiln-graph-optimize --kiln-lower-to-linalg --kiln-cpu-codegen | FileCheck %s --check-prefix=LLVM
// RUN: kiln-opt %s --kiln-graph-optimize --kiln-lower-to-linalg '--kiln-cpu-codegen=parallel=true rows=6 vector-width=8' | FileCheck %s --check-prefix=PARALLEL

func.func @main(%x: tensor<1x8x6x6xf32> {kiln.name = "x"}) -> (tensor<1x8x6x6xf32> {kiln.name = "y"}) {
  %w = graph.constant dense<0.25> : tensor<8x8x3x3xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  %1 = graph.relu %0 : tensor<1x8x6x6xf32>
  return %1 : tensor<1x8x6x6xf32>
}

// GRAPH-LABEL: func.func @main
// GRAPH: graph.fused_conv
// GRAPH-NOT: graph.relu
// BLOCKED: graph.blocked_conv
// BLOCKED-SAME: #graph.blocked<c = 8>
// LINALG-LABEL: func.func @main
// LINALG: linalg.
// LINALG-NOT: graph.fused_conv
// LLVM: llvm.func @main(%{{.*}}: !llvm.ptr
// LLVM-NOT: func.func
// LLVM-NOT: omp.parallel
// PARALLEL: omp.parallel
