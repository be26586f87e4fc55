// Verifier and inference errors of the NN ops, with the values they name.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+2 {{input has 4 channels but weight expects 3 per group x 1 groups}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<6x3x3x3xf32>, %b: tensor<5xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+1 {{bias must have one element per filter (6), got 'tensor<5xf32>'}}
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<5xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<3x3x3x3xf32>) -> tensor<1x3x7x7xf32> {
  // expected-error @+2 {{input has 4 channels but weight has 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1} : (tensor<1x4x5x5xf32>, tensor<3x3x3x3xf32>) -> tensor<1x3x7x7xf32>
  return %0 : tensor<1x3x7x7xf32>
}

// -----

func.func @conv_transpose_group(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x9x7x7xf32> {
  // expected-error @+2 {{group 3 does not divide the number of channels 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.conv_transpose %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 3} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x9x7x7xf32>
  return %0 : tensor<1x9x7x7xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{contraction sizes differ: [2,3] x [4,5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) -> tensor<2x2x5xf32> {
  // expected-error @+2 {{batch dimensions of [2,2,3] and [3,3,5] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  return %0 : tensor<2x2x5xf32>
}

// -----

func.func @gemm_c(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<3xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{C of shape [3] does not broadcast to the result shape [2,5]}}
  %0 = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @pool_attrs(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{expected 2 kernel sizes, strides and dilations and 4 pads for 2 spatial dimensions, got 1, 2, 2 and 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_pads(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error @+2 {{pads [2,0,0,0] must be smaller than the kernel [2,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
  return %0 : tensor<1x3x5x5xf32>
}

// -----

func.func @pool_result(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32> {
  // expected-error @+2 {{'graph.max_pool' op inferred type(s) 'tensor<1x3x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x3x5x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x3x8x8xf32>) -> tensor<1x3x5x5xf32>
  return %0 : tensor<1x3x5x5xf32>
}

// -----

func.func @global_pool_rank(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{input must have rank >= 3 (N, C and at least one spatial dimension), got 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.global_average_pool %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>, %v: tensor<4xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{var must have one element per channel (3), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.batch_norm %x, %c, %c, %c, %v {epsilon = 1.0e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @instance_norm_type(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf16>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{scale element type 'f16' differs from the input's 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.instance_norm %x, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf16>, tensor<3xf16>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4x5xf32>, %s: tensor<4x5xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error @+2 {{scale or bias of shape [4,5] does not broadcast to the normalized shape [5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %s {axis = 3 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.layer_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @lrn_size(%x: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{attribute 'size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0 = graph.lrn %x {size = 0 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @fused_conv_params(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{activation clip takes 2 activation_params, got 1}}
  %0 = graph.fused_conv %x, %w activation clip {activation_params = array<f32: 6.0>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @fused_conv_clip_order(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{clip bounds are reversed: min 6.000000e+00 > max 0.000000e+00}}
  %0 = graph.fused_conv %x, %w activation clip {activation_params = array<f32: 6.0, 0.0>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @fused_conv_residual(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x1x1xf32>, %r: tensor<1x4x8x1xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{residual type 'tensor<1x4x8x1xf32>' differs from result type 'tensor<1x4x8x8xf32>'}}
  %0 = graph.fused_conv %x, %w residual %r activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<1x4x8x1xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @fused_matmul_bias(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<8xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{bias must have one element per column (32) of the result's element type, got 'tensor<8xf32>'}}
  %0 = graph.fused_matmul %a, %w, %b activation none : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<8xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @fused_matmul_activation(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'activation' [none, relu, clip, leaky_relu, sigmoid, tanh, hard_sigmoid, hard_swish, gelu, gelu_tanh]}}
  %0 = graph.fused_matmul %a, %w activation swish : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @recurrence_width(%p: tensor<5x2x24xf32>, %rt: tensor<8x32xf32>, %h: tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>) {
  // expected-error @+1 {{'graph.recurrence' op projected must be [5,2,8], not [5,2,24]}}
  %y, %lh = graph.recurrence rnn %p, %rt, %h {activations = ["tanh"], activation_alpha = array<f32: 0.0>, activation_beta = array<f32: 0.0>, reverse = false, linear_before_reset = false, input_forget = false} : (tensor<5x2x24xf32>, tensor<8x32xf32>, tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>)
  return %y, %lh : tensor<5x2x8xf32>, tensor<2x8xf32>
}

// -----

func.func @recurrence_activation(%p: tensor<5x2x24xf32>, %rt: tensor<8x24xf32>, %h: tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>) {
  // expected-error @+1 {{'graph.recurrence' op unknown activation "swish"}}
  %y, %lh = graph.recurrence gru %p, %rt, %h {activations = ["sigmoid", "swish"], activation_alpha = array<f32: 0.0, 0.0>, activation_beta = array<f32: 0.0, 0.0>, reverse = false, linear_before_reset = false, input_forget = false} : (tensor<5x2x24xf32>, tensor<8x24xf32>, tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>)
  return %y, %lh : tensor<5x2x8xf32>, tensor<2x8xf32>
}

// -----

func.func @recurrence_cell_state(%p: tensor<5x2x8xf32>, %rt: tensor<8x8xf32>, %h: tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>) {
  // expected-error @+1 {{'graph.recurrence' op initial_c is given exactly for lstm}}
  %y, %lh = graph.recurrence rnn %p, %rt, %h initial_c %h {activations = ["tanh"], activation_alpha = array<f32: 0.0>, activation_beta = array<f32: 0.0>, reverse = false, linear_before_reset = false, input_forget = false} : (tensor<5x2x8xf32>, tensor<8x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>)
  return %y, %lh : tensor<5x2x8xf32>, tensor<2x8xf32>
}

// -----

func.func @einsum_sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{letter 'j' has sizes 3 and 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @einsum_implicit(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{malformed equation 'ij' (expected letters, commas and '->')}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.einsum %a {equation = "ij"} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
