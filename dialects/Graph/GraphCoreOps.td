//===- GraphCoreOps.td - Constants and structure -----------*- tablegen -*-===//

#ifndef KILN_GRAPH_CORE_OPS
#define KILN_GRAPH_CORE_OPS

include "dialects/Graph/GraphBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor: a weight, a bias or a folded value";
  let description = [{
    Holds an initializer of the model or a value computed at compile time.
    Large weights are held as `dense_resource` blobs so that the IR stays small
    to print and the data is never copied twice; small ones as `dense`.

    ```mlir
    %w = graph.constant dense<1.0> : tensor<16x3x3x3xf32>
    %b = graph.constant dense_resource<conv1_bias> : tensor<16xf32>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_CORE_OPS
