// RUN: kiln-opt %s -kiln-convert-graph-to-linalg | FileCheck %s
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg -canonicalize -kiln-cpu-tile-and-vectorize=vector-width=16 | FileCheck %s --check-prefix=TILES

// A matrix product marked kiln.integer_input = [-3, 252] computes in 8-bit
// integers: the rows [2 x 4 = 8, 6] as bytes x + 3, K = 6 padded to two
// groups of four with the byte of a 0 (3), the matrix as signed bytes
// [2, 32, 4] (each column's four rows of a group in a row, zeros past row
// 6), -3 times each column's sum as the accumulators' start, and the sum
// back to f32 after the reshape to the result's shape.
// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, d3)>
// CHECK-LABEL: func.func @integer_matmul
// CHECK-DAG: %[[PACKED:.+]] = arith.constant dense<{{.*}}> : tensor<2x32x4xi8>
// CHECK-DAG: %[[START:.+]] = arith.constant dense<{{.*}}> : tensor<32xi32>
// CHECK: arith.fptoui %{{.+}} : f32 to i8
// CHECK: %[[PADDED:.+]] = tensor.pad %{{.+}} low[0, 0] high[0, 2]
// CHECK: tensor.yield %c3_i8 : i8
// CHECK: %[[GROUPS:.+]] = tensor.expand_shape %[[PADDED]] {{\[}}[0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xi8> into tensor<8x2x4xi8>
// CHECK: %[[INIT:.+]] = linalg.broadcast ins(%[[START]] : tensor<32xi32>)
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], #{{.+}}], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[GROUPS]], %[[PACKED]] : tensor<8x2x4xi8>, tensor<2x32x4xi8>) outs(%[[INIT]] : tensor<8x32xi32>)
// CHECK: arith.extui
// CHECK: arith.extsi
// CHECK: %[[SHAPED:.+]] = tensor.expand_shape %[[ACC]] {{\[}}[0, 1], [2]] output_shape [2, 4, 32] : tensor<8x32xi32> into tensor<2x4x32xi32>
// CHECK: linalg.generic {{.*}} ins(%[[SHAPED]] : tensor<2x4x32xi32>)
// CHECK: arith.sitofp

// Register blocks of 8 rows by two vectors: per group of four, each row's
// four bytes broadcast as one lane and two dot products, one per vector of
// 16 columns.
// TILES-LABEL: func.func @integer_matmul
// TILES: scf.for {{.*}} -> (tensor<8x32xi32>, vector<8x16xi32>, vector<8x16xi32>)
// TILES-COUNT-16: kiln.dot_i8 %{{.+}}, %{{.+}}, %{{.+}} : vector<16xi32>
// TILES-NOT: kiln.dot_i8
func.func @integer_matmul(%x: tensor<2x4x6xf32>) -> tensor<2x4x32xf32> {
  %w = graph.constant dense<[[79.0, -107.0, -83.0, -68.0, -82.0, 77.0, 94.0, 21.0, -118.0, -104.0, -43.0, -18.0, 31.0, -6.0, -61.0, -88.0, 49.0, 60.0, -120.0, -99.0, -13.0, -28.0, 99.0, 4.0, -21.0, -18.0, 42.0, 22.0, -84.0, 60.0, 65.0, 116.0], [73.0, -56.0, -47.0, 38.0, 38.0, 50.0, 94.0, -54.0, 112.0, -128.0, -109.0, 121.0, 113.0, -52.0, -93.0, -48.0, -117.0, 100.0, 41.0, 21.0, -66.0, -8.0, -80.0, 69.0, -7.0, -121.0, -63.0, 52.0, 5.0, -33.0, -64.0, -105.0], [27.0, 41.0, 5.0, 110.0, 109.0, -75.0, 27.0, 33.0, -65.0, -52.0, -4.0, 61.0, -54.0, 56.0, 39.0, -73.0, -29.0, 84.0, 87.0, 40.0, -127.0, 46.0, -71.0, 81.0, 105.0, -19.0, 116.0, 66.0, -45.0, 96.0, -30.0, -102.0], [23.0, 89.0, 40.0, -28.0, 102.0, -6.0, -30.0, -91.0, -74.0, 50.0, 76.0, -54.0, 32.0, 95.0, -91.0, -58.0, 6.0, 15.0, -27.0, -26.0, -95.0, 28.0, 110.0, -78.0, 76.0, -82.0, -117.0, 63.0, -82.0, 64.0, -44.0, 17.0], [112.0, 107.0, -7.0, -76.0, -64.0, 89.0, 22.0, -85.0, 98.0, 118.0, 120.0, 31.0, 121.0, 27.0, 0.0, 120.0, 26.0, 73.0, -42.0, 74.0, 121.0, -115.0, 9.0, -34.0, -115.0, -107.0, -60.0, -79.0, 55.0, -74.0, 32.0, 91.0], [-2.0, -96.0, -111.0, -53.0, -23.0, -2.0, -50.0, 89.0, 17.0, 119.0, 111.0, 53.0, -121.0, -74.0, 63.0, 11.0, 113.0, 52.0, 81.0, -115.0, -53.0, 46.0, 34.0, -34.0, -88.0, 22.0, -106.0, 43.0, 77.0, 43.0, -112.0, 5.0]]> : tensor<6x32xf32>
  %y = graph.matmul %x, %w {kiln.integer_input = array<i64: -3, 252>} : (tensor<2x4x6xf32>, tensor<6x32xf32>) -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}
