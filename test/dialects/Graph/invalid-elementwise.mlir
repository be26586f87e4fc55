// Every verifier and type inference error of the elementwise graph ops.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @max_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{operand shapes [2,3] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.max %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @min_element_types(%a: tensor<2xi32>, %b: tensor<2xi64>) -> tensor<2xi32> {
  // expected-error @+2 {{operands have different element types: 'i32' and 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.min %a, %b : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @pow_no_broadcast(%a: tensor<3xf32>, %b: tensor<2xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{operand shapes [3] and [2] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pow %a, %b : (tensor<3xf32>, tensor<2xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @pow_result_type(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xf16> {
  // expected-error @+2 {{'graph.pow' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<3xf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.pow %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

func.func @where_no_broadcast(%c: tensor<2xi1>, %a: tensor<3xf32>, %b: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{operand shapes [2], [3] and [2] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<2xi1>, tensor<3xf32>, tensor<2xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_element_types(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf64>) -> tensor<2xf32> {
  // expected-error @+2 {{operands have different element types: 'f32' and 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.where %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xf64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @where_condition(%c: tensor<2xf32>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.where' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = graph.where %c, %a, %a : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @equal_result(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.equal' op result #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = graph.equal %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @less_no_broadcast(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xi1> {
  // expected-error @+2 {{operand shapes [2] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = graph.less %a, %b : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @and_float(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.and' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<2xf32>'}}
  %0 = graph.and %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @bitwise_and_bool(%a: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.bitwise_and' op operand #0 must be ranked tensor of 8-bit signless integer or 16-bit signless integer}}
  %0 = graph.bitwise_and %a, %a : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @shift_float(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'graph.shift_left' op operand #0 must be ranked tensor of 8-bit signless integer}}
  %0 = graph.shift_left %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @add_bool(%a: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'graph.add' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer}}
  %0 = graph.add %a, %a : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @exp_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'graph.exp' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = graph.exp %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @neg_unsigned(%x: tensor<4xui8>) -> tensor<4xui8> {
  // expected-error @+1 {{'graph.neg' op operand #0 must be ranked tensor of}}
  %0 = graph.neg %x : tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

func.func @not_int(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error @+1 {{'graph.not' op operand #0 must be ranked tensor of 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = graph.not %x : tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @leaky_relu_alpha(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.leaky_relu' op requires attribute 'alpha'}}
  %0 = graph.leaky_relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @is_nan_int(%x: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{'graph.is_nan' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = graph.is_nan %x : (tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) -> tensor<5xi32> {
  // expected-error @+1 {{'graph.cast' op requires the same shape for all operands and results}}
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<5xi32>
  return %0 : tensor<5xi32>
}

// -----

func.func @cast_bad_round_mode(%x: tensor<4xf32>) -> tensor<4xf8E8M0FNU> {
  // expected-error @+1 {{round_mode must be "up", "down" or "nearest", got "zero"}}
  %0 = graph.cast %x {round_mode = "zero"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  return %0 : tensor<4xf8E8M0FNU>
}

// -----

func.func @narrow_types_only_cast(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %0 = graph.add %x, %x : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}
