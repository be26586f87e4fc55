// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// Kiln's typed attributes print in one canonical form (the knobs of a
// kernel configuration in a fixed order, an algorithm that is not a keyword
// as a string) and read back to the same attribute.

// CHECK-LABEL: func.func private @kernel
// CHECK-SAME: kiln.kernel = #kiln.kernel<flops = 1064, source = "fc (Gemm), act (Relu)">
func.func private @kernel() attributes {kiln.kernel = #kiln.kernel<source = "fc (Gemm), act (Relu)", flops = 1064>}

// CHECK-LABEL: func.func @ops
func.func @ops(%x: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: kiln.kernel_config = #kiln.kernel_config<algorithm = "winograd-4x3", vector_width = 8, vectors = 2, rows = 4, k_tile = 3, parallel = false, tiles = 8>
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<tiles = 8, parallel = false, k_tile = 3, rows = 4, vectors = 2, vector_width = 8, algorithm = "winograd-4x3">} : tensor<2xf32>
  // CHECK: kiln.kernel_config = #kiln.kernel_config<algorithm = direct>
  %1 = graph.relu %0 {kiln.kernel_config = #kiln.kernel_config<algorithm = "direct">} : tensor<2xf32>
  // CHECK: kiln.kernel_config = #kiln.kernel_config<>
  %2 = graph.relu %1 {kiln.kernel_config = #kiln.kernel_config<>} : tensor<2xf32>
  // CHECK: kiln.conv_algorithm = #kiln.conv_algorithm<im2col>
  %3 = graph.relu %2 {kiln.conv_algorithm = #kiln.conv_algorithm<"im2col">} : tensor<2xf32>
  // CHECK: kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-6x3">
  %4 = graph.relu %3 {kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-6x3">} : tensor<2xf32>
  // CHECK: kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 1], dilations = [1, 3]>
  %5 = graph.relu %4 {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 1], dilations = [1, 3]>} : tensor<2xf32>
  return %5 : tensor<2xf32>
}
