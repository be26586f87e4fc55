// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-symbolic-rows="blocks=8,4,1" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-symbolic-rows="blocks=8,4,1 panel-columns=32 panel-rows=8 panel-weight-bytes=256 parallel=true" | FileCheck %s --check-prefix=PANEL

// A contraction over a run-time number of rows: as many static blocks of
// 8 rows as fit, then of 4 in what is left, then single rows; each loop's
// bound computed up front, each block a static op.
// CHECK-LABEL: func.func @rows
// CHECK: %[[W8:.+]] = affine.apply #{{.+}}()[%[[M:.+]]]
// CHECK: %[[B8:.+]] = scf.for %{{.+}} = %c0 to %[[W8]] step %c8
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%{{.+}} : tensor<8x32xf32>)
// CHECK: %[[W4:.+]] = affine.apply #{{.+}}()[%[[M]]]
// CHECK: %[[B4:.+]] = scf.for %{{.+}} = %[[W8]] to %[[W4]] step %c4 iter_args(%{{.+}} = %[[B8]])
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16x32xf32>) outs(%{{.+}} : tensor<4x32xf32>)
// CHECK: scf.for %{{.+}} = %[[W4]] to %[[M]] step %c1 iter_args(%{{.+}} = %[[B4]])
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<1x16xf32>, tensor<16x32xf32>) outs(%{{.+}} : tensor<1x32xf32>)
func.func @rows(%a: tensor<?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %c = linalg.matmul ins(%a, %w : tensor<?x16xf32>, tensor<16x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %c : tensor<?x32xf32>
}

// -----

// Two run-time parallel loops (scores of a sequence against itself): the
// rows in blocks of 8 and 4, then each block's columns the same way; the
// last rows and the last columns (fewer than 4) one op of a run-time size
// (single rows or columns became matrix-vector products of a strided view,
// copied to a buffer allocated in the loop).
// CHECK-LABEL: func.func @scores
// CHECK-NOT: step %c1 
// CHECK: scf.for %{{.+}} step %c8
// CHECK: scf.for %{{.+}} step %c8
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<16x8xf32>) outs(%{{.+}} : tensor<8x8xf32>)
// CHECK: scf.for %{{.+}} step %c4
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<16x4xf32>) outs(%{{.+}} : tensor<8x4xf32>)
// CHECK-NOT: scf.for
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<16x?xf32>) outs(%{{.+}} : tensor<8x?xf32>)
// CHECK-NOT: kiln.symbolic_remainder
func.func @scores(%a: tensor<?x16xf32>, %b: tensor<16x?xf32>, %o: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<?x16xf32>, tensor<16x?xf32>) outs(%o : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

// -----

// A run-time reduction (attention's context: the probabilities times the
// values) in blocks of 8 and 4 terms, each accumulating into the same
// result, the last terms (fewer than 4) one op of a run-time size; an
// elementwise op keeps the loop path.
// CHECK-LABEL: func.func @left
// CHECK: %[[R8:.+]] = scf.for %{{.+}} step %c8 iter_args(%{{.+}} = %{{.+}}) -> (tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x8xf32>, tensor<8x8xf32>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: %[[R4:.+]] = scf.for %{{.+}} step %c4 iter_args(%{{.+}} = %[[R8]])
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x4xf32>, tensor<4x8xf32>) outs(%{{.+}} : tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x?xf32>, tensor<?x8xf32>) outs(%[[R4]] : tensor<4x8xf32>)
// CHECK-NOT: scf.for
// CHECK: linalg.exp
func.func @left(%p: tensor<4x?xf32>, %v: tensor<?x8xf32>, %q: tensor<4x8xf32>, %a: tensor<?x16xf32>) -> (tensor<4x8xf32>, tensor<?x16xf32>) {
  %r = linalg.matmul ins(%p, %v : tensor<4x?xf32>, tensor<?x8xf32>) outs(%q : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = linalg.exp ins(%a : tensor<?x16xf32>) outs(%a : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r, %e : tensor<4x8xf32>, tensor<?x16xf32>
}

// -----

// A product's elementwise consumer (its bias, read through the expansion
// back to [1, rows, N]) is tiled with it: each block computes the
// product's rows, filled in the block, then the consumer's; the whole
// product goes. The consumer does not read its destination, so the rows
// after the last whole block of 4 are the block of 4 that ends at the last
// row, computed first (a loop of one iteration, or none where the rows are
// a multiple of 4 or fewer than 4); single rows only below 4 rows.
// CHECK-LABEL: func.func @epilogue
// CHECK: %[[ROWS:.+]] = tensor.dim %{{.+}}, %c1 : tensor<1x?x32xf32>
// CHECK: %[[ENOUGH:.+]] = arith.cmpi sge, %[[ROWS]], %c4
// CHECK: %[[REM:.+]] = arith.remui %[[ROWS]], %c4
// CHECK: %[[SOME:.+]] = arith.cmpi ne, %[[REM]], %c0
// CHECK: %[[BOTH:.+]] = arith.andi %[[ENOUGH]], %[[SOME]]
// CHECK: %[[LAST:.+]] = arith.subi %[[ROWS]], %c4
// CHECK: %[[START:.+]] = arith.select %[[BOTH]], %[[LAST]], %[[ROWS]]
// CHECK: scf.for %{{.+}} = %[[START]] to %[[ROWS]] step %c4
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16x32xf32>)
// CHECK: scf.for %{{.+}} step %c8
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x32xf32>)
// CHECK: %[[P:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%[[F]] : tensor<8x32xf32>)
// CHECK: %[[E:.+]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [1, 8, 32]
// CHECK: linalg.generic {{.*}} ins(%[[E]], %{{.+}} : tensor<1x8x32xf32>, tensor<32xf32>) outs(%{{.+}} : tensor<1x8x32xf32>)
// CHECK: %[[ABOVE:.+]] = arith.cmpi sge, %[[ROWS]], %c4
// CHECK: %[[SINGLE:.+]] = arith.select %[[ABOVE]], %[[ROWS]], %{{.+}}
// CHECK: scf.for %{{.+}} = %[[SINGLE]] to %[[ROWS]] step %c1
// CHECK-NOT: tensor<?x16xf32>, tensor<16x32xf32>
func.func @epilogue(%a: tensor<?x16xf32>, %w: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<1x?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %c = linalg.matmul ins(%a, %w : tensor<?x16xf32>, tensor<16x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %x = tensor.expand_shape %c [[0, 1], [2]] output_shape [1, %m, 32] : tensor<?x32xf32> into tensor<1x?x32xf32>
  %o = tensor.empty(%m) : tensor<1x?x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %bias : tensor<1x?x32xf32>, tensor<32xf32>) outs(%o : tensor<1x?x32xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x?x32xf32>
  return %y : tensor<1x?x32xf32>
}

// -----

// An epilogue that reads its destination (it accumulates into it) cannot
// compute rows twice: its last rows stay single ones.
// CHECK-LABEL: func.func @accumulates
// CHECK-NOT: arith.remui
// CHECK: scf.for %{{.+}} step %c8
// CHECK: scf.for %{{.+}} step %c4
// CHECK: scf.for %{{.+}} step %c1
func.func @accumulates(%a: tensor<?x16xf32>, %w: tensor<16x32xf32>, %acc: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %c = linalg.matmul ins(%a, %w : tensor<?x16xf32>, tensor<16x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<?x32xf32>) outs(%acc : tensor<?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A product of a constant weight beyond panel-weight-bytes (2 x 64
// floats, 512 bytes): its rows in blocks of 8 run inside an scf.forall over
// the weight's panels of 32 columns (each block one panel's [8, 2] x
// [2, 32], its tiles sequential), the last rows as the block of 8 that
// ends at the last row; fewer than 8 rows in blocks of 4 there too (the
// last ending at the last row); fewer than 4 rows take the whole weight
// after the panels, single rows.
// PANEL-LABEL: func.func @panels
// PANEL: %[[ROWS:.+]] = tensor.dim %{{.+}}, %c1 : tensor<1x?x64xf32>
// PANEL: scf.forall (%[[AT:.+]]) = (0) to (64) step (32) shared_outs(%[[OUT:.+]] = %{{.+}})
// PANEL: %[[FEW:.+]] = arith.cmpi slt, %[[ROWS]], %c8
// PANEL: %[[LAST4:.+]] = scf.for %{{.+}} = %{{.+}} to %[[ROWS]] step %c4 iter_args(%{{.+}} = %[[OUT]])
// PANEL: linalg.matmul {kiln.kernel_config = #kiln.kernel_config<parallel = false>} ins(%{{.+}}, %{{.+}} : tensor<4x2xf32>, tensor<2x32xf32>)
// PANEL: %[[UP4:.+]] = arith.select %[[FEW]], %{{.+}}, %c0
// PANEL: %[[FOURS:.+]] = scf.for %{{.+}} = %c0 to %[[UP4]] step %c4 iter_args(%{{.+}} = %[[LAST4]])
// PANEL: %[[LAST8:.+]] = scf.for %{{.+}} = %{{.+}} to %[[ROWS]] step %c8 iter_args(%{{.+}} = %[[FOURS]])
// PANEL: %[[PANEL:.+]] = tensor.extract_slice %{{.+}}[0, %[[AT]]] [2, 32] [1, 1] : tensor<2x64xf32> to tensor<2x32xf32>
// PANEL: linalg.matmul {kiln.kernel_config = #kiln.kernel_config<parallel = false>} ins(%{{.+}}, %[[PANEL]] : tensor<8x2xf32>, tensor<2x32xf32>) outs(%{{.+}} : tensor<8x32xf32>)
// PANEL: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x8x32xf32>, tensor<32xf32>)
// PANEL: scf.for %{{.+}} = %c0 to %{{.+}} step %c8
// PANEL: linalg.matmul {kiln.kernel_config = #kiln.kernel_config<parallel = false>} ins(%{{.+}}, %{{.+}} : tensor<8x2xf32>, tensor<2x32xf32>)
// PANEL: scf.forall.in_parallel
// PANEL: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, 0, %[[AT]]] [1, %[[ROWS]], 32]
// PANEL-NOT: step %c4
// PANEL: scf.for %{{.+}} step %c1
// PANEL: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<1x2xf32>, tensor<2x64xf32>)
// PANEL-NOT: kiln.symbolic_blocks
// A weight that stays in cache (64 floats) keeps the blocks of rows
// outside.
// PANEL-LABEL: func.func @small_weight
// PANEL-NOT: scf.forall
// PANEL: scf.for %{{.+}} step %c8
// PANEL: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x1xf32>, tensor<1x64xf32>)
func.func @panels(%a: tensor<?x2xf32>, %bias: tensor<64xf32>) -> tensor<1x?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0], [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, -2.0]]> : tensor<2x64xf32>
  %m = tensor.dim %a, %c0 : tensor<?x2xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %c = linalg.matmul ins(%a, %w : tensor<?x2xf32>, tensor<2x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %x = tensor.expand_shape %c [[0, 1], [2]] output_shape [1, %m, 64] : tensor<?x64xf32> into tensor<1x?x64xf32>
  %o = tensor.empty(%m) : tensor<1x?x64xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %bias : tensor<1x?x64xf32>, tensor<64xf32>) outs(%o : tensor<1x?x64xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %s = arith.addf %in, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}
func.func @small_weight(%a: tensor<?x1xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<1x64xf32>
  %m = tensor.dim %a, %c0 : tensor<?x1xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %c = linalg.matmul ins(%a, %w : tensor<?x1xf32>, tensor<1x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %c : tensor<?x64xf32>
}
