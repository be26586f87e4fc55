//===- ImportSequence.cpp - ONNX sequences, resolved at import ------------===//
//
// Kiln compiles static shapes, so a sequence's length and its elements'
// shapes are known when the model is imported: a sequence is a list of
// tensor values, and its operators (SequenceConstruct, SequenceEmpty,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
// ConcatFromSequence, SplitToSequence, SequenceMap) pick, add and drop
// values of that list; positions must be constants (a Loop's iteration
// number is one once the loop is unrolled). Nothing of a sequence reaches
// the later passes but its tensors.
//
// The list travels between nodes, and through If, Loop and Identity, as
// the result of a `builtin.unrealized_conversion_cast` from its elements to
// a tuple of their types (an empty one records its element type in
// `kiln.element_type`); the driver erases those casts after the import
// (ONNXImporter.cpp), and flattens sequence graph inputs and outputs into
// one tensor per element, named `NAME[i]`.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

#include "onnx/onnx_pb.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

static constexpr llvm::StringLiteral kElementTypeAttr = "kiln.element_type";

Value kiln::createSequence(OpBuilder &builder, Location loc,
                           ValueRange elements, Type elementType) {
  auto type = TupleType::get(builder.getContext(), elements.getTypes());
  auto cast = UnrealizedConversionCastOp::create(builder, loc, TypeRange(type),
                                                 elements);
  cast->setAttr(kElementTypeAttr, TypeAttr::get(elementType));
  return cast.getResult(0);
}

bool kiln::isSequence(Value value) {
  return value && isa<TupleType>(value.getType());
}

SmallVector<Value> kiln::getSequenceElements(Value sequence) {
  auto cast = sequence.getDefiningOp<UnrealizedConversionCastOp>();
  assert(cast && isSequence(sequence) && "not a sequence");
  return llvm::to_vector(cast.getInputs());
}

Type kiln::getSequenceElementType(Value sequence) {
  auto cast = sequence.getDefiningOp<UnrealizedConversionCastOp>();
  assert(cast && isSequence(sequence) && "not a sequence");
  return cast->getAttrOfType<TypeAttr>(kElementTypeAttr).getValue();
}

/// The input `i` of the node, which must be a sequence; null after an error.
static Value getSequenceInput(NodeImporter &node, unsigned i) {
  Value value = node.getInput(i);
  if (!value) {
    node.emitError() << "needs a sequence as input " << i;
    return {};
  }
  if (!isSequence(value)) {
    node.emitError() << "input " << i << " must be a sequence, got "
                     << value.getType();
    return {};
  }
  return value;
}

static Value makeSequence(NodeImporter &node, ValueRange elements,
                          Type elementType) {
  return createSequence(node.getBuilder(), node.getLoc(), elements,
                        elementType);
}

/// The constant scalar position of input `i`, normalised into [0, size]
/// (`inclusiveEnd`: an insertion point) or [0, size - 1]; `fallback` when
/// the input is absent.
static FailureOr<int64_t> getPosition(NodeImporter &node, unsigned i,
                                      int64_t size, bool inclusiveEnd,
                                      int64_t fallback) {
  Value input = node.getInput(i);
  if (!input)
    return fallback;
  DenseIntElementsAttr attr;
  if (!matchPattern(input, m_Constant(&attr)) || attr.getNumElements() != 1) {
    node.emitError() << "the position must be a constant scalar for Kiln to "
                        "resolve the sequence at compile time";
    return failure();
  }
  int64_t position = (*attr.getValues<APInt>().begin()).getSExtValue();
  int64_t high = inclusiveEnd ? size : size - 1;
  if (position < -size || position > high) {
    node.emitError() << "position " << position << " is out of range [" << -size
                     << ", " << high << "] of a sequence of " << size;
    return failure();
  }
  return position < 0 ? position + size : position;
}

/// Checks that `element` may join a sequence of `elementType`.
static LogicalResult checkElement(NodeImporter &node, Value element,
                                  Type elementType) {
  if (isSequence(element))
    return node.emitError() << "Kiln's sequences hold tensors, not sequences";
  if (elementType && elementType != import::elementType(element))
    return node.emitError()
           << "a sequence of " << elementType << " cannot take a tensor of "
           << import::elementType(element);
  return success();
}

static LogicalResult importSequenceConstruct(NodeImporter &node) {
  SmallVector<Value> elements;
  for (unsigned i = 0; i < node.getNumInputs(); ++i) {
    Value v = node.getInput(i);
    if (!v)
      return node.emitError() << "input " << i << " is missing";
    if (failed(checkElement(node, v,
                            elements.empty() ? Type()
                                             : elementType(elements.front()))))
      return failure();
    elements.push_back(v);
  }
  if (elements.empty())
    return node.emitError() << "needs at least one tensor";
  return node.setResults(
      makeSequence(node, elements, elementType(elements.front())));
}

static LogicalResult importSequenceEmpty(NodeImporter &node) {
  int64_t dtype = node.getInt("dtype", onnx::TensorProto::FLOAT);
  if (node.hasFailed())
    return failure();
  Type element = convertElementType(node.getContext(), int32_t(dtype));
  if (!element)
    return node.emitError() << "dtype " << getONNXTypeName(int32_t(dtype))
                            << " is not a tensor element type Kiln supports";
  return node.setResults(makeSequence(node, {}, element));
}

static LogicalResult importSequenceInsert(NodeImporter &node) {
  Value sequence = getSequenceInput(node, 0);
  Value tensor = node.getInput(1);
  if (!sequence)
    return failure();
  if (!tensor)
    return node.emitError() << "needs the tensor to insert";
  Type element = getSequenceElementType(sequence);
  if (failed(checkElement(node, tensor, element)))
    return failure();
  SmallVector<Value> elements = getSequenceElements(sequence);
  FailureOr<int64_t> at = getPosition(node, 2, elements.size(),
                                      /*inclusiveEnd=*/true, elements.size());
  if (failed(at))
    return failure();
  elements.insert(elements.begin() + *at, tensor);
  return node.setResults(makeSequence(node, elements, element));
}

static LogicalResult importSequenceAt(NodeImporter &node) {
  Value sequence = getSequenceInput(node, 0);
  if (!sequence)
    return failure();
  SmallVector<Value> elements = getSequenceElements(sequence);
  if (!node.getInput(1))
    return node.emitError() << "needs a position";
  FailureOr<int64_t> at =
      getPosition(node, 1, elements.size(), /*inclusiveEnd=*/false, 0);
  if (failed(at))
    return failure();
  return node.setResults(elements[*at]);
}

static LogicalResult importSequenceErase(NodeImporter &node) {
  Value sequence = getSequenceInput(node, 0);
  if (!sequence)
    return failure();
  SmallVector<Value> elements = getSequenceElements(sequence);
  if (elements.empty())
    return node.emitError() << "cannot erase from an empty sequence";
  FailureOr<int64_t> at =
      getPosition(node, 1, elements.size(),
                  /*inclusiveEnd=*/false, int64_t(elements.size()) - 1);
  if (failed(at))
    return failure();
  elements.erase(elements.begin() + *at);
  return node.setResults(
      makeSequence(node, elements, getSequenceElementType(sequence)));
}

static LogicalResult importSequenceLength(NodeImporter &node) {
  Value sequence = getSequenceInput(node, 0);
  if (!sequence)
    return failure();
  return node.setResults(
      createScalar(node, node.getBuilder().getI64Type(),
                   double(getSequenceElements(sequence).size())));
}

/// ConcatFromSequence: the elements concatenated along `axis`, or stacked
/// along a new one (new_axis = 1).
static LogicalResult importConcatFromSequence(NodeImporter &node) {
  Value sequence = getSequenceInput(node, 0);
  int64_t axisAttr = node.getInt("axis", 0);
  bool newAxis = node.getInt("new_axis", 0) != 0;
  if (!sequence || node.hasFailed())
    return failure();
  SmallVector<Value> elements = getSequenceElements(sequence);
  if (elements.empty())
    return node.emitError() << "cannot concatenate an empty sequence (its "
                               "result would have no shape)";
  int64_t rank = tensorType(elements.front()).getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, axisAttr, rank + newAxis);
  if (failed(axis))
    return failure();
  if (newAxis) {
    for (Value &e : elements) {
      SmallVector<int64_t> shape(tensorType(e).getShape());
      shape.insert(shape.begin() + *axis, 1);
      e = node.create<graph::ReshapeOp>(e, shape, /*allow_zero=*/false);
      if (!e)
        return failure();
    }
  }
  if (elements.size() == 1)
    return node.setResults(elements.front());
  return node.setResults(
      node.create<graph::ConcatOp>(ValueRange(elements), uint64_t(*axis)));
}

/// SplitToSequence: pieces of `split` sizes (a list, or one size repeated
/// with a shorter last piece) along `axis`; without `split`, pieces of 1,
/// the axis dropped unless keepdims.
static LogicalResult importSplitToSequence(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = tensorType(input);
  int64_t axisAttr = node.getInt("axis", 0);
  bool keepdims = node.getInt("keepdims", 1) != 0;
  if (node.hasFailed())
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(node, axisAttr, type.getRank());
  if (failed(axis))
    return failure();
  int64_t size = type.getDimSize(*axis);
  if (ShapedType::isDynamic(size))
    return node.emitError() << "needs a static size along axis " << *axis;
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (node.getInput(1)) {
    DenseIntElementsAttr attr;
    if (!matchPattern(node.getInput(1), m_Constant(&attr)))
      return node.emitError() << "the split input must be a constant for "
                                 "Kiln to resolve the sequence at compile "
                                 "time";
    SmallVector<int64_t> values;
    for (const APInt &v : attr.getValues<APInt>())
      values.push_back(v.getSExtValue());
    if (attr.getType().getRank() == 0) {
      int64_t piece = values.front();
      if (piece <= 0)
        return node.emitError() << "split must be positive, got " << piece;
      // Counted before the list is made: a huge axis must not fill memory.
      int64_t count = size / piece + (size % piece != 0);
      if (count > kMaxUnrolledIterations)
        return node.emitError() << "splits into " << count
                                << " tensors: Kiln's sequences hold at most "
                                << kMaxUnrolledIterations;
      for (int64_t left = size; left > 0; left -= piece)
        sizes.push_back(std::min(piece, left));
    } else {
      int64_t total = 0;
      for (int64_t v : values) {
        if (v < 0 || llvm::AddOverflow(total, v, total))
          return node.emitError() << "split sizes must be non-negative";
        sizes.push_back(v);
      }
      if (total != size)
        return node.emitError()
               << "split sizes add up to " << total << ", not to the size "
               << size << " of axis " << *axis;
    }
  } else {
    if (size > kMaxUnrolledIterations)
      return node.emitError() << "splits into " << size
                              << " tensors: Kiln's sequences hold at most "
                              << kMaxUnrolledIterations;
    sizes.assign(size, 1);
    squeeze = !keepdims;
  }
  if (int64_t(sizes.size()) > kMaxUnrolledIterations)
    return node.emitError() << "splits into " << sizes.size()
                            << " tensors: Kiln's sequences hold at most "
                            << kMaxUnrolledIterations;
  // The pieces are a graph.split's results (which fold when the input is a
  // constant), the axis dropped when keepdims says so.
  SmallVector<Value> pieces;
  if (!sizes.empty()) {
    Builder &b = node.getBuilder();
    Operation *split = node.createOp<graph::SplitOp>(
        input, b.getI64IntegerAttr(*axis), b.getDenseI64ArrayAttr(sizes));
    if (!split)
      return failure();
    pieces = node.foldResults(split);
  }
  for (Value &piece : pieces) {
    if (squeeze) {
      SmallVector<int64_t> shape(tensorType(piece).getShape());
      shape.erase(shape.begin() + *axis);
      piece = node.create<graph::ReshapeOp>(piece, shape, false);
    }
    if (!piece)
      return failure();
  }
  return node.setResults(makeSequence(node, pieces, type.getElementType()));
}

/// SequenceMap: the body applied to each position of the input sequences
/// (a tensor input is passed whole each time); each body output gathers
/// into a sequence. Unrolled, as a Loop is.
static LogicalResult importSequenceMap(NodeImporter &node) {
  const onnx::GraphProto *body = node.getGraph("body");
  Value first = getSequenceInput(node, 0);
  if (!body || !first)
    return failure();
  size_t length = getSequenceElements(first).size();
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.getNumInputs(); ++i) {
    Value v = node.getInput(i);
    if (!v)
      return node.emitError() << "input " << i << " is missing";
    if (isSequence(v) && getSequenceElements(v).size() != length)
      return node.emitError() << "the sequences have lengths " << length
                              << " and " << getSequenceElements(v).size();
    inputs.push_back(v);
  }
  SmallVector<SmallVector<Value>> outputs(body->output_size());
  for (size_t k = 0; k < length; ++k) {
    SmallVector<Value> args;
    for (Value v : inputs)
      args.push_back(isSequence(v) ? getSequenceElements(v)[k] : v);
    FailureOr<SmallVector<Value>> results = node.importGraph(*body, args);
    if (failed(results))
      return failure();
    for (auto [j, r] : llvm::enumerate(*results)) {
      if (failed(checkElement(node, r,
                              outputs[j].empty() ? Type()
                                                 : elementType(outputs[j][0]))))
        return failure();
      outputs[j].push_back(r);
    }
  }
  SmallVector<Value> results;
  for (auto [j, elements] : llvm::enumerate(outputs)) {
    Type element;
    if (!elements.empty()) {
      element = elementType(elements.front());
    } else {
      // An empty map: the element type the body declares.
      const onnx::TypeProto &type = body->output(j).type();
      if (type.has_tensor_type())
        element = convertElementType(node.getContext(),
                                     type.tensor_type().elem_type());
      if (!element)
        return node.emitError() << "maps an empty sequence, and body output "
                                << j << " declares no tensor element type";
    }
    results.push_back(makeSequence(node, elements, element));
  }
  return node.setResults(results);
}

void kiln::registerSequenceImporters(NodeImporterRegistry &registry) {
  registry.add("SequenceConstruct", /*minOpset=*/11, importSequenceConstruct);
  registry.add("SequenceEmpty", /*minOpset=*/11, importSequenceEmpty);
  registry.add("SequenceInsert", /*minOpset=*/11, importSequenceInsert);
  registry.add("SequenceAt", /*minOpset=*/11, importSequenceAt);
  registry.add("SequenceErase", /*minOpset=*/11, importSequenceErase);
  registry.add("SequenceLength", /*minOpset=*/11, importSequenceLength);
  registry.add("ConcatFromSequence", /*minOpset=*/11, importConcatFromSequence);
  registry.add("SplitToSequence", /*minOpset=*/11, importSplitToSequence);
  registry.add("SequenceMap", /*minOpset=*/17, importSequenceMap);
}
