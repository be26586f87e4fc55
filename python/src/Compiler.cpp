//===- Compiler.cpp - kiln._kiln.compiler: the compiler's C++ API ---------===//
//
// Binds kiln::CompileOptions, kiln::compileFile and kiln::compileONNXBytes,
// and the model check (kiln::checkFile, kiln::checkONNXBytes).
// The GIL is released while compiling: each compilation has its own
// MLIRContext, so Python threads may compile concurrently. Failures are
// returned, not raised; the Python package turns them into
// kiln.CompileError. Enumerated options are set by their spellings, parsed
// by the compiler's own table (kiln::optionValues lists them).
//
//===----------------------------------------------------------------------===//

#include "kiln/compiler.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace py::literals;

namespace {

/// A property of CompileOptions set by its spelling: an unknown one raises
/// ValueError with the valid values.
template <typename Enum>
void enumProperty(py::class_<kiln::CompileOptions> &cls, const char *name,
                  const char *option, Enum kiln::CompileOptions::*field,
                  std::optional<Enum> (*parse)(const std::string &)) {
  cls.def_property(
      name,
      [field](const kiln::CompileOptions &options) {
        return kiln::spell(options.*field);
      },
      [field, parse, name, option](kiln::CompileOptions &options,
                                   const std::string &text) {
        std::optional<Enum> value = parse(text);
        if (!value) {
          std::string valid;
          for (const std::string &spelling : kiln::optionValues(option))
            valid += (valid.empty() ? "" : ", ") + spelling;
          throw py::value_error(std::string("unknown ") + name + " '" + text +
                                "' (expected " + valid + ")");
        }
        options.*field = *value;
      });
}

} // namespace

void init_kiln_compiler(py::module_ &&m) {
  py::class_<kiln::AppliedKernelConfig>(
      m, "AppliedKernelConfig", "A kernel that the tuning database configured.")
      .def_readonly("kernel", &kiln::AppliedKernelConfig::kernel,
                    "The kernel's signature.")
      .def_readonly("configuration", &kiln::AppliedKernelConfig::configuration,
                    "The knobs applied, as a JSON object text.")
      .def_readonly("database", &kiln::AppliedKernelConfig::database)
      .def_readonly("line", &kiln::AppliedKernelConfig::line,
                    "The database's line holding the record.")
      .def("__repr__", [](const kiln::AppliedKernelConfig &config) {
        return config.kernel + ": " + config.configuration + " (" +
               config.database + ":" + std::to_string(config.line) + ")";
      });

  py::class_<kiln::CompileResult>(m, "CompileResult")
      .def_readonly("ok", &kiln::CompileResult::ok)
      .def_readonly("error", &kiln::CompileResult::error,
                    "Every error message, one per line, naming the ONNX node "
                    "where there is one.")
      .def_readonly("report", &kiln::CompileResult::report)
      .def_readonly("pipeline", &kiln::CompileResult::pipeline,
                    "With print_pipeline: the textual pass pipeline.")
      .def_readonly("kernel_configs", &kiln::CompileResult::kernelConfigs,
                    "The kernels the tuning database configured "
                    "(AppliedKernelConfig each).");

  py::class_<kiln::CompileOptions> options(
      m, "CompileOptions",
      "kiln::CompileOptions (include/kiln/compiler.h), field by field.");
  options.def(py::init<>())
      .def_readwrite("target", &kiln::CompileOptions::target)
      .def_readwrite("cpu", &kiln::CompileOptions::cpu)
      .def_readwrite("features", &kiln::CompileOptions::features)
      .def_readwrite("gpu_arch", &kiln::CompileOptions::gpuArch)
      .def_readwrite("cuda_path", &kiln::CompileOptions::cudaPath)
      .def_readwrite("gpu_emulation", &kiln::CompileOptions::gpuEmulation)
      .def_readwrite("gpu_implicit_gemm",
                     &kiln::CompileOptions::gpuImplicitGemm)
      .def_readwrite("sve_vector_bits", &kiln::CompileOptions::sveVectorBits)
      .def_readwrite("openmp", &kiln::CompileOptions::openMP)
      .def_readwrite("conv_algorithm", &kiln::CompileOptions::convAlgorithm)
      .def_readwrite("conv_algorithms", &kiln::CompileOptions::convAlgorithms)
      .def_readwrite("input_shapes", &kiln::CompileOptions::inputShapes)
      .def_readwrite("sequence_shapes", &kiln::CompileOptions::sequenceShapes)
      .def_readwrite("dynamic_dims", &kiln::CompileOptions::dynamicDims)
      .def_readwrite("optimize_graph", &kiln::CompileOptions::optimizeGraph)
      .def_readwrite("layout_block", &kiln::CompileOptions::layoutBlock)
      .def_readwrite("precision", &kiln::CompileOptions::precision)
      .def_readwrite("report", &kiln::CompileOptions::report)
      .def_readwrite("print_pipeline", &kiln::CompileOptions::printPipeline)
      .def_readwrite("tuning_db", &kiln::CompileOptions::tuningDB);
  enumProperty(options, "emit", "emit", &kiln::CompileOptions::emit,
               kiln::parseEmitStage);
  enumProperty(options, "layout", "layout", &kiln::CompileOptions::layout,
               kiln::parseLayout);
  enumProperty(options, "batch_split", "batch-split",
               &kiln::CompileOptions::batchSplit, kiln::parseBatchSplit);

  py::class_<kiln::UnsupportedOperator>(m, "UnsupportedOperator")
      .def_readonly("op_type", &kiln::UnsupportedOperator::opType,
                    "The op type, \"domain.OpType\" outside ai.onnx.")
      .def_readonly("nodes", &kiln::UnsupportedOperator::nodes,
                    "The names of its nodes.");

  py::class_<kiln::CheckResult>(m, "CheckResult")
      .def_readonly("ok", &kiln::CheckResult::ok)
      .def_readonly("nodes", &kiln::CheckResult::nodes)
      .def_readonly("opset", &kiln::CheckResult::opset)
      .def_readonly("unsupported", &kiln::CheckResult::unsupported)
      .def_readonly("errors", &kiln::CheckResult::errors)
      .def_readonly("unchecked", &kiln::CheckResult::unchecked)
      .def_readonly("report", &kiln::CheckResult::report);

  m.def(
      "check_file",
      [](const std::string &input, const kiln::CompileOptions &options) {
        py::gil_scoped_release noGil;
        return kiln::checkFile(input, options);
      },
      "input"_a, "options"_a, "Checks an .onnx file without compiling it.");

  m.def(
      "check_onnx_bytes",
      [](const py::bytes &model, const std::string &baseDir,
         const kiln::CompileOptions &options) {
        std::string bytes = model;
        py::gil_scoped_release noGil;
        return kiln::checkONNXBytes(bytes, baseDir, options);
      },
      "model"_a, "base_dir"_a, "options"_a,
      "Checks a serialized ONNX ModelProto without compiling it.");

  m.def("option_values", &kiln::optionValues, "option"_a,
        "The spellings of an enumerated option: emit, layout, batch-split "
        "or conv-algorithm.");

  m.def(
      "compile_file",
      [](const std::string &input, const std::string &output,
         const kiln::CompileOptions &options) {
        py::gil_scoped_release noGil;
        return kiln::compileFile(input, output, options);
      },
      "input"_a, "output"_a, "options"_a,
      "Compiles an .onnx (or graph-dialect .mlir) file into `output`.");

  m.def(
      "compile_onnx_bytes",
      [](const py::bytes &model, const std::string &baseDir,
         const std::string &output, const kiln::CompileOptions &options) {
        // Copied while the GIL is held; the compiler then runs without it.
        std::string bytes = model;
        py::gil_scoped_release noGil;
        return kiln::compileONNXBytes(bytes, baseDir, output, options);
      },
      "model"_a, "base_dir"_a, "output"_a, "options"_a,
      "Compiles a serialized ONNX ModelProto into `output`; external data "
      "is looked up in `base_dir` (refused when it is empty).");
}
