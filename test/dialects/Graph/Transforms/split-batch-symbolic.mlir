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

// -----

// Beside a sequence that the code reads, the batch merged with it into the
// rows of a product ([seq * batch, e], a `?` that is 97 x 'seq' here) is
// followed by the symbols' factors: one sample's rows are 'seq'.
// CHECK-LABEL: func.func @merged_rows
// CHECK-SAME: (%{{.*}}: tensor<1x?x8xf32>{{.*}}) -> tensor<1x?x8xf32>
// CHECK-SAME: kiln.batch_repeat = 97
// CHECK: graph.transpose {{.*}} -> tensor<?x1x8xf32>
// CHECK: graph.reshape {{.*}}shape = array<i64: -1, 8>{{.*}} -> tensor<?x8xf32>
// CHECK: graph.gemm {{.*}} -> tensor<?x8xf32>
// CHECK: graph.reshape {{.*}}shape = array<i64: -1, 1, 8>{{.*}} -> tensor<?x1x8xf32>
// CHECK: graph.transpose {{.*}} -> tensor<1x?x8xf32>
func.func @merged_rows(%x: tensor<97x?x8xf32> {kiln.dims = ["", "seq", ""]}) -> tensor<97x?x8xf32> attributes {kiln.symbols = [{name = "batch", min = 1 : i64, max = 8 : i64}], kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<97x?x8xf32>) -> tensor<?x97x8xf32>
  %r = graph.reshape %t {shape = array<i64: -1, 8>, allow_zero = false} : (tensor<?x97x8xf32>) -> tensor<?x8xf32>
  %o = graph.gemm %r, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %b = graph.reshape %o {shape = array<i64: -1, 97, 8>, allow_zero = false} : (tensor<?x8xf32>) -> tensor<?x97x8xf32>
  %y = graph.transpose %b {perm = array<i64: 1, 0, 2>} : (tensor<?x97x8xf32>) -> tensor<97x?x8xf32>
  return %y : tensor<97x?x8xf32>
}
