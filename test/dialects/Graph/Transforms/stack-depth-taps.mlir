// RUN: kiln-opt %s -split-input-file -kiln-graph-stack-depth-taps | FileCheck %s

// Two depth taps, depth stride 2 and padding 1: the input goes to NDCHW,
// padded along D; tap dz reads depths 2d + dz (of the padded input), so the
// slices start at 0 and 1 with step 2; they stack next to the channels and
// the 2-D convolution runs over N * Dout = 2 images of 2 * 2 channels. The
// weight [1, 2, 2, 1, 2] (channel, then depth tap, then the 1x2 window:
// c0 = [1, 2], [3, 4]; c1 = [5, 6], [7, 8]) is moved to depth-tap-major
// order: [1, 2], [5, 6], [3, 4], [7, 8]. The result goes back to NCDHW.
// CHECK-LABEL: func.func @two_taps
// CHECK: %[[W:.+]] = graph.constant dense<{{\[}}[{{\[}}[1.000000e+00, 2.000000e+00]], {{\[}}[5.000000e+00, 6.000000e+00]], {{\[}}[3.000000e+00, 4.000000e+00]], {{\[}}[7.000000e+00, 8.000000e+00]]]]> : tensor<1x4x1x2xf32>
// CHECK: %[[T:.+]] = graph.transpose %{{.+}} {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x3x4x4xf32>) -> tensor<1x3x2x4x4xf32>
// CHECK: %[[P:.+]] = graph.pad %[[T]] {{.+}}pads = array<i64: 0, 1, 0, 0, 0, 0, 1, 0, 0, 0>{{.+}} -> tensor<1x5x2x4x4xf32>
// CHECK: graph.slice %[[P]] {ends = array<i64: 1, 3, 2, 4, 4>, starts = array<i64: 0, 0, 0, 0, 0>, steps = array<i64: 1, 2, 1, 1, 1>}
// CHECK: graph.slice %[[P]] {ends = array<i64: 1, 4, 2, 4, 4>, starts = array<i64: 0, 1, 0, 0, 0>, steps = array<i64: 1, 2, 1, 1, 1>}
// CHECK: %[[C:.+]] = graph.concat {{.+}} {axis = 3 : i64} : (tensor<1x2x1x1x2x4x4xf32>, tensor<1x2x1x1x2x4x4xf32>) -> tensor<1x2x1x2x2x4x4xf32>
// CHECK: %[[X2:.+]] = graph.reshape %[[C]] {{.+}} -> tensor<2x4x4x4xf32>
// CHECK: %[[Y2:.+]] = graph.conv %[[X2]], %[[W]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<1x4x1x2xf32>) -> tensor<2x1x4x3xf32>
// CHECK: %[[Y5:.+]] = graph.reshape %[[Y2]] {{.+}} -> tensor<1x2x1x4x3xf32>
// CHECK: graph.transpose %[[Y5]] {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<1x2x1x4x3xf32>) -> tensor<1x1x2x4x3xf32>
// CHECK-NOT: graph.conv
func.func @two_taps(%x: tensor<1x2x3x4x4xf32>) -> tensor<1x1x2x4x3xf32> {
  %w = graph.constant dense<[[[[[1.0, 2.0]], [[3.0, 4.0]]], [[[5.0, 6.0]], [[7.0, 8.0]]]]]> : tensor<1x2x2x1x2xf32>
  %y = graph.conv %x, %w {strides = array<i64: 2, 1, 1>, pads = array<i64: 1, 0, 0, 1, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1} : (tensor<1x2x3x4x4xf32>, tensor<1x2x2x1x2xf32>) -> tensor<1x1x2x4x3xf32>
  return %y : tensor<1x1x2x4x3xf32>
}

// -----

// Two groups and a weight known only at run time: the weight is transposed
// and reshaped in the graph; the 2-D convolution keeps the groups, the bias,
// and the height and width strides, pads and dilations.
// CHECK-LABEL: func.func @grouped_runtime_weight
// CHECK: %[[WT:.+]] = graph.transpose %{{.+}} {perm = array<i64: 0, 2, 1, 3, 4>} : (tensor<4x1x3x3x3xf32>) -> tensor<4x3x1x3x3xf32>
// CHECK: %[[W2:.+]] = graph.reshape %[[WT]] {{.+}} -> tensor<4x3x3x3xf32>
// CHECK: graph.conv %{{.+}}, %[[W2]], %{{.+}} {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 2, 1, 2, 1>, strides = array<i64: 1, 2>} : (tensor<4x6x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<4x4x8x4xf32>
func.func @grouped_runtime_weight(%x: tensor<1x2x4x8x8xf32>, %w: tensor<4x1x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x8x4xf32> {
  %y = graph.conv %x, %w, %b {strides = array<i64: 1, 1, 2>, pads = array<i64: 1, 2, 1, 1, 2, 1>, dilations = array<i64: 1, 2, 1>, group = 2} : (tensor<1x2x4x8x8xf32>, tensor<4x1x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x8x4xf32>
  return %y : tensor<1x4x4x8x4xf32>
}

// -----

// A 2-D convolution is left alone.
// CHECK-LABEL: func.func @two_d
// CHECK: graph.conv %{{.+}} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
// CHECK-NOT: graph.transpose
func.func @two_d(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %y : tensor<1x3x3x3xf32>
}

// -----

// A temporal filter (3x1x1, R(2+1)D's) is left to im2col.
// CHECK-LABEL: func.func @temporal
// CHECK: graph.conv %{{.+}} : (tensor<1x2x5x4x4xf32>, tensor<3x2x3x1x1xf32>) -> tensor<1x3x3x4x4xf32>
// CHECK-NOT: graph.transpose
func.func @temporal(%x: tensor<1x2x5x4x4xf32>, %w: tensor<3x2x3x1x1xf32>) -> tensor<1x3x3x4x4xf32> {
  %y = graph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, group = 1} : (tensor<1x2x5x4x4xf32>, tensor<3x2x3x1x1xf32>) -> tensor<1x3x3x4x4xf32>
  return %y : tensor<1x3x3x4x4xf32>
}
