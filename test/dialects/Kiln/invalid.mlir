// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The kiln dialect verifies every kiln.* attribute where it appears (graph
// ops load it). The valid forms first.
func.func @valid(%x: tensor<2xf32> {kiln.name = "x"}) -> (tensor<2xf32> {kiln.name = "y"})
    attributes {kiln.batch_repeat = 2 : i64, kiln.batch_split = "2 runs",
                kiln.workspace_size = 0 : i64,
                kiln.inputs = [{name = "x", passed = true, type = tensor<2xf32>} ],
                kiln.outputs = [{name = "y", passed = true, type = tensor<2xf32>} ]} {
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<algorithm = direct, rows = 4, parallel = false>} : tensor<2xf32>
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
  // expected-error @+2 {{expected ::kiln::ConvAlgorithm to be one of: im2col, direct, winograd-2x3, winograd-4x3, winograd-6x3}}
  // expected-error @+1 {{failed to parse Kiln_ConvAlgorithmAttr parameter 'value'}}
  %0 = graph.relu %x {kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-8x3">} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @algorithm_string(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.conv_algorithm' must be a #kiln.conv_algorithm (im2col, direct, winograd-2x3, winograd-4x3 or winograd-6x3), not "direct"}}
  %0 = graph.relu %x {kiln.conv_algorithm = "direct"} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unknown kernel configuration knob 'colums' (one of algorithm, vector_width, vectors, rows, k_tile, parallel or tiles)}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<colums = 4>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_kind(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{expected integer value}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<rows = "4">} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{knob 'rows' appears twice}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<rows = 4, rows = 2>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_range(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{kernel configuration knob 'k_tile' must be at least 1, not 0}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<k_tile = 0>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_tiles(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{kernel configuration knob 'tiles' must be at least 1, not -2}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<tiles = -2>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_algorithm(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unknown convolution algorithm 'winograd-8x3' (one of im2col, direct, winograd-2x3, winograd-4x3 or winograd-6x3)}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<algorithm = "winograd-8x3">} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @knob_parallel(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{knob 'parallel' is true or false}}
  %0 = graph.relu %x {kiln.kernel_config = #kiln.kernel_config<parallel = yes>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @config_dictionary(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.kernel_config' must be a #kiln.kernel_config, not {rows = 4 : i64}}}
  %0 = graph.relu %x {kiln.kernel_config = {rows = 4 : i64}} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @blocked_conv(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{a blocked convolution has two strides and two dilations, each at least 1}}
  %0 = graph.relu %x {kiln.blocked_conv = #kiln.blocked_conv<strides = [1, 1, 1], dilations = [1, 1]>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @blocked_conv_stride(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{a blocked convolution has two strides and two dilations, each at least 1}}
  %0 = graph.relu %x {kiln.blocked_conv = #kiln.blocked_conv<strides = [0, 1], dilations = [1, 1]>} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @kernel_on_op(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'kiln.kernel' must be on a function or a gpu.launch, a #kiln.kernel}}
  %0 = graph.relu %x {kiln.kernel = #kiln.kernel<flops = 2, source = "r (Relu)">} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{a kernel's flops are not negative, not -2}}
func.func private @kernel_flops() attributes {kiln.kernel = #kiln.kernel<flops = -2, source = "">}

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

// -----

// expected-error @+1 {{'kiln.integer_input' must be two integers low <= 0 <= high at most 255 apart}}
func.func @wide_integer_input(%x: tensor<2xf32>) -> tensor<2xf32> attributes {kiln.integer_input = array<i64: -1, 255>} {
  %0 = graph.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @empty_check_range(%lo: i64, %hi: i64) {
  // expected-error @+1 {{range [3, 2] is empty}}
  kiln.check_index %lo, %hi in [3, 2] {source = "", what = "index"}
  return
}

// -----

// expected-error @+1 {{'kiln.index_checks' must be on the module, an array of {source, what, low, high} with low <= high}}
module attributes {kiln.index_checks = [{source = "", what = "index", low = 0 : i64}]} {
}

// -----

// expected-error @+1 {{'kiln.run_error_argument' must be a unit attribute on the module}}
module attributes {kiln.run_error_argument = 1 : i64} {
}

// -----

func.func @pad_interior_outside(%e: tensor<4x4xf32>, %v: f32) -> tensor<4x4xf32> {
  // expected-error @+1 {{'kiln.pad_interior' must be offsets and sizes of a box inside the tensor}}
  %f = linalg.fill {kiln.pad_interior = array<i64: 1, 1, 4, 2>} ins(%v : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %f : tensor<4x4xf32>
}

// -----

func.func @pad_interior_rank(%e: tensor<4x4xf32>, %v: f32) -> tensor<4x4xf32> {
  // expected-error @+1 {{'kiln.pad_interior' must be on a linalg.fill of a static tensor, its rank's offsets then sizes}}
  %f = linalg.fill {kiln.pad_interior = array<i64: 1, 1>} ins(%v : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %f : tensor<4x4xf32>
}

// -----

func.func @indices_from_zero_elsewhere(%d: tensor<10x4xf32>, %i: tensor<2xi64>) -> tensor<10x4xf32> {
  // expected-error @+1 {{'kiln.indices_from_zero' must be a unit attribute on a graph.gather or graph.scatter_elements}}
  %0 = graph.relu %d {kiln.indices_from_zero} : tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}
