// RUN: kiln-opt %s -split-input-file -kiln-cpu-select-conv-algorithm | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt %s -split-input-file -kiln-cpu-select-conv-algorithm="algorithm=direct overrides=c1=winograd-6x3" | FileCheck %s --check-prefix=FORCED
// RUN: not kiln-opt %s -split-input-file -kiln-cpu-select-conv-algorithm="overrides=c2=winograd-4x3" 2>&1 | FileCheck %s --check-prefix=ILLEGAL

// A 256-channel 3x3 stride-1 layer on a 14x14 map (Winograd F(2,3) by the
// cost model: F(4,3) does fewer multiply-adds but reads a filter 4x the
// layer's from memory), and a strided one (never
// Winograd).
func.func @layers(%x: tensor<1x256x16x16xf32>, %y: tensor<1x256x29x29xf32>) -> (tensor<1x256x14x14xf32>, tensor<1x256x14x14xf32>) {
  %w = arith.constant dense<0.5> : tensor<256x256x3x3xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x256x14x14xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x256x14x14xf32>) -> tensor<1x256x14x14xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x256x16x16xf32>, tensor<256x256x3x3xf32>) outs(%init : tensor<1x256x14x14xf32>) -> tensor<1x256x14x14xf32> loc("c1 (Conv)")
  %1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
         ins(%y, %w : tensor<1x256x29x29xf32>, tensor<256x256x3x3xf32>) outs(%init : tensor<1x256x14x14xf32>) -> tensor<1x256x14x14xf32> loc("c2 (Conv)")
  return %0, %1 : tensor<1x256x14x14xf32>, tensor<1x256x14x14xf32>
}

// AUTO-LABEL: func.func @layers
// AUTO-SAME: kiln.conv_algorithms = ["c1: winograd-2x3 (cost model; 256->256 channels, 3x3, 14x14 output; estimates im2col={{.*}} winograd-6x3={{.*}})", "c2: im2col (cost model; {{.*}})"]
// AUTO: linalg.conv_2d_nchw_fchw {dilations = {{.*}}, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-2x3">
// AUTO: linalg.conv_2d_nchw_fchw {dilations = {{.*}}, kiln.conv_algorithm = #kiln.conv_algorithm<im2col>

// FORCED: linalg.conv_2d_nchw_fchw {{.*}}kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-6x3">
// FORCED: linalg.conv_2d_nchw_fchw {{.*}}kiln.conv_algorithm = #kiln.conv_algorithm<direct>

// ILLEGAL: error: {{.*}}'linalg.conv_2d_nchw_fchw' op layer 'c2' cannot use winograd-4x3: Winograd needs a 3x3, stride-1, undilated f32 convolution with static shapes and constant weights
