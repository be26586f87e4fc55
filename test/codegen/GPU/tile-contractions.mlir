// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-tile-contractions))' | FileCheck %s

// A matmul of 128 x 96 by 96 x 200: 64 x 64 tiles, a grid of 4 column tiles
// by 2 row tiles, 256 threads, two shared tiles of 16 steps (rows padded by
// four columns, so that they stay 16-byte aligned). 96 and 200 are
// multiples of 4, so each thread loads runs of four neighbours: one 16-byte
// load where the operand's address is aligned (tested once per kernel),
// four loads otherwise. A's runs lie along the reduction (four stores into
// its shared tile), B's along the columns (one vector store). Two barriers
// per step; each thread reads a run of four rows of A and of four columns
// of B from shared memory and does 4 x 4 fused multiply-adds per step, four
// steps per iteration of a loop that is not to be unrolled further (ptxas
// would load every step's values ahead, in twice the registers); each
// result is added to the output's old value, four neighbours stored at a
// time (one 16-byte store where the output is aligned).
// CHECK: #[[UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[NO_UNROLL:.+]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.matmul
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c2, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(%[[A:.+]] : memref<16x68xf32, #gpu.address_space<workgroup>>, %[[B:.+]] : memref<16x68xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: memref.extract_aligned_pointer_as_index %arg1
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<128x96xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.load %arg0
// CHECK: vector.from_elements
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<96x200xf32>, vector<4xf32>
// CHECK: scf.for
// CHECK-COUNT-4: memref.store %{{.+}}, %[[A]]
// CHECK: vector.store %{{.+}}, %[[B]][{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %{{.+}} to %c16{{.*}} step %c4
// CHECK: vector.load %[[A]][{{.*}}] {alignment = 16 : i64}
// CHECK: vector.load %[[B]][{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-16: math.fma
// CHECK: vector.load %[[A]][{{.*}}] {alignment = 16 : i64}
// CHECK: vector.load %[[B]][{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-16: math.fma
// CHECK: vector.load %[[A]][{{.*}}] {alignment = 16 : i64}
// CHECK: vector.load %[[B]][{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-16: math.fma
// CHECK: vector.load %[[A]][{{.*}}] {alignment = 16 : i64}
// CHECK: vector.load %[[B]][{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-16: math.fma
// CHECK-NOT: math.fma
// CHECK: } {loop_annotation = #[[NO_UNROLL]]}
// CHECK: gpu.barrier
// CHECK: memref.extract_aligned_pointer_as_index %arg2
// CHECK: %[[OLD:.+]] = memref.load %arg2
// CHECK: arith.addf %[[OLD]]
// CHECK-COUNT-3: arith.addf
// CHECK: vector.from_elements
// CHECK: vector.store {{.*}}, %arg2[{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-4: memref.store {{.*}}, %arg2
func.func @matmul(%a: memref<128x96xf32>, %b: memref<96x200xf32>, %c: memref<128x200xf32>) {
  linalg.matmul ins(%a, %b : memref<128x96xf32>, memref<96x200xf32>) outs(%c : memref<128x200xf32>)
  return
}

// A row times a transposed matrix (Gemm's transB at batch 1): 16 column
// tiles alone would leave the GPU idle, so the 2048-step reduction is split
// over 8 blocks (grid z), which add their partial sums atomically.
// CHECK-LABEL: func.func @gemv
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1{{.*}}, {{.*}} = %c8)
// CHECK: memref.atomic_rmw addf
// CHECK-NOT: linalg.generic
func.func @gemv(%x: memref<1x2048xf32>, %w: memref<1000x2048xf32>, %y: memref<1x1000xf32>) {
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<1x2048xf32>, memref<1000x2048xf32>) outs(%y : memref<1x1000xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A bias broadcast into a workspace buffer, the matmul into it, a Relu from
// it into the model's output: one launch, whose epilogue reads the bias and
// applies the Relu, and stores four neighbouring results at a time (one
// 16-byte store where the output is aligned, else four); the workspace
// buffer, read by nothing later, is not stored.
// CHECK-LABEL: func.func @fused
// CHECK-NOT: linalg.
// CHECK: gpu.launch
// CHECK: memref.load %arg2[
// CHECK: arith.maximumf
// CHECK: vector.store %{{.+}}, %arg4[{{.*}}] {alignment = 16 : i64}
// CHECK: memref.store %{{.+}}, %arg4[
// CHECK-NOT: memref.store %{{.+}}, %view
// CHECK-NOT: linalg.
// CHECK: return
func.func @fused(%a: memref<64x300xf32>, %b: memref<300x128xf32>, %bias: memref<128xf32>, %ws: memref<65536xi8>, %out: memref<64x128xf32> {kiln.name = "y"}) {
  %c0 = arith.constant 0 : index
  %t = memref.view %ws[%c0][] : memref<65536xi8> to memref<64x128xf32>
  linalg.broadcast ins(%bias : memref<128xf32>) outs(%t : memref<64x128xf32>) dimensions = [0]
  linalg.matmul ins(%a, %b : memref<64x300xf32>, memref<300x128xf32>) outs(%t : memref<64x128xf32>)
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x128xf32>) outs(%out : memref<64x128xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// Too little work to tile: left to the one-thread-per-element mapping.
// CHECK-LABEL: func.func @small
// CHECK: linalg.matmul
func.func @small(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// A reduction of 99 steps and 201 columns: no run of four would stay
// within the operands, so each thread loads single elements; its shared
// reads still come in runs of four.
// CHECK-LABEL: func.func @ragged
// CHECK: gpu.launch
// CHECK-NOT: vector.load %arg{{[0-2]}}[
// CHECK-NOT: extract_aligned_pointer
// CHECK: memref.load %arg0
// CHECK: memref.load %arg1
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NOT: vector.load %arg{{[0-2]}}[
// CHECK: return
func.func @ragged(%a: memref<130x99xf32>, %b: memref<99x201xf32>, %c: memref<130x201xf32>) {
  linalg.matmul ins(%a, %b : memref<130x99xf32>, memref<99x201xf32>) outs(%c : memref<130x201xf32>)
  return
}
