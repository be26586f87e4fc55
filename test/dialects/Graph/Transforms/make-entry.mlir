// RUN: kiln-opt %s -split-input-file -kiln-graph-make-entry -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-graph-make-entry=name=entry -verify-diagnostics | FileCheck %s --check-prefix=NAMED

// @main becomes the entry, its interface recorded as the caller sees it.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: (%{{.+}}: tensor<1x4xf32> {kiln.name = "x"}) -> (tensor<1x4xf32> {kiln.name = "y"})
// CHECK-SAME: kiln.inputs = [{name = "x", passed = true, type = tensor<1x4xf32>}]
// CHECK-SAME: kiln.outputs = [{name = "y", passed = true, type = tensor<1x4xf32>}]
// NAMED: func.func @entry
func.func @main(%x: tensor<1x4xf32> {kiln.name = "x"}) -> (tensor<1x4xf32> {kiln.name = "y"}) {
  %0 = graph.relu %x : tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

// Tensors without elements leave the signature, and are recorded as not
// passed: an unused empty input, and an empty output. An unnamed tensor is
// named by its position.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: (%{{.+}}: tensor<2xf32> {kiln.name = "a"}) -> (tensor<2xf32> {kiln.name = "y"})
// CHECK-SAME: kiln.inputs = [{name = "a", passed = true, type = tensor<2xf32>}, {name = "input1", passed = false, type = tensor<0x3xf32>}]
// CHECK-SAME: kiln.outputs = [{name = "y", passed = true, type = tensor<2xf32>}, {name = "z", passed = false, type = tensor<0xf32>}]
// CHECK: return %{{.+}} : tensor<2xf32>
func.func @main(%a: tensor<2xf32> {kiln.name = "a"}, %e: tensor<0x3xf32>)
    -> (tensor<2xf32> {kiln.name = "y"}, tensor<0xf32> {kiln.name = "z"}) {
  %0 = graph.relu %a : tensor<2xf32>
  %1 = graph.constant dense<> : tensor<0xf32>
  return %0, %1 : tensor<2xf32>, tensor<0xf32>
}

// -----

// A dynamic shape cannot be part of a compiled model's interface (a
// symbolic batch is a static probe size until kiln-graph-split-batch).
// expected-error @+1 {{input 'x' dimension 0 is symbolic, and Kiln keeps a symbolic dimension only where it leads every input and output as the batch (so far): give it a size with --input-shape x=D0xD1x...}}
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> (tensor<?x4xf32> {kiln.name = "y"}) {
  %0 = graph.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// The importer names the symbolic dimensions it left (kiln.dims): the error
// says which, and the option that gives it a size.
// expected-error @+1 {{input 'ids' dimension 1 ('seq') is symbolic, and Kiln keeps a symbolic dimension only where it leads every input and output as the batch (so far): give it a size with --dynamic-dims seq=SIZE or --input-shape ids=D0xD1x...}}
func.func @main(%ids: tensor<97x?xf32> {kiln.name = "ids", kiln.dims = ["batch", "seq"]}) -> (tensor<97x?xf32> {kiln.name = "y"}) attributes {kiln.symbols = [{name = "batch", min = 1 : i64, max = 8 : i64}]} {
  %0 = graph.relu %ids : tensor<97x?xf32>
  return %0 : tensor<97x?xf32>
}

// -----

// expected-error @+1 {{the model has no function @main}}
module {
  func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
