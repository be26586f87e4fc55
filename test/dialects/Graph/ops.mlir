// Round trip of every graph op: print, parse the printed form, print again.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> tensor<2x2xf32> {
  // CHECK: %[[C:.+]] = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: return %[[C]]
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[ADD:.+]] = graph.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[SUB:.+]] = graph.sub %[[ADD]], %[[B]]
  %1 = graph.sub %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[MUL:.+]] = graph.mul %[[SUB]], %[[A]]
  %2 = graph.mul %1, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: graph.div %[[MUL]], %[[B]]
  %3 = graph.div %2, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// A dynamic dimension broadcasts against a static one.
// CHECK-LABEL: func.func @dynamic_broadcast
func.func @dynamic_broadcast(%a: tensor<?x3xf32>, %b: tensor<1x3xf32>) -> tensor<?x3xf32> {
  // CHECK: graph.add %{{.+}}, %{{.+}} : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<?x3xf32>
  %0 = graph.add %a, %b : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func.func @relu
func.func @relu(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  // CHECK: graph.relu %{{.+}} : tensor<1x8x4x4xf32>
  %0 = graph.relu %x : tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>) -> tensor<1x64x112x112xf32> {
  // CHECK: graph.conv %{{.+}}, %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, group = 1}
      : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<1x64x112x112xf32>
  return %0 : tensor<1x64x112x112xf32>
}

// -----

// Depthwise: one group per channel, no bias.
// CHECK-LABEL: func.func @conv_depthwise
func.func @conv_depthwise(%x: tensor<1x32x56x56xf32>, %w: tensor<32x1x3x3xf32>) -> tensor<1x32x56x56xf32> {
  // CHECK: graph.conv %{{[^,]+}}, %{{[^ ]+}} {{{.*}}group = 32 : i64{{.*}}} : (tensor<1x32x56x56xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x56x56xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32}
      : (tensor<1x32x56x56xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x56x56xf32>
  return %0 : tensor<1x32x56x56xf32>
}

// -----

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<8x128x768xf32>, %b: tensor<768x64xf32>, %v: tensor<64xf32>) -> tensor<8x128xf32> {
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<8x128x768xf32>, tensor<768x64xf32>) -> tensor<8x128x64xf32>
  %0 = graph.matmul %a, %b : (tensor<8x128x768xf32>, tensor<768x64xf32>) -> tensor<8x128x64xf32>
  // A 1-D right operand drops the last dimension.
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<8x128x64xf32>, tensor<64xf32>) -> tensor<8x128xf32>
  %1 = graph.matmul %0, %v : (tensor<8x128x64xf32>, tensor<64xf32>) -> tensor<8x128xf32>
  return %1 : tensor<8x128xf32>
}

// -----

// CHECK-LABEL: func.func @gemm
func.func @gemm(%a: tensor<1x2048xf32>, %b: tensor<1000x2048xf32>, %c: tensor<1000xf32>) -> tensor<1x1000xf32> {
  // CHECK: graph.gemm %{{.+}}, %{{.+}}, %{{.+}} {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
  %0 = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
      : (tensor<1x2048xf32>, tensor<1000x2048xf32>, tensor<1000xf32>) -> tensor<1x1000xf32>
  return %0 : tensor<1x1000xf32>
}
