//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//

#ifndef KILN_CODEGEN_CPU_PASSES
#define KILN_CODEGEN_CPU_PASSES

include "mlir/Pass/PassBase.td"

def CPUApproximateMath : Pass<"kiln-cpu-approximate-math", "mlir::func::FuncOp"> {
  let summary = "Rewrites exp, erf, tanh and the logarithms as vectorizable arithmetic";
  let description = [{
    Applies upstream's polynomial approximations to `math.exp`,
    `math.expm1`, `math.erf`, `math.erfc`, `math.tanh`, `math.log`,
    `math.log1p` and `math.log2`: polynomials and exponent bit manipulation
    instead of a libm call per element, so that LLVM's loop vectorizer makes
    vector code of the loops around them (Softmax, GELU, LayerNorm's
    neighbours). The approximations are accurate to a few ulp of f32; the
    ONNX conformance tests and the models check that they stay within
    tolerance. A division by a constant gets `arcp`, so that LLVM
    multiplies by the constant's reciprocal (within 1 ulp) instead of
    dividing.

    Before:
    ```mlir
    %y = math.erf %x : f32
    ```
    After: `arith` operations only (`arith.mulf`, `math.fma`, `arith.select`,
    comparisons, and bitcasts for the exponent).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def CPUTileSymbolicRows
    : Pass<"kiln-cpu-tile-symbolic-rows", "mlir::func::FuncOp"> {
  let summary = "Static blocks of a contraction's run-time loops";
  let description = [{
    A linalg op whose sizes the run chooses (a sequence length,
    kiln.dim_symbols) would take the loop path: the register blocks,
    packing and vector code of the passes after this one need static
    shapes. A contraction whose every `?` operand dimension is one of its
    run-time loops (a projection [seq, K] x [K, N]) runs, for its first
    such loop that is parallel, in an scf.for over blocks of `blocks[0]`
    iterations, each a static op; what is left after the last whole block
    runs in blocks of `blocks[1]`, and so on (the last size 1), each block
    the op's TilingInterface tile, the loops' bounds computed up front.
    Where the product's only reader is an elementwise op over the same rows
    (its bias, GELU or residual, directly or through an expand_shape that
    adds unit dimensions), that op is tiled instead and each block computes
    the product's block first (its fill made in the block), so that the
    vector code applies it to the product's registers as in a static build.
    A product with two run-time parallel loops (attention's scores, rows
    by columns) is tiled by rows, then each block by columns, the last
    iterations of each (fewer than the smallest block but 1) one op of a
    run-time size: single rows or columns became matrix-vector products of
    a strided view, which bufferization copied into buffers allocated in
    the loop. A run-time reduction (the probabilities times the values)
    runs in blocks the same way after its rows, each block accumulating
    into the same result, its last terms one op of a run-time size.
    Elementwise ops and row reductions keep the loop path.

    A product whose right-hand side is a constant weight larger than
    `panel-weight-bytes` (a layer's projection) would read the whole weight
    again for every block of rows, from beyond L2: BERT-base's 9.4 MB
    feed-forward weights three times at 384 tokens in blocks of 128. With
    `panel-columns`, its rows in blocks of `panel-rows` (one register
    block) run inside a loop over the weight's panels of that many columns
    (an scf.forall with `parallel`, the blocks' tiles sequential inside),
    as a static build orders its tiles: each panel (3072 x 32 floats, 384
    KB) stays in cache while every block of rows passes over it, and the
    weight is read once whatever the rows. Fewer rows than `panel-rows` (a
    sequence of a few tokens) run inside the panels in blocks of half as
    many, the last ending at the last row; fewer than half a block are
    single rows against the whole weight.

    The rows after the last whole block of the level before single rows,
    and inside a panel the rows after its last whole block (fewer than a
    block, but at least a block in all), are the block that ends at the
    last row, a static op computed before the whole blocks, which compute
    the rows it shares with them again; single rows only run where there
    are fewer rows than that block. Single rows each
    read the whole weight: the last seven rows of a sequence cost seven
    passes over it. Only where the tiled op does not read its destinations
    (a product with its bias or residual; not one that accumulates into
    them), since those rows are computed twice.

    Before:
    ```mlir
    %c = linalg.matmul ins(%a, %w : tensor<?x64xf32>, tensor<64x64xf32>) outs(%z : tensor<?x64xf32>)
    ```
    After (sketch; blocks = 32, 1):
    ```mlir
    %full = scf.for %i = 0 to %seq_whole step 32 iter_args(%o = %z) {
      %ai = tensor.extract_slice %a[%i, 0] [32, 64] [1, 1]
      %ci = linalg.matmul ins(%ai, %w : tensor<32x64xf32>, ...) ...
      scf.yield (tensor.insert_slice %ci into %o[%i, 0] [32, 64] [1, 1])
    }
    %c = scf.for %i = %seq_whole to %seq step 1 iter_args(%o = %full) { ...tensor<1x64xf32>... }
    ```
  }];
  let options = [
    ListOption<"blocks", "blocks", "int64_t",
               "Rows per block, largest first (a last level of single "
               "rows is added where the list does not end in 1)">,
    Option<"panelColumns", "panel-columns", "int64_t", /*default=*/"0",
           "columns of a large constant weight's panel, run outside the "
           "row blocks (the register block's width; 0: none)">,
    Option<"panelRows", "panel-rows", "int64_t", /*default=*/"8",
           "rows per block inside a weight's panel; fewer rows keep the "
           "whole weight">,
    Option<"panelWeightBytes", "panel-weight-bytes", "int64_t",
           /*default=*/"524288",
           "weights of at most this many bytes stay in cache (the target's "
           "L2 share) and keep the row blocks outside">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "make the loop over a weight's panels an scf.forall">,
  ];
  let dependentDialects = ["::kiln::KilnDialect",
                           "mlir::scf::SCFDialect", "mlir::affine::AffineDialect",
                           "mlir::tensor::TensorDialect"];
}

def CPUPackWeights : Pass<"kiln-cpu-pack-weights", "mlir::func::FuncOp"> {
  let summary = "Lays constant matmul weights out as contiguous panels";
  let description = [{
    A 2-D f32 matmul `C[M, N] = A[M, K] * B[K, N]` (or with B given as
    `[N, K]`, Gemm's transB) whose B is a constant becomes a contraction on
    `Bp[N / nb, K, nb]`, B laid out at compile time as panels of nb columns
    (the register block's width), each contiguous:
    `C3[m, n1, j] += A[m, k] * Bp[n1, k, j]`, `C = collapse(C3)`. The
    contraction's vectors then read Bp with unit stride, where they read one
    row of B in every N floats (on BERT-base's matmuls, 210 against 150
    GFLOP/s on one core). An `expand_shape` after the matmul (batch
    dimensions) expands the packed result instead. A matmul whose N is one
    panel, or not a multiple of a vector, is left alone. The weight may be a
    static slice of a constant (a GRU's state weight, split between its two
    products), and the matmul may be the body of a loop (a recurrence's
    state times its weight, every step): at batch 1 each step then reads the
    weight panel by panel, in one stream (an LSTM's 1 MB weight: 9 against
    12 microseconds a step), which kiln-cpu-tile-and-vectorize runs four
    panel rows at a time, their products summed in pairs before they reach
    the accumulators (8 microseconds).

    Before:
    ```mlir
    %c = linalg.matmul ins(%a, %w : tensor<128x768xf32>, tensor<768x3072xf32>) outs(%z : tensor<128x3072xf32>)
    ```
    After:
    ```mlir
    %z3 = tensor.expand_shape %z [[0], [1, 2]] : tensor<128x3072xf32> into tensor<128x96x32xf32>
    %c3 = linalg.generic {(m, n1, j, k): A (m, k), Bp (n1, k, j) -> (m, n1, j)}
            ins(%a, %wp : tensor<128x768xf32>, tensor<96x768x32xf32>) outs(%z3 : tensor<128x96x32xf32>)
    %c = tensor.collapse_shape %c3 [[0], [1, 2]] : tensor<128x96x32xf32> into tensor<128x3072xf32>
    ```

    A product in a packed form (int8 or bf16 operands in groups of four or
    two, `acc[r, n] += ext(x[r, q, j]) * ext(w[q, n, j])`: see
    `buildPackedMatMul`) with a constant weight gets panels the same way:
    `wp[N / nb, Q, nb, j]` and `acc3[r, p, c]`. In rows, each step of a tile
    read its nb x j weights from a row of N x j bytes (12 KB apart for
    BERT-base's 3072 int8 columns: a page each step); a panel is one stream.
    The accumulators' start (zeros, or a bias broadcast along the rows) is
    made again in the panels' shape, so that the tiles still fuse it, and
    `kiln-cpu-tile-and-vectorize` runs the epilogue after the collapse_shape
    on the panels' shape, fused into the tiles.

    One panel of a constant weight read at a column a loop chooses (a
    product inside `kiln-cpu-tile-symbolic-rows`' loop over a large
    weight's panels: `B = extract_slice W[0, j] [K, nb]`, j a multiple of
    nb) reads the same panel of the whole weight's packing instead,
    `extract_slice Wp[j / nb, 0, 0] [1, K, nb]`: one contiguous stream,
    where the slice read nb floats in every N.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target">,
  ];
  let dependentDialects = ["::kiln::KilnDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CPUParallelize : Pass<"kiln-cpu-parallelize", "mlir::func::FuncOp"> {
  let summary = "Spreads the loop nests that are not contractions over threads";
  let description = [{
    `kiln-cpu-tile-and-vectorize` gives every contraction an `scf.forall`
    over its output tiles. This pass does the same for the other linalg ops
    of the function (elementwise ops, pools, depthwise convolutions,
    Winograd's transforms, layout conversions, reductions over an inner
    dimension, fills): their leading parallel loops are tiled into an
    `scf.forall` of at least `min-tiles` tiles (tile sizes that divide the
    loop, so that every tile has a static shape), and the loops inside each
    tile are the op's own, for LLVM to vectorize as before. A leading loop
    of a run-time size is cut into as many tiles as the threads want, of a
    size computed at run time (the last one shorter). An op with fewer
    than `min-iterations` iterations in all (times its results: a Winograd
    transform writes a whole tile per iteration; a loop of a run-time size,
    a sequence length, counts as 64), or whose first loop is a
    reduction, stays sequential: a parallel region costs a few microseconds
    to start. So does an op that reads an operand through an index that
    does not grow with its loops (a ConvTranspose's flipped kernel,
    `k - 1 - d`; a grouped convolution's `floordiv`): linalg's tiling sizes
    such a read wrongly. A kernel configuration from a tuning database
    (`kiln.kernel_config`, docs/tuning.md) overrides the thresholds for its
    op: `parallel = false` keeps it sequential, `parallel = true` puts it on
    threads whatever its size, `tiles` replaces `min-tiles`.

    Before:
    ```mlir
    %y = linalg.generic {iterator_types = ["parallel", "parallel", "parallel",
                                           "parallel", "parallel"]}
        ins(%x : tensor<1x4x56x56x16xf32>) outs(%e : tensor<1x4x56x56x16xf32>)
    ```
    After (four channel blocks times eight row blocks):
    ```mlir
    %y = scf.forall (%i, %j, %k) = (0, 0, 0) to (1, 4, 56) step (1, 1, 7)
        shared_outs(%o = %e) -> (tensor<1x4x56x56x16xf32>) {
      ... linalg.generic on tensor<1x1x7x56x16xf32> slices ...
    }
    ```
  }];
  let options = [
    Option<"minTiles", "min-tiles", "int64_t", /*default=*/"32",
           "tiles to make at least, where the loops allow">,
    Option<"minIterations", "min-iterations", "int64_t", /*default=*/"16384",
           "iterations an op needs to run in parallel">,
  ];
  let dependentDialects = ["::kiln::KilnDialect", "mlir::scf::SCFDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::tensor::TensorDialect"];
}

def CPUReorderLoops : Pass<"kiln-cpu-reorder-loops", "mlir::func::FuncOp"> {
  let summary = "Orders the loops of contractions so the innermost one is "
                "unit-stride";
  let description = [{
    A linalg contraction (matmul, convolution, ...) lowered to loops in its
    own order has a reduction loop innermost: matmul's `k` walks B by
    column, a convolution's `kw` runs over three elements. This pass moves the
    loop of the output's last dimension innermost whenever an input also
    walks that dimension contiguously, and puts the reduction loops just
    outside it, so that the innermost loop reads and writes memory with unit
    stride and LLVM's loop vectorizer turns it into vector FMAs. Only an
    input that some reduction loop moves counts (a contraction's operand;
    not the mean that a variance subtracts, one value per output). Ops with
    no reduction, or whose output's last dimension is not contiguous in
    such an input (a reduction over the last axis), keep their order.

    The float combiner of a reduction that runs in the innermost loop (a
    row sum, maximum or product: LayerNormalization's mean and variance,
    Softmax's maximum and sum) gets `fastmath<reassoc>`, so that LLVM keeps
    partial results in vector lanes instead of one chain of scalar
    additions; the result differs from the serial sum by rounding only.

    A `linalg.transpose` of f32 that moves its input's innermost dimension
    becomes a loop over 16x16 blocks: 16 contiguous rows read
    (`vector.transfer_read`), transposed with upstream's 16x16 shuffle
    lowering, and written as 16 contiguous rows. A block that crosses the
    end of a dimension that is not a multiple of 16 (56 pixels) is read and
    written with masks; a dimension under half a block stays element by
    element. Lowered to loops, it read the input with a stride, one element
    at a time.

    Fills, copies and elementwise ops (identity maps, no indices used) on
    buffers get one loop over the trailing dimensions that every buffer
    holds contiguously (`memref.collapse_shape`, and upstream's
    `collapseOpIterationDims`): a blocked tensor's innermost 16 elements
    alone were a loop that LLVM unrolled whole before vectorizing the next
    loop out with scatters.

    An elementwise op with an input that broadcasts (a per-channel scale of
    a blocked tensor, read through `(n, c1, h, w, c) -> (c1, 0, 0, c)`)
    cannot be collapsed that way. Where its innermost dimension is a
    multiple of `vector-width` and contiguous in every buffer that it moves
    through, the op runs as loops over the other dimensions around vectors
    of that width (upstream's linalg tiling and vectorizer), each vector
    read and written whole, a broadcast input read once per vector. Left to
    LLVM, the 16 elements of a channel block were unrolled and the loop
    over the pixels vectorized with gathers and scatters: DenseNet-121's
    BatchNormalization and ReLU before each 1x1 convolution ran at 5
    GFLOP/s, a quarter of the model's time. Each step takes up to 8
    positions of the next dimension out (the largest divisor of its size
    from 8 down; upstream's vector unrolling makes one vector per
    position): a blocked depthwise convolution, one such op whose body sums
    9 or 25 products, then has 8 independent chains of multiply-adds and
    loads each input vector that neighbouring pixels' windows share once
    (EfficientNet-B0's depthwise convolutions 66 -> 87-128 GFLOP/s). A
    kernel configuration's `rows` (kiln.tune's knob of a window op: a
    depthwise convolution or pool) sets the positions per step instead, where it divides the
    dimension.

    Before (loops i, j, k of a matmul):
    ```mlir
    linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x128xf32>)
                  outs(%c : memref<64x128xf32>)
    ```
    After (a generic op iterating i, k, j):
    ```mlir
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>,
                                     affine_map<(d0, d1, d2) -> (d1, d2)>,
                                     affine_map<(d0, d1, d2) -> (d0, d2)>],
                    iterator_types = ["parallel", "reduction", "parallel"]} ...
    ```
  }];
  let options = [
    Option<"transposeBlock", "transpose-block", "int64_t", /*default=*/"16",
           "side of the f32 register blocks of transposes that move the "
           "innermost dimension (the target's; 0: element by element)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target: the width "
           "of the vectors of elementwise ops with a broadcast input (0: "
           "leave them to LLVM)">
  ];
  let dependentDialects = ["::kiln::KilnDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def CPUSelectConvAlgorithm : Pass<"kiln-cpu-select-conv-algorithm", "mlir::func::FuncOp"> {
  let summary = "Chooses an algorithm for every 2-D convolution";
  let description = [{
    Marks each `linalg.conv_2d_nchw_fchw` with `kiln.conv_algorithm`:
    `im2col`, `direct` (its own loop nest), or `winograd-2x3`,
    `winograd-4x3`, `winograd-6x3` (Winograd F(m x m, 3 x 3); only for 3x3,
    stride-1, undilated f32 layers with constant weights). A layer named in
    `overrides` (`LAYER=ALGORITHM`, the ONNX node name) gets that algorithm,
    the others `algorithm`; with `auto` (the default) a cost model of the
    target picks the cheapest: the multiply-adds of the contractions at
    vector speed (paying for whole vectors along their vector dimension),
    and those of the copies and Winograd transforms at a fraction of it. The
    choice and the estimates of every layer are left on the function as
    `kiln.conv_algorithms`, which `kiln-compile --report` prints.

    Before:
    ```mlir
    %y = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x64x58x58xf32>, tensor<64x64x3x3xf32>) ...
    ```
    After:
    ```mlir
    %y = linalg.conv_2d_nchw_fchw {kiln.conv_algorithm = "winograd-4x3"} ins(...) ...
    ```
  }];
  let options = [
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"auto\"",
           "auto, or the algorithm of every layer not overridden">,
    ListOption<"overrides", "overrides", "std::string",
               "LAYER=ALGORITHM for single layers">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target">,
    // The target's cost model (TargetInfo::convCosts), in multiply-adds of
    // a register-blocked contraction.
    Option<"transformCost", "transform-cost", "double", /*default=*/"20.0",
           "a multiply-add in an NCHW copy or transform loop">,
    Option<"directCost", "direct-cost", "double", /*default=*/"6.0",
           "a multiply-add of an NCHW convolution's own loops">,
    Option<"passCost", "pass-cost", "double", /*default=*/"2.0",
           "a blocked direct convolution's pass over one output element">,
    Option<"blockedTransformCostF2", "blocked-transform-cost-f2", "double",
           /*default=*/"24.0",
           "a multiply-add of F(2,3)'s transforms in the blocked layout">,
    Option<"blockedTransformCost", "blocked-transform-cost", "double",
           /*default=*/"2.0",
           "a multiply-add of F(4,3)'s and F(6,3)'s blocked transforms">,
    Option<"weightCost", "weight-cost", "double", /*default=*/"25.0",
           "reading one float of a filter from memory">,
    Option<"winogradCachedFloats", "winograd-cached-floats", "int64_t",
           /*default=*/"2097152",
           "floats of Winograd's transformed tensors that stay in cache">,
    Option<"spillCost", "spill-cost", "double", /*default=*/"130.0",
           "each transformed float beyond those">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def CPUTileAndVectorize : Pass<"kiln-cpu-tile-and-vectorize", "mlir::func::FuncOp"> {
  let summary = "Register-blocks contractions and turns them into vector FMAs";
  let description = [{
    For every linalg contraction on tensors with static shapes (matmul,
    batch matmul, the contraction of an im2col convolution, ...), tiles the
    iteration space so that one tile is `rows` x `2 * vector-width` elements of
    the output over one step of the reduction, vectorizes each tile, and
    hoists the output tile's loads and stores out of the reduction loop: the
    accumulators stay in vector registers for the whole reduction, and each
    step is `rows` broadcasts and `2 * rows` vector FMAs. Runs on tensors,
    before bufferization, where the accumulator is a loop-carried value
    whatever views the output goes through. Tile sizes are the
    largest that divide the shape; an op whose innermost output dimension is
    not a multiple of the vector width is left for the loop path
    (`kiln-cpu-reorder-loops`). The vector ops are then lowered to
    `vector.fma`, loads and stores, ready for `convert-vector-to-llvm`.

    Blocked convolutions (a `linalg.generic` tagged `kiln.blocked_conv`,
    see codegen/Common/BlockedConv.h) that `kiln-cpu-select-conv-algorithm`
    left direct are the other kind of op it register-blocks. Their loops
    are `(n, ko, oh, ow, o | ci, y, x, i)`; an output tile is `rows` output
    columns by the output's channel block (one vector at the target's block
    size), and its reduction runs over the input channel blocks, the window
    positions and the input block one step at a time: each step reads a
    (strided) slice of the input and is a `rows x 1 x block` matmul, and the
    accumulators stay in registers for the whole window. There is no im2col
    copy and one pass over the output, whatever the window. Where the input
    is zero padding around the data (a `tensor.pad` of zero, or the data
    written into a zero fill), each tile's window loops run only over the
    positions that read data for some output of the tile, from bounds
    computed where the tile starts: a dilated convolution on a map not much
    larger than its dilation (DeepLabV3's dilation 12 on 14x14) skips most
    of its products. Only where at least a quarter of the (tile, tap) pairs
    along that window dimension read padding: otherwise the constant bounds
    keep the weights one sequential stream.

    The integer form of a blocked convolution (8-bit operands, i32
    accumulators, the input block in groups of four channels) takes the
    same tiles, and each step is, per output row, the row's four input bytes
    broadcast as one 32-bit lane and a dot-product instruction with the 64
    weight bytes of the output block (four u8 x s8 products summed into
    each lane): a `kiln.dot_i8` that
    `kiln-cpu-lower-dot-products` lowers for the target.

    A contraction with a `kiln.kernel_config` (see
    `kiln-codegen-apply-kernel-configs`) takes from it what it sets: the block's
    width (`vectors` x `vector_width` lanes), its height (`rows`, at most:
    the largest divisor of M not above it), the reduction steps per loop
    iteration (`k_tile`, unrolled) and whether its tiles run in parallel.

    Epilogues: when the only user of a contraction is an elementwise op that
    reads it element for element (the bias, residual and activation of a
    `graph.fused_conv` or `graph.fused_matmul`, seen through the
    `tensor.expand_shape` of an im2col convolution, or through the
    `tensor.collapse_shape` of a product in panels, then on the panels'
    shape), that op is tiled into
    the same output tiles and the contraction fused into its loop nest: each
    tile's accumulators get the epilogue in registers and are stored once,
    with no second loop nest over the output.

    Extending it: the register block (`rows`, and the two vectors per row) is
    sized from the target's vector registers (`TargetInfo::registerBlockRows`:
    8 rows with 32 registers, 6 with 16); constant right-hand sides arrive
    packed by `kiln-cpu-pack-weights`. A new target brings its own row count
    there, and a new element type its own lanes per vector.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target">,
    Option<"rows", "rows", "int64_t", /*default=*/"8",
           "output rows in a register block">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "make the loop over output tiles an scf.forall">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", /*default=*/"true",
           "apply an elementwise consumer to each output tile in registers">,
    Option<"cachedWeightBytes", "cached-weight-bytes", "int64_t",
           /*default=*/"524288",
           "a direct blocked convolution's weights stay in cache up to this "
           "size (the target's L2 share), which decides its tile order">,
  ];
  let dependentDialects = ["::kiln::KilnDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def CPUPrefetchWeights : Pass<"kiln-cpu-prefetch-weights", "mlir::func::FuncOp"> {
  let summary = "Fetches a contraction's constant weights ahead of the steps "
                "that read them";
  let description = [{
    Runs on the outlined kernels after bufferization. Before every vector
    read of a cache line or more (64 bytes: an AVX-512 tile's panel row, or
    a dot product's weights) inside a loop, from a constant global larger
    than `min-bytes` (through subviews and reshapes), it adds a
    `memref.prefetch` of the element `distance` bytes further along the
    weight, clamped to its last element. A tile reads its weights as one
    stream (a panel: `kiln-cpu-pack-weights`; a filter block), 128 bytes a
    step, and the first tile to read a panel found none of it in cache:
    each step waited on memory, which the hardware prefetcher (one page at
    a time) did not hide. Past a panel's end the prefetches reach the next
    panel's start, which the next tiles read. Targets with narrower vectors
    (AVX2, NEON) get none: their reads are under a cache line, and it was
    not measured there.

    Before:
    ```mlir
    %w = vector.transfer_read %panel[%c0], %c0_i8 : memref<64xi8, strided<[1], offset: ?>>, vector<64xi8>
    ```
    After (`distance=4096`):
    ```mlir
    %base, %offset, %size, %stride = memref.extract_strided_metadata %panel
    %ahead = arith.minui (%offset + 4096), %last
    memref.prefetch %weights[%ahead], read, locality<3>, data : memref<2359296xi8>
    %w = vector.transfer_read %panel[%c0], %c0_i8 : ...
    ```
  }];
  let options = [
    Option<"distance", "distance", "int64_t", /*default=*/"4096",
           "how far ahead, in bytes (0: no prefetches)">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "weights of at most this many bytes are left alone">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def CPULowerDotProducts : Pass<"kiln-cpu-lower-dot-products", "mlir::func::FuncOp"> {
  let summary = "Lowers kiln.dot_i8 and kiln.dot_bf16 to the target's "
                "dot-product instructions, or to vector arithmetic";
  let description = [{
    `kiln.dot_i8 %acc, %lhs, %rhs : vector<Nxi32>` adds to each 32-bit lane
    the four products of its unsigned bytes in `lhs` with its signed bytes in
    `rhs`. Where `lanes` is N, it becomes the target's `instruction` (an
    `llvm.call_intrinsic`, after bufferization, which takes no op of unknown
    effects):

    - `vpdpbusd` (x86 AVX-512 VNNI, 16 lanes; AVX-VNNI, 8): u8 x s8, as it
      is;
    - `usdot` (AArch64 i8mm, 4 lanes): u8 x s8, as it is;
    - `sdot` (AArch64 dotprod, 4 lanes): s8 x s8, on `lhs` less 128 (its
      bytes' top bits flipped), plus 128 times the sum of `rhs`'s bytes,
      which is `-sdot(0, splat(-128), rhs)` (the same for every row that
      shares the weights: CSE keeps one).

    Elsewhere the bytes are extended to 32 bits, multiplied and summed by
    groups of four: correct on any target, several times slower.

    `kiln.dot_bf16` (two bf16 products into each f32 lane) likewise becomes
    `bf16-instruction` where `bf16-lanes` match: `vdpbf16ps` (x86
    AVX512-BF16, 16 lanes) or `bfdot` (AArch64 BF16, 4 lanes); elsewhere
    both halves are extended to f32, multiplied and summed.

    Before:
    ```mlir
    %r = kiln.dot_i8 %acc, %a, %b : vector<16xi32>
    ```
    After (`instruction=vpdpbusd lanes=16`):
    ```mlir
    %a8 = vector.bitcast %a : vector<16xi32> to vector<64xi8>
    %b8 = vector.bitcast %b : vector<16xi32> to vector<64xi8>
    %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%acc, %a8, %b8)
         : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
    ```
  }];
  let options = [
    Option<"instruction", "instruction", "std::string", /*default=*/"\"\"",
           "the target's 8-bit dot-product instruction: vpdpbusd, usdot, "
           "sdot, or none">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"0",
           "the i32 lanes of the instruction (16 or 8 for vpdpbusd, 4 for "
           "usdot and sdot)">,
    Option<"bf16Instruction", "bf16-instruction", "std::string",
           /*default=*/"\"\"",
           "the target's bf16 dot-product instruction: vdpbf16ps (x86 "
           "AVX512-BF16), bfdot (AArch64 BF16), or none">,
    Option<"bf16Lanes", "bf16-lanes", "int64_t", /*default=*/"0",
           "the f32 lanes of the bf16 instruction (16 for vdpbf16ps, 4 for "
           "bfdot)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES
