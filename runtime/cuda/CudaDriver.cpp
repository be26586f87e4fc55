//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "cuda/CudaDriver.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include <dlfcn.h>

namespace kiln::runtime::cuda {

const char *resultName(CUresult result) {
  switch (result) {
  case CUDA_SUCCESS:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case CUDA_ERROR_OUT_OF_MEMORY:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 4:
    return "CUDA_ERROR_DEINITIALIZED";
  case CUDA_ERROR_STUB_LIBRARY:
    return "CUDA_ERROR_STUB_LIBRARY";
  case CUDA_ERROR_INSUFFICIENT_DRIVER:
    return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case CUDA_ERROR_NO_DEVICE:
    return "CUDA_ERROR_NO_DEVICE";
  case CUDA_ERROR_INVALID_DEVICE:
    return "CUDA_ERROR_INVALID_DEVICE";
  case CUDA_ERROR_INVALID_IMAGE:
    return "CUDA_ERROR_INVALID_IMAGE";
  case 201:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case CUDA_ERROR_INVALID_PTX:
    return "CUDA_ERROR_INVALID_PTX";
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case CUDA_ERROR_NOT_FOUND:
    return "CUDA_ERROR_NOT_FOUND";
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701:
    return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702:
    return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case CUDA_ERROR_LAUNCH_FAILED:
    return "CUDA_ERROR_LAUNCH_FAILED";
  default:
    return "CUDA_ERROR_UNKNOWN";
  }
}

namespace {

struct Loaded {
  std::unique_ptr<Driver> driver; // null when loading failed
  std::string error;
  CUresult initResult = CUDA_SUCCESS;
};

template <typename Fn> bool lookup(void *library, const char *name, Fn &fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  return fn != nullptr;
}

Loaded load(const std::string &path) {
  Loaded loaded;
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    loaded.error = "no NVIDIA driver: cannot load " + path + " (" +
                   (why ? why : "unknown error") +
                   "); install the NVIDIA driver, or set KILN_CUDA_DRIVER";
    loaded.initResult = CUDA_ERROR_NO_DEVICE;
    return loaded;
  }
  auto driver = std::make_unique<Driver>();
  driver->library = library;
  driver->path = path;
  const char *missing = nullptr;
  auto need = [&](const char *name, auto &fn) {
    if (!missing && !lookup(library, name, fn))
      missing = name;
  };
  need("cuInit", driver->init);
  need("cuDriverGetVersion", driver->driverGetVersion);
  need("cuDeviceGetCount", driver->deviceGetCount);
  need("cuDeviceGet", driver->deviceGet);
  need("cuDeviceGetAttribute", driver->deviceGetAttribute);
  need("cuDeviceGetName", driver->deviceGetName);
  need("cuDevicePrimaryCtxRetain", driver->primaryCtxRetain);
  need("cuDevicePrimaryCtxRelease_v2", driver->primaryCtxRelease);
  need("cuCtxPushCurrent_v2", driver->ctxPushCurrent);
  need("cuCtxPopCurrent_v2", driver->ctxPopCurrent);
  need("cuModuleLoadDataEx", driver->moduleLoadDataEx);
  need("cuModuleUnload", driver->moduleUnload);
  need("cuModuleGetFunction", driver->moduleGetFunction);
  need("cuMemAlloc_v2", driver->memAlloc);
  need("cuMemFree_v2", driver->memFree);
  need("cuMemcpyHtoD_v2", driver->memcpyHtoD);
  need("cuMemcpyHtoDAsync_v2", driver->memcpyHtoDAsync);
  need("cuMemcpyDtoHAsync_v2", driver->memcpyDtoHAsync);
  need("cuStreamCreate", driver->streamCreate);
  need("cuStreamDestroy_v2", driver->streamDestroy);
  need("cuStreamSynchronize", driver->streamSynchronize);
  need("cuPointerGetAttribute", driver->pointerGetAttribute);
  need("cuLaunchKernel", driver->launchKernel);
  if (missing) {
    loaded.error = path + " is not a CUDA driver: it has no " + missing;
    loaded.initResult = CUDA_ERROR_NOT_FOUND;
    dlclose(library);
    return loaded;
  }
  lookup(library, "kiln_emulator_attach", driver->emulatorAttach);
  CUresult result = driver->init(0);
  if (result != CUDA_SUCCESS) {
    loaded.initResult = result;
    if (result == CUDA_ERROR_STUB_LIBRARY)
      loaded.error = path +
                     " is the CUDA toolkit's stub driver, which cannot run "
                     "anything: put the NVIDIA driver's libcuda.so.1 first "
                     "on the library path";
    else if (result == CUDA_ERROR_NO_DEVICE)
      loaded.error = "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)";
    else
      loaded.error = std::string("cuInit failed: ") + resultName(result);
    dlclose(library);
    return loaded;
  }
  loaded.driver = std::move(driver);
  return loaded;
}

} // namespace

const Driver *loadDriver(std::string &error, CUresult &initResult) {
  const char *env = std::getenv("KILN_CUDA_DRIVER");
  std::string path = env && *env ? env : "libcuda.so.1";
  static std::mutex mutex;
  // Never unloaded: a driver keeps threads and state for the process.
  static std::map<std::string, Loaded> *drivers =
      new std::map<std::string, Loaded>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = drivers->find(path);
  if (it == drivers->end())
    it = drivers->emplace(path, load(path)).first;
  error = it->second.error;
  initResult = it->second.initResult;
  return it->second.driver.get();
}

} // namespace kiln::runtime::cuda
