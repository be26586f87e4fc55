// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-blocked-conv | FileCheck %s

// A 3x3 stride-2 blocked convolution becomes nine contractions, one per
// window position, each on a strided slice of the (padded) input and the
// weight's slice at that position, accumulating into the one before. The
// output's block (d4) is every contraction's innermost output dimension.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5, d2, d3, d6)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d5, d6, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv3x3
// CHECK-SAME: (%[[X:.+]]: tensor<1x1x10x10x8xf32>, %[[WT:.+]]: tensor<2x1x3x3x8x8xf32>, %[[B:.+]]: tensor<1x2x4x4x8xf32>)
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 0, 0] [1, 1, 4, 4, 8] [1, 1, 2, 2, 1]
// CHECK: %[[W0:.+]] = tensor.extract_slice %[[WT]][0, 0, 0, 0, 0, 0] [2, 1, 1, 1, 8, 8] [1, 1, 1, 1, 1, 1] : tensor<2x1x3x3x8x8xf32> to tensor<2x1x8x8xf32>
// CHECK: %[[A0:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[S0]], %[[W0]] : tensor<1x1x4x4x8xf32>, tensor<2x1x8x8xf32>) outs(%[[B]] : tensor<1x2x4x4x8xf32>) attrs = {kiln.kernel_config = {rows = 4 : i64}}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[S1:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 1, 0] [1, 1, 4, 4, 8] [1, 1, 2, 2, 1]
// CHECK: %[[A1:.+]] = linalg.generic {{.*}} ins(%[[S1]], %{{.+}} : {{.*}}) outs(%[[A0]] : tensor<1x2x4x4x8xf32>)
// CHECK-COUNT-6: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]]
// CHECK: %[[S8:.+]] = tensor.extract_slice %[[X]][0, 0, 2, 2, 0] [1, 1, 4, 4, 8] [1, 1, 2, 2, 1]
// CHECK: %[[ACC:.+]] = linalg.generic {{.*}} ins(%[[S8]], %{{.+}} : {{.*}})
// CHECK: return %[[ACC]]
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 2 + d6, d3 * 2 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @conv3x3(%x: tensor<1x1x10x10x8xf32>, %w: tensor<2x1x3x3x8x8xf32>, %b: tensor<1x2x4x4x8xf32>) -> tensor<1x2x4x4x8xf32> {
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x10x10x8xf32>, tensor<2x1x3x3x8x8xf32>) outs(%b : tensor<1x2x4x4x8xf32>) attrs = {kiln.blocked_conv = {dilations = array<i64: 1, 1>, strides = array<i64: 2, 2>}, kiln.kernel_config = {rows = 4 : i64}} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4x8xf32>
  return %0 : tensor<1x2x4x4x8xf32>
}

// -----

// A 1x1 stride-1 convolution reads the whole input: one contraction, no
// slice of the input.
// CHECK-LABEL: func.func @conv1x1
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x4x8xf32>
// CHECK: %[[W0:.+]] = tensor.extract_slice %{{.+}}[0, 0, 0, 0, 0, 0] [3, 2, 1, 1, 8, 8]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} ins(%[[X]], %[[W0]] : tensor<1x2x4x4x8xf32>, tensor<3x2x8x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @conv1x1(%x: tensor<1x2x4x4x8xf32>, %w: tensor<3x2x1x1x8x8xf32>, %b: tensor<1x3x4x4x8xf32>) -> tensor<1x3x4x4x8xf32> {
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x4x4x8xf32>, tensor<3x2x1x1x8x8xf32>) outs(%b : tensor<1x3x4x4x8xf32>) attrs = {kiln.blocked_conv = {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>}} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x3x4x4x8xf32>
  return %0 : tensor<1x3x4x4x8xf32>
}

// -----

// Left alone: marked for Winograd (kiln-cpu-conv-to-winograd's work), and a
// tag whose strides do not match the maps (never trusted).
// CHECK-LABEL: func.func @not_expanded
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @not_expanded(%x: tensor<1x1x6x6x8xf32>, %w: tensor<1x1x3x3x8x8xf32>, %b: tensor<1x1x4x4x8xf32>) -> (tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>) {
  %0 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x6x6x8xf32>, tensor<1x1x3x3x8x8xf32>) outs(%b : tensor<1x1x4x4x8xf32>) attrs = {kiln.blocked_conv = {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>}, kiln.conv_algorithm = "winograd-2x3"} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x4x4x8xf32>
  %1 = linalg.generic {indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x1x6x6x8xf32>, tensor<1x1x3x3x8x8xf32>) outs(%b : tensor<1x1x4x4x8xf32>) attrs = {kiln.blocked_conv = {dilations = array<i64: 1, 1>, strides = array<i64: 2, 2>}} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x4x4x8xf32>
  return %0, %1 : tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>
}
