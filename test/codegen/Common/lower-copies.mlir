// RUN: kiln-opt %s -kiln-codegen-lower-copies | FileCheck %s

// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.+]]: memref<4x4xf32, strided<[8, 1]>>, %[[B:.+]]: memref<4x4xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<4x4xf32, strided<[8, 1]>>) outs(%[[B]] : memref<4x4xf32>)
// CHECK-NOT: memref.copy
func.func @strided(%a: memref<4x4xf32, strided<[8, 1]>>, %b: memref<4x4xf32>) {
  memref.copy %a, %b : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32>
  return
}
