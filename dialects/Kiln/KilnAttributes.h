//===- KilnAttributes.h - The names of Kiln's attributes --------*- C++ -*-===//
//
// Every `kiln.*` attribute that passes hand one another, spelled once. The
// kiln dialect (KilnDialect.td) verifies each wherever it appears, so that
// a pass that writes one wrongly, or a hand-written test with a typo, fails
// at the op instead of being ignored by the pass that reads it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_KILNATTRIBUTES_H
#define KILN_DIALECTS_KILN_KILNATTRIBUTES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace kiln::attr {

/// On an argument or result of the model's function: its ONNX name (a
/// string; the importer writes it).
constexpr llvm::StringLiteral kName = "kiln.name";
/// On an argument of the model's function: the name of each dimension the
/// model leaves symbolic (its dim_param; "" for a static one), an array of
/// strings (the importer writes it where an input has one).
constexpr llvm::StringLiteral kDims = "kiln.dims";
/// On the model's function: the symbolic dimensions that stay symbolic in
/// the compiled model, one dictionary {name: string, min: integer, max:
/// integer} each (the importer). So far only the batch, which the types
/// carry as ImportOptions::batchProbe and kiln-graph-split-batch turns into
/// a run-time repeat.
constexpr llvm::StringLiteral kSymbols = "kiln.symbols";
/// On the model's function: the symbolic dimensions whose sizes the code
/// reads at run time (KILN_ABI_SYMBOL_DIM: a sequence length), one
/// dictionary {name: string, min: integer, max: integer} each (the
/// importer, from --dynamic-dims NAME=MIN..MAX); their dimensions stay `?`
/// in the types. An entry of kiln.inputs or kiln.outputs then has
/// `symbol_dims`, which of them each dimension is (an array of integers, -1
/// for a static one; kiln-graph-make-entry).
constexpr llvm::StringLiteral kDimSymbols = "kiln.dim_symbols";
/// On the model's function: the sizes that the data decides (NonZero,
/// Unique, ...: KILN_ABI_SYMBOL_RESULT), one dictionary {name: string, max:
/// integer} each (the importer). On a result: `kiln.result_dims`, which of
/// them each dimension is (an array of integers, -1 for a static one), or
/// `kiln.result_symbol`, the one whose run's size the result holds (a
/// tensor<i64> that the model ABI returns as the size, not as an output).
constexpr llvm::StringLiteral kResultSymbols = "kiln.result_symbols";
constexpr llvm::StringLiteral kResultDims = "kiln.result_dims";
constexpr llvm::StringLiteral kResultSymbol = "kiln.result_symbol";
/// On the entry function: the inputs and outputs as the caller sees them,
/// one dictionary {name: string, type: type, passed: bool} each, an output
/// also with `dims` or `symbol` where its result had kiln.result_dims or
/// kiln.result_symbol (kiln-graph-make-entry).
constexpr llvm::StringLiteral kInputs = "kiln.inputs";
constexpr llvm::StringLiteral kOutputs = "kiln.outputs";
/// On the entry function: how many times the model ABI runs it per call, on
/// the next sample each time (an integer above 1; kiln-graph-split-batch),
/// and why (a string).
constexpr llvm::StringLiteral kBatchRepeat = "kiln.batch_repeat";
constexpr llvm::StringLiteral kBatchSplit = "kiln.batch_split";
/// On a linalg.generic: the blocked convolution it is (a BlockedConvAttr;
/// conversion/GraphToLinalg).
constexpr llvm::StringLiteral kBlockedConv = "kiln.blocked_conv";
/// On a graph.blocked_conv: its input holds integers within [low, high]
/// (two i64, low <= 0 <= high, at most 255 apart), its weight integers in
/// [-128, 127]; the lowering computes it in 8-bit integers
/// (kiln-graph-mark-integer-contractions proves it).
constexpr llvm::StringLiteral kIntegerInput = "kiln.integer_input";
/// On the linalg.generic that converts an integer-valued f32 tensor to the
/// bytes x - low of a packed integer product (PackedForm::convertInput):
/// `low` (an i64). kiln-codegen-fuse-elementwise lets the tensor's other
/// readers read those bytes instead, since the values are the same.
constexpr llvm::StringLiteral kToBytes = "kiln.to_bytes";
/// On a graph.blocked_conv, graph.matmul or graph.fused_matmul: compute it
/// with bf16 operands and f32 accumulators (a unit attribute;
/// kiln-graph-mark-integer-contractions with bf16, --precision=bf16).
constexpr llvm::StringLiteral kBF16 = "kiln.bf16";
/// On a convolution: the algorithm chosen for it (a ConvAlgorithmAttr); on a
/// function, one report line per convolution (an array of strings).
constexpr llvm::StringLiteral kConvAlgorithm = "kiln.conv_algorithm";
constexpr llvm::StringLiteral kConvAlgorithms = "kiln.conv_algorithms";
/// On a kernel: its configuration from a tuning database (a
/// KernelConfigAttr, whose knobs are spelled as below).
constexpr llvm::StringLiteral kKernelConfig = "kiln.kernel_config";
/// The knobs of a kernel configuration, in the IR and in a tuning database
/// (docs/tuning.md): the algorithm (a ConvAlgorithm), lanes per vector,
/// vectors and rows per register block, reduction steps per iteration
/// (integers), and whether tiles run on threads (a bool).
constexpr llvm::StringLiteral kKnobAlgorithm = "algorithm";
constexpr llvm::StringLiteral kKnobVectorWidth = "vector_width";
constexpr llvm::StringLiteral kKnobVectors = "vectors";
constexpr llvm::StringLiteral kKnobRows = "rows";
constexpr llvm::StringLiteral kKnobReductionTile = "k_tile";
constexpr llvm::StringLiteral kKnobParallel = "parallel";
constexpr llvm::StringLiteral kKnobTiles = "tiles";
/// On an outlined kernel: its floating-point operations per call and the
/// ONNX nodes it computes (a KernelAttr; kiln-codegen-outline-kernels).
constexpr llvm::StringLiteral kKernel = "kiln.kernel";
/// On the entry function: the bytes of the workspace the caller provides
/// (a non-negative integer; kiln-codegen-plan-memory).
constexpr llvm::StringLiteral kWorkspaceSize = "kiln.workspace_size";
/// On the entry function of a GPU model: the bytes of its constants
/// segment (a non-negative integer; kiln-gpu-externalize-constants).
constexpr llvm::StringLiteral kConstantsSize = "kiln.constants_size";
/// On a GPU kernel's host stub: grid x, y, z and block x, y, z (six
/// positive integers; kiln-gpu-lower-launches).
constexpr llvm::StringLiteral kGPULaunch = "kiln.gpu_launch";
/// On a linalg.fill of a padded tensor (kiln-codegen-pad-in-place): the
/// interior that the padded source overwrites before anything reads it,
/// as its offsets then its sizes (an array of 2 x rank i64), so that
/// kiln-codegen-fill-borders fills only the border.
constexpr llvm::StringLiteral kPadInterior = "kiln.pad_interior";
/// On the module: the run-time index checks, in the order of their numbers
/// (an array of {source, what, low, high};
/// kiln-codegen-lower-index-checks), which the model ABI's descriptor
/// lists.
constexpr llvm::StringLiteral kIndexChecks = "kiln.index_checks";
/// On the module (a unit attribute): the index checks record a failure in
/// an argument of the entry, after the workspace (the run's
/// kiln_abi_run_error, a GPU model's in device memory), not in a
/// thread-local global (kiln-codegen-lower-index-checks{slot=argument}).
constexpr llvm::StringLiteral kRunErrorArgument = "kiln.run_error_argument";
/// On a graph.gather or graph.scatter_elements (a unit attribute): its
/// indices count from zero only, as RoiAlign's batch indices and
/// MaxUnpool's positions do (onnxruntime refuses a negative one), so the
/// compile-time and run-time checks take [0, size - 1], not [-size, size - 1].
constexpr llvm::StringLiteral kIndicesFromZero = "kiln.indices_from_zero";

/// Every convolution algorithm as the options and the IR spell it (the
/// ConvAlgorithm enum of KilnDialect.td): im2col, direct, winograd-2x3,
/// winograd-4x3, winograd-6x3.
llvm::ArrayRef<llvm::StringRef> convAlgorithmNames();

} // namespace kiln::attr

#endif // KILN_DIALECTS_KILN_KILNATTRIBUTES_H
