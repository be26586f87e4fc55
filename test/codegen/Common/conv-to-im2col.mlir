// RUN: kiln-opt %s -split-input-file -kiln-codegen-conv-to-im2col | FileCheck %s

// A 3x3 convolution: the copy keeps output rows and columns apart (its inner
// loop reads an input row), then one contraction over the 576 filter taps.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d4, d3 + d5)>
// CHECK-DAG: #[[ID6:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-DAG: #[[FILTER:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[COLS:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @conv3x3
// CHECK: %[[COPY:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[ID6]]]{{.*}} outs(%{{.+}} : tensor<1x64x3x3x56x56xf32>)
// CHECK: %[[COLUMNS:.+]] = tensor.collapse_shape %[[COPY]] {{\[\[}}0], [1, 2, 3], [4, 5]] : tensor<1x64x3x3x56x56xf32> into tensor<1x576x3136xf32>
// CHECK: %[[W:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2, 3]] : tensor<64x64x3x3xf32> into tensor<64x576xf32>
// CHECK: %[[PRODUCT:.+]] = linalg.generic {indexing_maps = [#[[FILTER]], #[[COLS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[W]], %[[COLUMNS]]
// CHECK: tensor.expand_shape %[[PRODUCT]] {{\[\[}}0], [1], [2, 3]] output_shape [1, 64, 56, 56]
// CHECK-NOT: linalg.conv_2d_nchw_fchw
func.func @conv3x3(%x: tensor<1x64x58x58xf32>, %w: tensor<64x64x3x3xf32>, %init: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x64x58x58xf32>, tensor<64x64x3x3xf32>) outs(%init : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
  return %0 : tensor<1x64x56x56xf32>
}

// -----

// Stride and dilation enter the copy's input map.
// CHECK: #[[STRIDED:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4 * 2 + d2 * 2, d5 * 2 + d3 * 2)>
// CHECK-LABEL: func.func @strided_dilated
// CHECK: linalg.generic {indexing_maps = [#[[STRIDED]],
func.func @strided_dilated(%x: tensor<1x3x17x17xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : tensor<1x3x17x17xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x7x7xf32>) -> tensor<1x8x7x7xf32>
  return %0 : tensor<1x8x7x7xf32>
}

// -----

// A 1x1 stride-1 convolution needs no copy: the input is the matrix.
// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.+]]: tensor<2x32x14x14xf32>
// CHECK: %[[COLUMNS:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2, 3]] : tensor<2x32x14x14xf32> into tensor<2x32x196xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[COLUMNS]] : tensor<16x32xf32>, tensor<2x32x196xf32>)
// CHECK-NOT: tensor<2x32x1x1x14x14xf32>
func.func @pointwise(%x: tensor<2x32x14x14xf32>, %w: tensor<16x32x1x1xf32>, %init: tensor<2x16x14x14xf32>) -> tensor<2x16x14x14xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x32x14x14xf32>, tensor<16x32x1x1xf32>) outs(%init : tensor<2x16x14x14xf32>) -> tensor<2x16x14x14xf32>
  return %0 : tensor<2x16x14x14xf32>
}

// -----

// Dynamic shapes are left alone.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.conv_2d_nchw_fchw
func.func @dynamic(%x: tensor<?x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<?x4x6x6xf32>) -> tensor<?x4x6x6xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<?x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<?x4x6x6xf32>) -> tensor<?x4x6x6xf32>
  return %0 : tensor<?x4x6x6xf32>
}

// -----

// A grouped convolution: every tensor keeps the group dimension, and the
// contraction has it as a batch loop (in the filter, the columns and the
// output).
// CHECK-DAG: #[[GIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3 + d5, d4 + d6)>
// CHECK-DAG: #[[GFILTER:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d4)>
// CHECK-DAG: #[[GCOLS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// CHECK-DAG: #[[GOUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @grouped
// CHECK: %[[COPY:.+]] = linalg.generic {indexing_maps = [#[[GIN]], {{.+}}]{{.*}} outs(%{{.+}} : tensor<1x4x8x3x3x6x6xf32>)
// CHECK: %[[COLUMNS:.+]] = tensor.collapse_shape %[[COPY]] {{\[\[}}0], [1], [2, 3, 4], [5, 6]] : tensor<1x4x8x3x3x6x6xf32> into tensor<1x4x72x36xf32>
// CHECK: %[[W:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2, 3, 4]] : tensor<4x16x8x3x3xf32> into tensor<4x16x72xf32>
// CHECK: %[[INIT:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x4x16x6x6xf32> into tensor<1x4x16x36xf32>
// CHECK: %[[PRODUCT:.+]] = linalg.generic {indexing_maps = [#[[GFILTER]], #[[GCOLS]], #[[GOUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[W]], %[[COLUMNS]] : tensor<4x16x72xf32>, tensor<1x4x72x36xf32>) outs(%[[INIT]]
// CHECK: tensor.expand_shape %[[PRODUCT]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 16, 6, 6]
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
func.func @grouped(%x: tensor<1x4x8x8x8xf32>, %w: tensor<4x16x8x3x3xf32>, %init: tensor<1x4x16x6x6xf32>) -> tensor<1x4x16x6x6xf32> {
  %0 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x8x8x8xf32>, tensor<4x16x8x3x3xf32>) outs(%init : tensor<1x4x16x6x6xf32>) -> tensor<1x4x16x6x6xf32>
  return %0 : tensor<1x4x16x6x6xf32>
}

// -----

// A grouped 1x1 convolution (ShuffleNet's) needs no copy either.
// CHECK-LABEL: func.func @grouped_pointwise
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x34x14x14xf32>
// CHECK: %[[COLUMNS:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x4x34x14x14xf32> into tensor<1x4x34x196xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[COLUMNS]] : tensor<4x68x34xf32>, tensor<1x4x34x196xf32>)
func.func @grouped_pointwise(%x: tensor<1x4x34x14x14xf32>, %w: tensor<4x68x34x1x1xf32>, %init: tensor<1x4x68x14x14xf32>) -> tensor<1x4x68x14x14xf32> {
  %0 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x34x14x14xf32>, tensor<4x68x34x1x1xf32>) outs(%init : tensor<1x4x68x14x14xf32>) -> tensor<1x4x68x14x14xf32>
  return %0 : tensor<1x4x68x14x14xf32>
}

// -----

// A 3-D convolution (R3D's): the copy keeps the three window and three
// output dimensions apart, then the same contraction over [C*KD*KH*KW,
// OD*OH*OW].
// CHECK-LABEL: func.func @conv3d
// CHECK: %[[COPY:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<1x3x3x3x3x4x6x6xf32>)
// CHECK: %[[COLUMNS:.+]] = tensor.collapse_shape %[[COPY]] {{\[\[}}0], [1, 2, 3, 4], [5, 6, 7]] : tensor<1x3x3x3x3x4x6x6xf32> into tensor<1x81x144xf32>
// CHECK: %[[W:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0], [1, 2, 3, 4]] : tensor<8x3x3x3x3xf32> into tensor<8x81xf32>
// CHECK: %[[PRODUCT:.+]] = linalg.generic {{.*}} ins(%[[W]], %[[COLUMNS]] : tensor<8x81xf32>, tensor<1x81x144xf32>)
// CHECK: tensor.expand_shape %[[PRODUCT]] {{\[\[}}0], [1], [2, 3, 4]] output_shape [1, 8, 4, 6, 6]
// CHECK-NOT: linalg.conv_3d_ncdhw_fcdhw
func.func @conv3d(%x: tensor<1x3x6x8x8xf32>, %w: tensor<8x3x3x3x3xf32>, %init: tensor<1x8x4x6x6xf32>) -> tensor<1x8x4x6x6xf32> {
  %0 = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>}
    ins(%x, %w : tensor<1x3x6x8x8xf32>, tensor<8x3x3x3x3xf32>) outs(%init : tensor<1x8x4x6x6xf32>) -> tensor<1x8x4x6x6xf32>
  return %0 : tensor<1x8x4x6x6xf32>
}
