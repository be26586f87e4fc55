// RUN: kiln-opt %s -split-input-file -kiln-cpu-parallelize | FileCheck %s

// An elementwise op on a blocked tensor: its leading loops are cut into at
// least 32 tiles of static shape (4 channel blocks x 8 row blocks of 7),
// each the op itself on a slice.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (4, 56) step (1, 7) shared_outs
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<1x1x7x56x16xf32>) outs(%{{.+}} : tensor<1x1x7x56x16xf32>)
// CHECK: arith.maximumf
// CHECK: tensor.parallel_insert_slice
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @elementwise(%x: tensor<1x4x56x56x16xf32>) -> tensor<1x4x56x56x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x56x56x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x56x56x16xf32>) outs(%e : tensor<1x4x56x56x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x4x56x56x16xf32>
  return %y : tensor<1x4x56x56x16xf32>
}

// -----

// A row reduction (softmax's sum): only the parallel loops before the first
// reduction are cut. 128 rows make 32 tiles of 4.
// CHECK-LABEL: func.func @rows
// CHECK: scf.forall (%{{.+}}) = (0) to (128) step (4) shared_outs
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<4x256xf32>) outs(%{{.+}} : tensor<4xf32>)
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @rows(%x: tensor<128x256xf32>, %init: tensor<128xf32>) -> tensor<128xf32> {
  %y = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<128x256xf32>) outs(%init : tensor<128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %y : tensor<128xf32>
}

// -----

// Left alone: too little work for a parallel region (4096 iterations), and
// a reduction as the first loop.
// CHECK-LABEL: func.func @sequential
// CHECK-NOT: scf.forall (
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @sequential(%small: tensor<64x64xf32>, %x: tensor<256x256xf32>, %init: tensor<256xf32>) -> (tensor<64x64xf32>, tensor<256xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%small : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<256x256xf32>) outs(%init : tensor<256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  return %0, %1 : tensor<64x64xf32>, tensor<256xf32>
}

// -----

// A fill that only initialises an accumulating op (a Winograd transform's
// zeros) is fused into that op's tiles: one parallel loop, which fills and
// accumulates each tile in turn.
// CHECK-LABEL: func.func @fill_fused
// CHECK: scf.forall (%{{.+}}) = (0) to (128) step (4) shared_outs(%[[O:.+]] = %{{.+}})
// CHECK: %[[T:.+]] = tensor.extract_slice %[[O]]
// CHECK: %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[T]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<4xf32>)
// CHECK-NOT: scf.forall (
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#out2 = affine_map<(d0, d1) -> (d0)>
func.func @fill_fused(%x: tensor<128x256xf32>) -> tensor<128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128xf32>) -> tensor<128xf32>
  %y = linalg.generic {indexing_maps = [#in2, #out2], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<128x256xf32>) outs(%f : tensor<128xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %y : tensor<128xf32>
}

// -----

// A ConvTranspose's flipped kernel reads its window reversed (3 - d3):
// linalg's tiling would size that read from the tile's last index (one
// element), so the op stays one loop nest.
// CHECK-LABEL: func.func @reversed_read
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
#flip = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, -d3 + 3, -d4 + 3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @reversed_read(%w: tensor<1x128x16x4x4xf32>) -> tensor<1x16x128x4x4xf32> {
  %e = tensor.empty() : tensor<1x16x128x4x4xf32>
  %0 = linalg.generic {indexing_maps = [#flip, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%w : tensor<1x128x16x4x4xf32>) outs(%e : tensor<1x16x128x4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x16x128x4x4xf32>
  return %0 : tensor<1x16x128x4x4xf32>
}

// -----

// A kernel configuration (kiln.tune) overrides the thresholds: parallel =
// false keeps a large op sequential, parallel = true puts one below
// min-iterations on threads, and tiles = 4 cuts its rows into 4 tiles.
// CHECK-LABEL: func.func @configured
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<1x4x56x56x16xf32>)
// CHECK: scf.forall (%{{.+}}) = (0) to (64) step (16) shared_outs
// CHECK: linalg.generic {{.*}} outs(%{{.+}} : tensor<16x64xf32>)
#cid = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#cid2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @configured(%x: tensor<1x4x56x56x16xf32>, %s: tensor<64x64xf32>) -> (tensor<1x4x56x56x16xf32>, tensor<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x56x56x16xf32>
  %y = linalg.generic {indexing_maps = [#cid, #cid], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"], kiln.kernel_config = #kiln.kernel_config<parallel = false>} ins(%x : tensor<1x4x56x56x16xf32>) outs(%e : tensor<1x4x56x56x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x4x56x56x16xf32>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %z = linalg.generic {indexing_maps = [#cid2, #cid2], iterator_types = ["parallel", "parallel"], kiln.kernel_config = #kiln.kernel_config<parallel = true, tiles = 4>} ins(%s : tensor<64x64xf32>) outs(%e2 : tensor<64x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<64x64xf32>
  return %y, %z : tensor<1x4x56x56x16xf32>, tensor<64x64xf32>
}

// -----

// A loop of a run-time size (a sequence length) counts as 64 iterations:
// attention's softmax over [1, 12, ?, ?] is cut along its 12 heads and then
// its run-time rows, into ceil(rows / 3) of them a tile (at least one), 36
// tiles; a layer norm's [?, 768] rows into 32 tiles of a size computed at
// run time.
// CHECK-DAG: #[[THIRD:.+]] = affine_map<()[s0] -> (s0 ceildiv 3, 1)>
// CHECK-DAG: #[[PART:.+]] = affine_map<()[s0] -> (s0 ceildiv 32, 1)>
// CHECK-LABEL: func.func @run_time_rows
// CHECK: %[[ROWS:.+]] = tensor.dim %{{.+}}, %c2
// CHECK: %[[STEP:.+]] = affine.max #[[THIRD]]()[%[[ROWS]]]
// CHECK: scf.forall (%{{.+}}, %{{.+}}) = (0, 0) to (12, %{{.+}}) step (1, %[[STEP]]) shared_outs
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<1x1x?x?xf32>) outs(%{{.+}} : tensor<1x1x?xf32>)
// CHECK: %[[N:.+]] = tensor.dim %{{.+}}, %c0
// CHECK: %[[TILE:.+]] = affine.max #[[PART]]()[%[[N]]]
// CHECK: scf.forall (%{{.+}}) = (0) to (%{{.+}}) step (%[[TILE]]) shared_outs
// CHECK: linalg.generic {{.*}} ins(%{{.+}} : tensor<?x768xf32>) outs(%{{.+}} : tensor<?x768xf32>)
#in4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#in2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @run_time_rows(%x: tensor<1x12x?x?xf32>, %init: tensor<1x12x?xf32>, %y: tensor<?x768xf32>, %o: tensor<?x768xf32>) -> (tensor<1x12x?xf32>, tensor<?x768xf32>) {
  %m = linalg.generic {indexing_maps = [#in4, #out4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x12x?x?xf32>) outs(%init : tensor<1x12x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x12x?xf32>
  %n = linalg.generic {indexing_maps = [#in2, #in2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<?x768xf32>) outs(%o : tensor<?x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x768xf32>
  return %m, %n : tensor<1x12x?xf32>, tensor<?x768xf32>
}
