// RUN: rm -rf %t && mkdir -p %t
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "t", "config": {"rows": 2}, "ms": 0.5}' > %t/db.jsonl
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "t", "config": {"rows": 4, "vectors": 1}, "ms": 0.25}' >> %t/db.jsonl
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "t", "config": {"rows": 8}, "error": "did not compile"}' >> %t/db.jsonl
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "other", "config": {"rows": 1}, "ms": 0.1}' >> %t/db.jsonl
// RUN: echo '{"kernel": "linalg.conv_2d_nchw_fchw tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x8x8xf32> strides 1x1 dilations 1x1", "target": "t", "config": {"algorithm": "direct"}, "ms": 1.0}' >> %t/db.jsonl
// RUN: kiln-opt %s -split-input-file -kiln-codegen-apply-kernel-configs="tuning-db=%t/db.jsonl target=t" | FileCheck %s

// The fastest record of the kernel on this target wins; a failed record and
// another target's records are never chosen.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.matmul {kiln.kernel_config = #kiln.kernel_config<vectors = 1, rows = 4>}
func.func @matmul(%a: tensor<32x128xf32>, %b: tensor<128x64xf32>, %c: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<32x128xf32>, tensor<128x64xf32>) outs(%c : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}

// -----

// A convolution gets its algorithm.
// CHECK-LABEL: func.func @conv
// CHECK: linalg.conv_2d_nchw_fchw {{{.*}}kiln.kernel_config = #kiln.kernel_config<algorithm = direct>
func.func @conv(%x: tensor<1x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// -----

// A kernel with no record, and an op that is no kernel, are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: kiln.kernel_config
func.func @untouched(%a: tensor<16x128xf32>, %b: tensor<128x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x128xf32>, tensor<128x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  %1 = linalg.add ins(%0, %0 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %1 : tensor<16x64xf32>
}
