// RUN: kiln-opt %s -split-input-file -kiln-convert-graph-to-linalg | FileCheck %s

// The encoding is dropped; channels are padded, split and moved innermost.
// CHECK-LABEL: func.func @to_blocked
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK: %[[P:.+]] = tensor.pad %[[X]] low[0, 0, 0, 0] high[0, 13, 0, 0]
// CHECK: %[[E:.+]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 4, 4]
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[E]] : tensor<1x1x16x4x4xf32>) outs(%{{.+}} : tensor<1x1x4x4x16xf32>) permutation = [0, 1, 3, 4, 2]
// CHECK: return %[[T]]
func.func @to_blocked(%x: tensor<1x3x4x4xf32>) -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>> {
  %0 = graph.to_blocked %x : tensor<1x3x4x4xf32> -> tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
  return %0 : tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>
}

// -----

// CHECK-LABEL: func.func @from_blocked
// CHECK-SAME: (%[[Y:.+]]: tensor<1x1x4x4x16xf32>) -> tensor<1x3x4x4xf32>
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[Y]] : tensor<1x1x4x4x16xf32>) outs(%{{.+}} : tensor<1x1x16x4x4xf32>) permutation = [0, 1, 4, 2, 3]
// CHECK: %[[C:.+]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x1x16x4x4xf32> into tensor<1x16x4x4xf32>
// CHECK: %[[S:.+]] = tensor.extract_slice %[[C]][0, 0, 0, 0] [1, 3, 4, 4] [1, 1, 1, 1]
// CHECK: return %[[S]]
func.func @from_blocked(%y: tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>>) -> tensor<1x3x4x4xf32> {
  %0 = graph.from_blocked %y : tensor<1x1x4x4x16xf32, #graph.blocked<c = 16>> -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// A 3x3 convolution: the input padded on H and W, the bias broadcast as the
// initial accumulator, then one contraction over the channel blocks and the
// window, tagged with its strides and dilations for the CPU passes
// (test/codegen/CPU/tile-and-vectorize.mlir, blocked-winograd.mlir); then the
// epilogue (residual and relu).
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d5, d2 * 2 + d6, d3 * 2 + d7, d8)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d5, d6, d7, d8, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @conv3x3
// CHECK: %[[P:.+]] = tensor.pad %{{.+}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK: %[[INIT:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<2x8xf32>) outs(%{{.+}} : tensor<1x2x4x4x8xf32>)
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%[[P]], %{{.+}} : tensor<1x1x10x10x8xf32>, tensor<2x1x3x3x8x8xf32>) outs(%[[INIT]] : tensor<1x2x4x4x8xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[ACC]], %{{.+}} : tensor<1x2x4x4x8xf32>, tensor<1x2x4x4x8xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
func.func @conv3x3(%x: tensor<1x1x8x8x8xf32, #graph.blocked<c = 8>>, %w: tensor<2x1x3x3x8x8xf32>, %b: tensor<2x8xf32>, %r: tensor<1x2x4x4x8xf32, #graph.blocked<c = 8>>) -> tensor<1x2x4x4x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.blocked_conv %x, %w, %b residual %r activation relu {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x8x8x8xf32, #graph.blocked<c = 8>>, tensor<2x1x3x3x8x8xf32>, tensor<2x8xf32>, tensor<1x2x4x4x8xf32, #graph.blocked<c = 8>>) -> tensor<1x2x4x4x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x2x4x4x8xf32, #graph.blocked<c = 8>>
}

// -----

// A strided 1x1 convolution without bias: zeros as the accumulator, no
// epilogue.
// CHECK-LABEL: func.func @conv1x1
// CHECK: %[[F:.+]] = linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x2x8x8x8xf32>, tensor<3x2x1x1x8x8xf32>) outs(%[[F]] : tensor<1x3x4x4x8xf32>) attrs = {kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>}
// CHECK-NOT: linalg.generic
func.func @conv1x1(%x: tensor<1x2x8x8x8xf32, #graph.blocked<c = 8>>, %w: tensor<3x2x1x1x8x8xf32>) -> tensor<1x3x4x4x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x8x8x8xf32, #graph.blocked<c = 8>>, tensor<3x2x1x1x8x8xf32>) -> tensor<1x3x4x4x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x3x4x4x8xf32, #graph.blocked<c = 8>>
}

// -----

// A grouped convolution (3 groups of 2 input blocks, 2 filter blocks each):
// output block d1 reads input block (d1 floordiv 2) * 2 + d5 of its group.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, (d1 floordiv 2) * 2 + d5, d2 + d6, d3 + d7, d8)>
// CHECK-LABEL: func.func @grouped
// CHECK: linalg.generic {indexing_maps = [#[[IN]], {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x6x6x6x8xf32>, tensor<6x2x3x3x8x8xf32>) outs(%{{.+}} : tensor<1x6x4x4x8xf32>) attrs = {kiln.blocked_conv
func.func @grouped(%x: tensor<1x6x6x6x8xf32, #graph.blocked<c = 8>>, %w: tensor<6x2x3x3x8x8xf32>) -> tensor<1x6x4x4x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x6x6x6x8xf32, #graph.blocked<c = 8>>, tensor<6x2x3x3x8x8xf32>) -> tensor<1x6x4x4x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x6x4x4x8xf32, #graph.blocked<c = 8>>
}

// -----

// A max pool: the input padded with -inf, then one all-parallel generic over
// the nine strided slices of it at the window positions, their maximum in
// its body.
// CHECK-LABEL: func.func @max_pool
// CHECK: %[[P:.+]] = tensor.pad %{{.+}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK: tensor.yield %[[LOWEST:.+]] : f32
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0, 0] [1, 1, 4, 4, 8] [1, 1, 2, 2, 1]
// CHECK: %[[S8:.+]] = tensor.extract_slice %[[P]][0, 0, 2, 2, 0] [1, 1, 4, 4, 8] [1, 1, 2, 2, 1]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[S0]], {{.*}}, %[[S8]] : {{.*}}) outs(%{{.+}} : tensor<1x1x4x4x8xf32>)
// CHECK-COUNT-8: arith.maximumf
func.func @max_pool(%x: tensor<1x1x8x8x8xf32, #graph.blocked<c = 8>>) -> tensor<1x1x4x4x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.blocked_max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x1x8x8x8xf32, #graph.blocked<c = 8>>) -> tensor<1x1x4x4x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x1x4x4x8xf32, #graph.blocked<c = 8>>
}

// -----

// A 5x5 window (25 positions, more than one generic takes in slices) pools
// by rows, then by columns: five slices of the padded input down its rows
// into [.., 20, 24, ..], then five slices of that along its columns.
// CHECK-LABEL: func.func @max_pool_5x5
// CHECK: %[[P:.+]] = tensor.pad %{{.+}} low[0, 0, 2, 2, 0] high[0, 0, 2, 2, 0]
// CHECK: %[[R0:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0, 0] [1, 1, 20, 24, 8] [1, 1, 1, 1, 1]
// CHECK: %[[R4:.+]] = tensor.extract_slice %[[P]][0, 0, 4, 0, 0] [1, 1, 20, 24, 8] [1, 1, 1, 1, 1]
// CHECK: %[[ROWS:.+]] = linalg.generic {{.*}} ins(%[[R0]], {{.*}}, %[[R4]] : {{.*}}) outs(%{{.+}} : tensor<1x1x20x24x8xf32>)
// CHECK-COUNT-4: arith.maximumf
// CHECK: %[[C0:.+]] = tensor.extract_slice %[[ROWS]][0, 0, 0, 0, 0] [1, 1, 20, 20, 8] [1, 1, 1, 1, 1]
// CHECK: %[[C4:.+]] = tensor.extract_slice %[[ROWS]][0, 0, 0, 4, 0] [1, 1, 20, 20, 8] [1, 1, 1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[C0]], {{.*}}, %[[C4]] : {{.*}}) outs(%{{.+}} : tensor<1x1x20x20x8xf32>)
// CHECK-COUNT-4: arith.maximumf
func.func @max_pool_5x5(%x: tensor<1x1x20x20x8xf32, #graph.blocked<c = 8>>) -> tensor<1x1x20x20x8xf32, #graph.blocked<c = 8>> {
  %0 = graph.blocked_max_pool %x {kernel_shape = array<i64: 5, 5>, strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x1x20x20x8xf32, #graph.blocked<c = 8>>) -> tensor<1x1x20x20x8xf32, #graph.blocked<c = 8>>
  return %0 : tensor<1x1x20x20x8xf32, #graph.blocked<c = 8>>
}

// -----

// A depthwise convolution is one elementwise generic: one strided slice of
// the padded input and one [C1, c] slice of the weight per window position
// (2 x 2 here), the bias (d1, d4) and the residual, with the products
// summed onto the bias and the epilogue applied in the body.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[PC:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-LABEL: func.func @depthwise
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x6x6x4xf32>, %[[W:.+]]: tensor<2x2x2x4xf32>, %[[B:.+]]: tensor<2x4xf32>, %[[R:.+]]: tensor<1x2x3x3x4xf32>)
// CHECK: %[[P:.+]] = tensor.pad %[[X]] low[0, 0, 1, 1, 0] high[0, 0, 0, 0, 0]
// CHECK: %[[I00:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0, 0] [1, 2, 3, 3, 4] [1, 1, 2, 2, 1]
// CHECK: %[[I01:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 1, 0] [1, 2, 3, 3, 4] [1, 1, 2, 2, 1]
// CHECK: %[[I10:.+]] = tensor.extract_slice %[[P]][0, 0, 1, 0, 0] [1, 2, 3, 3, 4] [1, 1, 2, 2, 1]
// CHECK: %[[I11:.+]] = tensor.extract_slice %[[P]][0, 0, 1, 1, 0] [1, 2, 3, 3, 4] [1, 1, 2, 2, 1]
// CHECK: %[[W00:.+]] = tensor.extract_slice %[[W]][0, 0, 0, 0] [2, 1, 1, 4] [1, 1, 1, 1] : tensor<2x2x2x4xf32> to tensor<2x4xf32>
// CHECK-COUNT-3: tensor.extract_slice %[[W]]
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]], #[[PC]], #[[PC]], #[[PC]], #[[PC]], #[[PC]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[I00]], %[[I01]], %[[I10]], %[[I11]], %[[W00]], %{{.+}}, %{{.+}}, %{{.+}}, %[[B]], %[[R]] :
// CHECK: ^bb0(%[[A0:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %[[K0:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32, %{{.+}}: f32, %[[BIAS:.+]]: f32, %[[RES:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[M0:.+]] = arith.mulf %[[A0]], %[[K0]]
// CHECK: arith.addf %[[BIAS]], %[[M0]]
// CHECK-COUNT-3: arith.mulf
// CHECK: %[[S:.+]] = arith.addf %{{.+}}, %[[RES]]
// CHECK: %[[Y:.+]] = arith.maximumf %[[S]], %{{.+}}
// CHECK: linalg.yield %[[Y]]
func.func @depthwise(%x: tensor<1x2x6x6x4xf32, #graph.blocked<c = 4>>, %w: tensor<2x2x2x4xf32>, %b: tensor<2x4xf32>, %r: tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>> {
  %0 = graph.blocked_depthwise_conv %x, %w, %b residual %r activation relu {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x6x6x4xf32, #graph.blocked<c = 4>>, tensor<2x2x2x4xf32>, tensor<2x4xf32>, tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
  return %0 : tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
}

// -----

// An average pool: window sums of the zero-padded input (one all-parallel
// generic over the nine strided slices), divided by the elements each
// window holds inside the input (count_include_pad = false: 4 at the
// corners, 6 at the edges, 9 inside), a [OH, OW, 1] constant.
// CHECK-DAG: #[[DIV:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, 0)>
// CHECK-LABEL: func.func @average_pool
// CHECK: %[[P:.+]] = tensor.pad %{{.+}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK: %[[S0:.+]] = tensor.extract_slice %[[P]][0, 0, 0, 0, 0] [1, 2, 3, 3, 4] [1, 1, 2, 2, 1]
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[S0]],
// CHECK-COUNT-8: arith.addf
// CHECK: %[[D:.+]] = arith.constant dense<{{\[\[\[}}4.000000e+00], [6.000000e+00], [4.000000e+00]], {{\[\[}}6.000000e+00], [9.000000e+00], [6.000000e+00]], {{\[\[}}4.000000e+00], [6.000000e+00], [4.000000e+00]]]> : tensor<3x3x1xf32>
// CHECK: linalg.generic {indexing_maps = [{{.+}}, #[[DIV]], {{.+}}]{{.*}} ins(%[[SUM]], %[[D]]
// CHECK: arith.divf
func.func @average_pool(%x: tensor<1x2x5x5x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>> {
  %0 = graph.blocked_average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x2x5x5x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
  return %0 : tensor<1x2x3x3x4xf32, #graph.blocked<c = 4>>
}

// -----

// A global average pool (a 7x7 window, more than poolBySlices takes): the
// window as reduction loops outside the block's channels, which are the
// innermost loop (contiguous, a vector of accumulators), then the division.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2 + d4, d3 + d5, d6)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d6)>
// CHECK-LABEL: func.func @global_average_pool
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[IN]], #{{.+}}, #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[SUM]]
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
func.func @global_average_pool(%x: tensor<1x2x7x7x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>> {
  %0 = graph.blocked_average_pool %x {kernel_shape = array<i64: 7, 7>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<1x2x7x7x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>
  return %0 : tensor<1x2x1x1x4xf32, #graph.blocked<c = 4>>
}

// -----

// Elementwise ops and concat of blocked tensors lower as they do on any
// tensor, with the encoding dropped.
// CHECK-LABEL: func.func @elementwise_and_concat
// CHECK-SAME: (%[[A:.+]]: tensor<1x1x2x2x4xf32>, %[[S:.+]]: tensor<1x1x1x4xf32>) -> tensor<1x2x2x2x4xf32>
// CHECK: %[[M:.+]] = linalg.generic {{.*}} ins(%[[A]], %[[S]] : tensor<1x1x2x2x4xf32>, tensor<1x1x1x4xf32>)
// CHECK: arith.mulf
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x2x2x2x4xf32>
// CHECK: %[[C0:.+]] = tensor.insert_slice %[[A]] into %[[E]][0, 0, 0, 0, 0] [1, 1, 2, 2, 4]
// CHECK: tensor.insert_slice %[[M]] into %[[C0]][0, 1, 0, 0, 0] [1, 1, 2, 2, 4]
func.func @elementwise_and_concat(%a: tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>, %s: tensor<1x1x1x4xf32>) -> tensor<1x2x2x2x4xf32, #graph.blocked<c = 4>> {
  %0 = graph.mul %a, %s : (tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x4xf32>) -> tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>
  %1 = graph.concat %a, %0 {axis = 1 : i64} : (tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>, tensor<1x1x2x2x4xf32, #graph.blocked<c = 4>>) -> tensor<1x2x2x2x4xf32, #graph.blocked<c = 4>>
  return %1 : tensor<1x2x2x2x4xf32, #graph.blocked<c = 4>>
}
