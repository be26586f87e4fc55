// RUN: kiln-opt %s -kiln-codegen-conv-to-winograd | FileCheck %s

// The transformed filters are resources named "winograd", made unique in
// the order the functions' passes create them, which runs them in parallel:
// any function's may be "winograd_1".

// F(4x4, 3x3) on a 6x6 output: the input is padded to 2x2 tiles of 6x6 (10x10),
// transformed by rows and columns, multiplied by the compile-time filter
// transform in 36 matrix products, and transformed back into 4x4 blocks of an
// 8x8 output, of which the 6x6 corner is added to the convolution's init.
// CHECK-LABEL: func.func @f43
// CHECK-DAG: %[[U:.+]] = arith.constant dense_resource<winograd{{(_[0-9]+)?}}> : tensor<36x4x2xf32>
// CHECK-DAG: %[[BT:.+]] = arith.constant dense<{{.*}}> : tensor<6x6xf32>
// CHECK-DAG: %[[AT:.+]] = arith.constant dense<{{.*}}> : tensor<4x6xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 2, 2]
// CHECK: linalg.generic {{.*}} ins(%[[BT]], %{{.*}} : tensor<6x6xf32>, tensor<1x2x10x10xf32>) outs(%{{.*}} : tensor<6x6x2x1x2x2xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<6x6x2x1x2x2xf32>)
// CHECK: tensor.collapse_shape {{.*}} into tensor<36x2x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[U]], %{{.*}} : tensor<36x4x2xf32>, tensor<36x2x4xf32>) outs(%{{.*}} : tensor<36x4x4xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4x6x4x1x2x2xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x2x4x2x4xf32>)
// CHECK: tensor.extract_slice {{.*}} to tensor<1x4x6x6xf32>
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: linalg.conv_2d_nchw_fchw
func.func @f43(%x: tensor<1x2x8x8xf32>, %init: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w = arith.constant dense<1.0> : tensor<4x2x3x3xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-4x3">}
         ins(%x, %w : tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// F(2x2, 3x3) on a 4x4 output: whole tiles, so no padding, and the output
// transform accumulates straight into the init's 2x2 blocks.
// CHECK-LABEL: func.func @f23_exact
// CHECK-NOT: tensor.pad
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3], [4, 5]] output_shape [1, 4, 2, 2, 2, 2]
// CHECK-NOT: tensor.extract_slice
func.func @f23_exact(%x: tensor<1x2x6x6xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<4x2x3x3xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-2x3">}
         ins(%x, %w : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// Not marked: untouched.
// CHECK-LABEL: func.func @unmarked
// CHECK: linalg.conv_2d_nchw_fchw
func.func @unmarked(%x: tensor<1x2x6x6xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<1.0> : tensor<4x2x3x3xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
