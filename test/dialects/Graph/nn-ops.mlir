// Round trip of the NN ops: print, parse the printed form, print again.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x4x4xf32> {
  // CHECK: graph.conv %{{.+}}, %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  return %0 : tensor<1x6x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv_transpose
func.func @conv_transpose(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x10x10xf32> {
  // CHECK: graph.conv_transpose %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, group = 2 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x10x10xf32>
  %0 = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 2} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x6x10x10xf32>
  return %0 : tensor<1x6x10x10xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_gemm
func.func @matmul_gemm(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>, %m: tensor<4x3xf32>, %n: tensor<5x4xf32>, %c: tensor<5xf32>) -> (tensor<2x5x3x6xf32>, tensor<3x5xf32>) {
  // CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  %0 = graph.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  // CHECK: graph.gemm %{{.+}}, %{{.+}}, %{{.+}} {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true, trans_b = true}
  %1 = graph.gemm %m, %n, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0, %1 : tensor<2x5x3x6xf32>, tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func.func @pools
func.func @pools(%x: tensor<1x3x7x7xf16>, %i: tensor<1x3x7x7xui8>) -> (tensor<1x3x4x4xf16>, tensor<1x3x4x4xf16>, tensor<1x3x1x1xf16>, tensor<1x3x1x1xf16>, tensor<1x3x3x3xui8>) {
  // CHECK: graph.max_pool %{{.+}} {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf16>) -> tensor<1x3x4x4xf16>
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x7x7xf16>) -> tensor<1x3x4x4xf16>
  // CHECK: graph.average_pool %{{.+}} {ceil_mode = true, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7xf16>) -> tensor<1x3x4x4xf16>
  %1 = graph.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : (tensor<1x3x7x7xf16>) -> tensor<1x3x4x4xf16>
  // CHECK: graph.global_average_pool %{{.+}} : (tensor<1x3x7x7xf16>) -> tensor<1x3x1x1xf16>
  %2 = graph.global_average_pool %x : (tensor<1x3x7x7xf16>) -> tensor<1x3x1x1xf16>
  // CHECK: graph.global_max_pool %{{.+}} : (tensor<1x3x7x7xf16>) -> tensor<1x3x1x1xf16>
  %3 = graph.global_max_pool %x : (tensor<1x3x7x7xf16>) -> tensor<1x3x1x1xf16>
  // CHECK: graph.max_pool %{{.+}} {{.+}} : (tensor<1x3x7x7xui8>) -> tensor<1x3x3x3xui8>
  %4 = graph.max_pool %i {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x7x7xui8>) -> tensor<1x3x3x3xui8>
  return %0, %1, %2, %3, %4 : tensor<1x3x4x4xf16>, tensor<1x3x4x4xf16>, tensor<1x3x1x1xf16>, tensor<1x3x1x1xf16>, tensor<1x3x3x3xui8>
}

// -----

// A dynamic batch dimension is kept by inference.
// CHECK-LABEL: func.func @dynamic_batch
func.func @dynamic_batch(%x: tensor<?x3x8x8xf32>) -> tensor<?x3x4x4xf32> {
  // CHECK: graph.max_pool %{{.+}} {{.+}} : (tensor<?x3x8x8xf32>) -> tensor<?x3x4x4xf32>
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<?x3x8x8xf32>) -> tensor<?x3x4x4xf32>
  return %0 : tensor<?x3x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x3x4x5xf32>, %c: tensor<3xf32>, %l: tensor<4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  // CHECK: graph.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: graph.instance_norm %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  %1 = graph.instance_norm %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: graph.layer_norm %{{.+}}, %{{.+}}, %{{.+}} {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  %2 = graph.layer_norm %x, %l, %l {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: graph.layer_norm %{{.+}}, %{{.+}} {axis = 1 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  %3 = graph.layer_norm %x, %l {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: graph.lrn %{{.+}} {alpha = 9.99999974E-5 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32, size = 3 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %4 = graph.lrn %x {size = 3 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// CHECK-LABEL: func.func @fused_conv
func.func @fused_conv(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %r: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  // CHECK: graph.fused_conv %{{.+}}, %{{.+}}, %{{.+}} residual %{{.+}} activation relu {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %0 = graph.fused_conv %x, %w, %b residual %r activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: graph.fused_conv %{{.+}}, %{{.+}} activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>
  %1 = graph.fused_conv %x, %w activation clip {activation_params = array<f32: 0.0, 6.0>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @fused_matmul
func.func @fused_matmul(%a: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %r: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  // CHECK: graph.fused_matmul %{{.+}}, %{{.+}}, %{{.+}} residual %{{.+}} activation gelu : (tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %0 = graph.fused_matmul %a, %w, %b residual %r activation gelu : (tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %0 : tensor<2x8x32xf32>
}

// -----

// CHECK-LABEL: func.func @recurrence
func.func @recurrence(%p: tensor<5x2x32xf32>, %rt: tensor<8x32xf32>, %h: tensor<2x8xf32>, %c: tensor<2x8xf32>, %ph: tensor<24xf32>, %len: tensor<2xi64>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  // CHECK: %{{.+}}, %{{.+}}, %{{.+}} = graph.recurrence lstm %{{.+}}, %{{.+}}, %{{.+}} initial_c %{{.+}} peepholes %{{.+}} lengths %{{.+}} {activation_alpha = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00>, activation_beta = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00>, activations = ["sigmoid", "tanh", "tanh"], clip = 2.000000e+00 : f32, input_forget = false, linear_before_reset = false, reverse = true}
  %y, %lh, %lc = graph.recurrence lstm %p, %rt, %h initial_c %c peepholes %ph lengths %len {activations = ["sigmoid", "tanh", "tanh"], activation_alpha = array<f32: 0.0, 0.0, 0.0>, activation_beta = array<f32: 0.0, 0.0, 0.0>, clip = 2.0 : f32, reverse = true, linear_before_reset = false, input_forget = false} : (tensor<5x2x32xf32>, tensor<8x32xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<24xf32>, tensor<2xi64>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
  return %y, %lh, %lc : tensor<5x2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @einsum
func.func @einsum(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  // CHECK: graph.einsum %{{.+}}, %{{.+}} {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %0 = graph.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}
