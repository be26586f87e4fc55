// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The kiln dialect verifies every kiln.* attribute where it appears (graph
// ops load it). The valid forms first.
func.func @valid(%x: tensor<2xf32> {kiln.name = "x"}) -> (tensor<2xf32> {kiln.name = "y"})
    attributes {kiln.batch_repeat = 2 : i64, kiln.batch_split = "2 runs",
                kiln.workspace_size = 0 : i64,
                kiln.inputs = [{name = "x", passed = true, type = tensor<2xf32>} ],
                kiln.outputs = [{name = "y", passed = true, type = tensor<2xf32>} ]} {
  %0 = graph.relu %x {kiln.kernel_config = {rows = 4 : i64, parallel = false, algorithm = "direct"}} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{has an unknown Kiln attribute 'kiln.workspace'}}
func.func @typo(%x: tensor<2xf32>) -> tensor<2xf32> attributes {kiln.workspace = 64 : i64} {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'kiln.batch_repeat' must be on a function, an integer above 1, not 1 : i64}}
func.func @repeat(%x: tensor<2xf32>) -> tensor<2xf32> attributes {kiln.batch_repeat = 1 : i64} {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'kiln.inputs' must be on a function, an array of {name, type, passed}}}
func.func @inputs(%x: tensor<2xf32>) -> tensor<2xf32> attributes {kiln.inputs = [{name = "x"}]} {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @algorithm(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.conv_algorithm' must be one of im2col, direct, winograd-2x3, winograd-4x3 or winograd-6x3, not "winograd-8x3"}}
  %0 = graph.relu %x {kiln.conv_algorithm = "winograd-8x3"} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.kernel_config' has an unknown knob 'colums'}}
  %0 = graph.relu %x {kiln.kernel_config = {colums = 4 : i64}} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_kind(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.kernel_config' knob 'rows' has a value of the wrong kind: "4"}}
  %0 = graph.relu %x {kiln.kernel_config = {rows = "4"}} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @name_on_op(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.name' belongs on a function's arguments and results, not on an op}}
  %0 = graph.relu %x {kiln.name = "r"} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'kiln.name' of argument must be a string, not 3 : i64}}
func.func @name_kind(%x: tensor<2xf32> {kiln.name = 3 : i64}) -> tensor<2xf32> {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{has an unknown Kiln result attribute 'kiln.label'}}
func.func @result(%x: tensor<2xf32>) -> (tensor<2xf32> {kiln.label = "y"}) {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
