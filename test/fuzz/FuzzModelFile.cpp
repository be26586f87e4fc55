//===- FuzzModelFile.cpp - libFuzzer harness: opening a model file --------===//
//
// Any bytes as a model .so: kiln_model_open must refuse a damaged,
// truncated or foreign file with a status before dlopen maps it, never
// crash (issue 23, docs/reliability.md). The seeds are sealed models;
// a mutation breaks the seal's checksum or the ELF structure, which the
// runtime checks first (runtime/ModelFile.cpp).
//
// A file whose seal holds goes through the checks made before loading
// (the ELF structure) but is not loaded: the fuzzer forges seals within
// seconds (its comparison feedback hands it the checksum that the runtime
// computed, which it writes into the seal), and a forgery is not damage:
// loading a shared object runs its code (its constructors, then
// kiln_abi_describe, which makes the descriptor), which no loader makes
// safe. The seal finds damage, not forgery (model_abi.h); a model file is
// code, and trusted as code is.
//
//===----------------------------------------------------------------------===//

#include "kiln/model_abi.h"
#include "kiln/runtime.h"
#include "runtime/ModelFile.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

/// Whether `data` ends in a Kiln seal that holds.
bool sealHolds(const uint8_t *data, size_t size) {
  kiln_abi_seal seal;
  if (size < sizeof(seal))
    return false;
  std::memcpy(&seal, data + size - sizeof(seal), sizeof(seal));
  return std::memcmp(seal.magic, KILN_ABI_SEAL_MAGIC, sizeof(seal.magic)) ==
             0 &&
         seal.size == size - sizeof(seal) &&
         kiln_abi_checksum(data, seal.size) == seal.checksum;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path =
      "/tmp/kiln-fuzz-model-" + std::to_string(getpid()) + ".so";
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  if (sealHolds(data, size)) {
    kiln_status_free(kiln::runtime::checkModelFile(path.c_str()));
  } else {
    // Damaged: refused before loading (opened to describe, never to run).
    kiln_model_options options;
    kiln_model_options_init(&options);
    options.device = KILN_DEVICE_NONE;
    kiln_model *model = nullptr;
    kiln_status status = kiln_model_open(path.c_str(), &options, &model);
    kiln_status_free(status);
    kiln_model_release(model);
  }
  std::remove(path.c_str());
  return 0;
}
