// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-parallel-loops-first))' | FileCheck %s

// A maximum over the channels of [1, 4, 6] (Softmax's first step): the
// reduction moves after the parallel dimensions, and the maps follow.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @max_over_channels
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
func.func @max_over_channels(%x: memref<1x4x6xf32>, %y: memref<1x6xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d2)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<1x4x6xf32>) outs(%y : memref<1x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %out : f32
    linalg.yield %m : f32
  }
  return
}

// A named op with a leading reduction is generalized first; a matmul, whose
// reduction is innermost already, is left alone.
// CHECK-LABEL: func.func @named
// CHECK-NOT: linalg.reduce
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: linalg.matmul
func.func @named(%x: memref<5x3xf32>, %y: memref<3xf32>, %a: memref<2x4xf32>, %b: memref<4x3xf32>, %c: memref<2x3xf32>) {
  linalg.reduce ins(%x : memref<5x3xf32>) outs(%y : memref<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  linalg.matmul ins(%a, %b : memref<2x4xf32>, memref<4x3xf32>) outs(%c : memref<2x3xf32>)
  return
}
