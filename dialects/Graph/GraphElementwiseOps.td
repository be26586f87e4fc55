//===- GraphElementwiseOps.td - Elementwise ops ------------*- tablegen -*-===//
//
// Ops that compute every element of their result from the elements at the
// same (broadcast) position of their operands. Each lowers to one
// linalg.generic (conversion/GraphToLinalg/ElementwiseToLinalg.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_ELEMENTWISE_OPS
#define KILN_GRAPH_ELEMENTWISE_OPS

include "dialects/Graph/GraphBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Element type families of ONNX's type constraints.
def Graph_BoolTensor : RankedTensorOf<[I1]>;
def Graph_NumberTensor : RankedTensorOf<[Graph_Float, I8, I16, I32, I64, UI8,
                                          UI16, UI32, UI64]>;
def Graph_SignedNumberTensor : RankedTensorOf<[Graph_Float, I8, I16, I32,
                                                I64]>;
def Graph_IntegerTensor : RankedTensorOf<[I8, I16, I32, I64, UI8, UI16, UI32,
                                           UI64]>;

//===----------------------------------------------------------------------===//
// Binary ops with multidirectional (numpy) broadcasting.
//===----------------------------------------------------------------------===//

class Graph_BroadcastBinaryOp<string mnemonic, string onnxName,
                              Type operandType = Graph_Tensor,
                              list<Trait> traits = []>
    : Graph_InferOp<mnemonic, !listconcat(traits, [Graph_SampleWiseOpInterface])> {
  let summary = "elementwise " # onnxName # " with numpy broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{`: the operands broadcast to a common shape
    (multidirectional broadcasting) and have the same element type.

    ```mlir
    %r = graph.}] # mnemonic # [{ %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Graph_AddOp : Graph_BroadcastBinaryOp<"add", "Add", Graph_NumberTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}
def Graph_SubOp : Graph_BroadcastBinaryOp<"sub", "Sub", Graph_NumberTensor> {
  let hasFolder = 1;
}
def Graph_MulOp : Graph_BroadcastBinaryOp<"mul", "Mul", Graph_NumberTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}
def Graph_DivOp : Graph_BroadcastBinaryOp<"div", "Div", Graph_NumberTensor> {
  let hasFolder = 1;
}

// Max and Min propagate NaN. The importer turns ONNX's variadic Max, Min,
// Sum and Mean into chains of these binary ops.
def Graph_MaxOp : Graph_BroadcastBinaryOp<"max", "Max", Graph_NumberTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}
def Graph_MinOp : Graph_BroadcastBinaryOp<"min", "Min", Graph_NumberTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}

def Graph_ModOp : Graph_BroadcastBinaryOp<"mod", "Mod", Graph_NumberTensor> {
  let description = [{
    ONNX `Mod`. With `fmod` the remainder has the sign of the dividend (C
    `fmod`, truncated division); without it, the sign of the divisor (Python
    `%`, floored division, also on floats where a zero remainder takes the
    divisor's sign).

    ```mlir
    %r = graph.mod %a, %b {fmod = false} : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
    ```
  }];
  let arguments = (ins Graph_NumberTensor:$lhs, Graph_NumberTensor:$rhs,
                   BoolAttr:$fmod);
  let hasFolder = 1;
}

def Graph_PReluOp : Graph_BroadcastBinaryOp<"prelu", "PRelu",
                                            Graph_SignedNumberTensor> {
  let description = [{
    ONNX `PRelu`: `x < 0 ? slope * x : x`, the slope (`rhs`) broadcasting
    against the input (`lhs`).

    ```mlir
    %r = graph.prelu %x, %slope : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
    ```
  }];
}

// Shifts by an amount read as unsigned: one of at least the bit width gives
// 0, or the sign fill for a right shift of a signed integer (ONNX BitShift,
// signed from opset 28).
def Graph_ShiftLeftOp : Graph_BroadcastBinaryOp<"shift_left",
    "BitShift (direction LEFT)", Graph_IntegerTensor>;
def Graph_ShiftRightOp : Graph_BroadcastBinaryOp<"shift_right",
    "BitShift (direction RIGHT, arithmetic on signed integers)",
    Graph_IntegerTensor>;

def Graph_AndOp : Graph_BroadcastBinaryOp<"and", "And", Graph_BoolTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}
def Graph_OrOp : Graph_BroadcastBinaryOp<"or", "Or", Graph_BoolTensor,
                                         [Commutative]> {
  let hasFolder = 1;
}
def Graph_XorOp : Graph_BroadcastBinaryOp<"xor", "Xor", Graph_BoolTensor,
                                          [Commutative]> {
  let hasFolder = 1;
}
def Graph_BitwiseAndOp : Graph_BroadcastBinaryOp<"bitwise_and", "BitwiseAnd",
    Graph_IntegerTensor, [Commutative]> {
  let hasFolder = 1;
}
def Graph_BitwiseOrOp : Graph_BroadcastBinaryOp<"bitwise_or", "BitwiseOr",
    Graph_IntegerTensor, [Commutative]> {
  let hasFolder = 1;
}
def Graph_BitwiseXorOp : Graph_BroadcastBinaryOp<"bitwise_xor", "BitwiseXor",
    Graph_IntegerTensor, [Commutative]> {
  let hasFolder = 1;
}

def Graph_PowOp : Graph_InferOp<"pow", [Graph_SampleWiseOpInterface]> {
  let summary = "elementwise power with numpy broadcasting (ONNX Pow)";
  let description = [{
    ONNX `Pow`: `base ^ exponent`, broadcast. The exponent may have another
    element type than the base; the result has the base's (an integer power
    is computed in f64 and rounded toward zero).

    ```mlir
    %r = graph.pow %x, %e : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_NumberTensor:$lhs, Graph_NumberTensor:$rhs);
  let results = (outs Graph_NumberTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Comparisons: broadcast, with a boolean (i1) result.
//===----------------------------------------------------------------------===//

class Graph_CompareOp<string mnemonic, string onnxName,
                      list<Trait> traits = []>
    : Graph_InferOp<mnemonic, !listconcat(traits, [Graph_SampleWiseOpInterface])> {
  let summary = "elementwise " # onnxName # " with numpy broadcasting";
  let description = [{
    ONNX `}] # onnxName # [{`: compares operands of one element type,
    broadcast to a common shape, giving a boolean (i1) tensor. Comparisons
    with NaN are false.

    ```mlir
    %r = graph.}] # mnemonic # [{ %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
    ```
  }];
  let arguments = (ins Graph_Tensor:$lhs, Graph_Tensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Graph_EqualOp : Graph_CompareOp<"equal", "Equal", [Commutative]>;
def Graph_LessOp : Graph_CompareOp<"less", "Less">;
def Graph_LessEqualOp : Graph_CompareOp<"less_equal", "LessOrEqual">;
def Graph_GreaterOp : Graph_CompareOp<"greater", "Greater">;
def Graph_GreaterEqualOp : Graph_CompareOp<"greater_equal", "GreaterOrEqual">;

def Graph_WhereOp : Graph_InferOp<"where", [Graph_SampleWiseOpInterface]> {
  let summary = "elementwise selection with numpy broadcasting (ONNX Where)";
  let description = [{
    ONNX `Where`: `condition ? lhs : rhs`; the three operands broadcast to a
    common shape and the two values have one element type.

    ```mlir
    %r = graph.where %c, %a, %b : (tensor<2x3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Graph_BoolTensor:$condition, Graph_Tensor:$lhs,
                   Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Unary ops.
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, string onnxName,
                    Type operandType = Graph_FloatTensor,
                    list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
                                              Graph_SampleWiseOpInterface])> {
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

// On integers, Relu is max(x, 0) and Abs, Neg and Sign their usual meaning
// (identity, wrap-around negation, 0 or 1 on unsigned integers).
def Graph_ReluOp : Graph_UnaryOp<"relu", "Relu", Graph_SignedNumberTensor> {
  let hasFolder = 1;
}
def Graph_AbsOp : Graph_UnaryOp<"abs", "Abs", Graph_NumberTensor> {
  let hasFolder = 1;
}
def Graph_NegOp : Graph_UnaryOp<"neg", "Neg", Graph_SignedNumberTensor> {
  let hasFolder = 1;
}
def Graph_SignOp : Graph_UnaryOp<"sign", "Sign", Graph_NumberTensor> {
  let hasFolder = 1;
}
def Graph_NotOp : Graph_UnaryOp<"not", "Not", Graph_BoolTensor> {
  let hasFolder = 1;
}
def Graph_BitwiseNotOp : Graph_UnaryOp<"bitwise_not", "BitwiseNot",
                                       Graph_IntegerTensor> {
  let hasFolder = 1;
}

def Graph_ExpOp : Graph_UnaryOp<"exp", "Exp">;
def Graph_LogOp : Graph_UnaryOp<"log", "Log">;
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", "Sqrt">;
def Graph_ReciprocalOp : Graph_UnaryOp<"reciprocal", "Reciprocal">;
def Graph_FloorOp : Graph_UnaryOp<"floor", "Floor"> {
  let hasFolder = 1;
}
def Graph_CeilOp : Graph_UnaryOp<"ceil", "Ceil"> {
  let hasFolder = 1;
}
def Graph_RoundOp : Graph_UnaryOp<"round", "Round (half to even)"> {
  let hasFolder = 1;
}
def Graph_SinOp : Graph_UnaryOp<"sin", "Sin">;
def Graph_CosOp : Graph_UnaryOp<"cos", "Cos">;
def Graph_TanOp : Graph_UnaryOp<"tan", "Tan">;
def Graph_AsinOp : Graph_UnaryOp<"asin", "Asin">;
def Graph_AcosOp : Graph_UnaryOp<"acos", "Acos">;
def Graph_AtanOp : Graph_UnaryOp<"atan", "Atan">;
def Graph_SinhOp : Graph_UnaryOp<"sinh", "Sinh">;
def Graph_CoshOp : Graph_UnaryOp<"cosh", "Cosh">;
def Graph_AsinhOp : Graph_UnaryOp<"asinh", "Asinh">;
def Graph_AcoshOp : Graph_UnaryOp<"acosh", "Acosh">;
def Graph_AtanhOp : Graph_UnaryOp<"atanh", "Atanh">;
def Graph_ErfOp : Graph_UnaryOp<"erf", "Erf">;
def Graph_TanhOp : Graph_UnaryOp<"tanh", "Tanh">;
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", "Sigmoid">;
def Graph_HardSwishOp : Graph_UnaryOp<"hard_swish", "HardSwish">;
def Graph_SoftplusOp : Graph_UnaryOp<"softplus", "Softplus">;
def Graph_SoftsignOp : Graph_UnaryOp<"softsign", "Softsign">;
def Graph_MishOp : Graph_UnaryOp<"mish", "Mish">;

// Activations with parameters: ONNX's defaults are applied by the importer.
class Graph_ParamUnaryOp<string mnemonic, string onnxName, string formula,
                         dag attrs, string exampleAttrs>
    : Graph_UnaryOp<mnemonic, onnxName> {
  let description = [{
    ONNX `}] # onnxName # [{`: }] # formula # [{.

    ```mlir
    %r = graph.}] # mnemonic # [{ %x {}] # exampleAttrs # [{} : tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = !con((ins Graph_FloatTensor:$input), attrs);
}

def Graph_LeakyReluOp : Graph_ParamUnaryOp<"leaky_relu", "LeakyRelu",
    "`x < 0 ? alpha * x : x`", (ins F32Attr:$alpha), "alpha = 0.01 : f32">;
def Graph_EluOp : Graph_ParamUnaryOp<"elu", "Elu",
    "`x < 0 ? alpha * (exp(x) - 1) : x`", (ins F32Attr:$alpha),
    "alpha = 1.0 : f32">;
def Graph_CeluOp : Graph_ParamUnaryOp<"celu", "Celu",
    "`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`", (ins F32Attr:$alpha),
    "alpha = 1.0 : f32">;
def Graph_SeluOp : Graph_ParamUnaryOp<"selu", "Selu",
    "`x > 0 ? gamma * x : gamma * alpha * (exp(x) - 1)`",
    (ins F32Attr:$alpha, F32Attr:$gamma),
    "alpha = 1.67326 : f32, gamma = 1.0507 : f32">;
def Graph_ThresholdedReluOp : Graph_ParamUnaryOp<"thresholded_relu",
    "ThresholdedRelu", "`x > alpha ? x : 0`", (ins F32Attr:$alpha),
    "alpha = 1.0 : f32">;
def Graph_HardSigmoidOp : Graph_ParamUnaryOp<"hard_sigmoid", "HardSigmoid",
    "`max(0, min(1, alpha * x + beta))`", (ins F32Attr:$alpha, F32Attr:$beta),
    "alpha = 0.2 : f32, beta = 0.5 : f32">;
def Graph_GeluOp : Graph_ParamUnaryOp<"gelu", "Gelu",
    "`0.5 * x * (1 + erf(x / sqrt(2)))`, or with `tanh_approximation` "
    "`0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` (ONNX's "
    "`approximate = \"tanh\"`)",
    (ins BoolAttr:$tanh_approximation), "tanh_approximation = false">;

// Float classification, with a boolean result.
class Graph_FloatClassOp<string mnemonic, string onnxName, string doc,
                         dag attrs, string example>
    : Graph_InferOp<mnemonic, [Graph_SampleWiseOpInterface]> {
  let summary = "elementwise " # onnxName;
  let description = [{
    ONNX `}] # onnxName # [{`: }] # doc # [{

    ```mlir
    }] # example # [{
    ```
  }];
  let arguments = !con((ins Graph_FloatTensor:$input), attrs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def Graph_IsNaNOp : Graph_FloatClassOp<"is_nan", "IsNaN",
    "whether each element is NaN.", (ins),
    "%r = graph.is_nan %x : (tensor<4xf32>) -> tensor<4xi1>">;
def Graph_IsInfOp : Graph_FloatClassOp<"is_inf", "IsInf",
    "whether each element is +inf (when `detect_positive`) or -inf (when "
    "`detect_negative`).",
    (ins BoolAttr:$detect_positive, BoolAttr:$detect_negative),
    "%r = graph.is_inf %x {detect_positive = true, detect_negative = false} "
    ": (tensor<4xf32>) -> tensor<4xi1>">;

//===----------------------------------------------------------------------===//
// Conversions.
//===----------------------------------------------------------------------===//

def Graph_CastOp : Graph_Op<"cast", [Pure, SameOperandsAndResultShape,
                                     Graph_SampleWiseOpInterface]> {
  let summary = "element type conversion (ONNX Cast, CastLike)";
  let description = [{
    Converts every element to the result's element type: floats to integers
    round toward zero, anything to bool (i1) tests for non-zero (NaN is
    true), bool to a number gives 0 or 1; integers narrow by truncation
    (also to the 4- and 2-bit integers, and so do floats, through i64).

    Casts from and to the storage-only 8- and 4-bit floats go through f32.
    Into them, values round to nearest even; with `saturate` (the default)
    values beyond the largest finite one, infinities included, become it,
    otherwise they become infinity where the type has one (f8E5M2) or NaN.
    f4E2M1FN, which has neither, always saturates. f8E8M0FNU holds a power
    of two: `round_mode` ("up", "down" or "nearest") picks it from the
    exponent and mantissa of |x|.

    ```mlir
    %r = graph.cast %x : (tensor<2x3xf32>) -> tensor<2x3xi64>
    %q = graph.cast %x {saturate = false} : (tensor<2x3xf32>) -> tensor<2x3xf8E4M3FN>
    ```
  }];
  let arguments = (ins Graph_CastTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$saturate,
                       DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs Graph_CastTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Graph_BitCastOp : Graph_Op<"bitcast", [Pure, SameOperandsAndResultShape,
                                           Graph_SampleWiseOpInterface]> {
  let summary = "reinterpret the bits of each element (ONNX BitCast)";
  let description = [{
    Each element's bit pattern read as the result's element type, of the
    same width (a bool counts as 8 bits, as ONNX stores it: 0 or 1).

    ```mlir
    %r = graph.bitcast %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
    ```
  }];
  let arguments = (ins Graph_CastTensor:$input);
  let results = (outs Graph_CastTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The bits ONNX stores an element of `type` in (a bool takes a byte).
    static unsigned getStorageBits(::mlir::Type type);
  }];
}

#endif // KILN_GRAPH_ELEMENTWISE_OPS
