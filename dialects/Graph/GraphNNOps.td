//===- GraphNNOps.td - Convolution, matmul and friends -----*- tablegen -*-===//

#ifndef KILN_GRAPH_NN_OPS
#define KILN_GRAPH_NN_OPS

include "dialects/Graph/GraphBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Graph_ConvOp : Graph_InferOp<"conv"> {
  let summary = "N-dimensional grouped convolution (ONNX Conv)";
  let description = [{
    ONNX `Conv` on NC(D)HW data with an M x C/group x k... weight and an
    optional bias of M elements. `auto_pad` is resolved by the importer into
    explicit `pads` (all begins, then all ends, as in ONNX); `strides`,
    `dilations` and `pads` always have one entry per spatial dimension (two for
    `pads`).

    ```mlir
    %y = graph.conv %x, %w, %b {strides = array<i64: 2, 2>,
           pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, group = 1}
         : (tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>)
         -> tensor<1x64x112x112xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weight,
                   Optional<Graph_FloatTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of spatial dimensions (2 for a 2-D convolution).
    int64_t getNumSpatialDims() {
      return getInput().getType().getRank() - 2;
    }
  }];
}

def Graph_MatMulOp : Graph_InferOp<"matmul"> {
  let summary = "matrix product with numpy semantics (ONNX MatMul)";
  let description = [{
    ONNX `MatMul`: a 1-D operand is promoted to a matrix (and the added
    dimension removed from the result); leading batch dimensions broadcast.

    ```mlir
    %y = graph.matmul %a, %b : (tensor<8x128x768xf32>, tensor<768x768xf32>)
         -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Graph_GemmOp : Graph_InferOp<"gemm"> {
  let summary = "general matrix multiply (ONNX Gemm)";
  let description = [{
    ONNX `Gemm`: `alpha * op(A) * op(B) + beta * C`, where `op` transposes when
    `trans_a` / `trans_b` is set and C (optional) broadcasts to the M x N
    result.

    ```mlir
    %y = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32,
           trans_a = false, trans_b = true}
         : (tensor<1x2048xf32>, tensor<1000x2048xf32>, tensor<1000xf32>)
         -> tensor<1x1000xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$a, Graph_Tensor:$b,
                   Optional<Graph_Tensor>:$c,
                   F32Attr:$alpha, F32Attr:$beta,
                   BoolAttr:$trans_a, BoolAttr:$trans_b);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_NN_OPS
