//===- Passes.td - Passes of the graph dialect -------------*- tablegen -*-===//

#ifndef KILN_GRAPH_PASSES
#define KILN_GRAPH_PASSES

include "mlir/Pass/PassBase.td"

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
