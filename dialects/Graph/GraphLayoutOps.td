//===- GraphLayoutOps.td - Blocked layouts and their ops ---*- tablegen -*-===//
//
// The blocked channel layout (NCHWc, and NC1HWC0 as the same layout with a
// chosen block) as a tensor encoding, the two ops that convert to and from
// it, and the ops that compute on it. Made by kiln-graph-blocked-layout.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_LAYOUT_OPS
#define KILN_GRAPH_LAYOUT_OPS

include "dialects/Graph/GraphBase.td"
include "dialects/Graph/GraphNNOps.td"

def Graph_BlockedLayoutAttr : AttrDef<Graph_Dialect, "BlockedLayout"> {
  let mnemonic = "blocked";
  let summary = "blocked channel layout NCHWc of a 5-D tensor";
  let description = [{
    The encoding of a tensor `N x C1 x H x W x c` that holds NCHW data with
    its channels split into `C1 = ceil(C / c)` blocks of `c`: element
    `[n, ch, h, w]` of the NCHW tensor is `[n, ch / c, h, w, ch % c]`. The
    channels past C up to `C1 * c` are padding that no op reads as data.
    NC1HWC0 is the same layout with `C0 = c`.

    ```mlir
    tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let parameters = (ins "int64_t":$c);
  let assemblyFormat = "`<` `c` `=` $c `>`";
  let genVerifyDecl = 1;
}

// A 5-D float tensor in the blocked layout (checked by the ops' verifiers).
def Graph_BlockedTensor : RankedTensorOf<[Graph_Float], [HasAnyRankOfPred<[5]>]>;

def Graph_ToBlockedOp : Graph_Op<"to_blocked", [Pure, Graph_OwnSampleRule]> {
  let summary = "NCHW to the blocked layout NCHWc";
  let description = [{
    Splits the channels of a 4-D NCHW tensor into blocks of `c` (the result's
    encoding), padding C with zeros up to a multiple of `c`.
    `to_blocked(from_blocked(y))` folds to `y`.

    ```mlir
    %y = graph.to_blocked %x : tensor<1x3x224x224xf32>
         -> tensor<1x1x224x224x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_BlockedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_FromBlockedOp : Graph_Op<"from_blocked",
                                  [Pure, Graph_OwnSampleRule]> {
  let summary = "the blocked layout NCHWc back to NCHW";
  let description = [{
    Joins the channel blocks of a blocked tensor into a 4-D NCHW tensor of C
    channels (the result's), dropping the padding channels.
    `from_blocked(to_blocked(x))` folds to `x`.

    ```mlir
    %x = graph.from_blocked %y : tensor<1x1x224x224x16xf32, #graph.blocked<c = 16>>
         -> tensor<1x3x224x224xf32>
    ```
  }];
  let arguments = (ins Graph_BlockedTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_BlockedConvOp : Graph_Op<"blocked_conv",
    [Pure, AttrSizedOperandSegments, Graph_OwnSampleRule]> {
  let summary = "2-D convolution with its epilogue in the blocked layout";
  let description = [{
    A `graph.fused_conv` on blocked tensors: the input is
    `N x C1 x H x W x ci` (its block `ci` may differ from the result's `c`:
    an input of 3 channels is one block of 3, not 16 with 13 of padding),
    the weight `K1 x C1 x kh x kw x ci x c` (element `[ko, cb, y, x, i, o]`
    is filter `ko * c + o`, channel `cb * ci + i` of the NCHW weight, zero
    where either lies in the padding), the optional bias `K1 x c` and the
    optional residual and the result `N x K1 x OH x OW x c`. The result is
    `activation(conv(input, weight) + bias + residual)`; `strides`, `pads`
    and `dilations` mean what they mean for `graph.conv`.

    Grouped: where the weight's `C1` is `Cg`, fewer than the input's, the
    convolution has `G = C1 / Cg` groups of whole blocks: filter block `ko`
    belongs to group `g = ko / (K1 / G)` and reads input blocks
    `g * Cg .. g * Cg + Cg - 1`, its weight's `cb` counting from the
    group's first block. (Groups narrower than a block are merged, their
    weights zero between them.)

    ```mlir
    %y = graph.blocked_conv %x, %w, %b activation relu
           {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
            dilations = array<i64: 1, 1>}
         : (tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>,
            tensor<4x4x3x3x16x16xf32>, tensor<4x16xf32>)
         -> tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let arguments = (ins Graph_BlockedTensor:$input, Graph_FloatTensor:$weight,
                   Optional<Graph_FloatTensor>:$bias,
                   Optional<Graph_BlockedTensor>:$residual,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   Graph_Activation:$activation,
                   DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$activation_params);
  let results = (outs Graph_BlockedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`residual` $residual^)?
    `activation` $activation attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BlockedDepthwiseConvOp : Graph_Op<"blocked_depthwise_conv",
    [Pure, AttrSizedOperandSegments, Graph_OwnSampleRule]> {
  let summary = "2-D depthwise convolution with its epilogue in the blocked "
                "layout";
  let description = [{
    A `graph.fused_conv` whose groups are its channels (group = C = K: one
    filter per channel) on blocked tensors: the input and the result are
    `N x C1 x H x W x c` and `N x C1 x OH x OW x c`, the weight
    `C1 x kh x kw x c` (element `[cb, y, x, i]` is the filter of channel
    `cb * c + i`, zero in the padding), the optional bias `C1 x c` and the
    optional residual has the result's type. The result is
    `activation(conv(input, weight) + bias + residual)`; `strides`, `pads`
    and `dilations` mean what they mean for `graph.conv`.

    ```mlir
    %y = graph.blocked_depthwise_conv %x, %w, %b activation clip
           {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
            dilations = array<i64: 1, 1>,
            activation_params = array<f32: 0.0, 6.0>}
         : (tensor<1x9x56x56x16xf32, #graph.blocked<c = 16>>,
            tensor<9x3x3x16xf32>, tensor<9x16xf32>)
         -> tensor<1x9x56x56x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let arguments = (ins Graph_BlockedTensor:$input, Graph_FloatTensor:$weight,
                   Optional<Graph_FloatTensor>:$bias,
                   Optional<Graph_BlockedTensor>:$residual,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   Graph_Activation:$activation,
                   DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$activation_params);
  let results = (outs Graph_BlockedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`residual` $residual^)?
    `activation` $activation attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Graph_BlockedMaxPoolOp : Graph_Op<"blocked_max_pool",
                                     [Pure, Graph_OwnSampleRule]> {
  let summary = "2-D MaxPool in the blocked layout";
  let description = [{
    `graph.max_pool` (same attributes, same meaning) on a blocked tensor
    `N x C1 x H x W x c`, pooling each channel of each block.

    ```mlir
    %y = graph.blocked_max_pool %x {kernel_shape = array<i64: 3, 3>,
           strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, ceil_mode = false}
         : (tensor<1x4x112x112x16xf32, #graph.blocked<c = 16>>)
         -> tensor<1x4x56x56x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let arguments = (ins Graph_BlockedTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   BoolAttr:$ceil_mode);
  let results = (outs Graph_BlockedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Graph_BlockedAveragePoolOp : Graph_Op<"blocked_average_pool",
                                         [Pure, Graph_OwnSampleRule]> {
  let summary = "2-D AveragePool in the blocked layout";
  let description = [{
    `graph.average_pool` (same attributes, same meaning) on a blocked tensor
    `N x C1 x H x W x c`, pooling each channel of each block. A
    GlobalAveragePool is the pool whose window is the whole `H x W`.

    ```mlir
    %y = graph.blocked_average_pool %x {kernel_shape = array<i64: 7, 7>,
           strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
           dilations = array<i64: 1, 1>, ceil_mode = false,
           count_include_pad = false}
         : (tensor<1x80x7x7x16xf32, #graph.blocked<c = 16>>)
         -> tensor<1x80x1x1x16xf32, #graph.blocked<c = 16>>
    ```
  }];
  let arguments = (ins Graph_BlockedTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   BoolAttr:$ceil_mode, BoolAttr:$count_include_pad);
  let results = (outs Graph_BlockedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_GRAPH_LAYOUT_OPS
