//===- GraphReductionOps.td - Reductions, softmax and scans -*- tablegen -*-===//
//
// ReduceSum and its nine kin, Softmax, LogSoftmax, Hardmax, ArgMax, ArgMin,
// CumSum, TopK, and the selections whose sizes depend on the data (NonZero,
// Unique, NonMaxSuppression).
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
    : Graph_InferOp<mnemonic, [Graph_OwnSampleRule]> {
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

//===----------------------------------------------------------------------===//
// Ops whose result sizes depend on the data: NonZero, Unique,
// NonMaxSuppression. Each result has the static size of the most it can
// hold, and `count` (a tensor<i64>) says how many entries of it are the
// op's result; entries from `count` on are zero. The importer lets such a
// result become only a graph output, whose size the model ABI returns
// after the run (a KILN_ABI_SYMBOL_RESULT symbol).
//===----------------------------------------------------------------------===//

def Graph_NonZeroOp : Graph_InferOp<"nonzero"> {
  let summary = "positions of the nonzero elements (ONNX NonZero), padded";
  let description = [{
    ONNX `NonZero`: column `j < count` of `indices` holds the position (one
    row per dimension of `input`) of the `j`-th element, in row-major order,
    that is not zero. `indices` has one column per element of `input`, the
    most there can be.

    ```mlir
    %idx, %n = graph.nonzero %x
         : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_I64Tensor:$indices, Graph_I64Tensor:$count);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_UniqueOp : Graph_InferOp<"unique"> {
  let summary = "the distinct slices along an axis (ONNX Unique), padded";
  let description = [{
    ONNX `Unique` along `axis` (the importer flattens the input when the
    node has no axis): the first `count` slices of `values` along `axis`
    are the distinct slices of `input`, in ascending (lexicographic) order
    with `sorted`, else in order of first occurrence; `indices[j]` is where
    slice `j` first occurs in `input` and `counts[j]` how often; for each
    slice `i` of `input`, `inverse[i]` is its position in `values`. Floats
    compare as numbers (`-0.0` equals `0.0`) and NaNs equal each other,
    after every number. `values`, `indices` and `counts` have room for every
    slice of `input`.

    ```mlir
    %y, %first, %inverse, %counts, %k = graph.unique %x
           {axis = 0 : i64, sorted = true}
         : (tensor<6xf32>) -> (tensor<6xf32>, tensor<6xi64>, tensor<6xi64>,
                               tensor<6xi64>, tensor<i64>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                   BoolAttr:$sorted);
  let results = (outs Graph_Tensor:$values, Graph_I64Tensor:$indices,
                  Graph_I64Tensor:$inverse, Graph_I64Tensor:$counts,
                  Graph_I64Tensor:$count);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_NonMaxSuppressionOp : Graph_InferOp<"non_max_suppression"> {
  let summary = "greedy box selection by score and overlap (ONNX "
                "NonMaxSuppression), padded";
  let description = [{
    ONNX `NonMaxSuppression` on `boxes` (batch x boxes x 4) and `scores`
    (batch x classes x boxes): for each batch and class in turn, the boxes
    whose score is above `score_threshold` (when given) are taken by
    descending score (the lower index first among equal scores), and a box
    is kept unless its intersection over union with a box already kept for
    the class is above `iou_threshold`, until `max_boxes` (a run-time
    scalar, negative counting as 0) are kept. Row `j < count` of `selected`
    is the `j`-th kept box as (batch, class, box index). With
    `center_point_box` a box is (x center, y center, width, height), else
    two opposite corners (y1, x1, y2, x2) in either order. `bound` is the
    most boxes kept per class that `selected` has room for (the boxes, or
    fewer where `max_boxes` is a constant): `selected` has batch x classes
    x `bound` rows.

    ```mlir
    %sel, %n = graph.non_max_suppression %boxes, %scores, %max, %iou, %thr
           {bound = 3 : i64, center_point_box = false}
         : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<i64>, tensor<f32>,
            tensor<f32>) -> (tensor<3x3xi64>, tensor<i64>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$boxes, Graph_FloatTensor:$scores,
                   Graph_I64Tensor:$max_boxes,
                   Graph_FloatTensor:$iou_threshold,
                   Optional<Graph_FloatTensor>:$score_threshold,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$bound,
                   BoolAttr:$center_point_box);
  let results = (outs Graph_I64Tensor:$selected, Graph_I64Tensor:$count);
  let assemblyFormat =
      "$boxes `,` $scores `,` $max_boxes `,` $iou_threshold "
      "(`,` $score_threshold^)? attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_GRAPH_REDUCTION_OPS
