// RUN: kiln-opt %s -kiln-convert-graph-to-linalg | FileCheck %s
// RUN: kiln-opt %s -kiln-convert-graph-to-linalg -canonicalize -kiln-cpu-tile-and-vectorize=vector-width=4 | FileCheck %s --check-prefix=TILES

// A blocked convolution marked kiln.bf16 (--precision=bf16): the input
// truncated to bf16 and padded with 0 (3 channels to a whole pair), the
// weight as bf16 with each lane's pair of input channels in a row, the f32
// bias as the accumulators' start, ten loops with the pairs innermost.
// CHECK-LABEL: func.func @bf16_conv
// CHECK-DAG: arith.constant dense<{{.*}}> : tensor<1x1x1x1x2x4x2xbf16>
// CHECK-DAG: arith.constant dense<{{\[}}[5.000000e-01, 1.500000e+00, 2.500000e+00, 3.500000e+00]]> : tensor<1x4xf32>
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: tensor.pad %{{.+}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 1]
// CHECK: tensor.expand_shape %{{.+}} output_shape [1, 1, 6, 6, 2, 2] : tensor<1x1x6x6x4xbf16> into tensor<1x1x6x6x2x2xbf16>
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x1x6x6x2x2xbf16>, tensor<1x1x1x1x2x4x2xbf16>) outs(%{{.+}} : tensor<1x1x6x6x4xf32>) attrs = {kiln.blocked_conv
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.mulf
// CHECK: arith.addf

// Each step: per row, its pair of bf16 broadcast as one 32-bit lane, and a
// bf16 dot product with the block's 4 x 2 weights.
// TILES-LABEL: func.func @bf16_conv
// TILES: vector.bitcast %{{.+}} : vector<2xbf16> to vector<1xi32>
// TILES: vector.bitcast %{{.+}} : vector<8xbf16> to vector<4xi32>
// TILES: kiln.dot_bf16 %{{.+}}, %{{.+}}, %{{.+}} : vector<4xi32> -> vector<4xf32>
func.func @bf16_conv(%x: tensor<1x1x4x4x3xf32, #graph.blocked<c = 3>>) -> tensor<1x1x6x6x4xf32, #graph.blocked<c = 4>> {
  %w = graph.constant dense<[[[[[[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]]]]]]> : tensor<1x1x1x1x3x4xf32>
  %b = graph.constant dense<[[0.5, 1.5, 2.5, 3.5]]> : tensor<1x4xf32>
  %y = graph.blocked_conv %x, %w, %b activation none {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, kiln.bf16} : (tensor<1x1x4x4x3xf32, #graph.blocked<c = 3>>, tensor<1x1x1x1x3x4xf32>, tensor<1x4xf32>) -> tensor<1x1x6x6x4xf32, #graph.blocked<c = 4>>
  return %y : tensor<1x1x6x6x4xf32, #graph.blocked<c = 4>>
}
