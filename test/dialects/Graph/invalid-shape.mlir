// Every verifier and inference error of the shape ops, with the values it names.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @reshape_two_minus_one(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+2 {{shape [-1,-1] has more than one -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: -1, -1>, allow_zero = false} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @reshape_bad_entry(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+2 {{shape entry 0 is -2; sizes must be >= -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: -2>, allow_zero = false} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @reshape_copy_past_rank(%x: tensor<6xf32>) -> tensor<6x1xf32> {
  // expected-error @+2 {{shape entry 1 is 0 (copy the input size) but the input [6] has rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 6, 0>, allow_zero = false} : (tensor<6xf32>) -> tensor<6x1xf32>
  return %0 : tensor<6x1xf32>
}

// -----

func.func @reshape_zero_and_minus_one(%x: tensor<2x3xf32>) -> tensor<0x6xf32> {
  // expected-error @+2 {{shape [0,-1] has both -1 and 0 with allow_zero set}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 0, -1>, allow_zero = true} : (tensor<2x3xf32>) -> tensor<0x6xf32>
  return %0 : tensor<0x6xf32>
}

// -----

func.func @reshape_not_multiple(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{cannot reshape [2,3] to [4,-1]: 6 elements are not a multiple of 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 4, -1>, allow_zero = false} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+2 {{cannot reshape [2,3] (6 elements) to [7] (7 elements)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reshape %x {shape = array<i64: 7>, allow_zero = false} : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{perm [1,1] is not a permutation of the 2 dimensions of the input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.transpose %x {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @concat_no_inputs() -> tensor<2xf32> {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_axis(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{axis 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a {axis = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_types(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{input 1 of type 'tensor<2xi64>' differs in element type or rank from input 0 of type 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{input 1 has shape [2,4], which differs from [2,3] outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @split_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.split %x {axis = 2 : i64, sizes = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @split_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{sizes [-1] must be one or more non-negative sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.split %x {axis = 0 : i64, sizes = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @split_sum(%x: tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>) {
  // expected-error @+2 {{sizes [1,2] add up to 3, not to the size 4 of axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = graph.split %x {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  return %0#0, %0#1 : tensor<1xf32>, tensor<2xf32>
}

// -----

func.func @slice_lengths(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{expected 2 starts, ends and steps, got 1, 2 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{step of dimension 0 is 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @slice_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{dimension 0 of size 4: start 0 and end 5 are out of range for step 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.slice %x {starts = array<i64: 0>, ends = array<i64: 5>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_axis(%d: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{axis 1 is out of range for data of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather %d, %i {axis = 1 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_elements_rank(%d: tensor<4x2xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{data of rank 2 and indices of rank 1 must have the same rank}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_elements %d, %i {axis = 0 : i64} : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_elements_axis(%d: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{axis 3 is out of range for data of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_elements %d, %i {axis = 3 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_nd_batch(%d: tensor<4x2xf32>, %i: tensor<4x1xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{batch_dims 2 must be less than the ranks of data (2) and indices (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_nd %d, %i {batch_dims = 2 : i64} : (tensor<4x2xf32>, tensor<4x1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_nd_depth(%d: tensor<4x2xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{the last dimension of indices [4,3] must be static and between 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<4x2xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @scatter_elements_shape(%d: tensor<4x2xf32>, %i: tensor<2x2xi64>, %u: tensor<2x1xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{indices [2,2] and updates [2,1] must have one shape, of the rank of data [4,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_elements %d, %i, %u reduction none {axis = 0 : i64} : (tensor<4x2xf32>, tensor<2x2xi64>, tensor<2x1xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @scatter_nd_updates(%d: tensor<4x2xf32>, %i: tensor<3x1xi64>, %u: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+2 {{updates [3,4] must have the shape [3,2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.scatter_nd %d, %i, %u reduction max : (tensor<4x2xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @expand_negative(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{shape [-3] has a negative size}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.expand %x {shape = array<i64: -3>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @expand_broadcast(%x: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{input shape [3] does not broadcast to [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.expand %x {shape = array<i64: 4>} : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @tile_repeats(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{repeats [1,1] must have one non-negative entry per dimension of the input [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.tile %x {repeats = array<i64: 1, 1>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @pad_count(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{expected 2 pads for rank 1, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x {pads = array<i64: 0>, mode = "constant", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @pad_crop(%x: tensor<3xf32>) -> tensor<0xf32> {
  // expected-error @+2 {{pads [-2,-2] remove more than the 3 entries of dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pad %x {pads = array<i64: -2, -2>, mode = "constant", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

func.func @pad_mode(%x: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.pad' op mode must be constant, reflect or edge, got 'wrap'}}
  %0 = graph.pad %x {pads = array<i64: 1, 0>, mode = "wrap", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @pad_reflect(%x: tensor<3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'graph.pad' op reflect padding of 3 needs more than 3 entries in dimension 0}}
  %0 = graph.pad %x {pads = array<i64: 3, 0>, mode = "reflect", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @trilu_rank(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'graph.trilu' op input must have rank >= 2, got 'tensor<3xf32>'}}
  %0 = graph.trilu %x {upper = true, k = 0 : i64} : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %v: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{values must be a tensor of 2 elements (off, on), got 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.one_hot %i, %v {depth = 4 : i64, axis = 1 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>, %v: tensor<2xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{axis 2 is out of range for indices of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.one_hot %i, %v {depth = 4 : i64, axis = 2 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @resize_counts(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+2 {{expected 2 sizes and scales, got 2 and 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 2.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_scales(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+2 {{sizes [1,4] must be non-negative and scales positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 0.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_mode(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'graph.resize' op mode must be nearest, linear or cubic, got 'lanczos'}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 2.0>, mode = "lanczos", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_transform(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'graph.resize' op coordinate_transformation_mode must be half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric or tf_crop_and_resize, got 'tf_half_pixel_for_nn'}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "tf_half_pixel_for_nn", nearest_mode = "floor"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_crop_without_roi(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'graph.resize' op tf_crop_and_resize, and it only, takes a roi of 2 x 2 values}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_nearest_mode(%x: tensor<1x2xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{'graph.resize' op nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, got 'round'}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "round"} : (tensor<1x2xf32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

func.func @resize_linear_int(%x: tensor<1x2xi64>) -> tensor<1x4xi64> {
  // expected-error @+1 {{'graph.resize' op linear resizing needs a float tensor, got 'tensor<1x2xi64>'}}
  %0 = graph.resize %x {sizes = array<i64: 1, 4>, scales = array<f64: 1.0, 2.0>, mode = "linear", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x2xi64>) -> tensor<1x4xi64>
  return %0 : tensor<1x4xi64>
}

// -----

func.func @prefix_axis(%x: tensor<4x8xf32>, %like: tensor<?xf32>) -> tensor<4x?xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.prefix %x, %like {axis = 2 : i64, like_axis = 0 : i64} : (tensor<4x8xf32>, tensor<?xf32>) -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @prefix_like_axis(%x: tensor<4x8xf32>, %like: tensor<?xf32>) -> tensor<4x?xf32> {
  // expected-error @+2 {{like_axis 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.prefix %x, %like {axis = 1 : i64, like_axis = 1 : i64} : (tensor<4x8xf32>, tensor<?xf32>) -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

func.func @prefix_too_long(%x: tensor<4x8xf32>, %like: tensor<9xf32>) -> tensor<4x9xf32> {
  // expected-error @+2 {{a prefix of 9 entries of an axis of 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.prefix %x, %like {axis = 1 : i64, like_axis = 0 : i64} : (tensor<4x8xf32>, tensor<9xf32>) -> tensor<4x9xf32>
  return %0 : tensor<4x9xf32>
}

// -----

func.func @check_size_of_a_vector(%n: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{checks a 0-D i64 tensor, not 'tensor<2xi64>'}}
  %0 = graph.check_size %n in [0, 4] {what = "size"} : tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @check_size_empty_range(%n: tensor<i64>) -> tensor<i64> {
  // expected-error @+1 {{has an empty range [4, 0]}}
  %0 = graph.check_size %n in [4, 0] {what = "size"} : tensor<i64>
  return %0 : tensor<i64>
}
