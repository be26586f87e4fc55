//===- NodeImporter.h - Importing one ONNX node -----------------*- C++ -*-===//
//
// The interface between the ONNX import driver and the per-operator import
// functions. The driver walks the graph in order and, for each node, calls
// the function registered for the node's op type and opset version with a
// NodeImporter that gives the node's inputs as Values, its attributes with
// their defaults, a builder at the right place and a location naming the node.
//
// Adding an operator: write a function in the file of its family
// (ImportCore.cpp, ImportElementwise.cpp, ImportNN.cpp, ImportShape.cpp,
// ImportReduction.cpp, ImportQuantized.cpp, or ImportComposite.cpp for an
// operator built from several graph ops, such as Attention) and register it
// there:
//
//   static LogicalResult importRelu(NodeImporter &node) {
//     Value x = node.getInput(0);
//     if (!x)
//       return node.emitError() << "needs an input";
//     return node.setResults(node.create<graph::ReluOp>(x));
//   }
//   ...
//   registry.add("Relu", /*minOpset=*/6, importRelu);
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_IMPORT_NODEIMPORTER_H
#define KILN_LIB_IMPORT_NODEIMPORTER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace onnx {
class AttributeProto;
class GraphProto;
class NodeProto;
} // namespace onnx

namespace kiln {

class NodeImporter;

/// Imports one node. Returns failure after emitting an error (through
/// NodeImporter::emitError, so that it names the node).
using NodeImportFn = llvm::LogicalResult (*)(NodeImporter &node);

/// What the driver knows about the graph around a node; built and owned by
/// the driver.
struct GraphImportState;

/// One node being imported: its inputs, attributes, builder and location.
class NodeImporter {
public:
  NodeImporter(GraphImportState &state, const onnx::NodeProto &node,
               llvm::StringRef displayName, int64_t opset,
               mlir::OpBuilder &builder, mlir::Location loc);

  const onnx::NodeProto &getNode() const { return node; }
  /// The node's name, or "<OpType>#<index>" when the model gives none.
  llvm::StringRef getName() const { return displayName; }
  llvm::StringRef getOpType() const;
  /// The opset version the model imports for the node's domain.
  int64_t getOpset() const { return opset; }
  mlir::OpBuilder &getBuilder() { return builder; }
  /// What the driver knows of the graph so far (ImportState.h).
  GraphImportState &getState() { return state; }
  mlir::MLIRContext *getContext() { return builder.getContext(); }
  /// NameLoc "<name> (<OpType>)" around the model file's location.
  mlir::Location getLoc() const { return loc; }

  //===--------------------------------------------------------------------===//
  // Inputs and outputs
  //===--------------------------------------------------------------------===//

  /// Number of inputs listed on the node, absent optional ones included.
  unsigned getNumInputs() const;
  /// Input `i`, or null for an absent optional input (an empty name or an
  /// index past the end).
  mlir::Value getInput(unsigned i) const;
  /// The ElementsAttr of input `i` when it is produced by a graph.constant
  /// (an initializer or a Constant node), else null.
  mlir::ElementsAttr getConstantInput(unsigned i) const;

  unsigned getNumOutputs() const;
  /// Whether output `i` is named and read by a later node or a graph output.
  bool isOutputUsed(unsigned i) const;

  /// Binds the node's outputs, in order, to `values`. Fewer values than
  /// outputs leaves the trailing (optional) outputs unbound; an error then
  /// names any of them that is used. A null value (a failed `create`) makes
  /// this return failure without a further error.
  llvm::LogicalResult setResults(mlir::ValueRange values);
  llvm::LogicalResult setResults(mlir::Value value) {
    if (!value)
      return llvm::failure();
    return setResults(mlir::ValueRange(value));
  }

  /// Records that the data decides `result`'s size along `dim`: `count`
  /// entries of it are the node's output (GraphImportState::dataDependent);
  /// once per such dimension.
  void setDataDependent(mlir::Value result, mlir::Value count, int64_t dim);

  //===--------------------------------------------------------------------===//
  // Attributes. Getters return the default when the attribute is absent; an
  // attribute of the wrong ONNX type is an error at the node (and the node's
  // import fails even if the importer returns success).
  //===--------------------------------------------------------------------===//

  bool hasAttr(llvm::StringRef name) const;
  int64_t getInt(llvm::StringRef name, int64_t defaultValue = 0);
  float getFloat(llvm::StringRef name, float defaultValue = 0.0f);
  std::string getString(llvm::StringRef name,
                        llvm::StringRef defaultValue = "");
  llvm::SmallVector<int64_t> getInts(llvm::StringRef name,
                                     llvm::ArrayRef<int64_t> defaultValue = {});
  llvm::SmallVector<float> getFloats(llvm::StringRef name,
                                     llvm::ArrayRef<float> defaultValue = {});
  llvm::SmallVector<std::string>
  getStrings(llvm::StringRef name,
             llvm::ArrayRef<std::string> defaultValue = {});
  /// A TENSOR attribute as a DenseElementsAttr or DenseResourceElementsAttr;
  /// null (after an error) when absent or malformed.
  mlir::ElementsAttr getTensor(llvm::StringRef name);
  /// A GRAPH attribute (an If branch, a Loop or Scan body); null (after an
  /// error) when absent or of another type.
  const onnx::GraphProto *getGraph(llvm::StringRef name);
  /// Imports `graph` in place with its inputs bound to `inputs` (the
  /// enclosing graphs' values visible by name) and returns its outputs;
  /// failure after an error. Each call imports it again (unrolling).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  importGraph(const onnx::GraphProto &graph, mlir::ValueRange inputs);

  //===--------------------------------------------------------------------===//
  // Building ops and reporting errors
  //===--------------------------------------------------------------------===//

  /// An error at the node, starting "node '<name>' (<OpType>): ".
  mlir::InFlightDiagnostic emitError();

  /// Creates `OpTy` at the node's location with `args` as its builder
  /// arguments less the result types, which are inferred. Where inference
  /// refuses the operands (mismatched element types, shapes that do not
  /// broadcast...), its message is reported at the node and null returned:
  /// user input never reaches a fatal error in a builder.
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    static_assert(OpTy::template hasTrait<mlir::OpTrait::OneResult>(),
                  "use createOp for ops with several results");
    mlir::Operation *op = createOp<OpTy>(std::forward<Args>(args)...);
    return op ? op->getResult(0) : mlir::Value();
  }

  /// The same returning the operation (null on failure).
  template <typename OpTy, typename... Args>
  mlir::Operation *createOp(Args &&...args) {
    mlir::OperationState state(loc, OpTy::getOperationName());
    OpTy::build(builder, state, mlir::TypeRange(), std::forward<Args>(args)...);
    // An operand that an earlier op failed to make (its error reported):
    // no op, rather than a null operand that inference would read.
    if (llvm::any_of(state.operands, [](mlir::Value v) { return !v; })) {
      if (!failedFlag)
        emitError() << "an operand of " << OpTy::getOperationName()
                    << " could not be made";
      return nullptr;
    }
    llvm::SmallVector<mlir::Type> types;
    if (mlir::failed(inferTypes([&](mlir::Location inferLoc) {
          return OpTy::inferReturnTypes(
              builder.getContext(), inferLoc, mlir::ValueRange(state.operands),
              state.attributes.getDictionary(builder.getContext()),
              state.getRawProperties(), mlir::RegionRange(state.regions),
              types);
        })))
      return nullptr;
    state.types.assign(types.begin(), types.end());
    return builder.create(state);
  }

  /// Creates `OpTy` as `create` does and folds it when its operands are
  /// constants, so that shape arithmetic an exporter emits (Shape -> Gather
  /// -> Mul -> Concat) imports as the constant a later Reshape or Expand
  /// needs. Returns the first result (a graph.constant where it folded).
  template <typename OpTy, typename... Args>
  mlir::Value createFolded(Args &&...args) {
    mlir::Operation *op = createOp<OpTy>(std::forward<Args>(args)...);
    return op ? foldResults(op).front() : mlir::Value();
  }

  /// The results of the freshly created `op`, replaced by the constants it
  /// folds to (then `op` is erased) when its operands are constants.
  llvm::SmallVector<mlir::Value> foldResults(mlir::Operation *op);

  /// Marks the node as failed (an error was emitted elsewhere).
  void setFailed() { failedFlag = true; }
  bool hasFailed() const { return failedFlag; }

private:
  /// Runs `infer` with the node's location, turning any diagnostic it emits
  /// into an error naming the node.
  llvm::LogicalResult
  inferTypes(llvm::function_ref<llvm::LogicalResult(mlir::Location)> infer);
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  /// Checks the attribute's type; emits an error when it is another.
  bool checkAttrType(const onnx::AttributeProto &attr, int expected,
                     llvm::StringRef expectedName);

  GraphImportState &state;
  const onnx::NodeProto &node;
  std::string displayName;
  int64_t opset;
  mlir::OpBuilder &builder;
  mlir::Location loc;
  bool failedFlag = false;
};

/// Import functions by ONNX op type and opset range. An operator of another
/// domain than ai.onnx registers under its qualified name
/// ("com.microsoft.QLinearAdd") with that domain's opset range.
class NodeImporterRegistry {
public:
  static constexpr int64_t kAnyOpset = std::numeric_limits<int64_t>::max();

  /// Registers `fn` for `opType` in models importing an ai.onnx opset in
  /// [minOpset, maxOpset]. Register a second function with a disjoint range
  /// when a later opset changes the operator's meaning.
  void add(llvm::StringRef opType, int64_t minOpset, NodeImportFn fn,
           int64_t maxOpset = kAnyOpset);

  /// The function for `opType` at `opset`, or null.
  NodeImportFn lookup(llvm::StringRef opType, int64_t opset) const;

private:
  struct Entry {
    int64_t minOpset;
    int64_t maxOpset;
    NodeImportFn fn;
  };
  llvm::StringMap<llvm::SmallVector<Entry, 1>> entries;
};

/// One function per operator family, each in Import<Family>.cpp.
void registerCoreImporters(NodeImporterRegistry &registry);
void registerElementwiseImporters(NodeImporterRegistry &registry);
void registerNNImporters(NodeImporterRegistry &registry);
void registerQuantizedImporters(NodeImporterRegistry &registry);
void registerShapeImporters(NodeImporterRegistry &registry);
void registerReductionImporters(NodeImporterRegistry &registry);
void registerSelectionImporters(NodeImporterRegistry &registry);
void registerCompositeImporters(NodeImporterRegistry &registry);
void registerControlFlowImporters(NodeImporterRegistry &registry);
void registerRecurrentImporters(NodeImporterRegistry &registry);
void registerTrainingImporters(NodeImporterRegistry &registry);
void registerMLImporters(NodeImporterRegistry &registry);
void registerSequenceImporters(NodeImporterRegistry &registry);

/// The registry with every family registered; built once, thread-safe.
const NodeImporterRegistry &getNodeImporterRegistry();

} // namespace kiln

#endif // KILN_LIB_IMPORT_NODEIMPORTER_H
