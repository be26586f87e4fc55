// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch{mode=on}))' | FileCheck %s --check-prefix=ON
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch{mode=off}))' | FileCheck %s --check-prefix=OFF
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch))' | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch{cache-bytes=1024}))' | FileCheck %s --check-prefix=SMALL-CACHE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-graph-split-batch{mode=maybe}))' 2>&1 | FileCheck %s --check-prefix=BAD

// Ops that treat the samples apart: the function takes one sample and is
// run once per sample.
// ON-LABEL: func.func @convs
// ON-SAME: (%{{.+}}: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// ON-SAME: kiln.batch_repeat = 8 : i64
// ON-SAME: kiln.batch_split = "8 runs of one sample
// ON: graph.conv {{.*}} -> tensor<1x4x8x8xf32>
// ON: graph.relu {{.*}} : tensor<1x4x8x8xf32>
// OFF-LABEL: func.func @convs
// OFF-SAME: (%{{.+}}: tensor<8x4x8x8xf32>)
// OFF-NOT: kiln.batch_repeat
// OFF-SAME: kiln.batch_split = "whole (--batch-split=off)"
// Auto: 8 x 1 KB activations fit in any cache; a tiny cache splits.
// AUTO-LABEL: func.func @convs
// AUTO-NOT: kiln.batch_repeat
// AUTO-SAME: kiln.batch_split = "whole (largest activation
// SMALL-CACHE-LABEL: func.func @convs
// SMALL-CACHE-SAME: kiln.batch_repeat = 8 : i64
func.func @convs(%x: tensor<8x4x8x8xf32>) -> tensor<8x4x8x8xf32> {
  %w = graph.constant dense<0.5> : tensor<4x4x3x3xf32>
  %0 = graph.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<8x4x8x8xf32>
  %1 = graph.relu %0 : tensor<8x4x8x8xf32>
  return %1 : tensor<8x4x8x8xf32>
}

// -----

// A softmax across the batch mixes the samples: the batch stays whole, and
// the reason names the op.
// ON-LABEL: func.func @across
// ON-SAME: (%{{.+}}: tensor<4x6xf32>)
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (graph.softmax does not treat the samples apart)"
func.func @across(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = graph.softmax %x {axes = array<i64: 0>} : tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// No batch above 1: nothing to split.
// ON-LABEL: func.func @single
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (no batch above 1 leads every input and output)"
func.func @single(%x: tensor<1x6xf32>) -> tensor<1x6xf32> {
  %0 = graph.relu %x : tensor<1x6xf32>
  return %0 : tensor<1x6xf32>
}

// -----

// Each op answers through SampleWiseOpInterface: a matmul with the batch in
// its rows and a hardmax away from the batch treat the samples apart.
// ON-LABEL: func.func @rows
// ON-SAME: (%{{.+}}: tensor<1x6xf32>) -> tensor<1x5xf32>
// ON-SAME: kiln.batch_repeat = 4 : i64
// ON: graph.matmul {{.*}} -> tensor<1x5xf32>
// ON: graph.hardmax {{.*}} : tensor<1x5xf32>
func.func @rows(%x: tensor<4x6xf32>) -> tensor<4x5xf32> {
  %w = graph.constant dense<0.5> : tensor<6x5xf32>
  %0 = graph.matmul %x, %w : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %1 = graph.hardmax %0 {axes = array<i64: 1>} : tensor<4x5xf32>
  return %1 : tensor<4x5xf32>
}

// -----

// A reduction away from the batch treats the samples apart; one across
// it does not.
// ON-LABEL: func.func @reduction
// ON-SAME: (%{{.+}}: tensor<1x6x2xf32>) -> tensor<1x1xf32>
// ON-SAME: kiln.batch_repeat = 4 : i64
// ON: graph.reduce_mean {{.*}} -> tensor<1x2xf32>
// ON: graph.reduce_sum {{.*}} -> tensor<1x1xf32>
func.func @reduction(%x: tensor<4x6x2xf32>) -> tensor<4x1xf32> {
  %0 = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x6x2xf32>) -> tensor<4x2xf32>
  %1 = graph.reduce_sum %0 {axes = array<i64: 1>, keepdims = true} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  return %1 : tensor<4x1xf32>
}

// -----

// ON-LABEL: func.func @across_samples
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (graph.reduce_sum does not treat the samples apart)"
func.func @across_samples(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = graph.reduce_sum %x {axes = array<i64: 0>, keepdims = true} : (tensor<4x6xf32>) -> tensor<1x6xf32>
  %1 = graph.sub %x, %0 : (tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// An op without the interface (a tile) keeps the batch whole.
// ON-LABEL: func.func @tile
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (graph.tile does not treat the samples apart)"
func.func @tile(%x: tensor<4x6xf32>) -> tensor<4x12xf32> {
  %0 = graph.tile %x {repeats = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}

// BAD: kiln-graph-split-batch: unknown mode 'maybe' (expected auto, on or off)

// -----

// torch.nn.MultiheadAttention's export: the batch moved behind the
// sequence and merged with the heads ([seq, batch * heads, d] and
// [batch * heads, seq, d] for the products), the rows [seq * batch, e] for
// the output projection, then back to [batch, seq, e]. Each op keeps a
// sample's entries apart wherever the batch lies: the function takes one
// sample, the reshapes' targets name one sample's sizes.
// Auto keeps such a batch whole: the products' rows are the batch's
// tokens, which reuse the weights across it.
// AUTO-LABEL: func.func @merged_heads
// AUTO-NOT: kiln.batch_repeat
// AUTO-SAME: kiln.batch_split = "whole (the batch moves from the first dimension on the way;
// ON-LABEL: func.func @merged_heads
// ON-SAME: (%{{.+}}: tensor<1x5x8xf32>) -> tensor<1x5x8xf32>
// ON-SAME: kiln.batch_repeat = 3 : i64
// ON: graph.transpose {{.*}} -> tensor<5x1x8xf32>
// ON: graph.matmul {{.*}} -> tensor<5x1x8xf32>
// ON: graph.reshape {{.*}}shape = array<i64: 5, 2, 4>{{.*}} -> tensor<5x2x4xf32>
// ON: graph.transpose {{.*}} -> tensor<2x5x4xf32>
// ON: graph.matmul {{.*}} -> tensor<2x5x5xf32>
// ON: graph.softmax {{.*}} : tensor<2x5x5xf32>
// ON: graph.matmul {{.*}} -> tensor<2x5x4xf32>
// ON: graph.transpose {{.*}} -> tensor<5x2x4xf32>
// ON: graph.reshape {{.*}}shape = array<i64: 5, 8>{{.*}} -> tensor<5x8xf32>
// ON: graph.gemm {{.*}} -> tensor<5x8xf32>
// ON: graph.reshape {{.*}}shape = array<i64: 5, 1, 8>{{.*}} -> tensor<5x1x8xf32>
// ON: graph.transpose {{.*}} -> tensor<1x5x8xf32>
func.func @merged_heads(%x: tensor<3x5x8xf32>) -> tensor<3x5x8xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8xf32>
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<3x5x8xf32>) -> tensor<5x3x8xf32>
  %p = graph.matmul %t, %w : (tensor<5x3x8xf32>, tensor<8x8xf32>) -> tensor<5x3x8xf32>
  %h = graph.reshape %p {shape = array<i64: 5, 6, 4>, allow_zero = false} : (tensor<5x3x8xf32>) -> tensor<5x6x4xf32>
  %q = graph.transpose %h {perm = array<i64: 1, 0, 2>} : (tensor<5x6x4xf32>) -> tensor<6x5x4xf32>
  %k = graph.transpose %h {perm = array<i64: 1, 2, 0>} : (tensor<5x6x4xf32>) -> tensor<6x4x5xf32>
  %s = graph.matmul %q, %k : (tensor<6x5x4xf32>, tensor<6x4x5xf32>) -> tensor<6x5x5xf32>
  %a = graph.softmax %s {axes = array<i64: 2>} : tensor<6x5x5xf32>
  %c = graph.matmul %a, %q : (tensor<6x5x5xf32>, tensor<6x5x4xf32>) -> tensor<6x5x4xf32>
  %ct = graph.transpose %c {perm = array<i64: 1, 0, 2>} : (tensor<6x5x4xf32>) -> tensor<5x6x4xf32>
  %r = graph.reshape %ct {shape = array<i64: 15, 8>, allow_zero = false} : (tensor<5x6x4xf32>) -> tensor<15x8xf32>
  %o = graph.gemm %r, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<15x8xf32>, tensor<8x8xf32>) -> tensor<15x8xf32>
  %b = graph.reshape %o {shape = array<i64: 5, 3, 8>, allow_zero = false} : (tensor<15x8xf32>) -> tensor<5x3x8xf32>
  %y = graph.transpose %b {perm = array<i64: 1, 0, 2>} : (tensor<5x3x8xf32>) -> tensor<3x5x8xf32>
  return %y : tensor<3x5x8xf32>
}

// -----

// Where the batch is moved, an op that reads across it, or a reshape that
// interleaves the samples' entries, keeps the batch whole, named.
// ON-LABEL: func.func @moved_across
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (graph.softmax does not treat the samples apart)"
func.func @moved_across(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %s = graph.softmax %t {axes = array<i64: 1>} : tensor<5x3xf32>
  %y = graph.transpose %s {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// ON-LABEL: func.func @interleaved
// ON-NOT: kiln.batch_repeat
// ON-SAME: kiln.batch_split = "whole (graph.reshape does not treat the samples apart)"
func.func @interleaved(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %y = graph.reshape %t {shape = array<i64: 3, 5>, allow_zero = false} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// A recurrence over [seq, batch, hidden] (the batch second, after a
// batch_first transpose), its initial state zeros for the whole batch: one
// sample's steps, from one sample's zeros.
// ON-LABEL: func.func @recurrence
// ON-SAME: (%{{.+}}: tensor<1x5x2xf32>) -> tensor<1x5x2xf32>
// ON-SAME: kiln.batch_repeat = 4 : i64
// ON: %[[ZERO:.+]] = graph.constant dense<0.000000e+00> : tensor<1x2xf32>
// ON: graph.recurrence rnn %{{.+}}, %{{.+}}, %[[ZERO]] {{.*}} -> (tensor<5x1x2xf32>, tensor<1x2xf32>)
func.func @recurrence(%x: tensor<4x5x2xf32>) -> tensor<4x5x2xf32> {
  %t = graph.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<4x5x2xf32>) -> tensor<5x4x2xf32>
  %rt = graph.constant dense<0.1> : tensor<2x2xf32>
  %h0 = graph.constant dense<0.0> : tensor<4x2xf32>
  %y, %h = graph.recurrence rnn %t, %rt, %h0 {activations = ["tanh"], activation_alpha = array<f32: 0.0>, activation_beta = array<f32: 0.0>, reverse = false, linear_before_reset = false, input_forget = false} : (tensor<5x4x2xf32>, tensor<2x2xf32>, tensor<4x2xf32>) -> (tensor<5x4x2xf32>, tensor<4x2xf32>)
  %r = graph.transpose %y {perm = array<i64: 1, 0, 2>} : (tensor<5x4x2xf32>) -> tensor<4x5x2xf32>
  return %r : tensor<4x5x2xf32>
}

// -----

// The batch merged into the first dimension with a video's frames
// ([batch * frames, c, h, w] for a 2-D convolution per frame): each entry
// of that dimension is apart from the others, and a sample is its frames.
// The query of a projection sliced with a Gather along another dimension.
// ON-LABEL: func.func @frames
// ON-SAME: (%{{.+}}: tensor<1x2x3x8x8xf32>) -> (tensor<1x2x4x8x8xf32>, tensor<1x4x8x8xf32>)
// ON-SAME: kiln.batch_repeat = 4 : i64
// ON: graph.reshape {{.*}} -> tensor<2x3x8x8xf32>
// ON: graph.conv {{.*}} -> tensor<2x4x8x8xf32>
// ON: graph.pad {{.*}} -> tensor<2x4x10x10xf32>
// ON: graph.slice {{.*}}ends = array<i64: 2, 4, 9, 9>{{.*}} -> tensor<2x4x8x8xf32>
// ON: graph.reshape {{.*}} -> tensor<1x2x4x8x8xf32>
// ON: graph.gather {{.*}} -> tensor<1x4x8x8xf32>
func.func @frames(%x: tensor<4x2x3x8x8xf32>) -> (tensor<4x2x4x8x8xf32>, tensor<4x4x8x8xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x3x3x3xf32>
  %i = graph.constant dense<1> : tensor<i64>
  %f = graph.reshape %x {shape = array<i64: 8, 3, 8, 8>, allow_zero = false} : (tensor<4x2x3x8x8xf32>) -> tensor<8x3x8x8xf32>
  %c = graph.conv %f, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<8x4x8x8xf32>
  %p = graph.pad %c {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64} : (tensor<8x4x8x8xf32>) -> tensor<8x4x10x10xf32>
  %s = graph.slice %p {starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 8, 4, 9, 9>, steps = array<i64: 1, 1, 1, 1>} : (tensor<8x4x10x10xf32>) -> tensor<8x4x8x8xf32>
  %y = graph.reshape %s {shape = array<i64: 4, 2, 4, 8, 8>, allow_zero = false} : (tensor<8x4x8x8xf32>) -> tensor<4x2x4x8x8xf32>
  %t = graph.transpose %y {perm = array<i64: 1, 0, 2, 3, 4>} : (tensor<4x2x4x8x8xf32>) -> tensor<2x4x4x8x8xf32>
  %g = graph.gather %t, %i {axis = 0 : i64} : (tensor<2x4x4x8x8xf32>, tensor<i64>) -> tensor<4x4x8x8xf32>
  return %y, %g : tensor<4x2x4x8x8xf32>, tensor<4x4x8x8xf32>
}
