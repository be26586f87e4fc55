//===- Passes.td - Passes of the graph dialect -------------*- tablegen -*-===//

#ifndef KILN_GRAPH_PASSES
#define KILN_GRAPH_PASSES

include "mlir/Pass/PassBase.td"

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

#endif // KILN_GRAPH_PASSES
