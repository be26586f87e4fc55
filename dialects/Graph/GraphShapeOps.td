//===- GraphShapeOps.td - Shape and data-movement ops ------*- tablegen -*-===//
//
// Ops that move data without computing on it: reshapes, transposes,
// concatenation, slicing, gathers, padding, tiling and resizing. Operands
// whose values decide the result shape in ONNX (Reshape's shape, Slice's
// starts...) are attributes here: Kiln compiles static shapes, and the
// importer reads them from constant inputs (a run-time one it builds from
// gathers and graph.check_size, its result padded to a bound).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_SHAPE_OPS
#define KILN_GRAPH_SHAPE_OPS

include "dialects/Graph/GraphBase.td"

def Graph_ReshapeOp : Graph_InferOp<"reshape", [Graph_OwnSampleRule]> {
  let summary = "reshape keeping the element order (ONNX Reshape)";
  let description = [{
    ONNX `Reshape` with its shape as an attribute. An entry of `shape` is a
    size, `-1` (at most one: the size that keeps the element count) or `0`:
    the input's size at the same index, unless `allow_zero` is set, where `0`
    is a zero size. The importer also expresses Flatten, Squeeze and
    Unsqueeze as this op.

    ```mlir
    %r = graph.reshape %x {shape = array<i64: 0, -1>, allow_zero = false}
         : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$shape,
                   BoolAttr:$allow_zero);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_TransposeOp : Graph_InferOp<"transpose", [Graph_OwnSampleRule]> {
  let summary = "permutation of the dimensions (ONNX Transpose)";
  let description = [{
    ONNX `Transpose`: result dimension `i` is input dimension `perm[i]`. The
    importer fills in ONNX's default (the reversed dimensions).

    ```mlir
    %r = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>}
         : (tensor<1x3x8x8xf32>) -> tensor<1x8x8x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_ConcatOp : Graph_InferOp<"concat", [Graph_OwnSampleRule]> {
  let summary = "concatenation along one axis (ONNX Concat)";
  let description = [{
    ONNX `Concat` of one or more tensors of the same rank and element type
    that agree on every dimension but `axis` (non-negative).

    ```mlir
    %r = graph.concat %a, %b {axis = 1 : i64}
         : (tensor<1x2xi64>, tensor<1x3xi64>) -> tensor<1x5xi64>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_SplitOp : Graph_InferOp<"split"> {
  let summary = "split into consecutive pieces along one axis (ONNX Split)";
  let description = [{
    ONNX `Split` with the piece sizes resolved by the importer: result `i`
    takes `sizes[i]` entries of `axis`, and the sizes add up to the axis.

    ```mlir
    %a, %b = graph.split %x {axis = 1 : i64, sizes = array<i64: 2, 4>}
             : (tensor<3x6xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>)
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis,
                   DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_SliceOp : Graph_InferOp<"slice", [Graph_OwnSampleRule]> {
  let summary = "strided slice of every dimension (ONNX Slice)";
  let description = [{
    ONNX `Slice` with one entry per dimension and the indices normalised and
    clamped by the importer: dimension `d` reads `starts[d]`,
    `starts[d] + steps[d]`, ... while before `ends[d]`. With a positive step,
    `0 <= start, end <= size`; with a negative one, `0 <= start <= size - 1`
    and `-1 <= end <= size - 1` (`-1` reads down to index 0).

    ```mlir
    %r = graph.slice %x {starts = array<i64: 0, 7>, ends = array<i64: 4, -1>,
           steps = array<i64: 2, -1>} : (tensor<4x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_ShapeOp : Graph_InferOp<"shape"> {
  let summary = "the sizes of a tensor's dimensions (ONNX Shape)";
  let description = [{
    ONNX `Shape` of a tensor with `?` sizes (kiln.dim_symbols): one i64
    per dimension, read at run time. The importer folds a Shape of static
    sizes to a constant, and follows the shape arithmetic of symbolic ones
    (Gather, Concat, Reshape's shape...) to static ops where it can; this op
    is what is left where a run-time size is data.

    ```mlir
    %s = graph.shape %x : (tensor<1x?x64xf32>) -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_IntTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_CheckSizeOp : Graph_InferOp<"check_size"> {
  let summary = "fails the run when a size read at run time is out of range";
  let description = [{
    A size, or a count, that the importer computed from a run-time input
    (a Reshape's shape, an Expand's shape, a Range's bounds...): a 0-D i64
    tensor. When it lies outside `[low, high]` the run fails, naming the
    ONNX node (the op's location) and `what`; the result is the size
    clamped into the range, so that the ops that read it stay within the
    buffers the compiler planned while the run finishes. Lowered to
    `kiln.check_index`.

    ```mlir
    %n = graph.check_size %size in [0, 16] {what = "dimension 1's size"}
         : tensor<i64>
    ```
  }];
  let arguments = (ins Graph_IntTensor:$input, I64Attr:$low, I64Attr:$high,
                       StrAttr:$what);
  let results = (outs Graph_IntTensor:$result);
  let assemblyFormat =
      "$input `in` ` ` `[` $low `,` $high `]` attr-dict `:` type($input)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_PrefixOp : Graph_InferOp<"prefix"> {
  let summary = "the first entries of an axis, as many as another tensor has";
  let description = [{
    The first `size(like, like_axis)` entries of `input` along `axis`: a
    Slice from 0 to a symbolic size (ONNX `Slice` whose end is a `Shape` of
    a tensor with a `?` size, or `Range(0, n, 1)` of such a size, taken from
    a constant range). The size must not exceed the input's: the importer
    checks it against the symbol's bound.

    ```mlir
    %r = graph.prefix %positions, %ids {axis = 1 : i64, like_axis = 1 : i64}
         : (tensor<1x512xi64>, tensor<1x?xi64>) -> tensor<1x?xi64>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, Graph_Tensor:$like, I64Attr:$axis,
                   I64Attr:$like_axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$input `,` $like attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_GatherOp : Graph_InferOp<"gather", [Graph_OwnSampleRule]> {
  let summary = "take entries along one axis (ONNX Gather)";
  let description = [{
    ONNX `Gather`: the result is `data` with dimension `axis` replaced by the
    dimensions of `indices`. A negative index counts from the end of the
    axis; an index out of range is clamped (ONNX leaves it undefined).

    ```mlir
    %r = graph.gather %data, %idx {axis = 0 : i64}
         : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IntTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_GatherElementsOp : Graph_InferOp<"gather_elements"> {
  let summary = "take one entry per index along one axis (ONNX GatherElements)";
  let description = [{
    ONNX `GatherElements`: the result has the shape of `indices`;
    `result[i][j][k] = data[indices[i][j][k]][j][k]` for `axis = 0`, and
    likewise for the other axes. Negative indices count from the end;
    indices out of range are clamped.

    ```mlir
    %r = graph.gather_elements %data, %idx {axis = 1 : i64}
         : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IntTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_GatherNDOp : Graph_InferOp<"gather_nd"> {
  let summary = "take slices by multi-dimensional index (ONNX GatherND)";
  let description = [{
    ONNX `GatherND`: the last dimension of `indices` (of size `k`) indexes
    the first `k` dimensions of `data` after the `batch_dims` leading
    dimensions that both share. Negative indices count from the end;
    indices out of range are clamped.

    ```mlir
    %r = graph.gather_nd %data, %idx {batch_dims = 0 : i64}
         : (tensor<2x2x3xf32>, tensor<4x2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IntTensor:$indices,
                   I64Attr:$batch_dims);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Graph_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how a scatter combines an update with the element it lands on", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Add", 1, "add">,
  I32EnumAttrCase<"Mul", 2, "mul">,
  I32EnumAttrCase<"Max", 3, "max">,
  I32EnumAttrCase<"Min", 4, "min">
]> {
  let cppNamespace = "::kiln::graph";
}

def Graph_ScatterElementsOp : Graph_InferOp<"scatter_elements"> {
  let summary = "write one entry per index along one axis (ONNX ScatterElements)";
  let description = [{
    ONNX `ScatterElements` (and the older `Scatter`): the result is `data`
    with, for each position `p` of `indices` (whose shape `updates` shares),
    `result[p with p[axis] = indices[p]] = updates[p]`, or combined with the
    element there by `reduction` (`add`, `mul`, `max`, `min`). Updates apply
    in order. Negative indices count from the end; an update whose index is
    still out of range (an error in ONNX) is dropped, so no write ever leaves
    the tensor.

    ```mlir
    %r = graph.scatter_elements %data, %idx, %upd reduction add {axis = 1 : i64}
         : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IntTensor:$indices,
                   Graph_Tensor:$updates, I64Attr:$axis,
                   Graph_ScatterReduction:$reduction);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates `reduction` $reduction "
                       "attr-dict `:` functional-type(operands, results)";
}

def Graph_ScatterNDOp : Graph_InferOp<"scatter_nd"> {
  let summary = "write slices by multi-dimensional index (ONNX ScatterND)";
  let description = [{
    ONNX `ScatterND`: the last dimension of `indices` (of size `k`) indexes
    the first `k` dimensions of `data`; `updates` has the shape
    `indices.shape[:-1] + data.shape[k:]`, one slice per index. The result
    is `data` with each slice written, or combined by `reduction`, in order.
    Negative indices count from the end; a slice whose index is still out of
    range is dropped.

    ```mlir
    %r = graph.scatter_nd %data, %idx, %upd reduction none
         : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IntTensor:$indices,
                   Graph_Tensor:$updates, Graph_ScatterReduction:$reduction);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates `reduction` $reduction "
                       "attr-dict `:` functional-type(operands, results)";
}

def Graph_ExpandOp : Graph_InferOp<"expand"> {
  let summary = "broadcast to a shape (ONNX Expand)";
  let description = [{
    ONNX `Expand`: the result shape is the numpy broadcast of the input's
    shape and `shape` (so it may be larger than `shape`).

    ```mlir
    %r = graph.expand %x {shape = array<i64: 2, 1, 6>}
         : (tensor<3x1xf32>) -> tensor<2x3x6xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_TileOp : Graph_InferOp<"tile"> {
  let summary = "repeat the input along every dimension (ONNX Tile)";
  let description = [{
    ONNX `Tile`: dimension `d` of the result is `repeats[d]` copies of the
    input's dimension `d`.

    ```mlir
    %r = graph.tile %x {repeats = array<i64: 2, 3>}
         : (tensor<2x2xf32>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_PadOp : Graph_InferOp<"pad", [Graph_OwnSampleRule]> {
  let summary = "pad or crop every dimension (ONNX Pad)";
  let description = [{
    ONNX `Pad` with `pads` giving, for every dimension, the entries added
    before (all dimensions first) then after; a negative entry removes
    entries. `mode` is `constant` (fill with `value`), `reflect` (mirror
    without repeating the edge) or `edge` (repeat the edge). The importer
    resolves ONNX's `axes` into an entry for every dimension. A pad whose
    entries are all zero (torch exports one before some pools) folds to its
    input.

    ```mlir
    %r = graph.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "reflect",
           value = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x6xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$pads,
                   StrAttr:$mode, F64Attr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_TriluOp : Graph_Op<"trilu", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "keep the upper or lower triangle of matrices (ONNX Trilu)";
  let description = [{
    ONNX `Trilu` on the last two dimensions: with `upper`, keeps the entries
    with `col - row >= k` and zeroes the others; else keeps `col - row <= k`.
    `k` is the attribute, or the run-time scalar `dynamic_k` where given.

    ```mlir
    %r = graph.trilu %x {upper = true, k = 1 : i64} : tensor<2x4x5xf32>
    %s = graph.trilu %x, %k : tensor<i64> {upper = false, k = 0 : i64}
         : tensor<2x4x5xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input,
                   Optional<Graph_I64Tensor>:$dynamic_k, BoolAttr:$upper,
                   I64Attr:$k);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$input (`,` $dynamic_k^ `:` type($dynamic_k))? attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_OneHotOp : Graph_InferOp<"one_hot"> {
  let summary = "one-hot encoding (ONNX OneHot)";
  let description = [{
    ONNX `OneHot`: inserts a dimension of size `depth` at `axis`
    (non-negative, at most the rank of `indices`); an entry is `values[1]`
    where its position on that dimension equals the index (negative indices
    count from `depth`), else `values[0]`.

    ```mlir
    %r = graph.one_hot %idx, %values {depth = 4 : i64, axis = 1 : i64}
         : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Graph_IntTensor:$indices, Graph_Tensor:$values,
                   ConfinedAttr<I64Attr, [IntPositive]>:$depth, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$indices `,` $values attr-dict `:` functional-type(operands, results)";
}

def Graph_ResizeOp : Graph_InferOp<"resize", [Graph_OwnSampleRule]> {
  let summary = "nearest, linear or cubic resampling (ONNX Resize, Upsample)";
  let description = [{
    ONNX `Resize` with the output sizes and scales resolved by the importer:
    result dimension `d` has `sizes[d]` entries, and `scales[d]` maps output
    to input coordinates as `coordinate_transformation_mode` says
    (`half_pixel`, `half_pixel_symmetric`, `pytorch_half_pixel`,
    `align_corners`, `asymmetric`). `mode` is `nearest` (rounded as
    `nearest_mode` says: `round_prefer_floor`, `round_prefer_ceil`, `floor`,
    `ceil`), `linear` or `cubic` (interpolating every dimension whose size
    changes; cubic with Keys' kernel of coefficient `cubic_coeff_a` over four
    neighbours, the edge repeated beyond the input, or, with
    `exclude_outside`, the neighbours outside it weighted 0 and the others
    renormalized). With `antialias`, linear and cubic downsampling widen
    their kernel by 1 / scale (more taps, weights renormalized).
    `tf_crop_and_resize` maps the output onto the region of
    interest `roi` (all starts, then all ends, as fractions of each
    dimension) and gives `extrapolation_value` where it falls outside the
    input.

    ```mlir
    %r = graph.resize %x {sizes = array<i64: 1, 1, 4, 4>,
           scales = array<f64: 1.0, 1.0, 2.0, 2.0>, mode = "nearest",
           coordinate_transformation_mode = "asymmetric",
           nearest_mode = "floor"} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$sizes,
                   DenseF64ArrayAttr:$scales, StrAttr:$mode,
                   StrAttr:$coordinate_transformation_mode,
                   StrAttr:$nearest_mode,
                   DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                   OptionalAttr<DenseF64ArrayAttr>:$roi,
                   DefaultValuedAttr<F64Attr, "0.0">:$extrapolation_value,
                   DefaultValuedAttr<BoolAttr, "false">:$antialias);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_SHAPE_OPS
