// RUN: kiln-opt %s -split-input-file -kiln-cpu-reorder-loops | FileCheck %s
// Without register blocks for transposes (transpose-block=0, AArch64's
// value), they stay linalg.transpose.
// RUN: kiln-opt %s -split-input-file -kiln-cpu-reorder-loops=transpose-block=0 | FileCheck %s --check-prefix=NOBLOCK
// Without vectors for broadcasting elementwise ops (vector-width=0), LLVM
// gets their loops.
// RUN: kiln-opt %s -split-input-file -kiln-cpu-reorder-loops=vector-width=0 | FileCheck %s --check-prefix=NOVEC

// matmul: (i, j, k) becomes (i, k, j), so the inner loop walks B and C rows.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: memref<64x32xf32>, %b: memref<32x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// -----

// A stride-1 convolution: the output width loop goes innermost, after the
// three reduction loops (channels, kernel rows, kernel columns).
// CHECK-LABEL: func.func @conv
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]
func.func @conv(%x: memref<1x8x18x18xf32>, %w: memref<16x8x3x3xf32>, %y: memref<1x16x16x16xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x8x18x18xf32>, memref<16x8x3x3xf32>) outs(%y : memref<1x16x16x16xf32>)
  return
}

// -----

// With stride 2 the input is not contiguous along the output width: unchanged.
// CHECK-LABEL: func.func @conv_stride2
// CHECK: linalg.conv_2d_nchw_fchw
func.func @conv_stride2(%x: memref<1x8x17x17xf32>, %w: memref<16x8x3x3xf32>, %y: memref<1x16x8x8xf32>) {
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x8x17x17xf32>, memref<16x8x3x3xf32>) outs(%y : memref<1x16x8x8xf32>)
  return
}

// -----

// A reduction over the last axis is already unit-stride innermost: unchanged.
// CHECK-LABEL: func.func @row_sum
// CHECK: linalg.reduce
func.func @row_sum(%x: memref<8x32xf32>, %y: memref<8xf32>) {
  linalg.reduce ins(%x : memref<8x32xf32>) outs(%y : memref<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// Elementwise ops have no reduction loop: unchanged.
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.add
func.func @elementwise(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  linalg.add ins(%a, %b : memref<4x8xf32>, memref<4x8xf32>) outs(%c : memref<4x8xf32>)
  return
}

// -----

// A fill of a slice of a padded blocked buffer (one channel block, 7 rows)
// and an elementwise op on whole buffers: the trailing dimensions that every
// buffer holds contiguously (all of them here; unit dimensions fit anywhere)
// become one loop.
// CHECK-LABEL: func.func @contiguous
// CHECK: %[[S:.+]] = memref.collapse_shape %{{.+}} {{\[}}[0, 1, 2, 3, 4]] : memref<1x1x7x58x16xf32, strided<[215296, 53824, 928, 16, 1], offset: ?>> into memref<6496xf32, strided<[1], offset: ?>>
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[S]] : memref<6496xf32, strided<[1], offset: ?>>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.+}} : memref<3584xf32>) outs(%{{.+}} : memref<3584xf32>)
func.func @contiguous(%buffer: memref<1x4x58x58x16xf32>, %i: index, %x: memref<1x4x56x16xf32>, %y: memref<1x4x56x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %slice = memref.subview %buffer[0, %i, 0, 0, 0] [1, 1, 7, 58, 16] [1, 1, 1, 1, 1] : memref<1x4x58x58x16xf32> to memref<1x1x7x58x16xf32, strided<[215296, 53824, 928, 16, 1], offset: ?>>
  linalg.fill ins(%zero : f32) outs(%slice : memref<1x1x7x58x16xf32, strided<[215296, 53824, 928, 16, 1], offset: ?>>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x4x56x16xf32>) outs(%y : memref<1x4x56x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A per-channel scale and shift of a blocked tensor, then ReLU: the scale
// and shift broadcast over the pixels, so the op cannot be collapsed. It
// runs as loops over the pixels around 16-lane vectors: every buffer read
// and written one whole channel block at a time (LLVM, given the scalar
// loops, vectorized across the pixels with gathers). An op whose innermost
// dimension is not a multiple of the vector width (3), or a broadcast
// input read across its innermost dimension, stays for LLVM.
// A step takes 8 pixels (the largest divisor of 56 up to 8): 8 independent
// vectors, whose shared reads LLVM then loads once.
// CHECK-LABEL: func.func @broadcast_elementwise
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C8:.+]] {
// CHECK: %[[XS:.+]] = memref.subview %{{.+}} [1, 1, 1, 8, 16] [1, 1, 1, 1, 1] : memref<1x4x56x56x16xf32> to memref<1x1x1x8x16xf32, strided<[200704, 50176, 896, 16, 1], offset: ?>>
// CHECK: %[[X0:.+]] = vector.load %[[XS]][%{{.+}}, %{{.+}}, %{{.+}}, %[[P0:.+]], %{{.+}}] : memref<1x1x1x8x16xf32, strided<[200704, 50176, 896, 16, 1], offset: ?>>, vector<16xf32>
// CHECK-COUNT-7: vector.load %[[XS]]
// CHECK: %[[S:.+]] = vector.load %{{.+}} : memref<1x1x1x16xf32, strided<[16, 16, 16, 1], offset: ?>>, vector<16xf32>
// CHECK: %[[T:.+]] = vector.load %{{.+}} : memref<1x16xf32, strided<[16, 1], offset: ?>>, vector<16xf32>
// CHECK: %[[M:.+]] = math.fma %[[X0]], %[[S]], %{{.+}} : vector<16xf32>
// CHECK-COUNT-7: math.fma
// CHECK: %[[R:.+]] = arith.maximumf %[[M]], %{{.+}} : vector<16xf32>
// CHECK-COUNT-7: arith.maximumf
// CHECK: vector.store %[[R]], %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %[[P0]], %{{.+}}] : memref<1x1x1x8x16xf32, strided<[200704, 50176, 896, 16, 1], offset: ?>>, vector<16xf32>
// CHECK-COUNT-7: vector.store
// NOVEC-LABEL: func.func @broadcast_elementwise
// NOVEC-COUNT-3: linalg.generic
func.func @broadcast_elementwise(%x: memref<1x4x56x56x16xf32>, %scale: memref<4x1x1x16xf32>, %shift: memref<4x16xf32>, %y: memref<1x4x56x56x16xf32>,
                                 %a: memref<2x5x3xf32>, %b: memref<3xf32>, %c: memref<2x5x3xf32>,
                                 %d: memref<4x16xf32>, %e: memref<16x4xf32>, %f: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, 0, 0, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x, %scale, %shift : memref<1x4x56x56x16xf32>, memref<4x1x1x16xf32>, memref<4x16xf32>) outs(%y : memref<1x4x56x56x16xf32>) {
  ^bb0(%in: f32, %s: f32, %t: f32, %o: f32):
    %m = math.fma %in, %s, %t : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  }
  // CHECK-COUNT-2: linalg.generic
  // CHECK: return
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a, %b : memref<2x5x3xf32>, memref<3xf32>) outs(%c : memref<2x5x3xf32>) {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %r = arith.mulf %in, %s : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%d, %e : memref<4x16xf32>, memref<16x4xf32>) outs(%f : memref<4x16xf32>) {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %r = arith.addf %in, %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A kernel configuration's rows (kiln.tune's knob of a depthwise
// convolution) set the positions per step where they divide the dimension:
// 4 of 56.
// CHECK-LABEL: func.func @configured_positions
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C4:.+]] {
// CHECK: memref.subview %{{.+}} [1, 1, 1, 4, 16] [1, 1, 1, 1, 1]
// CHECK-COUNT-4: math.fma
// CHECK-NOT: math.fma
func.func @configured_positions(%x: memref<1x4x56x56x16xf32>, %scale: memref<4x1x1x16xf32>, %shift: memref<4x16xf32>, %y: memref<1x4x56x56x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, 0, 0, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x, %scale, %shift : memref<1x4x56x56x16xf32>, memref<4x1x1x16xf32>, memref<4x16xf32>) outs(%y : memref<1x4x56x56x16xf32>) attrs = {kiln.kernel_config = #kiln.kernel_config<rows = 4>} {
  ^bb0(%in: f32, %s: f32, %t: f32, %o: f32):
    %m = math.fma %in, %s, %t : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A scalar that broadcasts along the vectors, from a buffer with a stride
// (a column): loaded once per vector. A transfer that a contraction's tile
// already has (a column read as vector<16x1xf32>) stays as it is (the
// lowering patterns, let loose on the whole function, rewrote it forever).
// CHECK-LABEL: func.func @broadcast_scalar
// CHECK: %[[C:.+]] = vector.transfer_read %{{.+}} {in_bounds = [true, true]} : memref<32x7xf32>, vector<16x1xf32>
// CHECK: scf.for
// CHECK: %[[V:.+]] = memref.load %{{.+}} : memref<1x8xf32, strided<[512, 4], offset: ?>>
// CHECK: vector.broadcast %[[V]] : f32 to vector<f32>
// CHECK: vector.broadcast %{{.+}} : vector<f32> to vector<16xf32>
// CHECK: arith.subf %{{.+}} : vector<16xf32>
// CHECK: return %[[C]]
func.func @broadcast_scalar(%x: memref<4x128x512xf32>, %m: memref<4x512xf32>, %y: memref<4x128x512xf32>, %a: memref<32x7xf32>) -> vector<16x1xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %col = vector.transfer_read %a[%c0, %c0], %zero {in_bounds = [true, true]} : memref<32x7xf32>, vector<16x1xf32>
  %columns = memref.subview %m[0, 0] [4, 128] [1, 4] : memref<4x512xf32> to memref<4x128xf32, strided<[512, 4]>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %columns : memref<4x128x512xf32>, memref<4x128xf32, strided<[512, 4]>>) outs(%y : memref<4x128x512xf32>) {
  ^bb0(%in: f32, %s: f32, %o: f32):
    %r = arith.subf %in, %s : f32
    linalg.yield %r : f32
  }
  return %col : vector<16x1xf32>
}

// -----

// A reduction in the innermost loop may be reassociated (summed in vector
// lanes by LLVM's vectorizer): its combiner gets `reassoc`, nothing else
// does. A variance: the mean, one value per row, is contiguous along the
// rows, but no reduction step moves it, so the rows do not go innermost
// (they would read %x with a stride). A column sum reduces in an outer
// loop: no flag.
// CHECK-LABEL: func.func @reductions
// CHECK: linalg.reduce
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.subf %{{.+}}, %{{.+}} : f32
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : f32
func.func @reductions(%x: memref<8x32xf32>, %sum: memref<8xf32>, %mean: memref<8xf32>, %var: memref<8xf32>, %colmax: memref<32xf32>) {
  linalg.reduce ins(%x : memref<8x32xf32>) outs(%sum : memref<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : memref<8x32xf32>, memref<8xf32>) outs(%var : memref<8xf32>) {
    ^bb0(%in: f32, %m: f32, %out: f32):
      %d = arith.subf %in, %m : f32
      %sq = arith.mulf %d, %d : f32
      %s = arith.addf %sq, %out : f32
      linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<8x32xf32>) outs(%colmax : memref<32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.maximumf %in, %out : f32
      linalg.yield %s : f32
  }
  return
}

// -----

// A transpose that moves the input's innermost dimension goes through
// 16x16 blocks: 16 contiguous rows read, shuffled in registers, 16
// contiguous rows written (lowered to loops, it read the input with a
// stride). One that keeps the innermost dimension, or whose dimensions are
// not whole blocks, stays.
// CHECK-LABEL: func.func @transposes
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: %[[ROWS:.+]] = vector.transfer_read %arg0[%[[J]], %[[I]]]{{.*}} : memref<32x48xf32>, vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK-NOT: vector.transpose
// CHECK: vector.transfer_write %{{.+}}, %arg1[%[[I]], %[[J]]]{{.*}} : vector<16x16xf32>, memref<48x32xf32>
// CHECK: linalg.transpose ins(%arg2 : memref<2x16x32xf32>)
// Dimensions that are not whole blocks (20 and 24, as a blocked layout's
// conversion at 56 x 56 pixels has): a block that fits moves as above, one
// that crosses an end with masked rows (no in_bounds: every dimension may
// leave the buffer).
// CHECK: scf.for %[[I2:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: scf.for %[[J2:.+]] = %{{.+}} to %{{.+}} step %c16
// CHECK: %[[FITS:.+]] = arith.andi
// CHECK: scf.if %[[FITS]] {
// CHECK: vector.transfer_read %arg4[%[[J2]], %[[I2]]]{{.*}}in_bounds = [true, true]{{.*}} : memref<20x24xf32>, vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write %{{.+}}, %arg5[%[[I2]], %[[J2]]]{{.*}}in_bounds = [true, true]{{.*}} : vector<16x16xf32>, memref<24x20xf32>
// CHECK: } else {
// CHECK: vector.transfer_read %arg4[%[[J2]], %[[I2]]], %{{[a-z0-9_]+}} : memref<20x24xf32>, vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write %{{.+}}, %arg5[%[[I2]], %[[J2]]] : vector<16x16xf32>, memref<24x20xf32>
// Under half a block (4 rows): element by element.
// CHECK: linalg.transpose ins(%arg6 : memref<4x24xf32>)
// NOBLOCK-LABEL: func.func @transposes
// NOBLOCK-NOT: vector.shuffle
// NOBLOCK: linalg.transpose ins(%arg0 : memref<32x48xf32>)
func.func @transposes(%a: memref<32x48xf32>, %b: memref<48x32xf32>,
                      %c: memref<2x16x32xf32>, %d: memref<16x2x32xf32>,
                      %e: memref<20x24xf32>, %f: memref<24x20xf32>,
                      %g: memref<4x24xf32>, %h: memref<24x4xf32>) {
  linalg.transpose ins(%a : memref<32x48xf32>) outs(%b : memref<48x32xf32>) permutation = [1, 0]
  linalg.transpose ins(%c : memref<2x16x32xf32>) outs(%d : memref<16x2x32xf32>) permutation = [1, 0, 2]
  linalg.transpose ins(%e : memref<20x24xf32>) outs(%f : memref<24x20xf32>) permutation = [1, 0]
  linalg.transpose ins(%g : memref<4x24xf32>) outs(%h : memref<24x4xf32>) permutation = [1, 0]
  return
}
