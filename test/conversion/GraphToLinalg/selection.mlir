// Lowering of the selections whose sizes the data decides: scalar scf loops
// over tensors, the results zero-filled to their largest size, the count a
// tensor<i64>.
// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// One loop over the elements, row-major; a nonzero one writes its position
// (each dimension from the flat index) into the next column.
// CHECK-LABEL: func @nonzero
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2x6xi64>)
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[IDX:.*]] = %[[ZEROS]], %[[N:.*]] = %{{.*}}) -> (tensor<2x6xi64>, index)
// CHECK:   %[[X:.*]] = tensor.extract %[[FLAT]][%[[I]]]
// CHECK:   %[[NZ:.*]] = arith.cmpf une, %[[X]]
// CHECK:   scf.if %[[NZ]] -> (tensor<2x6xi64>, index)
// CHECK:     tensor.insert %{{.*}} into %[[IDX]][%{{.*}}, %[[N]]]
// CHECK:     tensor.insert
// CHECK:     arith.addi %[[N]]
// CHECK: %[[COUNT:.*]] = arith.index_cast %[[LOOP]]#1 : index to i64
// CHECK: %[[T:.*]] = tensor.from_elements %[[COUNT]] : tensor<i64>
// CHECK: return %[[LOOP]]#0, %[[T]]
func.func @nonzero(%x: tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>) {
  %i, %n = graph.nonzero %x : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
  return %i, %n : tensor<2x6xi64>, tensor<i64>
}

// -----

// Unique along axis 1: the slices moved to rows, compared element by
// element; the rows written back by insert_slice and transposed back.
// CHECK-LABEL: func @unique_axis
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x5xi64>) outs(%{{.*}} : tensor<5x2xi64>) permutation = [1, 0]
// CHECK: scf.for
// CHECK: arith.cmpi eq
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [1, 2] [1, 1] : tensor<1x2xi64> into tensor<5x2xi64>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<5x2xi64>) outs(%{{.*}} : tensor<2x5xi64>) permutation = [1, 0]
// CHECK: tensor.from_elements %{{.*}} : tensor<i64>
func.func @unique_axis(%x: tensor<2x5xi64>) -> (tensor<2x5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>) {
  %y, %f, %i, %c, %k = graph.unique %x {axis = 1 : i64, sorted = true} : (tensor<2x5xi64>) -> (tensor<2x5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>)
  return %y, %f, %i, %c, %k : tensor<2x5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<5xi64>, tensor<i64>
}

// -----

// Per batch and class, one pick per box while the class is not done: the
// best free box above the threshold, then its overlap with the boxes kept.
// CHECK-LABEL: func @nms
// CHECK: %[[LIMIT:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: arith.maxsi %[[LIMIT]]
// CHECK: arith.minsi
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     linalg.fill ins(%{{.*}} : i1) outs(%{{.*}} : tensor<4xi1>)
// CHECK:     scf.for
// CHECK:       scf.if
// CHECK:         scf.for
// CHECK:           arith.cmpf ogt
// CHECK: tensor.from_elements %{{.*}} : tensor<i64>
func.func @nms(%b: tensor<1x4x4xf32>, %s: tensor<1x3x4xf32>, %m: tensor<i64>, %t: tensor<f32>, %st: tensor<f32>) -> (tensor<6x3xi64>, tensor<i64>) {
  %sel, %c = graph.non_max_suppression %b, %s, %m, %t, %st {bound = 2 : i64, center_point_box = false} : (tensor<1x4x4xf32>, tensor<1x3x4xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> (tensor<6x3xi64>, tensor<i64>)
  return %sel, %c : tensor<6x3xi64>, tensor<i64>
}
