// RUN: kiln-opt %s --kiln-gpu-lower-launches | FileCheck %s

// The launch becomes a kernel of @kiln_kernels and, in its place, a call of
// a host stub of the same name, which takes the launcher (the function's
// new last argument) and the buffers, and carries the launch geometry.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[Y:.+]]: memref<4x8xf32>, %[[L:.+]]: !llvm.ptr)
// CHECK: call @main_kernel0(%[[L]], %[[Y]]) : (!llvm.ptr, memref<4x8xf32>) -> ()
// CHECK-NOT: gpu.launch
// CHECK: gpu.module @kiln_kernels
// CHECK: gpu.func @main_kernel0(%{{.+}}: memref<4x8xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// CHECK: func.func private @main_kernel0(!llvm.ptr, memref<4x8xf32>) attributes {kiln.gpu_launch = array<i64: 1, 1, 1, 32, 1, 1>, kiln.kernel = #kiln.kernel<flops = 32, source = "r">}
func.func @main(%y: memref<4x8xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             module(@kiln_kernels) function(@main_kernel0) {
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %i = arith.divui %tx, %c8 : index
    %j = arith.remui %tx, %c8 : index
    memref.store %zero, %y[%i, %j] : memref<4x8xf32>
    gpu.terminator
  } {kiln.kernel = #kiln.kernel<flops = 32, source = "r">}
  return
}
