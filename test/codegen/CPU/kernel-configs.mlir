// RUN: kiln-opt %s -split-input-file -kiln-cpu-select-conv-algorithm -kiln-codegen-conv-to-im2col -kiln-cpu-tile-and-vectorize=parallel=true | FileCheck %s

// The configuration of a matmul sets its register block: 4 rows of one
// 16-lane vector, two reduction steps per iteration (8 FMAs), on one thread.
// CHECK-LABEL: func.func @configured_matmul
// CHECK-NOT: scf.forall
// CHECK: scf.for {{.*}} step %c16
// CHECK:   scf.for {{.*}} step %c4
// CHECK:     vector.transfer_read {{.*}} vector<4x16xf32>
// CHECK:     scf.for {{.*}} step %c2 iter_args
// CHECK-COUNT-8: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK:     }
func.func @configured_matmul(%a: tensor<64x32xf32>, %b: tensor<32x128xf32>, %c: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = linalg.matmul {kiln.kernel_config = #kiln.kernel_config<vectors = 1, rows = 4, k_tile = 2, parallel = false>}
    ins(%a, %b : tensor<64x32xf32>, tensor<32x128xf32>) outs(%c : tensor<64x128xf32>) -> tensor<64x128xf32>
  return %0 : tensor<64x128xf32>
}

// -----

// A row block that does not divide M (197 tokens, prime): the product is
// split into 192 rows in blocks of 6 and a 5-row remainder in one block,
// both keeping the configuration.
// CHECK-LABEL: func.func @configured_rows_remainder
// CHECK: tensor.extract_slice %arg2[0, 0] [192, 128]
// CHECK: scf.for {{.*}} = %c0 to %c192 step %c6
// CHECK: vector.transfer_read {{.*}} vector<6x16xf32>
// CHECK: vector.transfer_read {{.*}} vector<5x16xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[192, 0] [5, 128]
func.func @configured_rows_remainder(%a: tensor<197x64xf32>, %b: tensor<64x128xf32>, %c: tensor<197x128xf32>) -> tensor<197x128xf32> {
  %0 = linalg.matmul {kiln.kernel_config = #kiln.kernel_config<vectors = 1, rows = 6, parallel = false>}
    ins(%a, %b : tensor<197x64xf32>, tensor<64x128xf32>) outs(%c : tensor<197x128xf32>) -> tensor<197x128xf32>
  return %0 : tensor<197x128xf32>
}

// -----

// A narrower vector width: two 8-lane vectors by 2 rows per block.
// CHECK-LABEL: func.func @configured_batch_matmul
// CHECK: scf.forall {{.*}} step (1, 16, 2)
// CHECK: vector.fma {{.*}} : vector<16xf32>
func.func @configured_batch_matmul(%a: tensor<2x64x32xf32>, %b: tensor<2x32x128xf32>, %c: tensor<2x64x128xf32>) -> tensor<2x64x128xf32> {
  %0 = linalg.batch_matmul {kiln.kernel_config = #kiln.kernel_config<vector_width = 8, rows = 2>}
    ins(%a, %b : tensor<2x64x32xf32>, tensor<2x32x128xf32>) outs(%c : tensor<2x64x128xf32>) -> tensor<2x64x128xf32>
  return %0 : tensor<2x64x128xf32>
}

// -----

// algorithm = "direct" (from the tuning database) keeps a convolution out of
// im2col.
// CHECK-LABEL: func.func @conv_loops
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-NOT: vector.fma
func.func @conv_loops(%x: tensor<1x3x10x10xf32>, %w: tensor<32x3x3x3xf32>, %init: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, kiln.kernel_config = #kiln.kernel_config<algorithm = direct>}
    ins(%x, %w : tensor<1x3x10x10xf32>, tensor<32x3x3x3xf32>) outs(%init : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return %0 : tensor<1x32x8x8xf32>
}

// -----

// With im2col, the convolution's knobs steer its contraction: one vector
// of output pixels by 8 filters.
// CHECK-LABEL: func.func @conv_im2col
// CHECK: scf.forall {{.*}} step (16, 8)
// CHECK: vector.fma {{.*}} : vector<16xf32>
func.func @conv_im2col(%x: tensor<1x3x10x10xf32>, %w: tensor<32x3x3x3xf32>, %init: tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, kiln.kernel_config = #kiln.kernel_config<algorithm = im2col, vectors = 1, rows = 8>}
    ins(%x, %w : tensor<1x3x10x10xf32>, tensor<32x3x3x3xf32>) outs(%init : tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return %0 : tensor<1x32x8x8xf32>
}
