// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @reshape
// CHECK: %[[F:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [2, 12] : tensor<24xf32> into tensor<2x12xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<2x12xf32> {
  %0 = graph.reshape %x {shape = array<i64: 0, -1>, allow_zero = false} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return %0 : tensor<2x12xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_scalar
// CHECK: tensor.collapse_shape %{{.+}} [] : tensor<1xf32> into tensor<f32>
func.func @reshape_scalar(%x: tensor<1x1xf32>) -> tensor<f32> {
  %0 = graph.reshape %x {shape = array<i64>, allow_zero = false} : (tensor<1x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK: linalg.transpose ins(%{{.+}} : tensor<2x3x4xf32>) outs(%{{.+}} : tensor<4x2x3xf32>) permutation = [2, 0, 1]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Each input is an inserted slice of the result.
// CHECK-LABEL: func.func @concat_outer
// CHECK: %[[E:.+]] = tensor.empty() : tensor<5x3xf32>
// CHECK: %[[A:.+]] = tensor.insert_slice %{{.+}} into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %{{.+}} into %[[A]][2, 0] [3, 3] [1, 1]
func.func @concat_outer(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<5x3xf32> {
  %0 = graph.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// Along an inner axis too: each input is a strided slice of the result.
// CHECK-LABEL: func.func @concat_inner
// CHECK: %[[E:.+]] = tensor.empty() : tensor<2x4xi64>
// CHECK: %[[A:.+]] = tensor.insert_slice %{{.+}} into %[[E]][0, 0] [2, 1] [1, 1]
// CHECK: tensor.insert_slice %{{.+}} into %[[A]][0, 1] [2, 3] [1, 1]
func.func @concat_inner(%a: tensor<2x1xi64>, %b: tensor<2x3xi64>) -> tensor<2x4xi64> {
  %0 = graph.concat %a, %b {axis = 1 : i64} : (tensor<2x1xi64>, tensor<2x3xi64>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// A reversed, strided window: index 7 - 2 * i of dimension 1.
// CHECK-LABEL: func.func @slice
// CHECK: linalg.generic
// CHECK: %[[J:.+]] = linalg.index 1
// CHECK: %[[M2:.+]] = arith.constant -2 : index
// CHECK: %[[S:.+]] = arith.muli %[[J]], %[[M2]]
// CHECK: %[[C7:.+]] = arith.constant 7 : index
// CHECK: %[[P:.+]] = arith.addi %[[S]], %[[C7]]
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %[[P]]] : tensor<4x8xf32>
func.func @slice(%x: tensor<4x8xf32>) -> tensor<2x4xf32> {
  %0 = graph.slice %x {starts = array<i64: 0, 7>, ends = array<i64: 4, -1>, steps = array<i64: 2, -2>} : (tensor<4x8xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @split
// CHECK-COUNT-2: linalg.generic
func.func @split(%x: tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %0:2 = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>} : (tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>)
  return %0#0, %0#1 : tensor<3x2xf32>, tensor<3x4xf32>
}

// -----

// A negative index is wrapped, then clamped into the axis.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<2xi64>)
// CHECK: ^bb0(%[[I:.+]]: i64, %{{.+}}: f32):
// CHECK: %[[IX:.+]] = arith.index_cast %[[I]] : i64 to index
// CHECK: arith.cmpi slt, %[[IX]]
// CHECK: arith.select
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<3x5xf32>
func.func @gather(%d: tensor<3x5xf32>, %i: tensor<2xi64>) -> tensor<3x2xf32> {
  %0 = graph.gather %d, %i {axis = 1 : i64} : (tensor<3x5xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @gather_elements
// CHECK: linalg.generic
// CHECK: arith.index_cast %{{.+}} : i32 to index
// CHECK: tensor.extract %{{.+}} : tensor<2x3xf32>
func.func @gather_elements(%d: tensor<2x3xf32>, %i: tensor<2x2xi32>) -> tensor<2x2xf32> {
  %0 = graph.gather_elements %d, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @gather_nd
// CHECK: linalg.generic
// CHECK-COUNT-2: tensor.extract %{{.+}} : tensor<4x2xi64>
// CHECK: tensor.extract %{{.+}} : tensor<2x2x3xf32>
func.func @gather_nd(%d: tensor<2x2x3xf32>, %i: tensor<4x2xi64>) -> tensor<4x3xf32> {
  %0 = graph.gather_nd %d, %i {batch_dims = 0 : i64} : (tensor<2x2x3xf32>, tensor<4x2xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A scatter is a loop nest over the updates that carries the result: each
// update lands in order (a reduction sees the ones before it), and one out
// of range keeps the result as it is.
// CHECK-LABEL: func.func @scatter_elements
// CHECK-SAME: (%[[D:.+]]: tensor<4x3xf32>, %[[I:.+]]: tensor<2x3xi64>, %[[U:.+]]: tensor<2x3xf32>)
// CHECK: %[[R:.+]] = scf.for %[[A:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[D]]) -> (tensor<4x3xf32>)
// CHECK: scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC2:.+]] = %[[ACC]]) -> (tensor<4x3xf32>)
// CHECK: %[[RAW:.+]] = tensor.extract %[[I]][%[[A]], %[[B]]]
// CHECK: %[[IN:.+]] = arith.andi
// CHECK: scf.if %[[IN]] -> (tensor<4x3xf32>)
// CHECK: %[[NEW:.+]] = tensor.extract %[[U]][%[[A]], %[[B]]]
// CHECK: %[[OLD:.+]] = tensor.extract %[[ACC2]][%{{.+}}, %[[B]]]
// CHECK: %[[SUM:.+]] = arith.addf %[[OLD]], %[[NEW]]
// CHECK: tensor.insert %[[SUM]] into %[[ACC2]][%{{.+}}, %[[B]]]
// CHECK: } else {
// CHECK: scf.yield %[[ACC2]]
// CHECK: return %[[R]]
func.func @scatter_elements(%d: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.scatter_elements %d, %i, %u reduction add {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @scatter_nd_unsigned_max
// CHECK-COUNT-2: scf.for
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<2x1xi64>
// CHECK: arith.maxui
func.func @scatter_nd_unsigned_max(%d: tensor<4x3xui8>, %i: tensor<2x1xi64>, %u: tensor<2x3xui8>) -> tensor<4x3xui8> {
  %0 = graph.scatter_nd %d, %i, %u reduction max : (tensor<4x3xui8>, tensor<2x1xi64>, tensor<2x3xui8>) -> tensor<4x3xui8>
  return %0 : tensor<4x3xui8>
}

// -----

// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @expand
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #{{.+}}]
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x6xf32> {
  %0 = graph.expand %x {shape = array<i64: 2, 1, 6>} : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
  return %0 : tensor<2x3x6xf32>
}

// -----

// CHECK-LABEL: func.func @tile
// CHECK: linalg.generic
// CHECK: arith.remui
// CHECK: arith.remui
// CHECK: tensor.extract %{{.+}} : tensor<2x3xi64>
func.func @tile(%x: tensor<2x3xi64>) -> tensor<4x9xi64> {
  %0 = graph.tile %x {repeats = array<i64: 2, 3>} : (tensor<2x3xi64>) -> tensor<4x9xi64>
  return %0 : tensor<4x9xi64>
}

// -----

// Constant padding by non-negative amounts is a tensor.pad (which
// kiln-codegen-pad-in-place makes a fill of the border and the input written
// into the interior).
// CHECK-LABEL: func.func @pad_constant
// CHECK: %[[FILL:.+]] = arith.constant 1.500000e+00 : f32
// CHECK: tensor.pad %arg0 low[1] high[2]
// CHECK: tensor.yield %[[FILL]] : f32
// CHECK-NOT: linalg.generic
func.func @pad_constant(%x: tensor<3xf32>) -> tensor<6xf32> {
  %0 = graph.pad %x {pads = array<i64: 1, 2>, mode = "constant", value = 1.5 : f64} : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// A crop (a negative amount) is one generic over the result: it reads a
// clamped position and selects the padding value outside the input.
// CHECK-LABEL: func.func @pad_constant_crop
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic
// CHECK: arith.cmpi ult
// CHECK: %[[V:.+]] = tensor.extract
// CHECK: %[[FILL:.+]] = arith.constant 1.500000e+00 : f32
// CHECK: arith.select %{{.+}}, %[[V]], %[[FILL]]
func.func @pad_constant_crop(%x: tensor<3xf32>) -> tensor<4xf32> {
  %0 = graph.pad %x {pads = array<i64: -1, 2>, mode = "constant", value = 1.5 : f64} : (tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Reflection: the input in the interior (a tensor.pad), then each border
// box computed from mirrored positions, min(|p|, 2 * (size - 1) - |p|),
// and put in place.
// CHECK-LABEL: func.func @pad_reflect
// CHECK: %[[P:.+]] = tensor.pad %arg0 low[2] high[1]
// CHECK: %[[LO:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<2xf32>)
// CHECK: arith.maxsi
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: %[[M:.+]] = arith.subi %[[C4]], %{{.+}}
// CHECK: arith.minsi %{{.+}}, %[[M]]
// CHECK-NOT: arith.select
// CHECK: %[[HI:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1xf32>)
// CHECK: %[[A:.+]] = tensor.insert_slice %[[LO]] into %[[P]][0] [2] [1]
// CHECK: tensor.insert_slice %[[HI]] into %[[A]][5] [1] [1]
func.func @pad_reflect(%x: tensor<3xf32>) -> tensor<6xf32> {
  %0 = graph.pad %x {pads = array<i64: 2, 1>, mode = "reflect", value = 0.0 : f64} : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// Edge padding of rows and columns: four boxes (the rows' whole width, the
// columns' within the interior rows); a box's rows inside the input are
// read as they are, its columns clamped.
// CHECK-LABEL: func.func @pad_edge_2d
// CHECK: tensor.pad %arg0 low[1, 2] high[0, 1]
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: tensor.insert_slice %{{.+}}[0, 0] [1, 7] [1, 1]
// CHECK: tensor.insert_slice %{{.+}}[1, 0] [3, 2] [1, 1]
// CHECK: tensor.insert_slice %{{.+}}[1, 6] [3, 1] [1, 1]
func.func @pad_edge_2d(%x: tensor<3x4xf32>) -> tensor<4x7xf32> {
  %0 = graph.pad %x {pads = array<i64: 1, 2, 0, 1>, mode = "edge", value = 0.0 : f64} : (tensor<3x4xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// CHECK-LABEL: func.func @trilu
// CHECK: linalg.generic
// CHECK: arith.cmpi sle
// CHECK: arith.select
func.func @trilu(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = graph.trilu %x {upper = false, k = -1 : i64} : tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A run-time k: read once, clamped to +-(rows + columns), compared in the
// body.
// CHECK-LABEL: func.func @trilu_dynamic_k
// CHECK: %[[K:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: %[[LOW:.*]] = arith.maxsi %[[K]], %{{.*}} : i64
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %{{.*}} : i64
// CHECK: %[[KI:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: linalg.generic
// CHECK: arith.cmpi sge, %{{.*}}, %[[KI]] : index
func.func @trilu_dynamic_k(%x: tensor<4x5xf32>, %k: tensor<i64>) -> tensor<4x5xf32> {
  %0 = graph.trilu %x, %k : tensor<i64> {upper = true, k = 0 : i64} : tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @one_hot
// CHECK-DAG: %[[OFF:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<2xf32>
// CHECK-DAG: %[[ON:.+]] = tensor.extract %{{.+}}[%{{.+}}] : tensor<2xf32>
// CHECK: linalg.generic
// CHECK: arith.cmpi eq
// CHECK: arith.select %{{.+}}, %[[ON]], %[[OFF]]
func.func @one_hot(%i: tensor<3xi64>, %v: tensor<2xf32>) -> tensor<3x4xf32> {
  %0 = graph.one_hot %i, %v {depth = 4 : i64, axis = 1 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Nearest: each result index's position is computed at compile time
// (asymmetric, floor: 0, 0, 1, 1) and read from a table per resized
// dimension, not computed per element.
// CHECK-LABEL: func.func @resize_nearest
// CHECK-DAG: %[[T:.+]] = arith.constant dense<[0, 0, 1, 1]> : tensor<4xi32>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<4xi32>, tensor<4xi32>)
// CHECK-NOT: math.floor
// CHECK: tensor.extract
// CHECK-NOT: arith.mulf
func.func @resize_nearest(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = graph.resize %x {sizes = array<i64: 1, 1, 4, 4>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// Bilinear: one pass per resized dimension, the innermost first, each
// reading its low and high positions and the high one's weight from tables
// computed at compile time (half_pixel 2x: x = (i + 0.5) / 2 - 0.5 clamped
// to [0, 1]: positions 0 0 0 1 and 1 1 1 1, weights 0 0.25 0.75 0), and
// computing low + w * (high - low).
// CHECK-LABEL: func.func @resize_linear
// CHECK-DAG: arith.constant dense<[0, 0, 0, 1]> : tensor<4xi32>
// CHECK-DAG: arith.constant dense<1> : tensor<4xi32>
// CHECK-DAG: %[[W:.+]] = arith.constant dense<[0.000000e+00, 2.500000e-01, 7.500000e-01, 0.000000e+00]> : tensor<4xf32>
// CHECK: %[[X:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %{{.+}}, %[[W]] : tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) outs(%{{.+}} : tensor<1x1x2x4xf32>)
// CHECK-COUNT-2: tensor.extract
// CHECK: arith.subf
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<1x1x4x4xf32>)
// CHECK-COUNT-2: tensor.extract %[[X]]
func.func @resize_linear(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = graph.resize %x {sizes = array<i64: 1, 1, 4, 4>, scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "linear", coordinate_transformation_mode = "half_pixel", nearest_mode = "floor"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// `?` sizes (kiln.dim_symbols): the sizes read with tensor.dim, a prefix as
// long as another tensor's axis, a slice and a split that take the `?`
// axis whole.
// CHECK-LABEL: func.func @symbolic_sizes
// CHECK: %[[D:.+]] = tensor.dim %[[X:.+]], %c1
// CHECK: %[[I:.+]] = arith.index_cast %[[D]] : index to i64
// CHECK: tensor.from_elements %{{.+}}, %[[I]], %{{.+}} : tensor<3xi64>
// CHECK: %[[L:.+]] = tensor.dim %[[X]], %c1
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [1, %[[L]]] [1, 1] : tensor<1x64xi64> to tensor<1x?xi64>
// CHECK: %[[N:.+]] = tensor.dim %[[X]], %c1
// CHECK: tensor.empty(%[[N]]) : tensor<1x?x4xf32>
// CHECK: tensor.empty(%{{.+}}) : tensor<1x?x8xf32>
func.func @symbolic_sizes(%x: tensor<1x?x12xf32>, %table: tensor<1x64xi64>) -> (tensor<3xi64>, tensor<1x?xi64>, tensor<1x?x4xf32>, tensor<1x?x8xf32>) {
  %0 = graph.shape %x : (tensor<1x?x12xf32>) -> tensor<3xi64>
  %1 = graph.prefix %table, %x {axis = 1 : i64, like_axis = 1 : i64} : (tensor<1x64xi64>, tensor<1x?x12xf32>) -> tensor<1x?xi64>
  %2 = graph.slice %x {starts = array<i64: 0, 0, 8>, ends = array<i64: 1, -9223372036854775808, 12>, steps = array<i64: 1, 1, 1>} : (tensor<1x?x12xf32>) -> tensor<1x?x4xf32>
  %3:2 = graph.split %x {axis = 2 : i64, sizes = array<i64: 4, 8>} : (tensor<1x?x12xf32>) -> (tensor<1x?x4xf32>, tensor<1x?x8xf32>)
  return %0, %1, %2, %3#1 : tensor<3xi64>, tensor<1x?xi64>, tensor<1x?x4xf32>, tensor<1x?x8xf32>
}
