// RUN: kiln-opt %s -split-input-file -kiln-graph-infer-shapes | FileCheck %s

// Static shapes flow from the arguments through every op to the signature.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> tensor<1x4x8x8xf32>
func.func @chain(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<4x1x1xf32>) -> tensor<?x?x?x?xf32> {
  // CHECK: graph.conv {{.*}} -> tensor<1x4x8x8xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<?x4x?x?xf32>
  // CHECK: graph.add {{.*}} -> tensor<1x4x8x8xf32>
  %1 = graph.add %0, %c : (tensor<?x4x?x?xf32>, tensor<4x1x1xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: graph.relu %{{.+}} : tensor<1x4x8x8xf32>
  %2 = graph.relu %1 : tensor<?x?x?x?xf32>
  // CHECK: return %{{.+}} : tensor<1x4x8x8xf32>
  return %2 : tensor<?x?x?x?xf32>
}

// -----

// A truly dynamic dimension stays dynamic; nothing else changes.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK-SAME: -> tensor<?x3xf32>
func.func @dynamic_batch(%a: tensor<?x3xf32>, %b: tensor<3xf32>) -> tensor<?x3xf32> {
  // CHECK: graph.add {{.*}} -> tensor<?x3xf32>
  %0 = graph.add %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}
