//===- Passes.td - CPU code generation passes --------------*- tablegen -*-===//

#ifndef KILN_CODEGEN_CPU_PASSES
#define KILN_CODEGEN_CPU_PASSES

include "mlir/Pass/PassBase.td"

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

#endif // KILN_CODEGEN_CPU_PASSES
