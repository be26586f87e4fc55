//===- kiln-compile.cpp - Compile a model into a shared object ------------===//

#include "kiln/compiler.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <unistd.h>

using namespace llvm;

namespace {

cl::OptionCategory category("kiln-compile options");

cl::opt<std::string> inputPath(cl::Positional,
                               cl::desc("<model.onnx | graph.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string>
    outputPath("o",
               cl::desc("Output file ('-' for standard output); required "
                        "unless --print-pipeline"),
               cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> target("target",
                            cl::desc("Target: x86-64 (default), aarch64, or "
                                     "nvptx (NVIDIA GPUs, x86-64 host code)"),
                            cl::init("x86-64"), cl::cat(category));
cl::opt<std::string> gpuArch(
    "gpu-arch",
    cl::desc("nvptx: GPU architectures, comma-separated, e.g. sm_80,sm_90a "
             "(default sm_80,sm_90): a cubin each, and the PTX of the oldest "
             "for newer GPUs"),
    cl::cat(category));
cl::opt<std::string> cudaPath(
    "cuda-path",
    cl::desc("nvptx: the CUDA toolkit's root, for ptxas and libdevice "
             "(default: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda)"),
    cl::cat(category));
cl::opt<bool> gpuEmulation(
    "gpu-emulation",
    cl::desc("nvptx: also put host code of the kernels in the model, which "
             "the CUDA driver emulator runs (KILN_CUDA_DRIVER="
             "libkiln_cuda_emulator.so): tests without a GPU"),
    cl::cat(category));
cl::opt<bool> gpuImplicitGemm(
    "gpu-implicit-gemm",
    cl::desc("nvptx: convolutions as implicit GEMMs, each im2col matrix and "
             "its padding read in place by the tiled product (off by "
             "default: slower on an H200, docs/gpu.md)"),
    cl::cat(category));
cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the textual pass pipeline that these options give, up to "
             "the --emit stage, and write nothing: kiln-opt "
             "--pass-pipeline=<it> on the --emit=imported IR prints what "
             "--emit=llvm prints"),
    cl::cat(category));
cl::opt<bool> checkOnly(
    "check",
    cl::desc("Check the model and write nothing: list every operator, "
             "attribute and type that Kiln does not support, without "
             "compiling (exit status 0 when Kiln supports the model, 1 when "
             "not); for screening a model zoo"),
    cl::cat(category));
cl::opt<std::string> cpu("cpu",
                         cl::desc("LLVM CPU name (default: the host CPU for "
                                  "the host architecture, generic otherwise)"),
                         cl::cat(category));
cl::opt<std::string> features("features",
                              cl::desc("LLVM target features to add or "
                                       "remove, e.g. +avx2,-avx512f"),
                              cl::cat(category));
cl::opt<unsigned> sveVectorBits(
    "sve-vector-bits",
    cl::desc("AArch64 with SVE: the vector length of the CPU that will run "
             "the model (128 to 2048, a multiple of 128); vectors and "
             "register blocks become that wide, and the runtime refuses a "
             "CPU with another length. 0 (default): NEON-width code"),
    cl::init(0), cl::cat(category));
cl::opt<bool> noOpenMP("no-openmp",
                       cl::desc("Single-threaded code that needs no OpenMP "
                                "runtime (libomp.so.5) where it runs"),
                       cl::cat(category));
cl::list<std::string> convAlgorithms(
    "conv-algorithm",
    cl::desc("Convolution algorithm: auto (default: a cost model of the "
             "target), im2col, direct, winograd-2x3, winograd-4x3 or "
             "winograd-6x3; LAYER=ALGORITHM sets one layer (an ONNX node "
             "name) and wins over the default (repeatable; --report lists "
             "every layer's choice). A blocked layer runs direct or Winograd; "
             "im2col needs --layout=nchw"),
    cl::value_desc("[layer=]algorithm"), cl::cat(category));
cl::opt<std::string> layoutName(
    "layout",
    cl::desc("Layout of convolutions, pools and the ops between them: "
             "blocked (NCHWc, converted back only where the blocked "
             "ops end), nc1hwc0 (the same with C0 = 16 unless "
             "--layout-block says otherwise), nchw, or auto (default: "
             "blocked)"),
    cl::init("auto"), cl::cat(category));
cl::opt<int64_t> layoutBlock(
    "layout-block",
    cl::desc("Channels per block of the blocked layout (the c of NCHWc, the "
             "C0 of NC1HWC0); "
             "0 (default) takes the target's fp32 vector width"),
    cl::init(0), cl::cat(category));
cl::opt<std::string> precision(
    "precision",
    cl::desc("Operands of float convolutions and matrix products: fp32 "
             "(default) or bf16 (bf16 operands and f32 accumulation on the "
             "CPU's bf16 dot products: x86 AVX512-BF16, AArch64 BF16; "
             "quantised layers stay int8). An f16 model computes in f32 on "
             "CPU targets, its inputs, outputs and weights kept f16"),
    cl::init("fp32"), cl::cat(category));
cl::opt<std::string> batchSplitName(
    "batch-split",
    cl::desc("A batch above 1 as one sample at a time, the model's entry "
             "run once per sample: auto (default: where the batch's "
             "activations outgrow the cache and outweigh the weights), on "
             "(wherever every op treats the samples apart) or off; --report "
             "says which and why"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string>
    emit("emit",
         cl::desc("Stop after a stage and write it: imported (the graph "
                  "dialect before any pass, with locations), graph, linalg, "
                  "llvm (the LLVM dialect at the end of the pass pipeline), "
                  "llvm-ir (LLVM IR with the model ABI, optimised), asm, obj "
                  "or so (default); ptx (nvptx: the kernels' PTX, each "
                  "architecture's); or kernels: the tunable kernels as JSON "
                  "(signature, search space, a module to time each alone), "
                  "for the tuner"),
         cl::init("so"), cl::cat(category));
cl::opt<std::string> tuningDB(
    "tuning-db",
    cl::desc("Tuning database (JSON lines, as kiln.tune writes it): each "
             "kernel with a record for this target takes the configuration of "
             "its fastest record; the others keep the defaults. --report "
             "lists the configured kernels"),
    cl::value_desc("file"), cl::cat(category));
cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Static shape of an input, replacing symbolic dimensions: "
             "NAME=D0xD1x... (repeatable)"),
    cl::value_desc("name=shape"), cl::cat(category));
cl::list<std::string> sequenceShapes(
    "sequence-shape",
    cl::desc("The length and tensor shapes of a sequence input, which Kiln "
             "compiles into the model: NAME=D0xD1,D0xD1,... one shape per "
             "tensor ('scalar' for a rank-0 one; NAME= for an empty "
             "sequence). The model then takes tensors NAME[0], NAME[1], ... "
             "(repeatable)"),
    cl::value_desc("name=shape,shape,..."), cl::cat(category));
cl::list<std::string> dynamicDims(
    "dynamic-dims",
    cl::desc("Symbolic dimensions by the model's names for them: NAME=MIN..MAX "
             "keeps one symbolic within bounds, NAME=N gives it the size N in "
             "every input (comma-separated, repeatable). A symbolic batch "
             "that leads every input stays symbolic without it, within "
             "1..1024; another symbolic dimension (a sequence length) needs "
             "a size or bounds, and with bounds the code reads its size at "
             "run time (the ops docs/runtime.md lists). NAME may also be a "
             "size that a shape operand read at run time decides, "
             "<output>_<dimension> (y_1): MAX bounds it"),
    cl::value_desc("name=min..max,..."), cl::CommaSeparated, cl::cat(category));
cl::opt<bool> noGraphOpt("no-graph-opt",
                         cl::desc("Skip the graph-level optimisations"),
                         cl::cat(category));
cl::opt<bool> report(
    "report",
    cl::desc("Print on standard error what each stage did: op counts, the "
             "target and its register block, the layout, the batch split and "
             "why, each convolution's algorithm, the kernels the tuning "
             "database configured, the workspace"),
    cl::cat(category));

cl::opt<std::string> quantize(
    "quantize",
    cl::desc("Quantise the model before compiling it: int8 (post-training, "
             "calibrated on --calibration by kiln.quantize, which writes a QDQ "
             "model; needs Python 3 with the kiln package, numpy and onnx: "
             "KILN_PYTHON names the interpreter, else the one Kiln was built "
             "with, else python3)"),
    cl::value_desc("int8"), cl::cat(category));
cl::opt<std::string> calibration(
    "calibration",
    cl::desc("The calibration samples of --quantize: a folder of .npy files "
             "(one sample each, for a model of one input) or .npz files (one "
             "sample each, the arrays named after the inputs), in name order"),
    cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> quantizeMethod(
    "quantize-method",
    cl::desc("How --quantize calibrates: minmax (default), percentile or "
             "entropy"),
    cl::init("minmax"), cl::cat(category));

/// The folder of the kiln Python package that goes with this executable
/// (<bin>/../python in a build or an install), or empty.
std::string kilnPythonPath(const char *argv0) {
  std::string exe = sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&kilnPythonPath));
  SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(exe)));
  sys::path::append(dir, "python");
  SmallString<256> init(dir);
  sys::path::append(init, "kiln", "__init__.py");
  return sys::fs::exists(init) ? std::string(dir) : std::string();
}

/// Runs kiln.quantize on `model` with the --calibration samples, writing the
/// QDQ model to `output`; its report goes to standard error. Returns false
/// after printing why it failed.
bool quantizeModel(const char *argv0, const std::string &model,
                   const std::string &output) {
  if (quantize != "int8") {
    errs() << "kiln-compile: error: unknown --quantize value '" << quantize
           << "' (expected int8)\n";
    return false;
  }
  if (calibration.empty()) {
    errs() << "kiln-compile: error: --quantize=int8 needs calibration samples: "
              "--calibration DIR\n";
    return false;
  }
  // KILN_PYTHON, else the interpreter Kiln was built with, else python3.
  std::string python;
  if (const char *given = std::getenv("KILN_PYTHON"))
    python = given;
  else if (sys::fs::can_execute(KILN_PYTHON_EXECUTABLE))
    python = KILN_PYTHON_EXECUTABLE;
  else if (ErrorOr<std::string> found = sys::findProgramByName("python3"))
    python = *found;
  if (python.empty()) {
    errs() << "kiln-compile: error: --quantize runs kiln.quantize in Python, "
              "and no python3 is on the PATH (set KILN_PYTHON)\n";
    return false;
  }
  // The environment, with the package beside this executable first on
  // PYTHONPATH.
  std::vector<std::string> environment;
  std::string packages = kilnPythonPath(argv0);
  bool sawPath = false;
  for (char **entry = environ; *entry; ++entry) {
    StringRef text(*entry);
    if (text.starts_with("PYTHONPATH=") && !packages.empty()) {
      environment.push_back("PYTHONPATH=" + packages + ":" +
                            text.drop_front(11).str());
      sawPath = true;
    } else {
      environment.push_back(text.str());
    }
  }
  if (!sawPath && !packages.empty())
    environment.push_back("PYTHONPATH=" + packages);
  SmallVector<StringRef> env(environment.begin(), environment.end());
  SmallVector<StringRef> args = {python,      "-m",       "kiln.quantize",
                                 model,       output,     "--calibration",
                                 calibration, "--method", quantizeMethod};
  std::string error;
  int status = sys::ExecuteAndWait(python, args, env, {}, 0, 0, &error);
  if (status != 0) {
    errs() << "kiln-compile: error: quantising the model failed"
           << (error.empty() ? std::string(" (its message is above)")
                             : ": " + error)
           << "\n";
    return false;
  }
  return true;
}

/// Parses NAME=D0xD1x...; a scalar is NAME= with nothing after it.
bool parseInputShape(StringRef text, kiln::CompileOptions &options,
                     std::string &error) {
  auto [name, dims] = text.rsplit('=');
  if (name.empty() || name.size() == text.size()) {
    error = "--input-shape expects NAME=D0xD1x..., got '" + text.str() + "'";
    return false;
  }
  std::vector<int64_t> shape;
  SmallVector<StringRef> parts;
  dims.split(parts, 'x', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    int64_t value;
    if (part.getAsInteger(10, value) || value < 0) {
      error = "--input-shape: '" + part.str() + "' in '" + text.str() +
              "' is not a dimension (a non-negative integer)";
      return false;
    }
    shape.push_back(value);
  }
  options.inputShapes[name.str()] = shape;
  return true;
}

/// Parses NAME=D0xD1,D0xD1,... ('scalar' for a rank-0 tensor; nothing
/// after '=' for an empty sequence).
bool parseSequenceShape(StringRef text, kiln::CompileOptions &options,
                        std::string &error) {
  auto [name, list] = text.split('=');
  if (name.empty() || !text.contains('=')) {
    error = "--sequence-shape expects NAME=D0xD1,D0xD1,..., got '" +
            text.str() + "'";
    return false;
  }
  std::vector<std::vector<int64_t>> shapes;
  SmallVector<StringRef> elements;
  list.split(elements, ',', -1, /*KeepEmpty=*/true);
  for (StringRef element : list.empty() ? ArrayRef<StringRef>() : elements) {
    std::vector<int64_t> shape;
    SmallVector<StringRef> parts;
    if (element != "scalar")
      element.split(parts, 'x', -1, /*KeepEmpty=*/true);
    for (StringRef part : parts) {
      int64_t value;
      if (part.getAsInteger(10, value) || value < 0) {
        error = "--sequence-shape: '" + element.str() + "' in '" + text.str() +
                "' is not a shape (D0xD1x... of non-negative integers, or "
                "'scalar')";
        return false;
      }
      shape.push_back(value);
    }
    shapes.push_back(shape);
  }
  options.sequenceShapes[name.str()] = shapes;
  return true;
}

/// Parses NAME=MIN..MAX or NAME=N.
bool parseDynamicDim(StringRef text, kiln::CompileOptions &options,
                     std::string &error) {
  auto [name, range] = text.split('=');
  auto [low, high] = range.split("..");
  int64_t min, max;
  if (name.empty() || !text.contains('=') || low.getAsInteger(10, min) ||
      (range.contains("..") ? high.getAsInteger(10, max)
                            : (max = min, false))) {
    error = "--dynamic-dims expects NAME=MIN..MAX or NAME=N, got '" +
            text.str() + "'";
    return false;
  }
  if (options.dynamicDims.count(name.str())) {
    error = "--dynamic-dims names '" + name.str() + "' twice";
    return false;
  }
  options.dynamicDims[name.str()] = {min, max};
  return true;
}

/// Parses the value of the enumerated option --`flag` (kiln::optionValues
/// knows it by the same name); an unknown one prints the valid ones.
template <typename Enum>
bool parseEnum(const char *flag, const std::string &text,
               std::optional<Enum> (*parse)(const std::string &), Enum &value) {
  std::optional<Enum> parsed = parse(text);
  if (!parsed) {
    errs() << "kiln-compile: error: unknown --" << flag << " value '" << text
           << "' (expected " << join(kiln::optionValues(flag), ", ") << ")\n";
    return false;
  }
  value = *parsed;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // --mlir-print-ir-after-all, --mlir-timing and the other options of MLIR's
  // pass manager, shown with --help-hidden.
  kiln::registerCommandLineOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Kiln: compile an ONNX model (or graph-dialect IR) into one shared "
      "object\n\n"
      "  kiln-compile model.onnx -o model.so\n"
      "  kiln-compile model.onnx --emit=graph -o -\n"
      "  kiln-compile model.onnx --tuning-db=model.tuning.jsonl -o model.so\n"
      "  kiln-compile model.onnx --print-pipeline\n"
      "  kiln-compile --check model.onnx\n\n"
      "MLIR's pass-manager options (--mlir-print-ir-after-all, "
      "--mlir-timing, ...) apply to every stage's passes: see "
      "--help-hidden.\n");

  if (outputPath.empty() && !printPipeline && !checkOnly) {
    errs() << "kiln-compile: error: no output file: give one with -o "
              "('-' for standard output)\n";
    return 1;
  }
  kiln::CompileOptions options;
  options.target = target;
  options.gpuArch = gpuArch;
  options.cudaPath = cudaPath;
  options.gpuEmulation = gpuEmulation;
  options.gpuImplicitGemm = gpuImplicitGemm;
  options.cpu = cpu;
  options.features = features;
  options.sveVectorBits = sveVectorBits;
  options.openMP = !noOpenMP;
  options.optimizeGraph = !noGraphOpt;
  options.layoutBlock = layoutBlock;
  options.precision = precision;
  options.report = report;
  options.printPipeline = printPipeline;
  options.tuningDB = tuningDB;
  if (!parseEnum("emit", emit, kiln::parseEmitStage, options.emit) ||
      !parseEnum("layout", layoutName, kiln::parseLayout, options.layout) ||
      !parseEnum("batch-split", batchSplitName, kiln::parseBatchSplit,
                 options.batchSplit))
    return 1;
  for (StringRef choice : convAlgorithms) {
    auto [layer, algorithm] = choice.rsplit('=');
    if (!choice.contains('='))
      options.convAlgorithm = choice.str();
    else
      options.convAlgorithms[layer.str()] = algorithm.str();
  }
  for (const std::string &dim : dynamicDims) {
    std::string error;
    if (!parseDynamicDim(dim, options, error)) {
      errs() << "kiln-compile: error: " << error << "\n";
      return 1;
    }
  }
  for (const std::string &shape : inputShapes) {
    std::string error;
    if (!parseInputShape(shape, options, error)) {
      errs() << "kiln-compile: error: " << error << "\n";
      return 1;
    }
  }
  for (const std::string &shape : sequenceShapes) {
    std::string error;
    if (!parseSequenceShape(shape, options, error)) {
      errs() << "kiln-compile: error: " << error << "\n";
      return 1;
    }
  }

  if (checkOnly) {
    kiln::CheckResult checked = kiln::checkFile(inputPath, options);
    outs() << inputPath << ": " << checked.report;
    return checked.ok ? 0 : 1;
  }
  std::string modelPath = inputPath;
  SmallString<128> quantized;
  std::optional<FileRemover> removeQuantized;
  if (!quantize.empty()) {
    if (sys::fs::createTemporaryFile("kiln-quantized", "onnx", quantized)) {
      errs() << "kiln-compile: error: cannot create a temporary file\n";
      return 1;
    }
    removeQuantized.emplace(quantized);
    if (!quantizeModel(argv[0], inputPath, std::string(quantized)))
      return 1;
    modelPath = std::string(quantized);
  }
  kiln::CompileResult result =
      kiln::compileFile(modelPath, outputPath, options);
  if (report)
    errs() << result.report;
  if (result.ok && printPipeline)
    outs() << result.pipeline;
  if (!result.ok) {
    errs() << "kiln-compile: error: " << result.error << "\n";
    return 1;
  }
  return 0;
}
