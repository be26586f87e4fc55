//===- FuzzContext.h - The MLIR context of the importer harnesses -*- C++
//-*-===//

#ifndef KILN_TEST_FUZZ_FUZZCONTEXT_H
#define KILN_TEST_FUZZ_FUZZCONTEXT_H

#include "lib/Import/ONNXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace kiln::fuzz {

/// One context for every input, as a compile server keeps one: state that
/// one model leaves behind must not break the next. Errors are expected
/// and dropped.
inline mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    c->getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
    return c;
  }();
  return *ctx;
}

/// Imports `data` as a serialized ModelProto into context(): the module, or
/// null when the importer refused it. An imported module that does not
/// verify aborts (the importer's bug, which the fuzzer reports).
inline mlir::OwningOpRef<mlir::ModuleOp> importAndVerify(const uint8_t *data,
                                                         size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  kiln::ImportOptions options;
  // Sequence inputs need their tensors' shapes: two of [2], or none, as the
  // input's first byte of name says, so that both paths are reached.
  onnx::ModelProto parsed;
  if (parsed.ParseFromString(bytes))
    for (const onnx::ValueInfoProto &input : parsed.graph().input())
      if (input.type().has_sequence_type() ||
          (input.type().has_optional_type() &&
           input.type().optional_type().elem_type().has_sequence_type()))
        options.sequenceShapes[input.name()] =
            input.name().empty() || input.name()[0] % 2
                ? std::vector<std::vector<int64_t>>{{2}, {2}}
                : std::vector<std::vector<int64_t>>{};
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importONNXBytes(context(), bytes, /*baseDir=*/"", options);
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort();
  return module;
}

} // namespace kiln::fuzz

#endif // KILN_TEST_FUZZ_FUZZCONTEXT_H
