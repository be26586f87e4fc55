// Round trip of every shape op: print, parse the printed form, print again.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  // CHECK: graph.reshape %{{.+}} {allow_zero = false, shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %0 = graph.reshape %x {shape = array<i64: 0, -1>, allow_zero = false} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<1x3x8x9xf32>) -> tensor<1x8x9x3xf32> {
  // CHECK: graph.transpose %{{.+}} {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x9xf32>) -> tensor<1x8x9x3xf32>
  %0 = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x8x9xf32>) -> tensor<1x8x9x3xf32>
  return %0 : tensor<1x8x9x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat_split
func.func @concat_split(%a: tensor<1x2xi64>, %b: tensor<1x3xi64>) -> (tensor<1x1xi64>, tensor<1x4xi64>) {
  // CHECK: %[[C:.+]] = graph.concat %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<1x2xi64>, tensor<1x3xi64>) -> tensor<1x5xi64>
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<1x2xi64>, tensor<1x3xi64>) -> tensor<1x5xi64>
  // CHECK: graph.split %[[C]] {axis = 1 : i64, sizes = array<i64: 1, 4>} : (tensor<1x5xi64>) -> (tensor<1x1xi64>, tensor<1x4xi64>)
  %1:2 = graph.split %0 {axis = 1 : i64, sizes = array<i64: 1, 4>} : (tensor<1x5xi64>) -> (tensor<1x1xi64>, tensor<1x4xi64>)
  return %1#0, %1#1 : tensor<1x1xi64>, tensor<1x4xi64>
}

// -----

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  // CHECK: graph.slice %{{.+}} {ends = array<i64: 4, -1>, starts = array<i64: 0, 7>, steps = array<i64: 2, -1>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  %0 = graph.slice %x {starts = array<i64: 0, 7>, ends = array<i64: 4, -1>, steps = array<i64: 2, -1>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// An empty axis stays empty at a negative step (its clamped start 0 and
// end -1 once gave a size of 1, and folding read past a constant: the
// ModelProto mutator's find, reversed-slice-of-an-empty-axis).
// CHECK-LABEL: func.func @slice_empty_axis
// FOLD-LABEL: func.func @slice_empty_axis
func.func @slice_empty_axis() -> tensor<0x1x5xf32> {
  %x = graph.constant dense<> : tensor<0x1x5xf32>
  // CHECK: graph.slice %{{.+}} {{.*}} : (tensor<0x1x5xf32>) -> tensor<0x1x5xf32>
  // FOLD: graph.constant dense<> : tensor<0x1x5xf32>
  %0 = graph.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: -1, 1, 5>, steps = array<i64: -3, 1, 1>} : (tensor<0x1x5xf32>) -> tensor<0x1x5xf32>
  return %0 : tensor<0x1x5xf32>
}

// -----

// CHECK-LABEL: func.func @gathers
func.func @gathers(%d: tensor<5x4xf32>, %i: tensor<2x3xi64>, %j: tensor<5x2xi32>, %k: tensor<3x2xi64>) -> (tensor<2x3x4xf32>, tensor<5x2xf32>, tensor<3xf32>) {
  // CHECK: graph.gather %{{.+}}, %{{.+}} {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %0 = graph.gather %d, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK: graph.gather_elements %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<5x4xf32>, tensor<5x2xi32>) -> tensor<5x2xf32>
  %1 = graph.gather_elements %d, %j {axis = 1 : i64} : (tensor<5x4xf32>, tensor<5x2xi32>) -> tensor<5x2xf32>
  // CHECK: graph.gather_nd %{{.+}}, %{{.+}} {batch_dims = 0 : i64} : (tensor<5x4xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  %2 = graph.gather_nd %d, %k {batch_dims = 0 : i64} : (tensor<5x4xf32>, tensor<3x2xi64>) -> tensor<3xf32>
  return %0, %1, %2 : tensor<2x3x4xf32>, tensor<5x2xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @scatters
func.func @scatters(%d: tensor<5x4xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>, %k: tensor<3x1xi64>, %v: tensor<3x4xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>) {
  // CHECK: graph.scatter_elements %{{.+}}, %{{.+}}, %{{.+}} reduction add {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  %0 = graph.scatter_elements %d, %i, %u reduction add {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  // CHECK: graph.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} reduction none : (tensor<5x4xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<5x4xf32>
  %1 = graph.scatter_nd %d, %k, %v reduction none : (tensor<5x4xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<5x4xf32>
  return %0, %1 : tensor<5x4xf32>, tensor<5x4xf32>
}

// -----

// CHECK-LABEL: func.func @expand_tile_pad
func.func @expand_tile_pad(%x: tensor<3x1xf32>) -> (tensor<2x3x6xf32>, tensor<6x2xf32>, tensor<3x4xf32>) {
  // CHECK: graph.expand %{{.+}} {shape = array<i64: 2, 1, 6>} : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  %0 = graph.expand %x {shape = array<i64: 2, 1, 6>} : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  // CHECK: graph.tile %{{.+}} {repeats = array<i64: 2, 2>} : (tensor<3x1xf32>) -> tensor<6x2xf32>
  %1 = graph.tile %x {repeats = array<i64: 2, 2>} : (tensor<3x1xf32>) -> tensor<6x2xf32>
  // CHECK: graph.pad %{{.+}} {mode = "constant", pads = array<i64: 0, 1, 0, 2>, value = 5.000000e-01 : f64} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  %2 = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "constant", value = 0.5 : f64} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  return %0, %1, %2 : tensor<2x3x6xf32>, tensor<6x2xf32>, tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @trilu_one_hot
func.func @trilu_one_hot(%x: tensor<2x4x5xf32>, %i: tensor<3xi64>, %v: tensor<2xf32>) -> (tensor<2x4x5xf32>, tensor<3x4xf32>) {
  // CHECK: graph.trilu %{{.+}} {k = 1 : i64, upper = true} : tensor<2x4x5xf32>
  %0 = graph.trilu %x {upper = true, k = 1 : i64} : tensor<2x4x5xf32>
  // CHECK: graph.one_hot %{{.+}}, %{{.+}} {axis = 1 : i64, depth = 4 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  %1 = graph.one_hot %i, %v {depth = 4 : i64, axis = 1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return %0, %1 : tensor<2x4x5xf32>, tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  // CHECK: graph.resize %{{.+}} {coordinate_transformation_mode = "asymmetric", mode = "nearest", nearest_mode = "floor", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00>, sizes = array<i64: 1, 1, 4, 4>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  %0 = graph.resize %x {sizes = array<i64: 1, 1, 4, 4>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Shape arithmetic folds to constants.
// FOLD-LABEL: func.func @fold_shape_chain
func.func @fold_shape_chain() -> (tensor<2xi64>, tensor<2xi64>, tensor<3x2xi64>, tensor<1xi64>, tensor<2x2xi64>) {
  %s = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  %i = graph.constant dense<0> : tensor<i64>
  %m = graph.constant dense<[-1]> : tensor<1xi64>
  // FOLD-DAG: graph.constant dense<[2, -1]> : tensor<2xi64>
  %n = graph.gather %s, %i {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %n1 = graph.reshape %n {shape = array<i64: 1>, allow_zero = false} : (tensor<i64>) -> tensor<1xi64>
  %c = graph.concat %n1, %m {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  // FOLD-DAG: graph.constant dense<[4, 3]> : tensor<2xi64>
  %r = graph.slice %s {starts = array<i64: 2>, ends = array<i64: 0>, steps = array<i64: -1>} : (tensor<3xi64>) -> tensor<2xi64>
  // FOLD-DAG: graph.constant dense<{{\[\[}}2, 2], [3, 3], [4, 4]]> : tensor<3x2xi64>
  %t0 = graph.concat %s, %s {axis = 0 : i64} : (tensor<3xi64>, tensor<3xi64>) -> tensor<6xi64>
  %t1 = graph.reshape %t0 {shape = array<i64: 2, 3>, allow_zero = false} : (tensor<6xi64>) -> tensor<2x3xi64>
  %t = graph.transpose %t1 {perm = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  // FOLD-DAG: graph.constant dense<-1> : tensor<2x2xi64>
  %e = graph.expand %m {shape = array<i64: 2, 2>} : (tensor<1xi64>) -> tensor<2x2xi64>
  // FOLD-NOT: graph.gather
  // FOLD-NOT: graph.concat
  // FOLD-NOT: graph.slice
  // FOLD-NOT: graph.transpose
  // FOLD-NOT: graph.expand
  return %c, %r, %t, %m, %e : tensor<2xi64>, tensor<2xi64>, tensor<3x2xi64>, tensor<1xi64>, tensor<2x2xi64>
}

// -----

// A constant splits into constants, along any axis (an expanded AffineGrid
// splits its size input into N, C, H and W).
// FOLD-LABEL: func.func @fold_split
func.func @fold_split() -> (tensor<1xi64>, tensor<3xi64>, tensor<2x1xi64>, tensor<2x2xi64>) {
  %s = graph.constant dense<[2, 3, 4, 5]> : tensor<4xi64>
  // FOLD-DAG: graph.constant dense<2> : tensor<1xi64>
  // FOLD-DAG: graph.constant dense<[3, 4, 5]> : tensor<3xi64>
  %a, %b = graph.split %s {axis = 0 : i64, sizes = array<i64: 1, 3>} : (tensor<4xi64>) -> (tensor<1xi64>, tensor<3xi64>)
  %m = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  // FOLD-DAG: graph.constant dense<{{\[\[}}1], [4]]> : tensor<2x1xi64>
  // FOLD-DAG: graph.constant dense<{{\[\[}}2, 3], [5, 6]]> : tensor<2x2xi64>
  %c, %d = graph.split %m {axis = 1 : i64, sizes = array<i64: 1, 2>} : (tensor<2x3xi64>) -> (tensor<2x1xi64>, tensor<2x2xi64>)
  // FOLD-NOT: graph.split
  return %a, %b, %c, %d : tensor<1xi64>, tensor<3xi64>, tensor<2x1xi64>, tensor<2x2xi64>
}

// -----

// Ops that change nothing fold to their input.
// FOLD-LABEL: func.func @fold_identity
// FOLD-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @fold_identity(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>) {
  %0 = graph.reshape %x {shape = array<i64: 2, 3>, allow_zero = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.transpose %0 {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = graph.slice %1 {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // A pad of zeros (torch puts one before an AveragePool) folds; one that
  // adds entries stays.
  %3 = graph.pad %2 {pads = array<i64: 0, 0, 0, 0>, mode = "constant", value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // FOLD: %[[P:.+]] = graph.pad %[[X]] {mode = "edge", pads = array<i64: 0, 1, 0, 1>
  %4 = graph.pad %3 {pads = array<i64: 0, 1, 0, 1>, mode = "edge", value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  // FOLD: return %[[X]], %[[X]], %[[X]], %[[X]], %[[P]]
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>
}

// -----

// The sizes of a tensor with `?` ones; a prefix as long as another axis; a
// reshape whose `-1` sits beside a copied `?` size is static there.
// CHECK-LABEL: func.func @symbolic_sizes
// FOLD-LABEL: func.func @symbolic_sizes
func.func @symbolic_sizes(%x: tensor<1x?x12xf32>, %table: tensor<1x64xi64>, %s: tensor<2x3xf32>) -> (tensor<3xi64>, tensor<1x?xi64>, tensor<1x?x4x3xf32>, tensor<2xi64>, tensor<1x64xi64>) {
  // CHECK: graph.shape %{{.+}} : (tensor<1x?x12xf32>) -> tensor<3xi64>
  %0 = graph.shape %x : (tensor<1x?x12xf32>) -> tensor<3xi64>
  // CHECK: graph.prefix %{{.+}}, %{{.+}} {axis = 1 : i64, like_axis = 1 : i64} : (tensor<1x64xi64>, tensor<1x?x12xf32>) -> tensor<1x?xi64>
  %1 = graph.prefix %table, %x {axis = 1 : i64, like_axis = 1 : i64} : (tensor<1x64xi64>, tensor<1x?x12xf32>) -> tensor<1x?xi64>
  // CHECK: graph.reshape %{{.+}} {allow_zero = false, shape = array<i64: 0, 0, 4, -1>} : (tensor<1x?x12xf32>) -> tensor<1x?x4x3xf32>
  %2 = graph.reshape %x {shape = array<i64: 0, 0, 4, -1>, allow_zero = false} : (tensor<1x?x12xf32>) -> tensor<1x?x4x3xf32>
  // A shape of static sizes folds; so does a prefix as long as its input.
  // FOLD: %[[S:.+]] = graph.constant dense<[2, 3]> : tensor<2xi64>
  %3 = graph.shape %s : (tensor<2x3xf32>) -> tensor<2xi64>
  // FOLD: return %{{.+}}, %{{.+}}, %{{.+}}, %[[S]], %arg1
  %4 = graph.prefix %table, %table {axis = 1 : i64, like_axis = 1 : i64} : (tensor<1x64xi64>, tensor<1x64xi64>) -> tensor<1x64xi64>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<1x?xi64>, tensor<1x?x4x3xf32>, tensor<2xi64>, tensor<1x64xi64>
}

// -----

// A size read at run time, checked against its range; a constant within it
// folds away, one outside it stays (and fails the run).
// CHECK-LABEL: func.func @check_size
// FOLD-LABEL: func.func @check_size
func.func @check_size(%n: tensor<i64>) -> (tensor<i64>, tensor<i64>, tensor<i64>) {
  // CHECK: graph.check_size %{{.+}} in [-3, 16] {what = "dimension 1's size"} : tensor<i64>
  %0 = graph.check_size %n in [-3, 16] {what = "dimension 1's size"} : tensor<i64>
  %c5 = graph.constant dense<5> : tensor<i64>
  %c17 = graph.constant dense<17> : tensor<i64>
  // FOLD-DAG: %[[FIVE:.+]] = graph.constant dense<5> : tensor<i64>
  // FOLD-DAG: %[[OUT:.+]] = graph.check_size %{{.+}} in [0, 16]
  %1 = graph.check_size %c5 in [0, 16] {what = "size"} : tensor<i64>
  %2 = graph.check_size %c17 in [0, 16] {what = "size"} : tensor<i64>
  // FOLD: return %{{.+}}, %[[FIVE]], %[[OUT]]
  return %0, %1, %2 : tensor<i64>, tensor<i64>, tensor<i64>
}
