//===- TargetInfo.cpp - What Kiln compiles for ----------------------------===//

#include "lib/Target/TargetInfo.h"

#include "kiln/runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <mutex>

using namespace llvm;

namespace kiln {

void initializeLLVMTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeAllTargetInfos();
    InitializeAllTargets();
    InitializeAllTargetMCs();
    InitializeAllAsmPrinters();
    InitializeAllAsmParsers();
  });
}

Expected<TargetInfo> resolveTarget(const std::string &target,
                                   const std::string &cpu,
                                   const std::string &features,
                                   unsigned sveVectorBits) {
  initializeLLVMTargets();
  TargetInfo info;
  Triple host(sys::getDefaultTargetTriple());
  if (target == "x86-64" || target == "x86_64") {
    info.arch = TargetArch::X86_64;
    info.triple = "x86_64-unknown-linux-gnu";
  } else if (target == "aarch64" || target == "arm64") {
    info.arch = TargetArch::AArch64;
    info.triple = "aarch64-unknown-linux-gnu";
  } else if (target == "nvptx") {
    // The host code of a GPU model: x86-64 (resolvePipelineOptions picks
    // its default CPU).
    Expected<TargetInfo> host =
        resolveTarget("x86-64", cpu, features, sveVectorBits);
    if (host)
      host->arch = TargetArch::NVPTX;
    return host;
  } else {
    return createStringError("unknown target '" + target +
                             "' (expected x86-64, aarch64 or nvptx)");
  }
  Triple triple(info.triple);
  bool isHost = triple.getArch() == host.getArch();

  info.cpu = cpu;
  if (info.cpu.empty() || info.cpu == "native" || info.cpu == "host")
    info.cpu = isHost ? sys::getHostCPUName().str() : "generic";
  if (info.cpu.empty() || info.cpu == "generic")
    info.cpu = info.arch == TargetArch::X86_64 ? "x86-64" : "generic";

  std::string error;
  const llvm::Target *llvmTarget = TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return createStringError("no LLVM target for " + info.triple + ": " +
                             error);

  // The CPU's own features, plus those of the host when compiling for it,
  // then the user's additions and removals.
  SmallVector<std::string> featureList;
  if ((cpu.empty() || cpu == "native" || cpu == "host") && isHost) {
    for (const auto &feature : sys::getHostCPUFeatures())
      featureList.push_back((feature.second ? "+" : "-") +
                            feature.first().str());
  }
  for (StringRef feature : split(features, ',')) {
    feature = feature.trim();
    if (feature.empty())
      continue;
    if (feature[0] != '+' && feature[0] != '-')
      return createStringError("feature '" + feature.str() +
                               "' must start with + or -");
    featureList.push_back(feature.str());
  }
  info.llvmFeatures = join(featureList, ",");

  // Ask the subtarget which features end up enabled, and check the CPU name.
  std::unique_ptr<MCSubtargetInfo> subtarget(
      llvmTarget->createMCSubtargetInfo(triple, info.cpu, info.llvmFeatures));
  if (!subtarget || !subtarget->isCPUStringValid(info.cpu))
    return createStringError("unknown CPU '" + info.cpu + "' for target " +
                             target);
  // Record the enabled features among those the runtime can check on the
  // running machine: the runtime refuses any other name.
  StringSet<> known;
  for (const SubtargetFeatureKV &kv : subtarget->getAllProcessorFeatures())
    known.insert(kv.Key);
  SmallVector<std::string> required;
  SmallVector<StringRef> checkable;
  StringRef(kiln_runtime_known_cpu_features(info.triple.c_str()))
      .split(checkable, ',', -1, /*KeepEmpty=*/false);
  for (StringRef name : checkable)
    if (known.contains(name) && subtarget->checkFeatures(("+" + name).str()))
      required.push_back(name.str());
  info.requiredFeatures = join(required, ",");

  auto has = [&](StringRef name) { return is_contained(required, name); };
  if (info.arch == TargetArch::X86_64) {
    info.vectorWidthF32 = has("avx512f") ? 16 : has("avx") ? 8 : 4;
    info.vectorRegisters = has("avx512f") ? 32 : 16;
    if (info.vectorWidthF32 == 16 && has("avx512vnni"))
      info.int8DotLanes = 16;
    else if (info.vectorWidthF32 == 8 &&
             (has("avxvnni") || (has("avx512vnni") && has("avx512vl"))))
      info.int8DotLanes = 8;
    if (info.int8DotLanes)
      info.int8Dot = "vpdpbusd";
    if (info.vectorWidthF32 == 16 && has("avx512bf16")) {
      info.bf16Dot = "vdpbf16ps";
      info.bf16DotLanes = 16;
    }
    // LLVM tunes Intel's AVX-512 server cores (Skylake-SP to Emerald
    // Rapids) to prefer 256-bit vectors, against the clock penalty of
    // 512-bit code on the first of them. Kiln's own kernels are 512-bit
    // vector code already, so that tuning only made the loops that LLVM
    // vectorizes itself (pools, Winograd's transforms, copies) half as
    // wide beside them: on Emerald Rapids SqueezeNet's pools took 0.22 ms
    // against 0.14, its 3x3 layers 0.20 against 0.15, the model 10% more.
    // A user's +prefer-256-bit wins.
    if (info.vectorWidthF32 == 16 &&
        !llvm::is_contained(featureList, "+prefer-256-bit"))
      info.llvmFeatures +=
          info.llvmFeatures.empty() ? "-prefer-256-bit" : ",-prefer-256-bit";
  } else {
    info.vectorWidthF32 = 4;
    info.vectorRegisters = 32;
    info.transposeBlock = 0;
    // NEON's dot products (an SVE vector length set below turns them off).
    if (has("i8mm"))
      info.int8Dot = "usdot";
    else if (has("dotprod"))
      info.int8Dot = "sdot";
    if (!info.int8Dot.empty())
      info.int8DotLanes = 4;
    if (has("bf16")) {
      info.bf16Dot = "bfdot";
      info.bf16DotLanes = 4;
    }
  }

  if (sveVectorBits != 0) {
    if (info.arch != TargetArch::AArch64)
      return createStringError("--sve-vector-bits is for the aarch64 target");
    if (sveVectorBits < 128 || sveVectorBits > 2048 || sveVectorBits % 128)
      return createStringError(
          "--sve-vector-bits=" + std::to_string(sveVectorBits) +
          " is not an SVE vector length (128 to 2048, "
          "a multiple of 128)");
    if (!has("sve"))
      return createStringError("--sve-vector-bits needs SVE: choose an SVE "
                               "CPU or add --features=+sve");
    info.sveVectorBits = sveVectorBits;
    info.vectorWidthF32 = static_cast<int>(sveVectorBits / 32);
    info.int8Dot.clear();
    info.int8DotLanes = 0;
    info.bf16Dot.clear();
    info.bf16DotLanes = 0;
    // Not an LLVM feature: the runtime checks the running thread's vector
    // length (prctl PR_SVE_GET_VL) against it.
    required.push_back("sve-vector-bits=" + std::to_string(sveVectorBits));
    info.requiredFeatures = join(required, ",");
  }
  return info;
}

Expected<std::unique_ptr<TargetMachine>>
TargetInfo::createTargetMachine() const {
  initializeLLVMTargets();
  std::string error;
  Triple llvmTriple(triple);
  const llvm::Target *target = TargetRegistry::lookupTarget(llvmTriple, error);
  if (!target)
    return createStringError(error);
  llvm::TargetOptions options;
  // Fuse multiplies and adds into FMAs wherever the code allows, as
  // -ffp-contract=fast does: ONNX fixes no rounding of intermediate products,
  // and every fast CPU kernel library contracts.
  options.AllowFPOpFusion = FPOpFusion::Fast;
  // Constructors (lib/Target/HalfStorage.h) in .init_array, which the
  // dynamic loader runs; .ctors needs the C runtime's start files, which a
  // model is not linked with.
  options.UseInitArray = true;
  std::unique_ptr<TargetMachine> machine(target->createTargetMachine(
      llvmTriple, cpu, llvmFeatures, options, Reloc::PIC_, std::nullopt,
      CodeGenOptLevel::Aggressive));
  if (!machine)
    return createStringError("cannot create a target machine for " + triple);
  return machine;
}

} // namespace kiln
