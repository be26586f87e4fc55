// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-tile-contractions))' | FileCheck %s

// A matmul of 128 x 96 by 96 x 200: 64 x 64 tiles, a grid of 4 column tiles
// by 2 row tiles, 256 threads, two shared tiles of 16 steps (one padding
// column), two barriers per step, 4 x 4 fused multiply-adds per thread per
// step, each result added to the output's old value.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.matmul
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c2, {{.*}} = %c1{{.*}}) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(%[[A:.+]] : memref<16x65xf32, #gpu.address_space<workgroup>>, %[[B:.+]] : memref<16x65xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: memref.store %{{.+}}, %[[B]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK-COUNT-16: math.fma
// CHECK: gpu.barrier
// CHECK: %[[OLD:.+]] = memref.load %arg2
// CHECK: arith.addf %[[OLD]]
// CHECK: memref.store {{.*}}, %arg2
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
// applies the Relu; the workspace buffer, read by nothing later, is not
// stored.
// CHECK-LABEL: func.func @fused
// CHECK-NOT: linalg.
// CHECK: gpu.launch
// CHECK: memref.load %arg2[
// CHECK: arith.maximumf
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

// A padded 3x3 convolution as kiln-codegen-conv-to-im2col leaves it: a
// zero fill of a workspace buffer, the input copied into its interior, the
// im2col copy from it, the matmul-like contraction. The launch reads the
// input in place (an implicit GEMM): the copy's affine map applied to each
// element's indices, 0 outside the input; the fill and both copies go.
// CHECK-LABEL: func.func @implicit_gemm
// CHECK-NOT: linalg.
// CHECK: gpu.launch
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %arg0[
// CHECK: } else {
// CHECK-NEXT: arith.constant 0.000000e+00 : f32
// CHECK-NOT: linalg.
// CHECK: return
func.func @implicit_gemm(%x: memref<1x32x28x28xf32>, %w: memref<64x32x3x3xf32>, %y: memref<1x64x28x28xf32> {kiln.name = "y"}, %ws: memref<1100000xi8>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c903168 = arith.constant 903168 : index
  %padded = memref.view %ws[%c903168][] : memref<1100000xi8> to memref<1x32x30x30xf32>
  linalg.map outs(%padded : memref<1x32x30x30xf32>) (%init: f32) {
    linalg.yield %zero : f32
  }
  %interior = memref.subview %padded[0, 0, 1, 1] [1, 32, 28, 28] [1, 1, 1, 1] : memref<1x32x30x30xf32> to memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>
  linalg.copy ins(%x : memref<1x32x28x28xf32>) outs(%interior : memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>)
  %cols = memref.view %ws[%c0][] : memref<1100000xi8> to memref<1x32x3x3x28x28xf32>
  linalg.generic {indexing_maps = [affine_map<(n, c, i, j, h, w) -> (n, c, h + i, w + j)>, affine_map<(n, c, i, j, h, w) -> (n, c, i, j, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%padded : memref<1x32x30x30xf32>) outs(%cols : memref<1x32x3x3x28x28xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %matrix = memref.collapse_shape %cols [[0], [1, 2, 3], [4, 5]] : memref<1x32x3x3x28x28xf32> into memref<1x288x784xf32>
  %filters = memref.collapse_shape %w [[0], [1, 2, 3]] : memref<64x32x3x3xf32> into memref<64x288xf32>
  %out = memref.collapse_shape %y [[0], [1], [2, 3]] : memref<1x64x28x28xf32> into memref<1x64x784xf32>
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%filters, %matrix : memref<64x288xf32>, memref<1x288x784xf32>) outs(%out : memref<1x64x784xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// The same, but the padded buffer is read again after the contraction: the
// padding stays, and the launch reads the padded buffer in place (the
// im2col copy goes).
// CHECK-LABEL: func.func @padding_kept
// CHECK: linalg.map
// CHECK: linalg.copy
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// CHECK: memref.load %[[PADDED:.+]][
// CHECK: linalg.copy ins(%{{.+}} : memref<1x32x30x30xf32>)
func.func @padding_kept(%x: memref<1x32x28x28xf32>, %w: memref<64x32x3x3xf32>, %y: memref<1x64x28x28xf32> {kiln.name = "y"}, %z: memref<1x32x30x30xf32> {kiln.name = "z"}, %ws: memref<1100000xi8>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c903168 = arith.constant 903168 : index
  %padded = memref.view %ws[%c903168][] : memref<1100000xi8> to memref<1x32x30x30xf32>
  linalg.map outs(%padded : memref<1x32x30x30xf32>) (%init: f32) {
    linalg.yield %zero : f32
  }
  %interior = memref.subview %padded[0, 0, 1, 1] [1, 32, 28, 28] [1, 1, 1, 1] : memref<1x32x30x30xf32> to memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>
  linalg.copy ins(%x : memref<1x32x28x28xf32>) outs(%interior : memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>)
  %cols = memref.view %ws[%c0][] : memref<1100000xi8> to memref<1x32x3x3x28x28xf32>
  linalg.generic {indexing_maps = [affine_map<(n, c, i, j, h, w) -> (n, c, h + i, w + j)>, affine_map<(n, c, i, j, h, w) -> (n, c, i, j, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%padded : memref<1x32x30x30xf32>) outs(%cols : memref<1x32x3x3x28x28xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %matrix = memref.collapse_shape %cols [[0], [1, 2, 3], [4, 5]] : memref<1x32x3x3x28x28xf32> into memref<1x288x784xf32>
  %filters = memref.collapse_shape %w [[0], [1, 2, 3]] : memref<64x32x3x3xf32> into memref<64x288xf32>
  %out = memref.collapse_shape %y [[0], [1], [2, 3]] : memref<1x64x28x28xf32> into memref<1x64x784xf32>
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%filters, %matrix : memref<64x288xf32>, memref<1x288x784xf32>) outs(%out : memref<1x64x784xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  }
  linalg.copy ins(%padded : memref<1x32x30x30xf32>) outs(%z : memref<1x32x30x30xf32>)
  return
}

// The memory plan put the im2col matrix over the convolution's input, dead
// once copied into the padded buffer: the matrix is not written, so the
// launch still reads the input in place.
// CHECK-LABEL: func.func @matrix_over_input
// CHECK: linalg.map
// CHECK-NOT: linalg.
// CHECK: gpu.launch
// CHECK: memref.load %[[INPUT:view[_0-9]*]][
// CHECK-NOT: linalg.
// CHECK: return
func.func @matrix_over_input(%a: memref<1x32x28x28xf32>, %w: memref<64x32x3x3xf32>, %y: memref<1x64x28x28xf32> {kiln.name = "y"}, %ws: memref<1100000xi8>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c903168 = arith.constant 903168 : index
  %x = memref.view %ws[%c0][] : memref<1100000xi8> to memref<1x32x28x28xf32>
  linalg.map { math.exp } ins(%a : memref<1x32x28x28xf32>) outs(%x : memref<1x32x28x28xf32>)
  %padded = memref.view %ws[%c903168][] : memref<1100000xi8> to memref<1x32x30x30xf32>
  linalg.map outs(%padded : memref<1x32x30x30xf32>) (%init: f32) {
    linalg.yield %zero : f32
  }
  %interior = memref.subview %padded[0, 0, 1, 1] [1, 32, 28, 28] [1, 1, 1, 1] : memref<1x32x30x30xf32> to memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>
  linalg.copy ins(%x : memref<1x32x28x28xf32>) outs(%interior : memref<1x32x28x28xf32, strided<[28800, 900, 30, 1], offset: 31>>)
  %cols = memref.view %ws[%c0][] : memref<1100000xi8> to memref<1x32x3x3x28x28xf32>
  linalg.generic {indexing_maps = [affine_map<(n, c, i, j, h, w) -> (n, c, h + i, w + j)>, affine_map<(n, c, i, j, h, w) -> (n, c, i, j, h, w)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%padded : memref<1x32x30x30xf32>) outs(%cols : memref<1x32x3x3x28x28xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  %matrix = memref.collapse_shape %cols [[0], [1, 2, 3], [4, 5]] : memref<1x32x3x3x28x28xf32> into memref<1x288x784xf32>
  %filters = memref.collapse_shape %w [[0], [1, 2, 3]] : memref<64x32x3x3xf32> into memref<64x288xf32>
  %out = memref.collapse_shape %y [[0], [1], [2, 3]] : memref<1x64x28x28xf32> into memref<1x64x784xf32>
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%filters, %matrix : memref<64x288xf32>, memref<1x288x784xf32>) outs(%out : memref<1x64x784xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  }
  return
}
