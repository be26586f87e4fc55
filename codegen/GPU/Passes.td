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

def GPUMapToLaunch : Pass<"kiln-gpu-map-to-launch", "mlir::func::FuncOp"> {
  let summary = "Makes each top-level loop nest a gpu.launch, one thread per "
                "iteration of its parallel loop";
  let description = [{
    The simplest correct mapping, which every op takes (stage 1 of
    docs/gpu.md): a top-level `scf.parallel` becomes a one-dimensional grid of
    blocks of up to 256 threads, one thread per iteration of the loop (its
    reductions run serially in the thread). Thread `i` of the launch takes
    the iteration whose linear index is `i` in row-major order, so that
    neighbouring threads write neighbouring elements of the output (the
    stores coalesce). Any other top-level op that touches memory (a serial
    `scf.for` over time steps, a scatter) becomes a single-thread launch.

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
    once per thread, in forward, reverse or shuffled order, over host memory.
    The kernels of stage 1 have no barriers; a `gpu.barrier`, shared memory
    or a warp operation is refused.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

#endif // KILN_CODEGEN_GPU_PASSES
