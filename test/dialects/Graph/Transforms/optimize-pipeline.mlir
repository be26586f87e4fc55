// The whole kiln-graph-optimize pipeline: shape arithmetic folds to
// constants, dead ops and the weights that folding replaced disappear, the
// BatchNorm folds into the convolution, and the convolution, its residual
// Add and its Clip (Max/Min by constants that are themselves computed) become
// one fused op.
// RUN: kiln-opt %s -kiln-graph-optimize | FileCheck %s

// CHECK-LABEL: func.func @block
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x4xf32>, %[[R:.+]]: tensor<1x2x4x4xf32>)
// CHECK-DAG: %[[W:.+]] = graph.constant dense<{{.+}}> : tensor<2x2x1x1xf32>
// CHECK-DAG: %[[B:.+]] = graph.constant dense<{{.+}}> : tensor<2xf32>
// CHECK: %[[Y:.+]] = graph.fused_conv %[[X]], %[[W]], %[[B]] residual %[[R]] activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-NEXT: return %[[Y]]
func.func @block(%x: tensor<1x2x4x4xf32>, %r: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %p = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bounds = graph.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %i0 = graph.constant dense<0> : tensor<i64>
  %i1 = graph.constant dense<1> : tensor<i64>
  %two = graph.constant dense<2.0> : tensor<f32>
  %lo = graph.gather %bounds, %i0 {axis = 0 : i64} : (tensor<2xf32>, tensor<i64>) -> tensor<f32>
  %h = graph.gather %bounds, %i1 {axis = 0 : i64} : (tensor<2xf32>, tensor<i64>) -> tensor<f32>
  %hi = graph.mul %h, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %dead = graph.sigmoid %x : tensor<1x2x4x4xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.add %1, %r : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %3 = graph.max %2, %lo : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %4 = graph.min %3, %hi : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  return %4 : tensor<1x2x4x4xf32>
}
