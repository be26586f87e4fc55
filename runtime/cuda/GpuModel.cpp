//===- GpuModel.cpp - Opening and running a CUDA model --------------------===//

#include "cuda/GpuModel.h"

#include "ModelCall.h"
#include "Status.h"
#include "cuda/CudaDriver.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::runtime {

using namespace cuda;

namespace {

constexpr int64_t kMaxImages = 256;
constexpr uint32_t kMaxParams = 4096;
constexpr uint32_t kMaxThreadsPerBlock = 1024;

/// "sm_90a" -> 90 and whether it is an "a" (arch-specific) target; -1 for
/// anything else.
int parseArch(const char *arch, bool &specific) {
  specific = false;
  if (std::strncmp(arch, "sm_", 3) != 0)
    return -1;
  int value = 0, digits = 0;
  const char *p = arch + 3;
  for (; *p >= '0' && *p <= '9' && digits < 4; ++p, ++digits)
    value = value * 10 + (*p - '0');
  if (digits < 2)
    return -1;
  if (*p == 'a') {
    specific = true;
    ++p;
  }
  return *p == '\0' ? value : -1;
}

/// The model's context made current on this thread for a scope; popped on
/// every way out.
class ContextScope {
public:
  ContextScope(const Driver *cu, CUcontext context)
      : cu(cu), result(cu->ctxPushCurrent(context)) {}
  ~ContextScope() {
    if (result == CUDA_SUCCESS) {
      CUcontext popped;
      cu->ctxPopCurrent(&popped);
    }
  }
  CUresult pushed() const { return result; }

private:
  const Driver *cu;
  CUresult result;
};

} // namespace

struct GpuModel {
  const Driver *cu = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  std::vector<CUfunction> functions;
  const kiln_abi_gpu_kernel *launches = nullptr;
  CUdeviceptr constants = 0, workspace = 0;
  // Where the run writes the sizes that the data decides (an int64_t per
  // symbol of the model), when it has any.
  CUdeviceptr results = 0;
  size_t resultsBytes = 0;
  // Where the kernels record the run's first failed index check (a
  // kiln_abi_run_error), when the model has checks.
  CUdeviceptr runError = 0;
  std::vector<CUdeviceptr> inputs, outputs;
  std::vector<size_t> inputBytes, outputBytes;
  std::string deviceName, image;
  int capability = 0;
  bool broken = false;
  bool retained = false;

  ~GpuModel() {
    // Nothing is allocated before the primary context is retained.
    if (!cu || !retained)
      return;
    {
      ContextScope current(cu, context);
      auto release = [&](CUdeviceptr p) {
        if (p)
          cu->memFree(p);
      };
      release(constants);
      release(workspace);
      release(results);
      release(runError);
      for (CUdeviceptr p : inputs)
        release(p);
      for (CUdeviceptr p : outputs)
        release(p);
      if (stream)
        cu->streamDestroy(stream);
      if (module)
        cu->moduleUnload(module);
    }
    cu->primaryCtxRelease(device);
  }
};

void GpuModelDeleter::operator()(GpuModel *model) const { delete model; }

kiln_status checkGpuDescriptor(const kiln_abi_model *d) {
  // A model without kernels (its outputs empty, say) has no images.
  if (d->num_device_images < (d->num_kernels > 0 ? 1 : 0) ||
      d->num_device_images > kMaxImages ||
      (d->num_device_images > 0 && !d->device_images))
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: a GPU model with %d device images",
                      d->num_device_images);
  for (int32_t i = 0; i < d->num_device_images; ++i) {
    const kiln_abi_device_image &image = d->device_images[i];
    bool specific;
    if (!image.arch || strnlen(image.arch, 32) == 32 || !image.data ||
        image.size == 0 || image.reserved != 0 ||
        (image.format != KILN_ABI_IMAGE_CUBIN &&
         image.format != KILN_ABI_IMAGE_PTX &&
         image.format != KILN_ABI_IMAGE_EMULATION) ||
        (image.format != KILN_ABI_IMAGE_EMULATION &&
         parseArch(image.arch, specific) < 0))
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: device image #%d is malformed", i);
  }
  if (d->num_kernels > 0 && !d->gpu_kernels)
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: a GPU model without its launch table");
  for (int64_t k = 0; k < d->num_kernels; ++k) {
    const kiln_abi_gpu_kernel &launch = d->gpu_kernels[k];
    uint64_t threads = 1;
    bool ok = launch.num_params <= kMaxParams;
    for (int i = 0; i < 3; ++i) {
      ok = ok && launch.grid[i] >= 1 && launch.block[i] >= 1 &&
           launch.block[i] <= kMaxThreadsPerBlock;
      threads *= launch.block[i];
    }
    if (!ok || threads > kMaxThreadsPerBlock || launch.grid[1] > 65535 ||
        launch.grid[2] > 65535 || launch.grid[0] > 0x7fffffffu)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "invalid model: GPU kernel '%s' has an impossible "
                        "launch",
                        d->kernels[k].name);
  }
  if ((d->constants_size > 0) != (d->constants != nullptr))
    return makeStatus(KILN_STATUS_INVALID_MODEL,
                      "invalid model: constants of %llu bytes at %p",
                      static_cast<unsigned long long>(d->constants_size),
                      d->constants);
  return nullptr;
}

namespace {

/// The image to load on a device of `capability`: a cubin for exactly that
/// architecture, else a cubin of the same major version and a lower minor
/// (cubins run on later GPUs of their major version, never an "a" target's),
/// else the newest PTX not newer than the device, which the driver compiles.
int chooseImage(const kiln_abi_model *d, int capability) {
  int best = -1, bestScore = -1;
  for (int32_t i = 0; i < d->num_device_images; ++i) {
    const kiln_abi_device_image &image = d->device_images[i];
    bool specific;
    int arch = parseArch(image.arch, specific);
    int score = -1;
    if (image.format == KILN_ABI_IMAGE_CUBIN && arch == capability)
      score = 3000 + arch;
    else if (image.format == KILN_ABI_IMAGE_CUBIN && !specific &&
             arch / 10 == capability / 10 && arch < capability)
      score = 2000 + arch;
    else if (image.format == KILN_ABI_IMAGE_PTX && !specific &&
             arch <= capability)
      score = 1000 + arch;
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  return best;
}

const char *formatName(int32_t format) {
  return format == KILN_ABI_IMAGE_CUBIN ? "cubin" : "PTX";
}

kiln_status driverError(CUresult result, const char *what) {
  return makeStatus(result == CUDA_ERROR_OUT_OF_MEMORY
                        ? KILN_STATUS_OUT_OF_MEMORY
                        : KILN_STATUS_DEVICE_ERROR,
                    "%s failed: %s", what, resultName(result));
}

} // namespace

kiln_status openGpuModel(const kiln_abi_model *d, int32_t deviceIndex,
                         const char *path,
                         const std::vector<kiln_tensor_info> &inputs,
                         const std::vector<kiln_tensor_info> &outputs,
                         GpuModelPtr &out) {
  std::string error;
  CUresult initResult;
  const Driver *cu = loadDriver(error, initResult);
  if (!cu)
    return makeStatus(initResult == CUDA_ERROR_INSUFFICIENT_DRIVER
                          ? KILN_STATUS_DEVICE_ERROR
                          : KILN_STATUS_NO_DEVICE,
                      "cannot run GPU model '%s': %s", path, error.c_str());
  GpuModelPtr gpu(new GpuModel);
  gpu->cu = cu;
  int count = 0;
  if (CUresult r = cu->deviceGetCount(&count); r != CUDA_SUCCESS)
    return driverError(r, "cuDeviceGetCount");
  if (deviceIndex < 0 || deviceIndex >= count)
    return makeStatus(count == 0 ? KILN_STATUS_NO_DEVICE
                                 : KILN_STATUS_INVALID_ARGUMENT,
                      "cannot run GPU model '%s': no CUDA device %d (%d "
                      "device(s))",
                      path, deviceIndex, count);
  if (CUresult r = cu->deviceGet(&gpu->device, deviceIndex); r != CUDA_SUCCESS)
    return driverError(r, "cuDeviceGet");
  int major = 0, minor = 0;
  if (CUresult r = cu->deviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu->device);
      r != CUDA_SUCCESS)
    return driverError(r, "cuDeviceGetAttribute");
  if (CUresult r = cu->deviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu->device);
      r != CUDA_SUCCESS)
    return driverError(r, "cuDeviceGetAttribute");
  gpu->capability = major * 10 + minor;
  char name[256] = {0};
  if (cu->deviceGetName(name, sizeof(name) - 1, gpu->device) == CUDA_SUCCESS)
    gpu->deviceName = name;

  int chosen = d->num_kernels > 0 ? chooseImage(d, gpu->capability) : -1;
  if (chosen < 0 && d->num_kernels > 0) {
    std::string archs;
    for (int32_t i = 0; i < d->num_device_images; ++i)
      if (d->device_images[i].format != KILN_ABI_IMAGE_EMULATION)
        archs += std::string(archs.empty() ? "" : ", ") +
                 d->device_images[i].arch + " " +
                 formatName(d->device_images[i].format);
    return makeStatus(KILN_STATUS_NO_DEVICE,
                      "GPU model '%s' has no image for this GPU (%s, sm_%d): "
                      "it holds %s; recompile with --gpu-arch=sm_%d",
                      path, gpu->deviceName.c_str(), gpu->capability,
                      archs.c_str(), gpu->capability);
  }
  const kiln_abi_device_image *image =
      chosen >= 0 ? &d->device_images[chosen] : nullptr;
  gpu->image = image
                   ? std::string(formatName(image->format)) + " " + image->arch
                   : "no kernels";
  const kiln_abi_device_image *emulation = nullptr;
  for (int32_t i = 0; i < d->num_device_images; ++i)
    if (d->device_images[i].format == KILN_ABI_IMAGE_EMULATION)
      emulation = &d->device_images[i];
  if (cu->emulatorAttach && !emulation && image)
    return makeStatus(KILN_STATUS_NO_DEVICE,
                      "GPU model '%s' has no emulation image, which the CUDA "
                      "driver emulator (%s) needs: compile it with "
                      "--gpu-emulation",
                      path, cu->path.c_str());

  if (CUresult r = cu->primaryCtxRetain(&gpu->context, gpu->device);
      r != CUDA_SUCCESS)
    return driverError(r, "cuDevicePrimaryCtxRetain");
  gpu->retained = true;
  ContextScope current(cu, gpu->context);
  if (CUresult r = current.pushed(); r != CUDA_SUCCESS)
    return driverError(r, "cuCtxPushCurrent");
  // The image (PTX ends with the NUL the driver needs; the compiler put it
  // there).
  char log[4096] = {0};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUresult r = image ? cu->moduleLoadDataEx(&gpu->module, image->data, 2,
                                            options, values)
                     : CUDA_SUCCESS;
  if (r != CUDA_SUCCESS) {
    gpu->module = nullptr;
    const char *hint =
        r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            ? " (the driver is older than the PTX: update the NVIDIA driver)"
        : r == CUDA_ERROR_NO_BINARY_FOR_GPU ? " (no code for this GPU)"
                                            : "";
    return makeStatus(
        r == CUDA_ERROR_NO_BINARY_FOR_GPU ? KILN_STATUS_NO_DEVICE
                                          : KILN_STATUS_DEVICE_ERROR,
        "cannot load the %s image of GPU model '%s': "
        "%s%s%s%s",
        gpu->image.c_str(), path, resultName(r), hint, log[0] ? ": " : "", log);
  }
  if (cu->emulatorAttach && image) {
    r = cu->emulatorAttach(
        gpu->module, emulation->data,
        static_cast<int64_t>(emulation->size /
                             sizeof(kiln_abi_emulated_kernel)));
    if (r != CUDA_SUCCESS)
      return driverError(r, "kiln_emulator_attach");
  }
  gpu->launches = d->gpu_kernels;
  gpu->functions.resize(static_cast<size_t>(d->num_kernels));
  for (int64_t k = 0; k < d->num_kernels; ++k) {
    r = cu->moduleGetFunction(&gpu->functions[k], gpu->module,
                              d->kernels[k].name);
    if (r != CUDA_SUCCESS)
      return makeStatus(KILN_STATUS_INVALID_MODEL,
                        "GPU model '%s': kernel '%s' is not in its %s "
                        "image (%s)",
                        path, d->kernels[k].name, gpu->image.c_str(),
                        resultName(r));
  }
  if ((r = cu->streamCreate(&gpu->stream, CU_STREAM_NON_BLOCKING)) !=
      CUDA_SUCCESS) {
    gpu->stream = nullptr;
    return driverError(r, "cuStreamCreate");
  }
  // Device memory, once: constants (uploaded now), workspace, and a buffer
  // for each input and output.
  auto allocate = [&](CUdeviceptr &p, size_t bytes) -> kiln_status {
    if (bytes == 0)
      return nullptr;
    CUresult result = cu->memAlloc(&p, bytes);
    if (result != CUDA_SUCCESS) {
      p = 0;
      return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                        "cannot allocate %zu bytes on the GPU for model "
                        "'%s': %s",
                        bytes, path, resultName(result));
    }
    return nullptr;
  };
  if (kiln_status s = allocate(gpu->constants, d->constants_size))
    return s;
  if (d->constants_size &&
      (r = cu->memcpyHtoD(gpu->constants, d->constants, d->constants_size)) !=
          CUDA_SUCCESS)
    return driverError(r, "uploading the constants");
  if (kiln_status s = allocate(gpu->workspace, d->workspace_size))
    return s;
  if (d->abi_version >= 6 &&
      std::any_of(d->symbols, d->symbols + d->num_symbols,
                  [](const kiln_abi_symbol &symbol) {
                    return symbol.kind == KILN_ABI_SYMBOL_RESULT;
                  })) {
    gpu->resultsBytes = sizeof(int64_t) * size_t(d->num_symbols);
    if (kiln_status s = allocate(gpu->results, gpu->resultsBytes))
      return s;
  }
  // A model of version 5 or 6 has no checks on the GPU (its kernels
  // clamped without a word).
  if (d->abi_version >= 7 && d->num_checks > 0)
    if (kiln_status s = allocate(gpu->runError, sizeof(kiln_abi_run_error)))
      return s;
  for (const kiln_tensor_info &info : inputs) {
    gpu->inputBytes.push_back(info.byte_size);
    gpu->inputs.push_back(0);
    if (kiln_status s = allocate(gpu->inputs.back(), info.byte_size))
      return s;
  }
  for (const kiln_tensor_info &info : outputs) {
    gpu->outputBytes.push_back(info.byte_size);
    gpu->outputs.push_back(0);
    if (kiln_status s = allocate(gpu->outputs.back(), info.byte_size))
      return s;
  }
  out = std::move(gpu);
  return nullptr;
}

namespace {

/// The launcher a run hands the model (kiln_abi_gpu): each launch on the
/// handle's stream; after the first failure the rest are skipped.
struct Launcher {
  GpuModel *gpu;
  const kiln_abi_model *d;
  CUresult error = CUDA_SUCCESS;
  int64_t failedKernel = -1;

  static void launch(void *context, int64_t kernel, void *const *params) {
    auto *self = static_cast<Launcher *>(context);
    if (self->error != CUDA_SUCCESS)
      return;
    GpuModel &gpu = *self->gpu;
    if (kernel < 0 || kernel >= self->d->num_kernels) {
      self->error = CUDA_ERROR_NOT_FOUND;
      self->failedKernel = kernel;
      return;
    }
    const kiln_abi_gpu_kernel &k = gpu.launches[kernel];
    // cuLaunchKernel takes a pointer to each parameter's value.
    void *slots[kMaxParams];
    for (uint32_t i = 0; i < k.num_params; ++i)
      slots[i] = const_cast<void **>(&params[i]);
    CUresult r = gpu.cu->launchKernel(
        gpu.functions[kernel], k.grid[0], k.grid[1], k.grid[2], k.block[0],
        k.block[1], k.block[2], k.shared_size, gpu.stream, slots, nullptr);
    if (r != CUDA_SUCCESS) {
      self->error = r;
      self->failedKernel = kernel;
    }
  }
};

/// Profiler hooks around a GPU kernel: the stream is synchronised on both
/// sides, so that each kernel's time is its own (and no longer overlaps).
struct SyncedProfiler {
  GpuModel *gpu;
  const kiln_abi_profiler *inner;
  static void begin(void *context, int64_t kernel) {
    auto *self = static_cast<SyncedProfiler *>(context);
    self->gpu->cu->streamSynchronize(self->gpu->stream);
    self->inner->kernel_begin(self->inner->context, kernel);
  }
  static void end(void *context, int64_t kernel) {
    auto *self = static_cast<SyncedProfiler *>(context);
    self->gpu->cu->streamSynchronize(self->gpu->stream);
    self->inner->kernel_end(self->inner->context, kernel);
  }
};

} // namespace

namespace {

/// Checks that `bytes` at `pointer` lie in one allocation of the model's
/// GPU (a caller's device pointer is trusted no more than a host one).
kiln_status checkDevicePointer(const GpuModel &gpu, const void *pointer,
                               size_t bytes, const char *kind, const char *name,
                               size_t index) {
  const Driver *cu = gpu.cu;
  auto address = reinterpret_cast<CUdeviceptr>(pointer);
  unsigned memoryType = 0;
  CUcontext context = nullptr;
  CUdeviceptr start = 0;
  size_t size = 0;
  if (cu->pointerGetAttribute(&memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                              address) != CUDA_SUCCESS ||
      memoryType != CU_MEMORYTYPE_DEVICE ||
      cu->pointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT,
                              address) != CUDA_SUCCESS ||
      context != gpu.context)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s' (#%zu): KILN_DEVICE_CUDA, but %p is not memory "
                      "of the model's GPU",
                      kind, name, index, pointer);
  if (cu->pointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                              address) != CUDA_SUCCESS ||
      cu->pointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                              address) != CUDA_SUCCESS ||
      address - start > size || size - (address - start) < bytes)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "%s '%s' (#%zu): its %zu bytes at %p run past the end "
                      "of their device allocation",
                      kind, name, index, bytes, pointer);
  return nullptr;
}

} // namespace

kiln_status runGpuModel(GpuModel &gpu,
                        int32_t (*run)(const kiln_abi_run_args *),
                        const kiln_abi_model *d, const void *const *inputs,
                        void *const *outputs, const std::vector<bool> &onDevice,
                        const kiln_abi_profiler *profiler,
                        int64_t *symbolResults, kiln_abi_run_error *error) {
  if (gpu.broken)
    return makeStatus(KILN_STATUS_DEVICE_ERROR,
                      "the model's GPU state is broken by an earlier failed "
                      "run; release the handle and open the model again");
  const Driver *cu = gpu.cu;
  ContextScope current(cu, gpu.context);
  if (CUresult r = current.pushed(); r != CUDA_SUCCESS)
    return driverError(r, "cuCtxPushCurrent");
  auto broken = [&](CUresult r, const std::string &what) {
    gpu.broken = true;
    return makeStatus(r == CUDA_ERROR_OUT_OF_MEMORY ? KILN_STATUS_OUT_OF_MEMORY
                                                    : KILN_STATUS_DEVICE_ERROR,
                      "%s failed: %s; the handle is now unusable", what.c_str(),
                      resultName(r));
  };
  size_t numInputs = gpu.inputs.size(), numOutputs = gpu.outputs.size();
  // The caller's device memory as it is; host memory through the handle's
  // own device buffers.
  std::vector<void *> deviceInputs(numInputs), deviceOutputs(numOutputs);
  for (size_t i = 0; i < numInputs + numOutputs; ++i) {
    bool input = i < numInputs;
    size_t k = input ? i : i - numInputs;
    size_t bytes = input ? gpu.inputBytes[k] : gpu.outputBytes[k];
    const void *given = input ? inputs[k] : outputs[k];
    void *&target = input ? deviceInputs[k] : deviceOutputs[k];
    if (onDevice[i] && bytes) {
      if (kiln_status status = checkDevicePointer(
              gpu, given, bytes, input ? "input" : "output",
              input ? d->inputs[k].name : d->outputs[k].name, k))
        return status;
      target = const_cast<void *>(given);
    } else {
      target = reinterpret_cast<void *>(input ? gpu.inputs[k] : gpu.outputs[k]);
    }
  }
  for (size_t i = 0; i < numInputs; ++i)
    if (gpu.inputBytes[i] && !onDevice[i])
      if (CUresult r = cu->memcpyHtoDAsync(gpu.inputs[i], inputs[i],
                                           gpu.inputBytes[i], gpu.stream);
          r != CUDA_SUCCESS)
        return broken(r, "copying input '" + std::string(d->inputs[i].name) +
                             "' to the GPU");
  // The sizes start as the caller's (-1: not written), so that one the run
  // does not write shows.
  if (gpu.results)
    if (CUresult r = cu->memcpyHtoDAsync(gpu.results, symbolResults,
                                         gpu.resultsBytes, gpu.stream);
        r != CUDA_SUCCESS)
      return broken(r, "copying the sizes to the GPU");
  // No check failed yet.
  *error = kiln_abi_run_error{-1, 0};
  if (gpu.runError)
    if (CUresult r = cu->memcpyHtoDAsync(gpu.runError, error, sizeof(*error),
                                         gpu.stream);
        r != CUDA_SUCCESS)
      return broken(r, "clearing the index checks' slot on the GPU");

  Launcher launcher{&gpu, d};
  kiln_abi_gpu table{&launcher, &Launcher::launch,
                     reinterpret_cast<void *>(gpu.constants)};
  SyncedProfiler synced{&gpu, profiler};
  kiln_abi_profiler hooks{&synced, &SyncedProfiler::begin,
                          &SyncedProfiler::end};
  kiln_abi_run_args args;
  args.abi_version = d->abi_version;
  args.num_threads = 1;
  args.inputs = deviceInputs.data();
  args.outputs = deviceOutputs.data();
  args.workspace = reinterpret_cast<void *>(gpu.workspace);
  args.profiler = profiler ? &hooks : nullptr;
  args.gpu = &table;
  args.symbol_values = nullptr; // a GPU model has no symbolic dimensions
  args.symbol_results = reinterpret_cast<int64_t *>(gpu.results);
  args.error = reinterpret_cast<kiln_abi_run_error *>(gpu.runError);
  int32_t result = callModel(run, &args);
  if (result != KILN_ABI_RUN_OK)
    return makeStatus(KILN_STATUS_INTERNAL, "kiln_abi_run failed with code %d",
                      result);
  if (launcher.error != CUDA_SUCCESS)
    return broken(launcher.error,
                  "launching kernel '" +
                      std::string(launcher.failedKernel >= 0 &&
                                          launcher.failedKernel < d->num_kernels
                                      ? d->kernels[launcher.failedKernel].name
                                      : "?") +
                      "'");
  for (size_t i = 0; i < numOutputs; ++i)
    if (gpu.outputBytes[i] && !onDevice[numInputs + i])
      if (CUresult r = cu->memcpyDtoHAsync(outputs[i], gpu.outputs[i],
                                           gpu.outputBytes[i], gpu.stream);
          r != CUDA_SUCCESS)
        return broken(r, "copying output '" + std::string(d->outputs[i].name) +
                             "' from the GPU");
  if (gpu.results)
    if (CUresult r = cu->memcpyDtoHAsync(symbolResults, gpu.results,
                                         gpu.resultsBytes, gpu.stream);
        r != CUDA_SUCCESS)
      return broken(r, "copying the sizes from the GPU");
  if (gpu.runError)
    if (CUresult r = cu->memcpyDtoHAsync(error, gpu.runError, sizeof(*error),
                                         gpu.stream);
        r != CUDA_SUCCESS)
      return broken(r, "copying the index checks' slot from the GPU");
  // Launch errors surface here, asynchronously.
  if (CUresult r = cu->streamSynchronize(gpu.stream); r != CUDA_SUCCESS)
    return broken(r, "running the model on the GPU");
  return nullptr;
}

} // namespace kiln::runtime
