//===- Passes.td - Graph to linalg conversion --------------*- tablegen -*-===//

#ifndef KILN_CONVERSION_GRAPHTOLINALG_PASSES
#define KILN_CONVERSION_GRAPHTOLINALG_PASSES

include "mlir/Pass/PassBase.td"

def ConvertGraphToLinalg : Pass<"kiln-convert-graph-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers graph ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Replaces every graph op by tensor-level upstream ops: named linalg ops
    where one fits (convolutions, matmuls, pooling), `linalg.generic` for
    elementwise work with broadcasting folded into its indexing maps, and
    tensor ops for data movement. Unsigned element types become signless
    (the lowering picks the unsigned arith ops where it matters). A graph op
    without a lowering makes the pass fail with an error at that op.

    Before:
    ```mlir
    %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<2x3xf32>
    %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<2x3xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "::kiln::KilnDialect",
  ];
}

#endif // KILN_CONVERSION_GRAPHTOLINALG_PASSES
