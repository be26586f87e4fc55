// Constant folding of the elementwise ops on small constants: shape
// arithmetic (Shape -> Cast -> Mul -> Where -> Expand...) must end in
// constants for Kiln's static shapes.
// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func.func @int_arithmetic_broadcast
func.func @int_arithmetic_broadcast() -> (tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>) {
  %a = graph.constant dense<[[1], [-7]]> : tensor<2x1xi64>
  %b = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  // CHECK-DAG: graph.constant dense<{{\[\[}}3, 4, 5], [-5, -4, -3]]> : tensor<2x3xi64>
  %add = graph.add %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK-DAG: graph.constant dense<{{\[\[}}-1, -2, -3], [-9, -10, -11]]> : tensor<2x3xi64>
  %sub = graph.sub %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK-DAG: graph.constant dense<{{\[\[}}2, 3, 4], [-14, -21, -28]]> : tensor<2x3xi64>
  %mul = graph.mul %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // Integer division truncates toward zero.
  // CHECK-DAG: graph.constant dense<{{\[\[}}0, 0, 0], [-3, -2, -1]]> : tensor<2x3xi64>
  %div = graph.div %a, %b : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  // CHECK-NOT: graph.add
  // CHECK-NOT: graph.sub
  // CHECK-NOT: graph.mul
  // CHECK-NOT: graph.div
  return %add, %sub, %mul, %div : tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>, tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @unsigned
func.func @unsigned() -> (tensor<2xui8>, tensor<2xui8>, tensor<2xi1>, tensor<2xui8>) {
  %a = graph.constant dense<[200, 7]> : tensor<2xui8>
  %b = graph.constant dense<[3, 100]> : tensor<2xui8>
  // 200 is above 100 as ui8, below as i8.
  // CHECK-DAG: graph.constant dense<[66, 0]> : tensor<2xui8>
  %div = graph.div %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  // CHECK-DAG: graph.constant dense<[200, 100]> : tensor<2xui8>
  %max = graph.max %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  // CHECK-DAG: graph.constant dense<[true, false]> : tensor<2xi1>
  %gt = graph.greater %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xi1>
  // Wraps around.
  // CHECK-DAG: graph.constant dense<[203, 107]> : tensor<2xui8>
  %add = graph.add %a, %b : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  return %div, %max, %gt, %add : tensor<2xui8>, tensor<2xui8>, tensor<2xi1>, tensor<2xui8>
}

// -----

// CHECK-LABEL: func.func @float_arithmetic
func.func @float_arithmetic() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %a = graph.constant dense<[1.5, -2.0, 0x7FC00000]> : tensor<3xf32>
  %b = graph.constant dense<2.0> : tensor<f32>
  // CHECK-DAG: graph.constant dense<[7.500000e-01, -1.000000e+00, 0x7FC00000]> : tensor<3xf32>
  %div = graph.div %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  // Max and min propagate NaN.
  // CHECK-DAG: graph.constant dense<[2.000000e+00, 2.000000e+00, 0x7FC00000]> : tensor<3xf32>
  %max = graph.max %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[1.500000e+00, -2.000000e+00, 0x7FC00000]> : tensor<3xf32>
  %min = graph.min %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[2.250000e+00, 4.000000e+00, 0x7FC00000]> : tensor<3xf32>
  %pow = graph.pow %a, %b : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK-NOT: graph.div
  // CHECK-NOT: graph.max
  // CHECK-NOT: graph.min
  // CHECK-NOT: graph.pow
  return %div, %max, %min, %pow : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @mod_and_pow
func.func @mod_and_pow() -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2xf32>) {
  %a = graph.constant dense<[7, -7, 7, -7]> : tensor<4xi32>
  %b = graph.constant dense<[3, 3, -3, -3]> : tensor<4xi32>
  // Python's %: the divisor's sign.
  // CHECK-DAG: graph.constant dense<[1, 2, -2, -1]> : tensor<4xi32>
  %mod = graph.mod %a, %b {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // C's fmod: the dividend's sign.
  // CHECK-DAG: graph.constant dense<[1, -1, 1, -1]> : tensor<4xi32>
  %fmod = graph.mod %a, %b {fmod = true} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK-DAG: graph.constant dense<[343, -343, 0, 0]> : tensor<4xi32>
  %pow = graph.pow %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %x = graph.constant dense<[5.5, -5.5]> : tensor<2xf32>
  %y = graph.constant dense<2.0> : tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[1.500000e+00, 5.000000e-01]> : tensor<2xf32>
  %fmodf = graph.mod %x, %y {fmod = false} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // CHECK-NOT: graph.mod
  // CHECK-NOT: graph.pow
  return %mod, %fmod, %pow, %fmodf : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @compare
func.func @compare() -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<3xi1>) {
  %a = graph.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %b = graph.constant dense<[1, 3]> : tensor<2xi64>
  // CHECK-DAG: %[[EQ:.+]] = graph.constant dense<{{\[\[}}true, false], [false, false]]> : tensor<2x2xi1>
  %eq = graph.equal %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  // CHECK-DAG: %[[LT:.+]] = graph.constant dense<{{\[\[}}false, true], [false, true]]> : tensor<2x2xi1>
  %lt = graph.less %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  // CHECK-DAG: %[[LE:.+]] = graph.constant dense<{{\[\[}}true, true], [false, true]]> : tensor<2x2xi1>
  %le = graph.less_equal %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  // CHECK-DAG: %[[GT:.+]] = graph.constant dense<{{\[\[}}false, false], [true, false]]> : tensor<2x2xi1>
  %gt = graph.greater %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  // CHECK-DAG: %[[GE:.+]] = graph.constant dense<{{\[\[}}true, false], [true, false]]> : tensor<2x2xi1>
  %ge = graph.greater_equal %a, %b : (tensor<2x1xi64>, tensor<2xi64>) -> tensor<2x2xi1>
  // Comparisons with NaN are false.
  %x = graph.constant dense<[1.0, 0x7FC00000, -1.0]> : tensor<3xf32>
  %y = graph.constant dense<[1.0, 0x7FC00000, 0.0]> : tensor<3xf32>
  // CHECK-DAG: %[[FEQ:.+]] = graph.constant dense<[true, false, false]> : tensor<3xi1>
  %feq = graph.equal %x, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  // CHECK: return %[[EQ]], %[[LT]], %[[LE]], %[[GT]], %[[GE]], %[[FEQ]]
  return %eq, %lt, %le, %gt, %ge, %feq : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @where_and_logic
func.func @where_and_logic() -> (tensor<2x2xi64>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>) {
  %c = graph.constant dense<[true, false]> : tensor<2xi1>
  %d = graph.constant dense<[[true], [false]]> : tensor<2x1xi1>
  %a = graph.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %b = graph.constant dense<-1> : tensor<i64>
  // CHECK-DAG: %[[W:.+]] = graph.constant dense<{{\[\[}}1, -1], [2, -1]]> : tensor<2x2xi64>
  %w = graph.where %c, %a, %b : (tensor<2xi1>, tensor<2x1xi64>, tensor<i64>) -> tensor<2x2xi64>
  %e = graph.constant dense<[true, true]> : tensor<2xi1>
  // CHECK-DAG: %[[AND:.+]] = graph.constant dense<[true, false]> : tensor<2xi1>
  %and = graph.and %c, %e : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  // CHECK-DAG: %[[OR:.+]] = graph.constant dense<true> : tensor<2xi1>
  %or = graph.or %c, %e : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  // CHECK-DAG: %[[XOR:.+]] = graph.constant dense<[false, true]> : tensor<2xi1>
  %xor = graph.xor %c, %e : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  %not = graph.not %xor : tensor<2xi1>
  // CHECK: return %[[W]], %[[AND]], %[[OR]], %[[XOR]], %[[AND]]
  return %w, %and, %or, %xor, %not : tensor<2x2xi64>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>
}

// -----

// CHECK-LABEL: func.func @unary
func.func @unary() -> (tensor<3xi32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %i = graph.constant dense<[-3, 0, 5]> : tensor<3xi32>
  %f = graph.constant dense<[-2.5, 0.5, 1.5]> : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[3, 0, -5]> : tensor<3xi32>
  %neg = graph.neg %i : tensor<3xi32>
  // CHECK-DAG: graph.constant dense<[3, 0, 5]> : tensor<3xi32>
  %abs = graph.abs %i : tensor<3xi32>
  // CHECK-DAG: graph.constant dense<[2.500000e+00, -5.000000e-01, -1.500000e+00]> : tensor<3xf32>
  %negf = graph.neg %f : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[2.500000e+00, 5.000000e-01, 1.500000e+00]> : tensor<3xf32>
  %absf = graph.abs %f : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[-1, 0, 1]> : tensor<3xi32>
  %sign = graph.sign %i : tensor<3xi32>
  // CHECK-DAG: graph.constant dense<[-3.000000e+00, 0.000000e+00, 1.000000e+00]> : tensor<3xf32>
  %floor = graph.floor %f : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[-2.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<3xf32>
  %ceil = graph.ceil %f : tensor<3xf32>
  // Half to even.
  // CHECK-DAG: graph.constant dense<[-2.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<3xf32>
  %round = graph.round %f : tensor<3xf32>
  // CHECK-DAG: graph.constant dense<[0, 0, 5]> : tensor<3xi32>
  %relu = graph.relu %i : tensor<3xi32>
  return %neg, %abs, %negf, %absf, %sign, %floor, %ceil, %round, %relu : tensor<3xi32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @cast
func.func @cast() -> (tensor<4xi64>, tensor<4xi1>, tensor<4xui8>, tensor<4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<4xf16>) {
  %f = graph.constant dense<[-2.7, 0.0, 2.7, 300.0]> : tensor<4xf32>
  // Floats to integers round toward zero.
  // CHECK-DAG: graph.constant dense<[-2, 0, 2, 300]> : tensor<4xi64>
  %i = graph.cast %f : (tensor<4xf32>) -> tensor<4xi64>
  // CHECK-DAG: graph.constant dense<[true, false, true, true]> : tensor<4xi1>
  %b = graph.cast %f : (tensor<4xf32>) -> tensor<4xi1>
  // Integers narrow by truncation: 300 is 44 as ui8.
  // CHECK-DAG: graph.constant dense<[254, 0, 2, 44]> : tensor<4xui8>
  %u = graph.cast %i : (tensor<4xi64>) -> tensor<4xui8>
  // ui8 widens without sign.
  // CHECK-DAG: graph.constant dense<[2.540000e+02, 0.000000e+00, 2.000000e+00, 4.400000e+01]> : tensor<4xf32>
  %uf = graph.cast %u : (tensor<4xui8>) -> tensor<4xf32>
  %t = graph.constant dense<[true, false]> : tensor<2xi1>
  // CHECK-DAG: graph.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
  %tf = graph.cast %t : (tensor<2xi1>) -> tensor<2xf32>
  // CHECK-DAG: graph.constant dense<[1, 0]> : tensor<2xi32>
  %ti = graph.cast %t : (tensor<2xi1>) -> tensor<2xi32>
  // CHECK-DAG: graph.constant dense<[-2.699220e+00, 0.000000e+00, 2.699220e+00, 3.000000e+02]> : tensor<4xf16>
  %h = graph.cast %f : (tensor<4xf32>) -> tensor<4xf16>
  // CHECK-NOT: graph.cast
  return %i, %b, %u, %uf, %tf, %ti, %h : tensor<4xi64>, tensor<4xi1>, tensor<4xui8>, tensor<4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<4xf16>
}

// -----

// Shape arithmetic as exporters write it: Cast -> Mul -> Equal -> Where.
// CHECK-LABEL: func.func @shape_chain
func.func @shape_chain() -> tensor<3xi64> {
  %shape = graph.constant dense<[2, 3, 4]> : tensor<3xi64>
  %f = graph.cast %shape : (tensor<3xi64>) -> tensor<3xf32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %m = graph.mul %f, %half : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %c = graph.ceil %m : tensor<3xf32>
  %i = graph.cast %c : (tensor<3xf32>) -> tensor<3xi64>
  %one = graph.constant dense<1> : tensor<i64>
  %eq = graph.equal %i, %one : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %minus = graph.constant dense<-1> : tensor<i64>
  %r = graph.where %eq, %minus, %i : (tensor<3xi1>, tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  // CHECK: %[[R:.+]] = graph.constant dense<[-1, 2, 2]> : tensor<3xi64>
  // CHECK-NEXT: return %[[R]]
  return %r : tensor<3xi64>
}

// -----

// A splat of splats folds to a splat.
// CHECK-LABEL: func.func @splat
func.func @splat() -> tensor<64x64xi32> {
  %a = graph.constant dense<3> : tensor<64x1xi32>
  %b = graph.constant dense<4> : tensor<1x64xi32>
  // CHECK: graph.constant dense<7> : tensor<64x64xi32>
  %r = graph.add %a, %b : (tensor<64x1xi32>, tensor<1x64xi32>) -> tensor<64x64xi32>
  return %r : tensor<64x64xi32>
}

// -----

// Not folded: integer division by zero, operands that are not constants,
// large constants (even splats) and results beyond 4096 elements.
// CHECK-LABEL: func.func @no_fold
func.func @no_fold(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<8192xf32>, tensor<100x100xi32>, tensor<2xi32>) {
  %a = graph.constant dense<[4, 5]> : tensor<2xi32>
  %z = graph.constant dense<[2, 0]> : tensor<2xi32>
  // CHECK: graph.div
  %div = graph.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  // CHECK: graph.mod
  %mod = graph.mod %a, %z {fmod = true} : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  // CHECK: graph.add
  %add = graph.add %x, %a : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %big = graph.constant dense<1.0> : tensor<8192xf32>
  // CHECK: graph.neg
  %neg = graph.neg %big : tensor<8192xf32>
  %col = graph.constant dense<[[1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15], [16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30], [31], [32], [33], [34], [35], [36], [37], [38], [39], [40], [41], [42], [43], [44], [45], [46], [47], [48], [49], [50], [51], [52], [53], [54], [55], [56], [57], [58], [59], [60], [61], [62], [63], [64], [65], [66], [67], [68], [69], [70], [71], [72], [73], [74], [75], [76], [77], [78], [79], [80], [81], [82], [83], [84], [85], [86], [87], [88], [89], [90], [91], [92], [93], [94], [95], [96], [97], [98], [99], [100]]> : tensor<100x1xi32>
  %row = graph.constant dense<1> : tensor<1x100xi32>
  // CHECK: graph.mul
  %mul = graph.mul %col, %row : (tensor<100x1xi32>, tensor<1x100xi32>) -> tensor<100x100xi32>
  %min = graph.constant dense<-2147483648> : tensor<2xi32>
  %m1 = graph.constant dense<-1> : tensor<2xi32>
  // Overflowing signed division.
  // CHECK: graph.div
  %ov = graph.div %min, %m1 : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %div, %mod, %add, %neg, %mul, %ov : tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<8192xf32>, tensor<100x100xi32>, tensor<2xi32>
}

// -----

// Casts into or out of the narrow types are never folded: their saturation
// and wrapping are ONNX's, which only the lowering implements.
// CHECK-LABEL: func.func @cast_narrow_not_folded
// CHECK: graph.cast %{{.+}} : (tensor<2xf32>) -> tensor<2xf8E4M3FN>
// CHECK: graph.cast %{{.+}} : (tensor<2xf32>) -> tensor<2xi4>
func.func @cast_narrow_not_folded() -> (tensor<2xf8E4M3FN>, tensor<2xi4>) {
  %f = graph.constant dense<[1000.0, 9.0]> : tensor<2xf32>
  %0 = graph.cast %f : (tensor<2xf32>) -> tensor<2xf8E4M3FN>
  %1 = graph.cast %f : (tensor<2xf32>) -> tensor<2xi4>
  return %0, %1 : tensor<2xf8E4M3FN>, tensor<2xi4>
}
