// Round trip of the reduction family: reductions, softmax and its kin,
// ArgMax/ArgMin and CumSum.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func @reduce_sum
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_sum(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_mean
// CHECK: graph.reduce_mean %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_mean(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_max
// CHECK: graph.reduce_max %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_max(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_max %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_min
// CHECK: graph.reduce_min %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_min(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_min %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_prod
// CHECK: graph.reduce_prod %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_prod(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_prod %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_l1
// CHECK: graph.reduce_l1 %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_l1(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_l1 %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_l2
// CHECK: graph.reduce_l2 %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_l2(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_l2 %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_log_sum
// CHECK: graph.reduce_log_sum %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_log_sum(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_log_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_log_sum_exp
// CHECK: graph.reduce_log_sum_exp %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_log_sum_exp(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_log_sum_exp %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_sum_square
// CHECK: graph.reduce_sum_square %{{.*}} {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
func.func @reduce_sum_square(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_sum_square %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func @reduce_sum_int_all
// CHECK: graph.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xui8>) -> tensor<ui8>
func.func @reduce_sum_int_all(%x: tensor<2x3xui8>) -> tensor<ui8> {
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xui8>) -> tensor<ui8>
  return %0 : tensor<ui8>
}

// -----

// CHECK-LABEL: func @reduce_max_noop
// CHECK: graph.reduce_max %{{.*}} {axes = array<i64>, keepdims = true} : (tensor<2x?xi32>) -> tensor<2x?xi32>
func.func @reduce_max_noop(%x: tensor<2x?xi32>) -> tensor<2x?xi32> {
  %0 = graph.reduce_max %x {axes = array<i64>, keepdims = true} : (tensor<2x?xi32>) -> tensor<2x?xi32>
  return %0 : tensor<2x?xi32>
}

// -----

// CHECK-LABEL: func @softmax
// CHECK: graph.softmax %{{.*}} {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
func.func @softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.softmax %x {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @log_softmax
// CHECK: graph.log_softmax %{{.*}} {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
func.func @log_softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.log_softmax %x {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @hardmax
// CHECK: graph.hardmax %{{.*}} {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
func.func @hardmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.hardmax %x {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @argmax
// CHECK: graph.argmax %{{.*}} {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xi32>) -> tensor<2x4xi64>
func.func @argmax(%x: tensor<2x3x4xi32>) -> tensor<2x4xi64> {
  %0 = graph.argmax %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xi32>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// CHECK-LABEL: func @argmin
// CHECK: graph.argmin %{{.*}} {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xi32>) -> tensor<2x4xi64>
func.func @argmin(%x: tensor<2x3x4xi32>) -> tensor<2x4xi64> {
  %0 = graph.argmin %x {axis = 1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xi32>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// CHECK-LABEL: func @cumsum
// CHECK: graph.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = false} : tensor<2x5xf64>
func.func @cumsum(%x: tensor<2x5xf64>) -> tensor<2x5xf64> {
  %0 = graph.cumsum %x {axis = 1 : i64, exclusive = true, reverse = false} : tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// -----

// CHECK-LABEL: func @topk
// CHECK: %{{.*}}, %{{.*}} = graph.topk %{{.*}} {axis = 1 : i64, k = 3 : i64, largest = false, sorted = true} : (tensor<2x10xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
func.func @topk(%x: tensor<2x10xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %v, %i = graph.topk %x {axis = 1 : i64, k = 3 : i64, largest = false, sorted = true} : (tensor<2x10xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  return %v, %i : tensor<2x3xf32>, tensor<2x3xi64>
}

// -----

// The selections whose sizes the data decides: results of the largest size
// and a count.
// CHECK-LABEL: func @selections
// CHECK: graph.nonzero %{{.*}} : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
// CHECK: graph.unique %{{.*}} {axis = 1 : i64, sorted = false} : (tensor<2x5xi64>) -> (tensor<2x5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
// CHECK: graph.non_max_suppression %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bound = 2 : i64, center_point_box = true} : (tensor<1x4x4xf32>, tensor<1x3x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<6x3xi64>, tensor<i64>)
func.func @selections(%x: tensor<2x3xf32>, %u: tensor<2x5xi64>, %b: tensor<1x4x4xf32>, %s: tensor<1x3x4xf32>, %m: tensor<i64>, %t: tensor<f32>) -> (tensor<2x6xi64>, tensor<2x5xi64>, tensor<6x3xi64>) {
  %i, %n = graph.nonzero %x : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
  %y, %first, %inverse, %counts, %k = graph.unique %u {axis = 1 : i64, sorted = false} : (tensor<2x5xi64>) -> (tensor<2x5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
  %sel, %c = graph.non_max_suppression %b, %s, %m, %t {bound = 2 : i64, center_point_box = true} : (tensor<1x4x4xf32>, tensor<1x3x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<6x3xi64>, tensor<i64>)
  return %i, %y, %sel : tensor<2x6xi64>, tensor<2x5xi64>, tensor<6x3xi64>
}
