// Every verifier and type inference error of the reduction family.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2 (axes must be in [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_sum %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_negative_axis(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_mean %x {axes = array<i64: -1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_axes_unsorted(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+2 {{axes [1,0] must be strictly increasing}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_max %x {axes = array<i64: 1, 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @reduce_wrong_result(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'graph.reduce_min' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.reduce_min %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_l2_int(%x: tensor<2x3xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.reduce_l2' op operand #0 must be ranked tensor of}}
  %0 = graph.reduce_l2 %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @softmax_no_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.softmax' op needs at least one axis}}
  %0 = graph.softmax %x {axes = array<i64>} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @log_softmax_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.log_softmax' op axis 3 is out of range for rank 2}}
  %0 = graph.log_softmax %x {axes = array<i64: 3>} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @hardmax_axes_repeated(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'graph.hardmax' op axes [1,1] must be strictly increasing}}
  %0 = graph.hardmax %x {axes = array<i64: 1, 1>} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @softmax_int(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'graph.softmax' op operand #0 must be ranked tensor of}}
  %0 = graph.softmax %x {axes = array<i64: 1>} : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

func.func @argmax_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.argmax %x {axis = 2 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @argmin_result_not_i64(%x: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'graph.argmin' op result #0 must be ranked tensor of 64-bit signless integer values}}
  %0 = graph.argmin %x {axis = 1 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @cumsum_axis_out_of_range(%x: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'graph.cumsum' op axis 1 is out of range for rank 1}}
  %0 = graph.cumsum %x {axis = 1 : i64, exclusive = false, reverse = false} : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Axes are normalised by the importer: a negative one is an error here.
func.func @cumsum_negative_axis(%x: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'graph.cumsum' op axis -1 is out of range for rank 1}}
  %0 = graph.cumsum %x {axis = -1 : i64, exclusive = false, reverse = false} : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @topk_k_too_large(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  // expected-error @+2 {{k = 4 is larger than dimension 1 of 'tensor<2x3xf32>' (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.topk %x {axis = 1 : i64, k = 4 : i64, largest = true, sorted = true} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %v, %i : tensor<2x4xf32>, tensor<2x4xi64>
}

// -----

func.func @topk_axis_out_of_range(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = graph.topk %x {axis = 2 : i64, k = 1 : i64, largest = true, sorted = true} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  return %v, %i : tensor<2x1xf32>, tensor<2x1xi64>
}

// -----

func.func @topk_negative_k(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>) {
  // expected-error @+1 {{'graph.topk' op attribute 'k' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %v, %i = graph.topk %x {axis = 1 : i64, k = -1 : i64, largest = true, sorted = true} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  return %v, %i : tensor<2x1xf32>, tensor<2x1xi64>
}

// -----

func.func @nms_bound_above_boxes(%b: tensor<1x4x4xf32>, %s: tensor<1x3x4xf32>, %m: tensor<i64>, %t: tensor<f32>) {
  // expected-error @+2 {{bound 5 is above the 4 boxes}}
  // expected-error @+1 {{failed to infer returned types}}
  %sel, %c = graph.non_max_suppression %b, %s, %m, %t {bound = 5 : i64, center_point_box = false} : (tensor<1x4x4xf32>, tensor<1x3x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<15x3xi64>, tensor<i64>)
  return
}

// -----

func.func @nms_boxes_not_4(%b: tensor<1x4x3xf32>, %s: tensor<1x3x4xf32>, %m: tensor<i64>, %t: tensor<f32>) {
  // expected-error @+2 {{must be batch x boxes x 4 and scores}}
  // expected-error @+1 {{failed to infer returned types}}
  %sel, %c = graph.non_max_suppression %b, %s, %m, %t {bound = 1 : i64, center_point_box = false} : (tensor<1x4x3xf32>, tensor<1x3x4xf32>, tensor<i64>, tensor<f32>) -> (tensor<3x3xi64>, tensor<i64>)
  return
}

// -----

func.func @unique_axis_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+2 {{axis 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %f, %i, %c, %k = graph.unique %x {axis = 1 : i64, sorted = true} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<i64>)
  return
}
