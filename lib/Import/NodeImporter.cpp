//===- NodeImporter.cpp - Importing one ONNX node -------------------------===//

#include "lib/Import/NodeImporter.h"
#include "lib/Import/ImportState.h"

#include "dialects/Graph/GraphOps.h"

#include "onnx/onnx_pb.h"

using namespace mlir;
using namespace kiln;

NodeImporter::NodeImporter(GraphImportState &state, const onnx::NodeProto &node,
                           llvm::StringRef displayName, int64_t opset,
                           OpBuilder &builder, Location loc)
    : state(state), node(node), displayName(displayName.str()), opset(opset),
      builder(builder), loc(loc) {}

llvm::StringRef NodeImporter::getOpType() const { return node.op_type(); }

unsigned NodeImporter::getNumInputs() const { return node.input_size(); }

Value NodeImporter::getInput(unsigned i) const {
  if (i >= static_cast<unsigned>(node.input_size()) || node.input(i).empty())
    return {};
  // The driver checked before the call that every named input is defined.
  return state.values.lookup(node.input(i));
}

ElementsAttr NodeImporter::getConstantInput(unsigned i) const {
  Value value = getInput(i);
  if (!value)
    return {};
  if (auto constant = value.getDefiningOp<graph::ConstantOp>())
    return dyn_cast<ElementsAttr>(constant.getValue());
  return {};
}

void NodeImporter::setDataDependent(Value result, Value count, int64_t dim) {
  auto &sizes = state.dataDependent[result];
  // A value passed through unchanged (Identity) keeps its entry.
  llvm::erase_if(
      sizes, [&](const DataDependentSize &size) { return size.dim == dim; });
  sizes.push_back(
      {count, dim, "node '" + displayName + "' (" + getOpType().str() + ")"});
  llvm::sort(sizes, [](const DataDependentSize &a, const DataDependentSize &b) {
    return a.dim < b.dim;
  });
}

unsigned NodeImporter::getNumOutputs() const { return node.output_size(); }

bool NodeImporter::isOutputUsed(unsigned i) const {
  return i < static_cast<unsigned>(node.output_size()) &&
         !node.output(i).empty() && state.usedNames.contains(node.output(i));
}

LogicalResult NodeImporter::setResults(ValueRange values) {
  if (llvm::any_of(values, [](Value v) { return !v; }))
    return failure();
  if (values.size() > static_cast<size_t>(node.output_size()))
    return emitError() << "the importer made " << values.size()
                       << " results for " << node.output_size() << " outputs";
  for (auto [i, value] : llvm::enumerate(values)) {
    const std::string &name = node.output(i);
    if (name.empty())
      continue;
    if (!state.values.try_emplace(name, value).second)
      return emitError() << "output '" << name
                         << "' is already defined by an earlier node, an "
                            "input or an initializer";
  }
  for (unsigned i = values.size(), e = node.output_size(); i < e; ++i)
    if (isOutputUsed(i))
      return emitError() << "output " << i << " ('" << node.output(i)
                         << "') is used, but Kiln does not compute it";
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *NodeImporter::findAttr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeImporter::hasAttr(llvm::StringRef name) const {
  return findAttr(name) != nullptr;
}

bool NodeImporter::checkAttrType(const onnx::AttributeProto &attr, int expected,
                                 llvm::StringRef expectedName) {
  // Old models may leave `type` unset; accept them when the field is filled.
  if (attr.type() == expected || attr.type() == 0)
    return true;
  emitError() << "attribute '" << attr.name() << "' must be " << expectedName
              << " (ONNX attribute type " << attr.type() << ")";
  failedFlag = true;
  return false;
}

int64_t NodeImporter::getInt(llvm::StringRef name, int64_t defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::INT, "an INT"))
    return defaultValue;
  return attr->i();
}

float NodeImporter::getFloat(llvm::StringRef name, float defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::FLOAT, "a FLOAT"))
    return defaultValue;
  return attr->f();
}

std::string NodeImporter::getString(llvm::StringRef name,
                                    llvm::StringRef defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::STRING, "a STRING"))
    return defaultValue.str();
  return attr->s();
}

llvm::SmallVector<int64_t>
NodeImporter::getInts(llvm::StringRef name,
                      llvm::ArrayRef<int64_t> defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::INTS, "INTS"))
    return llvm::SmallVector<int64_t>(defaultValue);
  return llvm::SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

llvm::SmallVector<float>
NodeImporter::getFloats(llvm::StringRef name,
                        llvm::ArrayRef<float> defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::FLOATS, "FLOATS"))
    return llvm::SmallVector<float>(defaultValue);
  return llvm::SmallVector<float>(attr->floats().begin(), attr->floats().end());
}

llvm::SmallVector<std::string>
NodeImporter::getStrings(llvm::StringRef name,
                         llvm::ArrayRef<std::string> defaultValue) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr || !checkAttrType(*attr, onnx::AttributeProto::STRINGS, "STRINGS"))
    return llvm::SmallVector<std::string>(defaultValue);
  return llvm::SmallVector<std::string>(attr->strings().begin(),
                                        attr->strings().end());
}

ElementsAttr NodeImporter::getTensor(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr) {
    emitError() << "attribute '" << name << "' is missing";
    failedFlag = true;
    return {};
  }
  if (!checkAttrType(*attr, onnx::AttributeProto::TENSOR, "a TENSOR"))
    return {};
  ElementsAttr value = importTensor(attr->t(), state, loc,
                                    "node '" + getName() + "' (" + getOpType() +
                                        "): attribute '" + name + "'");
  if (!value)
    failedFlag = true;
  return value;
}

const onnx::GraphProto *NodeImporter::getGraph(llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(name);
  if (!attr) {
    emitError() << "attribute '" << name << "' is missing";
    return nullptr;
  }
  if (!checkAttrType(*attr, onnx::AttributeProto::GRAPH, "a GRAPH"))
    return nullptr;
  return &attr->g();
}

FailureOr<SmallVector<Value>>
NodeImporter::importGraph(const onnx::GraphProto &graph, ValueRange inputs) {
  if (static_cast<size_t>(graph.input_size()) != inputs.size()) {
    emitError() << "its subgraph '" << graph.name() << "' takes "
                << graph.input_size() << " inputs, given " << inputs.size();
    return failure();
  }
  FailureOr<SmallVector<Value>> outputs = state.importSubgraph(graph, inputs);
  if (failed(outputs))
    failedFlag = true;
  return outputs;
}

//===----------------------------------------------------------------------===//
// Errors and type inference
//===----------------------------------------------------------------------===//

InFlightDiagnostic NodeImporter::emitError() {
  failedFlag = true;
  return mlir::emitError(loc)
         << "node '" << getName() << "' (" << getOpType() << "): ";
}

LogicalResult
NodeImporter::inferTypes(llvm::function_ref<LogicalResult(Location)> infer) {
  LogicalResult result = success();
  auto messages =
      collectDiagnostics(builder.getContext(), [&]() { result = infer(loc); });
  if (succeeded(result) && messages.empty())
    return success();
  InFlightDiagnostic diag = emitError();
  if (messages.empty())
    diag << "the operands are not valid for this operator";
  for (auto [i, message] : llvm::enumerate(messages))
    diag << (i ? "; " : "") << message.second;
  return failure();
}

//===----------------------------------------------------------------------===//
// NodeImporterRegistry
//===----------------------------------------------------------------------===//

void NodeImporterRegistry::add(llvm::StringRef opType, int64_t minOpset,
                               NodeImportFn fn, int64_t maxOpset) {
  assert(fn && minOpset <= maxOpset && "bad importer registration");
  entries[opType].push_back({minOpset, maxOpset, fn});
}

NodeImportFn NodeImporterRegistry::lookup(llvm::StringRef opType,
                                          int64_t opset) const {
  auto it = entries.find(opType);
  if (it == entries.end())
    return nullptr;
  for (const Entry &entry : it->second)
    if (entry.minOpset <= opset && opset <= entry.maxOpset)
      return entry.fn;
  return nullptr;
}

const NodeImporterRegistry &kiln::getNodeImporterRegistry() {
  static const NodeImporterRegistry registry = [] {
    NodeImporterRegistry r;
    registerCoreImporters(r);
    registerElementwiseImporters(r);
    registerNNImporters(r);
    registerShapeImporters(r);
    registerReductionImporters(r);
    registerSelectionImporters(r);
    registerCompositeImporters(r);
    registerControlFlowImporters(r);
    registerQuantizedImporters(r);
    registerRecurrentImporters(r);
    registerTrainingImporters(r);
    registerMLImporters(r);
    registerSequenceImporters(r);
    return r;
  }();
  return registry;
}

llvm::SmallVector<mlir::Value>
kiln::NodeImporter::foldResults(mlir::Operation *op) {
  llvm::SmallVector<mlir::Value> folded;
  if (mlir::failed(builder.tryFold(op, folded)) ||
      folded.size() != op->getNumResults())
    return llvm::SmallVector<mlir::Value>(op->getResults());
  op->erase();
  return folded;
}
