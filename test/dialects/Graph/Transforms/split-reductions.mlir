// RUN: kiln-opt %s -split-input-file --kiln-graph-split-reductions | FileCheck %s

// A whole-tensor maximum (DynamicQuantizeLinear's): 16 parts of 6144, then
// the parts.
// CHECK-LABEL: func.func @whole_max
// CHECK: %[[P:.+]] = graph.reshape %{{.+}} {allow_zero = false, shape = array<i64: 1, 16, 6144>} : (tensor<128x768xf32>) -> tensor<1x16x6144xf32>
// CHECK: %[[R:.+]] = graph.reduce_max %[[P]] {axes = array<i64: 2>, keepdims = false} : (tensor<1x16x6144xf32>) -> tensor<1x16xf32>
// CHECK: %[[W:.+]] = graph.reduce_max %[[R]] {axes = array<i64: 1>, keepdims = false} : (tensor<1x16xf32>) -> tensor<1xf32>
// CHECK: graph.reshape %[[W]] {allow_zero = false, shape = array<i64>} : (tensor<1xf32>) -> tensor<f32>
func.func @whole_max(%x: tensor<128x768xf32>) -> tensor<f32> {
  %0 = graph.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<128x768xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Per sample of a batch of 2, kept dimensions: the leading axis stays.
// CHECK-LABEL: func.func @mean_per_sample
// CHECK: graph.reshape %{{.+}} : (tensor<2x64x32x32xf32>) -> tensor<2x16x4096xf32>
// CHECK: graph.reduce_mean %{{.+}} {axes = array<i64: 2>, keepdims = false} : (tensor<2x16x4096xf32>) -> tensor<2x16xf32>
// CHECK: graph.reduce_mean %{{.+}} {axes = array<i64: 1>, keepdims = false} : (tensor<2x16xf32>) -> tensor<2xf32>
// CHECK: graph.reshape %{{.+}} : (tensor<2xf32>) -> tensor<2x1x1x1xf32>
func.func @mean_per_sample(%x: tensor<2x64x32x32xf32>) -> tensor<2x1x1x1xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1, 2, 3>, keepdims = true} : (tensor<2x64x32x32xf32>) -> tensor<2x1x1x1xf32>
  return %0 : tensor<2x1x1x1xf32>
}

// -----

// Left alone: results enough for the threads (a softmax's row sums), too
// few elements, axes that are not trailing, integers.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: graph.reshape
// CHECK: graph.reduce_sum %{{.+}} {axes = array<i64: 1>
// CHECK: graph.reduce_min %{{.+}} {axes = array<i64: 0>
// CHECK: graph.reduce_max %{{.+}} {axes = array<i64: 0, 1>
// CHECK: graph.reduce_sum %{{.+}} {axes = array<i64: 0, 1>
func.func @left_alone(%x: tensor<128x768xf32>, %s: tensor<64x64xf32>, %i: tensor<256x512xi32>) -> (tensor<128xf32>, tensor<768xf32>, tensor<f32>, tensor<i32>) {
  %0 = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<128x768xf32>) -> tensor<128xf32>
  %1 = graph.reduce_min %x {axes = array<i64: 0>, keepdims = false} : (tensor<128x768xf32>) -> tensor<768xf32>
  %2 = graph.reduce_max %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<64x64xf32>) -> tensor<f32>
  %3 = graph.reduce_sum %i {axes = array<i64: 0, 1>, keepdims = false} : (tensor<256x512xi32>) -> tensor<i32>
  return %0, %1, %2, %3 : tensor<128xf32>, tensor<768xf32>, tensor<f32>, tensor<i32>
}
