//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//

#ifndef KILN_CODEGEN_CPU_PASSES
#define KILN_CODEGEN_CPU_PASSES

include "mlir/Pass/PassBase.td"

def CPUCopyRepeatedResults : Pass<"kiln-cpu-copy-repeated-results", "mlir::func::FuncOp"> {
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

def CPUFuseElementwise : Pass<"kiln-cpu-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuses chains of elementwise linalg ops into one loop nest";
  let description = [{
    Fuses an elementwise producer into its consumer when the consumer is
    elementwise too (all loops parallel), with upstream's elementwise fusion
    patterns: a chain such as bias add, Gelu and residual add becomes one
    `linalg.generic`, so each element makes one trip through memory.

    A producer is never fused into a consumer that has reduction loops (a
    matmul, a convolution, a reduction): the consumer reads each produced
    element many times, and fusing would recompute it at every read (an Erf
    computed K times per element of a matmul's input).

    Before:
    ```mlir
    %0 = linalg.generic {...["parallel"]} ins(%x) { math.erf }
    %1 = linalg.generic {...["parallel"]} ins(%0, %y) { arith.addf }
    ```
    After:
    ```mlir
    %1 = linalg.generic {...["parallel"]} ins(%x, %y) { math.erf; arith.addf }
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CPULowerCopies : Pass<"kiln-cpu-lower-copies", "mlir::func::FuncOp"> {
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

def CPUOutlineKernels : Pass<"kiln-cpu-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Moves each top-level loop nest of a function into a function "
                "of its own";
  let description = [{
    After lowering to loops, a model is one function holding a loop nest per
    layer; LLVM's optimizer is superlinear in the size of a function, so a
    ResNet-50 spent minutes there. This pass moves every top-level loop nest
    (and OpenMP region) of each function into a private function called in
    its place, one kernel per op, which LLVM optimizes one at a time (and a
    profiler can name).

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
    func.func private @main_kernel0(%a: memref<64xf32>) {
      %c0 = arith.constant 0 : index
      ...
      scf.for %i = %c0 to %c64 step %c1 { ... %a ... }
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def CPUPlanMemory : Pass<"kiln-cpu-plan-memory", "mlir::func::FuncOp"> {
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
    stride and LLVM's loop vectorizer turns it into vector FMAs. Ops with no
    reduction, or whose output's last dimension is not contiguous in any
    input (a reduction over the last axis), keep their order.

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
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CPUConvToIm2Col : Pass<"kiln-cpu-conv-to-im2col", "mlir::func::FuncOp"> {
  let summary = "Rewrites 2-D convolutions as an im2col copy and a contraction";
  let description = [{
    Turns each `linalg.conv_2d_nchw_fchw` on tensors into an explicit im2col
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
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
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

    Extending it: the register block (`rows`, and the two vectors per row) is
    sized for 32 vector registers (AVX-512, NEON); a target with 16 (AVX2)
    wants fewer rows. Packing the operands into tile-contiguous buffers is the
    next step for large reductions.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "fp32 elements in one vector register of the target">,
    Option<"rows", "rows", "int64_t", /*default=*/"8",
           "output rows in a register block">,
    Option<"parallel", "parallel", "bool", /*default=*/"false",
           "make the loop over output tiles an scf.forall">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES
