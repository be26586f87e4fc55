//===- KernelConfig.h - Kernels and their configurations --------*- C++ -*-===//
//
// The contract between the auto-tuner (python/kiln/tune.py) and CPU code
// generation.
//
// A *kernel* is one linalg op on tensors that the CPU back end has knobs for:
// a 2-D NCHW convolution (kind "conv2d") or a contraction that
// kiln-cpu-tile-and-vectorize register-blocks (kind "contraction"). Its
// *signature* is a stable text naming the op, its operand and result types
// and the attributes that change the code (strides, dilations, indexing
// maps), so two ops with one signature get the same code in any model. Its
// *search space* lists, per knob, the values the back end accepts for it.
//
// A *tuning database* is a file of JSON lines, one record per measured (or
// pinned) configuration of a kernel on a target; see docs/tuning.md. The
// pass kiln-codegen-apply-kernel-configs attaches the best record's
// configuration to each kernel as a `kiln.kernel_config` attribute
// (KernelConfigAttr, KilnDialect.td), which the conv and tile-and-vectorize
// passes read through KernelConfigAttr::of; a knob that is absent takes the
// default.
//
// Extending it: a new knob is a new key in `searchSpace` and a new parameter
// of KernelConfigAttr, read by the pass it steers; a new convolution
// algorithm is a new case of the ConvAlgorithm enum, which the conv pass that
// implements it accepts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_KERNELCONFIG_H
#define KILN_CODEGEN_COMMON_KERNELCONFIG_H

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <optional>
#include <string>

namespace kiln::codegen {

/// The discardable attribute holding a kernel's configuration.
constexpr llvm::StringLiteral kKernelConfigAttrName = attr::kKernelConfig;

/// What the search space of a kernel depends on besides the op itself.
struct KernelTarget {
  /// Names the target in the database: "triple/cpu" plus "/features" when
  /// features were asked for.
  std::string key;
  /// fp32 elements in one vector register.
  int64_t vectorWidth = 16;
  /// Whether the pipeline may run output tiles on several threads.
  bool parallel = false;
};

/// A kernel as the tuner sees it.
struct TunableKernel {
  /// "conv2d", "contraction", "window", "elementwise" or "reduction"
  std::string kind;
  std::string signature; ///< stable, see kernelSignature
  llvm::json::Object space;
  double flops = 0; ///< multiply-adds times two
};

/// The kernel that `op` is, or nothing when the back end has no knobs for it.
/// Where in the CPU pipeline a kernel's configuration is attached: the
/// convolutions and contractions right after lowering to linalg (their
/// signatures as the ops were lowered), the loop nests that
/// kiln-cpu-parallelize puts on threads after elementwise fusion (the fused
/// op, as it runs).
enum class KernelStage { Kernels, LoopNests };

/// A convolution or contraction that has knobs ("conv2d", "contraction").
std::optional<TunableKernel> describeKernel(mlir::linalg::LinalgOp op,
                                            const KernelTarget &target);

/// A loop nest with knobs ("window": depthwise convolutions and pools;
/// "elementwise"; "reduction"): not a kernel of describeKernel, nor its
/// epilogue or accumulator's start, with static shapes and enough iterations to
/// be worth threads.
std::optional<TunableKernel> describeLoopNest(mlir::linalg::LinalgOp op,
                                              const KernelTarget &target);

/// Fuses elementwise chains as the CPU pipeline's first
/// kiln-codegen-fuse-elementwise does.
mlir::LogicalResult fuseElementwise(mlir::ModuleOp module);

/// Copies the configuration of `from`, if any, onto `to`.
void copyKernelConfig(mlir::Operation *from, mlir::Operation *to);

/// One record of a tuning database.
struct TuningRecord {
  std::string kernel;
  std::string target;
  llvm::json::Object config;
  /// Measured median latency; a record without one is pinned (chosen first).
  std::optional<double> ms;
  unsigned line = 0;
};

/// The records of one tuning database file, reduced to the best per kernel
/// and target: the fastest measured record that did not fail, or a pinned
/// one.
class TuningDatabase {
public:
  /// Reads `path`; a malformed line is an error naming the file and line.
  static llvm::Expected<TuningDatabase> load(llvm::StringRef path);

  const TuningRecord *lookup(llvm::StringRef kernel,
                             llvm::StringRef target) const;

  const std::string &path() const { return filePath; }

private:
  std::string filePath;
  std::map<std::pair<std::string, std::string>, TuningRecord> best;
};

/// Attaches the database's configuration to every kernel of `module` that
/// has one for `target`. A configuration that names a knob the kernel does
/// not have, or a value outside its search space, is an error at the op.
/// Appends the record applied to each kernel to `applied` if given.
mlir::LogicalResult
applyKernelConfigs(mlir::ModuleOp module, const TuningDatabase &database,
                   const KernelTarget &target,
                   std::vector<TuningRecord> *applied,
                   KernelStage stage = KernelStage::Kernels);

/// The kernels of `module` as JSON: the target, and per distinct signature
/// its kind, search space, flops, how many ops share it, the locations of
/// those ops (ONNX node names), and a standalone module holding the op alone
/// (a function @main of its inputs; its constant weights become splat
/// constants) that kiln-compile compiles, for timing the kernel in isolation.
llvm::json::Value listKernels(mlir::ModuleOp module,
                              const KernelTarget &target);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_KERNELCONFIG_H
