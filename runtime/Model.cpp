//===- Model.cpp - Opening, checking and running a compiled model ---------===//
//
// The C API of kiln/runtime.h for models. kiln_model_open trusts nothing in
// the object it loads beyond the two ABI symbols: the descriptor is checked
// field by field before anything else reads it, and kiln_model_run checks
// every argument against that descriptor before calling the model's code.
//
//===----------------------------------------------------------------------===//

#include "CpuFeatures.h"
#include "ModelCall.h"
#include "ModelFile.h"
#include "Status.h"
#include "cuda/GpuModel.h"

#include "kiln/runtime.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kiln::runtime;

namespace {

// Limits on a descriptor, far above any real model, that keep every size
// computation in range.
constexpr int32_t kMaxRank = 64;
constexpr int64_t kMaxTensors = 1 << 20;
constexpr int64_t kMaxKernels = 1 << 20;
constexpr uint64_t kMaxWorkspaceAlign = 1u << 20;
constexpr int32_t kMaxThreads = 4096;
constexpr size_t kMinWorkspaceAlign = 64;

using DescribeFn = const kiln_abi_model *(*)();
using RunFn = int32_t (*)(const kiln_abi_run_args *);

// Formats `rank` dimensions as "[1,3,224,224]".
std::string formatShape(const int64_t *shape, int32_t rank) {
  std::string text = "[";
  for (int32_t i = 0; i < rank; ++i) {
    if (i)
      text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

const char *dtypeNameOr(int32_t dtype, const char *fallback) {
  const char *name = kiln_dtype_name(dtype);
  return name ? name : fallback;
}

// The default thread count: KILN_NUM_THREADS if valid, else the online CPUs.
int32_t defaultNumThreads() {
  if (const char *env = std::getenv("KILN_NUM_THREADS")) {
    char *end = nullptr;
    errno = 0;
    long value = std::strtol(env, &end, 10);
    if (errno == 0 && end != env && *end == '\0' && value >= 1 &&
        value <= kMaxThreads)
      return static_cast<int32_t>(value);
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1)
    return 1;
  return cpus > kMaxThreads ? kMaxThreads : static_cast<int32_t>(cpus);
}

// One tensor's shape as the C API gives it: -1 for a symbolic dimension,
// and which symbol each dimension is (-1 for a static one).
struct TensorDims {
  std::vector<int64_t> shape;
  std::vector<int32_t> symbols;
  bool symbolic = false;
  bool dataDependent = false; // a dimension is one the run decides
};

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};

} // namespace

struct kiln_model {
  std::atomic<int64_t> references{1};
  void *library = nullptr;
  const kiln_abi_model *descriptor = nullptr;
  RunFn run = nullptr;
  std::vector<kiln_tensor_info> inputs;
  std::vector<kiln_tensor_info> outputs;
  // The shapes and dim_symbols that inputs and outputs point to: their -1
  // entries are symbolic (version 4).
  std::vector<TensorDims> inputDims, outputDims;
  std::vector<kiln_symbol_info> symbols; // empty before version 4
  std::vector<kiln_kernel_info> kernels; // empty for a version 1 model
  void *workspace = nullptr;
  GpuModelPtr gpu; // a CUDA model's device state; null for a CPU model
  bool describeOnly = false; // opened with KILN_DEVICE_NONE
  std::mutex mutex;          // serialises runs, and runs with set_num_threads
  int32_t numThreads = 1;

  ~kiln_model() {
    gpu.reset(); // before the code it came from goes
    std::free(workspace);
    if (library)
      dlclose(library);
  }
};

namespace {

// Checks one tensor of the descriptor and fills `info`. `kind` is "input" or
// "output".
kiln_status checkDescriptorTensor(const kiln_abi_tensor &tensor,
                                  const char *kind, int64_t index,
                                  const std::vector<kiln_symbol_info> &symbols,
                                  kiln_tensor_info &info, TensorDims &dims) {
  if (!tensor.name)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %s #%lld has no name", kind,
                      static_cast<long long>(index));
  // Names come from the object: bound what we read of them.
  if (strnlen(tensor.name, 4096) == 4096)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %s #%lld has a name longer than 4095 "
                      "bytes",
                      kind, static_cast<long long>(index));
  size_t elementSize = kiln_dtype_size(tensor.dtype);
  if (elementSize == 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %s '%s' (#%lld) has unknown dtype %d",
                      kind, tensor.name, static_cast<long long>(index),
                      tensor.dtype);
  if (tensor.rank < 0 || tensor.rank > kMaxRank)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %s '%s' (#%lld) has rank %d, expected "
                      "0 to %d",
                      kind, tensor.name, static_cast<long long>(index),
                      tensor.rank, kMaxRank);
  if (tensor.rank > 0 && !tensor.shape)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %s '%s' (#%lld) has rank %d and no "
                      "shape",
                      kind, tensor.name, static_cast<long long>(index),
                      tensor.rank);
  size_t bytes = elementSize;
  dims.shape.assign(tensor.shape, tensor.shape + tensor.rank);
  dims.symbols.assign(static_cast<size_t>(tensor.rank), -1);
  for (int32_t d = 0; d < tensor.rank; ++d) {
    int64_t dim = tensor.shape[d];
    // A negative entry names a symbolic dimension (version 4); its largest
    // size counts for the byte size.
    if (dim < 0 && -(dim + 1) < static_cast<int64_t>(symbols.size())) {
      auto symbol = static_cast<int32_t>(-(dim + 1));
      dims.shape[d] = -1;
      dims.symbols[d] = symbol;
      dims.symbolic = true;
      dim = symbols[symbol].max;
    }
    if (dim < 0)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: %s '%s' (#%lld) has negative "
                        "dimension %lld in shape %s",
                        kind, tensor.name, static_cast<long long>(index),
                        static_cast<long long>(dim),
                        formatShape(tensor.shape, tensor.rank).c_str());
    if (dim != 0 && bytes > SIZE_MAX / static_cast<uint64_t>(dim))
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: %s '%s' (#%lld) of shape %s is too "
                        "large",
                        kind, tensor.name, static_cast<long long>(index),
                        formatShape(tensor.shape, tensor.rank).c_str());
    bytes *= static_cast<size_t>(dim);
  }
  info.struct_size = sizeof(info);
  info.name = tensor.name;
  info.dtype = tensor.dtype;
  info.rank = tensor.rank;
  info.shape = dims.shape.data();
  info.byte_size = bytes;
  info.dim_symbols = dims.symbols.data();
  return nullptr;
}

kiln_status checkDescriptorTensors(int64_t count,
                                   const kiln_abi_tensor *tensors,
                                   const char *kind,
                                   const std::vector<kiln_symbol_info> &symbols,
                                   std::vector<kiln_tensor_info> &infos,
                                   std::vector<TensorDims> &dims) {
  if (count < 0 || count > kMaxTensors)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %lld %ss, expected 0 to %lld",
                      static_cast<long long>(count), kind,
                      static_cast<long long>(kMaxTensors));
  if (count > 0 && !tensors)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %lld %ss and no %s array",
                      static_cast<long long>(count), kind, kind);
  infos.resize(static_cast<size_t>(count));
  dims.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    if (kiln_status status = checkDescriptorTensor(tensors[i], kind, i, symbols,
                                                   infos[i], dims[i]))
      return status;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < i; ++j)
      if (std::strcmp(infos[i].name, infos[j].name) == 0)
        return makeStatus(KILN_STATUS_INVALID_MODEL,
                          "invalid model: %ss #%lld and #%lld are both named "
                          "'%s'",
                          kind, static_cast<long long>(j),
                          static_cast<long long>(i), infos[i].name);
  return nullptr;
}

// Checks that every feature of the comma-separated `features` is known, then
// that the running CPU has it. Unknown names are reported first, so the
// message does not depend on the machine.
kiln_status checkCpuFeatures(std::string_view features) {
  std::vector<std::string_view> names;
  while (!features.empty()) {
    size_t comma = features.find(',');
    std::string_view name = features.substr(0, comma);
    features = comma == std::string_view::npos ? std::string_view()
                                               : features.substr(comma + 1);
    while (!name.empty() && name.front() == ' ')
      name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ')
      name.remove_suffix(1);
    if (!name.empty())
      names.push_back(name);
  }
  for (std::string_view name : names)
    if (hostSupportsCpuFeature(name) < 0)
      return makeStatus(KILN_STATUS_UNSUPPORTED_CPU,
                        "model requires CPU feature '%.*s', which this "
                        "runtime cannot check on %s (known: %s)",
                        static_cast<int>(name.size()), name.data(),
                        archName(hostArch()), knownCpuFeatures(hostArch()));
  for (std::string_view name : names)
    if (hostSupportsCpuFeature(name) == 0)
      return makeStatus(KILN_STATUS_UNSUPPORTED_CPU,
                        "model requires CPU feature '%.*s', which this CPU "
                        "(or OS) does not support",
                        static_cast<int>(name.size()), name.data());
  return nullptr;
}

// Checks the kernel table of a version 2 descriptor and fills `infos`.
kiln_status checkDescriptorKernels(const kiln_abi_model *d,
                                   std::vector<kiln_kernel_info> &infos) {
  if (d->num_kernels < 0 || d->num_kernels > kMaxKernels)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %lld kernels, expected 0 to %lld",
                      static_cast<long long>(d->num_kernels),
                      static_cast<long long>(kMaxKernels));
  if (d->num_kernels > 0 && !d->kernels)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %lld kernels and no kernel array",
                      static_cast<long long>(d->num_kernels));
  infos.resize(static_cast<size_t>(d->num_kernels));
  for (int64_t i = 0; i < d->num_kernels; ++i) {
    const kiln_abi_kernel &kernel = d->kernels[i];
    if (!kernel.name || !kernel.source || strnlen(kernel.name, 4096) == 4096 ||
        strnlen(kernel.source, 4096) == 4096)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: kernel #%lld has no name or source, "
                        "or one longer than 4095 bytes",
                        static_cast<long long>(i));
    infos[i] = {sizeof(kiln_kernel_info), kernel.name, kernel.source,
                kernel.flops};
  }
  return nullptr;
}

// Checks the run-time index checks of a version 5 descriptor, whose
// entries a failed run's message reads.
kiln_status checkDescriptorChecks(const kiln_abi_model *d) {
  if (d->num_checks < 0 || (d->num_checks > 0 && !d->checks) ||
      d->reserved3 != 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %d index checks, array %s, reserved "
                      "field %d",
                      d->num_checks, d->checks ? "present" : "missing",
                      d->reserved3);
  for (int32_t i = 0; i < d->num_checks; ++i) {
    const kiln_abi_check &check = d->checks[i];
    if (!check.source || !check.what || strnlen(check.source, 4096) == 4096 ||
        strnlen(check.what, 4096) == 4096 || check.low > check.high)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: index check #%d has no source or "
                        "description, one longer than 4095 bytes, or an "
                        "empty range",
                        i);
  }
  return nullptr;
}

// The largest size of a symbolic dimension (kiln-compile's limit).
constexpr int64_t kMaxSymbolSize = (int64_t(1) << 31) - 1;
constexpr int32_t kMaxSymbols = 64;

// Checks the symbolic dimensions of a version 4 descriptor and fills
// `infos`.
kiln_status checkDescriptorSymbols(const kiln_abi_model *d,
                                   std::vector<kiln_symbol_info> &infos) {
  if (d->num_symbols < 0 || d->num_symbols > kMaxSymbols ||
      (d->num_symbols > 0 && !d->symbols) || d->reserved2 != 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: %d symbolic dimensions, expected 0 to "
                      "%d with their array",
                      d->num_symbols, kMaxSymbols);
  for (int32_t i = 0; i < d->num_symbols; ++i) {
    const kiln_abi_symbol &symbol = d->symbols[i];
    // Version 6: a size the run decides, from 0.
    bool fromData =
        d->abi_version >= 6 && symbol.kind == KILN_ABI_SYMBOL_RESULT;
    // Version 8: a size the code reads, which the caller chooses as for a
    // repeated batch.
    bool read = d->abi_version >= 8 && symbol.kind == KILN_ABI_SYMBOL_DIM;
    if (symbol.kind != KILN_ABI_SYMBOL_REPEAT && !fromData && !read)
      return makeStatus(KILN_STATUS_ABI_MISMATCH,
                        "symbolic dimension #%d is of kind %d, which this "
                        "runtime does not know; update the runtime",
                        i, symbol.kind);
    int64_t min = fromData ? 0 : 1;
    bool badMin = fromData ? symbol.min != 0 : symbol.min < 1;
    if (!symbol.name || strnlen(symbol.name, 4096) == 4096 || badMin ||
        symbol.max < symbol.min || symbol.max > kMaxSymbolSize ||
        symbol.reserved != 0)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: symbolic dimension #%d has no name, "
                        "or bounds outside %lld <= min <= max <= %lld",
                        i, static_cast<long long>(min),
                        static_cast<long long>(kMaxSymbolSize));
    infos.push_back({sizeof(kiln_symbol_info), symbol.name, symbol.min,
                     symbol.max, fromData ? 1 : 0});
  }
  return nullptr;
}

kiln_status checkDescriptor(const kiln_abi_model *d, kiln_model &model) {
  if (d->abi_version < KILN_ABI_MIN_VERSION ||
      d->abi_version > KILN_ABI_VERSION)
    return makeStatus(KILN_STATUS_ABI_MISMATCH,
                      "model ABI version %u, but this runtime loads versions "
                      "%u to %u; recompile the model with a matching Kiln",
                      d->abi_version, KILN_ABI_MIN_VERSION, KILN_ABI_VERSION);
  if (d->reserved != 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: reserved field is %u, expected 0",
                      d->reserved);
  if (!d->target_triple)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: no target triple");
  if (!d->cpu_features)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: no CPU feature list");
  if (strnlen(d->target_triple, 256) == 256 ||
      strnlen(d->cpu_features, 65536) == 65536)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: target triple or CPU feature list too "
                      "long");
  Arch arch = archOfTriple(d->target_triple);
  if (arch != hostArch())
    return makeStatus(KILN_STATUS_UNSUPPORTED_CPU,
                      "model compiled for '%s' (%s), but this machine is %s",
                      d->target_triple, archName(arch), archName(hostArch()));
  if (kiln_status status = checkCpuFeatures(d->cpu_features))
    return status;
  // Version 4: the symbolic dimensions that shapes name. (A GPU model
  // runs its batch whole: the compiler gives it only sizes that the data
  // decides.)
  if (d->abi_version >= 4) {
    if (kiln_status status = checkDescriptorSymbols(d, model.symbols))
      return status;
    if (d->device != KILN_ABI_DEVICE_CPU &&
        std::any_of(model.symbols.begin(), model.symbols.end(),
                    [](const auto &symbol) { return !symbol.data_dependent; }))
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: a GPU model with symbolic "
                        "dimensions, which this runtime does not run");
  }
  if (kiln_status status =
          checkDescriptorTensors(d->num_inputs, d->inputs, "input",
                                 model.symbols, model.inputs, model.inputDims))
    return status;
  if (kiln_status status = checkDescriptorTensors(
          d->num_outputs, d->outputs, "output", model.symbols, model.outputs,
          model.outputDims))
    return status;
  // Every symbol the caller chooses takes its size from an input, and a
  // repeated one leads (one the code reads may be anywhere); one the data
  // decides is in outputs only.
  for (size_t k = 0; k < model.symbols.size(); ++k) {
    bool fromInput = false, leads = true;
    for (const auto *list : {&model.inputDims, &model.outputDims})
      for (const TensorDims &dims : *list)
        for (size_t d = 0; d < dims.symbols.size(); ++d)
          if (dims.symbols[d] == static_cast<int32_t>(k)) {
            fromInput |= list == &model.inputDims;
            leads &= d == 0;
          }
    const char *problem = nullptr;
    if (model.symbols[k].data_dependent) {
      problem = fromInput ? "decided by the run, but in an input" : nullptr;
      for (TensorDims &dims : model.outputDims)
        dims.dataDependent |=
            std::find(dims.symbols.begin(), dims.symbols.end(), int32_t(k)) !=
            dims.symbols.end();
    } else if (!fromInput ||
               (!leads && d->symbols[k].kind == KILN_ABI_SYMBOL_REPEAT))
      problem = !fromInput ? "in no input" : "not the first dimension";
    if (problem)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: symbolic dimension '%s' is %s",
                        model.symbols[k].name, problem);
  }
  // Version 5: the run-time index checks.
  if (d->abi_version >= 5)
    if (kiln_status status = checkDescriptorChecks(d))
      return status;
  // Version 1 descriptors end before the kernel table: do not read it.
  if (d->abi_version >= 2)
    if (kiln_status status = checkDescriptorKernels(d, model.kernels))
      return status;
  // Version 3: the device, and a CUDA model's images and launches.
  if (d->abi_version >= 3) {
    if (d->device == KILN_ABI_DEVICE_CUDA) {
      if (kiln_status status = checkGpuDescriptor(d))
        return status;
    } else if (d->device != KILN_ABI_DEVICE_CPU || d->num_device_images != 0 ||
               d->gpu_kernels || d->constants_size != 0) {
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: device %d with %d device images",
                        d->device, d->num_device_images);
    }
  }
  if (d->workspace_align > kMaxWorkspaceAlign ||
      (d->workspace_align & (d->workspace_align - 1)) != 0)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: workspace alignment %llu is not a power "
                      "of 2 up to %llu",
                      static_cast<unsigned long long>(d->workspace_align),
                      static_cast<unsigned long long>(kMaxWorkspaceAlign));
  return nullptr;
}

// Allocates the workspace: aligned to max(workspace_align, 64), its size
// rounded up to that alignment as aligned_alloc requires.
kiln_status allocateWorkspace(const kiln_abi_model *d, kiln_model &model) {
  if (d->workspace_size == 0)
    return nullptr;
  size_t align = d->workspace_align > kMinWorkspaceAlign
                     ? static_cast<size_t>(d->workspace_align)
                     : kMinWorkspaceAlign;
  if (d->workspace_size > SIZE_MAX - align)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      "cannot allocate a workspace of %llu bytes",
                      static_cast<unsigned long long>(d->workspace_size));
  size_t size =
      (static_cast<size_t>(d->workspace_size) + align - 1) & ~(align - 1);
  model.workspace = std::aligned_alloc(align, size);
  if (!model.workspace)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      "cannot allocate a workspace of %llu bytes",
                      static_cast<unsigned long long>(d->workspace_size));
  return nullptr;
}

// Caller-allocated structs carry their size (runtime.h). The smallest each
// may be: its first version, before the fields added to it later. A field
// added later starts at or after that size, so that a caller's padding is
// never read as a field: kiln_tensor's `device` (at 40, after the 40 bytes
// of its first version) is the first such; the options' `device` sits in
// what would have been padding, so it belongs to their first version.
constexpr size_t kMinOptionsSize = offsetof(kiln_model_options, device_index);
constexpr size_t kMinTensorSize = offsetof(kiln_tensor, device);
constexpr size_t kMinTensorInfoSize = offsetof(kiln_tensor_info, dim_symbols);
constexpr size_t kMinSymbolInfoSize =
    offsetof(kiln_symbol_info, data_dependent);
constexpr size_t kMinKernelInfoSize = sizeof(kiln_kernel_info);
constexpr size_t kMaxStructSize = 4096;

kiln_status checkStructSize(size_t size, size_t min, const char *what) {
  if (size < min || size > kMaxStructSize)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s: struct_size is %zu, expected %zu to %zu (set it "
                      "with the header's initializer)",
                      what, size, min, kMaxStructSize);
  return nullptr;
}

// `*from` as this runtime's struct: the fields within the caller's
// struct_size, the defaults of `defaults` for the rest.
template <typename T> T readSized(const T *from, const T &defaults) {
  T result = defaults;
  std::memcpy(&result, from, std::min(from->struct_size, sizeof(T)));
  result.struct_size = sizeof(T);
  return result;
}

// Writes `value` into the caller's `*to`, as far as its struct_size reaches.
template <typename T> void writeSized(T *to, const T &value) {
  size_t size = to->struct_size;
  T copy = value;
  copy.struct_size = size;
  std::memcpy(to, &copy, std::min(size, sizeof(T)));
}

kiln_model_options defaultOptions() {
  kiln_model_options options;
  std::memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.num_threads = 0;
  options.device = KILN_DEVICE_DEFAULT;
  options.device_index = 0;
  return options;
}

// Checks the caller's tensor array (its stride is the first tensor's
// struct_size) and points `*tensors` at this runtime's structs: the caller's
// own where they have this runtime's size, else copies in `copies`.
kiln_status readTensors(const kiln_tensor *&tensors, size_t count,
                        const char *kind, std::vector<kiln_tensor> &copies) {
  if (count == 0)
    return nullptr;
  size_t stride = tensors->struct_size;
  std::string what = std::string(kind) + " #0";
  if (kiln_status status =
          checkStructSize(stride, kMinTensorSize, what.c_str()))
    return status;
  kiln_tensor defaults;
  std::memset(&defaults, 0, sizeof(defaults));
  defaults.device = KILN_DEVICE_CPU;
  // A caller built against this header needs no copies (the usual case, and
  // a run's hot path).
  bool copy = stride != sizeof(kiln_tensor);
  if (copy)
    copies.clear();
  const char *base = reinterpret_cast<const char *>(tensors);
  for (size_t i = 0; i < count; ++i) {
    const auto *t = reinterpret_cast<const kiln_tensor *>(base + i * stride);
    if (t->struct_size != stride)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s #%zu: struct_size is %zu, but #0's is %zu (every "
                        "tensor of a call has the same)",
                        kind, i, t->struct_size, stride);
    if (copy) {
      copies.push_back(readSized(t, defaults));
      t = &copies.back();
    }
    if (t->device != KILN_DEVICE_CPU && t->device != KILN_DEVICE_CUDA)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s #%zu: device %d, but a tensor's data is in host "
                        "memory (KILN_DEVICE_CPU) or, for a GPU model, in "
                        "its GPU's memory (KILN_DEVICE_CUDA)",
                        kind, i, t->device);
  }
  if (copy)
    tensors = copies.data();
  return nullptr;
}

kiln_status openModel(const char *path, const kiln_model_options *options,
                      kiln_model **outModel) {
  if (!outModel)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_open: out_model is NULL");
  *outModel = nullptr;
  if (!path || !*path)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_open: path is NULL or empty");
  kiln_model_options given = defaultOptions();
  if (options) {
    if (kiln_status status = checkStructSize(
            options->struct_size, kMinOptionsSize, "kiln_model_open: options"))
      return status;
    given = readSized(options, defaultOptions());
  }
  options = &given;
  if (options->device != KILN_DEVICE_DEFAULT &&
      options->device != KILN_DEVICE_NONE &&
      options->device != KILN_DEVICE_CPU && options->device != KILN_DEVICE_CUDA)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_open: device %d is not a kiln_device "
                      "(KILN_DEVICE_DEFAULT, KILN_DEVICE_NONE, KILN_DEVICE_CPU "
                      "or KILN_DEVICE_CUDA)",
                      options->device);
  if (options->num_threads < 0 || options->num_threads > kMaxThreads)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_open: num_threads is %d, expected 0 "
                      "(default) to %d",
                      options->num_threads, kMaxThreads);

  struct stat info;
  if (stat(path, &info) != 0) {
    int error = errno;
    return makeStatus(error == ENOENT || error == ENOTDIR
                          ? KILN_STATUS_NOT_FOUND
                          : KILN_STATUS_IO,
                      "cannot open model '%s': %s", path, std::strerror(error));
  }
  if (!S_ISREG(info.st_mode))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "cannot open model '%s': not a regular file", path);
  if (access(path, R_OK) != 0)
    return makeStatus(KILN_STATUS_IO, "cannot open model '%s': %s", path,
                      std::strerror(errno));

  // dlopen searches the library path for a name without '/'; a model path is
  // a file path.
  std::string filePath = path;
  if (filePath.find('/') == std::string::npos)
    filePath = "./" + filePath;

  // dlopen trusts the file's structure: check it first.
  if (kiln_status status = checkModelFile(path))
    return status;

  auto model = std::unique_ptr<kiln_model>(new kiln_model);
  dlerror();
  model->library = dlopen(filePath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!model->library) {
    const char *error = dlerror();
    return makeStatus(KILN_STATUS_INVALID_MODEL, "cannot load model '%s': %s",
                      path, error ? error : "unknown dlopen error");
  }
  auto describe =
      reinterpret_cast<DescribeFn>(dlsym(model->library, "kiln_abi_describe"));
  model->run = reinterpret_cast<RunFn>(dlsym(model->library, "kiln_abi_run"));
  if (!describe || !model->run)
    return makeStatus(KILN_STATUS_ABI_MISMATCH,
                      "'%s' is not a Kiln model: it does not export %s", path,
                      !describe ? "kiln_abi_describe" : "kiln_abi_run");
  model->descriptor = callModel(describe);
  if (!model->descriptor)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model '%s': kiln_abi_describe returned NULL",
                      path);
  if (kiln_status status = checkDescriptor(model->descriptor, *model))
    return status;
  bool onGpu = model->descriptor->abi_version >= 3 &&
               model->descriptor->device == KILN_ABI_DEVICE_CUDA;
  int32_t device = onGpu ? KILN_DEVICE_CUDA : KILN_DEVICE_CPU;
  model->describeOnly = options->device == KILN_DEVICE_NONE;
  if (options->device != KILN_DEVICE_DEFAULT && !model->describeOnly &&
      options->device != device)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "model '%s' was compiled for %s, not for the %s "
                      "(kiln_model_options.device)",
                      path, onGpu ? "NVIDIA GPUs" : "CPU",
                      options->device == KILN_DEVICE_CUDA ? "GPU" : "CPU");
  if (model->describeOnly) {
    // Nothing to run with.
  } else if (onGpu) {
    if (kiln_status status =
            openGpuModel(model->descriptor, options->device_index, path,
                         model->inputs, model->outputs, model->gpu))
      return status;
  } else if (kiln_status status =
                 allocateWorkspace(model->descriptor, *model)) {
    return status;
  }
  model->numThreads =
      options->num_threads ? options->num_threads : defaultNumThreads();
  *outModel = model.release();
  return nullptr;
}

// The shape a run expects, symbolic dimensions by name: "[batch,3,224,224]".
std::string formatExpected(const kiln_tensor_info &info,
                           const std::vector<kiln_symbol_info> &symbols) {
  std::string text = "[";
  for (int32_t d = 0; d < info.rank; ++d) {
    if (d)
      text += ',';
    int32_t k = info.dim_symbols[d];
    text += k < 0 ? std::to_string(info.shape[d]) : symbols[k].name;
  }
  return text + "]";
}

// Checks one caller tensor against the model's description of it. Where the
// model has symbolic dimensions, `values` holds the run's size of each (-1
// until a tensor gives it): an input gives a size within the bounds
// (`bind`), and every later tensor must agree.
kiln_status checkRunTensor(const kiln_tensor &t, const kiln_tensor_info &info,
                           const char *kind, size_t index,
                           const std::vector<kiln_symbol_info> &symbols,
                           std::vector<int64_t> &values, bool bind) {
  if (t.dtype != info.dtype)
    return makeStatus(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s '%s' (#%zu): expected dtype %s, got %s", kind, info.name, index,
        dtypeNameOr(info.dtype, "?"),
        dtypeNameOr(t.dtype,
                    ("unknown (" + std::to_string(t.dtype) + ")").c_str()));
  if (t.rank < 0 || (t.rank > 0 && !t.shape))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "%s '%s' (#%zu): %s", kind,
                      info.name, index,
                      t.rank < 0 ? "negative rank" : "shape is NULL");
  bool sameShape = t.rank == info.rank;
  for (int32_t d = 0; sameShape && d < t.rank; ++d)
    sameShape = info.dim_symbols[d] >= 0 || t.shape[d] == info.shape[d];
  if (!sameShape) {
    std::string got = t.rank > kMaxRank ? "rank " + std::to_string(t.rank)
                                        : formatShape(t.shape, t.rank);
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s' (#%zu): expected shape %s, got %s", kind,
                      info.name, index, formatExpected(info, symbols).c_str(),
                      got.c_str());
  }
  size_t bytes = info.byte_size;
  for (int32_t d = 0; d < t.rank; ++d) {
    int32_t k = info.dim_symbols[d];
    if (k < 0)
      continue;
    const kiln_symbol_info &symbol = symbols[k];
    int64_t size = t.shape[d];
    if (symbol.data_dependent && size != symbol.max)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s '%s' (#%zu): dimension %d ('%s') is decided by "
                        "the run; pass the output at its largest size, %lld "
                        "(kiln_model_output_shape gives it), not %lld, and "
                        "read the run's size from out_shape",
                        kind, info.name, index, d, symbol.name,
                        static_cast<long long>(symbol.max),
                        static_cast<long long>(size));
    if (values[k] < 0 && !bind)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: no input gives the size of '%s'",
                        symbol.name);
    if (values[k] < 0 && (size < symbol.min || size > symbol.max))
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s '%s' (#%zu): dimension %d ('%s') is %lld, outside "
                        "the model's bounds %lld..%lld (kiln-compile "
                        "--dynamic-dims %s=MIN..MAX sets them)",
                        kind, info.name, index, d, symbol.name,
                        static_cast<long long>(size),
                        static_cast<long long>(symbol.min),
                        static_cast<long long>(symbol.max), symbol.name);
    if (values[k] < 0)
      values[k] = size;
    if (size != values[k])
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s '%s' (#%zu): dimension %d ('%s') is %lld, but "
                        "%lld in the tensors before it; every dimension "
                        "named '%s' has the same size in a run",
                        kind, info.name, index, d, symbol.name,
                        static_cast<long long>(size),
                        static_cast<long long>(values[k]), symbol.name);
  }
  // The run's byte size: each symbolic dimension at its size in this run
  // (the descriptor's byte size is at the largest, so no overflow).
  if (bytes != 0)
    for (int32_t d = 0; d < t.rank; ++d)
      if (int32_t k = info.dim_symbols[d]; k >= 0)
        bytes = bytes / static_cast<size_t>(symbols[k].max) *
                static_cast<size_t>(values[k]);
  if (t.byte_size != bytes)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s' (#%zu): expected %zu bytes, got %zu", kind,
                      info.name, index, bytes, t.byte_size);
  if (!t.data && t.byte_size != 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s' (#%zu): data is NULL", kind, info.name, index);
  return nullptr;
}

// The bits a 4- or 2-bit element may set in its byte; 0 for other dtypes.
unsigned narrowCodeMask(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
  case KILN_DTYPE_F4E2M1:
    return 0x0F;
  case KILN_DTYPE_U2:
  case KILN_DTYPE_I2:
    return 0x03;
  default:
    return 0;
  }
}

// The model's code reads a 4- or 2-bit element with its byte's high bits zero
// (the ABI's layout): any other byte is refused rather than misread.
kiln_status checkNarrowCodes(const kiln_tensor &t, const kiln_tensor_info &info,
                             size_t index) {
  unsigned mask = narrowCodeMask(info.dtype);
  if (!mask)
    return nullptr;
  if (t.device == KILN_DEVICE_CUDA)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "input '%s' (#%zu): a %s tensor is checked element by "
                      "element and must be in host memory (KILN_DEVICE_CPU)",
                      info.name, index, dtypeNameOr(info.dtype, "narrow"));
  const auto *bytes = static_cast<const unsigned char *>(t.data);
  for (size_t i = 0; i < t.byte_size; ++i)
    if (bytes[i] & ~mask)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "input '%s' (#%zu): element %zu is 0x%02x, but a %s "
                        "element keeps its byte's high bits zero",
                        info.name, index, i, bytes[i],
                        kiln_dtype_name(t.dtype));
  return nullptr;
}

bool overlaps(const kiln_tensor &a, const kiln_tensor &b) {
  if (a.byte_size == 0 || b.byte_size == 0)
    return false;
  auto a0 = reinterpret_cast<uintptr_t>(a.data);
  auto b0 = reinterpret_cast<uintptr_t>(b.data);
  return a0 < b0 + b.byte_size && b0 < a0 + a.byte_size;
}

// The profiler hooks of kiln_model_run_profiled: each kernel's time on a
// monotonic clock, added to the caller's array.
struct KernelTimer {
  uint64_t *kernelNs;
  size_t numKernels;
  std::chrono::steady_clock::time_point start;

  static void begin(void *context, int64_t) {
    static_cast<KernelTimer *>(context)->start =
        std::chrono::steady_clock::now();
  }
  static void end(void *context, int64_t kernel) {
    auto *timer = static_cast<KernelTimer *>(context);
    auto elapsed = std::chrono::steady_clock::now() - timer->start;
    // The model's code is not trusted to pass an index in range.
    if (kernel >= 0 && static_cast<uint64_t>(kernel) < timer->numKernels)
      timer->kernelNs[kernel] += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed)
              .count());
  }
};

// The status of a run that failed an index check: the node, the index and
// the range. A model of an older version never fails one.
kiln_status indexError(const kiln_abi_model *d,
                       const kiln_abi_run_error &error) {
  if (d->abi_version < 5 || error.check < 0 || error.check >= d->num_checks)
    return makeStatus(KILN_STATUS_INTERNAL,
                      "model reported a failed index check #%lld, which it "
                      "does not have",
                      static_cast<long long>(error.check));
  const kiln_abi_check &check = d->checks[error.check];
  return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                    "%s%s%s %lld is out of range [%lld, %lld]; the run's "
                    "outputs are not valid",
                    check.source, *check.source ? ": " : "", check.what,
                    static_cast<long long>(error.value),
                    static_cast<long long>(check.low),
                    static_cast<long long>(check.high));
}

// Whether output `index` has a dimension that the run decides (found when
// the model was opened).
bool hasDataDependentDims(const kiln_model &model, size_t index) {
  return model.outputDims[index].dataDependent;
}

// Moves the elements of a row-major tensor of shape `full` that lie within
// `shape` (no larger in any dimension) to the start of `data`, row-major in
// `shape`. Each run of the innermost dimension moves at once; a run never
// moves up (its place in `shape` precedes its place in `full`), so the
// moves go in order.
void compactTensor(char *data, const std::vector<int64_t> &full,
                   const std::vector<int64_t> &shape, size_t elementBytes) {
  size_t rank = shape.size();
  if (full == shape || rank == 0)
    return;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  size_t rowBytes = static_cast<size_t>(shape[rank - 1]) * elementBytes;
  if (rows == 0 || rowBytes == 0)
    return;
  std::vector<int64_t> at(rank, 0);
  for (int64_t row = 0; row < rows; ++row) {
    // The row's offset in elements in `full`.
    int64_t from = 0;
    for (size_t d = 0; d + 1 < rank; ++d)
      from = (from + at[d]) * full[d + 1];
    std::memmove(data + static_cast<size_t>(row) * rowBytes,
                 data + static_cast<size_t>(from) * elementBytes, rowBytes);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++at[d] < shape[d])
        break;
      at[d] = 0;
    }
  }
}

// After a successful run: each output with data-dependent dimensions moved
// to the dense layout of its run's shape, and every requested out_shape
// written.
kiln_status finishOutputs(const kiln_model &model, const kiln_tensor *outputs,
                          size_t numOutputs,
                          const std::vector<int64_t> &symbolValues) {
  for (size_t i = 0; i < numOutputs; ++i) {
    const kiln_tensor &t = outputs[i];
    const kiln_tensor_info &info = model.outputs[i];
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    if (hasDataDependentDims(model, i)) {
      std::vector<int64_t> full = shape;
      for (int32_t d = 0; d < info.rank; ++d)
        if (int32_t k = info.dim_symbols[d];
            k >= 0 && model.symbols[k].data_dependent)
          shape[d] = symbolValues[k];
      size_t elements = 1;
      for (int64_t size : full)
        elements *= static_cast<size_t>(size);
      if (elements != 0 && t.device != KILN_DEVICE_CUDA)
        compactTensor(static_cast<char *>(t.data), full, shape,
                      t.byte_size / elements);
    }
    if (t.out_shape)
      std::copy(shape.begin(), shape.end(), t.out_shape);
  }
  return nullptr;
}

kiln_status runModel(kiln_model *model, const kiln_tensor *inputs,
                     size_t numInputs, const kiln_tensor *outputs,
                     size_t numOutputs, uint64_t *kernelNs = nullptr,
                     size_t numKernels = 0, bool profiled = false) {
  if (!model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_run: model is NULL");
  if (profiled && numKernels != model->kernels.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_run_profiled: num_kernels is %zu, but the "
                      "model has %zu kernels",
                      numKernels, model->kernels.size());
  if (profiled && numKernels && !kernelNs)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_run_profiled: kernel_ns is NULL");
  if (numInputs != model->inputs.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "expected %zu inputs, got %zu", model->inputs.size(),
                      numInputs);
  if (numOutputs != model->outputs.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "expected %zu outputs, got %zu", model->outputs.size(),
                      numOutputs);
  if ((numInputs && !inputs) || (numOutputs && !outputs))
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_run: %s array is NULL",
                      numInputs && !inputs ? "inputs" : "outputs");
  // This runtime's structs from here on, whatever header the caller had.
  std::vector<kiln_tensor> inputCopies, outputCopies;
  if (kiln_status status = readTensors(inputs, numInputs, "input", inputCopies))
    return status;
  if (kiln_status status =
          readTensors(outputs, numOutputs, "output", outputCopies))
    return status;
  std::vector<const void *> inputPtrs(numInputs);
  std::vector<void *> outputPtrs(numOutputs);
  // Device memory only for a GPU model, which checks the pointers itself.
  // (A CPU model's run keeps no list.)
  std::vector<bool> onDevice(model->gpu ? numInputs + numOutputs : 0);
  for (size_t i = 0; i < numInputs + numOutputs; ++i) {
    const kiln_tensor &t = i < numInputs ? inputs[i] : outputs[i - numInputs];
    bool device = t.device == KILN_DEVICE_CUDA;
    if (model->gpu)
      onDevice[i] = device;
    else if (device && !model->describeOnly)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "%s #%zu: device KILN_DEVICE_CUDA, but the model runs "
                        "on the CPU",
                        i < numInputs ? "input" : "output",
                        i < numInputs ? i : i - numInputs);
  }
  // A data-dependent size is passed at its largest.
  std::vector<int64_t> symbolValues(model->symbols.size(), -1);
  for (size_t k = 0; k < model->symbols.size(); ++k)
    if (model->symbols[k].data_dependent)
      symbolValues[k] = model->symbols[k].max;
  for (size_t i = 0; i < numInputs; ++i) {
    if (kiln_status status =
            checkRunTensor(inputs[i], model->inputs[i], "input", i,
                           model->symbols, symbolValues, true))
      return status;
    if (kiln_status status = checkNarrowCodes(inputs[i], model->inputs[i], i))
      return status;
    inputPtrs[i] = inputs[i].data;
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    if (kiln_status status =
            checkRunTensor(outputs[i], model->outputs[i], "output", i,
                           model->symbols, symbolValues, false))
      return status;
    if (hasDataDependentDims(*model, i) && !outputs[i].out_shape)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "output '%s' (#%zu): its size is decided by the run, "
                        "which returns it through out_shape, but out_shape is "
                        "NULL",
                        model->outputs[i].name, i);
    outputPtrs[i] = outputs[i].data;
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    for (size_t j = 0; j < i; ++j)
      if (overlaps(outputs[i], outputs[j]))
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          "output '%s' (#%zu) overlaps output '%s' (#%zu)",
                          model->outputs[i].name, i, model->outputs[j].name, j);
    for (size_t j = 0; j < numInputs; ++j)
      if (overlaps(outputs[i], inputs[j]))
        return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          "output '%s' (#%zu) overlaps input '%s' (#%zu)",
                          model->outputs[i].name, i, model->inputs[j].name, j);
  }

  if (model->describeOnly)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "the model was opened without a device "
                      "(KILN_DEVICE_NONE): it can be described, not run");
  std::lock_guard<std::mutex> lock(model->mutex);
  KernelTimer timer{kernelNs, numKernels, {}};
  kiln_abi_profiler profiler{&timer, &KernelTimer::begin, &KernelTimer::end};
  std::vector<int64_t> symbolResults(model->symbols.size(), -1);
  // The sizes the run wrote, checked against their bounds.
  auto takeResults = [&]() -> kiln_status {
    for (size_t k = 0; k < model->symbols.size(); ++k) {
      if (!model->symbols[k].data_dependent)
        continue;
      if (symbolResults[k] < 0 || symbolResults[k] > model->symbols[k].max)
        return makeStatus(KILN_STATUS_INTERNAL,
                          "model returned size %lld for '%s', outside 0..%lld",
                          static_cast<long long>(symbolResults[k]),
                          model->symbols[k].name,
                          static_cast<long long>(model->symbols[k].max));
      symbolValues[k] = symbolResults[k];
    }
    return finishOutputs(*model, outputs, numOutputs, symbolValues);
  };
  if (model->gpu) {
    kiln_abi_run_error error{-1, 0};
    if (kiln_status status =
            runGpuModel(*model->gpu, model->run, model->descriptor,
                        inputPtrs.data(), outputPtrs.data(), onDevice,
                        profiled && numKernels ? &profiler : nullptr,
                        symbolResults.data(), &error))
      return status;
    if (error.check >= 0)
      return indexError(model->descriptor, error);
    return takeResults();
  }
  kiln_abi_run_args args;
  // A model reads the arguments of its own version (a version 1 model ends
  // them before `profiler`).
  args.abi_version = model->descriptor->abi_version;
  args.num_threads = model->numThreads;
  args.inputs = inputPtrs.data();
  args.outputs = outputPtrs.data();
  args.workspace = model->workspace;
  args.profiler = profiled && numKernels ? &profiler : nullptr;
  args.gpu = nullptr;
  args.symbol_values = symbolValues.empty() ? nullptr : symbolValues.data();
  kiln_abi_run_error error{-1, 0};
  args.error = &error;
  args.symbol_results = symbolResults.empty() ? nullptr : symbolResults.data();
  int32_t result = callModel(model->run, &args);
  switch (result) {
  case KILN_ABI_RUN_OK:
    return takeResults();
  case KILN_ABI_RUN_INDEX_ERROR:
    return indexError(model->descriptor, error);
  case KILN_ABI_RUN_NO_MEMORY:
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "model ran out of memory");
  case KILN_ABI_RUN_BAD_ARGS:
    return makeStatus(KILN_STATUS_INTERNAL,
                      "model refused the arguments the runtime checked "
                      "(kiln_abi_run returned %d)",
                      result);
  default:
    return makeStatus(KILN_STATUS_INTERNAL,
                      "kiln_abi_run failed with unknown code %d", result);
  }
}

kiln_status tensorInfo(const kiln_model *model, size_t index,
                       kiln_tensor_info *outInfo, bool input) {
  const char *kind = input ? "input" : "output";
  if (!model || !outInfo)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_%s_info: %s is NULL", kind,
                      !model ? "model" : "out_info");
  std::string what = std::string("kiln_model_") + kind + "_info: out_info";
  if (kiln_status status = checkStructSize(outInfo->struct_size,
                                           kMinTensorInfoSize, what.c_str()))
    return status;
  const auto &infos = input ? model->inputs : model->outputs;
  if (index >= infos.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s index %zu out of range: the model has %zu %ss", kind,
                      index, infos.size(), kind);
  writeSized(outInfo, infos[index]);
  return nullptr;
}

kiln_status findTensor(const kiln_model *model, const char *name,
                       size_t *outIndex, bool input) {
  const char *kind = input ? "input" : "output";
  if (!model || !name || !outIndex)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_find_%s: %s is NULL", kind,
                      !model  ? "model"
                      : !name ? "name"
                              : "out_index");
  const auto &infos = input ? model->inputs : model->outputs;
  for (size_t i = 0; i < infos.size(); ++i)
    if (std::strcmp(infos[i].name, name) == 0) {
      *outIndex = i;
      return nullptr;
    }
  return makeStatus(KILN_STATUS_NOT_FOUND, "the model has no %s named '%s'",
                    kind, name);
}

} // namespace

extern "C" {

void kiln_model_options_init_sized(kiln_model_options *options,
                                   size_t struct_size) {
  if (!options || struct_size < sizeof(size_t))
    return;
  kiln_model_options defaults = defaultOptions();
  defaults.struct_size = struct_size;
  std::memset(static_cast<void *>(options), 0,
              std::min(struct_size, kMaxStructSize));
  std::memcpy(options, &defaults, std::min(struct_size, sizeof(defaults)));
}

kiln_status kiln_model_open(const char *path, const kiln_model_options *options,
                            kiln_model **out_model) {
  return guard([&] { return openModel(path, options, out_model); });
}

kiln_model *kiln_model_retain(kiln_model *model) {
  if (model)
    model->references.fetch_add(1, std::memory_order_relaxed);
  return model;
}

void kiln_model_release(kiln_model *model) {
  if (model && model->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete model;
}

const kiln_abi_model *kiln_model_descriptor(const kiln_model *model) {
  return model ? model->descriptor : nullptr;
}

size_t kiln_model_num_inputs(const kiln_model *model) {
  return model ? model->inputs.size() : 0;
}

size_t kiln_model_num_outputs(const kiln_model *model) {
  return model ? model->outputs.size() : 0;
}

kiln_status kiln_model_input_info(const kiln_model *model, size_t index,
                                  kiln_tensor_info *out_info) {
  return guard([&] { return tensorInfo(model, index, out_info, true); });
}

kiln_status kiln_model_output_info(const kiln_model *model, size_t index,
                                   kiln_tensor_info *out_info) {
  return guard([&] { return tensorInfo(model, index, out_info, false); });
}

kiln_status kiln_model_find_input(const kiln_model *model, const char *name,
                                  size_t *out_index) {
  return guard([&] { return findTensor(model, name, out_index, true); });
}

kiln_status kiln_model_find_output(const kiln_model *model, const char *name,
                                   size_t *out_index) {
  return guard([&] { return findTensor(model, name, out_index, false); });
}

kiln_status kiln_model_set_num_threads(kiln_model *model, int32_t num_threads) {
  if (!model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "kiln_model_set_num_threads: model is NULL");
  if (num_threads < 1 || num_threads > kMaxThreads)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "number of threads must be 1 to %d, got %d", kMaxThreads,
                      num_threads);
  std::lock_guard<std::mutex> lock(model->mutex);
  model->numThreads = num_threads;
  return nullptr;
}

int32_t kiln_model_num_threads(const kiln_model *model) {
  if (!model)
    return 0;
  std::lock_guard<std::mutex> lock(const_cast<kiln_model *>(model)->mutex);
  return model->numThreads;
}

kiln_status kiln_model_run(kiln_model *model, const kiln_tensor *inputs,
                           size_t num_inputs, const kiln_tensor *outputs,
                           size_t num_outputs) {
  return guard([&] {
    return runModel(model, inputs, num_inputs, outputs, num_outputs);
  });
}

size_t kiln_model_num_symbols(const kiln_model *model) {
  return model ? model->symbols.size() : 0;
}

kiln_status kiln_model_symbol_info(const kiln_model *model, size_t index,
                                   kiln_symbol_info *out_info) {
  return guard([&]() -> kiln_status {
    if (!model || !out_info)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kiln_model_symbol_info: %s is NULL",
                        !model ? "model" : "out_info");
    if (kiln_status status =
            checkStructSize(out_info->struct_size, kMinSymbolInfoSize,
                            "kiln_model_symbol_info: out_info"))
      return status;
    if (index >= model->symbols.size())
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "symbolic dimension index %zu out of range: the model "
                        "has %zu",
                        index, model->symbols.size());
    writeSized(out_info, model->symbols[index]);
    return nullptr;
  });
}

kiln_status kiln_model_output_shape(const kiln_model *model,
                                    const kiln_tensor *inputs,
                                    size_t num_inputs, size_t index,
                                    int64_t *out_shape, size_t capacity,
                                    size_t *out_byte_size) {
  return guard([&]() -> kiln_status {
    if (!model)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kiln_model_output_shape: model is NULL");
    if (num_inputs != model->inputs.size())
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "expected %zu inputs, got %zu", model->inputs.size(),
                        num_inputs);
    if (num_inputs && !inputs)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kiln_model_output_shape: inputs array is NULL");
    if (index >= model->outputs.size())
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "output index %zu out of range: the model has %zu "
                        "outputs",
                        index, model->outputs.size());
    const kiln_tensor_info &info = model->outputs[index];
    if (capacity < static_cast<size_t>(info.rank) ||
        (info.rank > 0 && !out_shape))
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kiln_model_output_shape: output '%s' has rank %d, "
                        "but out_shape holds %zu",
                        info.name, info.rank, out_shape ? capacity : 0);
    std::vector<kiln_tensor> copies;
    if (kiln_status status = readTensors(inputs, num_inputs, "input", copies))
      return status;
    // A data-dependent size at its largest.
    std::vector<int64_t> values(model->symbols.size(), -1);
    for (size_t k = 0; k < model->symbols.size(); ++k)
      if (model->symbols[k].data_dependent)
        values[k] = model->symbols[k].max;
    for (size_t i = 0; i < num_inputs; ++i)
      if (kiln_status status =
              checkRunTensor(inputs[i], model->inputs[i], "input", i,
                             model->symbols, values, true))
        return status;
    size_t bytes = info.byte_size;
    for (int32_t d = 0; d < info.rank; ++d) {
      int32_t k = info.dim_symbols[d];
      if (k >= 0 && values[k] < 0)
        return makeStatus(KILN_STATUS_INVALID_MODEL,
                          "invalid model: no input gives the size of '%s'",
                          model->symbols[k].name);
      out_shape[d] = k < 0 ? info.shape[d] : values[k];
      if (k >= 0 && bytes != 0)
        bytes = bytes / static_cast<size_t>(model->symbols[k].max) *
                static_cast<size_t>(values[k]);
    }
    if (out_byte_size)
      *out_byte_size = bytes;
    return nullptr;
  });
}

size_t kiln_model_num_kernels(const kiln_model *model) {
  return model ? model->kernels.size() : 0;
}

kiln_status kiln_model_kernel_info(const kiln_model *model, size_t index,
                                   kiln_kernel_info *out_info) {
  return guard([&]() -> kiln_status {
    if (!model || !out_info)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kiln_model_kernel_info: %s is NULL",
                        !model ? "model" : "out_info");
    if (kiln_status status =
            checkStructSize(out_info->struct_size, kMinKernelInfoSize,
                            "kiln_model_kernel_info: out_info"))
      return status;
    if (index >= model->kernels.size())
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "kernel index %zu out of range: the model has %zu "
                        "kernels",
                        index, model->kernels.size());
    writeSized(out_info, model->kernels[index]);
    return nullptr;
  });
}

kiln_status kiln_model_run_profiled(kiln_model *model,
                                    const kiln_tensor *inputs,
                                    size_t num_inputs,
                                    const kiln_tensor *outputs,
                                    size_t num_outputs, uint64_t *kernel_ns,
                                    size_t num_kernels) {
  return guard([&] {
    return runModel(model, inputs, num_inputs, outputs, num_outputs, kernel_ns,
                    num_kernels, true);
  });
}

const char *kiln_dtype_name(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "f32";
  case KILN_DTYPE_U8:
    return "u8";
  case KILN_DTYPE_I8:
    return "i8";
  case KILN_DTYPE_U16:
    return "u16";
  case KILN_DTYPE_I16:
    return "i16";
  case KILN_DTYPE_I32:
    return "i32";
  case KILN_DTYPE_I64:
    return "i64";
  case KILN_DTYPE_BOOL:
    return "bool";
  case KILN_DTYPE_F16:
    return "f16";
  case KILN_DTYPE_F64:
    return "f64";
  case KILN_DTYPE_U32:
    return "u32";
  case KILN_DTYPE_U64:
    return "u64";
  case KILN_DTYPE_BF16:
    return "bf16";
  case KILN_DTYPE_F8E4M3FN:
    return "f8e4m3fn";
  case KILN_DTYPE_F8E4M3FNUZ:
    return "f8e4m3fnuz";
  case KILN_DTYPE_F8E5M2:
    return "f8e5m2";
  case KILN_DTYPE_F8E5M2FNUZ:
    return "f8e5m2fnuz";
  case KILN_DTYPE_U4:
    return "u4";
  case KILN_DTYPE_I4:
    return "i4";
  case KILN_DTYPE_F4E2M1:
    return "f4e2m1";
  case KILN_DTYPE_F8E8M0:
    return "f8e8m0";
  case KILN_DTYPE_U2:
    return "u2";
  case KILN_DTYPE_I2:
    return "i2";
  default:
    return nullptr;
  }
}

size_t kiln_dtype_size(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_U8:
  case KILN_DTYPE_I8:
  case KILN_DTYPE_BOOL:
  case KILN_DTYPE_F8E4M3FN:
  case KILN_DTYPE_F8E4M3FNUZ:
  case KILN_DTYPE_F8E5M2:
  case KILN_DTYPE_F8E5M2FNUZ:
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
  case KILN_DTYPE_F4E2M1:
  case KILN_DTYPE_F8E8M0:
  case KILN_DTYPE_U2:
  case KILN_DTYPE_I2:
    return 1;
  case KILN_DTYPE_U16:
  case KILN_DTYPE_I16:
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
    return 2;
  case KILN_DTYPE_F32:
  case KILN_DTYPE_I32:
  case KILN_DTYPE_U32:
    return 4;
  case KILN_DTYPE_I64:
  case KILN_DTYPE_F64:
  case KILN_DTYPE_U64:
    return 8;
  default:
    return 0;
  }
}

const char *kiln_runtime_known_cpu_features(const char *target_triple) {
  try {
    return knownCpuFeatures(target_triple ? archOfTriple(target_triple)
                                          : hostArch());
  } catch (...) {
    return "";
  }
}

int kiln_runtime_cpu_supports(const char *feature) {
  if (!feature)
    return -1;
  try {
    return hostSupportsCpuFeature(feature);
  } catch (...) {
    return -1;
  }
}

uint32_t kiln_runtime_abi_version(void) { return KILN_ABI_VERSION; }

} // extern "C"
