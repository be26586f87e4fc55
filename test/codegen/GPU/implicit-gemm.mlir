// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-tile-contractions{implicit-gemm=true}))' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-tile-contractions{implicit-gemm=true}))' | FileCheck %s --check-prefix=COUNT
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-tile-contractions))' | FileCheck %s --check-prefix=OFF

// kiln-gpu-tile-contractions' implicit-gemm (off by default): without it,
// every copy stays and the launch reads the im2col matrix.
// OFF-LABEL: func.func @implicit_gemm
// OFF: linalg.map
// OFF: linalg.copy
// OFF: linalg.generic
// OFF: gpu.launch

// A padded 3x3 convolution as kiln-codegen-conv-to-im2col leaves it: a
// zero fill of a workspace buffer, the input copied into its interior, the
// im2col copy from it, the matmul-like contraction. The launch reads the
// input in place (an implicit GEMM): the copy's affine map applied to each
// element's indices, 0 outside the input; the fill and both copies go.
// Only the padded dimensions (height and width) are tested, two tests each
// for the eight elements a thread loads (four before the loop, four in it).
// CHECK-LABEL: func.func @implicit_gemm
// CHECK-NOT: linalg.
// CHECK: gpu.launch
// CHECK: arith.cmpi sge
// COUNT-LABEL: func.func @implicit_gemm
// COUNT-COUNT-16: arith.cmpi sge
// COUNT-NOT: arith.cmpi sge
// COUNT: gpu.terminator
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
