// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-reduce-rows))' | FileCheck %s

// The sum of a Softmax over 1000 classes (exp of the shifted input): one
// block of 256 threads per row, each thread's strided share, the body's
// exp recomputed per element, the tree in shared memory with a barrier
// after each of its eight steps, thread 0 adding to the output.
// CHECK-LABEL: func.func @softmax_sum
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(%[[SHARED:.+]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[SHARE:.+]] = scf.for %{{.+}} = %{{.+}} to %c1000 step %c256{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}) -> (f32) {
// CHECK: math.exp
// CHECK: arith.addf %[[ACC]]
// CHECK: memref.store %[[SHARE]], %[[SHARED]]
// CHECK-COUNT-9: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: arith.cmpi eq
// CHECK: memref.load %arg2
// CHECK: memref.store %{{.+}}, %arg2
func.func @softmax_sum(%x: memref<2x1000xf32>, %max: memref<2xf32>, %sum: memref<2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x, %max : memref<2x1000xf32>, memref<2xf32>) outs(%sum : memref<2xf32>) {
  ^bb0(%v: f32, %m: f32, %acc: f32):
    %d = arith.subf %v, %m : f32
    %e = math.exp %d : f32
    %s = arith.addf %acc, %e : f32
    linalg.yield %s : f32
  }
  return
}

// A maximum starts each share from -inf and combines with maximumf.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %[[NEGINF]])
// CHECK: arith.maximumf
func.func @row_max(%x: memref<4x512xf32>, %y: memref<4xf32>) {
  linalg.reduce ins(%x : memref<4x512xf32>) outs(%y : memref<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %m = arith.maximumf %in, %init : f32
      linalg.yield %m : f32
    }
  return
}

// Left alone: too short a reduction; a body whose accumulator feeds
// something other than the combining op.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK: linalg.reduce
// CHECK: linalg.generic
func.func @left_alone(%x: memref<4x64xf32>, %y: memref<4xf32>, %z: memref<4x512xf32>, %w: memref<4xf32>) {
  linalg.reduce ins(%x : memref<4x64xf32>) outs(%y : memref<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%z : memref<4x512xf32>) outs(%w : memref<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %acc, %acc : f32
    %s = arith.addf %p, %v : f32
    linalg.yield %s : f32
  }
  return
}
