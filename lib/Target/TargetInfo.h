//===- TargetInfo.h - What Kiln compiles for --------------------*- C++ -*-===//

#ifndef KILN_LIB_TARGET_TARGETINFO_H
#define KILN_LIB_TARGET_TARGETINFO_H

#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace kiln {

enum class TargetArch { X86_64, AArch64, NVPTX };

/// A resolved compilation target: the triple, CPU and LLVM feature string,
/// and the features a model compiled for it requires at run time.
struct TargetInfo {
  TargetArch arch = TargetArch::X86_64;
  std::string triple;
  std::string cpu;
  /// LLVM's feature string, e.g. "+avx2,+fma,-avx512f".
  std::string llvmFeatures;
  /// Features the generated code needs, among those the runtime can check,
  /// comma-separated without signs (see kiln_abi_model::cpu_features).
  std::string requiredFeatures;
  /// Width of the widest fp32 vector register in elements (16 for AVX-512,
  /// 8 for AVX2, 4 for NEON); codegen blocks by it.
  int vectorWidthF32 = 4;
  /// Vector registers the code may use: 32 for AVX-512 and for AArch64
  /// (NEON and SVE), 16 for AVX and SSE. Register blocks are sized by it.
  int vectorRegisters = 32;
  /// AArch64 with SVE: the vector length the code is specialised for (0:
  /// NEON-width code). Every function gets vscale_range(bits/128, bits/128),
  /// so that LLVM lowers the wide fixed-length vectors to SVE.
  unsigned sveVectorBits = 0;
  /// Where a batch's largest activation stops fitting in the caches, so that
  /// running the batch one sample at a time pays (kiln-graph-split-batch):
  /// half the 32 MB L3 of the Zen 5 machines Kiln is measured on, above a
  /// server core's 1-2 MB L2 many times over. The same for every CPU until
  /// another is measured.
  int64_t batchSplitCacheBytes = 16 << 20;

  /// Output rows of a contraction's register block, which holds rows x 2
  /// accumulator vectors, plus two vectors of the right-hand side and one
  /// broadcast of the left: 8 rows (19 registers) with 32 registers, 6 (15)
  /// with AVX2's or SSE's 16, where 8 rows spill (a 256x512x256 matmul on
  /// Haswell code: 0.73 ms against 1.9 ms).
  int registerBlockRows() const { return vectorRegisters >= 32 ? 8 : 6; }

  /// Creates an LLVM target machine for this target (PIC, O3).
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
  createTargetMachine() const;
};

/// Resolves `--target`, `--cpu` and `--features` as kiln-compile takes them.
/// An empty `cpu` means the host CPU when compiling for the host architecture
/// and a generic CPU otherwise; `features` adds to or removes from the CPU's.
/// `sveVectorBits` (AArch64 with SVE only) is `--sve-vector-bits`.
llvm::Expected<TargetInfo> resolveTarget(const std::string &target,
                                         const std::string &cpu,
                                         const std::string &features,
                                         unsigned sveVectorBits = 0);

/// Registers LLVM's targets once per process.
void initializeLLVMTargets();

} // namespace kiln

#endif // KILN_LIB_TARGET_TARGETINFO_H
