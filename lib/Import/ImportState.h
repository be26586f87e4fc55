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
#include "mlir/IR/ValueRange.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace onnx {
class GraphProto;
class TensorProto;
} // namespace onnx

namespace mlir {
class OpBuilder;
} // namespace mlir

namespace kiln {

class NodeImporter;

/// A value a DequantizeLinear made of 8-bit (or, for a bias, 32-bit)
/// integers: (integer - zeroPoint) * scale, the scale and zero point per
/// tensor (axis -1) or along `axis`.
struct DequantizedValue {
  mlir::Value integer, scale, zeroPoint;
  int64_t axis = -1;
};

/// A float value that a Conv, MatMul or Gemm of dequantized operands
/// computed exactly as `acc * inputScale * weightScale`, where `acc` holds
/// the integer products (in f32) and the scales broadcast against it. A
/// QuantizeLinear of it (through Relu and Clip) requantises `acc` as
/// onnxruntime's QLinearConv does, rather than the float value.
struct Accumulation {
  mlir::Value acc, inputScale, weightScale;
};

/// The bounds on subgraphs (GraphImportState::subgraphDepth and
/// subgraphNodes).
constexpr int kMaxSubgraphDepth = 16;
constexpr int64_t kMaxSubgraphNodes = 200000;
/// The most iterations a Loop or Scan, or a recurrence imported step by step
/// (LinearAttention), unrolls into: beyond that the graph grows out of
/// proportion, and the error says so.
constexpr int64_t kMaxUnrolledIterations = 4096;

/// A value whose size along `dim` the data decides (NonZero, Compress,
/// Unique, NonMaxSuppression): its static type has room for the most, and
/// `count` (a tensor<i64>) says how many entries along `dim` are the result.
/// Such a value may only be a graph output (the model ABI returns its size
/// after the run); `node` describes its node for the error otherwise.
struct DataDependentSize {
  mlir::Value count;
  int64_t dim = 0;
  std::string node;
};

/// One entry of a small integer tensor computed from the sizes of a tensor
/// with symbolic (`?`) dimensions (kiln.dim_symbols): a number, or `scale`
/// times symbol `symbol` (a scale above 1 where a size was multiplied by a
/// static one: the sequence times a batch that kiln-graph-split-batch makes
/// 1). `source` and `dim` name a dimension whose size is the symbol alone,
/// where one is known (a graph.prefix as long as it is cut there).
struct ShapeEntry {
  int64_t value = 0;
  int64_t symbol = -1;
  mlir::Value source;
  int64_t dim = 0;
  int64_t scale = 1;
  bool isSymbolic() const { return symbol >= 0; }
  /// A symbol times a static size above 1.
  bool isScaled() const { return isSymbolic() && scale != 1; }
  /// Whether two symbolic entries are the same size.
  bool sameSize(const ShapeEntry &other) const {
    return isSymbolic() && symbol == other.symbol && scale == other.scale;
  }
};

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
  /// Imports a subgraph (an If branch, a Loop or Scan body) in place, its
  /// inputs bound to `inputs`, the enclosing graph's values visible by name;
  /// returns its outputs. Set by the driver.
  std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(
      const onnx::GraphProto &graph, mlir::ValueRange inputs)>
      importSubgraph;
  /// How deep the subgraph being imported is nested, and how many subgraph
  /// nodes (counting each unrolled iteration) have been imported: both are
  /// bounded (kMaxSubgraphDepth, kMaxSubgraphNodes), so that a hostile or
  /// runaway model gets an error, not an exhausted stack or memory.
  int subgraphDepth = 0;
  int64_t subgraphNodes = 0;
  /// The f32 value q - zero_point (exact) of each integer tensor q that a
  /// QuantizeLinear made per tensor, with that zero point: a
  /// DequantizeLinear of q with the same zero point, and the next quantised
  /// product, use it rather than converting q back.
  llvm::DenseMap<mlir::Value, std::pair<mlir::Value, mlir::Value>>
      quantizedShifts;
  /// What DequantizeLinear nodes made, and the exact products of it.
  llvm::DenseMap<mlir::Value, DequantizedValue> dequantized;
  llvm::DenseMap<mlir::Value, Accumulation> accumulations;
  /// The values whose size the data decides (DataDependentSize), one entry
  /// per such dimension, in increasing order.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<DataDependentSize, 1>>
      dataDependent;
  /// What the model declares of each value's shape (graph outputs and
  /// value_info), by ONNX name: per dimension its size, or -1 and its
  /// dim_param (which may be empty). The bounds of sizes read at run time
  /// (runTimeSizeBound) come from here where --dynamic-dims gives none.
  llvm::StringMap<llvm::SmallVector<std::pair<int64_t, std::string>>>
      declaredDims;
  /// --dynamic-dims bounds that name no input's dimension: bounds of sizes
  /// that the run decides from a shape input, by the symbol's name
  /// (`<output>_<dimension>` or the output's dim_param); and the names a
  /// node took.
  std::map<std::string, std::pair<int64_t, int64_t>> runTimeSizeBounds;
  llvm::StringSet<> runTimeSizeBoundsUsed;
  /// The integer tensors (of rank 0 or 1) that hold sizes of symbolic
  /// dimensions, entry by entry: a Shape of a tensor with `?` sizes and the
  /// arithmetic on it (ImportShapeValues.cpp).
  llvm::DenseMap<mlir::Value, llvm::SmallVector<ShapeEntry>> shapeValues;
};

/// After `node` is imported on inputs of which some (`inputs`, one list
/// per node input, empty for the others) have sizes that the run decides:
/// records its outputs' (ImportSelection.cpp). The ops compute on the whole
/// padded tensors; an operator that would mix the padding into the entries that
/// count (a sum along the size, a Gather along it, a Shape of it) is refused by
/// name.
llvm::LogicalResult passDataDependentSizes(
    NodeImporter &node,
    llvm::ArrayRef<llvm::SmallVector<DataDependentSize, 1>> inputs);

/// Sizes of symbolic dimensions at import (ImportShapeValues.cpp).
/// Where `node` computes on them (Gather, Concat, Unsqueeze, Slice, Cast,
/// Add...), what its result holds, entry by entry; nullopt where it does
/// not or no rule follows it. The driver records it after the import, and
/// binds the output to a constant where no entry is left symbolic.
std::optional<llvm::SmallVector<ShapeEntry>>
evaluateShapeArithmetic(NodeImporter &node);
/// Records `entries` for `node`'s output after its import (a constant
/// replaces the output where none is symbolic).
void recordShapeValue(NodeImporter &node, llvm::ArrayRef<ShapeEntry> entries);
/// Input `i` of `node` entry by entry: a constant's values or what
/// GraphImportState::shapeValues knows; nullopt otherwise.
std::optional<llvm::SmallVector<ShapeEntry>> getShapeEntries(NodeImporter &node,
                                                             unsigned i);
/// Each dimension of `value` as a ShapeEntry (its `source` and `dim`): its
/// static size, or the symbol (of kiln.dim_symbols) and factor traced
/// through the ops imported so far; nullopt (after an error naming `what`)
/// where a `?` size has no symbol that Kiln can tell.
std::optional<llvm::SmallVector<ShapeEntry>>
traceSymbols(NodeImporter &node, mlir::Value value, llvm::StringRef what);
/// The largest value symbol `symbol` may take (its --dynamic-dims bound).
int64_t symbolBound(NodeImporter &node, int64_t symbol);
/// The name of symbol `symbol`.
std::string symbolName(NodeImporter &node, int64_t symbol);

/// Sequences at import (ImportSequence.cpp): a list of tensor values,
/// carried between nodes as one value of tuple type.
mlir::Value createSequence(mlir::OpBuilder &builder, mlir::Location loc,
                           mlir::ValueRange elements, mlir::Type elementType);
bool isSequence(mlir::Value value);
llvm::SmallVector<mlir::Value> getSequenceElements(mlir::Value sequence);
mlir::Type getSequenceElementType(mlir::Value sequence);

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

/// A graph.conv of `input` and `weight` (and `bias`, may be null) with the
/// node's Conv attributes (kernel_shape, strides, dilations, group, pads,
/// auto_pad), checked: Conv, ConvInteger and QLinearConv share it.
mlir::FailureOr<mlir::Value> createConvFromAttributes(NodeImporter &node,
                                                      mlir::Value input,
                                                      mlir::Value weight,
                                                      mlir::Value bias);

/// A graph.average_pool of `input` with the node's AveragePool attributes
/// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode,
/// count_include_pad); null after an error.
mlir::Value createAveragePoolFromAttributes(NodeImporter &node,
                                            mlir::Value input);

/// A Conv (of the node's attributes), MatMul or Gemm (alpha and beta 1,
/// transA 0) of operands that DequantizeLinear made, an activation per
/// tensor and a constant weight per tensor or per output channel (and an
/// int32 bias of scale input scale x weight scale), computed as the integer
/// products then scaled: recorded as an Accumulation. Null where the
/// operands are not such (the float path applies).
mlir::Value createQuantizedConv(NodeImporter &node, mlir::Value input,
                                mlir::Value weight, mlir::Value bias);
mlir::Value createQuantizedMatMul(NodeImporter &node, mlir::Value lhs,
                                  mlir::Value rhs, mlir::Value bias,
                                  bool transposeRhs);

/// Runs `fn` and returns the messages of the diagnostics it emitted, which
/// are kept from the context's handlers.
llvm::SmallVector<std::pair<mlir::Location, std::string>>
collectDiagnostics(mlir::MLIRContext *context, llvm::function_ref<void()> fn);

} // namespace kiln

#endif // KILN_LIB_IMPORT_IMPORTSTATE_H
