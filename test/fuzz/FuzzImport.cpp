//===- FuzzImport.cpp - libFuzzer harness: the ONNX importer from bytes ---===//
//
// Any bytes as a serialized ModelProto: the importer must return a module
// or errors, never crash, hang or leak (issue 23, docs/reliability.md). A
// module it returns must verify.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"
#include "lib/Import/ONNXImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)kiln::fuzz::importAndVerify(data, size);
  return 0;
}
