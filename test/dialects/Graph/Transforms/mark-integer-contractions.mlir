// RUN: kiln-opt %s -split-input-file -kiln-graph-mark-integer-contractions | FileCheck %s

// A quantised activation (rounded, clamped to [-3, 252]: uint8 less a zero
// point of 3) into a convolution of int8 weights and an integer bias: the
// input's range is recorded.
// CHECK-LABEL: func.func @quantised
// CHECK: graph.blocked_conv {{.*}}kiln.integer_input = array<i64: -3, 252>
func.func @quantised(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>> {
  %lo = graph.constant dense<-3.0> : tensor<f32>
  %hi = graph.constant dense<252.0> : tensor<f32>
  %w = graph.constant dense<[[[[[[1.0, -128.0, 127.0, 0.0], [2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0], [-1.0, -2.0, -3.0, -4.0]]]]]]> : tensor<1x1x1x1x4x4xf32>
  %b = graph.constant dense<[[7.0, -7.0, 1000.0, 0.0]]> : tensor<1x4xf32>
  %r = graph.round %x : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %a = graph.max %r, %lo : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %q = graph.min %a, %hi : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y = graph.blocked_conv %q, %w, %b activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>, tensor<1x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
}

// -----

// Through a layout conversion (which pads channels with zeros), a Relu, a
// Sub of an integer and a max pool: [0, 255] - 128 = [-128, 127].
// CHECK-LABEL: func.func @through_moves
// CHECK: graph.blocked_conv {{.*}}kiln.integer_input = array<i64: -128, 127>
func.func @through_moves(%x: tensor<1x4x8x8xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>> {
  %hi = graph.constant dense<255.0> : tensor<f32>
  %zp = graph.constant dense<128.0> : tensor<f32>
  %w = graph.constant dense<1.0> : tensor<1x1x1x1x4x4xf32>
  %r = graph.round %x : tensor<1x4x8x8xf32>
  %a = graph.relu %r : tensor<1x4x8x8xf32>
  %q = graph.min %a, %hi : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %s = graph.sub %q, %zp : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %b = graph.to_blocked %s : tensor<1x4x8x8xf32> -> tensor<1x1x8x8x4xf32, #graph.blocked<c = 4>>
  %p = graph.blocked_max_pool %b {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8x4xf32, #graph.blocked<c = 4>>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y = graph.blocked_conv %p, %w activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
}

// -----

// What stays f32: an input not known to be integers, a range wider than
// 256 values, a range without 0 (padding reads 0), weights beyond int8,
// fractional weights, a fractional bias, and a rounding without a clamp
// (any integer).
// CHECK-LABEL: func.func @refused
// CHECK-NOT: kiln.integer_input
func.func @refused(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, %x3: tensor<1x1x4x4x3xf32, #graph.blocked<c = 3>>) -> (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %c255 = graph.constant dense<255.0> : tensor<f32>
  %c256 = graph.constant dense<256.0> : tensor<f32>
  %w = graph.constant dense<1.0> : tensor<1x1x1x1x4x4xf32>
  %w3 = graph.constant dense<1.0> : tensor<1x1x1x1x3x4xf32>
  %big = graph.constant dense<128.0> : tensor<1x1x1x1x4x4xf32>
  %half = graph.constant dense<0.5> : tensor<1x1x1x1x4x4xf32>
  %bhalf = graph.constant dense<0.5> : tensor<1x4xf32>
  %r = graph.round %x : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %a = graph.max %r, %zero : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %q = graph.min %a, %c255 : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %wide = graph.min %a, %c256 : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %a1 = graph.max %r, %one : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %positive = graph.min %a1, %c255 : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %r3 = graph.round %x3 : tensor<1x1x4x4x3xf32, #graph.blocked<c = 3>>
  %y0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y1 = graph.blocked_conv %wide, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y2 = graph.blocked_conv %positive, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y3 = graph.blocked_conv %q, %big activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y4 = graph.blocked_conv %q, %half activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y5 = graph.blocked_conv %q, %w, %bhalf activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>, tensor<1x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y6 = graph.blocked_conv %r3, %w3 activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x3xf32, #graph.blocked<c = 3>>, tensor<1x1x1x1x3x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  return %y0, %y1, %y2, %y3, %y4, %y5, %y6 : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
}

// -----

// A matrix product of a quantised activation (less a constant zero point:
// [-3, 252]) and an int8 matrix is marked as it is.
// CHECK-LABEL: func.func @static_matmul
// CHECK: graph.matmul {{.*}}{kiln.integer_input = array<i64: -3, 252>}
func.func @static_matmul(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %lo = graph.constant dense<0.0> : tensor<f32>
  %hi = graph.constant dense<255.0> : tensor<f32>
  %zp = graph.constant dense<3.0> : tensor<f32>
  %w = graph.constant dense<[[1.0, -1.0], [2.0, -2.0], [3.0, -3.0], [4.0, -4.0], [5.0, -5.0], [6.0, -6.0], [7.0, -7.0], [-128.0, 127.0]]> : tensor<8x2xf32>
  %r = graph.round %x : tensor<4x8xf32>
  %a = graph.max %r, %lo : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %q = graph.min %a, %hi : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = graph.sub %q, %zp : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %y = graph.matmul %s, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// DynamicQuantizeLinear's activation (uint8) less its zero point (a uint8
// scalar known at run time) spans 511 values; the product is rewritten as
// the uint8 activation's product, marked, less the zero point times each
// column's sum (-100 and 99).
// CHECK-LABEL: func.func @dynamic_matmul
// CHECK: %[[SUMS:.+]] = graph.constant dense<[-1.000000e+02, 9.900000e+01]> : tensor<2xf32>
// CHECK: %[[SHIFT:.+]] = graph.mul %[[Z:.+]], %[[SUMS]] : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[P:.+]] = graph.matmul %[[A:.+]], %{{.+}} {kiln.integer_input = array<i64: 0, 255>} : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
// CHECK: %[[Y:.+]] = graph.sub %[[P]], %[[SHIFT]]
// CHECK: return %[[Y]]
func.func @dynamic_matmul(%x: tensor<4x8xui8>, %z: tensor<ui8>) -> tensor<4x2xf32> {
  %w = graph.constant dense<[[1.0, -1.0], [2.0, -2.0], [3.0, -3.0], [4.0, -4.0], [5.0, -5.0], [6.0, -6.0], [7.0, -7.0], [-128.0, 127.0]]> : tensor<8x2xf32>
  %a = graph.cast %x : (tensor<4x8xui8>) -> tensor<4x8xf32>
  %zf = graph.cast %z : (tensor<ui8>) -> tensor<f32>
  %s = graph.sub %a, %zf : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %y = graph.matmul %s, %w : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A fused matmul (a Gemm: its matrix a transpose of a constant, its bias,
// its activation) of DynamicQuantizeLinear's activation: the transpose is
// folded into a constant, the product takes the uint8 activation, and the
// zero point times each column's sum (3 and -3) comes off the bias, before
// the activation.
// CHECK-LABEL: func.func @dynamic_gemm
// CHECK-DAG: %[[W:.+]] = graph.constant dense<{{\[}}[1.000000e+00, -1.000000e+00], [2.000000e+00, -2.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[SUMS:.+]] = graph.constant dense<[3.000000e+00, -3.000000e+00]> : tensor<2xf32>
// CHECK: %[[SHIFT:.+]] = graph.mul %{{.+}}, %[[SUMS]]
// CHECK: %[[BIAS:.+]] = graph.sub %{{.+}}, %[[SHIFT]] : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: graph.fused_matmul %[[A:.+]], %[[W]], %[[BIAS]] activation relu {kiln.integer_input = array<i64: 0, 255>}
func.func @dynamic_gemm(%x: tensor<3x2xui8>, %z: tensor<ui8>) -> tensor<3x2xf32> {
  %wt = graph.constant dense<[[1.0, 2.0], [-1.0, -2.0]]> : tensor<2x2xf32>
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %w = graph.transpose %wt {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %a = graph.cast %x : (tensor<3x2xui8>) -> tensor<3x2xf32>
  %zf = graph.cast %z : (tensor<ui8>) -> tensor<f32>
  %s = graph.sub %a, %zf : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
  %y = graph.fused_matmul %s, %w, %b activation relu : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A depthwise convolution of int8 weights on a quantised activation is
// marked like a convolution (it then reads the activation as bytes); one
// whose weights are not int8 values (a scale folded in) is not.
// CHECK-LABEL: func.func @depthwise
// CHECK: graph.blocked_depthwise_conv {{.*}}kiln.integer_input = array<i64: -3, 252>
// CHECK: graph.blocked_depthwise_conv
// CHECK-NOT: kiln.integer_input
// CHECK: return
func.func @depthwise(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) -> (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) {
  %lo = graph.constant dense<-3.0> : tensor<f32>
  %hi = graph.constant dense<252.0> : tensor<f32>
  %w = graph.constant dense<-128.0> : tensor<1x3x3x4xf32>
  %wf = graph.constant dense<0.5> : tensor<1x3x3x4xf32>
  %b = graph.constant dense<[[7.0, -7.0, 1000.0, 0.0]]> : tensor<1x4xf32>
  %r = graph.round %x : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %a = graph.max %r, %lo : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %q = graph.min %a, %hi : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %y = graph.blocked_depthwise_conv %q, %w, %b activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x3x3x4xf32>, tensor<1x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %z = graph.blocked_depthwise_conv %q, %wf activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x3x3x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  return %y, %z : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
}
