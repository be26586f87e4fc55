// Verifier errors of the blocked layout and its ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @block_zero(%x: tensor<1x1x4x4x0xf32, #graph.blocked<c = 0>>) {
  // expected-error @-1 {{block size c must be positive, got 0}}
  return
}

// -----

func.func @no_encoding(%x: tensor<1x16x4x4xf32>) -> tensor<1x1x4x4x16xf32> {
  // expected-error @+1 {{the blocked tensor must have the #graph.blocked encoding}}
  %0 = graph.to_blocked %x : tensor<1x16x4x4xf32> -> tensor<1x1x4x4x16xf32>
  return %0 : tensor<1x1x4x4x16xf32>
}

// -----

func.func @inner_dim(%x: tensor<1x16x4x4xf32>) -> tensor<1x2x4x4x8xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{the blocked tensor has innermost dimension 8 but block size 16}}
  %0 = graph.to_blocked %x : tensor<1x16x4x4xf32> -> tensor<1x2x4x4x8xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x2x4x4x8xf32, #graph.blocked<c = 16>>
}

// -----

func.func @block_count(%x: tensor<1x17x4x4xf32>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{'tensor<1x17x4x4xf32>' in blocks of 16 is not 'tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>'}}
  %0 = graph.to_blocked %x : tensor<1x17x4x4xf32> -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @from_spatial(%y: tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x16x4x5xf32> {
  // expected-error @+1 {{in blocks of 16 is not}}
  %0 = graph.from_blocked %y : tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x16x4x5xf32>
  return %0 : tensor<1x16x4x5xf32>
}

// -----

func.func @conv_weight(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{weight's 1 input channel blocks per group must divide the input's 2 into groups that divide the 1 filter blocks}}
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @conv_weight_block(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<1x2x3x3x8x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{weight must be K1 x C1 x kh x kw x 16 x 16}}
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x2x3x3x8x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @conv_layouts(%x: tensor<1x2x8x8x8xf32, #graph.blocked<c = 8>>, %w: tensor<1x2x3x3x8x8xf32>) -> tensor<1x1x8x8x8xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{result has innermost dimension 8 but block size 16}}
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x8xf32, #graph.blocked<c = 8>>, tensor<1x2x3x3x8x8xf32>) -> tensor<1x1x8x8x8xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x8xf32, #graph.blocked<c = 16>>
}

// -----

func.func @conv_spatial(%x: tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{result spatial dimension 0 is 8, expected 6}}
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @conv_bias(%x: tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<1x1x1x1x16x16xf32>, %b: tensor<16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{bias must be K1 x 16, got 'tensor<16xf32>'}}
  %0 = graph.blocked_conv %x, %w, %b activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x1x1x1x16x16xf32>, tensor<16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @pool_channels(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{must differ only in their spatial dimensions}}
  %0 = graph.blocked_max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @depthwise_weight(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<2x3x3x8xf32>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{weight must be C1 x kh x kw x 16}}
  %0 = graph.blocked_depthwise_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<2x3x3x8xf32>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @depthwise_channels(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<1x3x3x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{must differ only in their spatial dimensions}}
  %0 = graph.blocked_depthwise_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<1x3x3x16xf32>) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @depthwise_spatial(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<2x3x3x16xf32>, %b: tensor<2x16xf32>) -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{result spatial dimension 0 is 4, expected 6}}
  %0 = graph.blocked_depthwise_conv %x, %w, %b activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<2x3x3x16xf32>, tensor<2x16xf32>) -> tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @depthwise_params(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, %w: tensor<2x1x1x16xf32>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{activation clip takes 2 parameters, got 0}}
  %0 = graph.blocked_depthwise_conv %x, %w activation clip {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>, tensor<2x1x1x16xf32>) -> tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @average_pool_spatial(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x3x4x16xf32, #graph.blocked<c = 16>> {
  // expected-error @+1 {{result spatial dimension 0 is 3, expected 4}}
  %0 = graph.blocked_average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x3x4x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x2x3x4x16xf32, #graph.blocked<c = 16>>
}

// -----

func.func @average_pool_layout(%x: tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>> {
  // expected-error @+1 {{must differ only in their spatial dimensions}}
  %0 = graph.blocked_average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x2x8x8x16xf32, #graph.blocked<c = 16>>) -> tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x4x4x4x8xf32, #graph.blocked<c = 8>>
}

// -----

// An elementwise op of blocked tensors has a blocked result.
func.func @elementwise_drops_layout(%a: tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x4x4x16xf32> {
  // expected-error @+2 {{'graph.add' op inferred type(s) 'tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>' are incompatible with return type(s) of operation 'tensor<1x2x4x4x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.add %a, %a : (tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>, tensor<1x2x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x2x4x4x16xf32>
  return %0 : tensor<1x2x4x4x16xf32>
}
