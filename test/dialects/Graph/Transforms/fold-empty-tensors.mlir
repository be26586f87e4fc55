// RUN: kiln-opt %s -split-input-file -kiln-graph-fold-empty-tensors | FileCheck %s

// An op whose results have no elements becomes an empty constant, and an
// empty argument's uses too; ops that make data from empty operands stay.
// CHECK-LABEL: func.func @empty
// CHECK-SAME: (%[[X:.+]]: tensor<2x0x4xf32>, %[[Y:.+]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[E:.+]] = graph.constant dense<> : tensor<2x0x4xf32>
// CHECK-NOT: graph.relu %[[X]]
// CHECK: %[[R:.+]] = graph.relu %[[Y]]
// CHECK: return %[[R]], %{{.+}} : tensor<2x3x4xf32>, tensor<2x0x4xf32>
func.func @empty(%x: tensor<2x0x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x0x4xf32>) {
  %0 = graph.relu %x : tensor<2x0x4xf32>
  %1 = graph.add %0, %x : (tensor<2x0x4xf32>, tensor<2x0x4xf32>) -> tensor<2x0x4xf32>
  %2 = graph.relu %y : tensor<2x3x4xf32>
  return %2, %1 : tensor<2x3x4xf32>, tensor<2x0x4xf32>
}

// -----

// Nothing empty: nothing changes.
// CHECK-LABEL: func.func @full
// CHECK: graph.relu
// CHECK-NOT: graph.constant
func.func @full(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
