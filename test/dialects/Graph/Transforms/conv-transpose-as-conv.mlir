// RUN: kiln-opt %s -split-input-file --kiln-graph-conv-transpose-as-conv | FileCheck %s

// Stride 2, kernel 2, no pads: four phases of one tap each, a 1x1
// convolution to 4 x 3 channels (the bias repeated per phase), then the
// interleave; no slice (the phases cover the output exactly).
// CHECK-LABEL: func.func @upsample2x2
// CHECK: %[[W:.+]] = graph.constant dense<{{.+}}> : tensor<12x2x1x1xf32>
// CHECK: %[[B:.+]] = graph.constant dense<[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00, 3.000000e+00, 3.000000e+00, 3.000000e+00, 3.000000e+00]> : tensor<12xf32>
// CHECK: %[[C:.+]] = graph.conv %{{.+}}, %[[W]], %[[B]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x5xf32>, tensor<12x2x1x1xf32>, tensor<12xf32>) -> tensor<1x12x4x5xf32>
// CHECK: %[[R:.+]] = graph.reshape %[[C]] {{.+}} -> tensor<1x3x2x2x4x5xf32>
// CHECK: %[[T:.+]] = graph.transpose %[[R]] {perm = array<i64: 0, 1, 4, 2, 5, 3>} : (tensor<1x3x2x2x4x5xf32>) -> tensor<1x3x4x2x5x2xf32>
// CHECK: %[[Y:.+]] = graph.reshape %[[T]] {{.+}} -> tensor<1x3x8x10xf32>
// CHECK-NOT: graph.slice
// CHECK: return %[[Y]]
func.func @upsample2x2(%x: tensor<1x2x4x5xf32>) -> tensor<1x3x8x10xf32> {
  %w = graph.constant dense<0.5> : tensor<2x3x2x2xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %0 = graph.conv_transpose %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x5xf32>, tensor<2x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x8x10xf32>
  return %0 : tensor<1x3x8x10xf32>
}

// -----

// Kernel 4, stride 2, pad 1 (a decoder's upsampling): phases of 2x2 taps,
// one more row and column of them than the input (pads 1), and the
// output's window sliced from the interleave.
// CHECK-LABEL: func.func @decoder
// CHECK: graph.conv %{{.+}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>, tensor<8x4x2x2xf32>) -> tensor<1x8x8x8xf32>
// CHECK: graph.slice %{{.+}} {ends = array<i64: 1, 2, 15, 15>, starts = array<i64: 0, 0, 1, 1>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x2x16x16xf32>) -> tensor<1x2x14x14xf32>
func.func @decoder(%x: tensor<1x4x7x7xf32>) -> tensor<1x2x14x14xf32> {
  %w = graph.constant dense<0.25> : tensor<4x2x4x4xf32>
  %0 = graph.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>, tensor<4x2x4x4xf32>) -> tensor<1x2x14x14xf32>
  return %0 : tensor<1x2x14x14xf32>
}

// -----

// The filter's taps by phase: for a 1-D kernel [a, b, c] with stride 2,
// phase 0 takes taps 2 and 0 (reversed: [c, a]) and phase 1 tap 1 with a
// zero before it ([0, b]).
// CHECK-LABEL: func.func @taps
// CHECK: graph.constant dense<{{\[}}{{\[}}[3.000000e+00, 1.000000e+00]], {{\[}}[0.000000e+00, 2.000000e+00]]]> : tensor<2x1x2xf32>
func.func @taps(%x: tensor<1x1x5xf32>) -> tensor<1x1x10xf32> {
  %w = graph.constant dense<[[[1.0, 2.0, 3.0]]]> : tensor<1x1x3xf32>
  %0 = graph.conv_transpose %x, %w {dilations = array<i64: 1>, group = 1 : i64, output_padding = array<i64: 1>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<1x1x5xf32>, tensor<1x1x3xf32>) -> tensor<1x1x10xf32>
  return %0 : tensor<1x1x10xf32>
}

// -----

// A filter that is not a constant, and a dilated one, are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: graph.conv_transpose
func.func @left_alone(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>) -> (tensor<1x2x9x9xf32>, tensor<1x2x11x11xf32>) {
  %c = graph.constant dense<0.5> : tensor<2x2x3x3xf32>
  %0 = graph.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x9x9xf32>
  %1 = graph.conv_transpose %x, %c {dilations = array<i64: 2, 2>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x11x11xf32>
  return %0, %1 : tensor<1x2x9x9xf32>, tensor<1x2x11x11xf32>
}

// -----

// An activation after it is applied to the phases, before they
// interleave, so that it meets the convolution.
// CHECK-LABEL: func.func @activation
// CHECK: %[[C:.+]] = graph.conv {{.+}} -> tensor<1x12x4x5xf32>
// CHECK: %[[R:.+]] = graph.relu %[[C]] : tensor<1x12x4x5xf32>
// CHECK: graph.reshape %[[R]]
// CHECK-NOT: graph.relu
func.func @activation(%x: tensor<1x2x4x5xf32>) -> tensor<1x3x8x10xf32> {
  %w = graph.constant dense<0.5> : tensor<2x3x2x2xf32>
  %0 = graph.conv_transpose %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x5xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x8x10xf32>
  %1 = graph.relu %0 : tensor<1x3x8x10xf32>
  return %1 : tensor<1x3x8x10xf32>
}
