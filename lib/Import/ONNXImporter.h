//===- ONNXImporter.h - ONNX models into the graph dialect ------*- C++ -*-===//

#ifndef KILN_LIB_IMPORT_ONNXIMPORTER_H
#define KILN_LIB_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ImportOptions {
  /// Shapes that replace the declared shape of graph inputs, by input name;
  /// this is how a symbolic dimension gets a static size.
  std::map<std::string, std::vector<int64_t>> inputShapes;
};

/// Reads the ONNX model at `path` into a new module holding one `func.func
/// @main` in the graph dialect. Its arguments are the graph inputs that are
/// not initializers and its results the graph outputs, in ONNX order; each
/// argument and result carries its ONNX name as `kiln.name`. Every op's
/// location names its ONNX node (name and op type). External data files are
/// resolved only inside the model's folder.
///
/// On failure, errors are emitted as diagnostics on `context` (every
/// unsupported node at once, not only the first) and a null module returned.
mlir::OwningOpRef<mlir::ModuleOp> importONNXFile(mlir::MLIRContext &context,
                                                 const std::string &path,
                                                 const ImportOptions &options);

/// The same for a serialized ModelProto held in memory; external data is
/// resolved relative to `baseDir` (none allowed when it is empty).
mlir::OwningOpRef<mlir::ModuleOp> importONNXBytes(mlir::MLIRContext &context,
                                                  const std::string &bytes,
                                                  const std::string &baseDir,
                                                  const ImportOptions &options);

} // namespace kiln

#endif // KILN_LIB_IMPORT_ONNXIMPORTER_H
