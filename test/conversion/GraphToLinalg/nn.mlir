// Lowering of the NN family to linalg.
// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// Pads become a tensor.pad, the bias the initial accumulator.
// CHECK-LABEL: func @conv_bias_pad
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: } : tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
// CHECK: %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<4xf32>) outs(%{{.*}} : tensor<1x4x4x4xf32>) dimensions = [0, 2, 3]
// CHECK: %[[C:.*]] = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %[[W]] : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%[[INIT]] : tensor<1x4x4x4xf32>)
// CHECK: return %[[C]]
func.func @conv_bias_pad(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = graph.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// -----

// CHECK-LABEL: func @conv_depthwise
// CHECK: %[[K:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3]] : tensor<5x1x3x3xf32> into tensor<5x3x3xf32>
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%{{.*}}, %[[K]] : tensor<1x5x8x8xf32>, tensor<5x3x3xf32>)
func.func @conv_depthwise(%x: tensor<1x5x8x8xf32>, %w: tensor<5x1x3x3xf32>) -> tensor<1x5x6x6xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 5} : (tensor<1x5x8x8xf32>, tensor<5x1x3x3xf32>) -> tensor<1x5x6x6xf32>
  return %0 : tensor<1x5x6x6xf32>
}

// -----

// Groups split the channel dimensions.
// CHECK-LABEL: func @conv_grouped
// CHECK-DAG: %[[X:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8] : tensor<1x4x8x8xf32> into tensor<1x2x2x8x8xf32>
// CHECK-DAG: %[[W:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3] : tensor<6x2x3x3xf32> into tensor<2x3x2x3x3xf32>
// CHECK: %[[C:.*]] = linalg.conv_2d_ngchw_gfchw {{.*}} ins(%[[X]], %[[W]] : tensor<1x2x2x8x8xf32>, tensor<2x3x2x3x3xf32>) outs(%{{.*}} : tensor<1x2x3x6x6xf32>)
// CHECK: tensor.collapse_shape %[[C]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x6x6xf32> into tensor<1x6x6x6xf32>
func.func @conv_grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

// Grouped 1-D convolutions have no named op: a generic with the window in
// its input map.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 * 2 + d5)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4, d5)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @conv_grouped_1d
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[WT]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @conv_grouped_1d(%x: tensor<1x4x10xf32>, %w: tensor<4x2x3xf32>) -> tensor<1x4x4xf32> {
  %0 = graph.conv %x, %w {strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2} : (tensor<1x4x10xf32>, tensor<4x2x3xf32>) -> tensor<1x4x4xf32>
  return %0 : tensor<1x4x4xf32>
}

// -----

// f16 accumulates in f32 and is truncated at the end.
// CHECK-LABEL: func @conv_f16
// CHECK: linalg.conv_1d_ncw_fcw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x2x6xf16>, tensor<3x2x3xf16>) outs(%{{.*}} : tensor<1x3x4xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @conv_f16(%x: tensor<1x2x6xf16>, %w: tensor<3x2x3xf16>) -> tensor<1x3x4xf16> {
  %0 = graph.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1} : (tensor<1x2x6xf16>, tensor<3x2x3xf16>) -> tensor<1x3x4xf16>
  return %0 : tensor<1x3x4xf16>
}

// -----

// ConvTranspose: the input spread out with the stride into zeros, the kernel
// flipped with its channel dimensions swapped, a stride-1 convolution, and
// the slice that the pads keep.
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, -d3 + 2, -d4 + 2)>
// CHECK-LABEL: func @conv_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>, %[[W:.*]]: tensor<2x3x3x3xf32>)
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<1x2x11x11xf32>
// CHECK: %[[S:.*]] = tensor.insert_slice %[[X]] into %[[Z]][0, 0, 2, 2] [1, 2, 4, 4] [1, 1, 2, 2] : tensor<1x2x4x4xf32> into tensor<1x2x11x11xf32>
// CHECK: %[[G:.*]] = tensor.expand_shape %[[W]]
// CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], #{{.*}}]
// CHECK: %[[K:.*]] = tensor.collapse_shape %[[F]] {{.*}} : tensor<1x3x2x3x3xf32> into tensor<3x2x3x3xf32>
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[S]], %[[K]] : tensor<1x2x11x11xf32>, tensor<3x2x3x3xf32>) outs(%{{.*}} : tensor<1x3x9x9xf32>)
func.func @conv_transpose(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x3x9x9xf32> {
  %0 = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32>) -> tensor<1x3x9x9xf32>
  return %0 : tensor<1x3x9x9xf32>
}

// -----

// A matrix right operand: the batch folds into the rows of one matmul.
// CHECK-LABEL: func @matmul_rows
// CHECK: %[[A:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[A]], %{{.*}} : tensor<6x4xf32>, tensor<4x5xf32>) outs(%{{.*}} : tensor<6x5xf32>)
// CHECK: tensor.expand_shape %[[M]] {{\[}}[0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
func.func @matmul_rows(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = graph.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Broadcast batch dimensions are materialised, then one batch_matmul.
// CHECK-LABEL: func @matmul_batch_broadcast
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x1x3x4xf32>) outs(%{{.*}} : tensor<2x5x3x4xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<5x4x6xf32>) outs(%{{.*}} : tensor<2x5x4x6xf32>)
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<10x3x4xf32>, tensor<10x4x6xf32>) outs(%{{.*}} : tensor<10x3x6xf32>)
// CHECK: tensor.expand_shape {{.*}} : tensor<10x3x6xf32> into tensor<2x5x3x6xf32>
func.func @matmul_batch_broadcast(%a: tensor<2x1x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32> {
  %0 = graph.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  return %0 : tensor<2x5x3x6xf32>
}

// -----

// Vector operands are promoted to matrices and the added dimension dropped.
// CHECK-LABEL: func @matmul_vectors
// CHECK: tensor.expand_shape %{{.*}} : tensor<4xf32> into tensor<1x4xf32>
// CHECK: tensor.expand_shape %{{.*}} : tensor<4xf32> into tensor<4x1xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<1x1xf32>
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1x1xf32> into tensor<f32>
func.func @matmul_vectors(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %0 = graph.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Gemm with transB and beta = 1: the matmul accumulates onto C.
// CHECK-LABEL: func @gemm
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<6x8xf32>, %[[C:.*]]: tensor<6xf32>)
// CHECK: %[[BT:.*]] = linalg.transpose ins(%[[B]] : tensor<6x8xf32>) outs(%{{.*}} : tensor<8x6xf32>) permutation = [1, 0]
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<6xf32>) outs(%{{.*}} : tensor<2x6xf32>)
// CHECK: linalg.matmul ins(%[[A]], %[[BT]] : tensor<2x8xf32>, tensor<8x6xf32>) outs(%[[INIT]] : tensor<2x6xf32>)
func.func @gemm(%a: tensor<2x8xf32>, %b: tensor<6x8xf32>, %c: tensor<6xf32>) -> tensor<2x6xf32> {
  %0 = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x8xf32>, tensor<6x8xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// MaxPool pads with -inf; ceil mode extends the end padding.
// CHECK-LABEL: func @max_pool_ceil
// CHECK: %[[NEG:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0] high[0, 0, 1, 1]
// CHECK:   tensor.yield %[[NEG]]
// CHECK: linalg.fill ins(%[[NEG]] : f32)
// CHECK: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%{{.*}}, %{{.*}} : tensor<1x3x9x9xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x3x4x4xf32>)
func.func @max_pool_ceil(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// Unsigned integers take the unsigned maximum and pad with 0.
// CHECK-LABEL: func @max_pool_ui8
// CHECK: arith.constant 0 : i8
// CHECK: linalg.generic
// CHECK: arith.maxui
func.func @max_pool_ui8(%x: tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8> {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
  return %0 : tensor<1x1x2x2xui8>
}

// -----

// Windows that reach into the ceil-mode padding divide by what they cover.
// CHECK-LABEL: func @average_pool_divisors
// CHECK: %[[S:.*]] = linalg.pooling_nchw_sum
// CHECK: %[[D:.*]] = arith.constant dense<{{\[\[}}4.000000e+00, 4.000000e+00, 4.000000e+00, 2.000000e+00], {{.*}}, [2.000000e+00, 2.000000e+00, 2.000000e+00, 1.000000e+00]]> : tensor<4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[S]], %[[D]] : tensor<1x3x4x4xf32>, tensor<4x4xf32>)
// CHECK: arith.divf
func.func @average_pool_divisors(%x: tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : (tensor<1x3x7x7xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// CHECK-LABEL: func @global_average_pool
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<1x8x7x7xf32>) outs(%{{.*}} : tensor<1x8xf32>)
// CHECK: arith.constant 4.900000e+01 : f32
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2, 3]] output_shape [1, 8, 1, 1] : tensor<1x8xf32> into tensor<1x8x1x1xf32>
func.func @global_average_pool(%x: tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32> {
  %0 = graph.global_average_pool %x : (tensor<1x8x7x7xf32>) -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// -----

// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func @batch_norm
// CHECK: linalg.generic {indexing_maps = [#[[ALL]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[ALL]]]
// CHECK: math.rsqrt
func.func @batch_norm(%x: tensor<1x3x4x4xf32>, %c: tensor<3xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// Mean, then the squared deviations from it, then the normalisation, each
// on the values less the first of their row (shifted data).
// CHECK-LABEL: func @layer_norm
// CHECK: %[[P:.+]] = tensor.extract_slice %{{.+}}[0, 0] [8, 1] [1, 1] : tensor<8x16xf32> to tensor<8xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[P]] : tensor<8x16xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: arith.subf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %[[P]], %{{.*}} : tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK: math.rsqrt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>)
func.func @layer_norm(%x: tensor<8x16xf32>, %s: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %0 = graph.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// The bias starts the accumulators; residual and activation are one
// elementwise op after the convolution.
// CHECK-LABEL: func @fused_conv
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x4x4xf32>, %[[W:.+]]: tensor<3x2x1x1xf32>, %[[B:.+]]: tensor<3xf32>, %[[R:.+]]: tensor<1x3x4x4xf32>)
// CHECK: %[[INIT:.+]] = linalg.broadcast ins(%[[B]]
// CHECK: %[[C:.+]] = linalg.conv_2d_nchw_fchw {{.*}} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[INIT]]
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[R]] : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
func.func @fused_conv(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x1x1xf32>, %b: tensor<3xf32>, %r: tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %0 = graph.fused_conv %x, %w, %b residual %r activation clip {activation_params = array<f32: 0.0, 6.0>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

// The bias of a matmul broadcasts along the rows in the epilogue.
// CHECK-LABEL: func @fused_matmul
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[W:.+]]: tensor<8x16xf32>, %[[B:.+]]: tensor<16xf32>)
// CHECK: %[[M:.+]] = linalg.matmul ins(%[[A]], %[[W]]
// CHECK: linalg.generic {indexing_maps = [#{{.+}}, #[[BIAS:.+]], #{{.+}}], {{.*}} ins(%[[M]], %[[B]] : tensor<4x16xf32>, tensor<16xf32>)
// CHECK: arith.addf
// CHECK: arith.cmpf olt
// CHECK: arith.select
func.func @fused_matmul(%a: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = graph.fused_matmul %a, %w, %b activation leaky_relu {activation_params = array<f32: 0.1>} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// One loop over the steps, from the last when reverse, carrying the states
// of every step ([seq + 1, batch, hidden]) and the output; per step one
// matmul of the previous state with R^T and the gates as elementwise ops.
// CHECK-LABEL: func.func @recurrence_gru
// CHECK: %[[H:.+]] = tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0, 0] [1, 2, 8] [1, 1, 1] : tensor<2x8xf32> into tensor<6x2x8xf32>
// CHECK: %[[LOOP:.+]]:2 = scf.for %[[S:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ALL:.+]] = %[[H]], %[[Y:.+]] = %{{.+}}) -> (tensor<6x2x8xf32>, tensor<5x2x8xf32>)
// CHECK: %[[NEXT:.+]] = arith.addi %[[S]]
// CHECK: %[[PREV:.+]] = tensor.extract_slice %[[ALL]][%[[S]], 0, 0] [1, 2, 8] [1, 1, 1]
// CHECK: %[[T:.+]] = arith.subi %{{.+}}, %[[S]]
// CHECK: tensor.extract_slice %{{.+}}[%[[T]], 0, 0] [1, 2, 24] [1, 1, 1]
// CHECK: linalg.matmul ins(%[[PREV]], %{{.+}} : tensor<2x8xf32>, tensor<8x16xf32>)
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<2x8xf32>, tensor<8x8xf32>)
// CHECK: linalg.generic
// CHECK: %[[NEW:.+]] = linalg.generic
// CHECK: tensor.insert_slice %[[NEW]] into %[[Y]][%[[T]], 0, 0]
// CHECK: tensor.insert_slice %[[NEW]] into %[[ALL]][%[[NEXT]], 0, 0]
// CHECK: tensor.extract_slice %[[LOOP]]#0[%{{.+}}, 0, 0] [1, 2, 8] [1, 1, 1]
func.func @recurrence_gru(%p: tensor<5x2x24xf32>, %rt: tensor<8x24xf32>, %h: tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>) {
  %y, %lh = graph.recurrence gru %p, %rt, %h {activations = ["sigmoid", "tanh"], activation_alpha = array<f32: 0.0, 0.0>, activation_beta = array<f32: 0.0, 0.0>, reverse = true, linear_before_reset = false, input_forget = false} : (tensor<5x2x24xf32>, tensor<8x24xf32>, tensor<2x8xf32>) -> (tensor<5x2x8xf32>, tensor<2x8xf32>)
  return %y, %lh : tensor<5x2x8xf32>, tensor<2x8xf32>
}

// -----

// Einsum: one loop per letter, the output's first (parallel), the summed
// ones after; a repeated letter reads a diagonal, a size-1 dimension
// broadcasts.
// CHECK-DAG: #[[A:.+]] = affine_map<(d0, d1, d2) -> (d0, d0, d2)>
// CHECK-DAG: #[[B:.+]] = affine_map<(d0, d1, d2) -> (0, d2, d1)>
// CHECK-DAG: #[[Y:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @einsum
// CHECK: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[Y]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @einsum(%a: tensor<3x3x4xf32>, %b: tensor<1x4x5xf32>) -> tensor<3x5xf32> {
  %0 = graph.einsum %a, %b {equation = "iij,ijk->ik"} : (tensor<3x3x4xf32>, tensor<1x4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Rows of a symbolic length times a matrix (a projection): the rows
// collapsed into one dimension, a 2-D product over them, expanded back.
// CHECK-LABEL: func.func @symbolic_rows_matmul
// CHECK: %[[F:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2]] : tensor<1x?x8xf32> into tensor<?x8xf32>
// CHECK: %[[P:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[F]], %{{.+}} : tensor<?x8xf32>, tensor<8x16xf32>) outs(%{{.+}} : tensor<?x16xf32>)
// CHECK: tensor.expand_shape %[[P]] {{\[}}[0, 1], [2]] output_shape [1, %{{.+}}, 16] : tensor<?x16xf32> into tensor<1x?x16xf32>
func.func @symbolic_rows_matmul(%x: tensor<1x?x8xf32>, %w: tensor<8x16xf32>) -> tensor<1x?x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  return %0 : tensor<1x?x16xf32>
}
