//===- ImportState.h - State shared inside the ONNX importer ----*- C++ -*-===//
//
// Internal to lib/Import: what the driver, NodeImporter and the tensor
// reader share. Import functions use NodeImporter instead.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORT_IMPORTSTATE_H
#define KILN_LIB_IMPORT_IMPORTSTATE_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <string>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace kiln {

struct GraphImportState {
  mlir::MLIRContext *context = nullptr;
  /// Folder that external data must stay inside; empty: none allowed.
  std::string baseDir;
  /// Every value defined so far, by ONNX name.
  llvm::StringMap<mlir::Value> values;
  /// Names read by some node or listed as graph outputs.
  llvm::StringSet<> usedNames;
  /// "node 'name' (OpType)" for each node location, so that diagnostics
  /// from the verifier can name the node.
  llvm::DenseMap<mlir::Location, std::string> nodeDescriptions;
};

/// The MLIR element type of an ONNX TensorProto::DataType, or null.
mlir::Type convertElementType(mlir::MLIRContext *context, int32_t onnxType);

/// The ONNX name of a TensorProto::DataType ("FLOAT", "STRING", ...).
std::string getONNXTypeName(int32_t onnxType);

/// Reads a TensorProto (raw, typed or external data) into an ElementsAttr:
/// dense for small tensors, a dense_resource blob for larger ones. On bad
/// input, emits an error at `loc` starting with `what` (for example
/// "initializer 'w'") and returns null.
mlir::ElementsAttr importTensor(const onnx::TensorProto &tensor,
                                GraphImportState &state, mlir::Location loc,
                                const llvm::Twine &what);

/// An ElementsAttr of `type` (`count` elements, `byteCount` bytes), letting
/// `fill` write the data once into its final storage: dense for small
/// tensors, a dense_resource blob named after `name` for larger ones.
mlir::ElementsAttr
makeElementsAttr(mlir::RankedTensorType type, int64_t count, int64_t byteCount,
                 llvm::StringRef name,
                 llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

/// Runs `fn` and returns the messages of the diagnostics it emitted, which
/// are kept from the context's handlers.
llvm::SmallVector<std::pair<mlir::Location, std::string>>
collectDiagnostics(mlir::MLIRContext *context, llvm::function_ref<void()> fn);

} // namespace kiln

#endif // KILN_LIB_IMPORT_IMPORTSTATE_H
