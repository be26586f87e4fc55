//===- ApplyKernelConfigs.cpp - Kernel configurations from a database -----===//
//
// The pass is a thin wrapper: the database, the signatures and the checks
// are in KernelConfig.cpp, which the compiler's --emit=kernels shares.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/KernelConfig.h"
#include "codegen/Common/Passes.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENAPPLYKERNELCONFIGS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

struct CodegenApplyKernelConfigsPass
    : impl::CodegenApplyKernelConfigsBase<CodegenApplyKernelConfigsPass> {
  using CodegenApplyKernelConfigsBase::CodegenApplyKernelConfigsBase;

  void runOnOperation() override {
    if (tuningDB.empty())
      return;
    if (stage != "kernels" && stage != "loop-nests") {
      emitError(UnknownLoc::get(&getContext()))
          << "kiln-codegen-apply-kernel-configs: stage is kernels or "
             "loop-nests, not '"
          << stage << "'";
      return signalPassFailure();
    }
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
                                  /*applied=*/nullptr,
                                  stage == "kernels" ? KernelStage::Kernels
                                                     : KernelStage::LoopNests)))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln::codegen
