//===- Passes.td - Passes of the graph dialect -------------*- tablegen -*-===//

#ifndef KILN_GRAPH_PASSES
#define KILN_GRAPH_PASSES

include "mlir/Pass/PassBase.td"

def GraphBlockedLayout : Pass<"kiln-graph-blocked-layout", "mlir::func::FuncOp"> {
  let summary = "Puts convolutions, pools and the ops between them into the "
                "blocked layout NCHWc, with conversions only where it ends";
  let description = [{
    Rewrites every 2-D `graph.conv` and `graph.fused_conv` of one group whose
    weight (and bias) are constants into a `graph.blocked_conv`, every
    depthwise one (group = channels = filters) into a
    `graph.blocked_depthwise_conv`, and every 2-D float `graph.max_pool`
    into a `graph.blocked_max_pool`, on tensors of type `N x C1 x H x W x c`
    with the encoding `#graph.blocked<c = block>` (NCHWc; NC1HWC0 is the
    same layout with `C0 = block`). Data operands go through
    `graph.to_blocked` (channels zero-padded to a multiple of the block) and
    results come back through `graph.from_blocked`; where one blocked op
    feeds another the pair folds away, so conversions remain only at the
    edges of the blocked region. Weights are re-laid out at compile time
    into `K1 x C1 x kh x kw x ci x c` (depthwise: `C1 x kh x kw x c`; zero
    padded), biases into `K1 x c`; `ci` is the block, or the channel count of
    an input that has fewer channels than a block and does not come from a
    blocked op (an image's 3).

    Where an operand comes from `graph.from_blocked` (so that the rewrite
    removes a conversion), average and global pools, BatchNorm with constant
    parameters (as a Mul and an Add), unary ops that keep finite values
    finite (Relu, LeakyRelu, Elu, Sigmoid, Tanh, HardSigmoid, HardSwish, Neg,
    Abs), Add/Sub/Mul/Max/Min of blocked tensors (of the same shape, or one
    broadcast along the channels such as a squeeze-and-excitation scale
    [N, C, 1, 1]) and per-channel or scalar constants, Div by one nonzero constant (a QuantizeLinear's scale), and
    channel concats of whole blocks take the layout too.
    Other grouped convolutions, weights or biases that are not constants and
    dynamic shapes are left alone.

    Before:
    ```mlir
    %0 = graph.fused_conv %x, %w0, %b0 activation relu {...}
         : (tensor<1x64x56x56xf32>, ...) -> tensor<1x64x56x56xf32>
    %1 = graph.fused_conv %0, %w1, %b1 activation relu {...}
         : (tensor<1x64x56x56xf32>, ...) -> tensor<1x64x56x56xf32>
    ```
    After (block = 16):
    ```mlir
    %b = graph.to_blocked %x : tensor<1x64x56x56xf32>
         -> tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    %0 = graph.blocked_conv %b, %w0b, %b0b activation relu {...}
         : (...) -> tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    %1 = graph.blocked_conv %0, %w1b, %b1b activation relu {...}
         : (...) -> tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    %y = graph.from_blocked %1 : tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
         -> tensor<1x64x56x56xf32>
    ```
  }];
  let options = [
    Option<"block", "block", "int64_t", /*default=*/"16",
           "channels per block: the target's fp32 vector width for NCHWc, "
           "or the C0 of NC1HWC0">
  ];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphFoldPads : Pass<"kiln-graph-fold-pads", "mlir::func::FuncOp"> {
  let summary = "Folds a constant Pad of the spatial dimensions into the "
                "convolution or pool that reads it";
  let description = [{
    A `graph.pad` in `constant` mode that pads only the spatial dimensions
    of NC(D)HW data, by non-negative amounts, folds into the window op that
    reads it, whose own `pads` grow by the Pad's:
    - `graph.conv`, when the Pad's value is 0;
    - `graph.average_pool`, when the value is 0, with `count_include_pad`
      (the Pad's zeros counted in each divisor, as they were), if the pool
      had no padding of its own or counted it already;
    - `graph.max_pool`, when the value is -inf, or 0 on a `graph.relu`'s
      output with windows of consecutive taps that each still read the
      input (zeros never beat a ReLU's outputs then).
    A pool in `ceil_mode` takes the Pad only when its windows all end inside
    the padded input, where `ceil_mode` changes nothing. The Pad stays for
    its other users, if any. torch.onnx writes `avg_pool2d(padding=1)` as a
    Pad and an AveragePool (Inception-v3 has nine), and Keras models pad
    explicitly before their stride-2 layers: each Pad copies its tensor, and
    takes it out of the blocked layout and back.

    Before:
    ```mlir
    %p = graph.pad %x {mode = "constant", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>, value = 0.0 : f64}
         : (tensor<1x192x35x35xf32>) -> tensor<1x192x37x37xf32>
    %y = graph.average_pool %p {count_include_pad = false, pads = array<i64: 0, 0, 0, 0>, ...}
         : (tensor<1x192x37x37xf32>) -> tensor<1x192x35x35xf32>
    ```
    After:
    ```mlir
    %y = graph.average_pool %x {count_include_pad = true, pads = array<i64: 1, 1, 1, 1>, ...}
         : (tensor<1x192x35x35xf32>) -> tensor<1x192x35x35xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphPruneConvTaps : Pass<"kiln-graph-prune-conv-taps", "mlir::func::FuncOp"> {
  let summary = "Drops the filter taps of a convolution that only ever read "
                "its zero padding";
  let description = [{
    For each spatial dimension of a `graph.conv` with a constant weight and
    static shapes, tap `i` reads input index `y * stride + i * dilation -
    pad_begin` for output index `y`; when that lies outside the input for
    every `y`, the tap multiplies zeros. The filter is cut to the taps from
    the first to the last that read the input (keeping any taps the padding
    still needs, so that it stays non-negative), and the padding shrinks by
    the dilation times the taps cut on each side: the output is unchanged. A
    window of one tap gets dilation 1. DeepLabV3's ASPP at a 224x224 input
    (3x3 convolutions dilated by 12, 24 and 36 on a 7x7 map) becomes three
    1x1 convolutions.

    Before:
    ```mlir
    %y = graph.conv %x, %w {dilations = array<i64: 36, 36>, pads = array<i64: 36, 36, 36, 36>, ...}
         : (tensor<1x960x7x7xf32>, tensor<256x960x3x3xf32>) -> tensor<1x256x7x7xf32>
    ```
    After:
    ```mlir
    %y = graph.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ...}
         : (tensor<1x960x7x7xf32>, tensor<256x960x1x1xf32>) -> tensor<1x256x7x7xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphConvTransposeAsConv : Pass<"kiln-graph-conv-transpose-as-conv", "mlir::func::FuncOp"> {
  let summary = "Computes a transposed convolution as one convolution of its "
                "phases, interleaved";
  let description = [{
    Output `o` of a transposed convolution (stride `s`, pad `p`, filter `w`)
    sums `x[q - j] * w[phi + s * j]` over `j`, with `phi = (o + p) mod s`
    and `q = (o + p) div s`: each phase `phi` is a stride-1 convolution of
    the unchanged input with every `s`-th tap of the filter, reversed. A
    `graph.conv_transpose` of static shapes, constant filter (and bias) and
    no dilation becomes one `graph.conv` with `s^d` times the filters (each
    phase's taps, zero-padded to the longest phase; the bias repeated),
    whose result is interleaved by a reshape, a transpose and a reshape,
    and cut to the output by a slice; an activation that is the transposed
    convolution's only use (Relu, LeakyRelu, Sigmoid, Tanh, Elu, Selu,
    Celu, HardSigmoid, HardSwish, Gelu) applies to the phases before they
    interleave, next to the convolution, for
    `kiln-graph-fuse-epilogues`. The lowering it replaces inserted
    `s - 1` zeros between input elements and multiplied them: `s^d` times
    the products, in a loop nest outside the 2-D kernels. Groups, any
    stride, pads and output padding, 1-D to 3-D.

    Before:
    ```mlir
    %y = graph.conv_transpose %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ...}
         : (tensor<1x256x14x14xf32>, tensor<256x128x4x4xf32>, tensor<128xf32>) -> tensor<1x128x28x28xf32>
    ```
    After:
    ```mlir
    %c = graph.conv %x, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ...}
         : (tensor<1x256x14x14xf32>, tensor<512x256x2x2xf32>, tensor<512xf32>) -> tensor<1x512x15x15xf32>
    %r = graph.reshape %c ... -> tensor<1x128x2x2x15x15xf32>
    %t = graph.transpose %r {perm = array<i64: 0, 1, 4, 2, 5, 3>} ... -> tensor<1x128x15x2x15x2xf32>
    %i = graph.reshape %t ... -> tensor<1x128x30x30xf32>
    %y = graph.slice %i {starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 1, 128, 29, 29>, ...}
         : (tensor<1x128x30x30xf32>) -> tensor<1x128x28x28xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphConv1DAs2D : Pass<"kiln-graph-conv1d-as-2d", "mlir::func::FuncOp"> {
  let summary = "Computes 1-D convolutions as 2-D ones of height 1, and the "
                "elementwise ops after them in 4-D";
  let description = [{
    Every 1-D `graph.conv` of static shapes (`[N, C, L]`) becomes a 2-D one
    of height 1 between two `graph.reshape`s (`[N, C, 1, L]`; the filter
    `[M, C/G, K]` becomes `[M, C/G, 1, K]`, folded when it is a constant;
    strides, pads and dilations get a first entry of 1, 1 and 0 pads), so
    that it takes the blocked layout and the 2-D kernels. The reshape back
    to 3-D is then moved below the elementwise ops that consume it (Add,
    Sub, Mul, Div, Max, Min, Pow and the unary activations), their other
    operands given the unit height too (`[.., C, L]` -> `[.., C, 1, L]`, a
    scalar left alone), and two reshapes in a row become one, or none: a
    chain of 1-D layers stays in 4-D from its first convolution to its
    last, with each activation next to its convolution for
    `kiln-graph-fuse-epilogues`. Runs after `kiln-graph-fold-batch-norm`,
    which folds a BatchNorm into the 1-D convolution before it.

    Before:
    ```mlir
    %y = graph.conv %x, %w, %b {strides = array<i64: 2>, pads = array<i64: 1, 1>, ...}
         : (tensor<1x80x1000xf32>, tensor<256x80x3xf32>, tensor<256xf32>) -> tensor<1x256x500xf32>
    %r = graph.relu %y : tensor<1x256x500xf32>
    ```
    After:
    ```mlir
    %x4 = graph.reshape %x {shape = array<i64: 1, 80, 1, 1000>, ...} : ...
    %y4 = graph.conv %x4, %w4, %b {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 1>, ...}
          : (tensor<1x80x1x1000xf32>, tensor<256x80x1x3xf32>, tensor<256xf32>) -> tensor<1x256x1x500xf32>
    %r4 = graph.relu %y4 : tensor<1x256x1x500xf32>
    %r = graph.reshape %r4 {shape = array<i64: 1, 256, 500>, ...} : ...
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphStackDepthTaps : Pass<"kiln-graph-stack-depth-taps", "mlir::func::FuncOp"> {
  let summary = "Computes a 3-D convolution as one 2-D convolution over "
                "depth-shifted copies of its input stacked along the channels";
  let description = [{
    Output depth `d` of a `graph.conv` over NCDHW reads input depths `d *
    stride + dz * dilation - pad` for its depth taps `dz`. The input is
    transposed to NDCHW (and padded along D), one strided slice per depth
    tap is taken, and the slices are stacked next to each group's channels:
    a 2-D input of `N * Dout` images with `taps * C` channels. The filter
    `[M, C/G, KD, KH, KW]` becomes `[M, KD * C/G, KH, KW]` (at compile time
    when it is a constant), the 2-D convolution keeps the height and width
    strides, pads and dilations, the groups and the bias, and its result
    goes back to NCDHW. The same products, summed in another order; the
    copies cost the depth taps times the input, where im2col's patch matrix
    costs every tap times it. Static shapes, at most 7 depth taps, and a
    spatial window of more than one pixel (a temporal 3x1x1 convolution
    is a matrix product over stacked taps either way, and im2col needs no
    transposes for it).

    Before:
    ```mlir
    %y = graph.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, ...}
         : (tensor<1x64x8x56x56xf32>, tensor<64x64x3x3x3xf32>) -> tensor<1x64x8x56x56xf32>
    ```
    After (slices, concat and reshapes elided):
    ```mlir
    %y2 = graph.conv %x2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ...}
          : (tensor<8x192x56x56xf32>, tensor<64x192x3x3xf32>) -> tensor<8x64x56x56xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphMarkIntegerContractions : Pass<"kiln-graph-mark-integer-contractions", "mlir::func::FuncOp"> {
  let summary = "Marks the blocked convolutions whose operands are 8-bit "
                "integers, for integer arithmetic";
  let description = [{
    A quantised model imports as f32 arithmetic on integer values: an
    activation is `round(x / scale)` clamped to the 8-bit range less its
    zero point, a weight holds integers in [-128, 127]. For each
    `graph.blocked_conv` whose weight is such a constant, whose bias (if
    any) holds integers below 2^24 in magnitude, and whose input provably
    holds integers within
    256 consecutive values that include 0, this pass records that range as
    `kiln.integer_input = array<i64: low, high>`. The proof follows the ops
    that quantise (`graph.round`, `graph.max` and `graph.min`, `graph.add`
    and `graph.sub` of integers, `graph.relu`) and those that move elements
    unchanged (layout conversions, blocked max pools, reshapes, transposes)
    back to constants and roundings. The lowering to linalg computes a
    marked convolution in 8-bit integers with 32-bit accumulators: exact,
    where f32 is exact only below 2^24.

    The pipeline runs it for targets with 8-bit dot-product instructions
    (x86 AVX-512 VNNI and AVX-VNNI, AArch64 dotprod and i8mm); elsewhere the
    convolution stays f32. Blocked convolutions, matmuls and fused matmuls
    (a Gemm's transposed constant folded) are marked alike; an activation
    less a zero point known only at run time (DynamicQuantizeLinear's) is
    taken out of the product: `(a - z) W = a W - z colsum(W)`. A
    `graph.blocked_depthwise_conv` is marked on the same conditions; its
    lowering, at stride 2 x 2, reads the input as bytes and computes in f32.

    With `bf16` (`kiln-compile --precision=bf16`), every other f32 blocked
    convolution, matmul and fused matmul with a constant weight gets
    `kiln.bf16`: the lowering computes it with bf16 operands and f32
    accumulators.

    Before:
    ```mlir
    %r = graph.round %s : tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
    %a = graph.max %r, %zero : (...) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
    %q = graph.min %a, %c255 : (...) -> tensor<1x1x8x8x16xf32, #graph.blocked<c = 16>>
    %y = graph.blocked_conv %q, %w activation none {...} : (...) -> ...
    ```
    After:
    ```mlir
    %y = graph.blocked_conv %q, %w activation none {..., kiln.integer_input = array<i64: 0, 255>} : (...) -> ...
    ```
  }];
  let options = [
    Option<"integers", "integers", "bool", /*default=*/"true",
           "mark the products of 8-bit integer operands (kiln.integer_input)">,
    Option<"bf16", "bf16", "bool", /*default=*/"false",
           "mark the other float products with constant weights for bf16 "
           "operands (kiln.bf16)">,
  ];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphFoldBatchNorm : Pass<"kiln-graph-fold-batch-norm", "mlir::func::FuncOp"> {
  let summary = "Folds BatchNormalization, and Mul and Add by per-channel "
                "constants, into the weights of the Conv, ConvTranspose or "
                "Gemm before them";
  let description = [{
    At inference, `graph.batch_norm` is `x * s + t` per channel, with
    `s = scale / sqrt(var + epsilon)` and `t = bias - mean * s`. When its
    input is a `graph.conv` used only there, with a constant weight and bias
    (or none), filter `m` is multiplied by `s[m]` and the bias becomes
    `b * s + t`; the batch_norm disappears. The same holds for a
    `graph.gemm` (the columns of B are scaled, C becomes `beta * C * s + t`),
    for a `graph.conv_transpose` (its filter `[C, M/G, k...]`: column `j` of
    group `g`'s rows scales by `s[g * M/G + j]`; decoders and GAN
    generators put a BatchNorm after each),
    and for a `graph.mul` or `graph.add` of a convolution by a constant of one
    value per output channel (shape `[M, 1, 1]`, `[1, M, 1, 1]` or a single
    value). Nothing folds when a parameter is not a constant, when the
    convolution has another use (it would have to be computed twice), or
    when the constant varies along another dimension.

    Before:
    ```mlir
    %0 = graph.conv %x, %w {...} : (...) -> tensor<1x64x56x56xf32>
    %1 = graph.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0e-05 : f32}
         : (...) -> tensor<1x64x56x56xf32>
    ```
    After:
    ```mlir
    %w2 = graph.constant dense_resource<folded> : tensor<64x64x3x3xf32>
    %b2 = graph.constant dense<[...]> : tensor<64xf32>
    %1 = graph.conv %x, %w2, %b2 {...} : (...) -> tensor<1x64x56x56xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphWidenHalf : Pass<"kiln-graph-widen-half", "mlir::func::FuncOp"> {
  let summary = "Computes a half-precision (f16) model in f32, keeping f16 at "
                "the model's edges only";
  let description = [{
    A CPU without half-precision arithmetic (x86 before AVX512-FP16) would
    convert every element of an f16 op to f32 and back, one scalar at a
    time, and its products and convolutions would not reach the packed f32
    kernels: an f16 MobileNetV2 ran 16x slower than its f32 twin. This pass
    gives every f16 tensor of the function the element type f32, as
    onnxruntime's CPU kernels compute such a model: float constants are
    converted when compiling (the weights are f32 in the compiled model),
    f16 arguments are converted once where the function starts and results
    where it returns, so that the function's signature, and the model's ABI,
    keep their f16 types.

    Ops whose meaning is the element type keep it: a `graph.cast` to f16
    still rounds (its result is widened again after it), and a
    `graph.bitcast` still reads and writes 16-bit patterns (its operand is
    narrowed before it, its result widened after it).

    Intermediate values are then f32 values: more exact than a model run in
    f16 step by step, and without its overflow to infinity beyond 65504;
    outputs are rounded once, at the end. bf16 is left alone: ONNX's bf16
    node tests compare with a tolerance (1e-3) finer than bf16's precision
    against a reference rounded after every op, which only per-op rounding
    meets.

    Before:
    ```mlir
    func.func @main(%x: tensor<1x8xf16>) -> tensor<1x8xf16> {
      %w = graph.constant dense<...> : tensor<8x8xf16>
      %0 = graph.matmul %x, %w : (tensor<1x8xf16>, tensor<8x8xf16>) -> tensor<1x8xf16>
      return %0 : tensor<1x8xf16>
    }
    ```
    After:
    ```mlir
    func.func @main(%x: tensor<1x8xf16>) -> tensor<1x8xf16> {
      %xw = graph.cast %x : (tensor<1x8xf16>) -> tensor<1x8xf32>
      %w = graph.constant dense<...> : tensor<8x8xf32>
      %0 = graph.matmul %xw, %w : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
      %1 = graph.cast %0 : (tensor<1x8xf32>) -> tensor<1x8xf16>
      return %1 : tensor<1x8xf16>
    }
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphFoldEmptyTensors : Pass<"kiln-graph-fold-empty-tensors", "mlir::func::FuncOp"> {
  let summary = "Replaces values with no elements by empty constants";
  let description = [{
    A tensor with a zero-size dimension holds no data, so whatever computes
    it can be dropped: every graph op whose results all have zero elements is
    replaced by empty `graph.constant`s, and so is every use of an empty
    function argument. Code generation then never sees a zero-size buffer
    (which neither the bare-pointer calling convention nor buffer
    allocation handle), while ops that make data out of empty operands (a
    Concat with a non-empty piece, a ReduceSum to zeros) still compute it.

    Before:
    ```mlir
    %0 = graph.relu %x : tensor<2x0x4xf32>
    ```
    After:
    ```mlir
    %0 = graph.constant dense<> : tensor<2x0x4xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphFuseEpilogues : Pass<"kiln-graph-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fuses the bias, residual addition and activation after a "
                "Conv, MatMul or Gemm into one fused op";
  let description = [{
    Rewrites a `graph.conv` or `graph.matmul` (float) and the elementwise ops
    that follow it into one `graph.fused_conv` / `graph.fused_matmul` whose
    epilogue is `activation(contraction + bias + residual)`:
    - `graph.add` of a constant with one value per output channel (per
      column for a matmul, where any `[N]` tensor is a bias) goes to the bias;
    - `graph.add` of a tensor of the result's type becomes the residual;
    - `graph.relu`, `leaky_relu`, `sigmoid`, `tanh`, `hard_sigmoid`,
      `hard_swish`, `gelu` become the activation, and so do `graph.max` and
      `graph.min` by a splat constant (a Clip, or Relu6) as `clip`.
    A `graph.gemm` with a constant B (and C, if any, one constant per
    column) followed by such an op becomes a `graph.fused_matmul` first, its
    B transposed and scaled by alpha at compile time and `beta * C` the bias.
    Each op is taken only when the contraction has no other use, and in the
    epilogue's order: no Add after the activation. Run after
    `kiln-graph-fold-batch-norm`, so that a batch_norm between a convolution
    and its activation is gone.

    Before:
    ```mlir
    %0 = graph.conv %x, %w, %b {...} : (...) -> tensor<1x64x56x56xf32>
    %1 = graph.add %0, %r : (tensor<1x64x56x56xf32>, tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    %2 = graph.relu %1 : (tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    ```
    After:
    ```mlir
    %2 = graph.fused_conv %x, %w, %b residual %r activation relu {...}
         : (...) -> tensor<1x64x56x56xf32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphSplitReductions : Pass<"kiln-graph-split-reductions", "mlir::func::FuncOp"> {
  let summary = "Splits a large reduction with few results into parts, for "
                "the CPU's threads";
  let description = [{
    A `graph.reduce_max`, `reduce_min`, `reduce_sum` or `reduce_mean` over
    trailing axes whose results number fewer than 8 and whose reduced
    elements per result split into 16 parts of at least 4096 becomes a
    reduction of `[outer, 16, rest]` over `rest`, then over the 16 parts:
    the first has `outer * 16` results that `kiln-cpu-parallelize` puts on
    threads, where the whole ran on one (DynamicQuantizeLinear's minimum and
    maximum of an activation, a loss, a norm). Sums are associated
    differently than in one pass, the same way whatever the thread count.

    Before:
    ```mlir
    %m = graph.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false}
         : (tensor<128x768xf32>) -> tensor<f32>
    ```
    After:
    ```mlir
    %0 = graph.reshape %x {shape = array<i64: 1, 16, 6144>, allow_zero = false}
         : (tensor<128x768xf32>) -> tensor<1x16x6144xf32>
    %1 = graph.reduce_max %0 {axes = array<i64: 2>, keepdims = false}
         : (tensor<1x16x6144xf32>) -> tensor<1x16xf32>
    %2 = graph.reduce_max %1 {axes = array<i64: 1>, keepdims = false}
         : (tensor<1x16xf32>) -> tensor<1xf32>
    %m = graph.reshape %2 {shape = array<i64>, allow_zero = false}
         : (tensor<1xf32>) -> tensor<f32>
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphInferShapes : Pass<"kiln-graph-infer-shapes", "mlir::func::FuncOp"> {
  let summary = "Refines result shapes of graph ops from their operands";
  let description = [{
    Walks each function in order and replaces every result type by the type
    the op infers from its operands whenever the inferred type is more static.
    Run after a pass has made an operand's shape known (constant folding of
    shape arithmetic, a caller that fixes an input's dimensions), so that the
    static shapes reach every consumer. The function's result types follow.

    Before:
    ```mlir
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<?x?xf32> {
      %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x?xf32>
      return %0 : tensor<?x?xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }
    ```
  }];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphMakeEntry : Pass<"kiln-graph-make-entry", "mlir::ModuleOp"> {
  let summary = "Makes @main the model's entry function: records its "
                "interface, drops tensors without elements, renames it";
  let description = [{
    The last graph-level step before lowering, and what the model ABI reads
    at the end of code generation. On the module's `@main`:

    - every input and output must have a static shape (an error names the
      tensor and says how to fix it: `--input-shape`), but for the
      dimensions of `kiln.dim_symbols`, whose symbol is traced through
      every op (an op without a rule for them is refused, by type) and
      recorded per dimension as `symbol_dims`;
    - the interface as the caller sees it is recorded on the function as
      `kiln.inputs` and `kiln.outputs`: one dictionary per tensor with its
      `name` (the ONNX name, from `kiln.name`, else `inputN`/`outputN`), its
      `type`, and `passed = false` where the entry does not take it;
    - inputs without elements that nothing reads, and outputs without
      elements, leave the signature (kiln-graph-fold-empty-tensors has put
      constants in their place): no zero-size buffer reaches code
      generation, and the runtime neither reads nor writes them;
    - the function is renamed `name`, since `main` means something else to a
      linker.

    Before:
    ```mlir
    func.func @main(%x: tensor<1x4xf32> {kiln.name = "x"},
                    %e: tensor<0x4xf32> {kiln.name = "e"})
        -> (tensor<1x4xf32> {kiln.name = "y"})
    ```
    After:
    ```mlir
    func.func @kiln_model_main(%x: tensor<1x4xf32> {kiln.name = "x"})
        -> (tensor<1x4xf32> {kiln.name = "y"}) attributes {
      kiln.inputs = [{name = "x", passed = true, type = tensor<1x4xf32>},
                     {name = "e", passed = false, type = tensor<0x4xf32>} ],
      kiln.outputs = [{name = "y", passed = true, type = tensor<1x4xf32>} ]}
    ```
  }];
  let options = [
    Option<"entryName", "name", "std::string", /*default=*/"\"kiln_model_main\"",
           "the entry function's new name">
  ];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

def GraphSplitBatch : Pass<"kiln-graph-split-batch", "mlir::func::FuncOp"> {
  let summary = "Makes a function whose inputs and outputs lead with a batch "
                "take one sample, to be run once per sample";
  let description = [{
    A convolutional network at batch 8 streams activations eight times the
    size of batch 1's through memory at every layer; one sample's stay in
    the caches from the op that writes them to the op that reads them.
    Where every input and output of the function leads with the same batch
    N > 1 and every op on the way treats the samples apart (each op says so
    through `SampleWiseOpInterface`: convolutions, pools, elementwise ops,
    concats and softmaxes away from the batch, matmuls with the batch in
    their rows, reshapes that keep it; an op without the interface keeps
    the batch whole), the
    function is retyped to batch 1 and marked `kiln.batch_repeat = N`: the
    model ABI's run function then calls it N times, each time on the next
    sample of every input and output.

    The batch need not stay first on the way: each value records the
    dimension that holds it, as outer x N x inner entries. Transposes move
    it; a reshape keeps the samples apart where one sample's block is whole
    rows of the result's sizes after a dimension that holds whole groups of
    the batch's blocks (`[seq, N, 768] -> [seq, N * 12, 64]`, `[seq, N,
    768] -> [seq * N, 768]`, with the factors of `?` sizes that
    `SymbolicDims` traces); matmuls take it in their batch dimensions, the
    left side's rows or the right side's columns; elementwise ops,
    softmaxes, layer norms, slices and expands along other dimensions keep
    it; reshape targets, slice ends and expand shapes are made one
    sample's. This is torch.nn.MultiheadAttention's export.

    `mode=auto` splits where the batch's largest activation outgrows
    `cache-bytes` and its activations outweigh the weights (a model whose
    weights dominate, as VGG-19's classifier does, reads them once per
    batch instead); `on` wherever the ops allow; `off` never. Every function
    gets `kiln.batch_split`, a line saying what was decided and why
    (kiln-compile --report prints it).

    A function with `kiln.symbols` has a symbolic batch (the importer types
    it as a probe size): it is split whatever the mode, and where its ops do
    not allow that, the pass fails, saying why and how to give the batch a
    size. Its samples may keep `?` sizes that the code reads
    (`kiln.dim_symbols`, a sequence); where such a function cannot be
    split, the pass fails with a remark and the reason in
    `kiln.batch_split`, and the compiler imports the model again reading
    the batch's size too. Slices that keep the whole batch, an expand of a
    value without the batch to it, a splat constant of the batch's size
    first and a `graph.prefix` sized by another axis of a sample take one
    sample as well.

    Before (mode=on):
    ```mlir
    func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = graph.relu %x : tensor<8x16xf32>
      return %0 : tensor<8x16xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<1x16xf32>) -> tensor<1x16xf32> attributes {
        kiln.batch_repeat = 8 : i64, kiln.batch_split = "8 runs of one sample (...)"} {
      %0 = graph.relu %x : tensor<1x16xf32>
      return %0 : tensor<1x16xf32>
    }
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"auto\"",
           "auto, on or off">,
    Option<"cacheBytes", "cache-bytes", "int64_t", /*default=*/"16 << 20",
           "where a batch's largest activation stops fitting in the caches "
           "(mode=auto): the target's last-level cache share">
  ];
  let dependentDialects = ["kiln::graph::GraphDialect"];
}

#endif // KILN_GRAPH_PASSES
