//===- KilnDialect.td - The kiln dialect -------------------*- tablegen -*-===//

#ifndef KILN_DIALECT
#define KILN_DIALECT

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "The attributes by which Kiln's passes hand facts to one another";
  let description = [{
    The kiln dialect owns the discardable `kiln.*`
    attributes that a pass writes and a later pass, the driver or the model
    ABI reads (their names are in `KilnAttributes.h`), and verifies each
    wherever it appears: its kind of value, and where it may be. An unknown
    `kiln.*` name is an error, so a misspelt attribute fails at once instead
    of being silently ignored by its reader.

    The contracts between code-generation passes are typed attributes of
    this dialect (a kernel's configuration, a convolution's algorithm, the
    blocked-convolution tag, an outlined kernel's cost and source); the
    facts of the entry function that the model ABI reads (its interface,
    workspace size, batch repeat) are builtin values that the dialect
    checks.

    Its ops: `kiln.dot_i8` and `kiln.dot_bf16`, the steps of an 8-bit
    integer and a bf16 contraction on vectors, which CPU code generation
    makes and lowers to the target's dot-product instructions or to plain
    vector arithmetic; and `kiln.check_index`, which fails a run whose
    indices, read at run time, are out of range.

    ```mlir
    func.func @kiln_model_main(%x: tensor<1x4xf32> {kiln.name = "x"})
        -> (tensor<1x4xf32> {kiln.name = "y"})
        attributes {kiln.batch_split = "whole (...)",
                    kiln.inputs = [{name = "x", passed = true, type = tensor<1x4xf32>} ],
                    kiln.outputs = [{name = "y", passed = true, type = tensor<1x4xf32>} ]}
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Convolution algorithms
//===----------------------------------------------------------------------===//

// The one spelling of the algorithms: the --conv-algorithm option, the
// tuning database's "algorithm" knob and the IR all use these strings.
def Kiln_ConvAlgorithm : I32EnumAttr<"ConvAlgorithm",
    "a convolution algorithm", [
      I32EnumAttrCase<"Im2Col", 0, "im2col">,
      I32EnumAttrCase<"Direct", 1, "direct">,
      I32EnumAttrCase<"Winograd2x3", 2, "winograd-2x3">,
      I32EnumAttrCase<"Winograd4x3", 3, "winograd-4x3">,
      I32EnumAttrCase<"Winograd6x3", 4, "winograd-6x3">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
  // "winograd-4x3" is not a keyword: print it as a string.
  let parameterPrinter =
      "$_printer.printKeywordOrString(stringifyConvAlgorithm($_self))";
}

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kiln_ConvAlgorithmAttr : EnumAttr<Kiln_Dialect, Kiln_ConvAlgorithm,
                                      "conv_algorithm"> {
  let summary = "The algorithm chosen for one convolution";
  let description = [{
    Written on a convolution by `kiln-cpu-select-conv-algorithm` (or by
    hand in a test) and read by the rewrites that implement the algorithm
    (`kiln-codegen-conv-to-winograd`, `kiln-codegen-conv-to-im2col`).

    ```mlir
    kiln.conv_algorithm = #kiln.conv_algorithm<"winograd-4x3">
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Kernel configurations
//===----------------------------------------------------------------------===//

class Kiln_OptionalKnob<string type, string desc>
    : OptionalParameter<"std::optional<" # type # ">", desc>;

def Kiln_KernelConfigAttr : Kiln_Attr<"KernelConfig", "kernel_config"> {
  let summary = "A kernel's configuration from a tuning database";
  let description = [{
    Attached to a kernel by `kiln-codegen-apply-kernel-configs` from the
    best record of a tuning database (docs/tuning.md), and read by the
    passes each knob steers. A knob left out takes the pass's default.

    ```mlir
    kiln.kernel_config = #kiln.kernel_config<algorithm = direct, rows = 4,
                                             parallel = false>
    ```
  }];
  let parameters = (ins
    Kiln_OptionalKnob<"ConvAlgorithm",
        "conv2d: the algorithm (kiln-cpu-select-conv-algorithm)">:$algorithm,
    Kiln_OptionalKnob<"int64_t", "fp32 lanes per vector">:$vector_width,
    Kiln_OptionalKnob<"int64_t", "vectors across N per register block">:$vectors,
    Kiln_OptionalKnob<"int64_t", "rows of M per register block (at most)">:$rows,
    Kiln_OptionalKnob<"int64_t", "K steps per loop iteration">:$reduction_tile,
    Kiln_OptionalKnob<"bool", "whether output tiles run on threads">:$parallel,
    Kiln_OptionalKnob<"int64_t",
        "loop nests: tiles their leading parallel loops are cut into for the "
        "threads (kiln-cpu-parallelize)">:$tiles
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The configuration on `op`, or one with every knob unset (so a pass
    /// that calls this lists the kiln dialect among its dependent dialects).
    static KernelConfigAttr of(::mlir::Operation *op);
  }];
}

//===----------------------------------------------------------------------===//
// Blocked convolutions
//===----------------------------------------------------------------------===//

def Kiln_BlockedConvAttr : Kiln_Attr<"BlockedConv", "blocked_conv"> {
  let summary = "Tags a linalg.generic as a convolution on a blocked layout";
  let description = [{
    Written by the graph-to-linalg conversion on the contraction that a
    convolution on NCHWc becomes, with the strides and dilations of its
    window (the generic's indexing maps use them too). Code generation
    matches the tag and the maps together (`matchBlockedConv`); an untagged
    or mismatched generic is computed as the loop nest it is.

    ```mlir
    kiln.blocked_conv = #kiln.blocked_conv<strides = [2, 2], dilations = [1, 1]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "stride along H and W">:$strides,
    ArrayRefParameter<"int64_t", "dilation along H and W">:$dilations
  );
  let assemblyFormat =
      "`<` `strides` `=` `[` $strides `]` `,` `dilations` `=` `[` $dilations `]` `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Outlined kernels
//===----------------------------------------------------------------------===//

def Kiln_KernelAttr : Kiln_Attr<"Kernel", "kernel"> {
  let summary = "What an outlined kernel computes, for the profile";
  let description = [{
    Written on each function that `kiln-codegen-outline-kernels` outlines:
    its floating-point operations per call and the ONNX nodes it computes
    (names and op types). The driver reads it into the model's kernel
    table (`kiln_kernel_info`).

    ```mlir
    kiln.kernel = #kiln.kernel<flops = 1064, source = "fc (Gemm), act (Relu)">
    ```
  }];
  let parameters = (ins
    "int64_t":$flops,
    StringRefParameter<"the ONNX nodes, \"name (OpType)\" each">:$source
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

def Kiln_DotI8Op : Op<Kiln_Dialect, "dot_i8",
    [Pure, AllTypesMatch<["acc", "lhs", "rhs", "result"]>]> {
  let summary = "Four 8-bit products summed into each 32-bit lane";
  let description = [{
    Each 32-bit lane `l` of the result is `acc[l]` plus the sum over its
    four bytes `j` of `zext(lhs[l].byte[j]) * sext(rhs[l].byte[j])`: an
    unsigned 8-bit operand times a signed one, as x86's `vpdpbusd` computes
    it (without saturation). `kiln-cpu-tile-and-vectorize` makes it for
    integer convolutions; `kiln-cpu-lower-dot-products` lowers it to
    `vpdpbusd` where the target has it and to 32-bit vector arithmetic
    elsewhere.

    ```mlir
    %r = kiln.dot_i8 %acc, %input, %weights : vector<16xi32>
    ```
  }];
  let arguments = (ins VectorOfRankAndType<[1], [I32]>:$acc,
                       VectorOfRankAndType<[1], [I32]>:$lhs,
                       VectorOfRankAndType<[1], [I32]>:$rhs);
  let results = (outs VectorOfRankAndType<[1], [I32]>:$result);
  let assemblyFormat = "$acc `,` $lhs `,` $rhs attr-dict `:` type($result)";
}

def Kiln_DotBF16Op : Op<Kiln_Dialect, "dot_bf16",
    [Pure, AllTypesMatch<["acc", "result"]>,
     AllTypesMatch<["lhs", "rhs"]>]> {
  let summary = "Two bf16 products summed into each f32 lane";
  let description = [{
    Each f32 lane `l` of the result is `acc[l]` plus the sum over the two
    bf16 halves `j` of its 32-bit lane of `lhs[l].half[j] * rhs[l].half[j]`,
    as x86's `vdpbf16ps` and AArch64's `bfdot` compute it. The operands are
    32-bit lanes (`vector<Nxi32>`) holding two bf16 each.
    `kiln-cpu-tile-and-vectorize` makes it for `--precision=bf16`;
    `kiln-cpu-lower-dot-products` lowers it to the instruction where the
    target has it and to f32 vector arithmetic elsewhere.

    ```mlir
    %r = kiln.dot_bf16 %acc, %input, %weights : vector<16xi32> -> vector<16xf32>
    ```
  }];
  let arguments = (ins VectorOfRankAndType<[1], [F32]>:$acc,
                       VectorOfRankAndType<[1], [I32]>:$lhs,
                       VectorOfRankAndType<[1], [I32]>:$rhs);
  let results = (outs VectorOfRankAndType<[1], [F32]>:$result);
  let assemblyFormat =
      "$acc `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
}

def Kiln_CheckIndexOp : Op<Kiln_Dialect, "check_index",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "Fails the run when an index read at run time is out of range";
  let description = [{
    `min` and `max` are the least and the greatest index that an op (a
    gather or a scatter) read from a tensor at run time; `low` and `high`
    the range it allows, negative indices counted from the end. When an
    index lies outside it, the run fails: the first failed check of a run
    records itself and the offending index (`max` when it is above `high`,
    else `min`), and the model ABI's `kiln_abi_run` returns
    `KILN_ABI_RUN_INDEX_ERROR` naming it. The op that reads the indices
    clamps them all the same, so nothing is read or written out of bounds
    while the run finishes. `source` names the ONNX node and `what` the
    operand, for the runtime's message.

    `kiln-convert-graph-to-linalg` makes it for run-time indices (constant
    ones are checked at compile time); `kiln-codegen-lower-index-checks`
    lowers it on the CPU, and drops it on the GPU, which clamps only.

    ```mlir
    kiln.check_index %min, %max in [-10, 9] {source = "emb (Gather)", what = "indices"}
    ```
  }];
  let arguments = (ins I64:$min, I64:$max, I64Attr:$low, I64Attr:$high,
                       StrAttr:$source, StrAttr:$what);
  let assemblyFormat =
      "$min `,` $max `in` ` ` `[` $low `,` $high `]` attr-dict";
  let hasVerifier = 1;
}

#endif // KILN_DIALECT
