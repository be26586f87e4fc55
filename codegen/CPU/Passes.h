//===- Passes.h - CPU code generation passes --------------------*- C++ -*-===//

#ifndef KILN_CODEGEN_CPU_PASSES_H
#define KILN_CODEGEN_CPU_PASSES_H

#include "codegen/Common/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln::cpu {

// The CPU's code generation builds on the common layer's passes and helpers.
using namespace kiln::codegen;

/// On a function: one line per convolution, its algorithm and the estimates
/// (kiln-cpu-select-conv-algorithm).
constexpr llvm::StringLiteral kConvReportAttr = attr::kConvAlgorithms;

#define GEN_PASS_DECL
#include "codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/CPU/Passes.h.inc"

/// Patterns of kiln-cpu-reorder-loops: generalize contractions and move the
/// unit-stride output loop innermost; with a `transposeBlock` above 0,
/// transposes that move the innermost dimension go through square register
/// blocks of that side.
void populateReorderLoopsPatterns(mlir::RewritePatternSet &patterns,
                                  int64_t transposeBlock);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_PASSES_H
