//===- FuzzContext.h - The MLIR context of the importer harnesses -*- C++
//-*-===//

#ifndef KILN_TEST_FUZZ_FUZZCONTEXT_H
#define KILN_TEST_FUZZ_FUZZCONTEXT_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

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

} // namespace kiln::fuzz

#endif // KILN_TEST_FUZZ_FUZZCONTEXT_H
