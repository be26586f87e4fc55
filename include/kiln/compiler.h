//===- kiln/compiler.h - Kiln's compiler as a C++ library -------*- C++ -*-===//
//
// The API behind kiln-compile and the Python package: compile an ONNX model
// (or graph-dialect IR) into a shared object, or stop at any stage and get its
// IR. Only standard C++ types cross this interface.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_H
#define KILN_COMPILER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

/// Where compilation stops and what it writes.
enum class EmitStage {
  Graph,        ///< the optimised graph dialect (text)
  Linalg,       ///< linalg/tensor/arith/math on tensors (text)
  LLVM,         ///< optimised LLVM IR with the model ABI (text)
  Assembly,     ///< target assembly (text)
  Object,       ///< a relocatable object
  SharedObject, ///< the model .so (the default)
  Kernels       ///< the tunable kernels and their search spaces (JSON)
};

struct CompileOptions {
  /// "x86-64", "aarch64" or "nvptx".
  std::string target = "x86-64";
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
  /// cost model of the target), "im2col", "direct", "winograd-2x3",
  /// "winograd-4x3" or "winograd-6x3".
  std::string convAlgorithm = "auto";
  /// Per-layer choices, by ONNX node name; they win over convAlgorithm.
  std::map<std::string, std::string> convAlgorithms;
  EmitStage emit = EmitStage::SharedObject;
  /// Static shapes for inputs, by name, replacing symbolic dimensions.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Run the graph-level optimisations.
  bool optimizeGraph = true;
  /// The layout of convolutions, pools and the ops between them: "blocked"
  /// (NCHWc, kiln-graph-blocked-layout), "nc1hwc0" (the same with C0 = 16
  /// unless layoutBlock says otherwise), "nchw", or "auto" (the default):
  /// blocked, except for code specialised to one SVE vector length
  /// (sveVectorBits), where LLVM scalarises the blocked direct convolution's
  /// register blocks (docs/aarch64.md) and auto keeps NCHW.
  std::string layout = "auto";
  /// Channels per block of the blocked layout (the C0 of NC1HWC0); 0 takes
  /// the target's fp32 vector width (16 for AVX-512, 8 for AVX2, 4 for NEON).
  int64_t layoutBlock = 0;
  /// A batch above 1 as one sample at a time: "auto" (the default) where
  /// the batch's activations outgrow the cache and outweigh the weights,
  /// "on" wherever every op treats the samples apart, "off" never. The
  /// model's entry then takes one sample and runs once per sample
  /// (docs/performance.md, "Batch splitting"); --report says which and why.
  std::string batchSplit = "auto";
  /// Fill CompileResult::report.
  bool report = false;
  /// A tuning database (JSON lines, docs/tuning.md): each kernel with a
  /// record for this target takes the best record's configuration. Empty:
  /// defaults everywhere.
  std::string tuningDB;
};

struct CompileResult {
  bool ok = false;
  /// On failure, every error message, one per line, each naming the ONNX
  /// node (name and op type) where there is one.
  std::string error;
  /// With CompileOptions::report: ops per stage, one line each.
  std::string report;
};

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

/// Parses a stage name as --emit takes it (graph, linalg, llvm, asm, obj,
/// so, kernels); returns false for an unknown name.
bool parseEmitStage(const std::string &name, EmitStage &stage);

} // namespace kiln

#endif // KILN_COMPILER_H
