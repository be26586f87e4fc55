// The lowering of elementwise graph ops: one linalg.generic each, with the
// broadcast in its indexing maps and the scalar ops in its body.
// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-DAG: #[[ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL0:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @max_broadcast
// CHECK: %[[INIT:.+]] = tensor.empty() : tensor<2x3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[COL0]], #[[ROW]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK: arith.maximumf
func.func @max_broadcast(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = graph.max %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Unsigned integers become signless; the op chooses the unsigned arith op.
// CHECK-LABEL: func.func @integer_min
// CHECK-SAME: tensor<4xi8>
// CHECK: arith.minui
// CHECK: arith.minsi
func.func @integer_min(%a: tensor<4xui8>, %b: tensor<4xi32>) -> (tensor<4xui8>, tensor<4xi32>) {
  %0 = graph.min %a, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = graph.min %b, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xui8>, tensor<4xi32>
}

// -----

// Python's % on integers: the remainder moves by one divisor where its sign
// differs from the divisor's.
// CHECK-LABEL: func.func @mod
// CHECK: %[[REM:.+]] = arith.remsi %[[A:.+]], %[[B:.+]] : i32
// CHECK: %[[NZ:.+]] = arith.cmpi ne, %[[REM]]
// CHECK: arith.xori
// CHECK: %[[ADJ:.+]] = arith.andi %[[NZ]]
// CHECK: %[[SUM:.+]] = arith.addi %[[REM]], %[[B]]
// CHECK: arith.select %[[ADJ]], %[[SUM]], %[[REM]]
// CHECK: arith.remf
// CHECK-NOT: arith.select
// CHECK: linalg.yield
func.func @mod(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %0 = graph.mod %a, %b {fmod = false} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = graph.mod %c, %c {fmod = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xi32>, tensor<4xf32>
}

// -----

// Python's % on floats: a zero remainder takes the divisor's sign.
// CHECK-LABEL: func.func @mod_floored_float
// CHECK: arith.remf
// CHECK: arith.addf
// CHECK: math.copysign
func.func @mod_floored_float(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = graph.mod %a, %a {fmod = false} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @pow
// CHECK: %[[E:.+]] = arith.sitofp %{{.+}} : i64 to f32
// CHECK: math.powf %{{.+}}, %[[E]] : f32
// CHECK: arith.sitofp %{{.+}} : i32 to f64
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK: math.powf %{{.+}} : f64
// CHECK: arith.fptosi %{{.+}} : f64 to i32
func.func @pow(%a: tensor<4xf32>, %e: tensor<i64>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = graph.pow %a, %e : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %1 = graph.pow %i, %a : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @shifts
// CHECK: %[[TOO_FAR:.+]] = arith.cmpi uge
// CHECK: %[[SHL:.+]] = arith.shli
// CHECK: arith.select %[[TOO_FAR]], %{{.+}}, %[[SHL]]
// CHECK: arith.cmpi uge
// CHECK: arith.shrsi
// CHECK: arith.shrui
func.func @shifts(%a: tensor<4xui8>, %b: tensor<4xi8>) -> (tensor<4xui8>, tensor<4xi8>, tensor<4xui8>) {
  %0 = graph.shift_left %a, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = graph.shift_right %b, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %2 = graph.shift_right %a, %a : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xi8>, tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @compare
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi sge
// CHECK: arith.cmpf oeq
// CHECK: -> tensor<2x3xi1>
func.func @compare(%a: tensor<2x3xf32>, %u: tensor<3xui16>, %s: tensor<3xi64>) -> (tensor<2x3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xi1>) {
  %0 = graph.less %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %1 = graph.less %u, %u : (tensor<3xui16>, tensor<3xui16>) -> tensor<3xi1>
  %2 = graph.greater_equal %s, %s : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %3 = graph.equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %0, %1, %2, %3 : tensor<2x3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xi1>
}

// -----

// CHECK-DAG: #[[SCALAR:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: #[[COND:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @where
// CHECK: linalg.generic {indexing_maps = [#[[COND]], #{{.+}}, #[[SCALAR]], #{{.+}}]
// CHECK: ^bb0(%[[C:.+]]: i1, %[[X:.+]]: f32, %[[Y:.+]]: f32, %{{.+}}: f32):
// CHECK: arith.select %[[C]], %[[X]], %[[Y]] : f32
func.func @where(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %0 = graph.where %c, %a, %b : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Transcendental functions on f16 and bf16 are computed in f32.
// CHECK-LABEL: func.func @half_math
// CHECK: %[[X:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK: %[[E:.+]] = math.erf %{{.+}} : f32
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: math.tan %{{.+}} : f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: math.sinh %{{.+}} : f64
func.func @half_math(%h: tensor<4xf16>, %b: tensor<4xbf16>, %d: tensor<4xf64>) -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xf64>) {
  %0 = graph.gelu %h {tanh_approximation = false} : tensor<4xf16>
  %1 = graph.tan %b : tensor<4xbf16>
  %2 = graph.sinh %d : tensor<4xf64>
  return %0, %1, %2 : tensor<4xf16>, tensor<4xbf16>, tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK: arith.cmpf olt
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: math.roundeven
// CHECK: math.absi
// CHECK: arith.maxsi
func.func @activations(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = graph.leaky_relu %x {alpha = 0.1 : f32} : tensor<4xf32>
  %1 = graph.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4xf32>
  %2 = graph.round %x : tensor<4xf32>
  %3 = graph.abs %i : tensor<4xi32>
  %4 = graph.relu %i : tensor<4xi32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @is_inf
// CHECK: arith.cmpf uno
// CHECK: arith.cmpf oeq, %{{.+}}, %[[INF:.+]] : f32
// CHECK-NOT: arith.cmpf
// CHECK: linalg.yield
func.func @is_inf(%x: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = graph.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>
  %1 = graph.is_inf %x {detect_positive = true, detect_negative = false} : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @cast
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: arith.cmpf une
// CHECK: arith.uitofp %{{.+}} : i1 to bf16
// CHECK: arith.extsi %{{.+}} : i8 to i64
// CHECK: arith.extui %{{.+}} : i8 to i64
// CHECK: arith.trunci %{{.+}} : i64 to i16
// CHECK: arith.extf %{{.+}} : f16 to f32
// CHECK: arith.truncf %{{.+}} : f32 to bf16
func.func @cast(%f: tensor<4xf32>, %b: tensor<4xi1>, %s: tensor<4xi8>, %u: tensor<4xui8>, %l: tensor<4xi64>, %h: tensor<4xf16>)
    -> (tensor<4xui8>, tensor<4xi1>, tensor<4xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi16>, tensor<4xbf16>) {
  %0 = graph.cast %f : (tensor<4xf32>) -> tensor<4xui8>
  %1 = graph.cast %f : (tensor<4xf32>) -> tensor<4xi1>
  %2 = graph.cast %b : (tensor<4xi1>) -> tensor<4xbf16>
  %3 = graph.cast %s : (tensor<4xi8>) -> tensor<4xi64>
  %4 = graph.cast %u : (tensor<4xui8>) -> tensor<4xi64>
  %5 = graph.cast %l : (tensor<4xi64>) -> tensor<4xi16>
  %6 = graph.cast %h : (tensor<4xf16>) -> tensor<4xbf16>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xui8>, tensor<4xi1>, tensor<4xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xi16>, tensor<4xbf16>
}

// -----

// Into an 8-bit float: integer arithmetic on the f32 bits (round to nearest
// even, saturate), the code truncated to i8 and bitcast.
// CHECK-LABEL: func.func @cast_to_f8
// CHECK: linalg.generic
// CHECK: arith.bitcast %{{.+}} : f32 to i32
// CHECK: math.roundeven
// CHECK: arith.trunci %{{.+}} : i32 to i8
// CHECK: arith.bitcast %{{.+}} : i8 to f8E4M3FN
func.func @cast_to_f8(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

// Out of a 4-bit float: its code, zero-extended, then f32 bits or a
// subnormal multiple; f16 by truncation from the exact f32.
// CHECK-LABEL: func.func @cast_from_f4
// CHECK: arith.bitcast %{{.+}} : f4E2M1FN to i4
// CHECK: arith.extui %{{.+}} : i4 to i32
// CHECK: arith.uitofp
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @cast_from_f4(%x: tensor<4xf4E2M1FN>) -> tensor<4xf16> {
  %0 = graph.cast %x : (tensor<4xf4E2M1FN>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Floats into 4-bit integers wrap, through i64; ui4 lowers to i4.
// CHECK-LABEL: func.func @cast_to_int4
// CHECK: arith.fptosi %{{.+}} : f32 to i64
// CHECK: arith.trunci %{{.+}} : i64 to i4
// CHECK: -> tensor<4xi4>
func.func @cast_to_int4(%x: tensor<4xf32>) -> tensor<4xui4> {
  %0 = graph.cast %x : (tensor<4xf32>) -> tensor<4xui4>
  return %0 : tensor<4xui4>
}

// -----

// f64 to f16 rounds once: to f32 to odd, then to f16 (no libgcc call).
// CHECK-LABEL: func.func @cast_f64_to_f16
// CHECK: arith.truncf %{{.+}} : f64 to f32
// CHECK: arith.cmpf ueq
// CHECK: arith.truncf %{{.+}} : f32 to f16
func.func @cast_f64_to_f16(%x: tensor<4xf64>) -> tensor<4xf16> {
  %0 = graph.cast %x : (tensor<4xf64>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @bitcast
// CHECK: linalg.generic
// CHECK: arith.bitcast %{{.+}} : f32 to i32
// CHECK-LABEL: func.func @bitcast_bool
// CHECK: arith.extui %{{.+}} : i1 to i8
func.func @bitcast(%x: tensor<2x3xf32>) -> tensor<2x3xi32> {
  %0 = graph.bitcast %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
func.func @bitcast_bool(%x: tensor<3xi1>) -> tensor<3xui8> {
  %0 = graph.bitcast %x : (tensor<3xi1>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}
