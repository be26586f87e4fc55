// RUN: kiln-opt %s -split-input-file --kiln-convert-graph-to-linalg | FileCheck %s

// Run-time indices: one reduction finds the least and the greatest, and a
// kiln.check_index compares them with the range the axis allows.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%{{.+}}: tensor<10x4xf32>, %[[I:.+]]: tensor<2x3xi64>)
// CHECK: %[[MAX:.+]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[LEAST:.+]] = linalg.fill ins(%[[MAX]] : i64) outs(%{{.+}} : tensor<i64>)
// CHECK: %[[MIN:.+]] = arith.constant -9223372036854775808 : i64
// CHECK: %[[GREATEST:.+]] = linalg.fill ins(%[[MIN]] : i64) outs(%{{.+}} : tensor<i64>)
// CHECK: %[[R:.+]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "reduction"]
// CHECK-SAME: ins(%[[I]] : tensor<2x3xi64>) outs(%[[LEAST]], %[[GREATEST]] : tensor<i64>, tensor<i64>)
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: %[[LO:.+]] = tensor.extract %[[R]]#0[] : tensor<i64>
// CHECK: %[[HI:.+]] = tensor.extract %[[R]]#1[] : tensor<i64>
// CHECK: kiln.check_index %[[LO]], %[[HI]] in [-10, 9] {source = "lookup (Gather)", what = "index"}
func.func @gather(%d: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = graph.gather %d, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> loc("lookup (Gather)")
  return %0 : tensor<2x3x4xf32>
}

// -----

// Indices that count from zero only (RoiAlign's batch indices, MaxUnpool's
// positions: kiln.indices_from_zero): the range starts at 0.
// CHECK-LABEL: func.func @gather_from_zero
// CHECK: kiln.check_index %{{.+}}, %{{.+}} in [0, 9] {source = "roi (RoiAlign)", what = "index"}
func.func @gather_from_zero(%d: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = graph.gather %d, %i {axis = 0 : i64, kiln.indices_from_zero} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32> loc("roi (RoiAlign)")
  return %0 : tensor<3x4xf32>
}

// -----

// Constant indices are the compiler's to refuse: no run-time check.
// CHECK-LABEL: func.func @constant_indices
// CHECK-NOT: kiln.check_index
func.func @constant_indices(%d: tensor<10x4xf32>) -> tensor<2x4xf32> {
  %i = graph.constant dense<[1, -2]> : tensor<2xi64>
  %0 = graph.gather %d, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// GatherND: each position of the index tuple indexes its own dimension
// (after the batch dimensions), so the reduction keeps the last dimension.
// CHECK-LABEL: func.func @gather_nd
// CHECK: %[[R:.+]]:2 = linalg.generic
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK-SAME: outs(%{{.+}}, %{{.+}} : tensor<2xi32>, tensor<2xi32>)
// CHECK: %[[LO0:.+]] = tensor.extract %[[R]]#0[%[[C0:.+]]] : tensor<2xi32>
// CHECK: arith.extsi %[[LO0]] : i32 to i64
// CHECK: kiln.check_index %{{.+}}, %{{.+}} in [-3, 2] {source = "", what = "index 0 of a tuple"}
// CHECK: kiln.check_index %{{.+}}, %{{.+}} in [-5, 4] {source = "", what = "index 1 of a tuple"}
func.func @gather_nd(%d: tensor<2x3x5xf32>, %i: tensor<2x2xi32>) -> tensor<2xf32> {
  %0 = graph.gather_nd %d, %i {batch_dims = 1 : i64} : (tensor<2x3x5xf32>, tensor<2x2xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A scatter checks the indices it writes through.
// CHECK-LABEL: func.func @scatter_elements
// CHECK: kiln.check_index %{{.+}}, %{{.+}} in [-3, 2]
func.func @scatter_elements(%d: tensor<3x4xf32>, %i: tensor<1x4xi64>, %u: tensor<1x4xf32>) -> tensor<3x4xf32> {
  %0 = graph.scatter_elements %d, %i, %u reduction none {axis = 0 : i64} : (tensor<3x4xf32>, tensor<1x4xi64>, tensor<1x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @scatter_nd
// CHECK: kiln.check_index %{{.+}}, %{{.+}} in [-4, 3] {source = "", what = "index 0 of a tuple"}
// CHECK-NOT: kiln.check_index
func.func @scatter_nd(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.scatter_nd %d, %i, %u reduction none : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A size read at run time (a Reshape's shape input): kiln.check_index of
// the size itself against its range, and the size clamped into it.
// CHECK-LABEL: func.func @check_size
// CHECK: %[[V:.+]] = tensor.extract %{{.+}}[] : tensor<i64>
// CHECK: kiln.check_index %[[V]], %[[V]] in [0, 24] {source = "r (Reshape)", what = "dimension 1's size"}
// CHECK: %[[LO:.+]] = arith.maxsi %[[V]], %{{.+}} : i64
// CHECK: %[[C:.+]] = arith.minsi %[[LO]], %{{.+}} : i64
// CHECK: tensor.from_elements %[[C]] : tensor<i64>
func.func @check_size(%n: tensor<i64>) -> tensor<i64> {
  %0 = graph.check_size %n in [0, 24] {what = "dimension 1's size"} : tensor<i64> loc("r (Reshape)")
  return %0 : tensor<i64>
}
