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

// A `?` that no symbol names cannot be part of a compiled model's
// interface (a symbolic batch is a static probe size until
// kiln-graph-split-batch).
// expected-error @+1 {{input 'x' dimension 0 is symbolic: give it a size with --input-shape x=D0xD1x...}}
func.func @main(%x: tensor<?x4xf32> {kiln.name = "x"}) -> (tensor<?x4xf32> {kiln.name = "y"}) {
  %0 = graph.relu %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// The importer names the symbolic dimensions it left (kiln.dims): the error
// says which, and the options that give it a size or bounds.
// expected-error @+1 {{input 'ids' dimension 1 ('seq') is symbolic: give it a size with --dynamic-dims seq=SIZE, bounds with --dynamic-dims seq=MIN..MAX, or --input-shape ids=D0xD1x...}}
func.func @main(%ids: tensor<97x?xf32> {kiln.name = "ids", kiln.dims = ["batch", "seq"]}) -> (tensor<97x?xf32> {kiln.name = "y"}) attributes {kiln.symbols = [{name = "batch", min = 1 : i64, max = 8 : i64}]} {
  %0 = graph.relu %ids : tensor<97x?xf32>
  return %0 : tensor<97x?xf32>
}

// -----

// A dimension given bounds (kiln.dim_symbols) stays `?`: each input and
// output says which symbol each dimension is, traced through the ops
// (broadcast, transpose, matrix product, softmax).
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: kiln.inputs = [{name = "x", passed = true, symbol_dims = array<i64: -1, 0, -1>, type = tensor<1x?x8xf32>}, {name = "mask", passed = true, symbol_dims = array<i64: -1, -1, 0>, type = tensor<1x1x?xf32>}]
// CHECK-SAME: kiln.outputs = [{name = "p", passed = true, symbol_dims = array<i64: -1, 0, 0>, type = tensor<1x?x?xf32>}, {name = "w", passed = true, type = tensor<1x8x8xf32>}]
func.func @main(%x: tensor<1x?x8xf32> {kiln.name = "x", kiln.dims = ["", "seq", ""]}, %mask: tensor<1x1x?xf32> {kiln.name = "mask", kiln.dims = ["", "", "seq"]}) -> (tensor<1x?x?xf32> {kiln.name = "p"}, tensor<1x8x8xf32> {kiln.name = "w"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %t = graph.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<1x?x8xf32>) -> tensor<1x8x?xf32>
  %s = graph.matmul %x, %t : (tensor<1x?x8xf32>, tensor<1x8x?xf32>) -> tensor<1x?x?xf32>
  %m = graph.add %s, %mask : (tensor<1x?x?xf32>, tensor<1x1x?xf32>) -> tensor<1x?x?xf32>
  %p = graph.softmax %m {axes = array<i64: 2>} : tensor<1x?x?xf32>
  %w = graph.matmul %t, %x : (tensor<1x8x?xf32>, tensor<1x?x8xf32>) -> tensor<1x8x8xf32>
  return %p, %w : tensor<1x?x?xf32>, tensor<1x8x8xf32>
}

// -----

// Token ids gather rows of a static table; reshapes keep a symbol that a
// `0` copies, or that the `-1` stands for, into heads and back.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: kiln.outputs = [{name = "h", passed = true, symbol_dims = array<i64: -1, 0, -1, -1>, type = tensor<1x?x2x4xf32>}, {name = "m", passed = true, symbol_dims = array<i64: -1, 0, -1>, type = tensor<1x?x8xf32>}]
func.func @main(%ids: tensor<1x?xi64> {kiln.name = "ids", kiln.dims = ["", "seq"]}) -> (tensor<1x?x2x4xf32> {kiln.name = "h"}, tensor<1x?x8xf32> {kiln.name = "m"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %table = graph.constant dense<1.0> : tensor<10x8xf32>
  %x = graph.gather %table, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<1x?xi64>) -> tensor<1x?x8xf32>
  %h = graph.reshape %x {shape = array<i64: 0, 0, 2, 4>, allow_zero = false} : (tensor<1x?x8xf32>) -> tensor<1x?x2x4xf32>
  %m = graph.reshape %h {shape = array<i64: 1, -1, 8>, allow_zero = false} : (tensor<1x?x2x4xf32>) -> tensor<1x?x8xf32>
  return %h, %m : tensor<1x?x2x4xf32>, tensor<1x?x8xf32>
}

// -----

// What an exported model computes its sizes with: the sizes themselves
// (static), a prefix of a table as long as the symbol, a slice and a split
// of static axes (the symbol taken whole), an expand that keeps it.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: kiln.outputs = [{name = "s", passed = true, type = tensor<3xi64>}, {name = "p", passed = true, symbol_dims = array<i64: -1, 0>, type = tensor<1x?xi64>}, {name = "a", passed = true, symbol_dims = array<i64: -1, 0, -1>, type = tensor<1x?x4xf32>}, {name = "b", passed = true, symbol_dims = array<i64: -1, 0, -1>, type = tensor<1x?x8xf32>}, {name = "e", passed = true, symbol_dims = array<i64: -1, 0, 0>, type = tensor<2x?x?xf32>}]
func.func @main(%x: tensor<1x?x12xf32> {kiln.name = "x", kiln.dims = ["", "seq", ""]}, %m: tensor<1x1x?xf32> {kiln.name = "m", kiln.dims = ["", "", "seq"]}) -> (tensor<3xi64> {kiln.name = "s"}, tensor<1x?xi64> {kiln.name = "p"}, tensor<1x?x4xf32> {kiln.name = "a"}, tensor<1x?x8xf32> {kiln.name = "b"}, tensor<2x?x?xf32> {kiln.name = "e"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %s = graph.shape %x : (tensor<1x?x12xf32>) -> tensor<3xi64>
  %table = graph.constant dense<1> : tensor<1x64xi64>
  %p = graph.prefix %table, %x {axis = 1 : i64, like_axis = 1 : i64} : (tensor<1x64xi64>, tensor<1x?x12xf32>) -> tensor<1x?xi64>
  %c = graph.slice %x {starts = array<i64: 0, 0, 8>, ends = array<i64: 1, -9223372036854775808, 12>, steps = array<i64: 1, 1, 1>} : (tensor<1x?x12xf32>) -> tensor<1x?x4xf32>
  %a, %b = graph.split %x {axis = 2 : i64, sizes = array<i64: 4, 8>} : (tensor<1x?x12xf32>) -> (tensor<1x?x4xf32>, tensor<1x?x8xf32>)
  %t = graph.add %c, %a : (tensor<1x?x4xf32>, tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  %q = graph.transpose %m {perm = array<i64: 0, 2, 1>} : (tensor<1x1x?xf32>) -> tensor<1x?x1xf32>
  %r = graph.add %q, %m : (tensor<1x?x1xf32>, tensor<1x1x?xf32>) -> tensor<1x?x?xf32>
  %e = graph.expand %r {shape = array<i64: 2, 1, 1>} : (tensor<1x?x?xf32>) -> tensor<2x?x?xf32>
  return %s, %p, %t, %b, %e : tensor<3xi64>, tensor<1x?xi64>, tensor<1x?x4xf32>, tensor<1x?x8xf32>, tensor<2x?x?xf32>
}

// -----

// A slice or split of the symbolic dimension itself, and an expand of it
// to a static size, are refused.
// expected-error @+1 {{graph.slice (1: 'graph.slice'; it slices the symbolic dimension 'seq'), graph.split (1: 'graph.split'; it splits the symbolic dimension 'seq'), graph.expand (1: 'graph.expand'; it expands the symbolic dimension 'seq' to a static size)}}
func.func @main(%x: tensor<1x?xf32> {kiln.name = "x", kiln.dims = ["", "seq"]}) -> (tensor<1x?xf32> {kiln.name = "y"}, tensor<1x?xf32> {kiln.name = "z"}, tensor<1x?xf32> {kiln.name = "w"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %y = graph.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 1, -9223372036854775808>, steps = array<i64: 1, 1>} : (tensor<1x?xf32>) -> tensor<1x?xf32>
  %z, %w = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 2>} : (tensor<1x?xf32>) -> (tensor<1x?xf32>, tensor<1x?xf32>)
  %e = graph.expand %x {shape = array<i64: 1, 4>} : (tensor<1x?xf32>) -> tensor<1x?xf32>
  return %y, %z, %e : tensor<1x?xf32>, tensor<1x?xf32>, tensor<1x?xf32>
}

// -----

// A reshape that merges the symbol with static sizes makes a multiple of
// it, which may be computed on (a product's rows) and reshaped back; an
// output of that size is refused, the interface naming symbols alone.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK-SAME: kiln.outputs = [{name = "y", passed = true, symbol_dims = array<i64: -1, 0, -1>, type = tensor<1x?x8xf32>}]
func.func @main(%x: tensor<1x?x8xf32> {kiln.name = "x", kiln.dims = ["", "seq", ""]}) -> (tensor<1x?x8xf32> {kiln.name = "y"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %m = graph.reshape %x {shape = array<i64: -1, 4>, allow_zero = false} : (tensor<1x?x8xf32>) -> tensor<?x4xf32>
  %w = graph.constant dense<1.0> : tensor<4x4xf32>
  %p = graph.matmul %m, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %y = graph.reshape %p {shape = array<i64: 1, -1, 8>, allow_zero = false} : (tensor<?x4xf32>) -> tensor<1x?x8xf32>
  return %y : tensor<1x?x8xf32>
}

// -----

// expected-error @+1 {{output 'y' dimension 0 is 8 x 'seq', which the model's interface cannot describe}}
func.func @main(%x: tensor<1x?x8xf32> {kiln.name = "x", kiln.dims = ["", "seq", ""]}) -> (tensor<?xf32> {kiln.name = "y"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %y = graph.reshape %x {shape = array<i64: -1>, allow_zero = false} : (tensor<1x?x8xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// A reshape that splits the symbol, or merges two, is refused.
// expected-error @+1 {{graph.reshape (2: 'graph.reshape', ...; it merges or splits the symbolic dimension 'seq' with other sizes)}}
func.func @main(%x: tensor<1x?x8xf32> {kiln.name = "x", kiln.dims = ["", "seq", ""]}, %z: tensor<?x?xf32> {kiln.name = "z", kiln.dims = ["seq", "seq"]}) -> (tensor<?x16xf32> {kiln.name = "y"}, tensor<?xf32> {kiln.name = "w"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %y = graph.reshape %x {shape = array<i64: -1, 16>, allow_zero = false} : (tensor<1x?x8xf32>) -> tensor<?x16xf32>
  %w = graph.reshape %z {shape = array<i64: -1>, allow_zero = false} : (tensor<?x?xf32>) -> tensor<?xf32>
  return %y, %w : tensor<?x16xf32>, tensor<?xf32>
}

// -----

// Ops without a rule for symbolic sizes are refused, by type, before any
// is computed at a size nobody checked; the ops after them are not named.
// expected-error @+1 {{the symbolic dimensions (seq) reach ops that Kiln computes only at static sizes so far: graph.concat (2: 'a (Concat)', ...), graph.reduce_sum (1: 'graph.reduce_sum'); give each a size with --dynamic-dims NAME=SIZE}}
func.func @main(%x: tensor<1x?xf32> {kiln.name = "x", kiln.dims = ["", "seq"]}) -> (tensor<1x?xf32> {kiln.name = "y"}, tensor<1x1xf32> {kiln.name = "z"}, tensor<1x?xf32> {kiln.name = "w"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %c = graph.concat %x, %x {axis = 1 : i64} : (tensor<1x?xf32>, tensor<1x?xf32>) -> tensor<1x?xf32> loc("a (Concat)")
  %r = graph.relu %c : tensor<1x?xf32>
  %d = graph.concat %x, %x {axis = 1 : i64} : (tensor<1x?xf32>, tensor<1x?xf32>) -> tensor<1x?xf32> loc("b (Concat)")
  %t = graph.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<1x?xf32>) -> tensor<1x1xf32>
  return %r, %t, %d : tensor<1x?xf32>, tensor<1x1xf32>, tensor<1x?xf32>
}

// -----

// Broadcasting a symbol against a static size would need them equal at run
// time: refused.
// expected-error @+1 {{graph.add (1: 'graph.add'; it broadcasts the symbolic dimension 'seq' with the size 4)}}
func.func @main(%x: tensor<?xf32> {kiln.name = "x", kiln.dims = ["seq"]}, %y: tensor<4xf32> {kiln.name = "y"}) -> (tensor<4xf32> {kiln.name = "z"}) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %0 = graph.add %x, %y : (tensor<?xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{the model has no function @main}}
module {
  func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
