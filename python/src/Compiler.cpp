//===- Compiler.cpp - kiln._kiln.compiler: the compiler's C++ API ---------===//
//
// Binds kiln::compileFile and kiln::compileONNXBytes. The GIL is released
// while compiling: each compilation has its own MLIRContext, so Python
// threads may compile concurrently. Failures are returned, not raised; the
// Python package turns them into kiln.CompileError.
//
//===----------------------------------------------------------------------===//

#include "kiln/compiler.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace py::literals;

namespace {

using InputShapes = std::map<std::string, std::vector<int64_t>>;
using LayerChoices = std::map<std::string, std::string>;

/// The code-generation choices of kiln.compile's **options.
struct CodegenChoices {
  std::string convAlgorithm = "auto";
  LayerChoices convAlgorithms;
  bool openMP = true;
  unsigned sveVectorBits = 0;
  std::string layout = "auto";
  int64_t layoutBlock = 0;
  std::string batchSplit = "auto";
};

kiln::CompileOptions
makeOptions(const std::string &target, const std::string &cpu,
            const std::string &features, const std::string &emit,
            const InputShapes &inputShapes, bool optimizeGraph, bool report,
            const std::string &tuningDB, const CodegenChoices &choices) {
  kiln::CompileOptions options;
  if (!target.empty())
    options.target = target;
  options.cpu = cpu;
  options.features = features;
  if (!kiln::parseEmitStage(emit, options.emit))
    throw py::value_error("unknown emit stage '" + emit +
                          "'; expected one of graph, linalg, llvm, asm, obj, "
                          "so, kernels");
  options.inputShapes = inputShapes;
  options.optimizeGraph = optimizeGraph;
  options.report = report;
  options.tuningDB = tuningDB;
  options.convAlgorithm = choices.convAlgorithm;
  options.convAlgorithms = choices.convAlgorithms;
  options.openMP = choices.openMP;
  options.sveVectorBits = choices.sveVectorBits;
  options.layout = choices.layout;
  options.layoutBlock = choices.layoutBlock;
  options.batchSplit = choices.batchSplit;
  return options;
}

} // namespace

void init_kiln_compiler(py::module_ &&m) {
  py::class_<kiln::CompileResult>(m, "CompileResult")
      .def_readonly("ok", &kiln::CompileResult::ok)
      .def_readonly("error", &kiln::CompileResult::error,
                    "Every error message, one per line, naming the ONNX node "
                    "where there is one.")
      .def_readonly("report", &kiln::CompileResult::report);

  m.def(
      "compile_file",
      [](const std::string &input, const std::string &output,
         const std::string &target, const std::string &cpu,
         const std::string &features, const std::string &emit,
         const InputShapes &inputShapes, bool optimizeGraph, bool report,
         const std::string &tuningDB, const std::string &convAlgorithm,
         const LayerChoices &convAlgorithms, bool openMP,
         unsigned sveVectorBits, const std::string &layout, int64_t layoutBlock,
         const std::string &batchSplit) {
        kiln::CompileOptions options =
            makeOptions(target, cpu, features, emit, inputShapes, optimizeGraph,
                        report, tuningDB,
                        {convAlgorithm, convAlgorithms, openMP, sveVectorBits,
                         layout, layoutBlock, batchSplit});
        py::gil_scoped_release noGil;
        return kiln::compileFile(input, output, options);
      },
      "input"_a, "output"_a, py::kw_only(), "target"_a = "", "cpu"_a = "",
      "features"_a = "", "emit"_a = "so", "input_shapes"_a = InputShapes(),
      "optimize_graph"_a = true, "report"_a = false, "tuning_db"_a = "",
      "conv_algorithm"_a = "auto", "conv_algorithms"_a = LayerChoices(),
      "openmp"_a = true, "sve_vector_bits"_a = 0u, "layout"_a = "auto",
      "layout_block"_a = 0, "batch_split"_a = "auto",
      "Compiles an .onnx (or graph-dialect .mlir) file into `output`.");

  m.def(
      "compile_onnx_bytes",
      [](const py::bytes &model, const std::string &baseDir,
         const std::string &output, const std::string &target,
         const std::string &cpu, const std::string &features,
         const std::string &emit, const InputShapes &inputShapes,
         bool optimizeGraph, bool report, const std::string &tuningDB,
         const std::string &convAlgorithm, const LayerChoices &convAlgorithms,
         bool openMP, unsigned sveVectorBits, const std::string &layout,
         int64_t layoutBlock, const std::string &batchSplit) {
        kiln::CompileOptions options =
            makeOptions(target, cpu, features, emit, inputShapes, optimizeGraph,
                        report, tuningDB,
                        {convAlgorithm, convAlgorithms, openMP, sveVectorBits,
                         layout, layoutBlock, batchSplit});
        // Copied while the GIL is held; the compiler then runs without it.
        std::string bytes = model;
        py::gil_scoped_release noGil;
        return kiln::compileONNXBytes(bytes, baseDir, output, options);
      },
      "model"_a, "base_dir"_a, "output"_a, py::kw_only(), "target"_a = "",
      "cpu"_a = "", "features"_a = "", "emit"_a = "so",
      "input_shapes"_a = InputShapes(), "optimize_graph"_a = true,
      "report"_a = false, "tuning_db"_a = "", "conv_algorithm"_a = "auto",
      "conv_algorithms"_a = LayerChoices(), "openmp"_a = true,
      "sve_vector_bits"_a = 0u, "layout"_a = "auto", "layout_block"_a = 0,
      "batch_split"_a = "auto",
      "Compiles a serialized ONNX ModelProto into `output`; external data "
      "is looked up in `base_dir` (refused when it is empty).");
}
