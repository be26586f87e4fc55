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

/// What an import found out about a model, for `kiln-compile --check`.
struct ImportReport {
  /// Nodes in the main graph, and its ai.onnx opset (0 when it has none).
  int64_t nodes = 0;
  int64_t opset = 0;
  /// The operators Kiln does not import, by op type ("domain.OpType" outside
  /// ai.onnx) in the order of their first node: the names of their nodes.
  std::vector<std::pair<std::string, std::vector<std::string>>> unsupported;
  /// Nodes left unchecked because an input comes from a node that failed.
  int64_t unchecked = 0;
};

/// The bounds of a symbolic batch that no option bounds.
constexpr std::pair<int64_t, int64_t> kDefaultSymbolBounds = {1, 1024};

struct ImportOptions {
  /// Shapes that replace the declared shape of graph inputs, by input name;
  /// this is how a symbolic dimension gets a static size.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The tensors' shapes of each sequence input, by input name: Kiln
  /// compiles a sequence's length and shapes into the model.
  std::map<std::string, std::vector<std::vector<int64_t>>> sequenceShapes;
  /// Sizes of symbolic dimensions, by the name the model gives them
  /// (dim_param), in every input that names them (--dynamic-dims NAME=N).
  std::map<std::string, int64_t> dimSizes;
  /// Bounds of symbolic dimensions that stay symbolic, by name
  /// (--dynamic-dims NAME=MIN..MAX). A symbolic dimension that leads the
  /// inputs (the batch) stays symbolic, within these bounds or
  /// kDefaultSymbolBounds; an unnamed one is called "batch".
  std::map<std::string, std::pair<int64_t, int64_t>> symbolBounds;
  /// The size that stands for the symbolic batch in the imported types
  /// (kiln-graph-split-batch then makes the entry take one sample): an
  /// unusual number, so that a reshape target's batch is told from its other
  /// sizes.
  int64_t batchProbe = 97;
  /// Beside other symbolic dimensions that the code reads (a sequence),
  /// read the batch's size at run time too instead of running the entry
  /// once per sample: the compiler's fallback where the model cannot run
  /// its samples apart.
  bool readBatchAtRunTime = false;
  /// Check the whole model instead of stopping at its first problem: every
  /// node whose inputs are known is imported, and each failure reported.
  bool keepGoing = false;
  /// Filled in when given.
  ImportReport *report = nullptr;
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
