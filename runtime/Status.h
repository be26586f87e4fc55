//===- Status.h - Making kiln_status values --------------------*- C++ -*-===//
//
// Internal to the runtime: constructors of kiln_status and a guard that turns
// an escaping C++ exception into a status, so none crosses the C API.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_STATUS_H
#define KILN_RUNTIME_STATUS_H

#include "kiln/runtime.h"

#include <new>

namespace kiln::runtime {

/// Makes an error status with a printf-style message. Never returns NULL for
/// a code other than OK: when memory runs out it returns a static
/// OUT_OF_MEMORY status that kiln_status_free ignores.
kiln_status makeStatus(kiln_status_code_t code, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/// Runs `body` (returning kiln_status) and maps any exception it throws to a
/// status: std::bad_alloc to OUT_OF_MEMORY, anything else to INTERNAL.
template <typename Body> kiln_status guard(Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (...) {
    return makeStatus(KILN_STATUS_INTERNAL, "unexpected C++ exception");
  }
}

} // namespace kiln::runtime

#endif // KILN_RUNTIME_STATUS_H
