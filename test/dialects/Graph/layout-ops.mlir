// RUN: kiln-opt %s -split-input-file | kiln-opt | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// ROUNDTRIP-LABEL: func.func @ops
// ROUNDTRIP: graph.to_blocked %{{.+}} : tensor<1x3x8x8xf32> -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.blocked_conv %{{.+}}, %{{.+}}, %{{.+}} residual %{{.+}} activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x1x3x3x16x16xf32>, tensor<1x16xf32>, tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.blocked_max_pool %{{.+}} {{.*}} : (tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x2x2x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.from_blocked %{{.+}} : tensor<1x1x2x2x16xf32, #graph.blocked<c = 16>> -> tensor<1x10x2x2xf32>
func.func @ops(%x: tensor<1x3x8x8xf32>, %w: tensor<1x1x3x3x16x16xf32>, %b: tensor<1x16xf32>, %r: tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x10x2x2xf32> {
  %0 = graph.to_blocked %x : tensor<1x3x8x8xf32> -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  %1 = graph.blocked_conv %0, %w, %b residual %r activation clip {activation_params = array<f32: 0.0, 6.0>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x1x3x3x16x16xf32>, tensor<1x16xf32>, tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
  %2 = graph.blocked_max_pool %1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x2x2x16xf32, #graph.blocked<c = 16>>
  %3 = graph.from_blocked %2 : tensor<1x1x2x2x16xf32, #graph.blocked<c = 16>> -> tensor<1x10x2x2xf32>
  return %3 : tensor<1x10x2x2xf32>
}

// -----

// ROUNDTRIP-LABEL: func.func @more_ops
// ROUNDTRIP: graph.blocked_depthwise_conv %{{.+}}, %{{.+}}, %{{.+}} residual %{{.+}} activation relu {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<2x3x3x16xf32>, tensor<2x16xf32>, tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.blocked_average_pool %{{.+}} {ceil_mode = true, count_include_pad = true, {{.*}}} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.relu %{{.+}} : tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>
// ROUNDTRIP: graph.concat %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>, tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>) -> tensor<1x4x3x3x16xf32, #graph.blocked<c = 16>>
func.func @more_ops(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<2x3x3x16xf32>, %b: tensor<2x16xf32>) -> tensor<1x4x3x3x16xf32, #graph.blocked<c = 16>> {
  %0 = graph.blocked_depthwise_conv %x, %w, %b residual %x activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<2x3x3x16xf32>, tensor<2x16xf32>, tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
  %1 = graph.blocked_average_pool %0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>
  %2 = graph.relu %1 : tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>
  %3 = graph.concat %1, %2 {axis = 1 : i64} : (tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>, tensor<1x2x3x3x16xf32, #graph.blocked<c = 16>>) -> tensor<1x4x3x3x16xf32, #graph.blocked<c = 16>>
  return %3 : tensor<1x4x3x3x16xf32, #graph.blocked<c = 16>>
}

// -----

// Adjacent conversions cancel.
// CHECK-LABEL: func.func @cancel_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<1x32x4x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cancel_round_trip(%x: tensor<1x32x4x4xf32>) -> tensor<1x32x4x4xf32> {
  %0 = graph.to_blocked %x : tensor<1x32x4x4xf32> -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
  %1 = graph.from_blocked %0 : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x32x4x4xf32>
  return %1 : tensor<1x32x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @cancel_blocked
// CHECK-SAME: (%[[Y:.+]]: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>)
// CHECK-NEXT: return %[[Y]]
func.func @cancel_blocked(%y: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> {
  %0 = graph.from_blocked %y : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x32x4x4xf32>
  %1 = graph.to_blocked %0 : tensor<1x32x4x4xf32> -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
  return %1 : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

// The padding channels hold no data, so a round trip through 20 channels
// cancels too: the consumers of a 20-channel value never read channels 20..31.
// CHECK-LABEL: func.func @cancel_padding
// CHECK-SAME: (%[[Y:.+]]: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>)
// CHECK-NEXT: return %[[Y]]
func.func @cancel_padding(%y: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> {
  %0 = graph.from_blocked %y : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x20x4x4xf32>
  %1 = graph.to_blocked %0 : tensor<1x20x4x4xf32> -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
  return %1 : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

// Not cancelled: a change of block size is a real conversion.
// CHECK-LABEL: func.func @no_cancel
// CHECK: graph.from_blocked
// CHECK: graph.to_blocked
func.func @no_cancel(%y: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.from_blocked %y : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x32x4x4xf32>
  %1 = graph.to_blocked %0 : tensor<1x32x4x4xf32> -> tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>>
  return %1 : tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>>
}
