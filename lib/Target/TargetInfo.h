//===- TargetInfo.h - What Kiln compiles for --------------------*- C++ -*-===//

#ifndef KILN_LIB_TARGET_TARGETINFO_H
#define KILN_LIB_TARGET_TARGETINFO_H

#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace kiln {

enum class TargetArch { X86_64, AArch64, NVPTX };

/// The cost model by which kiln-cpu-select-conv-algorithm picks each
/// convolution's algorithm, in units of one multiply-add of a
/// register-blocked contraction. Fitted on the Zen 5 machines Kiln is
/// measured on (docs/performance.md, "Convolution algorithms"); no other
/// CPU has been fitted yet, so every target takes these values until one is.
struct ConvCostModel {
  /// One multiply-add in a copy or transform loop (NCHW im2col's copy,
  /// Winograd's transforms in NCHW): least squares over 16 measured layers
  /// and algorithms.
  double transform = 20.0;
  /// One multiply-add of the loop path of an NCHW convolution ("direct"):
  /// not fitted, an estimate of its vector efficiency.
  double direct = 6.0;
  /// The blocked direct convolution's one pass over its output: loading
  /// and storing an output element's accumulators.
  double pass = 2.0;
  /// Winograd's transforms in the blocked layout, per multiply-add: F(2,3)
  /// (fitted when its output transform stored 2x2 tiles with scatters; not
  /// refitted since they went), and F(4,3) and F(6,3), which LLVM vectorizes
  /// along the channel block. Least squares over 8 layers x 4 algorithms.
  double blockedTransformF2 = 24.0;
  double blockedTransform = 2.0;
  /// Reading one float of a filter from memory: a core streams about 5 G
  /// floats/s from DRAM where it makes 125 G multiply-adds/s (Zen 5).
  double weight = 25.0;
  /// Winograd's transformed tensors stay in cache up to this many floats
  /// (8 MB, a quarter of a Zen 5 CCD's 32 MB L3); each float beyond costs
  /// `spill`, the traffic to memory and back (fitted to 8 layers at batch 1
  /// and 8).
  int64_t winogradCachedFloats = 2 << 20;
  double spill = 130.0;
};

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
  /// The target's 8-bit dot-product instruction (four byte products
  /// summed into each i32 lane) and its lanes: x86 "vpdpbusd" (u8 x s8), 16
  /// lanes with AVX-512 VNNI, 8 with AVX-VNNI (or AVX-512 VNNI and VL) on a
  /// target of 8-lane vectors; AArch64 NEON "usdot" (u8 x s8, i8mm) or
  /// "sdot" (s8 x s8, dotprod), 4 lanes; "" and 0 without one. Quantised
  /// convolutions and matrix products compute in 8-bit integers where the
  /// lanes are the fp32 vector width.
  std::string int8Dot;
  int int8DotLanes = 0;
  /// The target's bf16 dot-product instruction (two bf16 products summed
  /// into each f32 lane) and its lanes: x86 "vdpbf16ps" (AVX512-BF16, 16
  /// lanes on a target of 16-lane vectors), AArch64 NEON "bfdot" (BF16, 4);
  /// "" and 0 without one. --precision=bf16 needs it.
  std::string bf16Dot;
  int bf16DotLanes = 0;
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
  /// Where a direct blocked convolution's weights are at most this many
  /// bytes, they stay in a core's L2 while the whole input passes once
  /// (kiln-cpu-tile-and-vectorize's tile order): half of Zen 5's 1 MB L2,
  /// and of the 1 MB L2 of Arm's Neoverse N1/V1 cores.
  int64_t cachedWeightBytes = 512 << 10;
  /// Transposes that move the innermost dimension go through square
  /// register blocks of this many f32 (kiln-cpu-reorder-loops), with
  /// upstream's 16x16 shuffle lowering, which is written for x86's 8-lane
  /// unpack and shuffle instructions: 16 on x86-64 (measured on Zen 5,
  /// AVX-512: BERT-base's key transposes 4x faster), 0 (element by element)
  /// on AArch64, where that lowering has not been measured.
  int64_t transposeBlock = 16;
  /// The convolution algorithms' cost model.
  ConvCostModel convCosts;

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
