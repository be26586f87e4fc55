//===- ONNXImporter.cpp - ONNX models into the graph dialect --------------===//
//
// The driver: parses the ModelProto, checks the IR version, the opsets and
// that every node has an importer, then builds `func.func @main` from the
// graph inputs, the initializers and the nodes in order, and verifies the
// result. Per-operator work lives in the Import<Family>.cpp files.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ONNXImporter.h"
#include "lib/Import/ImportState.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/onnx_pb.h"
#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <map>

using namespace mlir;
using namespace kiln;

/// ONNX IR versions Kiln reads: 3 introduced opset imports; 14 is the newest
/// at the time of writing (ONNX 1.23). Later versions may carry meaning that
/// an older reader would silently drop, so they are refused.
static constexpr int64_t kMinIRVersion = 3;
static constexpr int64_t kMaxIRVersion = 14;
/// The newest ai.onnx opset Kiln knows: that of ONNX 1.23, whose node tests
/// the conformance run checks. A later opset may change what an operator
/// means, so a model that imports one is refused.
static constexpr int64_t kMaxOpset = 28;
/// Node names an error lists per unsupported operator.
static constexpr size_t kNodesListed = 3;

/// Lets `return fail(emitError(...) << ...);` end the import.
static OwningOpRef<ModuleOp> fail(const InFlightDiagnostic &) {
  return nullptr;
}

/// Why value `name`, whose size the data decides, cannot be used as it is.
static std::string dataDependentUse(llvm::StringRef name,
                                    const DataDependentSize &size) {
  return ("'" + name + "' is an output of " + size.node +
          ", whose size (dimension " + llvm::Twine(size.dim) +
          ") only the run decides: Kiln supports such a value as a graph "
          "output, not as the input of another node or subgraph (yet)")
      .str();
}

static bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

namespace {

/// One unsupported node, for the single error that lists them all.
struct UnsupportedNode {
  std::string name;
  std::string opType;
  std::string domain;
  std::optional<int64_t> opset;
};

class ModelImporter {
public:
  ModelImporter(MLIRContext &context, llvm::StringRef modelPath,
                llvm::StringRef baseDir, const ImportOptions &options)
      : context(context), options(options),
        fileLoc(FileLineColLoc::get(&context, modelPath, 0, 0)) {
    state.context = &context;
    state.baseDir = baseDir.str();
  }

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  InFlightDiagnostic emitModelError() { return emitError(fileLoc); }
  LogicalResult checkVersions(const onnx::ModelProto &model);
  LogicalResult checkNodes(const onnx::GraphProto &graph);
  LogicalResult checkInputShapeOptions(const onnx::GraphProto &graph);
  LogicalResult resolveSymbols(const onnx::GraphProto &graph);
  FailureOr<RankedTensorType>
  convertInputType(const onnx::ValueInfoProto &,
                   SmallVectorImpl<Attribute> &dimNames);
  /// The element types of a sequence input, one per element, from
  /// ImportOptions::sequenceShapes; failure after an error.
  FailureOr<SmallVector<Type>>
  convertSequenceInput(const onnx::ValueInfoProto &input);
  LogicalResult checkOpset(const onnx::GraphProto &graph);
  LogicalResult importNode(const onnx::NodeProto &node, unsigned index,
                           OpBuilder &builder);
  Value importInitializer(const onnx::TensorProto &init, OpBuilder &builder);
  FailureOr<SmallVector<Value>> importSubgraph(const onnx::GraphProto &graph,
                                               ValueRange inputs,
                                               OpBuilder &builder);
  LogicalResult verifyModule(ModuleOp module);

  /// "<name>" or "<OpType>#<index>" for nodes without a name.
  static std::string getNodeName(const onnx::NodeProto &node, unsigned index) {
    if (!node.name().empty())
      return node.name();
    return node.op_type() + "#" + std::to_string(index);
  }

  MLIRContext &context;
  const ImportOptions &options;
  Location fileLoc;
  GraphImportState state;
  /// Opset version by domain ("ai.onnx" is stored as "").
  std::map<std::string, int64_t> opsets;
  llvm::StringSet<> initializerNames;
  /// With keepGoing: the values that a failed input, initializer or node
  /// would have defined, and the nodes Kiln has no importer for.
  llvm::StringSet<> unknownValues;
  llvm::DenseSet<const onnx::NodeProto *> unsupportedNodes;
  bool failedSome = false;
  /// The symbolic batch (resolveSymbols): its name and bounds; the name is
  /// empty where the model has none.
  std::string batchSymbol;
  std::pair<int64_t, int64_t> batchBounds = kDefaultSymbolBounds;
  /// The other symbolic dimensions given bounds, which stay `?` in the
  /// types (kiln.dim_symbols), in the options' order.
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> dimSymbols;
  /// The batch's name where it is one of dimSymbols (then batchSymbol is
  /// empty).
  std::string batchAsDim;
  /// The inputs' symbolic dimensions, listed for an error.
  std::string inputSymbols;
};

/// The type an optional stands for: Kiln compiles an optional graph input
/// as present (a run cannot pass an absent one), so it is its element.
const onnx::TypeProto &unwrapOptional(const onnx::TypeProto &type) {
  const onnx::TypeProto *t = &type;
  while (t->has_optional_type() && t->optional_type().has_elem_type())
    t = &t->optional_type().elem_type();
  return *t;
}

/// The inputs of `graph` that are not initializers, with a tensor shape.
template <typename Fn>
void forEachShapedInput(const onnx::GraphProto &graph,
                        const llvm::StringSet<> &initializers, Fn fn) {
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializers.contains(input.name()) &&
        unwrapOptional(input.type()).has_tensor_type() &&
        unwrapOptional(input.type()).tensor_type().has_shape())
      fn(input, unwrapOptional(input.type()).tensor_type().shape());
}

} // namespace

LogicalResult ModelImporter::checkVersions(const onnx::ModelProto &model) {
  if (!model.has_ir_version() || model.ir_version() == 0)
    return emitModelError()
           << "not a valid ONNX model: it has no IR version (is this an "
              "ONNX file?)";
  if (!model.has_graph())
    return emitModelError() << "not a valid ONNX model: it has no graph";
  int64_t irVersion = model.ir_version();
  if (irVersion < kMinIRVersion)
    return emitModelError()
           << "ONNX IR version " << irVersion
           << " is too old: Kiln reads IR versions " << kMinIRVersion << " to "
           << kMaxIRVersion
           << "; convert the model with onnx.version_converter first";
  if (irVersion > kMaxIRVersion)
    return emitModelError()
           << "ONNX IR version " << irVersion
           << " is newer than Kiln knows: Kiln reads IR versions "
           << kMinIRVersion << " to " << kMaxIRVersion;
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    std::string domain = isDefaultDomain(opset.domain()) ? "" : opset.domain();
    opsets[domain] = opset.version();
  }
  return success();
}

LogicalResult ModelImporter::checkNodes(const onnx::GraphProto &graph) {
  const NodeImporterRegistry &registry = getNodeImporterRegistry();
  SmallVector<UnsupportedNode> unsupported;
  bool needsDefaultOpset = false;
  // The graph's nodes and those of its subgraphs (If branches, Loop and
  // Scan bodies), at any depth.
  SmallVector<std::pair<unsigned, const onnx::NodeProto *>> nodes;
  // (Deeper than the import takes, subgraphs are not looked into: their
  // import refuses them.)
  std::function<void(const onnx::GraphProto &, int)> collect =
      [&](const onnx::GraphProto &g, int depth) {
        for (auto [index, node] : llvm::enumerate(g.node())) {
          nodes.push_back({static_cast<unsigned>(index), &node});
          if (depth >= kMaxSubgraphDepth)
            continue;
          for (const onnx::AttributeProto &attr : node.attribute()) {
            if (attr.has_g())
              collect(attr.g(), depth + 1);
            for (const onnx::GraphProto &sub : attr.graphs())
              collect(sub, depth + 1);
          }
        }
      };
  collect(graph, 0);
  for (auto [index, nodePtr] : nodes) {
    const onnx::NodeProto &node = *nodePtr;
    UnsupportedNode entry{getNodeName(node, index), node.op_type(),
                          isDefaultDomain(node.domain()) ? "" : node.domain(),
                          std::nullopt};
    auto opset = opsets.find(entry.domain);
    if (opset != opsets.end())
      entry.opset = opset->second;
    if (!entry.domain.empty()) {
      // Another domain's operators: only those Kiln registers under their
      // qualified name (onnxruntime's quantised com.microsoft operators),
      // in a model that imports the domain.
      if (!entry.opset ||
          !registry.lookup(entry.domain + "." + entry.opType, *entry.opset)) {
        unsupportedNodes.insert(&node);
        unsupported.push_back(std::move(entry));
      }
      continue;
    }
    if (!entry.opset) {
      needsDefaultOpset = true;
      continue;
    }
    if (!registry.lookup(entry.opType, *entry.opset)) {
      unsupportedNodes.insert(&node);
      unsupported.push_back(std::move(entry));
    }
  }
  if (needsDefaultOpset)
    return emitModelError() << "not a valid ONNX model: it has ai.onnx nodes "
                               "but imports no ai.onnx opset";
  if (unsupported.empty())
    return success();

  // One group per op type, in the order of its first node.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  llvm::StringMap<size_t> groupOf;
  llvm::StringSet<> customDomains;
  for (const UnsupportedNode &entry : unsupported) {
    std::string opType = entry.opType;
    if (!entry.domain.empty()) {
      opType = entry.domain + "." + entry.opType;
      customDomains.insert(entry.domain);
    }
    auto [it, added] = groupOf.try_emplace(opType, groups.size());
    if (added)
      groups.push_back({opType, {}});
    groups[it->second].second.push_back(entry.name);
  }
  // A check lists them as data, not as an error message.
  if (options.report) {
    options.report->unsupported = std::move(groups);
    return failure();
  }
  InFlightDiagnostic diag = emitModelError() << "unsupported ONNX operators";
  if (auto opset = opsets.find(""); opset != opsets.end())
    diag << " (ai.onnx opset " << opset->second << ")";
  diag << ": ";
  for (auto [i, group] : llvm::enumerate(groups)) {
    const auto &[opType, nodes] = group;
    diag << (i ? ", " : "") << opType << " \u00d7" << nodes.size() << " ("
         << (nodes.size() > kNodesListed ? "first: " : "");
    for (size_t j = 0; j < std::min(nodes.size(), kNodesListed); ++j)
      diag << (j ? ", " : "") << "'" << nodes[j] << "'";
    diag << ")";
  }
  for (const auto &domain : customDomains)
    diag.attachNote(fileLoc)
        << "domain '" << domain.getKey()
        << "' is not ai.onnx: Kiln imports the standard ONNX operators, "
           "ai.onnx.preview's FlexAttention, ai.onnx.preview.training's "
           "Adagrad, Adam and Momentum, ai.onnx.ml's Binarizer and "
           "ArrayFeatureExtractor, and from com.microsoft "
           "onnxruntime's quantised operators (QLinearAdd, QLinearMul, "
           "QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, "
           "QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QGemm)";
  return failure();
}

/// An ai.onnx opset newer than Kiln knows may give its operators meanings
/// Kiln cannot know: refused, naming a node that would be read wrongly.
LogicalResult ModelImporter::checkOpset(const onnx::GraphProto &graph) {
  auto opset = opsets.find("");
  if (opset == opsets.end())
    return success();
  int64_t version = opset->second;
  if (options.report)
    options.report->opset = version;
  if (version < 1)
    return emitModelError() << "not a valid ONNX model: it imports ai.onnx "
                               "opset "
                            << version << " (opsets start at 1)";
  if (version <= kMaxOpset)
    return success();
  const onnx::NodeProto *first = nullptr;
  int64_t count = 0;
  unsigned firstIndex = 0;
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (isDefaultDomain(node.domain()) && count++ == 0) {
      first = &node;
      firstIndex = index;
    }
  if (!first)
    return success(); // nothing in ai.onnx to misread
  InFlightDiagnostic diag =
      emitModelError() << "the model imports ai.onnx opset " << version
                       << ", newer than Kiln knows (the newest it reads is "
                       << kMaxOpset << "): node '"
                       << getNodeName(*first, firstIndex) << "' ("
                       << first->op_type() << ")";
  if (count > 1)
    diag << " and " << count - 1 << " other ai.onnx node(s)";
  return diag << " may mean something Kiln cannot know; convert the model "
                 "to opset "
              << kMaxOpset << " with onnx.version_converter";
}

LogicalResult
ModelImporter::checkInputShapeOptions(const onnx::GraphProto &graph) {
  for (const auto &entry : options.inputShapes) {
    const std::string &name = entry.first;
    ArrayRef<int64_t> shape = entry.second;
    bool isInput = llvm::any_of(graph.input(), [&](const auto &input) {
      return input.name() == name && !initializerNames.contains(name);
    });
    if (!isInput) {
      InFlightDiagnostic diag = emitModelError()
                                << "a shape is given for '" << name
                                << "', which is not an input of the model "
                                   "(inputs:";
      for (const onnx::ValueInfoProto &input : graph.input())
        if (!initializerNames.contains(input.name()))
          diag << " '" << input.name() << "'";
      return diag << ")";
    }
    if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
      return emitModelError()
             << "the shape given for input '" << name
             << "' has a negative dimension: " << graph::formatShape(shape);
  }
  return success();
}

/// Finds the symbolic batch: the symbolic dimension that leads the inputs
/// whose shapes no option fixes, named alike (or unnamed) in each and
/// nowhere else; checks the names the options give.
LogicalResult ModelImporter::resolveSymbols(const onnx::GraphProto &graph) {
  using Dim = onnx::TensorShapeProto::Dimension;
  auto symbolic = [&](const Dim &dim) {
    return dim.value_case() != Dim::kDimValue &&
           !options.dimSizes.count(dim.dim_param());
  };
  llvm::StringSet<> named;  // every dim_param of the inputs
  llvm::StringSet<> inside; // those at a dimension other than the first
  std::string leading, leadingInput;
  bool leads = false;
  forEachShapedInput(
      graph, initializerNames, [&](const auto &input, const auto &shape) {
        bool fixed = options.inputShapes.count(input.name());
        for (auto [d, dim] : llvm::enumerate(shape.dim())) {
          if (!dim.dim_param().empty())
            named.insert(dim.dim_param());
          if (fixed || !symbolic(dim))
            continue;
          if (d != 0) {
            inside.insert(dim.dim_param());
            continue;
          }
          if (!leading.empty() && !dim.dim_param().empty() &&
              dim.dim_param() != leading) {
            emitModelError()
                << "inputs '" << leadingInput << "' and '" << input.name()
                << "' lead with different symbolic dimensions, '" << leading
                << "' and '" << dim.dim_param()
                << "'; Kiln keeps one batch symbolic: give the "
                   "other a size with --dynamic-dims NAME=SIZE";
            leads = false;
            leading = "\n"; // reported
            return;
          }
          leads = true;
          if (leading.empty() && !dim.dim_param().empty()) {
            leading = dim.dim_param();
            leadingInput = input.name();
          }
        }
      });
  if (leading == "\n")
    return failure();
  if (leads && !inside.contains(leading)) {
    batchSymbol = leading.empty() ? "batch" : leading;
    named.insert(batchSymbol);
  }
  auto known = [&] {
    std::string list;
    for (const auto &name : named)
      list += (list.empty() ? "'" : ", '") + name.getKey().str() + "'";
    return list.empty() ? std::string("none") : list;
  };
  for (const auto &entry : options.dimSizes)
    if (!named.contains(entry.first))
      return emitModelError()
             << "--dynamic-dims names '" << entry.first
             << "', which no input of the model has (its symbolic "
                "dimensions: "
             << known() << ")";
  for (const auto &[name, bounds] : options.symbolBounds) {
    // Another name may bound a size that a node reads at run time (checked
    // after the import, when the nodes have taken theirs).
    if (!named.contains(name)) {
      state.runTimeSizeBounds[name] = bounds;
      inputSymbols = known();
      continue;
    }
    // Another dimension with bounds stays symbolic in the types, and the
    // code reads its size at run time.
    if (name != batchSymbol)
      dimSymbols.push_back({name, bounds});
  }
  auto given = options.symbolBounds.find(batchSymbol);
  if (given != options.symbolBounds.end())
    batchBounds = given->second;
  // Beside other symbols that the code reads, the batch is split as
  // anywhere (the entry takes one sample and reads the others' sizes),
  // unless the compiler asks for it to be read the same way as they are
  // (its default bounds would then size the workspace for 1024 samples:
  // without bounds, the compiler asks for a size).
  if (!batchSymbol.empty() && !dimSymbols.empty() &&
      options.readBatchAtRunTime) {
    if (given == options.symbolBounds.end())
      return emitModelError()
             << "the batch '" << batchSymbol
             << "' and the symbolic dimensions given bounds ('"
             << dimSymbols.front().first
             << "', ...) cannot both stay symbolic with the batch's default "
                "bounds (the workspace would hold 1024 samples): give the "
                "batch a size with --dynamic-dims "
             << batchSymbol << "=SIZE, or bounds with --dynamic-dims "
             << batchSymbol << "=MIN..MAX";
    dimSymbols.insert(dimSymbols.begin(), {batchSymbol, batchBounds});
    batchAsDim = batchSymbol;
    batchSymbol.clear();
  }
  return success();
}

FailureOr<RankedTensorType>
ModelImporter::convertInputType(const onnx::ValueInfoProto &input,
                                SmallVectorImpl<Attribute> &dimNames) {
  const std::string &name = input.name();
  const onnx::TypeProto &inputType = unwrapOptional(input.type());
  if (!inputType.has_tensor_type())
    return emitModelError() << "input '" << name
                            << "' is not a tensor or a sequence of tensors "
                               "(maps are not supported)";
  const onnx::TypeProto::Tensor &tensorType = inputType.tensor_type();
  Type elementType = convertElementType(&context, tensorType.elem_type());
  if (!elementType)
    return emitModelError() << "input '" << name << "' has element type "
                            << getONNXTypeName(tensorType.elem_type())
                            << ", which Kiln does not support";

  auto given = options.inputShapes.find(name);
  if (!tensorType.has_shape()) {
    if (given == options.inputShapes.end())
      return emitModelError()
             << "input '" << name
             << "' has no shape (not even a rank); give one in the import "
                "options";
    return RankedTensorType::get(given->second, elementType);
  }
  SmallVector<int64_t> shape;
  // What the options and the symbolic batch make of the dimensions given
  // no static size; kiln.dims names those left symbolic.
  SmallVector<int64_t> resolved;
  bool symbolic = false;
  for (auto [d, dim] : llvm::enumerate(tensorType.shape().dim())) {
    if (dim.value_case() != onnx::TensorShapeProto::Dimension::kDimValue) {
      shape.push_back(ShapedType::kDynamic);
      std::string name = dim.dim_param();
      auto size = options.dimSizes.find(name);
      if (size != options.dimSizes.end()) {
        resolved.push_back(size->second);
      } else if (d == 0 && !batchSymbol.empty() &&
                 (name.empty() || name == batchSymbol)) {
        resolved.push_back(options.batchProbe);
        name = batchSymbol;
        symbolic = true;
      } else if (d == 0 && !batchAsDim.empty() &&
                 (name.empty() || name == batchAsDim)) {
        resolved.push_back(ShapedType::kDynamic);
        name = batchAsDim;
        symbolic = true;
      } else {
        resolved.push_back(ShapedType::kDynamic);
        symbolic = true;
      }
      dimNames.push_back(StringAttr::get(&context, name));
      continue;
    }
    resolved.push_back(dim.dim_value());
    dimNames.push_back(StringAttr::get(&context, ""));
    if (dim.dim_value() < 0)
      return emitModelError() << "input '" << name
                              << "' has negative dimension " << dim.dim_value();
    shape.push_back(dim.dim_value());
  }
  // Static sizes whose product (the element count) overflows would make
  // every later shape computation undefined.
  int64_t elements = 1;
  for (int64_t size : shape)
    if (!ShapedType::isDynamic(size) &&
        llvm::MulOverflow(elements, size, elements))
      return emitModelError()
             << "input '" << name << "' has shape " << graph::formatShape(shape)
             << ", more elements than fit in 64 bits";
  if (given != options.inputShapes.end()) {
    ArrayRef<int64_t> override = given->second;
    if (override.size() != shape.size())
      return emitModelError()
             << "the shape given for input '" << name << "', "
             << graph::formatShape(override) << ", has rank " << override.size()
             << " but the model's input has rank " << shape.size() << " ("
             << graph::formatShape(shape) << ")";
    for (auto [i, pair] : llvm::enumerate(llvm::zip(shape, override))) {
      auto [declared, wanted] = pair;
      if (!ShapedType::isDynamic(declared) && declared != wanted)
        return emitModelError()
               << "the shape given for input '" << name << "', "
               << graph::formatShape(override) << ", differs from the model's "
               << graph::formatShape(shape) << " in dimension " << i;
    }
    shape.assign(override.begin(), override.end());
    dimNames.clear();
    return RankedTensorType::get(shape, elementType);
  }
  if (!symbolic)
    dimNames.clear();
  return RankedTensorType::get(resolved, elementType);
}

FailureOr<SmallVector<Type>>
ModelImporter::convertSequenceInput(const onnx::ValueInfoProto &input) {
  const std::string &name = input.name();
  const onnx::TypeProto &element =
      unwrapOptional(input.type()).sequence_type().elem_type();
  if (!element.has_tensor_type())
    return emitModelError() << "input '" << name
                            << "' is a sequence of something other than "
                               "tensors, which Kiln does not support";
  Type elementType =
      convertElementType(&context, element.tensor_type().elem_type());
  if (!elementType)
    return emitModelError()
           << "input '" << name << "' is a sequence of "
           << getONNXTypeName(element.tensor_type().elem_type())
           << ", which Kiln does not support";
  auto given = options.sequenceShapes.find(name);
  if (given == options.sequenceShapes.end())
    return emitModelError()
           << "input '" << name
           << "' is a sequence: Kiln compiles a sequence's length and its "
              "tensors' shapes into the model; give them with "
              "--sequence-shape "
           << name << "=D0xD1,D0xD1,... (one shape per tensor)";
  if (given->second.size() > size_t(kMaxUnrolledIterations))
    return emitModelError()
           << "the sequence given for input '" << name << "' holds "
           << given->second.size() << " tensors; Kiln's sequences hold at most "
           << kMaxUnrolledIterations;
  SmallVector<Type> types;
  for (auto [i, shape] : llvm::enumerate(given->second)) {
    if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
      return emitModelError()
             << "the shape of tensor " << i << " of sequence input '" << name
             << "' has a negative dimension: " << graph::formatShape(shape);
    if (element.tensor_type().has_shape()) {
      const auto &dims = element.tensor_type().shape().dim();
      bool agrees = dims.size() == static_cast<int>(shape.size());
      for (int d = 0; agrees && d < dims.size(); ++d)
        agrees = dims[d].value_case() !=
                     onnx::TensorShapeProto::Dimension::kDimValue ||
                 dims[d].dim_value() == shape[d];
      if (!agrees)
        return emitModelError()
               << "the shape " << graph::formatShape(shape) << " given for "
               << "tensor " << i << " of sequence input '" << name
               << "' differs from the model's element shape";
    }
    int64_t elements = 1;
    for (int64_t size : shape)
      if (llvm::MulOverflow(elements, size, elements))
        return emitModelError()
               << "tensor " << i << " of sequence input '" << name
               << "' has shape " << graph::formatShape(shape)
               << ", more elements than fit in 64 bits";
    types.push_back(RankedTensorType::get(shape, elementType));
  }
  return types;
}

LogicalResult ModelImporter::importNode(const onnx::NodeProto &node,
                                        unsigned index, OpBuilder &builder) {
  std::string name = getNodeName(node, index);
  Location loc = NameLoc::get(
      StringAttr::get(&context, name + " (" + node.op_type() + ")"), fileLoc);
  state.nodeDescriptions.try_emplace(loc, "node '" + name + "' (" +
                                              node.op_type() + ")");
  // With keepGoing, a node Kiln cannot import (reported already) or whose
  // input is unknown defines unknown values.
  auto skip = [&] {
    for (const std::string &output : node.output())
      unknownValues.insert(output);
    return success();
  };
  if (unsupportedNodes.contains(&node))
    return skip();
  if (llvm::any_of(node.input(), [&](const std::string &input) {
        return unknownValues.contains(input);
      })) {
    if (options.report)
      ++options.report->unchecked;
    return skip();
  }
  std::string domain = isDefaultDomain(node.domain()) ? "" : node.domain();
  int64_t opset = opsets.at(domain);
  NodeImporter importer(state, node, name, opset, builder, loc);
  for (const std::string &input : node.input())
    if (!input.empty() && !state.values.count(input))
      return importer.emitError()
             << "input '" << input
             << "' is not a graph input, an initializer or the output of an "
                "earlier node (ONNX graphs are topologically sorted)";
  // The inputs whose sizes the run decides pass them on (or the node is
  // refused, after its import).
  SmallVector<SmallVector<DataDependentSize, 1>> sizes;
  for (const std::string &input : node.input()) {
    auto it = input.empty()
                  ? state.dataDependent.end()
                  : state.dataDependent.find(state.values.lookup(input));
    sizes.push_back(it == state.dataDependent.end()
                        ? SmallVector<DataDependentSize, 1>()
                        : it->second);
  }
  bool passesSizes =
      llvm::any_of(sizes, [](const auto &s) { return !s.empty(); });
  // Sequences reach only the operators that take them; any other gets
  // tensors (its importer never sees a sequence).
  static const llvm::StringSet<> takesSequences = {"SequenceInsert",
                                                   "SequenceAt",
                                                   "SequenceErase",
                                                   "SequenceLength",
                                                   "ConcatFromSequence",
                                                   "SequenceMap",
                                                   "Identity",
                                                   "If",
                                                   "Loop",
                                                   "Optional",
                                                   "OptionalGetElement",
                                                   "OptionalHasElement"};
  if (!domain.empty() || !takesSequences.contains(node.op_type()))
    for (auto [i, input] : llvm::enumerate(node.input()))
      if (!input.empty() && isSequence(state.values.lookup(input)))
        return importer.emitError()
               << "input " << i << " ('" << input << "') is a sequence, but "
               << node.op_type() << " takes tensors";
  NodeImportFn fn = getNodeImporterRegistry().lookup(
      domain.empty() ? node.op_type() : domain + "." + node.op_type(), opset);
  assert(fn && "checkNodes let an unsupported node through");
  // Arithmetic on the sizes of symbolic dimensions is followed entry by
  // entry (ImportShapeValues.cpp).
  std::optional<SmallVector<ShapeEntry>> shapeValue =
      evaluateShapeArithmetic(importer);
  if (failed(fn(importer)) || importer.hasFailed())
    return failure();
  if (shapeValue)
    recordShapeValue(importer, *shapeValue);
  if (passesSizes && failed(passDataDependentSizes(importer, sizes)))
    return failure();
  return success();
}

/// A graph.constant of initializer `init`; null after an error.
Value ModelImporter::importInitializer(const onnx::TensorProto &init,
                                       OpBuilder &builder) {
  Location loc = NameLoc::get(
      StringAttr::get(&context, init.name() + " (initializer)"), fileLoc);
  ElementsAttr value =
      importTensor(init, state, loc, "initializer '" + init.name() + "'");
  return value ? graph::ConstantOp::create(builder, loc, cast<TypedAttr>(value))
               : Value();
}

FailureOr<SmallVector<Value>>
ModelImporter::importSubgraph(const onnx::GraphProto &graph, ValueRange inputs,
                              OpBuilder &builder) {
  if (state.subgraphDepth >= kMaxSubgraphDepth) {
    emitModelError() << "subgraph '" << graph.name() << "' is nested more than "
                     << kMaxSubgraphDepth << " deep";
    return failure();
  }
  state.subgraphNodes += graph.node_size();
  if (state.subgraphNodes > kMaxSubgraphNodes) {
    emitModelError() << "importing subgraph '" << graph.name()
                     << "' (unrolling its loops) would build more than "
                     << kMaxSubgraphNodes << " nodes";
    return failure();
  }
  ++state.subgraphDepth;
  auto leave = llvm::scope_exit([&] { --state.subgraphDepth; });
  // The names the subgraph defines hide the enclosing graph's while it is
  // imported, and are removed after (so that a body imports again).
  llvm::StringMap<Value> hidden;
  auto define = [&](const std::string &name, Value value) {
    if (!hidden.count(name))
      hidden[name] = state.values.lookup(name);
    state.values[name] = value;
  };
  auto restore = [&]() {
    for (auto &entry : hidden) {
      if (entry.second)
        state.values[entry.getKey()] = entry.second;
      else
        state.values.erase(entry.getKey());
    }
  };
  for (auto [input, value] : llvm::zip(graph.input(), inputs))
    define(input.name(), value);
  for (const onnx::TensorProto &init : graph.initializer()) {
    Value constant = importInitializer(init, builder);
    if (!constant) {
      restore();
      return failure();
    }
    define(init.name(), constant);
  }
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &input : node.input())
      state.usedNames.insert(input);
    for (const std::string &output : node.output())
      if (!output.empty() && !hidden.count(output)) {
        hidden[output] = state.values.lookup(output);
        state.values.erase(output);
      }
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    state.usedNames.insert(output.name());
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index, builder))) {
      restore();
      return failure();
    }
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = state.values.lookup(output.name());
    if (!value) {
      emitModelError() << "subgraph '" << graph.name() << "': output '"
                       << output.name() << "' is not computed";
      restore();
      return failure();
    }
    if (auto it = state.dataDependent.find(value);
        it != state.dataDependent.end()) {
      emitModelError() << "subgraph '" << graph.name() << "': output '"
                       << output.name() << "': "
                       << dataDependentUse(output.name(), it->second.front());
      restore();
      return failure();
    }
    outputs.push_back(value);
  }
  restore();
  return outputs;
}

LogicalResult ModelImporter::verifyModule(ModuleOp module) {
  LogicalResult result = success();
  auto messages = collectDiagnostics(
      &context, [&]() { result = verify(module.getOperation()); });
  for (auto &[loc, message] : messages) {
    auto description = state.nodeDescriptions.find(loc);
    if (description != state.nodeDescriptions.end())
      emitError(loc) << description->second << ": " << message;
    else
      emitError(loc) << message;
  }
  if (succeeded(result) && messages.empty())
    return success();
  if (messages.empty())
    emitModelError() << "the imported model does not verify";
  return failure();
}

OwningOpRef<ModuleOp> ModelImporter::run(const onnx::ModelProto &model) {
  context.loadDialect<func::FuncDialect, graph::GraphDialect>();
  if (failed(checkVersions(model)))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  if (options.report)
    options.report->nodes = graph.node_size();
  // A problem ends the import, or with keepGoing is counted and the check
  // goes on without what it would have defined.
  auto problem = [&]() {
    failedSome = true;
    return options.keepGoing;
  };
  auto undefine = [&](const auto &names) {
    for (const std::string &name : names)
      unknownValues.insert(name);
    return problem();
  };
  for (const onnx::SparseTensorProto &sparse : graph.sparse_initializer()) {
    emitModelError() << "sparse initializer '" << sparse.values().name()
                     << "' is not supported";
    if (!undefine(std::vector<std::string>{sparse.values().name()}))
      return nullptr;
  }
  for (const onnx::TensorProto &init : graph.initializer())
    initializerNames.insert(init.name());
  // What the model declares of its values' shapes.
  auto declare = [&](const onnx::ValueInfoProto &info) {
    const onnx::TypeProto &type = unwrapOptional(info.type());
    if (!type.has_tensor_type() || !type.tensor_type().has_shape())
      return;
    auto &dims = state.declaredDims[info.name()];
    dims.clear();
    for (const auto &dim : type.tensor_type().shape().dim())
      dims.push_back({dim.has_dim_value() ? dim.dim_value() : int64_t(-1),
                      dim.dim_param()});
  };
  for (const onnx::ValueInfoProto &info : graph.value_info())
    declare(info);
  for (const onnx::ValueInfoProto &output : graph.output())
    declare(output);
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &input : node.input())
      state.usedNames.insert(input);
  for (const onnx::ValueInfoProto &output : graph.output())
    state.usedNames.insert(output.name());
  // Each check reports all it finds; nodes need an ai.onnx opset to go on.
  bool opsetOk = succeeded(checkOpset(graph));
  bool nodesOk = succeeded(checkNodes(graph));
  bool shapesOk = succeeded(checkInputShapeOptions(graph)) &&
                  succeeded(resolveSymbols(graph));
  if (!opsetOk || !nodesOk || !shapesOk) {
    bool hasOpset = opsets.count("") && opsets.at("") >= 1;
    if (!problem() || !hasOpset)
      return nullptr;
  }

  // @main's arguments: the graph inputs that are not initializers; a
  // sequence input gives one argument per tensor, named NAME[i].
  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  SmallVector<ArrayAttr> argDims;
  SmallVector<std::string> argNames;
  // Per sequence input: its first argument, its tensors' types and its
  // element type.
  struct SequenceArgs {
    unsigned first;
    SmallVector<Type> types;
    Type element;
  };
  llvm::StringMap<SequenceArgs> sequenceArgs;
  llvm::StringSet<> inputNames;
  for (const auto &entry : options.sequenceShapes) {
    bool isSequenceInput = llvm::any_of(graph.input(), [&](const auto &in) {
      return in.name() == entry.first &&
             unwrapOptional(in.type()).has_sequence_type() &&
             !initializerNames.contains(in.name());
    });
    if (!isSequenceInput) {
      emitModelError() << "a sequence shape is given for '" << entry.first
                       << "', which is not a sequence input of the model";
      if (!problem())
        return nullptr;
    }
  }
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    if (!inputNames.insert(input.name()).second)
      return fail(emitModelError()
                  << "graph input '" << input.name() << "' is listed twice");
    if (unwrapOptional(input.type()).has_sequence_type()) {
      FailureOr<SmallVector<Type>> types = convertSequenceInput(input);
      if (failed(types)) {
        if (!undefine(std::vector<std::string>{input.name()}))
          return nullptr;
        continue;
      }
      sequenceArgs[input.name()] = {
          unsigned(argTypes.size()), *types,
          convertElementType(&context, unwrapOptional(input.type())
                                           .sequence_type()
                                           .elem_type()
                                           .tensor_type()
                                           .elem_type())};
      for (auto [i, type] : llvm::enumerate(*types)) {
        argDims.push_back(ArrayAttr());
        argTypes.push_back(type);
        args.push_back(&input);
        argNames.push_back(input.name() + "[" + std::to_string(i) + "]");
      }
      continue;
    }
    SmallVector<Attribute> dimNames;
    FailureOr<RankedTensorType> type = convertInputType(input, dimNames);
    if (failed(type)) {
      if (!undefine(std::vector<std::string>{input.name()}))
        return nullptr;
      continue;
    }
    argDims.push_back(dimNames.empty() ? ArrayAttr()
                                       : ArrayAttr::get(&context, dimNames));
    argTypes.push_back(*type);
    args.push_back(&input);
    argNames.push_back(input.name());
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  OpBuilder builder(&context);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(argTypes, {}));
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  llvm::StringSet<> argNameSet;
  for (auto [i, input] : llvm::enumerate(args)) {
    if (!argNameSet.insert(argNames[i]).second)
      return fail(emitModelError()
                  << "graph input '" << argNames[i] << "' is listed twice");
    func.setArgAttr(i, attr::kName, builder.getStringAttr(argNames[i]));
    if (argDims[i])
      func.setArgAttr(i, attr::kDims, argDims[i]);
    auto sequence = sequenceArgs.find(input->name());
    if (sequence == sequenceArgs.end()) {
      if (!state.values.try_emplace(input->name(), body->getArgument(i)).second)
        return fail(emitModelError()
                    << "graph input '" << input->name() << "' is listed twice");
    } else if (sequence->second.first == i) {
      ValueRange elements =
          body->getArguments().slice(i, sequence->second.types.size());
      state.values[input->name()] =
          createSequence(builder, fileLoc, elements, sequence->second.element);
    }
  }
  // Sequence inputs of no tensor have no argument: bind them too.
  for (const auto &entry : sequenceArgs)
    if (entry.getValue().types.empty())
      state.values[entry.getKey()] =
          createSequence(builder, fileLoc, {}, entry.getValue().element);
  if (!batchSymbol.empty())
    func->setAttr(
        attr::kSymbols,
        builder.getArrayAttr(builder.getDictionaryAttr(
            {builder.getNamedAttr("name", builder.getStringAttr(batchSymbol)),
             builder.getNamedAttr("min",
                                  builder.getI64IntegerAttr(batchBounds.first)),
             builder.getNamedAttr(
                 "max", builder.getI64IntegerAttr(batchBounds.second))})));
  if (!dimSymbols.empty()) {
    SmallVector<Attribute> list;
    for (const auto &[name, bounds] : dimSymbols)
      list.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("name", builder.getStringAttr(name)),
           builder.getNamedAttr("min", builder.getI64IntegerAttr(bounds.first)),
           builder.getNamedAttr("max",
                                builder.getI64IntegerAttr(bounds.second))}));
    func->setAttr(attr::kDimSymbols, builder.getArrayAttr(list));
  }

  for (const onnx::TensorProto &init : graph.initializer()) {
    Value constant = importInitializer(init, builder);
    if (!constant) {
      if (!undefine(std::vector<std::string>{init.name()}))
        return nullptr;
      continue;
    }
    if (!state.values.try_emplace(init.name(), constant).second)
      return fail(emitModelError()
                  << "initializer '" << init.name() << "' is defined twice");
  }

  state.importSubgraph = [&](const onnx::GraphProto &subgraph,
                             ValueRange inputs) {
    return importSubgraph(subgraph, inputs, builder);
  };
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index, builder)) && !undefine(node.output()))
      return nullptr;
  // A check that found problems ends here: what was built is incomplete.
  if (failedSome)
    return nullptr;
  for (const auto &entry : state.runTimeSizeBounds)
    if (!state.runTimeSizeBoundsUsed.contains(entry.first))
      return fail(emitModelError()
                  << "--dynamic-dims names '" << entry.first
                  << "', which no input of the model has (its symbolic "
                     "dimensions: "
                  << inputSymbols
                  << "), nor is it a size that a node reads at run time");

  SmallVector<Value> results;
  SmallVector<std::string> resultNames;
  SmallVector<const onnx::ValueInfoProto *> resultInfos;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value value = state.values.lookup(output.name());
    if (!value)
      return fail(emitModelError() << "graph output '" << output.name()
                                   << "' is not computed by any node, input or "
                                      "initializer");
    if (isSequence(value)) {
      // One result per tensor, named NAME[i].
      for (auto [i, element] : llvm::enumerate(getSequenceElements(value))) {
        results.push_back(element);
        resultNames.push_back(output.name() + "[" + std::to_string(i) + "]");
        resultInfos.push_back(nullptr);
      }
      continue;
    }
    resultNames.push_back(output.name());
    if (output.type().has_tensor_type() &&
        output.type().tensor_type().elem_type() != 0) {
      int32_t declared = output.type().tensor_type().elem_type();
      Type elementType = convertElementType(&context, declared);
      Type computed = cast<ShapedType>(value.getType()).getElementType();
      if (elementType != computed) {
        std::string computedName;
        llvm::raw_string_ostream(computedName) << computed;
        return fail(emitModelError()
                    << "graph output '" << output.name() << "' is declared as "
                    << getONNXTypeName(declared) << " but computed as "
                    << computedName);
      }
    }
    results.push_back(value);
    resultInfos.push_back(&output);
  }
  // Outputs whose sizes the data decides: a symbol per count, named after
  // the output's dim_param where it declares one, and the count returned
  // after the outputs (the model ABI gives it as the symbol's size).
  SmallVector<Value> counts;
  SmallVector<Attribute> resultSymbols;
  llvm::StringSet<> symbolNames;
  SmallVector<SmallVector<int64_t>> resultDims(results.size());
  for (auto [i, value] : llvm::enumerate(results)) {
    auto it = state.dataDependent.find(value);
    if (it == state.dataDependent.end())
      continue;
    resultDims[i].assign(cast<RankedTensorType>(value.getType()).getRank(), -1);
    for (const DataDependentSize &size : it->second) {
      auto *found = llvm::find(counts, size.count);
      int64_t k = found - counts.begin();
      if (found == counts.end()) {
        std::string name = resultNames[i] + "_" + std::to_string(size.dim);
        const onnx::ValueInfoProto *info = resultInfos[i];
        if (info && info->type().has_tensor_type() &&
            info->type().tensor_type().shape().dim_size() > size.dim &&
            !info->type()
                 .tensor_type()
                 .shape()
                 .dim(size.dim)
                 .dim_param()
                 .empty())
          name = info->type().tensor_type().shape().dim(size.dim).dim_param();
        while (!symbolNames.insert(name).second)
          name += "'";
        counts.push_back(size.count);
        int64_t max =
            cast<RankedTensorType>(value.getType()).getDimSize(size.dim);
        resultSymbols.push_back(builder.getDictionaryAttr(
            {builder.getNamedAttr("name", builder.getStringAttr(name)),
             builder.getNamedAttr("max", builder.getI64IntegerAttr(max))}));
      }
      resultDims[i][size.dim] = k;
    }
  }
  // The model ABI describes at most 64 symbols (the runtime's limit).
  constexpr size_t kMaxSymbols = 64;
  size_t inputSymbolCount = dimSymbols.size() + (batchSymbol.empty() ? 0 : 1);
  if (inputSymbolCount + counts.size() > kMaxSymbols)
    return fail(emitModelError()
                << "the model has " << inputSymbolCount + counts.size()
                << " symbolic sizes (" << counts.size()
                << " of its outputs' decided by the run), more than the "
                << kMaxSymbols << " a compiled model can describe");
  size_t numOutputs = results.size();
  results.append(counts.begin(), counts.end());
  func::ReturnOp::create(builder, fileLoc, results);
  func.setType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, name] : llvm::enumerate(resultNames)) {
    func.setResultAttr(i, attr::kName, builder.getStringAttr(name));
    if (!resultDims[i].empty())
      func.setResultAttr(i, attr::kResultDims,
                         builder.getDenseI64ArrayAttr(resultDims[i]));
  }
  for (auto [k, symbol] : llvm::enumerate(resultSymbols)) {
    func.setResultAttr(numOutputs + k, attr::kName,
                       cast<DictionaryAttr>(symbol).getAs<StringAttr>("name"));
    func.setResultAttr(numOutputs + k, attr::kResultSymbol,
                       builder.getI64IntegerAttr(k));
  }
  if (!resultSymbols.empty())
    func->setAttr(attr::kResultSymbols, builder.getArrayAttr(resultSymbols));
  // The sequences were lists of values for the import only: nothing uses
  // them now.
  SmallVector<Operation *> sequences;
  func.walk([&](UnrealizedConversionCastOp cast) {
    if (cast->getNumResults() == 1 && isSequence(cast.getResult(0)))
      sequences.push_back(cast);
  });
  for (Operation *op : llvm::reverse(sequences)) {
    if (!op->use_empty())
      return fail(emitModelError() << "internal error: a sequence is still "
                                      "used after the import");
    op->erase();
  }

  if (failed(verifyModule(*module)))
    return nullptr;
  return module;
}

/// Parses a serialized ModelProto of up to 2 GiB (protobuf's own limit).
static LogicalResult parseModel(llvm::StringRef bytes, Location loc,
                                onnx::ModelProto &model) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return emitError(loc) << "the model is larger than 2 GiB, protobuf's "
                             "limit; save its weights as external data";
  google::protobuf::io::CodedInputStream input(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(bytes.size()));
  input.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage())
    return emitError(loc) << "not a valid ONNX model: the file is not a "
                             "serialized ModelProto (truncated or another "
                             "kind of file)";
  return success();
}

OwningOpRef<ModuleOp> kiln::importONNXFile(MLIRContext &context,
                                           const std::string &path,
                                           const ImportOptions &options) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(loc) << "cannot read ONNX model '" << path
                   << "': " << buffer.getError().message();
    return nullptr;
  }
  onnx::ModelProto model;
  if (failed(parseModel((*buffer)->getBuffer(), loc, model)))
    return nullptr;
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  return ModelImporter(context, path, dir.empty() ? "." : dir, options)
      .run(model);
}

OwningOpRef<ModuleOp> kiln::importONNXBytes(MLIRContext &context,
                                            const std::string &bytes,
                                            const std::string &baseDir,
                                            const ImportOptions &options) {
  llvm::StringRef name = "<in-memory ONNX model>";
  onnx::ModelProto model;
  if (failed(
          parseModel(bytes, FileLineColLoc::get(&context, name, 0, 0), model)))
    return nullptr;
  return ModelImporter(context, name, baseDir, options).run(model);
}
