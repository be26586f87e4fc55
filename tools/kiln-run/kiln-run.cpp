//===- kiln-run.cpp - Run a compiled Kiln model from the command line -----===//
//
// kiln-run MODEL.so --input NAME=FILE ... [--output-dir DIR] [--repeat N]
//          [--warmup N] [--threads N] [--profile] [--json]
//
// Reads inputs from .npy or ONNX TensorProto files, runs the model through
// libkiln_runtime, writes each output as DIR/<name>.npy and reports latency
// and, with --profile, each kernel's time.
// Any error ends the program with one line "kiln-run: error: ..." on stderr.
//
//===----------------------------------------------------------------------===//

#include "TensorFile.h"

#include "kiln/runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

using namespace kiln;

namespace {

const char *const kUsage =
    R"(usage: kiln-run MODEL.so --input NAME=FILE ... [options]
       kiln-run --info MODEL.so

Runs a model compiled by kiln-compile and writes its outputs as .npy files.

  --input NAME=FILE   the value of input NAME, read from FILE: a NumPy .npy
                      file (C order, little-endian; f2 f4 f8 i1 i2 i4 i8 u1
                      u2 u4 u8 b1) or an ONNX TensorProto .pb file. Give one
                      per model input, in any order. When the model has
                      exactly one input, --input FILE is enough. For a bf16
                      input, a u2 file holding bf16 bit patterns is accepted.
  --output-dir DIR    where to write the outputs (default: ., created if
                      missing); output NAME
                      goes to DIR/NAME.npy, with every character outside
                      [A-Za-z0-9_.-] replaced by '_' (and "_<index>" added if
                      two outputs would get the same file). bf16 outputs are
                      written as u2 bit patterns. Each output has the shape
                      of the run, its sizes that the data decides (NonZero,
                      Unique, ...) included.
  --warmup N          untimed runs before the timed ones (default 0)
  --repeat N          timed runs, N >= 1 (default 1); outputs are those of
                      the last run
  --threads N         threads the model may use, N >= 1 (default:
                      KILN_NUM_THREADS if set, else the number of CPUs).
                      With more than one, kiln-run sets OMP_PROC_BIND=spread
                      (one OpenMP thread per core) unless OMP_PROC_BIND,
                      OMP_PLACES, KMP_AFFINITY or GOMP_CPU_AFFINITY is set
  --profile           time every kernel (loop nest) in each timed run and
                      print one line per kernel, slowest first: its median
                      time over the runs, its share of the sum of all
                      medians, its GFLOP/s (from the FLOP count the compiler
                      recorded; "-" when unknown), its name and the ONNX
                      nodes it computes; then the median time outside
                      kernels. The shares add up to 100%. The timed runs
                      then include two clock reads per kernel. A model
                      compiled before kernel profiling (ABI version 1) has
                      no kernel table: a note says so and only the time
                      outside kernels (all of it) is reported.
  --json              print one JSON object on stdout: {"outputs": {NAME:
                      PATH, ...}, "median_ms": ..., "min_ms": ...,
                      "max_ms": ..., "repeat": N, "threads": T}; with
                      --profile also "profile": {"total_ms": ..., "kernels":
                      [{"name", "source", "flops", "ms", "share", "gflops"}
                      ...] in the model's kernel order, "outside_ms": ...,
                      "outside_share": ...} (ms are medians, total_ms their
                      sum, shares fractions of it; gflops is null when the
                      count is unknown)
  --info              print the model's descriptor and exit, without running
                      it or needing its device: target, inputs, outputs,
                      workspace, kernels; for a GPU model also its device
                      images (architecture, format, size), constants and
                      each kernel's launch (grid, block, parameters)
  --help              print this text and exit

Options also take the form --option=VALUE. Exit status: 0 on success, 1 on
any error (one line "kiln-run: error: MESSAGE" on stderr), 2 on a usage error.
)";

// An error that ends the program: the message and the exit status.
struct Failure {
  std::string message;
  int exitCode = 1;
};

std::string oneLine(std::string text) {
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

int fail(const Failure &failure) {
  std::fprintf(stderr, "kiln-run: error: %s\n",
               oneLine(failure.message).c_str());
  return failure.exitCode;
}

struct Options {
  std::string model;
  std::vector<std::string> inputs; // NAME=FILE or FILE, as given
  std::string outputDir = ".";
  long repeat = 1;
  long warmup = 0;
  long threads = 0; // 0: the runtime's default
  bool json = false;
  bool profile = false;
  bool info = false;
  bool help = false;
};

bool parseCount(const std::string &text, long min, long max, long &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long parsed = std::strtol(text.c_str(), &end, 10);
  if (errno || *end || parsed < min || parsed > max)
    return false;
  value = parsed;
  return true;
}

bool parseArgs(int argc, char **argv, Options &options, Failure &failure) {
  failure.exitCode = 2;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0 || arg == "--") {
      if (!options.model.empty()) {
        failure.message = "unexpected argument '" + arg + "' (the model is '" +
                          options.model + "')";
        return false;
      }
      options.model = arg;
      continue;
    }
    std::string name = arg, value;
    bool hasValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      hasValue = true;
    }
    if (name == "--help" || name == "--info") {
      if (hasValue) {
        failure.message = name + " takes no value";
        return false;
      }
      (name == "--help" ? options.help : options.info) = true;
      continue;
    }
    if (name == "--json" || name == "--profile") {
      if (hasValue) {
        failure.message = name + " takes no value";
        return false;
      }
      (name == "--json" ? options.json : options.profile) = true;
      continue;
    }
    if (name != "--input" && name != "--output-dir" && name != "--repeat" &&
        name != "--warmup" && name != "--threads") {
      failure.message = "unknown option '" + name + "' (see --help)";
      return false;
    }
    if (!hasValue) {
      if (i + 1 >= argc) {
        failure.message = name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (name == "--input") {
      options.inputs.push_back(value);
    } else if (name == "--output-dir") {
      if (value.empty()) {
        failure.message = "--output-dir is empty";
        return false;
      }
      options.outputDir = value;
    } else {
      long min = name == "--warmup" ? 0 : 1;
      long max = name == "--threads" ? 4096 : 1000000000L;
      long *target = name == "--repeat"   ? &options.repeat
                     : name == "--warmup" ? &options.warmup
                                          : &options.threads;
      if (!parseCount(value, min, max, *target)) {
        failure.message = name + " expects an integer from " +
                          std::to_string(min) + " to " + std::to_string(max) +
                          ", got '" + value + "'";
        return false;
      }
    }
  }
  if (!options.help && options.model.empty()) {
    failure.message = "no model given (see --help)";
    return false;
  }
  failure.exitCode = 1;
  return true;
}

// Owns a kiln_status until it is turned into a message.
std::string takeMessage(kiln_status status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

struct ModelHandle {
  kiln_model *model = nullptr;
  ~ModelHandle() { kiln_model_release(model); }
};

std::string sanitizeFileName(const char *name) {
  std::string result;
  for (const char *c = name; *c; ++c) {
    bool keep = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
    result += keep ? *c : '_';
  }
  // "", "." and ".." would not name a file in DIR.
  if (result.empty() || result == "." || result == "..")
    result = "_" + result;
  return result;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}

// Loads every input file and orders them as the model's inputs.
bool loadInputs(const Options &options, kiln_model *model,
                std::vector<HostTensor> &tensors, Failure &failure) {
  size_t numInputs = kiln_model_num_inputs(model);
  tensors.clear();
  tensors.resize(numInputs);
  std::vector<bool> given(numInputs, false);
  for (const std::string &spec : options.inputs) {
    size_t index = 0;
    std::string file;
    size_t eq = spec.find('=');
    kiln_status status =
        eq == std::string::npos
            ? kiln_status(nullptr)
            : kiln_model_find_input(model, spec.substr(0, eq).c_str(), &index);
    if (eq != std::string::npos && !status) {
      file = spec.substr(eq + 1);
    } else if (numInputs == 1) {
      // A single-input model takes --input FILE (even a FILE with '=').
      kiln_status_free(status);
      index = 0;
      file = spec;
    } else {
      kiln_status_free(status);
      failure.message =
          eq == std::string::npos
              ? "--input '" + spec + "' names no input; the model has " +
                    std::to_string(numInputs) + " inputs, use --input NAME=FILE"
              : "the model has no input named '" + spec.substr(0, eq) + "'";
      return false;
    }
    kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
    kiln_status_free(kiln_model_input_info(model, index, &info));
    if (given[index]) {
      failure.message = "input '" + std::string(info.name) + "' is given twice";
      return false;
    }
    given[index] = true;
    if (std::string error = readTensorFile(file, tensors[index]);
        !error.empty()) {
      failure.message = "input '" + std::string(info.name) + "': " + error;
      return false;
    }
    // bf16 and the 8-, 4- and 2-bit types have no NumPy dtype: accept their
    // bit patterns as u16 and u8 (the ABI's bytes, model_abi.h).
    if (info.dtype == KILN_DTYPE_BF16 && tensors[index].dtype == KILN_DTYPE_U16)
      tensors[index].dtype = KILN_DTYPE_BF16;
    if (info.dtype >= KILN_DTYPE_F8E4M3FN && info.dtype <= KILN_DTYPE_I2 &&
        tensors[index].dtype == KILN_DTYPE_U8)
      tensors[index].dtype = info.dtype;
  }
  for (size_t i = 0; i < numInputs; ++i) {
    if (given[i])
      continue;
    kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
    kiln_status_free(kiln_model_input_info(model, i, &info));
    failure.message = "missing input '" + std::string(info.name) +
                      "' (give it with --input " + info.name + "=FILE)";
    return false;
  }
  return true;
}

// One kernel's median time per profiled run.
struct KernelTime {
  size_t index = 0; // in the model's kernel table
  kiln_kernel_info info = KILN_KERNEL_INFO_INIT;
  double ms = 0;
  double gflops() const { return double(info.flops) / (ms * 1e6); }
};

double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The median over the runs of every kernel's time, in the model's kernel
// order, and of the time outside kernels (a run's time minus its kernels');
// `totalMs` is the sum of these medians. Medians keep a kernel that a busy
// machine preempted in one run from counting that run's delay.
std::vector<KernelTime> summarizeProfile(
    kiln_model *model, const std::vector<std::vector<uint64_t>> &runNs,
    const std::vector<double> &times, double &totalMs, double &outsideMs) {
  size_t numKernels = kiln_model_num_kernels(model);
  std::vector<KernelTime> kernels(numKernels);
  std::vector<double> outside;
  for (size_t r = 0; r < runNs.size(); ++r) {
    double kernelMs = 0;
    for (uint64_t ns : runNs[r])
      kernelMs += double(ns) / 1e6;
    outside.push_back(std::max(0.0, times[r] - kernelMs));
  }
  outsideMs = medianOf(outside);
  totalMs = outsideMs;
  for (size_t k = 0; k < numKernels; ++k) {
    kernels[k].index = k;
    kiln_status_free(kiln_model_kernel_info(model, k, &kernels[k].info));
    std::vector<double> ms;
    for (const std::vector<uint64_t> &run : runNs)
      ms.push_back(double(run[k]) / 1e6);
    kernels[k].ms = medianOf(ms);
    totalMs += kernels[k].ms;
  }
  return kernels;
}

void printProfile(std::vector<KernelTime> kernels, double totalMs,
                  double outsideMs, long runs) {
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelTime &a, const KernelTime &b) {
              return a.ms != b.ms ? a.ms > b.ms : a.index < b.index;
            });
  std::printf("profile: %zu kernel%s, medians of %ld run%s: %.4f ms in all\n",
              kernels.size(), kernels.size() == 1 ? "" : "s", runs,
              runs == 1 ? "" : "s", totalMs);
  std::printf("%7s %10s %8s  %s\n", "share", "ms", "GFLOP/s",
              "kernel (ONNX nodes)");
  auto share = [&](double ms) { return totalMs > 0 ? 100 * ms / totalMs : 0; };
  for (const KernelTime &kernel : kernels) {
    char gflops[32] = "-";
    if (kernel.info.flops && kernel.ms > 0)
      std::snprintf(gflops, sizeof(gflops), "%.1f", kernel.gflops());
    std::string name = kernel.info.name;
    if (*kernel.info.source)
      name += std::string(" (") + kernel.info.source + ")";
    std::printf("%6.2f%% %10.4f %8s  %s\n", share(kernel.ms), kernel.ms, gflops,
                name.c_str());
  }
  std::printf("%6.2f%% %10.4f %8s  %s\n", share(outsideMs), outsideMs, "-",
              "(outside kernels)");
}

const char *imageFormatName(int32_t format) {
  switch (format) {
  case KILN_ABI_IMAGE_CUBIN:
    return "cubin";
  case KILN_ABI_IMAGE_PTX:
    return "ptx";
  case KILN_ABI_IMAGE_EMULATION:
    return "emulation";
  default:
    return "?";
  }
}

// A tensor's shape as --info prints it: symbolic dimensions by name.
std::string shapeText(const kiln_model *model, const kiln_tensor_info &info) {
  std::string text = "[";
  for (int32_t i = 0; i < info.rank; ++i) {
    kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
    if (info.dim_symbols && info.dim_symbols[i] >= 0 &&
        !kiln_model_symbol_info(model, size_t(info.dim_symbols[i]), &symbol))
      text += (i ? "," : "") + std::string(symbol.name);
    else
      text += (i ? "," : "") + std::to_string(info.shape[i]);
  }
  return text + "]";
}

// kiln-run --info: the descriptor, as the runtime checked it.
void printInfo(const std::string &path, const kiln_model *model) {
  const kiln_abi_model *d = kiln_model_descriptor(model);
  bool gpu = d->abi_version >= 3 && d->device == KILN_ABI_DEVICE_CUDA;
  std::printf("model: %s\n", path.c_str());
  std::printf("abi version: %u, producer: %s\n", d->abi_version, d->producer);
  std::printf("device: %s\n", gpu ? "cuda (NVIDIA GPU)" : "cpu");
  std::printf("host: %s, cpu %s, features %s\n", d->target_triple, d->cpu,
              *d->cpu_features ? d->cpu_features : "(none)");
  auto tensors = [&](const char *kind, size_t count, auto infoFn) {
    std::printf("%s (%zu):\n", kind, count);
    for (size_t i = 0; i < count; ++i) {
      kiln_tensor_info info = KILN_TENSOR_INFO_INIT;
      kiln_status_free(infoFn(model, i, &info));
      const char *dtype = kiln_dtype_name(info.dtype);
      std::printf("  %s: %s %s\n", info.name, dtype ? dtype : "?",
                  shapeText(model, info).c_str());
    }
  };
  if (size_t numSymbols = kiln_model_num_symbols(model)) {
    std::printf("symbolic dimensions (%zu):\n", numSymbols);
    for (size_t k = 0; k < numSymbols; ++k) {
      kiln_symbol_info symbol = KILN_SYMBOL_INFO_INIT;
      kiln_status_free(kiln_model_symbol_info(model, k, &symbol));
      std::printf("  %s: %lld..%lld%s\n", symbol.name,
                  static_cast<long long>(symbol.min),
                  static_cast<long long>(symbol.max),
                  symbol.data_dependent ? " (decided by the run)" : "");
    }
  }
  tensors("inputs", kiln_model_num_inputs(model), kiln_model_input_info);
  tensors("outputs", kiln_model_num_outputs(model), kiln_model_output_info);
  std::printf("workspace: %llu bytes%s\n",
              static_cast<unsigned long long>(d->workspace_size),
              gpu ? " (device memory)" : "");
  if (gpu) {
    std::printf("constants: %llu bytes\n",
                static_cast<unsigned long long>(d->constants_size));
    std::printf("images (%d):\n", d->num_device_images);
    for (int32_t i = 0; i < d->num_device_images; ++i) {
      const kiln_abi_device_image &image = d->device_images[i];
      std::printf("  %s %s, %llu bytes\n", image.arch,
                  imageFormatName(image.format),
                  static_cast<unsigned long long>(image.size));
    }
  }
  size_t numKernels = kiln_model_num_kernels(model);
  std::printf("kernels (%zu):\n", numKernels);
  for (size_t k = 0; k < numKernels; ++k) {
    kiln_kernel_info info = KILN_KERNEL_INFO_INIT;
    kiln_status_free(kiln_model_kernel_info(model, k, &info));
    std::printf("  %s", info.name);
    if (gpu) {
      const kiln_abi_gpu_kernel &launch = d->gpu_kernels[k];
      std::printf(": grid [%u,%u,%u], block [%u,%u,%u], %u params",
                  launch.grid[0], launch.grid[1], launch.grid[2],
                  launch.block[0], launch.block[1], launch.block[2],
                  launch.num_params);
    }
    std::printf("%s%llu flops%s%s\n", gpu ? ", " : ": ",
                static_cast<unsigned long long>(info.flops),
                *info.source ? ", " : "", info.source);
  }
}

/// Spreads the OpenMP threads of a multithreaded run over distinct cores
/// (OMP_PROC_BIND=spread) unless the environment already says where threads
/// go. Unbound, Linux sometimes left the worker on the core of the main
/// thread, both spinning in turn at each barrier: on a two-core machine
/// kiln_cnn took 1.4 ms at two threads in about half the processes instead
/// of 0.08 ms, and under load from another process 1.5 ms instead of 0.18.
/// Set before the model (and its OpenMP runtime) is loaded; kiln-run's own
/// process only, the library never changes its caller's environment.
void bindOpenMPThreads(long requested) {
  for (const char *name :
       {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY"})
    if (std::getenv(name))
      return;
  long threads = requested;
  if (threads == 0) {
    const char *env = std::getenv("KILN_NUM_THREADS");
    threads = env ? std::atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
  }
  if (threads > 1)
    setenv("OMP_PROC_BIND", "spread", /*overwrite=*/0);
}

int runTool(int argc, char **argv) {
  Options options;
  Failure failure;
  if (!parseArgs(argc, argv, options, failure))
    return fail(failure);
  if (options.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }

  kiln_model_options modelOptions;
  kiln_model_options_init(&modelOptions);
  modelOptions.num_threads = int32_t(options.threads);
  if (options.info) {
    modelOptions.device = KILN_DEVICE_NONE;
    ModelHandle handle;
    if (kiln_status status = kiln_model_open(options.model.c_str(),
                                             &modelOptions, &handle.model))
      return fail({takeMessage(status)});
    printInfo(options.model, handle.model);
    return 0;
  }
  bindOpenMPThreads(options.threads);
  ModelHandle handle;
  if (kiln_status status =
          kiln_model_open(options.model.c_str(), &modelOptions, &handle.model))
    return fail({takeMessage(status)});
  kiln_model *model = handle.model;

  std::vector<HostTensor> inputs;
  if (!loadInputs(options, model, inputs, failure))
    return fail(failure);
  std::vector<kiln_tensor> inputArgs;
  for (HostTensor &t : inputs)
    inputArgs.push_back(KILN_TENSOR_INIT(t.dtype, int32_t(t.shape.size()),
                                         t.shape.data(), t.data(),
                                         t.byteSize()));

  size_t numOutputs = kiln_model_num_outputs(model);
  std::vector<kiln_tensor_info> outputInfos(numOutputs, KILN_TENSOR_INFO_INIT);
  std::vector<HostTensor> outputs(numOutputs);
  std::vector<kiln_tensor> outputArgs;
  // Each output's shape in this run (the inputs decide its symbolic
  // dimensions), and its bytes.
  // A data-dependent dimension is at its largest here; each run writes the
  // run's shape to runShapes.
  std::vector<std::vector<int64_t>> outputShapes(numOutputs);
  std::vector<std::vector<int64_t>> runShapes(numOutputs);
  std::vector<size_t> outputBytes(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    kiln_status_free(kiln_model_output_info(model, i, &outputInfos[i]));
    const kiln_tensor_info &info = outputInfos[i];
    outputShapes[i].resize(size_t(info.rank));
    if (kiln_status status = kiln_model_output_shape(
            model, inputArgs.data(), inputArgs.size(), i,
            outputShapes[i].data(), outputShapes[i].size(), &outputBytes[i]))
      return fail({takeMessage(status)});
    if (!outputs[i].allocate(outputBytes[i]))
      return fail(
          {"out of memory for output '" + std::string(info.name) + "'"});
    outputArgs.push_back(KILN_TENSOR_INIT(info.dtype, info.rank,
                                          outputShapes[i].data(),
                                          outputs[i].data(), outputBytes[i]));
    runShapes[i].resize(size_t(info.rank));
    outputArgs.back().out_shape = runShapes[i].data();
  }

  size_t numKernels = kiln_model_num_kernels(model);
  if (options.profile && numKernels == 0)
    std::fprintf(stderr,
                 "kiln-run: note: the model has no kernel table (ABI version "
                 "%u; kernel profiling needs version 2): --profile reports "
                 "only the total\n",
                 kiln_model_descriptor(model)->abi_version);
  std::vector<std::vector<uint64_t>> runNs; // per timed run, per kernel
  auto runOnce = [&](bool timed) -> kiln_status {
    if (timed && options.profile) {
      runNs.emplace_back(numKernels, 0);
      return kiln_model_run_profiled(model, inputArgs.data(), inputArgs.size(),
                                     outputArgs.data(), outputArgs.size(),
                                     runNs.back().data(), numKernels);
    }
    return kiln_model_run(model, inputArgs.data(), inputArgs.size(),
                          outputArgs.data(), outputArgs.size());
  };
  for (long i = 0; i < options.warmup; ++i)
    if (kiln_status status = runOnce(false))
      return fail({takeMessage(status)});
  std::vector<double> times;
  for (long i = 0; i < options.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    kiln_status status = runOnce(true);
    auto end = std::chrono::steady_clock::now();
    if (status)
      return fail({takeMessage(status)});
    times.push_back(
        std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median =
      n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;

  // Write the outputs; names that collide after sanitising get their index.
  std::error_code mkdirError;
  std::filesystem::create_directories(options.outputDir, mkdirError);
  if (mkdirError)
    return fail({"cannot create the output folder '" + options.outputDir +
                 "': " + mkdirError.message()});
  std::vector<std::string> paths;
  std::vector<std::string> usedNames;
  for (size_t i = 0; i < numOutputs; ++i) {
    const kiln_tensor_info &info = outputInfos[i];
    std::string file = sanitizeFileName(info.name);
    if (std::find(usedNames.begin(), usedNames.end(), file) != usedNames.end())
      file += "_" + std::to_string(i);
    usedNames.push_back(file);
    std::string path = options.outputDir;
    if (path.back() != '/')
      path += '/';
    path += file + ".npy";
    // The last run's shape; its elements lead the buffer.
    size_t bytes = outputBytes[i];
    for (size_t d = 0; d < runShapes[i].size(); ++d)
      if (outputShapes[i][d] != 0)
        bytes = bytes / size_t(outputShapes[i][d]) * size_t(runShapes[i][d]);
    if (std::string error = writeNpyFile(path, info.dtype, runShapes[i].data(),
                                         info.rank, outputs[i].data(), bytes);
        !error.empty())
      return fail({"output '" + std::string(info.name) + "': " + error});
    paths.push_back(path);
  }

  int32_t threads = kiln_model_num_threads(model);
  std::vector<KernelTime> profile;
  double totalMs = 0, outsideMs = 0;
  if (options.profile)
    profile = summarizeProfile(model, runNs, times, totalMs, outsideMs);
  if (options.json) {
    std::string text = "{\"outputs\": {";
    for (size_t i = 0; i < numOutputs; ++i)
      text += (i ? ", " : "") + jsonString(outputInfos[i].name) + ": " +
              jsonString(paths[i]);
    char numbers[256];
    std::snprintf(numbers, sizeof(numbers),
                  "}, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": "
                  "%.6f, \"repeat\": %ld, \"threads\": %d}",
                  median, sorted.front(), sorted.back(), options.repeat,
                  threads);
    text += numbers;
    if (options.profile) {
      text.pop_back();
      text += ", \"profile\": {";
      std::snprintf(numbers, sizeof(numbers), "\"total_ms\": %.6f", totalMs);
      text += numbers;
      text += ", \"kernels\": [";
      for (size_t k = 0; k < profile.size(); ++k) {
        const KernelTime &kernel = profile[k];
        text += (k ? ", " : "") + std::string("{\"name\": ") +
                jsonString(kernel.info.name) +
                ", \"source\": " + jsonString(kernel.info.source);
        char gflops[32] = "null";
        if (kernel.info.flops && kernel.ms > 0)
          std::snprintf(gflops, sizeof(gflops), "%.3f", kernel.gflops());
        std::snprintf(numbers, sizeof(numbers),
                      ", \"flops\": %llu, \"ms\": %.6f, \"share\": %.6f, "
                      "\"gflops\": %s}",
                      static_cast<unsigned long long>(kernel.info.flops),
                      kernel.ms, totalMs > 0 ? kernel.ms / totalMs : 0.0,
                      gflops);
        text += numbers;
      }
      std::snprintf(numbers, sizeof(numbers),
                    "], \"outside_ms\": %.6f, \"outside_share\": %.6f}}",
                    outsideMs, totalMs > 0 ? outsideMs / totalMs : 0.0);
      text += numbers;
    }
    std::printf("%s\n", text.c_str());
  } else {
    for (size_t i = 0; i < numOutputs; ++i) {
      const kiln_tensor_info &info = outputInfos[i];
      std::printf(
          "output '%s': %s %s -> %s\n", info.name, kiln_dtype_name(info.dtype),
          formatShape(info.shape, size_t(info.rank)).c_str(), paths[i].c_str());
    }
    std::printf("%ld run%s (after %ld warm-up), %d thread%s: median %.3f ms, "
                "min %.3f ms, max %.3f ms\n",
                options.repeat, options.repeat == 1 ? "" : "s", options.warmup,
                threads, threads == 1 ? "" : "s", median, sorted.front(),
                sorted.back());
    if (options.profile)
      printProfile(profile, totalMs, outsideMs, options.repeat);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return runTool(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail({"out of memory"});
  } catch (const std::exception &e) {
    return fail({std::string("internal error: ") + e.what()});
  }
}
