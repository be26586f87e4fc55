//===- GraphNNOps.td - Convolution, matmul and friends -----*- tablegen -*-===//

#ifndef KILN_GRAPH_NN_OPS
#define KILN_GRAPH_NN_OPS

include "dialects/Graph/GraphBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Graph_ConvOp : Graph_InferOp<"conv", [Graph_OwnSampleRule]> {
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

def Graph_MatMulOp : Graph_InferOp<"matmul", [Graph_OwnSampleRule]> {
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

def Graph_EinsumOp : Graph_InferOp<"einsum"> {
  let summary = "Einstein summation (ONNX Einsum)";
  let description = [{
    ONNX `Einsum` with its equation made explicit by the importer: one term
    of letters per operand (one letter per dimension), `->`, the output's
    term; an ellipsis is spelled out in letters of its own. Each output
    element is the sum, over the letters absent from the output, of the
    product of the operands' elements. A letter names one size; a dimension
    of size 1 broadcasts to it. A letter repeated within a term takes a
    diagonal.

    ```mlir
    %y = graph.einsum %a, %b {equation = "bij,bjk->bik"}
         : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, StrAttr:$equation);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The equation's input terms and output term.
    static llvm::FailureOr<std::pair<llvm::SmallVector<std::string>, std::string>>
    parseEquation(llvm::StringRef equation);
  }];
}

def Graph_GemmOp : Graph_InferOp<"gemm", [Graph_OwnSampleRule]> {
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

def Graph_ConvTransposeOp : Graph_InferOp<"conv_transpose"> {
  let summary = "N-dimensional transposed convolution (ONNX ConvTranspose)";
  let description = [{
    ONNX `ConvTranspose` on NC(D)HW data with a C x M/group x k... weight and
    an optional bias of M elements. The importer resolves `auto_pad` and
    `output_shape` into explicit `pads` (all begins, then all ends) and
    `output_padding`, so that each output size is
    `stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pads`.

    ```mlir
    %y = graph.conv_transpose %x, %w {strides = array<i64: 2, 2>,
           pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>,
           output_padding = array<i64: 1, 1>, group = 1}
         : (tensor<1x64x28x28xf32>, tensor<64x32x3x3xf32>)
         -> tensor<1x32x56x56xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weight,
                   Optional<Graph_FloatTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$output_padding,
                   ConfinedAttr<I64Attr, [IntPositive]>:$group);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

def Graph_RecurrentCell : I32EnumAttr<"RecurrentCell",
    "the cell a graph.recurrence runs at each step", [
  I32EnumAttrCase<"RNN", 0, "rnn">,
  I32EnumAttrCase<"GRU", 1, "gru">,
  I32EnumAttrCase<"LSTM", 2, "lstm">
]> {
  let cppNamespace = "::kiln::graph";
}

def Graph_RecurrenceOp : Graph_InferOp<"recurrence",
    [AttrSizedOperandSegments]> {
  let summary = "the recurrence of one direction of ONNX RNN, GRU or LSTM";
  let description = [{
    The part of an ONNX recurrent layer that runs step by step, for one
    direction. The importer computes the input projections of every step
    at once (one GEMM, with the biases that do not depend on the state)
    and passes them as `projected` [seq, batch, gates * hidden], gates in
    ONNX's order (GRU z, r, h; LSTM i, o, f, c). `recurrent` is R
    transposed, [hidden, gates * hidden]. Each step `t` (from the last to
    the first when `reverse`) computes

    - rnn: `H = f(clip(P[t] + H R))`;
    - gru: `z = f(P_z + H R_z)`, `r = f(P_r + H R_r)`,
      `h = g(P_h + (r * H) R_h)`, or with `linear_before_reset`
      `h = g(P_h + r * (H R_h + state_bias))`; `H = (1 - z) * h + z * H`;
    - lstm: `i = f(P_i + H R_i + p_i * C)`, `f = f(P_f + H R_f + p_f * C)`
      (`1 - i` with `input_forget`), `c = g(P_c + H R_c)`,
      `C = f * C + i * c`, `o = f(P_o + H R_o + p_o * C)`, `H = o * h(C)`,

    each gate's argument clipped to [-clip, clip] when `clip` is given.
    `activations` names f (, g, h) with one `activation_alpha` and
    `activation_beta` each (ONNX's defaults resolved). Where `t` is not
    below `lengths[b]`, batch entry `b` keeps its state and its output is 0.
    Results: every step's H as `y` [seq, batch, hidden], the last H and
    (lstm) the last C.

    It lowers to a loop over the steps carrying the state: per step one
    matmul (two for gru without `linear_before_reset`) and the gates'
    elementwise arithmetic.

    ```mlir
    %y, %h, %c = graph.recurrence lstm %p, %rt, %h0 initial_c %c0
        {activations = ["sigmoid", "tanh", "tanh"],
         activation_alpha = array<f32: 0.0, 0.0, 0.0>,
         activation_beta = array<f32: 0.0, 0.0, 0.0>,
         reverse = false, linear_before_reset = false, input_forget = false}
        : (tensor<64x1x1024xf32>, tensor<256x1024xf32>, tensor<1x256xf32>,
           tensor<1x256xf32>)
        -> (tensor<64x1x256xf32>, tensor<1x256xf32>, tensor<1x256xf32>)
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$projected,
                   Graph_FloatTensor:$recurrent,
                   Graph_FloatTensor:$initial_h,
                   Optional<Graph_FloatTensor>:$initial_c,
                   Optional<Graph_FloatTensor>:$state_bias,
                   Optional<Graph_FloatTensor>:$peepholes,
                   Optional<Graph_I64Tensor>:$lengths,
                   Graph_RecurrentCell:$cell,
                   StrArrayAttr:$activations,
                   DenseF32ArrayAttr:$activation_alpha,
                   DenseF32ArrayAttr:$activation_beta,
                   OptionalAttr<F32Attr>:$clip,
                   BoolAttr:$reverse, BoolAttr:$linear_before_reset,
                   BoolAttr:$input_forget);
  let results = (outs Graph_FloatTensor:$y, Graph_FloatTensor:$last_h,
                 Optional<Graph_FloatTensor>:$last_c);
  let assemblyFormat = [{
    $cell $projected `,` $recurrent `,` $initial_h
    (`initial_c` $initial_c^)? (`state_bias` $state_bias^)?
    (`peepholes` $peepholes^)? (`lengths` $lengths^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Gates per step: rnn 1, gru 3, lstm 4.
    static int64_t getNumGates(::kiln::graph::RecurrentCell cell) {
      return cell == ::kiln::graph::RecurrentCell::RNN ? 1
             : cell == ::kiln::graph::RecurrentCell::GRU ? 3 : 4;
    }
    /// Activations per direction: rnn f; gru f, g; lstm f, g, h.
    static int64_t getNumActivations(::kiln::graph::RecurrentCell cell) {
      return getNumGates(cell) == 1 ? 1 : getNumGates(cell) == 3 ? 2 : 3;
    }
    /// The activations a recurrence knows, lower case.
    static ::llvm::ArrayRef<::llvm::StringLiteral> getActivationNames();
  }];
}

//===----------------------------------------------------------------------===//
// Fused ops (made by kiln-graph-fuse-epilogues, never by the importer)
//===----------------------------------------------------------------------===//

def Graph_Activation : I32EnumAttr<"Activation",
    "the activation a fused op applies to its result", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Relu", 1, "relu">,
  I32EnumAttrCase<"Clip", 2, "clip">,
  I32EnumAttrCase<"LeakyRelu", 3, "leaky_relu">,
  I32EnumAttrCase<"Sigmoid", 4, "sigmoid">,
  I32EnumAttrCase<"Tanh", 5, "tanh">,
  I32EnumAttrCase<"HardSigmoid", 6, "hard_sigmoid">,
  I32EnumAttrCase<"HardSwish", 7, "hard_swish">,
  I32EnumAttrCase<"Gelu", 8, "gelu">,
  I32EnumAttrCase<"GeluTanh", 9, "gelu_tanh">
]> {
  let cppNamespace = "::kiln::graph";
}

// What fused_conv and fused_matmul share: an epilogue
//   result = activation(contraction + bias + residual)
// whose activation parameters are `activation_params`: clip [min, max],
// leaky_relu [alpha], hard_sigmoid [alpha, beta], none for the others.
class Graph_FusedOp<string mnemonic> : Graph_InferOp<mnemonic,
    [AttrSizedOperandSegments, Graph_OwnSampleRule]> {
  let hasVerifier = 1;
  code extraFusedDeclaration = [{
    /// The number of `activation_params` that `activation` takes.
    static int64_t getNumActivationParams(::kiln::graph::Activation activation);
  }];
}

def Graph_FusedConvOp : Graph_FusedOp<"fused_conv"> {
  let summary = "convolution with its bias, a residual addition and an "
                "activation, as one op";
  let description = [{
    `activation(conv(input, weight) + bias + residual)`: a `graph.conv` (same
    operands and attributes, same meaning) whose per-channel `bias`, an
    optional `residual` of the result's shape, and the activation are applied
    to each output element as it is computed, before it is stored. Made by
    `kiln-graph-fuse-epilogues`; a later attribute may pick the algorithm or
    the layout.

    ```mlir
    %y = graph.fused_conv %x, %w, %b residual %r activation relu
           {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
            dilations = array<i64: 1, 1>, group = 1}
         : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>,
            tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weight,
                   Optional<Graph_FloatTensor>:$bias,
                   Optional<Graph_FloatTensor>:$residual,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   ConfinedAttr<I64Attr, [IntPositive]>:$group,
                   Graph_Activation:$activation,
                   DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$activation_params);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? (`residual` $residual^)?
    `activation` $activation attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = extraFusedDeclaration # [{
    int64_t getNumSpatialDims() {
      return getInput().getType().getRank() - 2;
    }
  }];
}

def Graph_FusedMatMulOp : Graph_FusedOp<"fused_matmul"> {
  let summary = "matrix product with its bias, a residual addition and an "
                "activation, as one op";
  let description = [{
    `activation(matmul(lhs, rhs) + bias + residual)`: a `graph.matmul` (numpy
    semantics) whose `bias` holds one element per column of the result (its
    last dimension), and whose optional `residual` has the result's shape.
    Made by `kiln-graph-fuse-epilogues`.

    ```mlir
    %y = graph.fused_matmul %a, %w, %b activation gelu
         : (tensor<1x128x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>)
         -> tensor<1x128x3072xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                   Optional<Graph_FloatTensor>:$bias,
                   Optional<Graph_FloatTensor>:$residual,
                   Graph_Activation:$activation,
                   DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$activation_params);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`,` $bias^)? (`residual` $residual^)?
    `activation` $activation attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = extraFusedDeclaration;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

class Graph_PoolOp<string mnemonic, string onnxName,
                   Type tensorType = Graph_FloatTensor>
    : Graph_InferOp<mnemonic, [Graph_OwnSampleRule]> {
  let summary = onnxName # " over sliding windows (ONNX " # onnxName # ")";
  let arguments = (ins tensorType:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   BoolAttr:$ceil_mode);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    int64_t getNumSpatialDims() {
      return getInput().getType().getRank() - 2;
    }
  }];
}

def Graph_MaxPoolOp : Graph_PoolOp<"max_pool", "MaxPool", Graph_Tensor> {
  let description = [{
    ONNX `MaxPool` on NC(D)HW data (its `Indices` output is not supported).
    `auto_pad` is resolved by the importer into explicit `pads` (all begins,
    then all ends); padded elements never win. With `ceil_mode`, the output
    size rounds up, but no window starts in the end padding.

    ```mlir
    %y = graph.max_pool %x {kernel_shape = array<i64: 3, 3>,
           strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, ceil_mode = false}
         : (tensor<1x64x112x112xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
}

def Graph_AveragePoolOp : Graph_PoolOp<"average_pool", "AveragePool"> {
  let description = [{
    ONNX `AveragePool` on NC(D)HW data. Each window is divided by the number
    of its elements inside the input (`count_include_pad = false`) or inside
    the input and the explicit pads (`count_include_pad = true`); the extra
    end elements of `ceil_mode` never count.

    ```mlir
    %y = graph.average_pool %x {kernel_shape = array<i64: 2, 2>,
           strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
           dilations = array<i64: 1, 1>, ceil_mode = false,
           count_include_pad = false}
         : (tensor<1x64x56x56xf32>) -> tensor<1x64x28x28xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   BoolAttr:$ceil_mode, BoolAttr:$count_include_pad);
}

class Graph_GlobalPoolOp<string mnemonic, string onnxName>
    : Graph_InferOp<mnemonic, [Graph_OwnSampleRule]> {
  let summary = onnxName # " over all spatial dimensions (ONNX " # onnxName # ")";
  let description = [{
    ONNX `}] # onnxName # [{`: reduces every spatial dimension of NC(D)HW data
    to size 1.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x : (tensor<1x2048x7x7xf32>) -> tensor<1x2048x1x1xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_GlobalAveragePoolOp
    : Graph_GlobalPoolOp<"global_average_pool", "GlobalAveragePool">;
def Graph_GlobalMaxPoolOp
    : Graph_GlobalPoolOp<"global_max_pool", "GlobalMaxPool">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Graph_BatchNormOp : Graph_InferOp<"batch_norm", [Graph_OwnSampleRule]> {
  let summary = "batch normalization with running statistics (ONNX "
                "BatchNormalization, inference form)";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, where `scale`, `bias`,
    `mean` and `var` hold one element per channel (dimension 1 of the input).

    ```mlir
    %y = graph.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32}
         : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>,
            tensor<64xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                   Graph_FloatTensor:$bias, Graph_FloatTensor:$mean,
                   Graph_FloatTensor:$var, F32Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_InstanceNormOp : Graph_InferOp<"instance_norm", [Graph_OwnSampleRule]> {
  let summary = "instance normalization (ONNX InstanceNormalization)";
  let description = [{
    Normalizes every (batch, channel) slice of NC(D)HW data over its spatial
    dimensions, then scales and shifts it by the channel's `scale` and `bias`.

    ```mlir
    %y = graph.instance_norm %x, %scale, %bias {epsilon = 1.0e-05 : f32}
         : (tensor<1x64x56x56xf32>, tensor<64xf32>, tensor<64xf32>)
         -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                   Graph_FloatTensor:$bias, F32Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Graph_LayerNormOp : Graph_InferOp<"layer_norm", [Graph_OwnSampleRule]> {
  let summary = "layer normalization (ONNX LayerNormalization)";
  let description = [{
    Normalizes the input over dimensions `axis` to the last (`axis` is
    non-negative), then multiplies by `scale` and adds `bias` (optional),
    which broadcast to those dimensions. Statistics are computed in f32 for
    16-bit inputs (ONNX's `stash_type` 1).

    ```mlir
    %y = graph.layer_norm %x, %scale, %bias {axis = 2 : i64, epsilon = 1.0e-05 : f32}
         : (tensor<1x128x768xf32>, tensor<768xf32>, tensor<768xf32>)
         -> tensor<1x128x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                   Optional<Graph_FloatTensor>:$bias,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                   F32Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Graph_LRNOp : Graph_InferOp<"lrn", [Graph_OwnSampleRule]> {
  let summary = "local response normalization across channels (ONNX LRN)";
  let description = [{
    `x / (bias + alpha / size * sum(x^2 over a window of size channels)) ^ beta`;
    the window around channel c spans `[c - (size - 1) / 2, c + size / 2]`.

    ```mlir
    %y = graph.lrn %x {size = 5 : i64, alpha = 1.0e-04 : f32, beta = 0.75 : f32,
           bias = 1.0 : f32} : (tensor<1x96x55x55xf32>) -> tensor<1x96x55x55xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                   ConfinedAttr<I64Attr, [IntPositive]>:$size, F32Attr:$alpha,
                   F32Attr:$beta, F32Attr:$bias);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_GRAPH_NN_OPS
