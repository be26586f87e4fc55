// RUN: kiln-opt %s -split-input-file -kiln-graph-fuse-epilogues | FileCheck %s

// ResNet's block end: conv, residual Add, Relu become one op.
// CHECK-LABEL: func.func @conv_residual_relu
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x8x8xf32>, %[[W:.+]]: tensor<4x4x3x3xf32>, %[[B:.+]]: tensor<4xf32>, %[[R:.+]]: tensor<1x4x8x8xf32>)
// CHECK: %[[Y:.+]] = graph.fused_conv %[[X]], %[[W]], %[[B]] residual %[[R]] activation relu {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-NOT: graph.add
// CHECK-NOT: graph.relu
// CHECK: return %[[Y]]
func.func @conv_residual_relu(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.add %r, %0 : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %2 = graph.relu %1 : tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// Clip(0, 6) (Relu6), which the importer makes a Max and a Min.
// CHECK-LABEL: func.func @conv_clip
// CHECK: %[[Y:.+]] = graph.fused_conv %{{.+}}, %{{.+}} activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-NOT: graph.max
// CHECK-NOT: graph.min
// CHECK: return %[[Y]]
func.func @conv_clip(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %lo = graph.constant dense<0.0> : tensor<f32>
  %hi = graph.constant dense<6.0> : tensor<f32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.max %0, %lo : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %2 = graph.min %1, %hi : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  return %2 : tensor<1x4x8x8xf32>
}

// -----

// A per-channel constant added to a convolution goes into its bias.
// CHECK-LABEL: func.func @conv_bias_add_leaky
// CHECK: %[[B:.+]] = graph.constant dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK: graph.fused_conv %{{.+}}, %{{.+}}, %[[B]] activation leaky_relu {activation_params = array<f32: 2.000000e-01>
func.func @conv_bias_add_leaky(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %b = graph.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = graph.constant dense<0.5> : tensor<1x2x1x1xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.add %0, %c : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.leaky_relu %1 {alpha = 0.2 : f32} : tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// A transformer's feed-forward: MatMul, bias Add, Gelu; then the residual
// Add stays, since the epilogue adds before its activation.
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK-SAME: (%[[A:.+]]: tensor<2x8x16xf32>, %[[W:.+]]: tensor<16x32xf32>, %[[B:.+]]: tensor<32xf32>, %[[R:.+]]: tensor<2x8x32xf32>)
// CHECK: %[[Y:.+]] = graph.fused_matmul %[[A]], %[[W]], %[[B]] activation gelu_tanh
// CHECK: %[[Z:.+]] = graph.add %[[Y]], %[[R]]
// CHECK: return %[[Z]]
func.func @matmul_bias_gelu(%a: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %r: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %0 = graph.matmul %a, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = graph.add %0, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %2 = graph.gelu %1 {tanh_approximation = true} : tensor<2x8x32xf32>
  %3 = graph.add %2, %r : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %3 : tensor<2x8x32xf32>
}

// -----

// MatMul, bias and residual (an attention output projection).
// CHECK-LABEL: func.func @matmul_bias_residual
// CHECK: graph.fused_matmul %{{.+}}, %{{.+}}, %{{.+}} residual %{{.+}} activation none
// CHECK-NOT: graph.add
func.func @matmul_bias_residual(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %r: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %0 = graph.matmul %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = graph.add %1, %r : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// -----

// Not fused: the convolution has a second use; an Add that broadcasts the
// convolution; an integer matmul; an activation after another one.
// CHECK-LABEL: func.func @not_fused
// CHECK: graph.conv
// CHECK: graph.relu
// CHECK: graph.fused_conv %{{.+}}, %{{.+}} activation sigmoid
// CHECK: graph.tanh
// CHECK: graph.add
// CHECK: graph.matmul
// CHECK: graph.relu
// CHECK-NOT: graph.fused
func.func @not_fused(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %v: tensor<1x1x4x4xf32>, %p: tensor<2x1x1x1xf32>, %i: tensor<4x4xi32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<4x4xi32>) {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.relu %0 : tensor<1x2x4x4xf32>
  %2 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %3 = graph.sigmoid %2 : tensor<1x2x4x4xf32>
  %4 = graph.tanh %3 : tensor<1x2x4x4xf32>
  %5 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %6 = graph.add %5, %p : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<2x2x4x4xf32>
  %7 = graph.matmul %i, %i : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  %8 = graph.relu %7 : tensor<4x4xi32>
  return %0, %1, %4, %6, %8 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<4x4xi32>
}

// -----

// A Gemm with a constant B: B transposed and scaled by alpha at compile time,
// beta * C the bias. A Gemm with nothing to fuse stays.
// CHECK-LABEL: func.func @gemm_relu
// CHECK-SAME: (%[[A:.+]]: tensor<1x2xf32>
// CHECK-DAG: %[[B:.+]] = graph.constant dense<{{\[\[}}2.000000e+00, 6.000000e+00, 1.000000e+01], [4.000000e+00, 8.000000e+00, 1.200000e+01]]> : tensor<2x3xf32>
// CHECK-DAG: %[[C:.+]] = graph.constant dense<[5.000000e-01, 1.000000e+00, 1.500000e+00]> : tensor<3xf32>
// CHECK: graph.fused_matmul %[[A]], %[[B]], %[[C]] activation relu
// CHECK: graph.gemm
func.func @gemm_relu(%a: tensor<1x2xf32>, %w: tensor<3x2xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>) {
  %b = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %c = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = graph.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_a = false, trans_b = true} : (tensor<1x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %1 = graph.relu %0 : tensor<1x3xf32>
  %2 = graph.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<1x2xf32>, tensor<3x2xf32>) -> tensor<1x3xf32>
  %3 = graph.relu %2 : tensor<1x3xf32>
  return %1, %3 : tensor<1x3xf32>, tensor<1x3xf32>
}
