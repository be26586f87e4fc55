// RUN: kiln-opt %s -split-input-file --kiln-codegen-copy-repeated-results | FileCheck %s

// A value returned three times: the second and third occurrences are copies.
// CHECK-LABEL: func.func @repeated
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK: %[[R:.+]] = linalg.generic
// CHECK: %[[C1:.+]] = bufferization.alloc_tensor() copy(%[[R]]) : tensor<4xf32>
// CHECK: %[[C2:.+]] = bufferization.alloc_tensor() copy(%[[R]]) : tensor<4xf32>
// CHECK: return %[[R]], %[[X]], %[[C1]], %[[C2]]
#map = affine_map<(d0) -> (d0)>
func.func @repeated(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %r, %x, %r, %r : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Distinct values are left alone.
// CHECK-LABEL: func.func @distinct
// CHECK-NOT: bufferization.alloc_tensor
// CHECK: return %arg0, %arg1
func.func @distinct(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %x, %y : tensor<4xf32>, tensor<4xf32>
}
