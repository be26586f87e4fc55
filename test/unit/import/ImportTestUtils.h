//===- ImportTestUtils.h - Building ONNX models in unit tests ---*- C++ -*-===//

#ifndef KILN_TEST_UNIT_IMPORT_IMPORTTESTUTILS_H
#define KILN_TEST_UNIT_IMPORT_IMPORTTESTUTILS_H

#include "lib/Import/ONNXImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include "onnx/onnx_pb.h"

#include <string>
#include <variant>
#include <vector>

namespace kiln::test {

/// A dimension of a graph input: a size or a symbolic name.
using Dim = std::variant<int64_t, std::string>;

/// Builds a ModelProto (IR version 8, ai.onnx opset 17 unless changed).
struct ModelBuilder {
  onnx::ModelProto model;

  ModelBuilder(int64_t opset = 17);
  onnx::GraphProto &graph() { return *model.mutable_graph(); }

  void addInput(const std::string &name, std::vector<Dim> dims,
                int32_t type = onnx::TensorProto::FLOAT);
  void addOutput(const std::string &name,
                 int32_t type = onnx::TensorProto::UNDEFINED);
  onnx::NodeProto &addNode(const std::string &opType,
                           std::vector<std::string> inputs,
                           std::vector<std::string> outputs,
                           const std::string &name = "");
  /// A float initializer with data in raw_data.
  onnx::TensorProto &addInitializer(const std::string &name,
                                    std::vector<int64_t> dims,
                                    const std::vector<float> &values);
  /// An initializer with no data yet.
  onnx::TensorProto &addEmptyInitializer(const std::string &name,
                                         std::vector<int64_t> dims,
                                         int32_t type);
  std::string serialize() const;
};

void addIntAttr(onnx::NodeProto &node, const std::string &name, int64_t v);
void addFloatAttr(onnx::NodeProto &node, const std::string &name, float v);
void addStringAttr(onnx::NodeProto &node, const std::string &name,
                   const std::string &v);
void addIntsAttr(onnx::NodeProto &node, const std::string &name,
                 std::vector<int64_t> v);

/// The result of one import: the module (null on failure), every diagnostic
/// message and the module printed (empty on failure).
struct ImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<std::string> errors;
  std::string ir;
  std::string allErrors() const;
};

/// Imports through importONNXBytes, keeping the diagnostics.
ImportResult importModel(mlir::MLIRContext &context, const std::string &bytes,
                         const std::string &baseDir = "",
                         const ImportOptions &options = {});
/// Imports through importONNXFile.
ImportResult importFile(mlir::MLIRContext &context, const std::string &path,
                        const ImportOptions &options = {});

/// A fresh directory for one test, removed by the destructor.
struct TempDir {
  TempDir();
  ~TempDir();
  std::string path;
  std::string file(const std::string &name) const;
  void write(const std::string &name, const std::string &bytes) const;
};

} // namespace kiln::test

#endif // KILN_TEST_UNIT_IMPORT_IMPORTTESTUTILS_H
