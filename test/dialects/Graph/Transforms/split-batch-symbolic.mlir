// A symbolic batch (the importer's kiln.symbols, the batch typed as its probe
// size 97) is split whatever the mode says: the model ABI repeats the entry
// once per sample of the run's batch.
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch{mode=off}))' -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: (%{{.*}}: tensor<1x16xf32>{{.*}}) -> tensor<1x16xf32>
// CHECK-SAME: kiln.batch_repeat = 97
// CHECK-SAME: kiln.batch_split = "symbolic 'batch', run once per sample (largest activation
// CHECK: graph.relu %{{.*}} : tensor<1x16xf32>
func.func @symbolic(%x: tensor<97x16xf32>) -> tensor<97x16xf32> attributes {kiln.symbols = [{name = "batch", min = 1 : i64, max = 64 : i64}]} {
  %0 = graph.relu %x : tensor<97x16xf32>
  return %0 : tensor<97x16xf32>
}

// -----

// Where the ops mix the samples, the batch cannot stay symbolic.
// expected-error @+1 {{the batch 'N' cannot stay symbolic: the model is kept whole (no batch above 1 leads every input and output); give it a size with --dynamic-dims N=SIZE (or --input-shape)}}
func.func @mixes(%x: tensor<97x16xf32>) -> tensor<16xf32> attributes {kiln.symbols = [{name = "N", min = 1 : i64, max = 1024 : i64}]} {
  %0 = graph.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<97x16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
