//===- ModelFile.h - Checking a model file before loading it ----*- C++ -*-===//
//
// Internal to the runtime: dlopen maps a shared object by its program
// headers and trusts them. A file copied half-way or damaged in transit
// makes it map past the end of the file, and the process dies of SIGBUS or
// SIGSEGV inside the loader. So the runtime first reads the ELF header
// (a 64-bit shared object for this machine), then the seal kiln-compile
// appended (its size and checksum match the file: no byte damaged), then
// the program and section header tables (they lie within the file).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_MODELFILE_H
#define KILN_RUNTIME_MODELFILE_H

#include "kiln/runtime.h"

namespace kiln::runtime {

/// Checks the model file at `path` (a regular file, readable) as described
/// above; INVALID_MODEL for a truncated or damaged file ("truncated or
/// damaged: ..."), UNSUPPORTED_CPU for a shared object of another machine.
kiln_status checkModelFile(const char *path);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_MODELFILE_H
