//===- Linker.h - Link a model object into a shared object ------*- C++ -*-===//

#ifndef KILN_LIB_TARGET_LINKER_H
#define KILN_LIB_TARGET_LINKER_H

#include "lib/Target/TargetInfo.h"

#include "llvm/Support/Error.h"

#include <string>

namespace kiln {

/// Links the relocatable `object` into the shared object `outputPath` with
/// ld.lld (KILN_LLD overrides the path found at build time). The result
/// depends on the target's libc and libm only, and on libomp.so.5 when
/// `openMP` is set. The file is sealed (sealModelFile).
llvm::Error linkSharedObject(const std::string &object,
                             const std::string &outputPath,
                             const TargetInfo &target, bool openMP);

/// Appends a kiln_abi_seal (include/kiln/model_abi.h) to the shared object
/// at `path`: its size and checksum, which the runtime checks before
/// loading it.
llvm::Error sealModelFile(const std::string &path);

} // namespace kiln

#endif // KILN_LIB_TARGET_LINKER_H
