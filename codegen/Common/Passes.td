//===- Passes.td - Code generation passes of every target --*- tablegen -*-===//
//
// The loop-level transformations that any target's code generation uses:
// convolution rewrites (Winograd, im2col), kernel configurations from a
// tuning database, elementwise fusion, padding in place, bufferization
// helpers, memory planning, global flattening, copies and outlining. The
// CPU's own passes are in codegen/CPU/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_PASSES
#define KILN_CODEGEN_COMMON_PASSES

include "mlir/Pass/PassBase.td"

def CodegenApplyKernelConfigs : Pass<"kiln-codegen-apply-kernel-configs", "mlir::ModuleOp"> {
  let summary = "Attaches each kernel's configuration from a tuning database";
  let description = [{
    Reads a tuning database (JSON lines, see docs/tuning.md) and, for every
    kernel of the module (a 2-D NCHW convolution, or a contraction that
    `kiln-cpu-tile-and-vectorize` register-blocks) whose signature has a
    record for `target`, attaches the best record's configuration as the
    `kiln.kernel_config` dictionary. `kiln-cpu-select-conv-algorithm`,
    `kiln-codegen-conv-to-im2col`, `kiln-cpu-pack-weights` and
    `kiln-cpu-tile-and-vectorize` read it (and carry it to the ops they
    make); a knob the configuration leaves out keeps its default. A knob the
    kernel does not have, or a value outside its search space, is an error
    naming the database line. Runs first in the CPU pipeline, on the ops that
    lowering to linalg made, where kernel signatures are computed.

    With `stage=loop-nests` it configures the loop nests that
    `kiln-cpu-parallelize` puts on threads instead (depthwise convolutions,
    elementwise ops, reductions such as pools: whether they run on threads,
    into how many tiles, and a depthwise convolution's or pool's positions
    per vector step, which `kiln-cpu-reorder-loops` reads). It runs again for them
    right after the first `kiln-codegen-fuse-elementwise`, on the fused ops
    as they will run.

    Before:
    ```mlir
    %0 = linalg.matmul ins(%a, %b : tensor<32x128xf32>, tensor<128x64xf32>) outs(%c : tensor<32x64xf32>) -> tensor<32x64xf32>
    ```
    After (the database chose 4 rows and one vector per block):
    ```mlir
    %0 = linalg.matmul {kiln.kernel_config = {rows = 4 : i64, vectors = 1 : i64}}
           ins(%a, %b : tensor<32x128xf32>, tensor<128x64xf32>) outs(%c : tensor<32x64xf32>) -> tensor<32x64xf32>
    ```
  }];
  let options = [
    Option<"tuningDB", "tuning-db", "std::string", /*default=*/"",
           "the tuning database file (JSON lines)">,
    Option<"target", "target", "std::string", /*default=*/"",
           "the target key of the records to use (triple/cpu[/features])">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "whether contractions may run their output tiles on threads">,
    Option<"stage", "stage", "std::string", /*default=*/"\"kernels\"",
           "which kernels to configure: kernels (convolutions and "
           "contractions) or loop-nests (after elementwise fusion)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def CodegenConvToIm2Col : Pass<"kiln-codegen-conv-to-im2col", "mlir::func::FuncOp"> {
  let summary = "Rewrites 2-D convolutions as an im2col copy and a contraction";
  let description = [{
    Turns each `linalg.conv_2d_nchw_fchw` and each grouped
    `linalg.conv_2d_ngchw_gfchw` on tensors (except those that
    `kiln-cpu-select-conv-algorithm` marked `direct`) into an explicit im2col
    tensor (one row per filter tap, one column per output pixel; no copy for
    a 1x1 stride-1 convolution) and a matmul-like `linalg.generic`. The copy
    keeps the output rows and columns apart so that its inner loop reads an
    input row with unit stride. The contraction then gets the
    register-blocked, vectorized code of `kiln-cpu-tile-and-vectorize`,
    whose innermost vectors run along the output pixels. Runs on tensors,
    before bufferization.

    Before:
    ```mlir
    %y = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x64x58x58xf32>, tensor<64x64x3x3xf32>)
                                  outs(%init : tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    ```
    After: a `linalg.generic` filling `tensor<1x64x3x3x56x56xf32>` from `%x`,
    collapsed to `tensor<1x576x3136xf32>`, a contraction `(n, f, p, k)` of the
    filter `(f, k)` with it into `tensor<1x64x3136xf32>`, and a
    `tensor.expand_shape` back to NCHW.

    A 3-D `linalg.conv_3d_ncdhw_fcdhw` takes the same path with a copy
    `[N, C, KD, KH, KW, OD, OH, OW]`.

    A grouped convolution keeps its group dimension in every tensor (the
    copy `[N, G, C, KH, KW, OH, OW]`, the filter `[G, F, C*KH*KW]`), and
    the contraction `(n, g, f, p, k)` has it as a batch loop.

    A convolution that `kiln-cpu-select-conv-algorithm` marked with another
    `kiln.conv_algorithm` (`direct`, `winograd-Mx3`; from the command line,
    the cost model or the tuning database's `algorithm` knob) is left alone;
    otherwise its `kiln.kernel_config` (see `kiln-codegen-apply-kernel-configs`)
    moves to the contraction, whose register block it sets.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CodegenConvToWinograd : Pass<"kiln-codegen-conv-to-winograd", "mlir::func::FuncOp"> {
  let summary = "Rewrites 3x3 convolutions marked for Winograd";
  let description = [{
    Each `linalg.conv_2d_nchw_fchw`, and each blocked convolution (the
    `linalg.generic` tagged `kiln.blocked_conv` that a graph.blocked_conv
    lowers to), with `kiln.conv_algorithm = "winograd-Mx3"` (M = 2, 4 or 6)
    becomes Winograd's F(M x M, 3 x 3): the
    filter transform U = G g G^T is computed at compile time from the
    constant weights; the input is padded to whole tiles and transformed
    (V = B^T d B, two `linalg.generic` contractions over rows and then
    columns); the (M+2)^2 products M[b] = U[b] V[b] are one batched
    contraction, which `kiln-cpu-tile-and-vectorize` register-blocks; the
    output transform A^T M A writes the output's M x M blocks, accumulating
    into the convolution's init (its bias). The matrices come from the
    interpolation points 0, 1, -1, 2, -2, 1/2, -1/2 by the Toom-Cook
    construction (`codegen/CPU/Winograd.h`). In the blocked layout the
    channel blocks stay innermost: the products are contractions
    `M[b, ko, p, o] = sum V[b, cb, p, i] * U[b, ko, cb, i, o]` whose vectors
    run along the output block and whose rows are the tiles, and the output
    transform writes the blocked output. There each transform is one
    elementwise `linalg.generic` over the channel block and the tiles that
    reads a tile's values (one operand each) and writes its transformed
    values (one result each, a slice of the transformed tensor), with the
    matrices' constants folded into its arithmetic. A marked convolution
    that is not 3x3, stride 1, undilated f32 with constant weights is an
    error.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::tensor::TensorDialect"];
}

def CodegenCopyRepeatedResults : Pass<"kiln-codegen-copy-repeated-results", "mlir::func::FuncOp"> {
  let summary = "Gives every function result a value of its own";
  let description = [{
    Function results become caller-provided output buffers, and the buffer
    a result was computed in is replaced by its output buffer. A value
    returned twice (two ONNX outputs that CSE found equal, or two casts that
    lower to the same bits) would need two such replacements of one buffer:
    every repeated occurrence is returned as a copy instead, which
    bufferization writes straight into its own output buffer.

    Before:
    ```mlir
    return %0, %0 : tensor<4xf32>, tensor<4xf32>
    ```
    After:
    ```mlir
    %1 = bufferization.alloc_tensor() copy(%0) : tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

def CodegenDuplicateDestinations : Pass<"kiln-codegen-duplicate-destinations", "mlir::func::FuncOp"> {
  let summary = "Gives every writer an empty tensor or fill of its own";
  let description = [{
    CSE merges equal `tensor.empty` ops and equal fills of them (the zeros
    two Winograd stages accumulate into, the zero-padded inputs of two
    layers of one shape), so that two ops write into one tensor. One-Shot
    Bufferize gives the buffer to one of them and copies it, whole and on
    one thread, for the other. This pass, run just before bufferization,
    makes a `tensor.empty`, a `linalg.fill` of one, or an `scf.forall` that
    only fills slices of empty tensors again for each further use, just
    before the user. And where a value written in place into a slice of a
    tensor and inserted back (a padded interior) is read again after the
    insertion (canonicalization folds a depthwise convolution's centre
    window to it), those reads take the slice of the inserted tensor, which
    bufferization would otherwise copy the value out of.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.generic ... outs(%z : tensor<16xf32>)
    %b = linalg.generic ... outs(%z : tensor<16xf32>)
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %a = linalg.generic ... outs(%z : tensor<16xf32>)
    %e2 = tensor.empty() : tensor<16xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16xf32>) -> tensor<16xf32>
    %b = linalg.generic ... outs(%z2 : tensor<16xf32>)
    ```
  }];
}

def CodegenFlattenGlobals : Pass<"kiln-codegen-flatten-globals", "mlir::ModuleOp"> {
  let summary = "Makes constant globals one-dimensional";
  let description = [{
    Every `memref.global` with an initial value and a static N-D shape
    (N >= 2) becomes a 1-D global of the same elements, and each
    `memref.get_global` of it a `memref.expand_shape` view of the old shape.
    In LLVM IR a multi-dimensional constant is an array of arrays, one
    uniqued constant per innermost row (millions for the 1x1 filters of a
    ResNet-50, which dominated its compile time); a 1-D one is a single
    `ConstantDataArray`.

    Before:
    ```mlir
    memref.global "private" constant @w : memref<64x32x1x1xf32> = dense<...>
    %w = memref.get_global @w : memref<64x32x1x1xf32>
    ```
    After:
    ```mlir
    memref.global "private" constant @w : memref<2048xf32> = dense<...>
    %0 = memref.get_global @w : memref<2048xf32>
    %w = memref.expand_shape %0 [[0, 1, 2, 3]] output_shape [64, 32, 1, 1]
           : memref<2048xf32> into memref<64x32x1x1xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def CodegenFuseElementwise : Pass<"kiln-codegen-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuses chains of elementwise linalg ops into one loop nest";
  let description = [{
    Fuses an elementwise producer into its consumer when the consumer is
    elementwise too (all loops parallel), with upstream's elementwise fusion
    patterns: a chain such as bias add, Gelu and residual add becomes one
    `linalg.generic`, so each element makes one trip through memory.

    A producer is never fused into a consumer that has reduction loops (a
    matmul, a convolution, a reduction): the consumer reads each produced
    element many times, and fusing would recompute it at every read (an Erf
    computed K times per element of a matmul's input). Nor is a producer
    that other ops read too, unless it is a broadcast (it reads only smaller
    tensors): its value would be computed twice, once for each reader.

    Before:
    ```mlir
    %0 = linalg.generic {...["parallel"]} ins(%x) { math.erf }
    %1 = linalg.generic {...["parallel"]} ins(%0, %y) { arith.addf }
    ```
    After:
    ```mlir
    %1 = linalg.generic {...["parallel"]} ins(%x, %y) { math.erf; arith.addf }
    ```

    With `broadcasts=false`, broadcasts are not fused at all: run after
    `kiln-codegen-conv-to-winograd`, this fuses a Winograd layer's bias sum with
    its epilogue but leaves the bias's broadcast a loop of its own, since
    with the broadcast read inside, LLVM vectorized the sum across the
    strided columns (gathers and scatters, 6x slower) instead of along the
    channel block.

    First, a tensor that a packed integer product converts to bytes
    (`kiln.to_bytes`: integers in [low, low + 255], so the bytes hold it
    exactly) and that other generics read in f32 (a quantised residual
    block's output, read by the next convolution and the next residual
    sum) is read as those bytes by all of them, each converting in its
    body (`uitofp` + low): the tensor keeps one reader, and its producer
    fuses with the conversion and writes bytes only.
  }];
  let options = [
    Option<"broadcasts", "broadcasts", "bool", /*default=*/"true",
           "whether broadcasts (producers that read only smaller tensors) are fused">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CodegenLowerCopies : Pass<"kiln-codegen-lower-copies", "mlir::func::FuncOp"> {
  let summary = "Rewrites memref.copy as linalg.copy";
  let description = [{
    Bufferization copies buffers with `memref.copy`, whose LLVM lowering
    calls a support library (`memrefCopy`) for any copy that is not between
    two contiguous buffers. A compiled model links no such library, so every
    copy becomes a `linalg.copy` here and then plain loops, which LLVM turns
    into `memcpy` where the memory is contiguous.

    Before:
    ```mlir
    memref.copy %a, %b : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32>
    ```
    After:
    ```mlir
    linalg.copy ins(%a : memref<4x4xf32, strided<[8, 1]>>) outs(%b : memref<4x4xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CodegenLowerIndexChecks : Pass<"kiln-codegen-lower-index-checks", "mlir::ModuleOp"> {
  let summary = "Makes each run-time index check record a failure for the model ABI";
  let description = [{
    Numbers the module's `kiln.check_index` ops in order and replaces check
    `k` by code that, when an index lies outside its range and no check of
    this run failed before, writes `k + 1` and the offending index into
    `@kiln.run_error`, a thread-local `!llvm.array<2 x i64>` that
    `kiln_abi_run` clears before the run and reads after it (it is
    thread-local because handles of one model share its globals, while a
    model's top-level code runs on the thread that called it). The module
    gets `kiln.index_checks`, the checks' sources and ranges in the same
    order, for the descriptor. A check inside a parallel loop is an error:
    it would run on another thread.

    With `slot=argument` (the GPU, whose host code cannot read what its
    kernels compute) the function that holds the checks takes one more
    argument, a `memref<2xi64>` appended after the others: the run's
    `kiln_abi_run_error` in device memory, which the runtime sets to
    `{-1, 0}` before the run and reads after it. A failed check whose first
    word is still negative writes its number `k` and the index there; the
    module gets `kiln.run_error_argument` too. The check's ops stay at the
    top level, where kiln-gpu-map-to-launch runs them in a one-thread kernel
    after the kernel that computes the indices' range.

    Before:
    ```mlir
    kiln.check_index %min, %max in [-10, 9] {source = "emb (Gather)", what = "index"}
    ```
    After:
    ```mlir
    %low = arith.cmpi slt, %min, %c-10_i64 : i64
    %high = arith.cmpi sgt, %max, %c9_i64 : i64
    %bad = arith.ori %low, %high : i1
    scf.if %bad {
      %slot = llvm.mlir.addressof @kiln.run_error : !llvm.ptr
      %error = llvm.intr.threadlocal.address %slot : !llvm.ptr
      ...  // the check's number and the index, unless one is there
    }
    ```
  }];
  let options = [
    Option<"slot", "slot", "std::string", /*default=*/"\"thread-local\"",
           "where a failed check is recorded: thread-local (a thread-local "
           "global, the CPU) or argument (an argument of the entry, the GPU)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def CodegenOutlineKernels : Pass<"kiln-codegen-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Moves each top-level loop nest of a function into a function "
                "of its own";
  let description = [{
    After lowering to loops, a model is one function holding a loop nest per
    layer; LLVM's optimizer is superlinear in the size of a function, so a
    ResNet-50 spent minutes there. This pass moves every top-level loop nest
    (and OpenMP region) of each function into a private function called in
    its place, one kernel per op, which LLVM optimizes one at a time (and a
    profiler can name).

    Each kernel carries `kiln.kernel_flops` (floating-point operations of one
    call, counted from its loops' constant trip counts: one per element of an
    arithmetic or math result, two for a fused multiply-add; 0 when a trip
    count is unknown) and `kiln.kernel_source` (the ONNX nodes named in its
    location), which become the model's kernel table for `kiln-run
    --profile`.

    A kernel takes the buffers and scalars it uses as arguments; views
    (subviews, reshapes), constants and global lookups it uses are recreated
    inside it, so that every argument is a contiguous buffer or a scalar, as
    the bare-pointer calling convention wants.

    Before:
    ```mlir
    func.func @main(%a: memref<64xf32>) {
      scf.for %i = %c0 to %c64 step %c1 { ... %a ... }
    }
    ```
    After:
    ```mlir
    func.func @main(%a: memref<64xf32>) {
      call @main_kernel0(%a) : (memref<64xf32>) -> ()
    }
    func.func private @main_kernel0(%a: memref<64xf32>)
        attributes {kiln.kernel_flops = 64 : i64, kiln.kernel_source = "relu (Relu)"} {
      %c0 = arith.constant 0 : index
      ...
      scf.for %i = %c0 to %c64 step %c1 { ... %a ... }
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "::kiln::KilnDialect"];
}

def CodegenFillBorders : Pass<"kiln-codegen-fill-borders", "mlir::func::FuncOp"> {
  let summary = "Fills only the border of a padded tensor whose interior its source overwrites";
  let description = [{
    `kiln-codegen-pad-in-place` fills a padded tensor with the padding value
    and then writes the source into its interior, and marks the fill with
    the interior (`kiln.pad_interior`). The interior's fill is written
    again before anything reads it: a whole pass over the tensor for
    nothing (MobileNetV2's padded 96-channel 112x112 input of its first
    stride-2 depthwise convolution: 0.19 ms, 3% of the model). Run just
    before bufferization, after the passes that recognise a padded tensor
    by its fill, this pass fills the border alone, as slabs inserted into
    the empty tensor, where the fill's only users are the interior's slice
    (the writer's destination) and its insertion; another fill keeps its
    whole fill. Each marked fill loses its mark.

    Before:
    ```mlir
    %f = linalg.fill {kiln.pad_interior = array<i64: 1, 1, 2, 2>} ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %i = tensor.extract_slice %f[1, 1] [2, 2] [1, 1]
    ```
    After: the slabs `[0, 0] [1, 4]`, `[3, 0] [1, 4]`, `[1, 0] [2, 1]` and
    `[1, 3] [2, 1]`, each a `linalg.fill` of a slice of `%e` inserted back.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CodegenPadInPlace : Pass<"kiln-codegen-pad-in-place", "mlir::func::FuncOp"> {
  let summary = "Writes padded tensors in place: a fill, and the source's producer writing into the interior";
  let description = [{
    Rewrites a `tensor.pad` with static sizes and a constant padding value
    (a convolution's or a pool's padded input) as a `linalg.fill` of the
    padded tensor and a `tensor.insert_slice` of the source into it. When
    the source is the result of a linalg op with parallel loops whose
    payload does not read its output (an epilogue, a pool, an elementwise
    op), that op's output becomes the interior slice of the filled tensor,
    so that bufferization writes it in place and no copy is left; other
    readers of the source read it there. The fill carries the interior
    (`kiln.pad_interior`), which `kiln-codegen-fill-borders` leaves unfilled.
    Bufferized as it was, a pad was a sequential fill that LLVM stored
    with scatters and a copy. A pad of a pad by the same constant (a
    Winograd convolution's input, padded by the convolution and then to
    whole tiles) becomes one pad first, so that the inner one is not a
    buffer of its own copied into the outer.

    Before:
    ```mlir
    %r = linalg.generic ... outs(%e : tensor<1x4x56x56x16xf32>)
    %p = tensor.pad %r low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] { tensor.yield %zero }
    ```
    After:
    ```mlir
    %f = linalg.fill ins(%zero) outs(%empty : tensor<1x4x58x58x16xf32>)
    %i = tensor.extract_slice %f[0, 0, 1, 1, 0] [1, 4, 56, 56, 16] [1, 1, 1, 1, 1]
    %r = linalg.generic ... outs(%i : tensor<1x4x56x56x16xf32>)
    %p = tensor.insert_slice %r into %f[0, 0, 1, 1, 0] [1, 4, 56, 56, 16] [1, 1, 1, 1, 1]
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def CodegenPlanMemory : Pass<"kiln-codegen-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Places the function's buffers in one workspace, reused by "
                "liveness";
  let description = [{
    Static memory planning: every `memref.alloc` with a static shape at the
    top level of the function becomes a `memref.view` into one workspace
    buffer, a new last argument of the function (`memref<Nxi8>`), and
    buffers whose live ranges do not overlap share bytes. The workspace size
    is recorded on the function as `kiln.workspace_size`; the runtime
    allocates it once per model, so a run allocates nothing.

    Live ranges are measured in the function's top-level op order: a buffer
    lives from its allocation to the last op that uses it or a view of it
    (a use inside a loop counts at the loop). Offsets are chosen greedily,
    largest buffer first, at the lowest 64-byte-aligned offset that overlaps
    no live buffer. Allocations inside loops and of dynamic size keep
    `memref.alloc`. Run it before the buffer deallocation pipeline.

    Copies go where they can: a buffer whose contents are copied whole, as
    its last use, into a static contiguous slice of another planned buffer
    is placed in that slice and the copy dropped; one copied whole, through
    `memref.expand_shape` / `memref.collapse_shape` only, into a function
    argument that nothing else uses (a model output) becomes a
    `memref.reinterpret_cast` of that argument, and the copy is dropped.

    Before:
    ```mlir
    func.func @f(%x: memref<4xf32>) {
      %a = memref.alloc() : memref<1024xf32>
      ...
    }
    ```
    After:
    ```mlir
    func.func @f(%x: memref<4xf32>, %ws: memref<4096xi8>) attributes {kiln.workspace_size = 4096 : i64} {
      %c0 = arith.constant 0 : index
      %a = memref.view %ws[%c0][] : memref<4096xi8> to memref<1024xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // KILN_CODEGEN_COMMON_PASSES
