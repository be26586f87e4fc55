//===- GraphReductionOps.td - Reductions, softmax and scans -*- tablegen -*-===//
//
// ReduceSum and its nine kin, Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin
// and CumSum.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_REDUCTION_OPS
#define KILN_GRAPH_REDUCTION_OPS

include "dialects/Graph/GraphBase.td"

//===----------------------------------------------------------------------===//
// ReduceSum, ReduceMean, ...
//===----------------------------------------------------------------------===//

// One ONNX ReduceX. `axes` lists the reduced dimensions, non-negative,
// strictly increasing; the importer turns ONNX's "empty axes means all" into
// the full list, so an empty list here means that nothing is reduced (ONNX's
// `noop_with_empty_axes`) and the op applies its per-element part only (the
// square of ReduceSumSquare, the log of ReduceLogSum...).
class Graph_ReduceOp<string mnemonic, string onnxName, string formula,
                     Type elementConstraint = Graph_Tensor>
    : Graph_InferOp<mnemonic> {
  let summary = formula # " over the given axes (ONNX " # onnxName # ")";
  let description = [{
    ONNX `}] # onnxName # [{`: computes `}] # formula # [{` over the
    dimensions listed in `axes` (non-negative, strictly increasing). With
    `keepdims` the reduced dimensions stay with size 1, else they are removed.
    An empty `axes` reduces nothing: the result is the per-element part of the
    formula applied to the input. A reduction over a dimension of size 0
    gives the reduction's identity (0 for a sum, -inf for a maximum...).

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = true}
         : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
    ```
  }];
  let arguments = (ins elementConstraint:$input, DenseI64ArrayAttr:$axes,
                   BoolAttr:$keepdims);
  let results = (outs elementConstraint:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum", "ReduceSum", "sum(x)">;
def Graph_ReduceMeanOp
    : Graph_ReduceOp<"reduce_mean", "ReduceMean", "sum(x) / count">;
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max", "ReduceMax", "max(x)">;
def Graph_ReduceMinOp : Graph_ReduceOp<"reduce_min", "ReduceMin", "min(x)">;
def Graph_ReduceProdOp
    : Graph_ReduceOp<"reduce_prod", "ReduceProd", "product(x)">;
def Graph_ReduceL1Op : Graph_ReduceOp<"reduce_l1", "ReduceL1", "sum(|x|)">;
def Graph_ReduceL2Op
    : Graph_ReduceOp<"reduce_l2", "ReduceL2", "sqrt(sum(x * x))",
                     Graph_FloatTensor>;
def Graph_ReduceLogSumOp
    : Graph_ReduceOp<"reduce_log_sum", "ReduceLogSum", "log(sum(x))",
                     Graph_FloatTensor>;
def Graph_ReduceLogSumExpOp
    : Graph_ReduceOp<"reduce_log_sum_exp", "ReduceLogSumExp",
                     "log(sum(exp(x)))", Graph_FloatTensor>;
def Graph_ReduceSumSquareOp
    : Graph_ReduceOp<"reduce_sum_square", "ReduceSumSquare", "sum(x * x)">;

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax, Hardmax
//===----------------------------------------------------------------------===//

// Normalisations over a group of axes taken jointly. ONNX opset 13 and later
// name one axis; before 13 the input was coerced to 2-D at `axis`, which is
// the same as normalising over every axis from `axis` to the last: the
// importer gives those axes.
class Graph_SoftmaxLikeOp<string mnemonic, string onnxName, string formula,
                          Type tensorType>
    : Graph_Op<mnemonic, [Pure, SameOperandsAndResultType, Graph_OwnSampleRule]> {
  let summary = formula # " over the given axes (ONNX " # onnxName # ")";
  let description = [{
    ONNX `}] # onnxName # [{`: `}] # formula # [{`, where the maximum and
    the sum run over the dimensions listed in `axes` (non-negative, strictly
    increasing, not empty) taken together. Opset 13 and later give one axis;
    older opsets, which flattened the input to 2-D at `axis`, give every axis
    from `axis` to the last.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x {axes = array<i64: 1>} : tensor<2x10xf32>
    ```
  }];
  let arguments = (ins tensorType:$input, DenseI64ArrayAttr:$axes);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_SoftmaxOp
    : Graph_SoftmaxLikeOp<"softmax", "Softmax",
                          "exp(x - max(x)) / sum(exp(x - max(x)))",
                          Graph_FloatTensor>;
def Graph_LogSoftmaxOp
    : Graph_SoftmaxLikeOp<"log_softmax", "LogSoftmax",
                          "x - max(x) - log(sum(exp(x - max(x))))",
                          Graph_FloatTensor>;
def Graph_HardmaxOp
    : Graph_SoftmaxLikeOp<"hardmax", "Hardmax",
                          "1 at the first maximum, 0 elsewhere",
                          Graph_Tensor>;

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

class Graph_ArgReduceOp<string mnemonic, string onnxName, string what>
    : Graph_InferOp<mnemonic> {
  let summary = "index of the " # what # " along an axis (ONNX " #
                onnxName # ")";
  let description = [{
    ONNX `}] # onnxName # [{`: the index (i64) of the }] # what # [{ of
    `input` along `axis` (non-negative). With `keepdims` the axis stays with
    size 1, else it is removed. Among equal values the first index is taken,
    or the last with `select_last_index`.

    ```mlir
    %i = graph.}] # mnemonic # [{ %x {axis = 1 : i64, keepdims = false,
           select_last_index = false} : (tensor<2x10xf32>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                   BoolAttr:$select_last_index);
  let results = (outs Graph_I64Tensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_ArgMaxOp : Graph_ArgReduceOp<"argmax", "ArgMax", "maximum">;
def Graph_ArgMinOp : Graph_ArgReduceOp<"argmin", "ArgMin", "minimum">;

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

def Graph_CumSumOp : Graph_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "cumulative sum along an axis (ONNX CumSum)";
  let description = [{
    ONNX `CumSum` with its `axis` input made an attribute (non-negative): each
    element is the sum of the elements before it along `axis`, itself
    included unless `exclusive`; with `reverse` the sum runs from the end.

    ```mlir
    %y = graph.cumsum %x {axis = 0 : i64, exclusive = false, reverse = false}
         : tensor<5xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                   BoolAttr:$reverse);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_CumProdOp : Graph_Op<"cumprod", [Pure, SameOperandsAndResultType]> {
  let summary = "cumulative product along an axis (ONNX CumProd)";
  let description = [{
    ONNX `CumProd` with its `axis` input made an attribute (non-negative):
    each element is the product of the elements before it along `axis`,
    itself included unless `exclusive`; with `reverse` the product runs
    from the end. An empty product is 1.

    ```mlir
    %y = graph.cumprod %x {axis = 0 : i64, exclusive = false, reverse = false}
         : tensor<5xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                   BoolAttr:$reverse);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

def Graph_TopKOp : Graph_InferOp<"topk"> {
  let summary = "the k largest or smallest elements along an axis (ONNX TopK)";
  let description = [{
    ONNX `TopK` with `k` made an attribute: the `k` largest (or smallest,
    without `largest`) elements of `input` along `axis` (non-negative) and
    their indices (i64). Elements come in order, best first; among equal
    values the lower index comes first. `sorted = false` lets an
    implementation return them in any order (Kiln sorts anyway).

    ```mlir
    %values, %indices = graph.topk %x {axis = 1 : i64, k = 3 : i64,
           largest = true, sorted = true}
         : (tensor<2x10xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$k,
                   BoolAttr:$largest, BoolAttr:$sorted);
  let results = (outs Graph_Tensor:$values, Graph_I64Tensor:$indices);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_GRAPH_REDUCTION_OPS
