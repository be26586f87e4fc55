// RUN: kiln-opt %s -split-input-file -kiln-codegen-conv-to-winograd | FileCheck %s

// The blocked layout: F(2x2, 3x3) on a 4x4 output of one 8-channel block,
// from a 2-block input. The transformed filter is [16, 1, 2, 8, 8]
// ([b, ko, cb, i, o]); the tiles keep the channel block innermost
// ([b, cb, p, i] after collapsing), so the products contract (cb, i) with
// the output block o as their innermost dimension, and the output
// transform writes the blocked output's 2x2 blocks. Each transform is one
// elementwise op over (block, image, tile row, tile column, lane) with a
// result per transformed value (16 in, 4 out), the transform matrices folded
// into its arithmetic (no constant tensor holds them); the parts are
// inserted into the whole, transposed into the output's blocks and added
// to the init (an input, so that elementwise fusion can take the bias's
// producer and the epilogue in).
// CHECK-DAG: #[[V:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d4, d2, d5)>
// CHECK-DAG: #[[U:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5, d3)>
// CHECK-DAG: #[[M:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @blocked_f23
// CHECK: arith.constant dense_resource<winograd{{(_[0-9]+)?}}> : tensor<16x1x2x8x8xf32>
// CHECK-NOT: tensor<4x4xf32>
// CHECK: %[[IN:.+]]:16 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x2x6x6x8xf32>,
// CHECK-NOT: arith.negf
// CHECK: arith.subf
// CHECK-NOT: arith.mulf
// CHECK: linalg.yield
// CHECK: tensor.insert_slice %[[IN]]#15 into %{{.+}}[3, 3, 0, 0, 0, 0, 0] [1, 1, 2, 1, 2, 2, 8]
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2], [3, 4, 5], [6]] : tensor<4x4x2x1x2x2x8xf32> into tensor<16x2x4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[V]], #[[U]], #[[M]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<16x2x4x8xf32>, tensor<16x1x2x8x8xf32>) outs(%{{.+}} : tensor<16x1x4x8xf32>)
// CHECK: %[[OUT:.+]]:4 = linalg.generic {{.*}} outs(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x1x2x2x8xf32>, tensor<1x1x2x2x8xf32>, tensor<1x1x2x2x8xf32>, tensor<1x1x2x2x8xf32>)
// CHECK: tensor.insert_slice %[[OUT]]#3 into %{{.+}}[1, 1, 0, 0, 0, 0, 0]
// CHECK: %[[T:.+]] = linalg.transpose ins(%{{.+}} : tensor<2x2x1x1x2x2x8xf32>) outs(%{{.+}} : tensor<1x1x2x2x2x2x8xf32>) permutation = [2, 3, 4, 0, 5, 1, 6]
// CHECK: %[[F:.+]] = tensor.collapse_shape %[[T]] {{.*}} : tensor<1x1x2x2x2x2x8xf32> into tensor<1x1x4x4x8xf32>
// CHECK: %[[Y:.+]] = linalg.generic {{.*}} ins(%[[F]], %arg1 : tensor<1x1x4x4x8xf32>, tensor<1x1x4x4x8xf32>)
// CHECK: arith.addf
// CHECK: return %[[Y]]
#bin = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#bw = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#bout = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
func.func @blocked_f23(%x: tensor<1x2x6x6x8xf32>, %b: tensor<1x1x4x4x8xf32>) -> tensor<1x1x4x4x8xf32> {
  %w = arith.constant dense<0.5> : tensor<1x2x3x3x8x8xf32>
  %0 = linalg.generic {indexing_maps = [#bin, #bw, #bout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x6x6x8xf32>, tensor<1x2x3x3x8x8xf32>) outs(%b : tensor<1x1x4x4x8xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-2x3">} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x4x4x8xf32>
  return %0 : tensor<1x1x4x4x8xf32>
}

// -----

// A bias broadcast into the init ([kBlocks, c] along the block and lane
// dimensions) is added in the output transform, read as [ko, o]: the
// parts, transposed into the output's blocks and cropped to the 3x3
// output, are the result, with no sum after them.
// CHECK-LABEL: func.func @blocked_f23_bias
// CHECK: %{{.+}}:4 = linalg.generic {{.*}} ins({{.*}}, %[[BIAS:.+]] : {{.*}}tensor<1x8xf32>)
// CHECK: arith.addf
// CHECK: linalg.transpose
// CHECK: %[[FULL:.+]] = tensor.collapse_shape {{.*}} into tensor<1x1x4x4x8xf32>
// CHECK: %[[Y:.+]] = tensor.extract_slice %[[FULL]][0, 0, 0, 0, 0] [1, 1, 3, 3, 8] [1, 1, 1, 1, 1]
// CHECK-NEXT: return %[[Y]]
#bin2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 + d6, d3 + d7, d8)>
#bw2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
#bout2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
#bias = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @blocked_f23_bias(%x: tensor<1x2x5x5x8xf32>) -> tensor<1x1x3x3x8xf32> {
  %w = arith.constant dense<0.5> : tensor<1x2x3x3x8x8xf32>
  %bias = arith.constant dense<0.25> : tensor<1x8xf32>
  %e = tensor.empty() : tensor<1x1x3x3x8xf32>
  %b = linalg.generic {indexing_maps = [#bias, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%bias : tensor<1x8xf32>) outs(%e : tensor<1x1x3x3x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x1x3x3x8xf32>
  %0 = linalg.generic {indexing_maps = [#bin2, #bw2, #bout2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w : tensor<1x2x5x5x8xf32>, tensor<1x2x3x3x8x8xf32>) outs(%b : tensor<1x1x3x3x8xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1], dilations = [1, 1]>, kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-2x3">} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %a, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x1x3x3x8xf32>
  return %0 : tensor<1x1x3x3x8xf32>
}
