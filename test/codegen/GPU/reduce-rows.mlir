// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-reduce-rows))' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-reduce-rows{max-rows=8}))' | FileCheck %s --check-prefix=FEW

// The sum of a Softmax over 1000 classes (exp of the shifted input): one
// block of 256 threads per row, each thread's strided share, the body's
// exp recomputed per element; each warp combines its lanes with five xor
// shuffles, lane 0 writes the warp's value to shared memory, one barrier,
// every warp combines the eight values, thread 0 adds to the output.
// CHECK-LABEL: func.func @softmax_sum
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(%[[SHARED:.+]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[SHARE:.+]] = scf.for %{{.+}} = %{{.+}} to %c1000 step %c256{{.*}} iter_args(%[[ACC:.+]] = %cst{{.*}}) -> (f32) {
// CHECK: math.exp
// CHECK: arith.addf %[[ACC]]
// CHECK: %[[S16:.+]], %{{.+}} = gpu.shuffle xor %[[SHARE]], %c16_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf %[[SHARE]], %[[S16]]
// CHECK-COUNT-4: gpu.shuffle xor
// CHECK: scf.if
// CHECK: arith.divui
// CHECK-NEXT: memref.store %{{.+}}, %[[SHARED]]
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.load %[[SHARED]]
// CHECK: arith.select
// CHECK-COUNT-5: gpu.shuffle xor
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

// A global average pool's sum over 7 x 7 of 20 channels: a warp per
// channel, eight to a block (three blocks, the last with four idle warps
// that still shuffle), no shared memory, no barrier; lane 0 of a warp with
// a channel writes.
// CHECK-LABEL: func.func @pool_sum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c3, {{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) {
// CHECK: %[[ROW:.+]] = arith.addi
// CHECK: %[[LANE:.+]] = arith.remui %{{.+}}, %c32
// CHECK: %[[VALID:.+]] = arith.cmpi ult, %[[ROW]], %c20
// CHECK: %[[UPPER:.+]] = arith.select %[[VALID]], %c49, %c0
// CHECK: scf.for %{{.+}} = %[[LANE]] to %[[UPPER]] step %c32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[WRITES:.+]] = arith.andi %[[FIRST]], %[[VALID]]
// CHECK: scf.if %[[WRITES]]
func.func @pool_sum(%x: memref<1x20x7x7xf32>, %y: memref<1x20xf32>) {
  linalg.reduce ins(%x : memref<1x20x7x7xf32>) outs(%y : memref<1x20xf32>) dimensions = [2, 3]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return
}

// Long rows, more of them than max-rows: a warp each.
// CHECK-LABEL: func.func @many_rows
// CHECK: workgroup
// FEW-LABEL: func.func @many_rows
// FEW: gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) {
// FEW: scf.for %{{.+}} = %{{.+}} to %c300 step %c32
// FEW-COUNT-5: gpu.shuffle xor
// FEW-NOT: gpu.barrier
func.func @many_rows(%x: memref<16x300xf32>, %y: memref<16xf32>) {
  linalg.reduce ins(%x : memref<16x300xf32>) outs(%y : memref<16xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return
}

// Left alone: too short a reduction; a body whose accumulator feeds
// something other than the combining op; a reduction across the rows of
// its input (over the channels of NCHW, where a thread per output reads
// neighbouring elements).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK: linalg.reduce
// CHECK: linalg.generic
// CHECK: linalg.reduce
func.func @left_alone(%x: memref<4x31xf32>, %y: memref<4xf32>, %z: memref<4x512xf32>, %w: memref<4xf32>,
                      %c: memref<1x64x10x10xf32>, %m: memref<1x10x10xf32>) {
  linalg.reduce ins(%x : memref<4x31xf32>) outs(%y : memref<4xf32>) dimensions = [1]
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
  linalg.reduce ins(%c : memref<1x64x10x10xf32>) outs(%m : memref<1x10x10xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.maximumf %in, %init : f32
      linalg.yield %s : f32
    }
  return
}

// The range of 600 gather indices (kiln's index checks): two i64 outputs,
// the least and the greatest, reduced together by one block. A 64-bit
// value crosses lanes as two 32-bit shuffles (its halves). The fills that
// give each output its combiner's identity just before are dropped: the
// block's result is written as it is, not combined with the buffer.
// CHECK-LABEL: func.func @index_range
// FEW-LABEL: func.func @index_range
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch {{.*}} workgroup(%[[LEAST:.+]] : memref<8xi64, #gpu.address_space<workgroup>>, %[[MOST:.+]] : memref<8xi64, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args(%{{.+}} = %c9223372036854775807_i64{{.*}}, %{{.+}} = %c-9223372036854775808_i64{{.*}}) -> (i64, i64)
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: arith.trunci %{{.+}} : i64 to i32
// CHECK: gpu.shuffle xor %{{.+}}, %c16_i32{{.*}}, %c32_i32{{.*}} : i32
// CHECK: arith.shrui
// CHECK: gpu.shuffle xor %{{.+}}, %c16_i32{{.*}}, %c32_i32{{.*}} : i32
// CHECK: arith.minsi
// CHECK: memref.store %{{.+}}, %[[LEAST]]
// CHECK: memref.store %{{.+}}, %[[MOST]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NOT: memref.load %arg1
// CHECK: memref.store %{{.+}}, %arg1[]
// CHECK-NOT: memref.load %arg2
// CHECK: memref.store %{{.+}}, %arg2[]
func.func @index_range(%idx: memref<600xi64>, %least: memref<i64>, %most: memref<i64>) {
  %max = arith.constant 9223372036854775807 : i64
  %min = arith.constant -9223372036854775808 : i64
  linalg.fill ins(%max : i64) outs(%least : memref<i64>)
  linalg.fill ins(%min : i64) outs(%most : memref<i64>)
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%idx : memref<600xi64>) outs(%least, %most : memref<i64>, memref<i64>) {
  ^bb0(%v: i64, %lo: i64, %hi: i64):
    %l = arith.minsi %v, %lo : i64
    %h = arith.maxsi %v, %hi : i64
    linalg.yield %l, %h : i64, i64
  }
  return
}

// A fill of another value than the identity stays, and the result is
// combined with what the buffer holds.
// CHECK-LABEL: func.func @sum_from_one
// CHECK: linalg.fill
// CHECK: gpu.launch
// CHECK: memref.load %arg1
// CHECK: arith.addi
// CHECK: memref.store %{{.+}}, %arg1
func.func @sum_from_one(%x: memref<512xi32>, %y: memref<i32>) {
  %one = arith.constant 1 : i32
  linalg.fill ins(%one : i32) outs(%y : memref<i32>)
  linalg.reduce ins(%x : memref<512xi32>) outs(%y : memref<i32>) dimensions = [0]
    (%in: i32, %init: i32) {
      %s = arith.addi %in, %init : i32
      linalg.yield %s : i32
    }
  return
}

// Only the nearest fill decides what the buffer holds: an identity fill
// before a fill of 1 is not taken for the output's initial value.
// CHECK-LABEL: func.func @nearest_fill
// CHECK: linalg.fill
// CHECK: linalg.fill
// CHECK: gpu.launch
// CHECK: memref.load %arg1
// CHECK: arith.addi
func.func @nearest_fill(%x: memref<512xi32>, %y: memref<i32>) {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  linalg.fill ins(%zero : i32) outs(%y : memref<i32>)
  linalg.fill ins(%one : i32) outs(%y : memref<i32>)
  linalg.reduce ins(%x : memref<512xi32>) outs(%y : memref<i32>) dimensions = [0]
    (%in: i32, %init: i32) {
      %s = arith.addi %in, %init : i32
      linalg.yield %s : i32
    }
  return
}
