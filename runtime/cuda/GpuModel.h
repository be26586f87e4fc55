//===- GpuModel.h - Opening and running a CUDA model ------------*- C++ -*-===//
//
// Internal to the runtime: what kiln_model_open and kiln_model_run do for a
// model compiled with --target=nvptx (device KILN_ABI_DEVICE_CUDA). The
// driver is loaded at the first open; each handle holds its module, one
// stream and its device memory (constants, workspace, inputs and outputs),
// all allocated at open, so that a run allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CUDA_GPUMODEL_H
#define KILN_RUNTIME_CUDA_GPUMODEL_H

#include "kiln/model_abi.h"
#include "kiln/runtime.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

struct GpuModel;

struct GpuModelDeleter {
  void operator()(GpuModel *model) const;
};
using GpuModelPtr = std::unique_ptr<GpuModel, GpuModelDeleter>;

/// Checks the version 3 fields of a CUDA model's descriptor (images, launch
/// table, constants), before anything reads them.
kiln_status checkGpuDescriptor(const kiln_abi_model *d);

/// Opens `d` (of the model at `path`) on CUDA device `deviceIndex`: the
/// driver, the image that matches the device, the kernels, the device
/// memory (a buffer per input and output, of the sizes the runtime checked)
/// and the constants.
kiln_status openGpuModel(const kiln_abi_model *d, int32_t deviceIndex,
                         const char *path,
                         const std::vector<kiln_tensor_info> &inputs,
                         const std::vector<kiln_tensor_info> &outputs,
                         GpuModelPtr &out);

/// One run: the inputs to the device, the model's launches on the handle's
/// stream, the outputs back, then a synchronisation whose error the run
/// reports. A tensor whose `onDevice` entry is set (inputs first, then
/// outputs) is already in the GPU's memory: its pointer, once checked with
/// the driver, is used as it is. A failed launch marks the handle broken.
/// A model with sizes that the data decides writes them into
/// `symbolResults` (host memory, an entry per symbol, whose values go to
/// the device first). `*error` gets the run's first failed index check
/// (check -1: none), which the kernels record in device memory.
kiln_status runGpuModel(GpuModel &gpu,
                        int32_t (*run)(const kiln_abi_run_args *),
                        const kiln_abi_model *d, const void *const *inputs,
                        void *const *outputs, const std::vector<bool> &onDevice,
                        const kiln_abi_profiler *profiler,
                        int64_t *symbolResults, kiln_abi_run_error *error);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CUDA_GPUMODEL_H
