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

// Not rewritten: a weight that is not a constant, a grouped convolution
// whose groups (3 channels) no merge of a few makes whole blocks of 4, a
// bias that is not a constant, f16, and a 1-D pool.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: graph.to_blocked
// CHECK-NOT: graph.blocked_
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.conv
// CHECK: graph.max_pool
// CHECK-NOT: graph.blocked_
func.func @refused(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %h: tensor<1x4x8x8xf16>, %p: tensor<1x4x8xf32>, %g: tensor<1x6x8x8xf32>) -> (tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf16>, tensor<1x4x4xf32>) {
  %cw = graph.constant dense<1.0> : tensor<4x4x3x3xf32>
  %gw = graph.constant dense<1.0> : tensor<4x3x3x3xf32>
  %hw = graph.constant dense<1.0> : tensor<4x4x3x3xf16>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = graph.conv %g, %gw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %2 = graph.conv %x, %cw, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32>
  %3 = graph.conv %h, %hw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x6x6xf16>
  %4 = graph.max_pool %p {kernel_shape = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = false} : (tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  return %0, %1, %2, %3, %4 : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf16>, tensor<1x4x4xf32>
}

// -----

// A grouped convolution of two groups of one block (4 channels and 4
// filters each): output block 0 reads input block 0, block 1 block 1.
// Filter f reads channel c of its group with weight 4 f + c + 1:
// [ko, 0, 0, 0, i, o] is filter 4 ko + o, channel i of its group.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[W:.+]] = graph.constant dense<{{\[\[\[\[\[\[}}1.000000e+00, 5.000000e+00, 9.000000e+00, 1.300000e+01], [2.000000e+00, 6.000000e+00, 1.000000e+01, 1.400000e+01], [3.000000e+00, 7.000000e+00, 1.100000e+01, 1.500000e+01], [4.000000e+00, 8.000000e+00, 1.200000e+01, 1.600000e+01]]]]], {{\[\[\[\[\[}}1.700000e+01, 2.100000e+01, 2.500000e+01, 2.900000e+01], [1.800000e+01, 2.200000e+01, 2.600000e+01, 3.000000e+01], [1.900000e+01, 2.300000e+01, 2.700000e+01, 3.100000e+01], [2.000000e+01, 2.400000e+01, 2.800000e+01, 3.200000e+01]]]]]]> : tensor<2x1x1x1x4x4xf32>
// CHECK: %[[X:.+]] = graph.to_blocked %{{.+}} : tensor<1x8x4x4xf32> -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.blocked_conv %[[X]], %[[W]] activation none {{.*}} : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<2x1x1x1x4x4xf32>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
func.func @grouped(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], [[[5.0]], [[6.0]], [[7.0]], [[8.0]]], [[[9.0]], [[10.0]], [[11.0]], [[12.0]]], [[[13.0]], [[14.0]], [[15.0]], [[16.0]]], [[[17.0]], [[18.0]], [[19.0]], [[20.0]]], [[[21.0]], [[22.0]], [[23.0]], [[24.0]]], [[[25.0]], [[26.0]], [[27.0]], [[28.0]]], [[[29.0]], [[30.0]], [[31.0]], [[32.0]]]]> : tensor<8x4x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
}

// -----

// A 3x3 convolution of four groups of 2 channels and 2 filters merges its
// groups two at a time into two groups of one block of 4, each weight
// block zero between the two groups it holds: the first tap's block (as
// hex floats) has filters 0 and 1 read channels 0 and 1 (ones), filters 2
// and 3 channels 2 and 3.
// CHECK-LABEL: func.func @grouped_merged
// CHECK: %[[W:.+]] = graph.constant dense<"0x0000803F0000803F00000000000000000000803F0000803F000000000000000000000000000000000000803F0000803F00000000000000000000803F0000803F{{[0-9A-F]+}}"> : tensor<2x1x3x3x4x4xf32>
// CHECK: graph.blocked_conv %{{.+}}, %[[W]] activation none {{.*}} : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<2x1x3x3x4x4xf32>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
func.func @grouped_merged(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<1.0> : tensor<8x2x3x3xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4} : (tensor<1x8x4x4xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x4x4xf32>
  return %0 : tensor<1x8x4x4xf32>
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

// -----

// A depthwise convolution (group = channels = filters) between two blocked
// convolutions: its weight [6, 1, 3, 3] becomes [2, 3, 3, 4] (channel
// cb * 4 + i at [cb, y, x, i], zero padded), its bias [2, 4], and no
// conversion sits between the three.
// CHECK-LABEL: func.func @depthwise
// CHECK-DAG: %[[W:.+]] = graph.constant dense<{{.*}}> : tensor<2x3x3x4xf32>
// CHECK-DAG: %[[B:.+]] = graph.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<2x4xf32>
// CHECK: %[[C0:.+]] = graph.blocked_conv
// CHECK-NOT: graph.from_blocked
// CHECK: %[[D:.+]] = graph.blocked_depthwise_conv %[[C0]], %[[W]], %[[B]] activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9x4xf32, #graph.blocked<c = 4>>, tensor<2x3x3x4xf32>, tensor<2x4xf32>) -> tensor<1x2x5x5x4xf32, #graph.blocked<c = 4>>
// CHECK-NOT: graph.to_blocked
// CHECK: %[[C1:.+]] = graph.blocked_conv %[[D]]
// CHECK: graph.from_blocked %[[C1]]
func.func @depthwise(%x: tensor<1x6x9x9xf32>) -> tensor<1x6x5x5xf32> {
  %w0 = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %wd = graph.constant dense<0.25> : tensor<6x1x3x3xf32>
  %b = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %0 = graph.conv %x, %w0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x9x9xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x9x9xf32>
  %1 = graph.fused_conv %0, %wd, %b activation clip {activation_params = array<f32: 0.0, 6.0>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 6} : (tensor<1x6x9x9xf32>, tensor<6x1x3x3xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  %2 = graph.conv %1, %w0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x5x5xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x5x5xf32>
  return %2 : tensor<1x6x5x5xf32>
}

// -----

// The depthwise weight layout: channel 1's filter (2.0) lands at
// [0, 0, 0, 1], channel 4's (5.0) at [1, 0, 0, 0].
// CHECK-LABEL: func.func @depthwise_weight_layout
// CHECK: graph.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]], {{\[\[\[}}5.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<2x1x1x4xf32>
// CHECK: graph.blocked_depthwise_conv
func.func @depthwise_weight_layout(%x: tensor<1x5x4x4xf32>) -> tensor<1x5x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]], [[[5.0]]]]> : tensor<5x1x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 5} : (tensor<1x5x4x4xf32>, tensor<5x1x1x1xf32>) -> tensor<1x5x4x4xf32>
  return %0 : tensor<1x5x4x4xf32>
}

// -----

// Not depthwise, and 1x1: two groups of two channels, and a channel
// multiplier of 2 (8 filters of 4 channels in 4 groups). Their groups would
// have to be merged into blocks, multiplying the work of products that need
// no im2col copy: both keep NCHW.
// CHECK-LABEL: func.func @grouped_1x1_narrow
// CHECK-NOT: graph.blocked_
// CHECK: graph.conv {{.*}}group = 2
// CHECK: graph.conv {{.*}}group = 4
func.func @grouped_1x1_narrow(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x8x8x8xf32>) {
  %w0 = graph.constant dense<1.0> : tensor<4x2x1x1xf32>
  %w1 = graph.constant dense<1.0> : tensor<8x1x1x1xf32>
  %0 = graph.conv %x, %w0 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4} : (tensor<1x4x8x8xf32>, tensor<8x1x1x1xf32>) -> tensor<1x8x8x8xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x8x8x8xf32>
}

// -----

// Pools of a blocked tensor take the layout: the average pool keeps its
// attributes, and the global pools become pools over the whole 4 x 4, so
// the conversions move after them.
// CHECK-LABEL: func.func @pools
// CHECK: %[[C:.+]] = graph.blocked_conv
// CHECK: %[[A:.+]] = graph.blocked_average_pool %[[C]] {ceil_mode = true, count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x5x5x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[GA:.+]] = graph.blocked_average_pool %[[A]] {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 5, 5>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.from_blocked %[[GA]] : {{.*}} -> tensor<1x6x1x1xf32>
// CHECK: %[[GM:.+]] = graph.blocked_max_pool %[[C]] {ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 8, 8>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.from_blocked %[[GM]] : {{.*}} -> tensor<1x6x1x1xf32>
func.func @pools(%x: tensor<1x6x8x8xf32>) -> (tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x8x8xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x8x8xf32>
  %1 = graph.average_pool %0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x6x8x8xf32>) -> tensor<1x6x5x5xf32>
  %2 = graph.global_average_pool %1 : (tensor<1x6x5x5xf32>) -> tensor<1x6x1x1xf32>
  %3 = graph.global_max_pool %0 : (tensor<1x6x8x8xf32>) -> tensor<1x6x1x1xf32>
  return %2, %3 : tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>
}

// -----

// Pools and elementwise ops of NCHW tensors (not from a blocked op) are
// not rewritten: that would add conversions, not remove them.
// CHECK-LABEL: func.func @nchw_unchanged
// CHECK-NOT: graph.to_blocked
// CHECK-NOT: graph.blocked_
// CHECK: graph.average_pool
// CHECK: graph.global_average_pool
// CHECK: graph.relu
// CHECK: graph.add
func.func @nchw_unchanged(%x: tensor<1x6x8x8xf32>) -> (tensor<1x6x1x1xf32>, tensor<1x6x8x8xf32>) {
  %0 = graph.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x6x8x8xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.global_average_pool %0 : (tensor<1x6x4x4xf32>) -> tensor<1x6x1x1xf32>
  %2 = graph.relu %x : tensor<1x6x8x8xf32>
  %3 = graph.add %2, %x : (tensor<1x6x8x8xf32>, tensor<1x6x8x8xf32>) -> tensor<1x6x8x8xf32>
  return %1, %3 : tensor<1x6x1x1xf32>, tensor<1x6x8x8xf32>
}

// -----

// Elementwise ops of blocked tensors compute on them: a unary op, a binary
// op of two blocked tensors, one with a per-channel constant [1, 6, 1, 1]
// (re-laid out to [2, 1, 1, 4], zero padded) and one with a scalar.
// CHECK-LABEL: func.func @elementwise
// CHECK-DAG: %[[S:.+]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]], {{\[\[\[}}5.000000e+00, 6.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<2x1x1x4xf32>
// CHECK-DAG: %[[H:.+]] = graph.constant dense<6.000000e+00> : tensor<f32>
// CHECK: %[[A:.+]] = graph.blocked_conv
// CHECK: %[[B:.+]] = graph.blocked_conv
// CHECK: %[[T:.+]] = graph.tanh %[[A]] : tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[M:.+]] = graph.mul %[[T]], %[[S]] : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<2x1x1x4xf32>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[D:.+]] = graph.sub %[[M]], %[[B]] : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[N:.+]] = graph.min %[[D]], %[[H]] : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[C:.+]] = graph.blocked_conv %[[N]]
// CHECK: graph.from_blocked %[[C]]
func.func @elementwise(%x: tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %s = graph.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]]]> : tensor<6x1x1xf32>
  %h = graph.constant dense<6.0> : tensor<f32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.conv %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %2 = graph.tanh %0 : tensor<1x6x4x4xf32>
  %3 = graph.mul %2, %s : (tensor<1x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %4 = graph.sub %3, %1 : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %5 = graph.min %4, %h : (tensor<1x6x4x4xf32>, tensor<f32>) -> tensor<1x6x4x4xf32>
  %6 = graph.conv %5, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %6 : tensor<1x6x4x4xf32>
}

// -----

// Kept NCHW: ops that could make the padding channels infinite or NaN
// (log, reciprocal, div), a binary op with an NCHW tensor operand, and a
// broadcast that is not per channel.
// CHECK-LABEL: func.func @elementwise_refused
// CHECK: %[[A:.+]] = graph.blocked_conv
// CHECK: %[[Y:.+]] = graph.from_blocked %[[A]]
// CHECK-NOT: graph.to_blocked
// CHECK: graph.log %[[Y]] : tensor<1x6x4x4xf32>
// CHECK: graph.reciprocal %[[Y]] : tensor<1x6x4x4xf32>
// CHECK: graph.div %[[Y]], %[[Y]] : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>)
// CHECK: graph.add %[[Y]], %{{.+}} : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>)
// CHECK: graph.mul %[[Y]], %{{.+}} : (tensor<1x6x4x4xf32>, tensor<4xf32>)
func.func @elementwise_refused(%x: tensor<1x6x4x4xf32>, %r: tensor<1x6x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %v = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.log %0 : tensor<1x6x4x4xf32>
  %2 = graph.reciprocal %0 : tensor<1x6x4x4xf32>
  %3 = graph.div %0, %0 : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %4 = graph.add %0, %r : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %5 = graph.mul %0, %v : (tensor<1x6x4x4xf32>, tensor<4xf32>) -> tensor<1x6x4x4xf32>
  return %1, %2, %3, %4, %5 : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>
}

// -----

// A channel concat of blocked tensors of whole blocks (8 and 4 channels in
// blocks of 4) concatenates their blocks; with 6 channels (a block and a
// half, its padding would land between the inputs) it keeps NCHW.
// CHECK-LABEL: func.func @concat
// CHECK: %[[A:.+]] = graph.blocked_conv {{.*}} -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[B:.+]] = graph.blocked_conv {{.*}} -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[K:.+]] = graph.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x3x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.from_blocked %[[K]] : {{.*}} -> tensor<1x12x4x4xf32>
// CHECK: %[[E:.+]] = graph.blocked_conv {{.*}} -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[EY:.+]] = graph.from_blocked %[[E]] : {{.*}} -> tensor<1x6x4x4xf32>
// CHECK: graph.concat %{{.+}}, %[[EY]] {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x14x4x4xf32>
func.func @concat(%x: tensor<1x4x4x4xf32>) -> (tensor<1x12x4x4xf32>, tensor<1x14x4x4xf32>) {
  %w8 = graph.constant dense<0.5> : tensor<8x4x1x1xf32>
  %w4 = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %w6 = graph.constant dense<0.5> : tensor<6x4x1x1xf32>
  %0 = graph.conv %x, %w8 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %1 = graph.conv %x, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %2 = graph.concat %0, %1 {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x12x4x4xf32>
  %3 = graph.conv %x, %w6 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  %4 = graph.concat %0, %3 {axis = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x14x4x4xf32>
  return %2, %4 : tensor<1x12x4x4xf32>, tensor<1x14x4x4xf32>
}

// -----

// A BatchNorm of a blocked tensor (after a concat, where no convolution
// absorbs it) is x * s + t with s = scale / sqrt(var + epsilon) = 0.5 and
// t = bias - mean * s = 1 - 2 * 0.5 = 0, re-laid out to [C1, 1, 1, c]; a
// per-channel operand behind a reshape of a constant is read through it.
// CHECK-LABEL: func.func @batch_norm
// CHECK-DAG: %[[S:.+]] = graph.constant dense<5.000000e-01> : tensor<1x1x1x4xf32>
// CHECK-DAG: %[[T:.+]] = graph.constant dense<0.000000e+00> : tensor<1x1x1x4xf32>
// CHECK-DAG: %[[R:.+]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>
// CHECK: %[[C:.+]] = graph.blocked_conv
// CHECK: %[[M:.+]] = graph.mul %[[C]], %[[S]] : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x4xf32>)
// CHECK: %[[A:.+]] = graph.add %[[M]], %[[T]]
// CHECK: %[[N:.+]] = graph.mul %[[A]], %[[R]]
// CHECK: graph.blocked_conv %[[N]]
func.func @batch_norm(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x1x1xf32>
  %scale = graph.constant dense<1.0> : tensor<4xf32>
  %bias = graph.constant dense<1.0> : tensor<4xf32>
  %mean = graph.constant dense<2.0> : tensor<4xf32>
  %var = graph.constant dense<4.0> : tensor<4xf32>
  %v = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %bias, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %r = graph.reshape %v {allow_zero = false, shape = array<i64: 4, 1, 1>} : (tensor<4xf32>) -> tensor<4x1x1xf32>
  %2 = graph.mul %1, %r : (tensor<1x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %3 = graph.conv %2, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  return %3 : tensor<1x4x4x4xf32>
}

// -----

// A per-channel constant beside an NCHW operand that is not blocked: the op
// stays as it is, and nothing is created for it (a pattern that created the
// re-laid-out constant and then failed kept the rewrite driver from ever
// converging, which failed the pass).
// CHECK-LABEL: func.func @per_channel_constant_then_nchw
// CHECK: %[[M:.+]] = graph.constant dense<{{.+}}> : tensor<6x1x1xf32>
// CHECK: graph.sub %[[M]], %{{.+}} : (tensor<6x1x1xf32>, tensor<1x6x4x4xf32>)
func.func @per_channel_constant_then_nchw(%x: tensor<1x6x4x4xf32>, %r: tensor<1x6x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %m = graph.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]]]> : tensor<6x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.sub %m, %r : (tensor<6x1x1xf32>, tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  return %0, %1 : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>
}

// -----

// Round (a requantisation between two convolutions) takes the layout: it
// maps the padding channels' zeros to zeros.
// CHECK-LABEL: func.func @round_between_convolutions
// CHECK: %[[A:.+]] = graph.blocked_conv
// CHECK: %[[R:.+]] = graph.round %[[A]] : tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.blocked_conv %[[R]]
func.func @round_between_convolutions(%x: tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.round %0 : tensor<1x6x4x4xf32>
  %2 = graph.conv %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  return %2 : tensor<1x6x4x4xf32>
}

// -----

// A QuantizeLinear's division by its scale (one nonzero constant) takes the
// layout: the padding channels stay 0 / s = 0. By a per-channel constant or
// by zero it keeps NCHW (the padding would make 0 / 0).
// CHECK-LABEL: func.func @quantize_division
// CHECK: %[[A:.+]] = graph.blocked_conv
// CHECK: %[[Y:.+]] = graph.from_blocked %[[A]]
// CHECK: graph.div %[[A]], %{{.+}} : (tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>, tensor<f32>)
// CHECK: graph.div %[[Y]], %{{.+}} : (tensor<1x6x4x4xf32>, tensor<6x1x1xf32>)
// CHECK: graph.div %[[Y]], %{{.+}} : (tensor<1x6x4x4xf32>, tensor<f32>)
func.func @quantize_division(%x: tensor<1x6x4x4xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<6x6x1x1xf32>
  %s = graph.constant dense<0.02> : tensor<f32>
  %c = graph.constant dense<0.5> : tensor<6x1x1xf32>
  %z = graph.constant dense<0.0> : tensor<f32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x6x4x4xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %1 = graph.div %0, %s : (tensor<1x6x4x4xf32>, tensor<f32>) -> tensor<1x6x4x4xf32>
  %2 = graph.div %0, %c : (tensor<1x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %3 = graph.div %0, %z : (tensor<1x6x4x4xf32>, tensor<f32>) -> tensor<1x6x4x4xf32>
  return %1, %2, %3 : tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>
}

// -----

// A squeeze-and-excitation scale: the pooled and gated channels [1, C, 1, 1]
// times the feature map [1, C, H, W], both from blocked ops, broadcast the
// same way in the blocked layout: no conversion of the feature map.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK: %[[X:.+]] = graph.blocked_conv
// CHECK: %[[S:.+]] = graph.blocked_average_pool %[[X]]
// CHECK: %[[G:.+]] = graph.sigmoid %[[S]] : tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>
// CHECK: %[[M:.+]] = graph.mul %[[G]], %[[X]] : (tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>, tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x4x4x4xf32, #graph.blocked<c = 4>>
// CHECK: graph.blocked_conv %[[M]]
// CHECK-NOT: graph.to_blocked
func.func @squeeze_excitation(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %1 = graph.global_average_pool %0 : (tensor<1x8x4x4xf32>) -> tensor<1x8x1x1xf32>
  %2 = graph.sigmoid %1 : tensor<1x8x1x1xf32>
  %3 = graph.mul %2, %0 : (tensor<1x8x1x1xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %4 = graph.conv %3, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %4 : tensor<1x8x4x4xf32>
}
