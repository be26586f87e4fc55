// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// A depthwise convolution of stride 2 x 2 marked kiln.integer_input =
// [-3, 252] (a uint8 activation less a zero point of 3) reads its input as
// bytes (four input pixels an output pixel, the input's bytes the larger
// cost): x + 3,
// padded with the byte of a 0 (3), one operand of bytes per window
// position, each converted to f32 in the body and multiplied by its int8
// weight; -3 times each filter's sum goes into the bias:
// [7, -7, 1000, 0] - 3 * [1 + 5, 2 + 6, 3 + 7, 4 + 8] = [-11, -31, 970, -36].
// CHECK-LABEL: func.func @integer_depthwise
// CHECK: %[[LOW:.+]] = arith.constant -3.000000e+00 : f32
// CHECK: linalg.generic
// CHECK: arith.subf %{{.+}}, %[[LOW]] : f32
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: tensor.pad %{{.+}} low[0, 0, 0, 1, 0] high[0, 0, 0, 0, 0]
// CHECK: tensor.yield %c3_i8 : i8
// CHECK: arith.constant dense<{{\[}}[-1.100000e+01, -3.100000e+01, 9.700000e+02, -3.600000e+01]]> : tensor<1x4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x1x2x2x4xi8>, tensor<1x1x2x2x4xi8>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>)
// CHECK: %[[X0:.+]] = arith.uitofp %{{.+}} : i8 to f32
// CHECK: arith.mulf %[[X0]], %{{.+}} : f32
// CHECK: %[[X1:.+]] = arith.uitofp %{{.+}} : i8 to f32
// CHECK: arith.mulf %[[X1]], %{{.+}} : f32
func.func @integer_depthwise(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>> {
  %w = graph.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]]]> : tensor<1x1x2x4xf32>
  %b = graph.constant dense<[[7.0, -7.0, 1000.0, 0.0]]> : tensor<1x4xf32>
  %y = graph.blocked_depthwise_conv %x, %w, %b activation none {kiln.integer_input = array<i64: -3, 252>, strides = array<i64: 2, 2>, pads = array<i64: 0, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x2x4xf32>, tensor<1x4xf32>) -> tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>
}

// -----

// At stride 1 (nine taps of one input pixel each) the conversion of every
// tap's byte would cost more than the bytes save: the input stays f32.
// CHECK-LABEL: func.func @stride_one
// CHECK-NOT: i8
// CHECK: return
func.func @stride_one(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>> {
  %w = graph.constant dense<1.0> : tensor<1x3x3x4xf32>
  %y = graph.blocked_depthwise_conv %x, %w activation none {kiln.integer_input = array<i64: -3, 252>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x3x3x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
}
