// RUN: kiln-opt %s -kiln-cpu-select-conv-algorithm | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt %s -kiln-cpu-select-conv-algorithm="algorithm=im2col overrides=b1=winograd-2x3" | FileCheck %s --check-prefix=FORCED
// The cost model is the target's, given as options: with transforms as dear
// as F(2,3)'s, the model keeps b1 direct.
// RUN: kiln-opt %s -kiln-cpu-select-conv-algorithm="blocked-transform-cost=24.0" | FileCheck %s --check-prefix=DEAR
// RUN: not kiln-opt %s -kiln-cpu-select-conv-algorithm="overrides=b2=im2col" 2>&1 | FileCheck %s --check-prefix=NOIM2COL
// RUN: not kiln-opt %s -kiln-cpu-select-conv-algorithm="overrides=b2=winograd-4x3" 2>&1 | FileCheck %s --check-prefix=NOWINOGRAD

// Blocked convolutions (the tagged linalg.generic of a graph.blocked_conv):
// a 256-channel 3x3 stride-1 layer on a 14x14 map, where Winograd F(4,3)
// is cheapest by the model (F(2,3) reads a smaller filter, but its output
// transform is slow in this layout; measured 0.71 against 0.82 ms), and a
// strided one, which runs direct. im2col is
// not an algorithm of the blocked layout: as a default it falls back to the
// cost model, as a layer's choice it is an error.
#in1 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#in2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 2 + d6, d3 * 2 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @layers(%x: tensor<1x16x16x16x16xf32>, %y: tensor<1x16x29x29x16xf32>, %b: tensor<1x16x14x14x16xf32>) -> (tensor<1x16x14x14x16xf32>, tensor<1x16x14x14x16xf32>) {
  %w = arith.constant dense<0.5> : tensor<16x16x3x3x16x16xf32>
  %0 = linalg.generic {indexing_maps = [#in1, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x16x16x16x16xf32>, tensor<16x16x3x3x16x16xf32>) outs(%b : tensor<1x16x14x14x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x16x14x14x16xf32> loc("b1 (Conv)")
  %1 = linalg.generic {indexing_maps = [#in2, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%y, %w : tensor<1x16x29x29x16xf32>, tensor<16x16x3x3x16x16xf32>) outs(%b : tensor<1x16x14x14x16xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x16x14x14x16xf32> loc("b2 (Conv)")
  return %0, %1 : tensor<1x16x14x14x16xf32>, tensor<1x16x14x14x16xf32>
}

// AUTO-LABEL: func.func @layers
// AUTO-SAME: kiln.conv_algorithms = ["b1: winograd-4x3 (cost model; 256->256 channels, 3x3, 14x14 output, blocked c=16; estimates direct={{.*}} winograd-2x3={{.*}} winograd-4x3={{.*}} winograd-6x3={{.*}})", "b2: direct (cost model; 256->256 channels, 3x3, 14x14 output, blocked c=16; estimates direct={{[0-9.]+}})"]
// AUTO: kiln.blocked_conv = {{.*}}, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-4x3">
// AUTO: kiln.blocked_conv = {{.*}}, kiln.conv_algorithm = #kiln.conv_algorithm<direct>
// DEAR-LABEL: func.func @layers
// DEAR-SAME: "b1: direct (cost model;

// FORCED: kiln.conv_algorithms = ["b1: winograd-2x3 (override; {{.*}}", "b2: direct (cost model; {{.*}}"]

// NOIM2COL: error: {{.*}}layer 'b2' cannot use im2col: a convolution in the blocked layout runs direct or Winograd (--layout=nchw for im2col)
// NOWINOGRAD: error: {{.*}}layer 'b2' cannot use winograd-4x3: Winograd needs a 3x3, stride-1
