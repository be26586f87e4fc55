//===- GPUTarget.h - NVIDIA GPU architectures and ptxas ---------*- C++ -*-===//
//
// What `--target=nvptx` needs besides LLVM: the GPU architectures a model is
// compiled for, checked before LLVM sees them (an architecture that LLVM or
// the toolkit does not know aborts the process inside LLVM), and the CUDA
// toolkit's ptxas, run as a subprocess as Linker.cpp runs ld.lld.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_TARGET_GPUTARGET_H
#define KILN_LIB_TARGET_GPUTARGET_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kiln {

/// The architectures a GPU model gets when none is asked for: cubins for
/// Ampere (sm_80, which Ada's sm_89 also runs) and Hopper (sm_90), and the
/// PTX of the first, which the driver compiles for any newer GPU.
inline constexpr const char *kDefaultGPUArchs = "sm_80,sm_90";

/// The architectures Kiln compiles for: those that both LLVM 22's NVPTX back
/// end and CUDA 13's ptxas know, from sm_75 (CUDA 13 dropped the older).
const std::vector<std::string> &knownGPUArchs();

/// Parses a comma-separated `--gpu-arch` list ("sm_80,sm_90a"; empty: the
/// default) into distinct, known architectures, in ascending order.
llvm::Expected<std::vector<std::string>>
resolveGPUArchs(const std::string &list);

/// The CUDA toolkit's root: `cudaPath` if given, else $CUDA_HOME,
/// $CUDA_PATH, then /usr/local/cuda; an error unless it holds bin/ptxas.
llvm::Expected<std::string> findCUDAToolkit(const std::string &cudaPath);

/// ptxas's view of one kernel (`ptxas -v`).
struct PtxasKernelInfo {
  std::string name;
  int64_t registers = 0;
  int64_t spillStores = 0, spillLoads = 0;
  int64_t stackBytes = 0;
  int64_t sharedBytes = 0;
};

/// A cubin made by ptxas, and what it said of each kernel.
struct Cubin {
  std::string data;
  std::vector<PtxasKernelInfo> kernels;
};

/// Assembles `ptx` for `arch` with the toolkit's ptxas (-O3, -v). An error
/// carries ptxas's own message and the command that reproduces it.
llvm::Expected<Cubin> runPtxas(const std::string &toolkit,
                               const std::string &ptx, const std::string &arch);

} // namespace kiln

#endif // KILN_LIB_TARGET_GPUTARGET_H
