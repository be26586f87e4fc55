//===- Registration.h - Register Kiln's dialects and passes -----*- C++ -*-===//

#ifndef KILN_LIB_PIPELINE_REGISTRATION_H
#define KILN_LIB_PIPELINE_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace kiln {

/// Adds every Kiln dialect, and the func dialect its models are functions
/// of, to `registry`; the upstream dialects that Kiln's pipelines produce
/// come with registerAllDialects.
void registerDialects(mlir::DialectRegistry &registry);

/// Registers every Kiln pass (`--kiln-...`) and pipeline with the global
/// registry, for kiln-opt and for textual pipelines.
void registerPassesAndPipelines();

} // namespace kiln

#endif // KILN_LIB_PIPELINE_REGISTRATION_H
