//===- FuzzModelFile.cpp - libFuzzer harness: opening a model file --------===//
//
// Any bytes as a model .so: kiln_model_open must refuse a damaged,
// truncated or foreign file with a status before dlopen maps it, never
// crash (issue 23, docs/reliability.md). The seeds are sealed models;
// a mutation breaks the seal's checksum or the ELF structure, which the
// runtime checks first (runtime/ModelFile.cpp).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path =
      "/tmp/kiln-fuzz-model-" + std::to_string(getpid()) + ".so";
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  kiln_model_options options;
  kiln_model_options_init(&options);
  options.device = KILN_DEVICE_NONE; // describe only: never run fuzzed code
  kiln_model *model = nullptr;
  kiln_status status = kiln_model_open(path.c_str(), &options, &model);
  kiln_status_free(status);
  kiln_model_release(model);
  std::remove(path.c_str());
  return 0;
}
