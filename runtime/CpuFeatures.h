//===- CpuFeatures.h - What the running CPU can do -------------*- C++ -*-===//
//
// Internal to the runtime: the architecture of a target triple, and the CPU
// features (in LLVM's spelling) the runtime can check on the running machine.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_CPUFEATURES_H
#define KILN_RUNTIME_CPUFEATURES_H

#include <string_view>

namespace kiln::runtime {

enum class Arch { Unknown, X86_64, AArch64 };

/// The architecture named by the first component of `triple`.
Arch archOfTriple(std::string_view triple);

/// The architecture this runtime was built for.
Arch hostArch();

const char *archName(Arch arch);

/// The features checkable for `arch`, comma-separated; "" for Unknown.
const char *knownCpuFeatures(Arch arch);

/// 1 if the running CPU and OS support `feature`, 0 if not, -1 if the name is
/// not one of knownCpuFeatures(hostArch()).
int hostSupportsCpuFeature(std::string_view feature);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_CPUFEATURES_H
