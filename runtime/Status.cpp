//===- Status.cpp - kiln_status -------------------------------------------===//

#include "Status.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

struct kiln_status_s {
  kiln_status_code_t code;
  const char *message; // NUL-terminated; stored right after this struct
};

namespace {
// Returned when the status itself cannot be allocated; never freed.
kiln_status_s outOfMemoryStatus = {KILN_STATUS_OUT_OF_MEMORY, "out of memory"};
} // namespace

kiln_status kiln::runtime::makeStatus(kiln_status_code_t code,
                                      const char *format, ...) {
  if (code == KILN_STATUS_OK)
    return nullptr;
  va_list args;
  va_start(args, format);
  va_list argsCopy;
  va_copy(argsCopy, args);
  int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (length < 0)
    length = 0;
  void *memory = std::malloc(sizeof(kiln_status_s) + size_t(length) + 1);
  if (!memory) {
    va_end(argsCopy);
    return &outOfMemoryStatus;
  }
  char *message = static_cast<char *>(memory) + sizeof(kiln_status_s);
  std::vsnprintf(message, size_t(length) + 1, format, argsCopy);
  va_end(argsCopy);
  // Messages are one line: a dlerror() text may carry a newline.
  for (char *c = message; *c; ++c)
    if (*c == '\n' || *c == '\r')
      *c = ' ';
  return new (memory) kiln_status_s{code, message};
}

extern "C" {

kiln_status_code_t kiln_status_code(kiln_status status) {
  return status ? status->code : KILN_STATUS_OK;
}

const char *kiln_status_message(kiln_status status) {
  return status ? status->message : "OK";
}

const char *kiln_status_code_name(kiln_status_code_t code) {
  switch (code) {
  case KILN_STATUS_OK:
    return "OK";
  case KILN_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case KILN_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case KILN_STATUS_ABI_MISMATCH:
    return "ABI_MISMATCH";
  case KILN_STATUS_UNSUPPORTED_CPU:
    return "UNSUPPORTED_CPU";
  case KILN_STATUS_IO:
    return "IO";
  case KILN_STATUS_OUT_OF_MEMORY:
    return "OUT_OF_MEMORY";
  case KILN_STATUS_INTERNAL:
    return "INTERNAL";
  case KILN_STATUS_INVALID_MODEL:
    return "INVALID_MODEL";
  case KILN_STATUS_NO_DEVICE:
    return "NO_DEVICE";
  case KILN_STATUS_DEVICE_ERROR:
    return "DEVICE_ERROR";
  }
  return "UNKNOWN";
}

void kiln_status_free(kiln_status status) {
  if (status && status != &outOfMemoryStatus)
    std::free(status);
}

} // extern "C"
