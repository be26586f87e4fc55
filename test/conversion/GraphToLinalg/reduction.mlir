// Lowering of the reduction family to linalg.
// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[KEEP1:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func @reduce_sum_keepdims
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[KEEP1]]], iterator_types = ["reduction", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<3xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK:   %[[ADD:.*]] = arith.addf %[[ACC]], %[[IN]] : f32
// CHECK:   linalg.yield %[[ADD]]
// CHECK: %[[R:.*]] = tensor.expand_shape %[[SUM]] {{\[}}[0, 1, 2]] output_shape [1, 3, 1] : tensor<3xf32> into tensor<1x3x1xf32>
// CHECK: return %[[R]]
func.func @reduce_sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %0 = graph.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  return %0 : tensor<1x3x1xf32>
}

// -----

// All axes without keepdims: a rank-0 result, no expand_shape.
// CHECK-LABEL: func @reduce_prod_all
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: linalg.fill ins(%[[ONE]] : i32) outs(%{{.*}} : tensor<i32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK:   arith.muli
// CHECK-NOT: tensor.expand_shape
func.func @reduce_prod_all(%x: tensor<2x3xi32>) -> tensor<i32> {
  %0 = graph.reduce_prod %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xi32>) -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

// Unsigned integers start from 0 and compare unsigned.
// CHECK-LABEL: func @reduce_max_unsigned
// CHECK-SAME: tensor<4x5xi8>
// CHECK: %[[MIN:.*]] = arith.constant 0 : i8
// CHECK: linalg.fill ins(%[[MIN]] : i8)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.maxui
func.func @reduce_max_unsigned(%x: tensor<4x5xui8>) -> tensor<4xui8> {
  %0 = graph.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK-LABEL: func @reduce_min_float
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: linalg.fill ins(%[[INF]] : f32)
// CHECK:   arith.minimumf
func.func @reduce_min_float(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @reduce_mean
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.addf
// CHECK: %[[COUNT:.*]] = arith.constant 5.000000e+00 : f32
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<4xf32>)
// CHECK:   arith.divf %{{.*}}, %[[COUNT]] : f32
func.func @reduce_mean(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @reduce_l1_l2_sum_square
// CHECK: linalg.generic
// CHECK:   math.absf
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   math.sqrt
// CHECK: linalg.generic
// CHECK:   arith.muli
// CHECK:   arith.addi
func.func @reduce_l1_l2_sum_square(%x: tensor<4x5xf32>, %i: tensor<4x5xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0 = graph.reduce_l1 %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<4xf32>
  %1 = graph.reduce_l2 %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<4xf32>
  %2 = graph.reduce_sum_square %i {axes = array<i64: 1>, keepdims = false} : (tensor<4x5xi64>) -> tensor<4xi64>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
}

// -----

// Empty axes reduce nothing: the per-element part over parallel iterators.
// CHECK-LABEL: func @reduce_log_sum_noop
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:   arith.addf
// CHECK: linalg.generic
// CHECK:   math.log
// CHECK-NOT: tensor.expand_shape
func.func @reduce_log_sum_noop(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = graph.reduce_log_sum %x {axes = array<i64>, keepdims = true} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// log(sum(exp(x))) = shift + log(sum(exp(x - shift))), shift = max(x) or 0
// where the maximum is infinite. The maximum skips NaNs (maxnumf): a NaN
// reaches the sum through its exponential all the same.
// CHECK-LABEL: func @reduce_log_sum_exp
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK:   arith.maxnumf
// CHECK: %[[SHIFT:.*]] = linalg.generic {{.*}} ins(%[[MAX]]
// CHECK:   math.absf
// CHECK:   arith.cmpf olt
// CHECK:   arith.select
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SHIFT]] : tensor<2x3xf32>, tensor<3xf32>)
// CHECK:   arith.subf
// CHECK:   math.exp
// CHECK:   arith.addf
// CHECK: %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[SUM]], %[[SHIFT]] : tensor<3xf32>, tensor<3xf32>)
// CHECK:   math.log
// CHECK:   arith.addf
// CHECK: tensor.expand_shape %[[LSE]] {{\[}}[0, 1]] output_shape [1, 3]
func.func @reduce_log_sum_exp(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %0 = graph.reduce_log_sum_exp %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// Softmax: the shifted exponentials times the reciprocal of their sum (one
// division a row).
// CHECK-LABEL: func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x10xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.maxnumf
// CHECK: %[[SHIFT:.*]] = linalg.generic {{.*}} ins(%[[MAX]]
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[SHIFT]]
// CHECK:   math.exp
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xf32>)
// CHECK:   arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[X]], %[[SHIFT]], %[[R]] : tensor<2x10xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   %[[E:.*]] = math.exp %[[D]]
// CHECK:   arith.mulf %[[E]]
func.func @softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10xf32>
  return %0 : tensor<2x10xf32>
}

// -----

// f16: the exponentials are summed in f32, the sum rounded once to f16,
// and each divided by it.
// CHECK-LABEL: func @softmax_f16
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK:   %[[E:.*]] = math.exp %{{.*}} : f16
// CHECK:   %[[W:.*]] = arith.extf %[[E]] : f16 to f32
// CHECK:   arith.addf %{{.*}}, %[[W]] : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[SUM]] : tensor<2x10xf16>, tensor<2xf16>, tensor<2xf32>)
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK:   arith.divf
func.func @softmax_f16(%x: tensor<2x10xf16>) -> tensor<2x10xf16> {
  %0 = graph.softmax %x {axes = array<i64: 1>} : tensor<2x10xf16>
  return %0 : tensor<2x10xf16>
}

// -----

// Several axes (opset < 13) reduce jointly.
// CHECK-LABEL: func @log_softmax_coerced
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK:   %[[D:.*]] = arith.subf
// CHECK:   %[[L:.*]] = math.log
// CHECK:   arith.subf %[[D]], %[[L]]
func.func @log_softmax_coerced(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = graph.log_softmax %x {axes = array<i64: 1, 2>} : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// The maximum, the first position holding it, then a one-hot tensor.
// CHECK-LABEL: func @hardmax
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK:   arith.maximumf
// CHECK: %[[BIG:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[FIRST:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]] : tensor<2x3xf32>, tensor<2xf32>)
// CHECK:   arith.cmpf oeq
// CHECK:   linalg.index 1
// CHECK:   arith.minsi
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[FIRST]] : tensor<2x3xf32>, tensor<2xi64>)
// CHECK:   arith.cmpi eq
// CHECK:   arith.select
func.func @hardmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = graph.hardmax %x {axes = array<i64: 1>} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @argmax_last
// CHECK: %[[LOW:.*]] = arith.constant -2147483648 : i32
// CHECK: %[[VALS:.*]] = linalg.fill ins(%[[LOW]] : i32) outs(%{{.*}} : tensor<2xi32>)
// CHECK: %[[IDXS:.*]] = linalg.fill ins(%{{.*}} : i64) outs(%{{.*}} : tensor<2xi64>)
// CHECK: %[[R:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<2x3xi32>) outs(%[[VALS]], %[[IDXS]] : tensor<2xi32>, tensor<2xi64>)
// CHECK:   %[[WINS:.*]] = arith.cmpi sge
// CHECK:   linalg.index 1
// CHECK: tensor.expand_shape %[[R]]#1 {{\[}}[0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
func.func @argmax_last(%x: tensor<2x3xi32>) -> tensor<2x1xi64> {
  %0 = graph.argmax %x {axis = 1 : i64, keepdims = true, select_last_index = true} : (tensor<2x3xi32>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// CHECK-LABEL: func @argmin_first
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: linalg.generic
// CHECK:   arith.cmpf olt
func.func @argmin_first(%x: tensor<2x3xf32>) -> tensor<3xi64> {
  %0 = graph.argmin %x {axis = 0 : i64, keepdims = false, select_last_index = false} : (tensor<2x3xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// One more (reduction) dimension runs over the scanned axis.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @cumsum_exclusive_reverse
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK:   %[[I:.*]] = linalg.index 1
// CHECK:   %[[J:.*]] = linalg.index 2
// CHECK:   %[[C:.*]] = arith.cmpi ugt, %[[J]], %[[I]]
// CHECK:   arith.select %[[C]]
// CHECK:   arith.addf
func.func @cumsum_exclusive_reverse(%x: tensor<2x5xf64>) -> tensor<2x5xf64> {
  %0 = graph.cumsum %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x5xf64>
  return %0 : tensor<2x5xf64>
}

// -----

// Ranks (how many elements beat each one), then the element of each rank.
// CHECK-DAG: #[[OWN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[EXTRA:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @topk_smallest
// CHECK-SAME: (%[[X:.*]]: tensor<2x5xi32>)
// CHECK: %[[RANKS:.*]] = linalg.generic {indexing_maps = [#[[OWN]], #[[EXTRA]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[X]] : tensor<2x5xi32>, tensor<2x5xi32>) outs(%{{.*}} : tensor<2x5xi64>)
// CHECK:   arith.cmpi slt
// CHECK:   arith.cmpi eq
// CHECK:   arith.extui
// CHECK: %[[R:.*]]:2 = linalg.generic {indexing_maps = [#[[EXTRA]], #[[EXTRA]], #[[OWN]], #[[OWN]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]], %[[RANKS]] : tensor<2x5xi32>, tensor<2x5xi64>) outs(%{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<2x3xi64>)
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @topk_smallest(%x: tensor<2x5xi32>) -> (tensor<2x3xi32>, tensor<2x3xi64>) {
  %v, %i = graph.topk %x {axis = 1 : i64, k = 3 : i64, largest = false, sorted = true} : (tensor<2x5xi32>) -> (tensor<2x3xi32>, tensor<2x3xi64>)
  return %v, %i : tensor<2x3xi32>, tensor<2x3xi64>
}

// -----

// CumProd: CumSum's generic with 1 for the positions left out and a product.
// CHECK-LABEL: func.func @cumprod
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ONE]] : f32)
// CHECK: linalg.generic
// CHECK: arith.cmpi ugt
// CHECK: arith.select %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: arith.mulf
func.func @cumprod(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = graph.cumprod %x {axis = 1 : i64, exclusive = true, reverse = true} : tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
