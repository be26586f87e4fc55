//===- Passes.td - NVIDIA GPU code generation passes -------*- tablegen -*-===//

#ifndef KILN_CODEGEN_GPU_PASSES
#define KILN_CODEGEN_GPU_PASSES

include "mlir/Pass/PassBase.td"

def GPUExternalizeConstants : Pass<"kiln-gpu-externalize-constants", "mlir::ModuleOp"> {
  let summary = "Puts every constant global in one segment, read through an "
                "argument of the entry";
  let description = [{
    A kernel that reads a `memref.global` would carry it into its GPU module,
    and the weights would come out of the NVPTX back end as PTX initializers
    (decimal bytes, several times the size of the weights). This pass lays
    every constant global of the module out in one byte segment,
    `@kiln_constants` (each at an offset aligned to 256 bytes), and gives the
    entry function one more argument, the segment as the device holds it:
    each `memref.get_global` becomes a `memref.view` of that argument. The
    runtime uploads the segment once per model and passes its device
    address. The entry gets `kiln.constants_size`, the segment's bytes.

    Before:
    ```mlir
    memref.global "private" constant @w : memref<4xf32> = dense<...>
    func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
      %w = memref.get_global @w : memref<4xf32>
      ...
    }
    ```
    After:
    ```mlir
    memref.global "private" constant @kiln_constants : memref<16xi8> = dense<...>
    func.func @main(%x: memref<4xf32>, %y: memref<4xf32>, %constants: memref<16xi8>)
        attributes {kiln.constants_size = 16 : i64} {
      %c0 = arith.constant 0 : index
      %w = memref.view %constants[%c0][] : memref<16xi8> to memref<4xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"kiln_model_main\"",
           "the function that reads the constants">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def GPUParallelLoopsFirst : Pass<"kiln-gpu-parallel-loops-first", "mlir::func::FuncOp"> {
  let summary = "Orders each linalg op's loops parallel first, reductions "
                "last";
  let description = [{
    `convert-linalg-to-parallel-loops` makes a parallel loop of the outermost
    parallel dimensions only, up to the first reduction; a reduction over an
    outer dimension (Softmax's maximum over channels, a ReduceSum over axis
    0) would leave `kiln-gpu-map-to-launch` no parallel loop, and its whole
    output would be computed by one thread. This pass interchanges such an
    op's loops (generalizing a named op first) so that its parallel
    dimensions come first, in their order, and its reductions after them:
    one thread per output element, each reducing serially, neighbouring
    threads on neighbouring outputs.

    Before: `iterator_types = ["parallel", "reduction", "parallel"]`.
    After: `iterator_types = ["parallel", "parallel", "reduction"]`, the
    indexing maps permuted to match.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def GPUTileContractions : Pass<"kiln-gpu-tile-contractions", "mlir::func::FuncOp"> {
  let summary = "Makes each large f32 contraction a launch tiled through "
                "shared memory";
  let description = [{
    A contraction on buffers (a `linalg` op with a multiply-add body and
    projected-permutation maps: matmul, batch matmul, Gemm, the matmul that
    `kiln-codegen-conv-to-im2col` makes of a convolution) of static shape
    and at least `min-work` multiply-adds becomes a `gpu.launch` of blocks
    of 256 threads (16 x 16), each block computing a tile of the output:

    - 64 x 64 with 4 x 4 accumulators per thread and 16 reduction steps per
      shared tile, or 128 x 128 with 8 x 8 and 8 steps when the output has
      at least one such tile per multiprocessor (`processors`);
    - each operand's tile is loaded into shared memory (a `workgroup`
      attribution, padded by four columns), neighbouring threads reading
      neighbouring elements along the operand's contiguous dimension,
      elements outside the operand read as 0; where that dimension's loop
      is a multiple of 4 long (and the operand's other strides are
      multiples of 4), each thread reads runs of four elements, one
      16-byte `vector.load` when the run's address is aligned (tested at
      run time, once per kernel) and four loads otherwise;
    - each thread's rows and columns of the tile come in runs of four,
      which it reads from shared memory with one `vector.load` each;
    - the next step's tile is loaded into registers while this one is
      computed; two barriers per step;
    - the accumulators are added to the output (which holds its initial
      value, a bias or zero); when the output has fewer tiles than
      processors and the reduction has at least 512 steps, the reduction is
      split across blocks (grid z), which add with `memref.atomic_rmw`.

    With `implicit-gemm` (`kiln-compile --gpu-implicit-gemm`; off by
    default: on an H200 it made ResNet-50's 3x3 layers slower, 35 -> 60
    us, from the index arithmetic of each loaded element; with that
    arithmetic halved, 46 us against 32 through the copy and vector
    loads, whose loads stay scalar here), an operand that a copy fills just before the
    contraction (the im2col matrix of `kiln-codegen-conv-to-im2col`), read
    by nothing after it, is not materialised: the tile loads read each
    element where the copy reads it, through the copy's affine map (an
    implicit GEMM), and the copy goes.
    Where the buffer that copy reads is made just before it for it alone (a
    convolution's padding: a fill with a constant and the input copied into
    its interior, or one elementwise op such as a Pad's), the loads compute
    the element instead (the input, or the constant outside it) and those
    ops go too. Nothing between them and the launch may write what the
    loads read, nor may the kernel.

    Several loops of one role (batch, rows, columns, reduction) are
    linearised. `kiln-gpu-map-to-launch` names the launch and sinks the
    views it uses; `kiln-gpu-emulate` runs it with its barriers.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"262144",
           "smallest number of multiply-adds to tile">,
    Option<"processors", "processors", "int64_t", /*default=*/"132",
           "multiprocessors the launch should fill (an H100 has 132, an "
           "A100 108)">,
    Option<"implicitGemm", "implicit-gemm", "bool", /*default=*/"false",
           "read an im2col copy's operand (and its padding) in place">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect",
                           "mlir::LLVM::LLVMDialect",
                           "::kiln::KilnDialect"];
}

def GPUReduceRows : Pass<"kiln-gpu-reduce-rows", "mlir::func::FuncOp"> {
  let summary = "Makes each reduction of long rows a launch of one block or "
                "one warp per output element";
  let description = [{
    A reduction on buffers (a `linalg` op with reduction loops, outputs
    indexed by its parallel loops, static shapes) whose body combines each
    output's accumulator with one element's value (f32 by `addf`, `mulf`,
    `maximumf`, `minimumf`, `maxnumf` or `minnumf`; an integer of up to 64
    bits by `addi`, `muli`, `andi`, `ori`, `xori` or the signed and
    unsigned `min`/`max`; each accumulator used by its op alone, no
    element's value depending on one) becomes a `gpu.launch` of blocks of
    256 threads, every output reduced by the same threads:

    - with at least `min-length` elements per output and at most `max-rows`
      outputs, one block per output element: thread t combines elements t,
      t + 256, ... (the body's other ops recomputed per element, from the
      op's inputs at their maps), each warp combines its 32 values with a
      butterfly of five `gpu.shuffle xor`, lane 0 of each warp writes the
      warp's value to shared memory, and after one barrier every warp
      combines the eight values the same way;
    - otherwise, with at least `min-warp-length` elements per output, where
      some input holds a row's elements next to one another (its innermost
      dimension is the innermost reduced loop) and none holds them apart,
      one warp per output element, eight to a block: lane l combines
      elements l, l + 32, ..., then the butterfly; a warp past the last
      output reduces nothing but takes part in the shuffles.

    Thread 0 of the group combines the result with the output's initial
    value, or, where a `linalg.fill` just before the op gives the output
    its combiner's identity (only ops without memory effects between), writes
    the result as it is and the fill is dropped: one launch fewer. A 64-bit
    integer crosses lanes as two 32-bit shuffles. A classifier's Softmax
    (its maximum and its sum over the classes), LayerNorm's means, a global
    average pool, a long dot product and the range of a gather's indices
    (its least and greatest, for the run-time index check) take it; a
    reduction across rows (over the channels of an NCHW
    tensor) keeps a thread per output element, whose neighbours read
    neighbouring elements. The order of the additions differs from the
    serial loop's (rounding only). Every thread of the block reaches every
    shuffle, as `kiln-gpu-emulate` requires.
  }];
  let options = [
    Option<"minLength", "min-length", "int64_t", /*default=*/"256",
           "fewest reduced elements per output">,
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"65536",
           "most output elements for a block each (beyond, a warp each)">,
    Option<"minWarpLength", "min-warp-length", "int64_t", /*default=*/"32",
           "fewest reduced elements per output for a warp each">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "::kiln::KilnDialect"];
}

def GPUPromoteAccumulators : Pass<"kiln-gpu-promote-accumulators", "mlir::func::FuncOp"> {
  let summary = "Carries each reduction's accumulator in a register, not "
                "in memory";
  let description = [{
    `convert-linalg-to-parallel-loops` accumulates in the output buffer: each
    iteration of a reduction loop loads the output element and stores it
    back. The NVPTX back end cannot tell that the kernel's pointers do not
    alias, so that round trip stays in the loop. This pass rewrites an
    `scf.for` whose body loads an element and later stores the same element
    (same buffer, same indices, all defined outside the loop), when nothing
    else in the loop may touch those bytes, into a loop that carries the
    value: one load before it, one store after it. Innermost loops go
    first, so a whole nest (a convolution's channel and window loops) is
    promoted. Buffers with different roots (arguments, allocations) are
    taken not to overlap, and so are views of one root at constant byte
    offsets with static shapes whose byte ranges are disjoint (the
    workspace's buffers).

    Before:
    ```mlir
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %y[%i] : memref<8xf32>
      %b = arith.addf %a, %x : f32
      memref.store %b, %y[%i] : memref<8xf32>
    }
    ```
    After:
    ```mlir
    %first = memref.load %y[%i] : memref<8xf32>
    %last = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %first) -> (f32) {
      %b = arith.addf %a, %x : f32
      scf.yield %b : f32
    }
    memref.store %last, %y[%i] : memref<8xf32>
    ```

    With `contract` (the default) every `arith.mulf`, `arith.addf` and
    `arith.subf` also gets the `contract` fast-math flag, so that the NVPTX
    back end fuses a multiply and the add it feeds into one `fma.rn.f32`
    (the CPU's kernels use FMA too).
  }];
  let options = [
    Option<"contract", "contract", "bool", /*default=*/"true",
           "let multiplies and adds fuse into FMA">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GPUMapToLaunch : Pass<"kiln-gpu-map-to-launch", "mlir::func::FuncOp"> {
  let summary = "Makes each top-level loop nest a gpu.launch, one thread per "
                "iteration of its parallel loop";
  let description = [{
    The simplest correct mapping, which every op but the tiled contractions
    takes (docs/gpu.md): a top-level `scf.parallel` becomes a one-dimensional grid of
    blocks of up to 256 threads, one thread per iteration of the loop (its
    reductions run serially in the thread). Thread `i` of the launch takes
    the iteration whose linear index is `i` in row-major order, so that
    neighbouring threads write neighbouring elements of the output (the
    stores coalesce). Any other top-level op that touches memory (a serial
    `scf.for` over time steps, a scatter) starts a serial stretch, which
    becomes a launch of its own. Where the stretch holds parallel loops (a
    recurrence's steps), one block of `block-size` threads runs it: every
    thread runs the loops and branches around them, the arithmetic and the
    reads alike; each parallel loop's iterations are shared out between
    the threads (thread `t` takes every `block-size`-th from `t`); thread 0
    alone runs an op that writes memory outside them; and each parallel
    loop and each such write has a `gpu.barrier` before and after it. A
    stretch that allocates, or holds an op that both writes memory and
    yields a value, or has no parallel loop, runs on one thread.
    A `gpu.launch` already there (`kiln-gpu-tile-contractions`) is named in
    turn and gets its views recomputed inside, like the others.

    Views, constants and index arithmetic that a launch uses are recomputed
    inside it, and so are loads from buffers that nothing in the function
    writes (an input's scalar, hoisted out of a loop): the only values a
    launch takes from the host are whole buffers (the function's arguments),
    and the kernel's parameters are plain device pointers. The host never
    reads device memory. Each launch is named `<function>_kernel<N>`, in
    one GPU module `@kiln_kernels`, and carries `kiln.kernel` (its flops and
    ONNX nodes) for the kernel table.

    Before:
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
      ... memref.store %v, %y[%i, %j] : memref<4x8xf32>
    }
    ```
    After:
    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, ...) threads(%tx, %ty, %tz) in (%sx = %c32, ...)
        module(@kiln_kernels) function(@main_kernel0) {
      %id = ... %bx * 32 + %tx
      scf.if %id < 32 { %i = %id / 8, %j = %id % 8, ... memref.store %v, %y[%i, %j] }
      gpu.terminator
    } {kiln.kernel = #kiln.kernel<flops = 32, source = "relu (Relu)">}
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block (a multiple of 32)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::scf::SCFDialect",
                           "::kiln::KilnDialect"];
}

def GPULowerLaunches : Pass<"kiln-gpu-lower-launches", "mlir::ModuleOp"> {
  let summary = "Outlines each gpu.launch into @kiln_kernels and calls a "
                "host stub in its place";
  let description = [{
    Each `gpu.launch` becomes a `gpu.func` of the GPU module `@kiln_kernels`,
    named by the launch (upstream's `outlineKernelFunc`), and in its place a
    call of a private host function of the same name, declared here with the
    launch geometry (`kiln.gpu_launch`: grid x, y, z, then block x, y, z) and
    the launch's `kiln.kernel` attribute. lib/Target/ModelABI.cpp defines
    that function: it hands the kernel's index and parameters to the
    runtime's launch callback, the `kiln_abi_gpu` that the function that
    launches takes as its new last argument (an `!llvm.ptr`) and passes to
    each stub first. The calls are what the kernel table and the profiler
    hooks see, as a CPU model's kernel calls are.

    Upstream's host lowering (`gpu-to-llvm`) calls `mgpu*` wrappers of a
    library Debian does not ship, loads the module in a global constructor
    (where no error can be reported) and creates a stream per launch; Kiln's
    runtime owns the module, the stream and the memory instead.

    Before:
    ```mlir
    gpu.launch blocks(...) in (%gx = %c1, ...) threads(...) in (%sx = %c32, ...)
        module(@kiln_kernels) function(@main_kernel0) { ... %y ... }
    ```
    After:
    ```mlir
    func.call @main_kernel0(%launcher, %y) : (!llvm.ptr, memref<4x8xf32>) -> ()
    func.func private @main_kernel0(!llvm.ptr, memref<4x8xf32>)
        attributes {kiln.gpu_launch = array<i64: 1, 1, 1, 32, 1, 1>, kiln.kernel = ...}
    gpu.module @kiln_kernels {
      gpu.func @main_kernel0(%y: memref<4x8xf32>) kernel attributes {known_block_size = ...} { ... }
    }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::gpu::GPUDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def GPUEmulate : Pass<"kiln-gpu-emulate", "mlir::ModuleOp"> {
  let summary = "Copies each GPU kernel into a host function that runs one "
                "thread of it";
  let description = [{
    For `kiln-compile --gpu-emulation`: each `gpu.func` of `@kiln_kernels`
    gets a host twin, `<kernel>_emu`, taking the kernel's buffers and then
    the block's and the thread's indices (x, y, z each). Grid and block
    sizes, known from the launch, become constants. The CUDA driver
    emulator (runtime/cuda/EmulatedDriver.cpp) runs a launch by calling it
    once per thread, each thread a coroutine, over host memory.
    Two more arguments follow the indices: the block's shared memory (a
    `memref<49152xi8>`, KILN_ABI_EMULATED_SHARED_SIZE bytes), in which each
    workgroup buffer of the kernel becomes a `memref.view` at its own
    offset, and the address of the emulator's barrier function, which each
    `gpu.barrier` calls: the emulator switches threads there, and resumes
    them in forward, reverse or shuffled order, so that a missing barrier
    shows. Memory spaces are dropped (the host has one). A warp operation
    (`gpu.shuffle`), private memory, or shared buffers beyond 48 KiB (the
    static limit of every GPU Kiln targets) are refused.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // KILN_CODEGEN_GPU_PASSES
