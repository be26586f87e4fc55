//===- ObjectEmitter.cpp - LLVM IR to optimised object code ---------------===//

#include "lib/Target/ObjectEmitter.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace kiln {

Error optimizeModule(Module &module, TargetMachine &machine,
                     unsigned sveVectorBits) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  // Every function gets the target's CPU and features, as clang would set,
  // but for one that has its own (HalfStorage.h: the baseline's).
  for (Function &function : module.functions()) {
    if (function.isDeclaration() || function.hasFnAttribute("target-cpu"))
      continue;
    function.addFnAttr("target-cpu", machine.getTargetCPU());
    if (!machine.getTargetFeatureString().empty())
      function.addFnAttr("target-features", machine.getTargetFeatureString());
    // A known SVE vector length: LLVM then lowers fixed-length vectors wider
    // than NEON's to SVE instructions of that length.
    if (sveVectorBits != 0)
      function.addFnAttr(Attribute::getWithVScaleRangeArgs(
          module.getContext(), sveVectorBits / 128, sveVectorBits / 128));
  }
  if (verifyModule(module, &errs()))
    return createStringError("the generated LLVM IR is invalid");

  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager mpm =
      builder.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
  mpm.run(module, mam);
  return Error::success();
}

static Error emit(Module &module, TargetMachine &machine, std::string &out,
                  CodeGenFileType kind) {
  raw_string_ostream stream(out);
  buffer_ostream buffered(stream);
  legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, buffered, nullptr, kind))
    return createStringError("the target cannot emit this kind of file");
  pm.run(module);
  return Error::success();
}

Error emitObject(Module &module, TargetMachine &machine, std::string &object) {
  return emit(module, machine, object, CodeGenFileType::ObjectFile);
}

Error emitAssembly(Module &module, TargetMachine &machine,
                   std::string &assembly) {
  return emit(module, machine, assembly, CodeGenFileType::AssemblyFile);
}

} // namespace kiln
