// RUN: kiln-opt %s -split-input-file -kiln-graph-prune-conv-taps | FileCheck %s

// ASPP's 3x3 convolution dilated by 36 on a 7x7 map: only the centre tap
// reads the input, so it is a 1x1 convolution without padding (the centre
// weights, 5 and 14, kept).
// CHECK-LABEL: func.func @aspp
// CHECK: %[[W:.+]] = graph.constant dense<{{\[}}[{{\[}}[5.000000e+00]]], {{\[}}[{{\[}}1.400000e+01]]]]> : tensor<2x1x1x1xf32>
// CHECK: graph.conv %{{.+}}, %[[W]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x7x7xf32>
func.func @aspp(%x: tensor<1x1x7x7xf32>) -> tensor<1x2x7x7xf32> {
  %w = graph.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]],
                             [[[10.0, 11.0, 12.0], [13.0, 14.0, 15.0], [16.0, 17.0, 18.0]]]]> : tensor<2x1x3x3xf32>
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 36, 36, 36, 36>, dilations = array<i64: 36, 36>, group = 1} : (tensor<1x1x7x7xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x7x7xf32>
  return %y : tensor<1x2x7x7xf32>
}

// -----

// Dilation 4 on a 6-wide map, padded by 4: along the rows (height 6) every
// tap reads the input; along the columns (width 3) only the centre one.
// CHECK-LABEL: func.func @one_dimension
// CHECK: graph.conv %{{.+}}, %{{.+}} {dilations = array<i64: 4, 1>, group = 1 : i64, pads = array<i64: 4, 0, 4, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x3xf32>, tensor<1x1x3x1xf32>) -> tensor<1x1x6x3xf32>
func.func @one_dimension(%x: tensor<1x1x6x3xf32>) -> tensor<1x1x6x3xf32> {
  %w = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 4, 4, 4, 4>, dilations = array<i64: 4, 4>, group = 1} : (tensor<1x1x6x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x3xf32>
  return %y : tensor<1x1x6x3xf32>
}

// -----

// Every tap reads the input (an ordinary padded 3x3): left alone.
// CHECK-LABEL: func.func @ordinary
// CHECK: graph.conv %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>)
func.func @ordinary(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %w = graph.constant dense<1.0> : tensor<1x1x3x3xf32>
  %y = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x8x8xf32>
  return %y : tensor<1x1x8x8xf32>
}
