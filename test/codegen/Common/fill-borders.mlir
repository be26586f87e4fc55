// RUN: kiln-opt %s -split-input-file -kiln-codegen-fill-borders | FileCheck %s

// A padded tensor's fill whose interior the source overwrites fills only
// the border: along the rows, the row above and the row below; along the
// columns, within the interior's rows, the column left and the column
// right. The interior's slice and insertion take the slabs' tensor.
// CHECK-LABEL: func.func @border
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x2x10x10x8xf32>
// CHECK-NOT: {kiln.pad_interior
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[E]][0, 0, 0, 0, 0] [1, 2, 1, 10, 8] [1, 1, 1, 1, 1]
// CHECK: %[[F0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[S0]] : tensor<1x2x1x10x8xf32>)
// CHECK: %[[T0:.+]] = tensor.insert_slice %[[F0]] into %[[E]][0, 0, 0, 0, 0] [1, 2, 1, 10, 8]
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[T0]][0, 0, 9, 0, 0] [1, 2, 1, 10, 8]
// CHECK: %[[T1:.+]] = tensor.insert_slice %{{.+}} into %[[T0]][0, 0, 9, 0, 0] [1, 2, 1, 10, 8]
// CHECK: tensor.extract_slice %[[T1]][0, 0, 1, 0, 0] [1, 2, 8, 1, 8]
// CHECK: %[[T2:.+]] = tensor.insert_slice %{{.+}} into %[[T1]][0, 0, 1, 0, 0] [1, 2, 8, 1, 8]
// CHECK: tensor.extract_slice %[[T2]][0, 0, 1, 9, 0] [1, 2, 8, 1, 8]
// CHECK: %[[T3:.+]] = tensor.insert_slice %{{.+}} into %[[T2]][0, 0, 1, 9, 0] [1, 2, 8, 1, 8]
// CHECK-NOT: linalg.fill
// CHECK: %[[I:.+]] = tensor.extract_slice %[[T3]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} outs(%[[I]] : tensor<1x2x8x8x8xf32>)
// CHECK: tensor.insert_slice %[[R]] into %[[T3]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8]
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @border(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x10x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x10x10x8xf32>
  %f = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 1, 1, 0, 1, 2, 8, 8, 8>} ins(%zero : f32) outs(%e : tensor<1x2x10x10x8xf32>) -> tensor<1x2x10x10x8xf32>
  %i = tensor.extract_slice %f[0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1] : tensor<1x2x10x10x8xf32> to tensor<1x2x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x8x8x8xf32>) outs(%i : tensor<1x2x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8x8x8xf32>
  %p = tensor.insert_slice %r into %f[0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1] : tensor<1x2x8x8x8xf32> into tensor<1x2x10x10x8xf32>
  return %p : tensor<1x2x10x10x8xf32>
}

// -----

// Any other use of the fill (here a second reader of its interior, who
// would see the padding value there) keeps the whole fill; the mark goes.
// CHECK-LABEL: func.func @read_elsewhere
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<6x6xf32>)
// CHECK-NOT: linalg.fill
// CHECK-NOT: kiln.pad_interior
func.func @read_elsewhere(%x: tensor<4x4xf32>) -> (tensor<6x6xf32>, tensor<6x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x6xf32>
  %f = linalg.fill {kiln.pad_interior = array<i64: 1, 1, 4, 4>} ins(%zero : f32) outs(%e : tensor<6x6xf32>) -> tensor<6x6xf32>
  %p = tensor.insert_slice %x into %f[1, 1] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<6x6xf32>
  return %p, %f : tensor<6x6xf32>, tensor<6x6xf32>
}

// -----

// A box that reaches an edge has no slab there (a pad on one side only).
// CHECK-LABEL: func.func @one_side
// CHECK-COUNT-2: linalg.fill
// CHECK-NOT: linalg.fill
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0] [3, 9]
func.func @one_side(%x: tensor<3x9xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x10xf32>
  %f = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 3, 9>} ins(%zero : f32) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %p = tensor.insert_slice %x into %f[0, 0] [3, 9] [1, 1] : tensor<3x9xf32> into tensor<4x10xf32>
  return %p : tensor<4x10xf32>
}
