//===- FuzzTensorFile.cpp - libFuzzer harness: kiln-run's tensor files ----===//
//
// Any bytes as a .npy file and as an ONNX TensorProto, the two formats
// kiln-run reads (tools/kiln-run/TensorFile.cpp): a parse error, never a
// crash or an allocation the header asks for without the data to back it.
//
//===----------------------------------------------------------------------===//

#include "TensorFile.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::HostTensor npy, proto;
  (void)kiln::parseNpy(data, size, npy);
  (void)kiln::parseTensorProto(data, size, proto);
  return 0;
}
