// RUN: kiln-opt %s -split-input-file -kiln-cpu-outline-kernels | FileCheck %s

// Each top-level loop nest becomes a private, never-inlined kernel; the
// constants and views it uses are recreated inside it, buffers are passed.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: memref<64xf32>, %[[B:.+]]: memref<8x8xf32>)
// CHECK: call @main_kernel0(%[[A]]) : (memref<64xf32>) -> ()
// CHECK: call @main_kernel1(%[[B]]) : (memref<8x8xf32>) -> ()
// CHECK: return
// CHECK: func.func private @main_kernel0(%[[KA:.+]]: memref<64xf32>) attributes {passthrough = ["noinline"]}
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[KA]]
// CHECK: func.func private @main_kernel1(%[[KB:.+]]: memref<8x8xf32>)
// CHECK: memref.subview %[[KB]]
func.func @main(%a: memref<64xf32>, %b: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %f, %a[%i] : memref<64xf32>
  }
  %row = memref.subview %b[0, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<8xf32, strided<[1]>>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %f, %row[%i] : memref<8xf32, strided<[1]>>
  }
  return
}
