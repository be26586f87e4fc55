//===- ImportTestUtils.cpp - Building ONNX models in unit tests -----------===//

#include "test/unit/import/ImportTestUtils.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <fstream>

using namespace kiln;
using namespace kiln::test;

ModelBuilder::ModelBuilder(int64_t opset) {
  model.set_ir_version(8);
  model.set_producer_name("kiln-unit-test");
  onnx::OperatorSetIdProto *id = model.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  graph().set_name("test");
}

void ModelBuilder::addInput(const std::string &name, std::vector<Dim> dims,
                            int32_t type) {
  onnx::ValueInfoProto *input = graph().add_input();
  input->set_name(name);
  onnx::TypeProto::Tensor *tensor =
      input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  onnx::TensorShapeProto *shape = tensor->mutable_shape();
  for (const Dim &dim : dims) {
    onnx::TensorShapeProto::Dimension *d = shape->add_dim();
    if (const int64_t *size = std::get_if<int64_t>(&dim))
      d->set_dim_value(*size);
    else
      d->set_dim_param(std::get<std::string>(dim));
  }
}

void ModelBuilder::addOutput(const std::string &name, int32_t type) {
  onnx::ValueInfoProto *output = graph().add_output();
  output->set_name(name);
  if (type != onnx::TensorProto::UNDEFINED)
    output->mutable_type()->mutable_tensor_type()->set_elem_type(type);
}

onnx::NodeProto &ModelBuilder::addNode(const std::string &opType,
                                       std::vector<std::string> inputs,
                                       std::vector<std::string> outputs,
                                       const std::string &name) {
  onnx::NodeProto *node = graph().add_node();
  node->set_op_type(opType);
  node->set_name(name);
  for (const std::string &input : inputs)
    node->add_input(input);
  for (const std::string &output : outputs)
    node->add_output(output);
  return *node;
}

onnx::TensorProto &
ModelBuilder::addInitializer(const std::string &name, std::vector<int64_t> dims,
                             const std::vector<float> &values) {
  onnx::TensorProto &tensor =
      addEmptyInitializer(name, std::move(dims), onnx::TensorProto::FLOAT);
  std::string raw(values.size() * sizeof(float), '\0');
  std::memcpy(raw.data(), values.data(), raw.size());
  tensor.set_raw_data(raw);
  return tensor;
}

onnx::TensorProto &ModelBuilder::addEmptyInitializer(const std::string &name,
                                                     std::vector<int64_t> dims,
                                                     int32_t type) {
  onnx::TensorProto *tensor = graph().add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(type);
  for (int64_t dim : dims)
    tensor->add_dims(dim);
  return *tensor;
}

std::string ModelBuilder::serialize() const {
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

static onnx::AttributeProto &addAttr(onnx::NodeProto &node,
                                     const std::string &name,
                                     onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(type);
  return *attr;
}

void kiln::test::addIntAttr(onnx::NodeProto &node, const std::string &name,
                            int64_t v) {
  addAttr(node, name, onnx::AttributeProto::INT).set_i(v);
}
void kiln::test::addFloatAttr(onnx::NodeProto &node, const std::string &name,
                              float v) {
  addAttr(node, name, onnx::AttributeProto::FLOAT).set_f(v);
}
void kiln::test::addStringAttr(onnx::NodeProto &node, const std::string &name,
                               const std::string &v) {
  addAttr(node, name, onnx::AttributeProto::STRING).set_s(v);
}
void kiln::test::addIntsAttr(onnx::NodeProto &node, const std::string &name,
                             std::vector<int64_t> v) {
  onnx::AttributeProto &attr = addAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t i : v)
    attr.add_ints(i);
}

std::string ImportResult::allErrors() const {
  std::string text;
  for (const std::string &error : errors)
    text += error + "\n";
  return text;
}

template <typename Fn>
static ImportResult runImport(mlir::MLIRContext &context, Fn fn) {
  ImportResult result;
  {
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
      std::string text = d.str();
      for (mlir::Diagnostic &note : d.getNotes())
        text += "\nnote: " + note.str();
      result.errors.push_back(text);
      return mlir::success();
    });
    result.module = fn();
  }
  if (result.module) {
    llvm::raw_string_ostream os(result.ir);
    result.module->print(os);
  }
  return result;
}

ImportResult kiln::test::importModel(mlir::MLIRContext &context,
                                     const std::string &bytes,
                                     const std::string &baseDir,
                                     const ImportOptions &options) {
  return runImport(context, [&]() {
    return importONNXBytes(context, bytes, baseDir, options);
  });
}

ImportResult kiln::test::importFile(mlir::MLIRContext &context,
                                    const std::string &path,
                                    const ImportOptions &options) {
  return runImport(context,
                   [&]() { return importONNXFile(context, path, options); });
}

TempDir::TempDir() {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-import-test", dir))
    abort();
  path = std::string(dir);
}

TempDir::~TempDir() { llvm::sys::fs::remove_directories(path); }

std::string TempDir::file(const std::string &name) const {
  return path + "/" + name;
}

void TempDir::write(const std::string &name, const std::string &bytes) const {
  std::ofstream out(file(name), std::ios::binary);
  out.write(bytes.data(), bytes.size());
}
