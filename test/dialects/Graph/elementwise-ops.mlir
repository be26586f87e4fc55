// Round trip of every elementwise graph op: print, parse the printed form,
// print again.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
func.func @add(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: graph.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sub
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
func.func @sub(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: graph.sub %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi32>, %[[B:.+]]: tensor<3xi32>)
func.func @mul(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> tensor<2x3xi32> {
  // CHECK: graph.mul %[[A]], %[[B]] : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %0 = graph.mul %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xui8>, %[[B:.+]]: tensor<3xui8>)
func.func @div(%a: tensor<2x3xui8>, %b: tensor<3xui8>) -> tensor<2x3xui8> {
  // CHECK: graph.div %[[A]], %[[B]] : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %0 = graph.div %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

// CHECK-LABEL: func.func @max
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
func.func @max(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: graph.max %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.max %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @min
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi64>, %[[B:.+]]: tensor<3xi64>)
func.func @min(%a: tensor<2x3xi64>, %b: tensor<3xi64>) -> tensor<2x3xi64> {
  // CHECK: graph.min %[[A]], %[[B]] : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %0 = graph.min %a, %b : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @prelu
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<3xf32>)
func.func @prelu(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // CHECK: graph.prelu %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = graph.prelu %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @shift_left
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xui32>, %[[B:.+]]: tensor<3xui32>)
func.func @shift_left(%a: tensor<2x3xui32>, %b: tensor<3xui32>) -> tensor<2x3xui32> {
  // CHECK: graph.shift_left %[[A]], %[[B]] : (tensor<2x3xui32>, tensor<3xui32>) -> tensor<2x3xui32>
  %0 = graph.shift_left %a, %b : (tensor<2x3xui32>, tensor<3xui32>) -> tensor<2x3xui32>
  return %0 : tensor<2x3xui32>
}

// -----

// CHECK-LABEL: func.func @shift_right
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xui8>, %[[B:.+]]: tensor<3xui8>)
func.func @shift_right(%a: tensor<2x3xui8>, %b: tensor<3xui8>) -> tensor<2x3xui8> {
  // CHECK: graph.shift_right %[[A]], %[[B]] : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  %0 = graph.shift_right %a, %b : (tensor<2x3xui8>, tensor<3xui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

// CHECK-LABEL: func.func @and
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi1>, %[[B:.+]]: tensor<3xi1>)
func.func @and(%a: tensor<2x3xi1>, %b: tensor<3xi1>) -> tensor<2x3xi1> {
  // CHECK: graph.and %[[A]], %[[B]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %0 = graph.and %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @or
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi1>, %[[B:.+]]: tensor<3xi1>)
func.func @or(%a: tensor<2x3xi1>, %b: tensor<3xi1>) -> tensor<2x3xi1> {
  // CHECK: graph.or %[[A]], %[[B]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %0 = graph.or %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @xor
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi1>, %[[B:.+]]: tensor<3xi1>)
func.func @xor(%a: tensor<2x3xi1>, %b: tensor<3xi1>) -> tensor<2x3xi1> {
  // CHECK: graph.xor %[[A]], %[[B]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %0 = graph.xor %a, %b : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @bitwise_and
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi32>, %[[B:.+]]: tensor<3xi32>)
func.func @bitwise_and(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> tensor<2x3xi32> {
  // CHECK: graph.bitwise_and %[[A]], %[[B]] : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %0 = graph.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func.func @bitwise_or
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xui16>, %[[B:.+]]: tensor<3xui16>)
func.func @bitwise_or(%a: tensor<2x3xui16>, %b: tensor<3xui16>) -> tensor<2x3xui16> {
  // CHECK: graph.bitwise_or %[[A]], %[[B]] : (tensor<2x3xui16>, tensor<3xui16>) -> tensor<2x3xui16>
  %0 = graph.bitwise_or %a, %b : (tensor<2x3xui16>, tensor<3xui16>) -> tensor<2x3xui16>
  return %0 : tensor<2x3xui16>
}

// -----

// CHECK-LABEL: func.func @bitwise_xor
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xi8>, %[[B:.+]]: tensor<3xi8>)
func.func @bitwise_xor(%a: tensor<2x3xi8>, %b: tensor<3xi8>) -> tensor<2x3xi8> {
  // CHECK: graph.bitwise_xor %[[A]], %[[B]] : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
  %0 = graph.bitwise_xor %a, %b : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}

// -----

// CHECK-LABEL: func.func @mod
func.func @mod(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>) {
  // CHECK: graph.mod %{{.+}}, %{{.+}} {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %0 = graph.mod %a, %b {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: graph.mod %{{.+}}, %{{.+}} {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mod %c, %c {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xi32>, tensor<4xf32>
}

// -----

// The exponent may have another element type than the base.
// CHECK-LABEL: func.func @pow
func.func @pow(%a: tensor<2x3xf32>, %e: tensor<i64>, %f: tensor<3xf16>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: graph.pow %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  %0 = graph.pow %a, %e : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  // CHECK: graph.pow %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  %1 = graph.pow %a, %f : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @equal
func.func @equal(%a: tensor<2x1xi64>, %b: tensor<3xi64>) -> tensor<2x3xi1> {
  // CHECK: graph.equal %{{.+}}, %{{.+}} : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %0 = graph.equal %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @less
func.func @less(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  // CHECK: graph.less %{{.+}}, %{{.+}} : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %0 = graph.less %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @less_equal
func.func @less_equal(%a: tensor<2x1xui8>, %b: tensor<3xui8>) -> tensor<2x3xi1> {
  // CHECK: graph.less_equal %{{.+}}, %{{.+}} : (tensor<2x1xui8>, tensor<3xui8>) -> tensor<2x3xi1>
  %0 = graph.less_equal %a, %b : (tensor<2x1xui8>, tensor<3xui8>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @greater
func.func @greater(%a: tensor<2x1xf16>, %b: tensor<3xf16>) -> tensor<2x3xi1> {
  // CHECK: graph.greater %{{.+}}, %{{.+}} : (tensor<2x1xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  %0 = graph.greater %a, %b : (tensor<2x1xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @greater_equal
func.func @greater_equal(%a: tensor<2x1xi1>, %b: tensor<3xi1>) -> tensor<2x3xi1> {
  // CHECK: graph.greater_equal %{{.+}}, %{{.+}} : (tensor<2x1xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %0 = graph.greater_equal %a, %b : (tensor<2x1xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @where
func.func @where(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  // CHECK: graph.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %0 = graph.where %c, %a, %b : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @unary_float
func.func @unary_float(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  // CHECK: graph.exp %{{.+}} : tensor<2x?xf32>
  %0 = graph.exp %x : tensor<2x?xf32>
  // CHECK: graph.log %{{.+}} : tensor<2x?xf32>
  %1 = graph.log %0 : tensor<2x?xf32>
  // CHECK: graph.sqrt %{{.+}} : tensor<2x?xf32>
  %2 = graph.sqrt %1 : tensor<2x?xf32>
  // CHECK: graph.reciprocal %{{.+}} : tensor<2x?xf32>
  %3 = graph.reciprocal %2 : tensor<2x?xf32>
  // CHECK: graph.floor %{{.+}} : tensor<2x?xf32>
  %4 = graph.floor %3 : tensor<2x?xf32>
  // CHECK: graph.ceil %{{.+}} : tensor<2x?xf32>
  %5 = graph.ceil %4 : tensor<2x?xf32>
  // CHECK: graph.round %{{.+}} : tensor<2x?xf32>
  %6 = graph.round %5 : tensor<2x?xf32>
  // CHECK: graph.sin %{{.+}} : tensor<2x?xf32>
  %7 = graph.sin %6 : tensor<2x?xf32>
  // CHECK: graph.cos %{{.+}} : tensor<2x?xf32>
  %8 = graph.cos %7 : tensor<2x?xf32>
  // CHECK: graph.tan %{{.+}} : tensor<2x?xf32>
  %9 = graph.tan %8 : tensor<2x?xf32>
  // CHECK: graph.asin %{{.+}} : tensor<2x?xf32>
  %10 = graph.asin %9 : tensor<2x?xf32>
  // CHECK: graph.acos %{{.+}} : tensor<2x?xf32>
  %11 = graph.acos %10 : tensor<2x?xf32>
  // CHECK: graph.atan %{{.+}} : tensor<2x?xf32>
  %12 = graph.atan %11 : tensor<2x?xf32>
  // CHECK: graph.sinh %{{.+}} : tensor<2x?xf32>
  %13 = graph.sinh %12 : tensor<2x?xf32>
  // CHECK: graph.cosh %{{.+}} : tensor<2x?xf32>
  %14 = graph.cosh %13 : tensor<2x?xf32>
  // CHECK: graph.asinh %{{.+}} : tensor<2x?xf32>
  %15 = graph.asinh %14 : tensor<2x?xf32>
  // CHECK: graph.acosh %{{.+}} : tensor<2x?xf32>
  %16 = graph.acosh %15 : tensor<2x?xf32>
  // CHECK: graph.atanh %{{.+}} : tensor<2x?xf32>
  %17 = graph.atanh %16 : tensor<2x?xf32>
  // CHECK: graph.erf %{{.+}} : tensor<2x?xf32>
  %18 = graph.erf %17 : tensor<2x?xf32>
  // CHECK: graph.tanh %{{.+}} : tensor<2x?xf32>
  %19 = graph.tanh %18 : tensor<2x?xf32>
  // CHECK: graph.sigmoid %{{.+}} : tensor<2x?xf32>
  %20 = graph.sigmoid %19 : tensor<2x?xf32>
  // CHECK: graph.hard_swish %{{.+}} : tensor<2x?xf32>
  %21 = graph.hard_swish %20 : tensor<2x?xf32>
  // CHECK: graph.softplus %{{.+}} : tensor<2x?xf32>
  %22 = graph.softplus %21 : tensor<2x?xf32>
  // CHECK: graph.softsign %{{.+}} : tensor<2x?xf32>
  %23 = graph.softsign %22 : tensor<2x?xf32>
  // CHECK: graph.mish %{{.+}} : tensor<2x?xf32>
  %24 = graph.mish %23 : tensor<2x?xf32>
  return %24 : tensor<2x?xf32>
}

// -----

// Abs, Neg, Sign and Relu take integers too; Not booleans.
// CHECK-LABEL: func.func @unary_numbers
func.func @unary_numbers(%i: tensor<4xi32>, %u: tensor<4xui8>, %h: tensor<4xf16>, %p: tensor<4xi1>, %q: tensor<4xi16>) -> (tensor<4xi32>, tensor<4xui8>, tensor<4xf16>, tensor<4xi1>, tensor<4xi16>) {
  // CHECK: graph.abs %{{.+}} : tensor<4xi32>
  %0 = graph.abs %i : tensor<4xi32>
  // CHECK: graph.neg %{{.+}} : tensor<4xi32>
  %1 = graph.neg %0 : tensor<4xi32>
  // CHECK: graph.sign %{{.+}} : tensor<4xi32>
  %2 = graph.sign %1 : tensor<4xi32>
  // CHECK: graph.relu %{{.+}} : tensor<4xi32>
  %3 = graph.relu %2 : tensor<4xi32>
  // CHECK: graph.abs %{{.+}} : tensor<4xui8>
  %4 = graph.abs %u : tensor<4xui8>
  // CHECK: graph.sign %{{.+}} : tensor<4xui8>
  %5 = graph.sign %4 : tensor<4xui8>
  // CHECK: graph.relu %{{.+}} : tensor<4xf16>
  %6 = graph.relu %h : tensor<4xf16>
  // CHECK: graph.not %{{.+}} : tensor<4xi1>
  %7 = graph.not %p : tensor<4xi1>
  // CHECK: graph.bitwise_not %{{.+}} : tensor<4xi16>
  %8 = graph.bitwise_not %q : tensor<4xi16>
  return %3, %5, %6, %7, %8 : tensor<4xi32>, tensor<4xui8>, tensor<4xf16>, tensor<4xi1>, tensor<4xi16>
}

// -----

// CHECK-LABEL: func.func @activations
func.func @activations(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  // CHECK: graph.leaky_relu %{{.+}} {alpha = 0.00999999977 : f32} : tensor<8xbf16>
  %0 = graph.leaky_relu %x {alpha = 0.00999999977 : f32} : tensor<8xbf16>
  // CHECK: graph.elu %{{.+}} {alpha = 1.000000e+00 : f32} : tensor<8xbf16>
  %1 = graph.elu %0 {alpha = 1.000000e+00 : f32} : tensor<8xbf16>
  // CHECK: graph.celu %{{.+}} {alpha = 2.000000e+00 : f32} : tensor<8xbf16>
  %2 = graph.celu %1 {alpha = 2.000000e+00 : f32} : tensor<8xbf16>
  // CHECK: graph.selu %{{.+}} {alpha = 1.500000e+00 : f32, gamma = 2.500000e+00 : f32} : tensor<8xbf16>
  %3 = graph.selu %2 {alpha = 1.500000e+00 : f32, gamma = 2.500000e+00 : f32} : tensor<8xbf16>
  // CHECK: graph.thresholded_relu %{{.+}} {alpha = 1.000000e+00 : f32} : tensor<8xbf16>
  %4 = graph.thresholded_relu %3 {alpha = 1.000000e+00 : f32} : tensor<8xbf16>
  // CHECK: graph.hard_sigmoid %{{.+}} {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<8xbf16>
  %5 = graph.hard_sigmoid %4 {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<8xbf16>
  // CHECK: graph.gelu %{{.+}} {tanh_approximation = true} : tensor<8xbf16>
  %6 = graph.gelu %5 {tanh_approximation = true} : tensor<8xbf16>
  // CHECK: graph.gelu %{{.+}} {tanh_approximation = false} : tensor<8xbf16>
  %7 = graph.gelu %6 {tanh_approximation = false} : tensor<8xbf16>
  return %7 : tensor<8xbf16>
}

// -----

// CHECK-LABEL: func.func @float_class
func.func @float_class(%x: tensor<4xf64>) -> (tensor<4xi1>, tensor<4xi1>) {
  // CHECK: graph.is_nan %{{.+}} : (tensor<4xf64>) -> tensor<4xi1>
  %0 = graph.is_nan %x : (tensor<4xf64>) -> tensor<4xi1>
  // CHECK: graph.is_inf %{{.+}} {detect_negative = false, detect_positive = true} : (tensor<4xf64>) -> tensor<4xi1>
  %1 = graph.is_inf %x {detect_positive = true, detect_negative = false} : (tensor<4xf64>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<2x3xf32>, %b: tensor<?xi1>) -> (tensor<2x3xui8>, tensor<?xbf16>) {
  // CHECK: graph.cast %{{.+}} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  %0 = graph.cast %x : (tensor<2x3xf32>) -> tensor<2x3xui8>
  // CHECK: graph.cast %{{.+}} : (tensor<?xi1>) -> tensor<?xbf16>
  %1 = graph.cast %b : (tensor<?xi1>) -> tensor<?xbf16>
  return %0, %1 : tensor<2x3xui8>, tensor<?xbf16>
}

// -----

// The storage-only narrow types, and the attributes only casts into narrow
// floats read (printed only when they are not the defaults).
// CHECK-LABEL: func.func @cast_narrow
func.func @cast_narrow(%x: tensor<4xf32>, %q: tensor<4xf8E4M3FN>, %i: tensor<4xi4>)
    -> (tensor<4xf8E5M2FNUZ>, tensor<4xf8E8M0FNU>, tensor<4xf4E2M1FN>, tensor<4xf16>, tensor<4xui2>) {
  // CHECK: graph.cast %{{.+}} {saturate = false} : (tensor<4xf32>) -> tensor<4xf8E5M2FNUZ>
  %0 = graph.cast %x {saturate = false} : (tensor<4xf32>) -> tensor<4xf8E5M2FNUZ>
  // CHECK: graph.cast %{{.+}} {round_mode = "nearest"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  %1 = graph.cast %x {round_mode = "nearest"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  // CHECK: graph.cast %{{.+}} : (tensor<4xf32>) -> tensor<4xf4E2M1FN>
  %2 = graph.cast %x {saturate = true, round_mode = "up"} : (tensor<4xf32>) -> tensor<4xf4E2M1FN>
  // CHECK: graph.cast %{{.+}} : (tensor<4xf8E4M3FN>) -> tensor<4xf16>
  %3 = graph.cast %q : (tensor<4xf8E4M3FN>) -> tensor<4xf16>
  // CHECK: graph.cast %{{.+}} : (tensor<4xi4>) -> tensor<4xui2>
  %4 = graph.cast %i : (tensor<4xi4>) -> tensor<4xui2>
  return %0, %1, %2, %3, %4 : tensor<4xf8E5M2FNUZ>, tensor<4xf8E8M0FNU>, tensor<4xf4E2M1FN>, tensor<4xf16>, tensor<4xui2>
}
