// RUN: kiln-opt %s -kiln-convert-graph-to-linalg | FileCheck %s
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg -canonicalize -kiln-cpu-tile-and-vectorize=vector-width=4 | FileCheck %s --check-prefix=TILES
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg -kiln-cpu-select-conv-algorithm | FileCheck %s --check-prefix=REPORT

// A blocked convolution marked kiln.integer_input = [-2, 253] (a uint8
// activation less a zero point of 2) computes in 8-bit integers: the input
// shifted to bytes x + 2, the weight as signed bytes with each lane's four
// input channels in a row, the bias plus -2 times each filter's sum as the
// i32 accumulators' start (1 - 2 * (1 + 5 + 9 + 13) = -55), ten loops with
// the groups of four innermost, and the sum back to f32 before the residual
// and the activation.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d0, d5, d2 * 2 + d6, d3 * 2 + d7, d8, d9)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9) -> (d1, d5, d6, d7, d8, d4, d9)>
// CHECK-LABEL: func.func @integer_conv
// CHECK-DAG: %[[PACKED:.+]] = arith.constant dense<{{.*}}[1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15], [4, 8, 12, 16]{{.*}}[-4, -8, -12, -128]{{.*}}> : tensor<2x1x1x1x1x4x4xi8>
// CHECK-DAG: arith.constant dense<{{.*}}-55, -62, -69, -76], [61, 70, 79, 312]]> : tensor<2x4xi32>
// CHECK-DAG: %[[LOW:.+]] = arith.constant -2.000000e+00 : f32
// CHECK: linalg.generic
// CHECK: arith.subf %{{.+}}, %[[LOW]] : f32
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: %[[GROUPS:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3], [4, 5]] output_shape [1, 1, 6, 6, 1, 4] : tensor<1x1x6x6x4xi8> into tensor<1x1x6x6x1x4xi8>
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction", "reduction"]} ins(%[[GROUPS]], %[[PACKED]] : tensor<1x1x6x6x1x4xi8>, tensor<2x1x1x1x1x4x4xi8>) outs(%{{.+}} : tensor<1x2x3x3x4xi32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>}
// CHECK: arith.extui %{{.+}} : i8 to i32
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.+}} : tensor<1x2x3x3x4xi32>, tensor<1x2x3x3x4xf32>)
// CHECK: arith.sitofp %{{.+}} : i32 to f32
// CHECK: arith.addf
// CHECK: arith.maximumf

// The integer form is direct (no Winograd), and the report says how it
// computes.
// REPORT: kiln.conv_algorithms = ["conv#0: direct (cost model; 4->8 channels, 1x1, 3x3 output, blocked c=4, int8 dot products; estimates direct={{[0-9.]+}})"]

// Each output tile (3 rows of one block) keeps its i32 accumulators in
// registers across the reduction, whose steps are one group of four input
// channels: per row, its four bytes broadcast as one lane, and a dot product
// with the block's 16 weight bytes. The epilogue runs on the tile.
// TILES-LABEL: func.func @integer_conv
// TILES: scf.for {{.*}} -> (tensor<1x1x1x3x4xi32>, vector<3x4xi32>)
// TILES: vector.transfer_read {{.*}} : tensor<1x1x6x6x1x4xi8>, vector<4xi8>
// TILES: vector.bitcast %{{.+}} : vector<4xi8> to vector<1xi32>
// TILES: vector.transfer_read {{.*}} : tensor<16xi8>, vector<16xi8>
// TILES: vector.bitcast %{{.+}} : vector<16xi8> to vector<4xi32>
// TILES-COUNT-3: kiln.dot_i8 %{{.+}}, %{{.+}}, %{{.+}} : vector<4xi32>
// TILES-NOT: kiln.dot_i8
// TILES: arith.sitofp %{{.+}} : vector<3x4xi32> to vector<3x4xf32>
func.func @integer_conv(%x: tensor<1x1x6x6x4xf32, #graph.blocked<c = 4>>, %r: tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>> {
  %w = graph.constant dense<[[[[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]]]], [[[[[-1.0, -2.0, -3.0, -4.0], [-5.0, -6.0, -7.0, -8.0], [-9.0, -10.0, -11.0, -12.0], [-13.0, -14.0, -15.0, -128.0]]]]]]> : tensor<2x1x1x1x4x4xf32>
  %b = graph.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %y = graph.blocked_conv %x, %w, %b residual %r activation relu {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, kiln.integer_input = array<i64: -2, 253>} : (tensor<1x1x6x6x4xf32, #graph.blocked<c = 4>>, tensor<2x1x1x1x4x4xf32>, tensor<2x4xf32>, tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
}
