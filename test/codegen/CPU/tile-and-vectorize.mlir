// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-and-vectorize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-and-vectorize=vector-width=8 | FileCheck %s --check-prefix=AVX2
// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-and-vectorize=parallel=true | FileCheck %s --check-prefix=PAR
// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-and-vectorize="parallel=true cached-weight-bytes=32768" | FileCheck %s --check-prefix=CHUNK
// RUN: kiln-opt %s -split-input-file -kiln-cpu-tile-and-vectorize="parallel=true cached-weight-bytes=98304" | FileCheck %s --check-prefix=WINDOW

// A matmul becomes 8x32 register blocks: N tiles outside M tiles, the output
// tile read once before the reduction loop and written once after it, and
// eight broadcast-FMA rows per reduction step.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c32
// CHECK:   scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c8
// CHECK:     %[[TILE:.+]] = tensor.extract_slice %{{.+}}[%[[I]], %[[J]]] [8, 32] [1, 1] : tensor<64x128xf32> to tensor<8x32xf32>
// CHECK:     %[[ACC:.+]] = vector.transfer_read %[[TILE]]{{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK:     scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %[[ACC]])
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK:     }
// CHECK:     vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// CHECK:     tensor.insert_slice {{.*}} into %{{.+}}[%[[I]], %[[J]]] [8, 32]
// With parallel=true the output tiles are one scf.forall; the reduction
// stays a sequential loop inside it.
// PAR-LABEL: func.func @matmul
// PAR: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (128, 64) step (32, 8)
// PAR:   scf.for {{.*}} step %c1 iter_args
// PAR-COUNT-8: vector.fma
// PAR: tensor.parallel_insert_slice
// AVX2-LABEL: func.func @matmul
// AVX2: step %c16
// AVX2: vector<8x16xf32>
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

// A matmul that accumulates into zeros (a Winograd layer's products): the
// fill is fused into each output tile, so the accumulators start as zero
// vectors and nothing fills the whole output first.
// CHECK-LABEL: func.func @matmul_from_zeros
// CHECK: arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma
// PAR-LABEL: func.func @matmul_from_zeros
// PAR: %[[Z:.+]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// PAR-NOT: linalg.fill
// PAR: scf.forall
// PAR-NOT: linalg.fill
// PAR: scf.for {{.*}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %[[Z]])
// PAR: vector.fma
func.func @matmul_from_zeros(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>) -> tensor<64x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x128xf32>) -> tensor<64x128xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

// A generic op that is a matmul gets the same treatment.
// CHECK-LABEL: func.func @generic_matmul
// CHECK-COUNT-8: vector.fma
func.func @generic_matmul(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
    ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%c : tensor<16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// -----

// Row count not a multiple of 8: the largest divisor (6) is the row block.
// CHECK-LABEL: func.func @odd_rows
// CHECK: step %c6
// CHECK: vector<6x16xf32>
func.func @odd_rows(%a: tensor<6x4xf32>, %b: tensor<4x16xf32>, %c: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<6x4xf32>, tensor<4x16xf32>) outs(%c : tensor<6x16xf32>) -> tensor<6x16xf32>
  return %0 : tensor<6x16xf32>
}

// -----

// N narrower than two vectors: one tile as wide as it is.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: linalg.matmul
// CHECK: vector<8x10xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<10xf32>
func.func @narrow(%a: tensor<8x4xf32>, %b: tensor<4x10xf32>, %c: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x10xf32>) outs(%c : tensor<8x10xf32>) -> tensor<8x10xf32>
  return %0 : tensor<8x10xf32>
}

// -----

// N = 40: the first 32 columns get full tiles, the last 8 a tile of their
// own; neither part is left to the loop path.
// CHECK-LABEL: func.func @remainder
// CHECK-NOT: linalg.matmul
// CHECK-DAG: vector<8x32xf32>
// CHECK-DAG: vector<8x8xf32>
func.func @remainder(%a: tensor<8x4xf32>, %b: tensor<4x40xf32>, %c: tensor<8x40xf32>) -> tensor<8x40xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x40xf32>) outs(%c : tensor<8x40xf32>) -> tensor<8x40xf32>
  return %0 : tensor<8x40xf32>
}

// -----

// M = 197 (a ViT's tokens, prime): no divisor comes near the 8-row block,
// so the rows split into 192 (tiles of 8) and 5 (one tile of 5), not 197
// tiles of one row.
// CHECK-LABEL: func.func @row_remainder
// CHECK-NOT: linalg.matmul
// CHECK-DAG: vector<8x32xf32>
// CHECK-DAG: vector<5x32xf32>
// CHECK-NOT: vector<1x32xf32>
func.func @row_remainder(%a: tensor<197x4xf32>, %b: tensor<4x64xf32>, %c: tensor<197x64xf32>) -> tensor<197x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<197x4xf32>, tensor<4x64xf32>) outs(%c : tensor<197x64xf32>) -> tensor<197x64xf32>
  return %0 : tensor<197x64xf32>
}

// -----

// Not a contraction: untouched.
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.add
func.func @elementwise(%a: tensor<8x32xf32>, %b: tensor<8x32xf32>, %c: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %0 = linalg.add ins(%a, %b : tensor<8x32xf32>, tensor<8x32xf32>) outs(%c : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// An elementwise consumer (residual and Relu) is applied to each register
// block after its reduction loop: one loop nest, one store per tile.
// CHECK-LABEL: func.func @epilogue
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[ACC:.+]]:2 = scf.for {{.*}} -> (tensor<8x32xf32>, vector<8x32xf32>)
// CHECK: vector.fma
// CHECK: scf.yield
// CHECK: %[[RES:.+]] = vector.transfer_read %{{.+}} : tensor<16x64xf32>, vector<8x32xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[ACC]]#1, %[[RES]] : vector<8x32xf32>
// CHECK: %[[RELU:.+]] = arith.maximumf %[[SUM]], %{{.+}} : vector<8x32xf32>
// CHECK: vector.transfer_write %[[RELU]]
// CHECK-NOT: linalg.generic
// PAR-LABEL: func.func @epilogue
// PAR: scf.forall
// PAR: scf.for {{.*}} vector<8x32xf32>)
// PAR: arith.maximumf {{.*}} : vector<8x32xf32>
// PAR-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @epilogue(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %r: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%f : tensor<16x64xf32>) -> tensor<16x64xf32>
  %o = tensor.empty() : tensor<16x64xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<16x64xf32>, tensor<16x64xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %s: f32, %out: f32):
    %0 = arith.addf %x, %s : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// The epilogue of an im2col convolution reads it through an expand_shape to
// NCHW: it is collapsed to the contraction's shape and fused the same way.
// CHECK-LABEL: func.func @conv_epilogue
// PAR-LABEL: func.func @conv_epilogue
// CHECK: scf.for {{.*}} vector<8x32xf32>)
// CHECK: arith.maximumf {{.*}} : vector<8x32xf32>
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_epilogue(%w: tensor<16x8xf32>, %x: tensor<1x8x64xf32>, %init: tensor<1x16x64xf32>) -> tensor<1x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%w, %x : tensor<16x8xf32>, tensor<1x8x64xf32>) outs(%init : tensor<1x16x64xf32>) {
  ^bb0(%in: f32, %in_0: f32, %acc: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %0, %acc : f32
    linalg.yield %1 : f32
  } -> tensor<1x16x64xf32>
  %nchw = tensor.expand_shape %c [[0], [1], [2, 3]] output_shape [1, 16, 8, 8] : tensor<1x16x64xf32> into tensor<1x16x8x8xf32>
  %o = tensor.empty() : tensor<1x16x8x8xf32>
  %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%nchw : tensor<1x16x8x8xf32>) outs(%o : tensor<1x16x8x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %zero : f32
    linalg.yield %0 : f32
  } -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// -----

// A requantisation epilogue (scale, round half to even, clamp) is applied
// to each register block: rounding is one vector instruction (x86
// vrndscaleps, AArch64 frintn), not a libm call. Left as a loop nest of its
// own, MobileNetV2's quantised model spent 60% of its time in such loops.
// CHECK-LABEL: func.func @requantize_epilogue
// CHECK: %[[ACC:.+]]:2 = scf.for {{.*}} -> (tensor<8x32xf32>, vector<8x32xf32>)
// CHECK: math.roundeven %{{.+}} : vector<8x32xf32>
// CHECK-NOT: linalg.generic
#id1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @requantize_epilogue(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>) -> tensor<16x64xf32> {
  %scale = arith.constant 0.05 : f32
  %zero = arith.constant 0.0 : f32
  %max = arith.constant 255.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<16x64xf32>) -> tensor<16x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  %o = tensor.empty() : tensor<16x64xf32>
  %y = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<16x64xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %0 = arith.mulf %x, %scale : f32
    %1 = math.roundeven %0 : f32
    %2 = arith.maximumf %1, %zero : f32
    %3 = arith.minimumf %2, %max : f32
    linalg.yield %3 : f32
  } -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// An epilogue that would be a libm call per element (math.sin) stays a loop
// nest of its own; so does a consumer that reads the result transposed.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-2: linalg.generic
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @not_fused(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %c: tensor<16x64xf32>, %d: tensor<16x64xf32>) -> (tensor<16x64xf32>, tensor<64x16xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  %o = tensor.empty() : tensor<16x64xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<16x64xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %0 = math.sin %x : f32
    linalg.yield %0 : f32
  } -> tensor<16x64xf32>
  %n = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%d : tensor<16x64xf32>) -> tensor<16x64xf32>
  %p = tensor.empty() : tensor<64x16xf32>
  %z = linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]} ins(%n : tensor<16x64xf32>) outs(%p : tensor<64x16xf32>) {
  ^bb0(%x: f32, %out: f32):
    %0 = arith.negf %x : f32
    linalg.yield %0 : f32
  } -> tensor<64x16xf32>
  return %y, %z : tensor<16x64xf32>, tensor<64x16xf32>
}

// -----

// An epilogue of math.erf (GELU's), which kiln-cpu-approximate-math makes
// vector arithmetic later, is fused into the matmul's tiles: erf runs on
// the accumulators' vectors.
// CHECK-LABEL: func.func @erf_fused
// CHECK: scf.for
// CHECK: math.erf %{{.+}} : vector<
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @erf_fused(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  %o = tensor.empty() : tensor<16x64xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<16x64xf32>) outs(%o : tensor<16x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %0 = math.erf %x : f32
    linalg.yield %0 : f32
  } -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}

// -----

// f16 inputs into an f32 accumulator with a batch dimension: the operands are
// extended (linalg converts inputs before multiplying), then the contraction
// lowers like an f32 one; none is left for LLVM translation to refuse.
// CHECK-LABEL: func.func @batch_matmul_f16_into_f32
// CHECK-NOT: vector.contract
// CHECK: arith.extf %{{.+}} : vector<{{.+}}xf16> to vector<{{.+}}xf32>
// CHECK: vector.fma %{{.+}} : vector<6xf32>
func.func @batch_matmul_f16_into_f32(%a: tensor<6x4x8xf16>, %b: tensor<6x8x6xf16>) -> tensor<6x4x6xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x4x6xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<6x4x6xf32>) -> tensor<6x4x6xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<6x4x8xf16>, tensor<6x8x6xf16>) outs(%f : tensor<6x4x6xf32>) -> tensor<6x4x6xf32>
  return %r : tensor<6x4x6xf32>
}

// -----

// A blocked convolution left direct (3x3, stride 2) is one register-blocked
// kernel: an output tile of 4 columns by the 8-wide output block, whose
// reduction loops run over the input channel blocks, the window rows and
// columns and the input block with the accumulators in registers all along;
// each step reads a stride-2 slice of the input and makes 4 FMAs. The bias
// broadcast is fused too: the accumulators start as the bias, read into
// registers, and the output is never written with it first. The residual
// sum and the Relu are applied to the tile before its one store.
// CHECK-LABEL: func.func @blocked_conv
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<3x8xf32>
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}, 0, %{{.+}}, %{{.+}}, 0] [1, 2, 3, 9, 8] [1, 1, 1, 1, 1]
// CHECK: %[[ROW:.+]] = vector.transfer_read %[[BIAS]]{{.*}} : tensor<3x8xf32>, vector<8xf32>
// CHECK-COUNT-3: vector.insert %[[ROW]], %{{.+}} : vector<8xf32> into vector<4x8xf32>
// CHECK: %[[INIT:.+]] = vector.insert %[[ROW]], %{{.+}} [3] : vector<8xf32> into vector<4x8xf32>
// CHECK: scf.for %{{.+}} = %c0 to %c2 {{.*}}, %{{.+}} = %[[INIT]]) -> (tensor<1x1x1x4x8xf32>, vector<4x8xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c3 {{.*}} -> (tensor<1x1x1x4x8xf32>, vector<4x8xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c3 {{.*}} -> (tensor<1x1x1x4x8xf32>, vector<4x8xf32>)
// CHECK: scf.for %{{.+}} = %c0 to %c8 {{.*}} -> (tensor<1x1x1x4x8xf32>, vector<4x8xf32>)
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0, 0] [1, 1, 1, 4, 1] [1, 1, 1, 2, 1] : tensor<1x1x1x7x1xf32> to tensor<4x1xf32>
// CHECK-COUNT-4: vector.fma {{.*}} : vector<8xf32>
// CHECK-NOT: vector.fma
// The epilogue works on the accumulators as they are (4x8), with no store
// and load of them in between.
// CHECK: %[[RES:.+]] = vector.transfer_read {{.*}} : tensor<1x3x4x4x8xf32>, vector<4x8xf32>
// CHECK: %[[SUM:.+]] = arith.addf %{{.+}}, %[[RES]] : vector<4x8xf32>
// CHECK: arith.maximumf %[[SUM]], %{{.+}} : vector<4x8xf32>
// CHECK: vector.transfer_write
// CHECK-NOT: linalg.generic
// PAR-LABEL: func.func @blocked_conv
// PAR: scf.forall
// PAR-COUNT-4: scf.for {{.*}} -> (tensor<1x1x1x4x8xf32>, vector<4x8xf32>)
// PAR-COUNT-4: vector.fma
// PAR: arith.maximumf {{.*}} : vector<4x8xf32>
// PAR-NOT: linalg.generic
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 2 + d6, d3 * 2 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
func.func @blocked_conv(%x: tensor<1x2x9x9x8xf32>, %w: tensor<3x2x3x3x8x8xf32>, %bias: tensor<3x8xf32>, %r: tensor<1x3x4x4x8xf32>) -> tensor<1x3x4x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x4x4x8xf32>
  %b = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<3x8xf32>) outs(%e : tensor<1x3x4x4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<1x3x4x4x8xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x9x9x8xf32>, tensor<3x2x3x3x8x8xf32>) outs(%b : tensor<1x3x4x4x8xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x3x4x4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%0, %r : tensor<1x3x4x4x8xf32>, tensor<1x3x4x4x8xf32>) outs(%e : tensor<1x3x4x4x8xf32>) {
  ^bb0(%c: f32, %s: f32, %o: f32):
    %1 = arith.addf %c, %s : f32
    %2 = arith.maximumf %1, %zero : f32
    linalg.yield %2 : f32
  } -> tensor<1x3x4x4x8xf32>
  return %y : tensor<1x3x4x4x8xf32>
}

// -----

// A tile of two output channel blocks (1x1, 8 columns by two 16-wide blocks)
// keeps one 8x16 accumulator matrix per block. The bias fill and the Relu,
// vectorized as the tile's 2x1x8x16, work a block at a time on those
// matrices: nothing is stored to a tile-sized temporary and read back,
// which bufferization would allocate once per tile.
// CHECK-LABEL: func.func @two_block_conv
// CHECK-NOT: vector<2x1x8x16xf32>
// CHECK: scf.for {{.*}} -> (tensor<1x2x1x8x16xf32>, vector<8x16xf32>, vector<8x16xf32>)
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK: %[[A:.+]] = arith.maximumf %{{.+}}, %{{.+}} : vector<8x16xf32>
// CHECK: %[[B:.+]] = arith.maximumf %{{.+}}, %{{.+}} : vector<8x16xf32>
// CHECK-NOT: vector.transfer_read
// CHECK: vector.transfer_write %{{.+}} : vector<8x16xf32>, tensor<1x2x1x8x16xf32>
// CHECK: vector.transfer_write %{{.+}} : vector<8x16xf32>, tensor<1x2x1x8x16xf32>
// CHECK-NOT: vector<2x1x8x16xf32>
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
func.func @two_block_conv(%x: tensor<1x2x8x8x16xf32>, %w: tensor<4x2x1x1x16x16xf32>, %bias: tensor<4x16xf32>) -> tensor<1x4x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8x16xf32>
  %b = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<4x16xf32>) outs(%e : tensor<1x4x8x8x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<1x4x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x8x8x16xf32>, tensor<4x2x1x1x16x16xf32>) outs(%b : tensor<1x4x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x4x8x8x16xf32>) outs(%e : tensor<1x4x8x8x16xf32>) {
  ^bb0(%c: f32, %o: f32):
    %1 = arith.maximumf %c, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<1x4x8x8x16xf32>
  return %y : tensor<1x4x8x8x16xf32>
}

// -----

// Three output channel blocks on 13 columns (a prime, as in SqueezeNet's
// last layer) have no tile of two blocks that divides them. The layer is
// split with its epilogue and its bias: the first two blocks by 9 and 4
// columns, both in tiles of two blocks, and the last block alone, 13 rows.
// CHECK-LABEL: func.func @ragged_conv
// CHECK-DAG: -> (tensor<1x2x1x9x16xf32>, vector<9x16xf32>, vector<9x16xf32>)
// CHECK-DAG: -> (tensor<1x2x1x4x16xf32>, vector<4x16xf32>, vector<4x16xf32>)
// CHECK-DAG: -> (tensor<1x1x1x13x16xf32>, vector<13x16xf32>)
// CHECK-DAG: arith.maximumf %{{.+}}, %{{.+}} : vector<9x16xf32>
// CHECK-DAG: arith.maximumf %{{.+}}, %{{.+}} : vector<4x16xf32>
// CHECK-DAG: arith.maximumf %{{.+}}, %{{.+}} : vector<13x16xf32>
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
func.func @ragged_conv(%x: tensor<1x2x13x13x16xf32>, %w: tensor<3x2x1x1x16x16xf32>, %bias: tensor<3x16xf32>) -> tensor<1x3x13x13x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x13x13x16xf32>
  %b = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<3x16xf32>) outs(%e : tensor<1x3x13x13x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<1x3x13x13x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x13x13x16xf32>, tensor<3x2x1x1x16x16xf32>) outs(%b : tensor<1x3x13x13x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x3x13x13x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x3x13x13x16xf32>) outs(%e : tensor<1x3x13x13x16xf32>) {
  ^bb0(%c: f32, %o: f32):
    %1 = arith.maximumf %c, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<1x3x13x13x16xf32>
  return %y : tensor<1x3x13x13x16xf32>
}

// -----

// The same without an epilogue (a transposed convolution's phases, a layer
// whose activation is not fused): the convolution itself is split, 9 and 4
// columns in tiles of two blocks, each part's accumulators starting from
// its part of the bias, and no bias broadcast over the whole output. Left
// whole, 13 columns made tiles of one row (largestDivisor(13, ...) = 1), a
// sixth of the speed.
// CHECK-LABEL: func.func @ragged_conv_alone
// CHECK-NOT: outs(%{{.+}} : tensor<1x2x13x13x16xf32>)
// CHECK: ins(%{{.+}} : tensor<2x16xf32>) outs(%{{.+}} : tensor<1x2x13x9x16xf32>)
// CHECK: -> (tensor<1x2x1x9x16xf32>, vector<9x16xf32>, vector<9x16xf32>)
// CHECK: ins(%{{.+}} : tensor<2x16xf32>) outs(%{{.+}} : tensor<1x2x13x4x16xf32>)
// CHECK: -> (tensor<1x2x1x4x16xf32>, vector<4x16xf32>, vector<4x16xf32>)
// CHECK-NOT: vector<1x16xf32>
// CHECK: return
// PAR-LABEL: func.func @ragged_conv_alone
// PAR: scf.forall
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
func.func @ragged_conv_alone(%x: tensor<1x2x13x13x16xf32>, %w: tensor<2x2x1x1x16x16xf32>, %bias: tensor<2x16xf32>) -> tensor<1x2x13x13x16xf32> {
  %e = tensor.empty() : tensor<1x2x13x13x16xf32>
  %b = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<2x16xf32>) outs(%e : tensor<1x2x13x13x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<1x2x13x13x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x13x13x16xf32>, tensor<2x2x1x1x16x16xf32>) outs(%b : tensor<1x2x13x13x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x13x13x16xf32>
  return %0 : tensor<1x2x13x13x16xf32>
}

// -----

// A 1x1 convolution that narrows 256 channels to 64, its weights (64 KB)
// small enough to stay in cache: the output channel blocks are the inner
// tile loop, so that each input tile is read once from beyond L1 for all of
// them (the first 1x1 convolution of a ResNet-50 stage). A convolution that
// widens (below) keeps the blocks outside.
// PAR-LABEL: func.func @narrowing_conv
// PAR: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 8, 8, 4) step (1, 1, 8, 2)
// PAR-LABEL: func.func @widening_conv
// PAR: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 4, 8, 8) step (1, 2, 1, 8)
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @narrowing_conv(%x: tensor<1x16x8x8x16xf32>, %w: tensor<4x16x1x1x16x16xf32>) -> tensor<1x4x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8x16xf32>) -> tensor<1x4x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x8x8x16xf32>, tensor<4x16x1x1x16x16xf32>) outs(%f : tensor<1x4x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8x16xf32>
  return %0 : tensor<1x4x8x8x16xf32>
}
func.func @widening_conv(%x: tensor<1x2x8x8x16xf32>, %w: tensor<4x2x1x1x16x16xf32>) -> tensor<1x4x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8x16xf32>) -> tensor<1x4x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x8x8x16xf32>, tensor<4x2x1x1x16x16xf32>) outs(%f : tensor<1x4x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8x16xf32>
  return %0 : tensor<1x4x8x8x16xf32>
}

// -----

// A convolution dilated by 6 on a 14x14 map padded by 6 (as
// kiln-codegen-pad-in-place leaves it: the map written into a zero fill).
// Each output row's tap rows run from the first to the last that reads the
// map: row r reads row r + 6y - 6, so taps [max(ceil((6 - r) / 6), 0),
// min(floor((19 - r) / 6) + 1, 3)); 24 of the 42 (row, tap) pairs read
// only zeros. The tile's 14 columns read the map at every tap, whose loop
// keeps its constant bounds.
// CHECK: #[[FIRST:.+]] = affine_map<()[s0] -> ((-s0 + 6) ceildiv 6, 0)>
// CHECK: #[[END:.+]] = affine_map<()[s0] -> ((-s0 + 19) floordiv 6 + 1, 3)>
// CHECK-LABEL: func.func @dilated_conv
// CHECK: scf.for %[[ROW:.+]] = %c0 to %c14 step %c1
// CHECK: %[[LO:.+]] = affine.max #[[FIRST]]()[%[[ROW]]]
// CHECK: %[[HI:.+]] = affine.min #[[END]]()[%[[ROW]]]
// CHECK: scf.for %{{.+}} = %c0 to %c1 step %c1
// CHECK: scf.for %{{.+}} = %[[LO]] to %[[HI]] step %c1
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK-COUNT-14: vector.fma
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6 * 6, d3 + d7 * 6, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @dilated_conv(%x: tensor<1x1x14x14x16xf32>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x14x14x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x26x26x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x26x26x16xf32>) -> tensor<1x1x26x26x16xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 6, 6, 0] [1, 1, 14, 14, 16] [1, 1, 1, 1, 1] : tensor<1x1x14x14x16xf32> into tensor<1x1x26x26x16xf32>
  %o = tensor.empty() : tensor<1x1x14x14x16xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o : tensor<1x1x14x14x16xf32>) -> tensor<1x1x14x14x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%p, %w : tensor<1x1x26x26x16xf32>, tensor<1x1x3x3x16x16xf32>) outs(%of : tensor<1x1x14x14x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [6, 6]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x14x14x16xf32>
  return %0 : tensor<1x1x14x14x16xf32>
}

// -----

// Padding by 1 on a 7x7 map leaves 2 of 21 (row, tap) pairs on zeros:
// too few to give up the taps' constant bounds, which keep the weights'
// reads one sequential stream (kMinDeadTapShare). A padding of ones
// (a fill that is not zero) is never skipped.
// CHECK-LABEL: func.func @padded_conv
// CHECK-NOT: affine.max
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK-LABEL: func.func @padded_by_ones
// CHECK-NOT: affine.max
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#in6 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6 * 6, d3 + d7 * 6, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @padded_conv(%x: tensor<1x1x7x7x16xf32>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x7x7x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<1x1x7x7x16xf32> to tensor<1x1x9x9x16xf32>
  %o = tensor.empty() : tensor<1x1x7x7x16xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o : tensor<1x1x7x7x16xf32>) -> tensor<1x1x7x7x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%p, %w : tensor<1x1x9x9x16xf32>, tensor<1x1x3x3x16x16xf32>) outs(%of : tensor<1x1x7x7x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}
func.func @padded_by_ones(%x: tensor<1x1x14x14x16xf32>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x14x14x16xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x1x26x26x16xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<1x1x26x26x16xf32>) -> tensor<1x1x26x26x16xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 6, 6, 0] [1, 1, 14, 14, 16] [1, 1, 1, 1, 1] : tensor<1x1x14x14x16xf32> into tensor<1x1x26x26x16xf32>
  %o = tensor.empty() : tensor<1x1x14x14x16xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o : tensor<1x1x14x14x16xf32>) -> tensor<1x1x14x14x16xf32>
  %0 = linalg.generic {indexing_maps = [#in6, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%p, %w : tensor<1x1x26x26x16xf32>, tensor<1x1x3x3x16x16xf32>) outs(%of : tensor<1x1x14x14x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [6, 6]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x14x14x16xf32>
  return %0 : tensor<1x1x14x14x16xf32>
}

// -----

// The same through a tensor.pad of zeros.
// CHECK-LABEL: func.func @dilated_pad
// CHECK: affine.max
// CHECK: affine.min
// CHECK: scf.for %{{.+}} = %c0 to %c1 step %c1
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6 * 6, d3 + d7 * 6, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @dilated_pad(%x: tensor<1x1x14x14x16xf32>, %w: tensor<1x1x3x3x16x16xf32>) -> tensor<1x1x14x14x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 6, 6, 0] high[0, 0, 6, 6, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<1x1x14x14x16xf32> to tensor<1x1x26x26x16xf32>
  %o = tensor.empty() : tensor<1x1x14x14x16xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o : tensor<1x1x14x14x16xf32>) -> tensor<1x1x14x14x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%p, %w : tensor<1x1x26x26x16xf32>, tensor<1x1x3x3x16x16xf32>) outs(%of : tensor<1x1x14x14x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [6, 6]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x14x14x16xf32>
  return %0 : tensor<1x1x14x14x16xf32>
}

// -----

// kiln-cpu-pack-weights' form of a row of one times a packed weight (a
// recurrence's step at batch 1): the row dimension stays (folded away,
// the product would reach the loop path and run element by element), each
// tile is one panel's 32 columns, and its reduction runs four steps per
// iteration: per step one broadcast of the row's element and one 32-lane
// read of the panel's row; the products summed in pairs (a multiply, then
// an FMA onto it), the pairs added, and that sum added to accumulators
// that stay in registers, whose chain is then one addition per iteration.
// CHECK-LABEL: func.func @packed_matvec
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c4 iter_args(%{{.+}} = %{{.+}}, %[[ACC:.+]] = %{{.+}}) -> (tensor<1x1x32xf32>, vector<32xf32>)
// CHECK: %[[X0:.+]] = vector.broadcast %{{.+}} : f32 to vector<32xf32>
// CHECK: %[[W0:.+]] = vector.transfer_read %{{.+}} : tensor<3x8x32xf32>, vector<32xf32>
// CHECK: %[[P0:.+]] = arith.mulf %[[X0]], %[[W0]] : vector<32xf32>
// CHECK: %[[P1:.+]] = vector.fma %{{.+}}, %{{.+}}, %[[P0]] : vector<32xf32>
// CHECK: %[[P2:.+]] = arith.mulf
// CHECK: %[[P3:.+]] = vector.fma %{{.+}}, %{{.+}}, %[[P2]] : vector<32xf32>
// CHECK: %[[S:.+]] = arith.addf %[[P1]], %[[P3]] : vector<32xf32>
// CHECK: %[[NEXT:.+]] = arith.addf %[[ACC]], %[[S]] : vector<32xf32>
// CHECK: scf.yield %{{.+}}, %[[NEXT]]
// CHECK: vector.transfer_write %{{.+}} : vector<32xf32>, tensor<1x1x32xf32>
#a = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
#b = affine_map<(d0, d1, d2, d3) -> (d1, d3, d2)>
#c = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @packed_matvec(%x: tensor<1x8xf32>, %w: tensor<3x8x32xf32>, %init: tensor<1x3x32xf32>) -> tensor<1x3x32xf32> {
  %0 = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x8xf32>, tensor<3x8x32xf32>) outs(%init : tensor<1x3x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x3x32xf32>
  return %0 : tensor<1x3x32xf32>
}

// -----

// A grouped convolution: two groups of two output blocks, each reading the
// two input blocks of its group, (d1 floordiv 2) * 2 + d5. Its tiles are
// pairs of output blocks within a group, the input block offset from the
// tile's first output block.
// PAR: #[[GROUP:.+]] = affine_map<(d0)[s0] -> ((d0 floordiv 2) * 2 + s0)>
// PAR-LABEL: func.func @grouped_conv
// PAR: scf.forall (%{{.+}}, %[[KO:.+]], %{{.+}}, %{{.+}}) = (0, 0, 0, 0) to (1, 4, 8, 8) step (1, 2, 1, 8)
// PAR: scf.for %[[CI:.+]] = %c0 to %c2 step %c1
// PAR: affine.apply #[[GROUP]](%[[KO]])[%[[CI]]]
// PAR-COUNT-16: vector.fma
#gin = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, (d1 floordiv 2) * 2 + d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @grouped_conv(%x: tensor<1x4x8x8x16xf32>, %w: tensor<4x2x1x1x16x16xf32>) -> tensor<1x4x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8x16xf32>) -> tensor<1x4x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#gin, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x8x8x16xf32>, tensor<4x2x1x1x16x16xf32>) outs(%f : tensor<1x4x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8x16xf32>
  return %0 : tensor<1x4x8x8x16xf32>
}

// -----

// Four groups of one output block: tiles of one block, never a pair across
// two groups.
// PAR-LABEL: func.func @one_block_groups
// PAR: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 4, 8, 8) step (1, 1, 1, 8)
#gin = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1 + d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @one_block_groups(%x: tensor<1x4x8x8x16xf32>, %w: tensor<4x1x1x1x16x16xf32>) -> tensor<1x4x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x8x8x16xf32>) -> tensor<1x4x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#gin, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x4x8x8x16xf32>, tensor<4x1x1x1x16x16xf32>) outs(%f : tensor<1x4x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x8x8x16xf32>
  return %0 : tensor<1x4x8x8x16xf32>
}

// -----

// A 1x1 convolution of 16 input channel blocks whose reduction does not
// stay in cache for a column of output tiles (with 32 KB cached: 6 KB of
// weights and input per channel block, 96 KB in all), read by four columns
// of two output blocks: the reduction runs in chunks of 4 blocks, each
// accumulating into the output, and each chunk's output tiles on threads. Its epilogue (the Relu) runs after the last
// chunk, not fused into the tiles.
// CHUNK-LABEL: func.func @chunked_reduction
// CHUNK: %[[R:.+]] = scf.for %[[C:.+]] = %c0 to %c16 step %c4 iter_args(%[[ACC:.+]] = %{{.+}}) -> (tensor<1x8x8x8x16xf32>)
// CHUNK: scf.forall ({{.*}}) = (0, 0, 0, 0) to (1, 8, 8, 8) step (1, 2, 1, 8) shared_outs(%{{.+}} = %[[ACC]])
// CHUNK: scf.for %{{.+}} = %c0 to %c4 step %c1
// CHUNK: vector.fma
// CHUNK: scf.yield
// CHUNK: linalg.generic {{.*}} ins(%[[R]] : tensor<1x8x8x8x16xf32>)
// CHUNK: arith.maximumf
// PAR-LABEL: func.func @chunked_reduction
// PAR-NOT: step %c4
// PAR: scf.forall
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @chunked_reduction(%x: tensor<1x16x8x8x16xf32>, %w: tensor<8x16x1x1x16x16xf32>) -> tensor<1x8x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x8x16xf32>) -> tensor<1x8x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x8x8x16xf32>, tensor<8x16x1x1x16x16xf32>) outs(%f : tensor<1x8x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x8x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%0 : tensor<1x8x8x8x16xf32>) outs(%e : tensor<1x8x8x8x16xf32>) {
  ^bb0(%c: f32, %o: f32):
    %1 = arith.maximumf %c, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<1x8x8x8x16xf32>
  return %y : tensor<1x8x8x8x16xf32>
}

// -----

// A convolution dilated by 8 on an 8x8 map padded by 8, over 16 input
// channel blocks: its taps 0 and 2 read only padding in every row and
// column, so the tiles read the 8x8 map, not the 24x24 padded input. Per
// channel block, 18 KB of weights for a column of two output blocks and 4
// KB of the map (36 KB of the padded input): with 96 KB cached, the padded
// size gives no chunks (one block fits), the map's chunks of 4 blocks.
// WINDOW-LABEL: func.func @dilated_chunks
// WINDOW: scf.for %{{.+}} = %c0 to %c16 step %c4 iter_args
// WINDOW: scf.forall
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6 * 8, d3 + d7 * 8, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @dilated_chunks(%x: tensor<1x16x8x8x16xf32>, %w: tensor<8x16x3x3x16x16xf32>) -> tensor<1x8x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x24x24x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x24x24x16xf32>) -> tensor<1x16x24x24x16xf32>
  %p = tensor.insert_slice %x into %f[0, 0, 8, 8, 0] [1, 16, 8, 8, 16] [1, 1, 1, 1, 1] : tensor<1x16x8x8x16xf32> into tensor<1x16x24x24x16xf32>
  %o = tensor.empty() : tensor<1x8x8x8x16xf32>
  %of = linalg.fill ins(%zero : f32) outs(%o : tensor<1x8x8x8x16xf32>) -> tensor<1x8x8x8x16xf32>
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%p, %w : tensor<1x16x24x24x16xf32>, tensor<8x16x3x3x16x16xf32>) outs(%of : tensor<1x8x8x8x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [8, 8]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x8x16xf32>
  return %0 : tensor<1x8x8x8x16xf32>
}

// -----

// More rows than columns, and a right-hand side (40 KB) beyond the cached
// size: the rows go in blocks whose left-hand side fits (128 rows of 256
// bytes), the column tiles outside the row tiles within each block, the
// epilogue fused; the 40 rows that make no whole block are one block more.
// With the default 512 KB the right-hand side stays in cache: no blocks.
// CHUNK-LABEL: func.func @row_blocks
// CHUNK: scf.for %{{.+}} = %c0 to %c256 step %c128
// CHUNK: scf.forall ({{.*}}) = (0, 0) to (160, 128) step (32, 8)
// CHUNK: vector.fma
// CHUNK: arith.maximumf
// CHUNK: scf.for %{{.+}} = %c0 to %c40 step %c40
// CHUNK: scf.forall ({{.*}}) = (0, 0) to (160, 40) step (32, 8)
// CHUNK: arith.maximumf
// PAR-LABEL: func.func @row_blocks
// PAR-NOT: step %c128
// PAR: scf.forall ({{.*}}) = (0, 0) to (296, 160) step (8, 32)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @row_blocks(%a: tensor<296x64xf32>, %b: tensor<64x160xf32>) -> tensor<296x160xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<296x160xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<296x160xf32>) -> tensor<296x160xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<296x64xf32>, tensor<64x160xf32>) outs(%f : tensor<296x160xf32>) -> tensor<296x160xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<296x160xf32>) outs(%e : tensor<296x160xf32>) {
  ^bb0(%c: f32, %o: f32):
    %1 = arith.maximumf %c, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<296x160xf32>
  return %y : tensor<296x160xf32>
}

// -----

// Fewer rows (197, prime) than columns, and a right-hand side (128 KB)
// beyond the cached size: the 5 rows left over from whole 8-row tiles run
// inside each column of tiles after its 24 row tiles, the epilogue fused
// into both, not as a product of their own that reads the right-hand side
// again. With the default 512 KB it stays in cache: the 5 rows are a
// product of their own (splitRemainders), after the 192.
// CHUNK-LABEL: func.func @row_remainder_in_columns
// CHUNK: scf.forall (%[[J:.+]]) = (0) to (512) step (32)
// CHUNK: scf.for %{{.+}} = %c0 to %c192 step %c192
// CHUNK: scf.for %{{.+}} = %c0 to %c192 step %c8
// CHUNK: vector.fma
// CHUNK: arith.maximumf
// CHUNK: scf.for %{{.+}} = %c0 to %c5 step %c5
// CHUNK: scf.for %{{.+}} = %c0 to %c64 step %c1
// CHUNK-COUNT-5: vector.fma {{.*}} : vector<32xf32>
// CHUNK: arith.maximumf
// CHUNK: tensor.parallel_insert_slice {{.*}}[0, %[[J]]] [197, 32]
// PAR-LABEL: func.func @row_remainder_in_columns
// PAR: scf.forall ({{.*}}) = (0, 0) to (512, 192) step (32, 8)
// PAR: scf.forall ({{.*}}) = (0, 0) to (512, 5) step (32, 5)
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @row_remainder_in_columns(%a: tensor<197x64xf32>, %b: tensor<64x512xf32>) -> tensor<197x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<197x512xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<197x512xf32>) -> tensor<197x512xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<197x64xf32>, tensor<64x512xf32>) outs(%f : tensor<197x512xf32>) -> tensor<197x512xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<197x512xf32>) outs(%e : tensor<197x512xf32>) {
  ^bb0(%c: f32, %o: f32):
    %1 = arith.maximumf %c, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<197x512xf32>
  return %y : tensor<197x512xf32>
}

// -----

// Few rows take a wider block along N, of four or eight vectors only: a
// row of three (vector<48xf32>) or six went through the stack element by
// element (5 x 256 by 256 x 768: 0.6 ms in 5x48 tiles, 0.014 in 5x32).
// PAR-LABEL: func.func @few_rows_no_three_vectors
// PAR: scf.forall ({{.*}}) = (0, 0) to (768, 5) step (32, 5)
// PAR-COUNT-5: vector.fma {{.*}} : vector<32xf32>
// PAR-NOT: vector<48xf32>
func.func @few_rows_no_three_vectors(%a: tensor<5x256xf32>, %b: tensor<256x768xf32>, %c: tensor<5x768xf32>) -> tensor<5x768xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<5x256xf32>, tensor<256x768xf32>) outs(%c : tensor<5x768xf32>) -> tensor<5x768xf32>
  return %0 : tensor<5x768xf32>
}

// -----

// PAR-LABEL: func.func @one_row_no_six_vectors
// PAR-NOT: vector<96xf32>
// PAR: scf.forall ({{.*}}) = (0, 0) to (96, 1) step (32, 1)
func.func @one_row_no_six_vectors(%a: tensor<1x512xf32>, %b: tensor<512x96xf32>, %c: tensor<1x96xf32>) -> tensor<1x96xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<1x512xf32>, tensor<512x96xf32>) outs(%c : tensor<1x96xf32>) -> tensor<1x96xf32>
  return %0 : tensor<1x96xf32>
}

// -----

// PAR-LABEL: func.func @one_row_four_vectors
// PAR: scf.forall ({{.*}}) = (0, 0) to (192, 1) step (64, 1)
// PAR: vector.fma {{.*}} : vector<64xf32>
func.func @one_row_four_vectors(%a: tensor<1x512xf32>, %b: tensor<512x192xf32>, %c: tensor<1x192xf32>) -> tensor<1x192xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<1x512xf32>, tensor<512x192xf32>) outs(%c : tensor<1x192xf32>) -> tensor<1x192xf32>
  return %0 : tensor<1x192xf32>
}

// -----

// An init that is a generic yielding one value (a bias of zeros, folded)
// is a fill: each tile's accumulators start from it in registers, with no
// loop nest of its own writing it to memory first.
// PAR-LABEL: func.func @generic_fill_init
// PAR-NOT: linalg.generic
// PAR: scf.forall
// PAR-NOT: vector.transfer_read {{.*}} vector<8x32xf32>
// PAR: scf.for {{.*}} iter_args
// PAR: vector.fma
#out = affine_map<(d0, d1) -> (d0, d1)>
func.func @generic_fill_init(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>) -> tensor<64x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x128xf32>
  %f = linalg.generic {indexing_maps = [#out], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<64x128xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  } -> tensor<64x128xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%f : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}
