//===- ApplyKernelConfigs.cpp - Kernel configurations from a database -----===//
//
// The pass is a thin wrapper: the database, the signatures and the checks
// are in KernelConfig.cpp, which the compiler's --emit=kernels shares.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/KernelConfig.h"
#include "codegen/CPU/Passes.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUAPPLYKERNELCONFIGS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

struct CPUApplyKernelConfigsPass
    : impl::CPUApplyKernelConfigsBase<CPUApplyKernelConfigsPass> {
  using CPUApplyKernelConfigsBase::CPUApplyKernelConfigsBase;

  void runOnOperation() override {
    if (tuningDB.empty())
      return;
    llvm::Expected<TuningDatabase> database = TuningDatabase::load(tuningDB);
    if (!database) {
      // About the file, not about an op of the module.
      emitError(UnknownLoc::get(&getContext()))
          << llvm::toString(database.takeError());
      return signalPassFailure();
    }
    KernelTarget kernelTarget;
    kernelTarget.key = target;
    kernelTarget.vectorWidth = vectorWidth;
    kernelTarget.parallel = parallel;
    if (failed(applyKernelConfigs(getOperation(), *database, kernelTarget,
                                  /*applied=*/nullptr)))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
