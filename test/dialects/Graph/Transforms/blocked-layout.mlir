// RUN: kiln-opt %s -split-input-file -kiln-graph-blocked-layout=block=4 | FileCheck %s

// A conv, a max pool and a 1x1 conv: one conversion in, one out, none
// between; weights re-laid out (5 filters -> 2 blocks of 4, zero padded; the
// 3 input channels, fewer than a block, are one block of 3), the bias padded
// to 2 x 4.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x8x8xf32>)
// CHECK-DAG: %[[W0:.+]] = graph.constant dense<{{.*}}> : tensor<2x1x3x3x3x4xf32>
// CHECK-DAG: %[[B0:.+]] = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [5.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<2x4xf32>
// CHECK-DAG: %[[W1:.+]] = graph.constant dense<{{.*}}> : tensor<2x2x1x1x4x4xf32>
// CHECK: %[[IN:.+]] = graph.to_blocked %[[X]] : tensor<1x3x8x8xf32> -> tensor<1x1x8x8x3xf32, #graph.blocked<c = 3>>
// CHECK: %[[C0:.+]] = graph.blocked_conv %[[IN]], %[[W0]], %[[B0]] activation relu {{.*}} -> tensor<1x2x8x8x4xf32, #graph.blocked<c = 4>>
// CHECK-NOT: graph.from_blocked
// CHECK: %[[P:.+]] = graph.blocked_max_pool %[[C0]] {{.*}} -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK-NOT: graph.to_blocked
// CHECK: %[[C1:.+]] = graph.blocked_conv %[[P]], %[[W1]] activation none {{.*}} -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[Y:.+]] = graph.from_blocked %[[C1]] : tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>> -> tensor<1x6x4x4xf32>
// CHECK: return %[[Y]]
func.func @chain(%x: tensor<1x3x8x8xf32>) -> tensor<1x6x4x4xf32> {
  %w0 = graph.constant dense<0.5> : tensor<5x3x3x3xf32>
  %b0 = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %w1 = graph.constant dense<0.25> : tensor<6x5x1x1xf32>
  %0 = graph.fused_conv %x, %w0, %b0 activation relu {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<5x3x3x3xf32>, tensor<5xf32>) -> tensor<1x5x8x8xf32>
  %1 = graph.max_pool %0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x5x8x8xf32>) -> tensor<1x5x4x4xf32>
  %2 = graph.conv %1, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x5x4x4xf32>, tensor<6x5x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %2 : tensor<1x6x4x4xf32>
}

// -----

// The weight layout: element [ko, cb, y, x, i, o] is filter ko * 4 + o,
// channel cb * 2 + i (2 channels: one input block of 2). Filter 0 reads
// channel 1 (1.0), filter 1 channel 0 (2.0): [0, 0, 0, 0, 1, 0] and
// [0, 0, 0, 0, 0, 1] hold them; filters 2 and 3 are padding.
// CHECK-LABEL: func.func @weight_layout
// CHECK: graph.constant dense<{{\[\[\[\[\[\[}}0.000000e+00, 2.000000e+00, 0.000000e+00, 0.000000e+00], [1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]]]]> : tensor<1x1x1x1x2x4xf32>
// CHECK: graph.to_blocked %{{.+}} : tensor<1x2x4x4xf32> -> tensor<1x1x4x4x2xf32, #graph.blocked<c = 2>>
func.func @weight_layout(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[0.0]], [[1.0]]], [[[2.0]], [[0.0]]]]> : tensor<2x2x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

// A residual from outside the blocked region is converted; one that is
// already blocked is not.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.+]]: tensor<1x4x4x4xf32>, %[[R:.+]]: tensor<1x4x4x4xf32>)
// CHECK-DAG: %[[BX:.+]] = graph.to_blocked %[[X]]
// CHECK-DAG: %[[BR:.+]] = graph.to_blocked %[[R]]
// CHECK: %[[C0:.+]] = graph.blocked_conv %[[BX]], %{{.+}} residual %[[BR]] activation relu
// CHECK: %[[C1:.+]] = graph.blocked_conv %[[C0]], %{{.+}} residual %[[C0]] activation none
// CHECK: graph.from_blocked %[[C1]]
// CHECK-NOT: graph.to_blocked
func.func @residual(%x: tensor<1x4x4x4xf32>, %r: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %0 = graph.fused_conv %x, %w residual %r activation relu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %1 = graph.fused_conv %0, %w residual %0 activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}

// -----

// Not rewritten: a weight that is not a constant, a grouped convolution,
// a bias that is not a constant, f16, and a 1-D pool.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: graph.to_blocked
// CHECK-NOT: graph.blocked_
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.max_pool
// CHECK-NOT: graph.blocked_
func.func @refused(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %h: tensor<1x4x8x8xf16>, %p: tensor<1x4x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf16>, tensor<1x4x4xf32>) {
  %cw = graph.constant dense<1.0> : tensor<4x4x3x3xf32>
  %gw = graph.constant dense<1.0> : tensor<4x2x3x3xf32>
  %hw = graph.constant dense<1.0> : tensor<4x4x3x3xf16>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = graph.conv %x, %gw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = graph.conv %x, %cw, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %3 = graph.conv %h, %hw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %4 = graph.max_pool %p {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = false} : (tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  return %0, %1, %2, %3, %4 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf16>, tensor<1x4x4xf32>
}

// -----

// A convolution whose input has fewer channels than a block takes a block
// of its own size only at an edge: after another blocked convolution it
// keeps the producer's blocks, so that no conversion sits between them.
// CHECK-LABEL: func.func @narrow_between
// CHECK: graph.to_blocked %{{.+}} : tensor<1x8x4x4xf32> -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[A:.+]] = graph.blocked_conv {{.*}} -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK-NOT: graph.from_blocked
// CHECK: %[[B:.+]] = graph.blocked_conv %[[A]], %{{.+}} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>)
// CHECK: graph.from_blocked %[[B]]
// CHECK-NOT: graph.to_blocked
func.func @narrow_between(%x: tensor<1x8x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w0 = graph.constant dense<0.5> : tensor<2x8x1x1xf32>
  %w1 = graph.constant dense<0.5> : tensor<4x2x1x1xf32>
  %0 = graph.conv %x, %w0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x8x4x4xf32>, tensor<2x8x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.conv %0, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}
