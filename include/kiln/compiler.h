//===- kiln/compiler.h - Kiln's compiler as a C++ library -------*- C++ -*-===//
//
// The API behind kiln-compile and the Python package: compile an ONNX model
// (or graph-dialect IR) into a shared object, or stop at any stage and get its
// IR. Only standard C++ types cross this interface.
//
// Conventions:
// - Errors: compileFile and compileONNXBytes never throw and never abort on
//   bad input; they return a CompileResult whose `ok` is false and whose
//   `error` holds every message, one per line; checkFile and checkONNXBytes
//   likewise return a CheckResult. The parse* functions return
//   an empty optional for a spelling they do not know; optionValues lists
//   the spellings they know.
// - Thread safety: every function here may be called from several threads
//   at once. Each compilation has its own MLIR and LLVM contexts and shares
//   nothing mutable with another, except LLVM's command-line options, which
//   registerCommandLineOptions registers once per process and compilations
//   only read.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_H
#define KILN_COMPILER_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Where compilation stops and what it writes.
enum class EmitStage {
  Graph,        ///< the optimised graph dialect (text)
  Linalg,       ///< linalg/tensor/arith/math on tensors (text)
  LLVM,         ///< the LLVM dialect at the end of the pass pipeline (text)
  Assembly,     ///< target assembly (text)
  Object,       ///< a relocatable object
  SharedObject, ///< the model .so (the default)
  Kernels,      ///< the tunable kernels and their search spaces (JSON)
  Imported,     ///< the graph dialect as imported, before any pass (text,
                ///< with locations: the input of kiln-opt --pass-pipeline)
  LLVMIR,       ///< optimised LLVM IR with the model ABI (text)
  PTX           ///< nvptx: the kernels' PTX, one module per architecture
};

/// The layout of convolutions, pools and the ops between them.
enum class Layout {
  Auto,    ///< blocked
  Blocked, ///< NCHWc, c = layoutBlock or the target's fp32 vector width
  NC1HWC0, ///< the same layout with C0 = 16 unless layoutBlock says otherwise
  NCHW     ///< as ONNX has it
};

/// Whether a batch above 1 runs as one sample at a time.
enum class BatchSplit {
  Auto, ///< where the batch's activations outgrow the cache and outweigh
        ///< the weights
  On,   ///< wherever every op treats the samples apart
  Off   ///< never
};

/// Each enumerated option's spellings, in one table (lib/Pipeline/
/// Compiler.cpp) that kiln-compile, the Python package and the tuner use:
/// "emit", "layout", "batch-split" and "conv-algorithm". The convolution
/// algorithms are those of the code generator, plus "auto".
std::vector<std::string> optionValues(const std::string &option);
std::optional<EmitStage> parseEmitStage(const std::string &name);
std::optional<Layout> parseLayout(const std::string &name);
std::optional<BatchSplit> parseBatchSplit(const std::string &name);
std::string spell(EmitStage stage);
std::string spell(Layout layout);
std::string spell(BatchSplit split);

struct CompileOptions {
  /// "x86-64", "aarch64" or "nvptx" (NVIDIA GPUs, with x86-64 host code).
  std::string target = "x86-64";
  /// nvptx: the GPU architectures, comma-separated ("sm_80,sm_90a"); empty:
  /// sm_80 and sm_90 (docs/gpu.md).
  std::string gpuArch;
  /// nvptx: the CUDA toolkit's root (ptxas, libdevice); empty: $CUDA_HOME,
  /// $CUDA_PATH, then /usr/local/cuda.
  std::string cudaPath;
  /// nvptx: also put host twins of the kernels in the model, which the CUDA
  /// driver emulator runs (libkiln_cuda_emulator.so, docs/gpu.md).
  bool gpuEmulation = false;
  /// nvptx: convolutions as implicit GEMMs, their im2col matrices read in
  /// place by the tiled products (kiln-gpu-tile-contractions' implicit-gemm;
  /// off by default, docs/gpu.md says why).
  bool gpuImplicitGemm = false;
  /// An LLVM CPU name; empty means the host CPU for the host's architecture
  /// and a generic CPU for another.
  std::string cpu;
  /// LLVM features to add or remove, e.g. "+avx2,-avx512f".
  std::string features;
  /// AArch64 with SVE: the vector length, in bits, of the CPU that will run
  /// the model; 0 leaves vectors at NEON's 128 bits.
  unsigned sveVectorBits = 0;
  /// Multithreaded code through OpenMP (the model then needs libomp.so.5).
  bool openMP = true;
  /// The algorithm of every convolution not in convAlgorithms: "auto" (a
  /// cost model of the target) or one of optionValues("conv-algorithm"):
  /// "im2col", "direct", "winograd-2x3", "winograd-4x3" or "winograd-6x3".
  std::string convAlgorithm = "auto";
  /// Per-layer choices, by ONNX node name; they win over convAlgorithm.
  std::map<std::string, std::string> convAlgorithms;
  EmitStage emit = EmitStage::SharedObject;
  /// Static shapes for inputs, by name, replacing symbolic dimensions.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The shapes of the tensors of each sequence input, by name: a
  /// sequence's length and shapes are compiled into the model, which takes
  /// it as one input per tensor, named NAME[i] (--sequence-shape).
  std::map<std::string, std::vector<std::vector<int64_t>>> sequenceShapes;
  /// Symbolic dimensions by name (the model's dim_param): the bounds
  /// {min, max} of one that stays symbolic, or {N, N} to give it the size
  /// N in every input (--dynamic-dims). A symbolic batch that leads every
  /// input stays symbolic without it, within 1..1024 (docs/runtime.md).
  std::map<std::string, std::pair<int64_t, int64_t>> dynamicDims;
  /// Run the graph-level optimisations.
  bool optimizeGraph = true;
  /// The layout of convolutions, pools and the ops between them.
  Layout layout = Layout::Auto;
  /// Channels per block of the blocked layout (the C0 of NC1HWC0); 0 takes
  /// the target's fp32 vector width (16 for AVX-512, 8 for AVX2, 4 for NEON).
  int64_t layoutBlock = 0;
  /// The operands of float convolutions and matrix products: "fp32" (the
  /// default) or "bf16" (bf16 operands, f32 accumulation, on the target's
  /// bf16 dot products: x86 AVX512-BF16, AArch64 BF16).
  std::string precision = "fp32";
  /// A batch above 1 as one sample at a time: the model's entry then takes
  /// one sample and runs once per sample (docs/performance.md, "Batch
  /// splitting"); --report says which and why.
  BatchSplit batchSplit = BatchSplit::Auto;
  /// Fill CompileResult::report.
  bool report = false;
  /// Write nothing: fill CompileResult::pipeline with the textual pass
  /// pipeline these options give, which kiln-opt --pass-pipeline runs on
  /// the EmitStage::Imported IR to get the EmitStage::LLVM module.
  bool printPipeline = false;
  /// A tuning database (JSON lines, docs/tuning.md): each kernel with a
  /// record for this target takes the best record's configuration. Empty:
  /// defaults everywhere.
  std::string tuningDB;
};

/// A kernel that a tuning database configured (docs/tuning.md).
struct AppliedKernelConfig {
  std::string kernel;        ///< the kernel's signature
  std::string configuration; ///< the knobs applied, a JSON object
  std::string database;      ///< the tuning database file
  unsigned line = 0;         ///< its line that holds the record
};

struct CompileResult {
  bool ok = false;
  /// On failure, every error message, one per line, each naming the ONNX
  /// node (name and op type) where there is one.
  std::string error;
  /// With CompileOptions::report: ops per stage, one line each.
  std::string report;
  /// With CompileOptions::printPipeline: the textual pass pipeline.
  std::string pipeline;
  /// The kernels that the tuning database configured, one record each.
  std::vector<AppliedKernelConfig> kernelConfigs;
};

/// Operators of a model that Kiln does not import: one op type
/// ("domain.OpType" outside ai.onnx) and the names of its nodes.
struct UnsupportedOperator {
  std::string opType;
  std::vector<std::string> nodes;
};

/// What checkFile found in a model, without compiling it.
struct CheckResult {
  /// Whether Kiln imports the whole model (it may still fail later, e.g.
  /// on a shape it cannot make static).
  bool ok = false;
  /// Nodes of the main graph, and its ai.onnx opset (0 when it has none).
  int64_t nodes = 0;
  int64_t opset = 0;
  /// The operators Kiln does not import, in the order of their first node.
  std::vector<UnsupportedOperator> unsupported;
  /// Every other problem, one message each, naming its node where there is
  /// one: an attribute value or a type Kiln does not support, a malformed
  /// model, an option that does not fit the model.
  std::vector<std::string> errors;
  /// Nodes not checked because an input comes from a node that failed.
  int64_t unchecked = 0;
  /// All of the above for a person, as `kiln-compile --check` prints it.
  std::string report;
};

/// Registers MLIR's pass-manager, context and printing options
/// (--mlir-print-ir-after-all, --mlir-timing, ...) with LLVM's command line,
/// for a tool to parse; compilations in this process then apply them. Call it
/// once, before llvm::cl::ParseCommandLineOptions.
void registerCommandLineOptions();

/// Compiles the model at `inputPath` (an .onnx file, or a .mlir file in the
/// graph dialect) and writes the chosen stage to `outputPath` ("-" for
/// standard output).
CompileResult compileFile(const std::string &inputPath,
                          const std::string &outputPath,
                          const CompileOptions &options);

/// The same for a serialized ONNX ModelProto held in memory; external data
/// files are looked up in `baseDir` (refused when it is empty).
CompileResult compileONNXBytes(const std::string &bytes,
                               const std::string &baseDir,
                               const std::string &outputPath,
                               const CompileOptions &options);

/// Checks the model at `inputPath` (an .onnx file) for operators,
/// attributes and types that Kiln does not support, quickly and without
/// compiling it: the import only, which goes on past each problem to report
/// them all. Of `options` it uses the input shapes; the others are checked
/// as a compile would check them.
CheckResult checkFile(const std::string &inputPath,
                      const CompileOptions &options);

/// The same for a serialized ONNX ModelProto held in memory.
CheckResult checkONNXBytes(const std::string &bytes, const std::string &baseDir,
                           const CompileOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_H
