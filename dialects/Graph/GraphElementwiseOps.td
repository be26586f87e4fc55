//===- GraphElementwiseOps.td - Elementwise ops ------------*- tablegen -*-===//

#ifndef KILN_GRAPH_ELEMENTWISE_OPS
#define KILN_GRAPH_ELEMENTWISE_OPS

include "dialects/Graph/GraphBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Binary ops with multidirectional (numpy) broadcasting.
//===----------------------------------------------------------------------===//

class Graph_BroadcastBinaryOp<string mnemonic, string onnxName,
                              Type operandType = Graph_Tensor,
                              list<Trait> traits = []>
    : Graph_InferOp<mnemonic, traits> {
  let summary = "elementwise " # onnxName # " with numpy broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{`: the operands broadcast to a common shape
    (multidirectional broadcasting) and have the same element type.

    ```mlir
    %r = graph.}] # mnemonic # [{ %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Graph_AddOp : Graph_BroadcastBinaryOp<"add", "Add", Graph_Tensor,
                                          [Commutative]>;
def Graph_SubOp : Graph_BroadcastBinaryOp<"sub", "Sub">;
def Graph_MulOp : Graph_BroadcastBinaryOp<"mul", "Mul", Graph_Tensor,
                                          [Commutative]>;
def Graph_DivOp : Graph_BroadcastBinaryOp<"div", "Div">;

//===----------------------------------------------------------------------===//
// Unary ops.
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, string onnxName,
                    Type operandType = Graph_FloatTensor,
                    list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType])> {
  let summary = "elementwise " # onnxName;
  let description = [{
    ONNX `}] # onnxName # [{`, applied to every element.

    ```mlir
    %r = graph.}] # mnemonic # [{ %x : tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu">;

#endif // KILN_GRAPH_ELEMENTWISE_OPS
