// RUN: kiln-opt %s -split-input-file -kiln-cpu-approximate-math | FileCheck %s

// The approximated functions leave no math call behind that would become a
// libm call per element: only arithmetic, fma and bitcasts.

// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log
// CHECK: math.fma
// CHECK: return
func.func @approximated(%x: f32) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
  %0 = math.erf %x : f32
  %1 = math.erfc %x : f32
  %2 = math.exp %x : f32
  %3 = math.expm1 %x : f32
  %4 = math.tanh %x : f32
  %5 = math.log %x : f32
  %6 = math.log1p %x : f32
  %7 = math.log2 %x : f32
  return %0, %1, %2, %3, %4, %5, %6, %7 : f32, f32, f32, f32, f32, f32, f32, f32
}

// -----

// Vectors are approximated lane by lane, as the loop vectorizer will see them.

// CHECK-LABEL: func.func @vector
// CHECK-NOT: math.exp
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: return
func.func @vector(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// -----

// Functions outside the list keep their math op: sin, cos and sqrt (sqrt is
// an instruction) are left to LLVM.

// CHECK-LABEL: func.func @kept
// CHECK: math.sqrt
// CHECK: math.sin
// CHECK: math.cos
func.func @kept(%x: f32) -> (f32, f32, f32) {
  %0 = math.sqrt %x : f32
  %1 = math.sin %x : f32
  %2 = math.cos %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// -----

// A division by a constant allows a reciprocal (LLVM then multiplies by
// the constant's, within 1 ulp); a division by a variable stays exact.

// CHECK-LABEL: func.func @division_by_constant
// CHECK: arith.divf %{{.+}}, %{{.+}} fastmath<arcp> : f32
// CHECK: arith.divf %{{.+}}, %{{.+}} fastmath<arcp> : vector<16xf32>
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: fastmath
// CHECK: return
func.func @division_by_constant(%x: f32, %v: vector<16xf32>, %y: f32) -> (f32, vector<16xf32>, f32) {
  %c = arith.constant 1.41421354 : f32
  %s = arith.constant dense<8.0> : vector<16xf32>
  %0 = arith.divf %x, %c : f32
  %1 = arith.divf %v, %s : vector<16xf32>
  %2 = arith.divf %x, %y : f32
  return %0, %1, %2 : f32, vector<16xf32>, f32
}
