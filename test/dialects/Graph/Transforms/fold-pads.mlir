// RUN: kiln-opt %s -split-input-file -kiln-graph-fold-pads | FileCheck %s

// torch.onnx's avg_pool2d(padding=1): the Pad's zeros counted in each
// divisor, as they were.
// CHECK-LABEL: func.func @average_pool
// CHECK-NOT: graph.pad
// CHECK: graph.average_pool %arg0 {ceil_mode = false, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x35x35xf32>) -> tensor<1x8x35x35xf32>
func.func @average_pool(%x: tensor<1x8x35x35xf32>) -> tensor<1x8x35x35xf32> {
  %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x8x35x35xf32>) -> tensor<1x8x37x37xf32>
  %y = graph.average_pool %p {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x37x37xf32>) -> tensor<1x8x35x35xf32>
  return %y : tensor<1x8x35x35xf32>
}

// -----

// Keras' ZeroPadding2D before a 7x7 stride-2 convolution: the pads add to
// the convolution's own (asymmetric: 3 before, 2 + 1 after in width).
// CHECK-LABEL: func.func @conv
// CHECK-NOT: graph.pad
// CHECK: graph.conv %arg0, %arg1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
func.func @conv(%x: tensor<1x3x224x224xf32>, %w: tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32> {
  %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 3, 3, 0, 0, 3, 2>, value = 0.0 : f64} : (tensor<1x3x224x224xf32>) -> tensor<1x3x230x229xf32>
  %y = graph.conv %p, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x230x229xf32>, tensor<64x3x7x7xf32>) -> tensor<1x64x112x112xf32>
  return %y : tensor<1x64x112x112xf32>
}

// -----

// A 1-D convolution, and a Pad with another user, which stays for it.
// CHECK-LABEL: func.func @conv1d_shared
// CHECK: %[[P:.+]] = graph.pad %arg0
// CHECK: graph.conv %arg0, %arg1 {dilations = array<i64: 2>, group = 1 : i64, pads = array<i64: 4, 4>, strides = array<i64: 1>}
// CHECK: return %[[P]], %{{.+}}
func.func @conv1d_shared(%x: tensor<1x4x16xf32>, %w: tensor<4x4x5xf32>) -> (tensor<1x4x24xf32>, tensor<1x4x16xf32>) {
  %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 4, 0, 0, 4>, value = 0.0 : f64} : (tensor<1x4x16xf32>) -> tensor<1x4x24xf32>
  %y = graph.conv %p, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 2>, group = 1} : (tensor<1x4x24xf32>, tensor<4x4x5xf32>) -> tensor<1x4x16xf32>
  return %p, %y : tensor<1x4x24xf32>, tensor<1x4x16xf32>
}

// -----

// A zero Pad of a ReLU's output before a MaxPool (Keras' ResNet-50 stem):
// the zeros never win, since every window reads the input.
// CHECK-LABEL: func.func @max_pool_after_relu
// CHECK-NOT: graph.pad
// CHECK: graph.max_pool %{{.+}} {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
func.func @max_pool_after_relu(%x: tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32> {
  %r = graph.relu %x : tensor<1x64x112x112xf32>
  %p = graph.pad %r {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x64x112x112xf32>) -> tensor<1x64x114x114xf32>
  %y = graph.max_pool %p {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x64x114x114xf32>) -> tensor<1x64x56x56xf32>
  return %y : tensor<1x64x56x56xf32>
}

// -----

// A -inf Pad before a MaxPool folds whatever the input.
// CHECK-LABEL: func.func @max_pool_minus_infinity
// CHECK-NOT: graph.pad
// CHECK: graph.max_pool %arg0 {{.+}} pads = array<i64: 0, 2, 1, 2>
func.func @max_pool_minus_infinity(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x5xf32> {
  %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 0, 1, 0, 0, 1, 1>, value = 0xFFF0000000000000 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x9x10xf32>
  %y = graph.max_pool %p {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 1, 0, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x9x10xf32>) -> tensor<1x2x4x5xf32>
  return %y : tensor<1x2x4x5xf32>
}

// -----

// Left alone: a zero Pad before a MaxPool of any input (a zero could win);
// a Pad of the channels; a reflect Pad; a Pad of 2 before a 2x2 MaxPool of
// a ReLU (its first window reads only padding); a pool whose own padding
// does not count beside the Pad's zeros that do; a nonzero Pad before a
// convolution; a ceil-mode pool with a partial window; a crop; a -inf Pad
// of 2 before a 2x2 MaxPool (a pool's pads stay smaller than its window).
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-9: graph.pad
func.func @left_alone(%x: tensor<1x2x8x8xf32>, %w: tensor<2x2x3x3xf32>)
    -> (tensor<1x2x5x5xf32>, tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x6x6xf32>,
        tensor<1x2x10x10xf32>, tensor<1x2x8x8xf32>, tensor<1x2x5x5xf32>, tensor<1x2x6x6xf32>,
        tensor<1x2x6x6xf32>) {
  %p0 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x10x10xf32>
  %y0 = graph.max_pool %p0 {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x10x10xf32>) -> tensor<1x2x5x5xf32>
  %p1 = graph.pad %x {mode = "constant", pads = array<i64: 0, 1, 1, 1, 0, 1, 1, 1>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x4x10x10xf32>
  %y1 = graph.average_pool %p1 {ceil_mode = false, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x10x10xf32>) -> tensor<1x4x8x8xf32>
  %p2 = graph.pad %x {mode = "reflect", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x10x10xf32>
  %y2 = graph.conv %p2, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x10x10xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  %r = graph.relu %x : tensor<1x2x8x8xf32>
  %p3 = graph.pad %r {mode = "constant", pads = array<i64: 0, 0, 2, 2, 0, 0, 2, 2>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x12x12xf32>
  %y3 = graph.max_pool %p3 {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x12x12xf32>) -> tensor<1x2x6x6xf32>
  %p4 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x10x10xf32>
  %y4 = graph.average_pool %p4 {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x10x10xf32>) -> tensor<1x2x10x10xf32>
  %p5 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 1.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x10x10xf32>
  %y5 = graph.conv %p5, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x10x10xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  %p6 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x9x9xf32>
  %y6 = graph.average_pool %p6 {ceil_mode = true, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9xf32>) -> tensor<1x2x5x5xf32>
  %p7 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, -1, -1, 0, 0, -1, -1>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x6x6xf32>
  %y7 = graph.max_pool %p7 {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %p8 = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 2, 2, 0, 0, 2, 2>, value = 0xFFF0000000000000 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x12x12xf32>
  %y8 = graph.max_pool %p8 {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x12x12xf32>) -> tensor<1x2x6x6xf32>
  return %y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7, %y8 : tensor<1x2x5x5xf32>, tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x6x6xf32>, tensor<1x2x10x10xf32>, tensor<1x2x8x8xf32>, tensor<1x2x5x5xf32>, tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>
}

// -----

// A ceil-mode pool whose windows all end inside the padded input takes the
// Pad (ceil_mode changes nothing there).
// CHECK-LABEL: func.func @ceil_mode_whole_windows
// CHECK-NOT: graph.pad
// CHECK: graph.average_pool %arg0 {ceil_mode = true, count_include_pad = true, {{.+}} pads = array<i64: 1, 1, 0, 0>
func.func @ceil_mode_whole_windows(%x: tensor<1x2x8x8xf32>) -> tensor<1x2x4x4xf32> {
  %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, value = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x9x9xf32>
  %y = graph.average_pool %p {ceil_mode = true, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
