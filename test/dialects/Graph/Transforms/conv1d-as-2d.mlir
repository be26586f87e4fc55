// RUN: kiln-opt %s -split-input-file --kiln-graph-conv1d-as-2d | FileCheck %s

// Two 1-D layers with a ReLU, a per-channel scale and a residual Add: the
// whole chain runs in 4-D (height 1), the filters are reshaped constants,
// and one reshape back to 3-D is left at the end.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.+]]: tensor<1x8x32xf32>)
// CHECK-DAG: %[[W0:.+]] = graph.constant dense<{{.+}}> : tensor<16x8x1x3xf32>
// CHECK-DAG: %[[W1:.+]] = graph.constant dense<{{.+}}> : tensor<16x16x1x1xf32>
// CHECK-DAG: %[[S:.+]] = graph.constant dense<{{.+}}> : tensor<16x1x1xf32>
// CHECK: %[[X4:.+]] = graph.reshape %[[X]] {{.+}} : (tensor<1x8x32xf32>) -> tensor<1x8x1x32xf32>
// CHECK: %[[C0:.+]] = graph.conv %[[X4]], %[[W0]] {dilations = array<i64: 1, 2>, group = 1 : i64, pads = array<i64: 0, 2, 0, 2>, strides = array<i64: 1, 1>} : (tensor<1x8x1x32xf32>, tensor<16x8x1x3xf32>) -> tensor<1x16x1x32xf32>
// CHECK: %[[R:.+]] = graph.relu %[[C0]] : tensor<1x16x1x32xf32>
// CHECK: %[[M:.+]] = graph.mul %[[R]], %[[S]] : (tensor<1x16x1x32xf32>, tensor<16x1x1xf32>) -> tensor<1x16x1x32xf32>
// CHECK: %[[C1:.+]] = graph.conv %[[M]], %[[W1]] {{.+}} -> tensor<1x16x1x32xf32>
// CHECK: %[[A:.+]] = graph.add %[[C1]], %[[M]] : (tensor<1x16x1x32xf32>, tensor<1x16x1x32xf32>) -> tensor<1x16x1x32xf32>
// CHECK: %[[Y:.+]] = graph.reshape %[[A]] {{.+}} : (tensor<1x16x1x32xf32>) -> tensor<1x16x32xf32>
// CHECK: return %[[Y]]
func.func @chain(%x: tensor<1x8x32xf32>) -> tensor<1x16x32xf32> {
  %w0 = graph.constant dense<0.5> : tensor<16x8x3xf32>
  %w1 = graph.constant dense<0.25> : tensor<16x16x1xf32>
  %s = graph.constant dense<2.0> : tensor<16x1xf32>
  %0 = graph.conv %x, %w0 {dilations = array<i64: 2>, group = 1 : i64, pads = array<i64: 2, 2>, strides = array<i64: 1>} : (tensor<1x8x32xf32>, tensor<16x8x3xf32>) -> tensor<1x16x32xf32>
  %1 = graph.relu %0 : tensor<1x16x32xf32>
  %2 = graph.mul %1, %s : (tensor<1x16x32xf32>, tensor<16x1xf32>) -> tensor<1x16x32xf32>
  %3 = graph.conv %2, %w1 {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x16x32xf32>, tensor<16x16x1xf32>) -> tensor<1x16x32xf32>
  %4 = graph.add %3, %2 : (tensor<1x16x32xf32>, tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  return %4 : tensor<1x16x32xf32>
}

// -----

// A grouped, strided layer with a bias and asymmetric pads; a scalar
// operand stays as it is; a 3-D operand that is not a reshape gets the
// unit height.
// CHECK-LABEL: func.func @grouped
// CHECK: graph.conv %{{.+}}, %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 0, 1, 0, 2>, strides = array<i64: 1, 2>} : (tensor<2x8x1x15xf32>, tensor<8x2x1x4xf32>, tensor<8xf32>) -> tensor<2x8x1x8xf32>
// CHECK: graph.add %{{.+}}, %{{.+}} : (tensor<2x8x1x8xf32>, tensor<f32>) -> tensor<2x8x1x8xf32>
// CHECK: %[[Z:.+]] = graph.reshape %{{.+}} : (tensor<2x8x8xf32>) -> tensor<2x8x1x8xf32>
// CHECK: graph.sub %{{.+}}, %[[Z]] : (tensor<2x8x1x8xf32>, tensor<2x8x1x8xf32>) -> tensor<2x8x1x8xf32>
func.func @grouped(%x: tensor<2x8x15xf32>, %w: tensor<8x2x4xf32>, %b: tensor<8xf32>, %z: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %c = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.conv %x, %w, %b {dilations = array<i64: 1>, group = 4 : i64, pads = array<i64: 1, 2>, strides = array<i64: 2>} : (tensor<2x8x15xf32>, tensor<8x2x4xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
  %1 = graph.add %0, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %2 = graph.sub %1, %z : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %2 : tensor<2x8x8xf32>
}

// -----

// Dynamic shapes and 2-D convolutions are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK: graph.conv %{{.+}} : (tensor<?x8x32xf32>, tensor<16x8x3xf32>) -> tensor<?x16x30xf32>
// CHECK: graph.conv %{{.+}} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
// CHECK-NOT: graph.reshape
func.func @left_alone(%x: tensor<?x8x32xf32>, %y: tensor<1x8x4x4xf32>) -> (tensor<?x16x30xf32>, tensor<1x16x4x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<16x8x3xf32>
  %v = graph.constant dense<0.5> : tensor<16x8x1x1xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1>, group = 1 : i64, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<?x8x32xf32>, tensor<16x8x3xf32>) -> tensor<?x16x30xf32>
  %1 = graph.conv %y, %v {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  return %0, %1 : tensor<?x16x30xf32>, tensor<1x16x4x4xf32>
}
