//===- ModelABI.h - Emit the model ABI of include/kiln/model_abi.h -*- C++ -*-//

#ifndef KILN_LIB_TARGET_MODELABI_H
#define KILN_LIB_TARGET_MODELABI_H

#include "lib/Target/TargetInfo.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// One input or output as the model ABI describes it.
struct TensorSignature {
  std::string name;
  int32_t dtype = 0; // a kiln_dtype
  /// Static sizes, and -1 - k for symbolic dimension k of
  /// ModelSignature::symbols.
  std::vector<int64_t> shape;
  /// Whether the entry function takes this tensor's pointer. A tensor with
  /// no elements holds no data: the model neither reads nor writes it.
  bool passed = true;
  /// Bytes of one sample, where the entry runs once per sample
  /// (ModelSignature::repeat above 1): times the run's sizes of the
  /// symbolic dimensions after the first, where the entry reads them.
  uint64_t sampleBytes = 0;
};

/// A symbolic dimension (kiln_abi_symbol).
struct SymbolSignature {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  int32_t kind = 0; // a KILN_ABI_SYMBOL_*
};

/// A run-time index check (kiln_abi_check).
struct CheckSignature {
  std::string source;
  std::string what;
  int64_t low = 0;
  int64_t high = 0;
};

/// One kernel of the model's kernel table (kiln_abi_kernel).
struct KernelSignature {
  std::string name; // the function's name in the LLVM module
  std::string source;
  uint64_t flops = 0;
};

/// How a GPU kernel is launched (kiln_abi_gpu_kernel), parallel to its
/// KernelSignature; its host stub is the declared function of that name.
struct GPUKernelSignature {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t numParams = 0;
};

/// One image of a GPU model's kernels (kiln_abi_device_image): a cubin or
/// PTX. An emulation image is made from the `<kernel>_emu` functions.
struct DeviceImage {
  std::string arch;
  int32_t format = 0; // a KILN_ABI_IMAGE_*
  std::string data;
};

/// What the model's entry function takes: inputs, then outputs, one pointer
/// each for those `passed` (the bare-pointer calling convention of the CPU
/// pipeline).
struct ModelSignature {
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  uint64_t workspaceSize = 0;
  /// How many times kiln_abi_run calls the entry, each time on the next
  /// sample of every input and output (kiln-compile --batch-split).
  int64_t repeat = 1;
  /// The model's symbolic dimensions, and the one whose run-time size is
  /// the repeat count instead of `repeat` (-1: none).
  std::vector<SymbolSignature> symbols;
  int64_t repeatSymbol = -1;
  /// How many samples of a split batch may run side by side, one thread
  /// each, in workspaces of their own: the descriptor's workspace holds this
  /// many of `workspaceSize`, each rounded up to the alignment. 1: the
  /// samples run one after the other, each on all the run's threads.
  int64_t sampleSlots = 1;
  /// The entry's arguments after the outputs' that receive the run's size
  /// of a KILN_ABI_SYMBOL_RESULT symbol (one int64_t each), by symbol.
  std::vector<size_t> resultArgs;
  uint64_t workspaceAlign = 64;
  /// The code runs parallel regions through OpenMP (libomp): kiln_abi_run
  /// sets their thread count from its arguments.
  bool usesOpenMP = false;
  /// The functions the entry calls one after the other, each timed when the
  /// caller passes profiler hooks.
  std::vector<KernelSignature> kernels;

  /// A GPU model (KILN_ABI_DEVICE_CUDA): the entry takes device addresses,
  /// then the constants segment's (when `constantsSize` is above 0); each
  /// kernel is a declared host stub that ModelABI defines, which hands the
  /// launch to the runtime.
  int32_t device = 0;
  std::vector<GPUKernelSignature> gpuKernels;
  std::vector<DeviceImage> deviceImages;
  /// The global that holds the constants segment, and its bytes.
  std::string constantsGlobal;
  uint64_t constantsSize = 0;
  /// Add an emulation image made of the `<kernel>_emu` functions.
  bool emulation = false;
  /// The run-time index checks, and the thread-local global (a
  /// `[2 x i64]`) where the code records the first that failed: its
  /// number + 1 and the index.
  std::vector<CheckSignature> checks;
  std::string runErrorGlobal;
  /// The checks record instead into the entry's argument after the
  /// workspace: the run's `error` (a CUDA model's, in device memory), which
  /// the runtime reads after the run; kiln_abi_run itself returns OK.
  bool runErrorArgument = false;
};

/// At most this many samples of a split batch run side by side, and their
/// workspaces together take at most kMaxSampleWorkspaceBytes (untouched
/// slots cost address space, not memory).
constexpr int64_t kMaxSampleSlots = 16;
constexpr uint64_t kMaxSampleWorkspaceBytes = uint64_t(1) << 30;

/// The `sampleSlots` that suit `signature` and the code in `module`: more
/// than 1 where the batch is split, the code runs on OpenMP threads, and
/// one sample's run touches no state that another's could (no mutable
/// globals, no index checks, whose failure is recorded per thread; a CPU
/// model).
int64_t chooseSampleSlots(const ModelSignature &signature,
                          const llvm::Module &module);

/// Adds `kiln_abi_describe` and `kiln_abi_run` to `module`, the latter
/// calling `entryName`, wraps every call of a kernel in `entryName` with the
/// profiler hooks of the run arguments, and gives every other definition
/// internal linkage so that the shared object exports the ABI and nothing else.
llvm::Error emitModelABI(llvm::Module &module, const std::string &entryName,
                         const ModelSignature &signature,
                         const TargetInfo &target);

} // namespace kiln

#endif // KILN_LIB_TARGET_MODELABI_H
