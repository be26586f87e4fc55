//===- kiln-opt.cpp - Kiln's mlir-opt -------------------------------------===//
//
// Runs any Kiln or upstream pass or pipeline on textual IR. Every upstream
// dialect and pass is registered as in mlir-opt, plus Kiln's dialects, passes
// (`--kiln-...`) and pipelines.
//
//===----------------------------------------------------------------------===//

#include "lib/Pipeline/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates the kernels (kiln-gpu-codegen).
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllPasses();
  kiln::registerDialects(registry);
  kiln::registerPassesAndPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "Kiln optimizer driver: runs Kiln and MLIR passes\n",
      registry));
}
