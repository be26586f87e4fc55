//===- ImportSelection.cpp - Operators whose output sizes the data decides ===//
//
// NonZero, Compress, Unique and NonMaxSuppression. Their graph ops have
// results of the largest size the output can have and a count of the
// entries that are the output (GraphReductionOps.td); the importer records
// each such output (NodeImporter::setDataDependent), which may then only be
// a graph output, whose size the model ABI returns after the run. On
// constant inputs NonZero and Compress's condition are computed here, and
// the outputs have static sizes like any other.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"

#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

/// Whether each element of a constant is nonzero, or nothing when the
/// constant's elements cannot be read here (a large resource blob).
static std::optional<SmallVector<bool>> readNonZero(ElementsAttr constant) {
  auto dense = dyn_cast<DenseElementsAttr>(constant);
  if (!dense)
    return std::nullopt;
  SmallVector<bool> nonzero;
  if (isa<FloatType>(dense.getElementType())) {
    for (const APFloat &value : dense.getValues<APFloat>())
      nonzero.push_back(!value.isZero());
  } else {
    for (const APInt &value : dense.getValues<APInt>())
      nonzero.push_back(!value.isZero());
  }
  return nonzero;
}

/// NonZero: the positions of the nonzero elements, one column each.
static LogicalResult importNonZero(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  auto type = tensorType(input);
  if (ElementsAttr constant = node.getConstantInput(0))
    if (std::optional<SmallVector<bool>> nonzero = readNonZero(constant)) {
      SmallVector<SmallVector<int64_t>> rows(type.getRank());
      for (auto [i, isNonZero] : llvm::enumerate(*nonzero)) {
        if (!isNonZero)
          continue;
        int64_t rest = i;
        for (int64_t d = type.getRank() - 1; d >= 0; --d) {
          rows[d].push_back(rest % type.getDimSize(d));
          rest /= type.getDimSize(d);
        }
      }
      int64_t count = llvm::count(*nonzero, true);
      SmallVector<int64_t> flat;
      for (const auto &row : rows)
        flat.append(row);
      return node.setResults(
          createI64Constant(node, {type.getRank(), count}, flat));
    }
  Operation *op = node.createOp<graph::NonZeroOp>(input);
  if (!op)
    return failure();
  node.setDataDependent(op->getResult(0), op->getResult(1), 1);
  return node.setResults(op->getResult(0));
}

/// The node's `axis` attribute, made non-negative; without one, `input`
/// flattened and axis 0 (Compress and Unique).
static LogicalResult alongAxisOrFlat(NodeImporter &node, Value &input,
                                     int64_t &axis) {
  auto type = tensorType(input);
  if (node.hasAttr("axis")) {
    FailureOr<int64_t> normalized =
        normalizeAxis(node, node.getInt("axis"), type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
    return success();
  }
  axis = 0;
  if (type.getRank() != 1)
    input = node.create<graph::ReshapeOp>(
        input, SmallVector<int64_t>{type.getNumElements()},
        /*allow_zero=*/false);
  return success(input != nullptr);
}

/// Compress: the slices along `axis` (of the flattened input without one)
/// where the condition is true; a condition shorter than the axis drops
/// the slices past its end.
static LogicalResult importCompress(NodeImporter &node) {
  Value input = node.getInput(0), condition = node.getInput(1);
  if (!input || !condition)
    return node.emitError() << "needs an input and a condition";
  auto conditionType = tensorType(condition);
  if (conditionType.getRank() != 1 ||
      !conditionType.getElementType().isInteger(1))
    return node.emitError()
           << "the condition must be a 1-D bool tensor, not " << conditionType;
  int64_t axis = 0;
  if (failed(alongAxisOrFlat(node, input, axis)))
    return failure();
  auto type = tensorType(input);
  if (node.hasFailed())
    return failure();
  int64_t length = conditionType.getDimSize(0);
  if (length > type.getDimSize(axis))
    return node.emitError()
           << "the condition has " << length << " entries, more than the "
           << type.getDimSize(axis) << " slices along axis " << axis;
  if (ElementsAttr constant = node.getConstantInput(1))
    if (std::optional<SmallVector<bool>> taken = readNonZero(constant)) {
      SmallVector<int64_t> positions;
      for (auto [i, isTaken] : llvm::enumerate(*taken))
        if (isTaken)
          positions.push_back(i);
      Value indices = createI64Constant(
          node, {static_cast<int64_t>(positions.size())}, positions);
      return node.setResults(
          node.create<graph::GatherOp>(input, indices, axis));
    }
  // The true positions padded with zeros (slice 0 exists whenever the
  // condition has an entry), gathered, of which `count` are the output.
  Operation *nonzero = node.createOp<graph::NonZeroOp>(condition);
  if (!nonzero)
    return failure();
  Value positions = node.create<graph::ReshapeOp>(nonzero->getResult(0),
                                                  SmallVector<int64_t>{length},
                                                  /*allow_zero=*/false);
  Value result = node.create<graph::GatherOp>(input, positions, axis);
  if (!result)
    return failure();
  node.setDataDependent(result, nonzero->getResult(1), axis);
  return node.setResults(result);
}

/// Unique: the distinct slices along `axis`, or the distinct elements of
/// the flattened input without one.
static LogicalResult importUnique(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  int64_t axis = 0;
  if (failed(alongAxisOrFlat(node, input, axis)))
    return failure();
  bool sorted = node.getInt("sorted", 1) != 0;
  if (node.hasFailed())
    return failure();
  Operation *op = node.createOp<graph::UniqueOp>(
      input, static_cast<uint64_t>(axis), sorted);
  if (!op)
    return failure();
  Value count = op->getResult(4);
  node.setDataDependent(op->getResult(0), count, axis);
  node.setDataDependent(op->getResult(1), count, 0);
  node.setDataDependent(op->getResult(3), count, 0);
  return node.setResults(
      op->getResults().take_front(std::min(4u, node.getNumOutputs())));
}

/// NonMaxSuppression: max_output_boxes_per_class (absent: 0), the IoU
/// threshold (absent: 0) and the score threshold (absent: none) are
/// one-element inputs read at run time; a constant max_output_boxes_per_class
/// bounds the output's size.
static LogicalResult importNonMaxSuppression(NodeImporter &node) {
  Value boxes = node.getInput(0), scores = node.getInput(1);
  if (!boxes || !scores)
    return node.emitError() << "needs boxes and scores";
  auto boxesType = tensorType(boxes), scoresType = tensorType(scores);
  if (!boxesType.getElementType().isF32() ||
      !scoresType.getElementType().isF32())
    return node.emitError() << "boxes and scores must be float tensors, not "
                            << boxesType << " and " << scoresType;
  if (boxesType.getRank() != 3 || scoresType.getRank() != 3)
    return node.emitError() << "boxes " << boxesType << " and scores "
                            << scoresType << " must have rank 3";
  int64_t centerPointBox = node.getInt("center_point_box", 0);
  if (node.hasFailed())
    return failure();
  if (centerPointBox != 0 && centerPointBox != 1)
    return node.emitError()
           << "center_point_box must be 0 or 1, not " << centerPointBox;
  // A one-element input as a scalar, or `fallback` where it is absent.
  auto scalarInput = [&](unsigned i, Type element, double fallback,
                         StringRef what) -> FailureOr<Value> {
    Value value = node.getInput(i);
    if (!value)
      return createScalar(node, element, fallback);
    auto valueType = tensorType(value);
    if (valueType.getNumElements() != 1 ||
        valueType.getElementType() != element) {
      node.emitError() << what << " must hold one " << element << ", not "
                       << valueType;
      return failure();
    }
    if (valueType.getRank() == 0)
      return value;
    Value scalar = node.create<graph::ReshapeOp>(value, SmallVector<int64_t>{},
                                                 /*allow_zero=*/false);
    if (!scalar)
      return failure();
    return scalar;
  };
  Builder &b = node.getBuilder();
  FailureOr<Value> maxBoxes =
      scalarInput(2, b.getI64Type(), 0, "max_output_boxes_per_class");
  FailureOr<Value> iou = scalarInput(3, b.getF32Type(), 0, "iou_threshold");
  if (failed(maxBoxes) || failed(iou))
    return failure();
  Value scoreThreshold;
  if (node.getInput(4)) {
    FailureOr<Value> threshold =
        scalarInput(4, b.getF32Type(), 0, "score_threshold");
    if (failed(threshold))
      return failure();
    scoreThreshold = *threshold;
  }
  int64_t numBoxes = boxesType.getDimSize(1);
  int64_t bound = numBoxes;
  if (!node.getInput(2)) {
    bound = 0;
  } else if (auto constant = dyn_cast_or_null<DenseIntElementsAttr>(
                 node.getConstantInput(2))) {
    int64_t limit = (*constant.getValues<APInt>().begin()).getSExtValue();
    bound = std::clamp<int64_t>(limit, 0, numBoxes);
  }
  Operation *op = node.createOp<graph::NonMaxSuppressionOp>(
      boxes, scores, *maxBoxes, *iou, scoreThreshold,
      static_cast<uint64_t>(bound), centerPointBox != 0);
  if (!op)
    return failure();
  node.setDataDependent(op->getResult(0), op->getResult(1), 0);
  return node.setResults(op->getResult(0));
}

void kiln::registerSelectionImporters(NodeImporterRegistry &registry) {
  registry.add("NonZero", 9, importNonZero);
  registry.add("Compress", 9, importCompress);
  registry.add("Unique", 11, importUnique);
  registry.add("NonMaxSuppression", 10, importNonMaxSuppression);
}

//===----------------------------------------------------------------------===//
// Passing a size that the data decides through later nodes
//===----------------------------------------------------------------------===//

namespace {

/// The element-wise operators, with numpy broadcasting: each output entry
/// reads the inputs' entries at its own position, so the entries past the
/// count (the padding) stay apart from the rest. Integer Div and Mod are
/// left out: a divisor's padding holds zeros.
bool isElementwise(StringRef opType) {
  static const llvm::StringSet<> ops = {
      "Abs",         "Acos",       "Acosh",      "Add",
      "And",         "Asin",       "Asinh",      "Atan",
      "Atanh",       "BitwiseAnd", "BitwiseNot", "BitwiseOr",
      "BitwiseXor",  "Cast",       "CastLike",   "Ceil",
      "Celu",        "Clip",       "Cos",        "Cosh",
      "Elu",         "Equal",      "Erf",        "Exp",
      "Floor",       "Gelu",       "Greater",    "GreaterOrEqual",
      "HardSigmoid", "HardSwish",  "Identity",   "IsInf",
      "IsNaN",       "LeakyRelu",  "Less",       "LessOrEqual",
      "Log",         "Max",        "Mean",       "Min",
      "Mish",        "Mul",        "Neg",        "Not",
      "Or",          "Pow",        "PRelu",      "Reciprocal",
      "Relu",        "Round",      "Selu",       "Shrink",
      "Sigmoid",     "Sign",       "Sin",        "Sinh",
      "Softplus",    "Softsign",   "Sqrt",       "Sub",
      "Sum",         "Tan",        "Tanh",       "ThresholdedRelu",
      "Where",       "Xor"};
  return ops.contains(opType);
}

/// The axes of a node (a constant input from `opset`, an attribute before),
/// made non-negative for rank `rank`; nothing where they are not known.
std::optional<SmallVector<int64_t>> readAxes(NodeImporter &node, int64_t opset,
                                             unsigned input, int64_t rank) {
  SmallVector<int64_t> axes;
  if (node.getOpset() >= opset) {
    if (!node.getInput(input))
      return axes;
    auto constant =
        dyn_cast_or_null<DenseIntElementsAttr>(node.getConstantInput(input));
    if (!constant)
      return std::nullopt;
    for (const APInt &axis : constant.getValues<APInt>())
      axes.push_back(axis.getSExtValue());
  } else {
    axes = node.getInts("axes");
  }
  for (int64_t &axis : axes)
    if (axis < 0)
      axis += rank;
  return axes;
}

/// Where dimension `dim` of an input of shape `in` is in an output of shape
/// `out` that only adds or drops dimensions of size 1 (Squeeze, Unsqueeze,
/// Flatten or Reshape of that kind); -1 where it is not so.
int64_t matchNonUnitDims(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                         int64_t dim) {
  if (in[dim] < 2)
    return -1; // ambiguous among the dimensions of size 1
  SmallVector<int64_t> inDims, outDims;
  for (auto [d, size] : llvm::enumerate(in))
    if (size != 1)
      inDims.push_back(d);
  for (auto [d, size] : llvm::enumerate(out))
    if (size != 1)
      outDims.push_back(d);
  if (inDims.size() != outDims.size())
    return -1;
  for (auto [i, o] : llvm::zip(inDims, outDims))
    if (in[i] != out[o])
      return -1;
  return outDims[llvm::find(inDims, dim) - inDims.begin()];
}

} // namespace

/// An element-wise node: each size of each input, aligned from the last
/// dimension, is the output's at that dimension; every input without it
/// there must broadcast (size 1), and two sizes in one dimension must be
/// the same count.
static LogicalResult
passThroughElementwise(NodeImporter &node,
                       ArrayRef<SmallVector<DataDependentSize, 1>> inputs) {
  Value output = node.getNumOutputs() > 0 && !node.getNode().output(0).empty()
                     ? node.getState().values.lookup(node.getNode().output(0))
                     : Value();
  if (!output)
    return success();
  auto shapeOf = [&](Value value) {
    return cast<RankedTensorType>(value.getType()).getShape();
  };
  int64_t outRank = shapeOf(output).size();
  // CastLike's second input lends its type only.
  if (node.getOpType() == "CastLike")
    inputs = inputs.take_front(1);
  // Output dimension -> (size, the input it comes from).
  llvm::SmallDenseMap<int64_t, std::pair<const DataDependentSize *, unsigned>>
      sizes;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    Value value = node.getInput(i);
    if (!value)
      continue;
    int64_t offset = outRank - static_cast<int64_t>(shapeOf(value).size());
    for (const DataDependentSize &size : input) {
      auto [it, inserted] =
          sizes.try_emplace(size.dim + offset, &size, static_cast<unsigned>(i));
      if (!inserted && it->second.first->count != size.count)
        return node.emitError()
               << "inputs '" << node.getNode().input(it->second.second)
               << "' and '" << node.getNode().input(i)
               << "' have sizes that the run decides apart (outputs of "
               << it->second.first->node << " and " << size.node
               << "), which Kiln does not combine (yet)";
    }
  }
  for (auto [dim, from] : sizes) {
    for (auto [i, input] : llvm::enumerate(inputs)) {
      Value value = node.getInput(i);
      if (!value)
        continue;
      int64_t d = dim - (outRank - static_cast<int64_t>(shapeOf(value).size()));
      bool hasIt = llvm::any_of(
          input, [&](const DataDependentSize &size) { return size.dim == d; });
      if (d >= 0 && !hasIt && shapeOf(value)[d] != 1)
        return node.emitError()
               << "input '" << node.getNode().input(from.second)
               << "' is an output of " << from.first->node
               << ", whose size (dimension " << from.first->dim
               << ") only the run decides, and input '"
               << node.getNode().input(i)
               << "' has a fixed size along it (it must broadcast)";
    }
    node.setDataDependent(output, from.first->count, dim);
  }
  return success();
}

LogicalResult
kiln::passDataDependentSizes(NodeImporter &node,
                             ArrayRef<SmallVector<DataDependentSize, 1>> all) {
  if (isElementwise(node.getOpType()))
    return passThroughElementwise(node, all);
  // Other operators take one such dimension.
  SmallVector<std::optional<DataDependentSize>> inputs;
  for (auto [i, sizes] : llvm::enumerate(all)) {
    if (sizes.size() > 1)
      return node.emitError()
             << "input '" << node.getNode().input(i) << "' is an output of "
             << sizes.front().node << ", with " << sizes.size()
             << " dimensions whose sizes only the run decides, which Kiln "
                "passes through element-wise operators only";
    inputs.push_back(sizes.empty() ? std::nullopt
                                   : std::optional(sizes.front()));
  }
  const DataDependentSize *size = nullptr;
  unsigned sizeInput = 0;
  std::string inputName;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    if (!input)
      continue;
    if (size && size->count != input->count)
      return node.emitError()
             << "inputs '" << inputName << "' and '" << node.getNode().input(i)
             << "' have sizes that the run decides apart (outputs of "
             << size->node << " and " << input->node
             << "), which Kiln does not combine (yet)";
    if (!size) {
      size = &*input;
      sizeInput = i;
      inputName = node.getNode().input(i);
    }
  }
  if (!size)
    return success();
  StringRef opType = node.getOpType();
  auto shapeOf = [&](Value value) {
    return cast<RankedTensorType>(value.getType()).getShape();
  };
  auto refuse = [&](const Twine &why) {
    return node.emitError()
           << "input '" << inputName << "' is an output of " << size->node
           << ", whose size (dimension " << size->dim
           << ") only the run decides, and " << why;
  };
  // The output dimension that the size becomes; -1 refuses.
  int64_t dim = -1;
  unsigned numOutputs = 1;
  Value output = node.getNumOutputs() > 0 && !node.getNode().output(0).empty()
                     ? node.getState().values.lookup(node.getNode().output(0))
                     : Value();
  if (!output)
    return success(); // nothing reads it
  int64_t outRank = shapeOf(output).size();
  if (opType == "Transpose") {
    SmallVector<int64_t> perm = node.getInts("perm");
    if (perm.empty())
      for (int64_t d = outRank - 1; d >= 0; --d)
        perm.push_back(d);
    dim = llvm::find(perm, size->dim) - perm.begin();
  } else if (opType == "Gather") {
    int64_t rank = shapeOf(node.getInput(0)).size();
    int64_t axis = node.getInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    if (inputs[0] && inputs.size() > 1 && inputs[1])
      return refuse("so do the indices");
    if (inputs[0] && size->dim == axis)
      return refuse("Gather indexes along it");
    if (inputs[0])
      dim = size->dim < axis
                ? size->dim
                : size->dim +
                      static_cast<int64_t>(shapeOf(node.getInput(1)).size()) -
                      1;
    else
      dim = axis + size->dim;
  } else if (opType == "GatherND") {
    int64_t indexRank = shapeOf(node.getInput(1)).size();
    if (inputs[0] || node.getInt("batch_dims", 0) != 0 ||
        size->dim == indexRank - 1)
      return refuse("GatherND takes it only in its indices' leading "
                    "dimensions, without batch_dims");
    dim = size->dim;
  } else if (opType == "Squeeze" || opType == "Unsqueeze" ||
             opType == "Flatten" || opType == "Reshape") {
    dim =
        matchNonUnitDims(shapeOf(node.getInput(0)), shapeOf(output), size->dim);
    if (dim < 0)
      return refuse("this " + opType +
                    " does more than add or drop "
                    "dimensions of size 1 around it");
  } else if (opType == "Slice") {
    int64_t rank = shapeOf(node.getInput(0)).size();
    // Without axes, the first dimensions, one per start.
    std::optional<SmallVector<int64_t>> axes = readAxes(node, 10, 3, rank);
    int64_t starts = node.getInts("starts").size();
    if (node.getOpset() >= 10)
      starts = shapeOf(node.getInput(1)).size() == 1
                   ? shapeOf(node.getInput(1))[0]
                   : rank; // (the Slice's import checked the starts)
    if (axes && axes->empty())
      axes = llvm::to_vector(llvm::seq<int64_t>(0, starts));
    if (!axes || llvm::is_contained(*axes, size->dim))
      return refuse("the Slice cuts along it (or its axes are not constant)");
    dim = size->dim;
  } else if (opType == "Concat") {
    int64_t axis = node.getInt("axis", 0);
    axis = axis < 0 ? axis + outRank : axis;
    if (axis == size->dim ||
        llvm::any_of(inputs, [](const auto &input) { return !input; }))
      return refuse("Concat joins along it, or joins it to a tensor of a "
                    "fixed size");
    dim = size->dim;
  } else if (opType == "MatMul") {
    int64_t lhsRank = shapeOf(node.getInput(0)).size();
    int64_t rhsRank = shapeOf(node.getInput(1)).size();
    if (inputs[0] && !inputs[1] && lhsRank >= 2 && size->dim < lhsRank - 1)
      dim = size->dim + outRank - lhsRank;
    else if (!inputs[0] && inputs[1] && rhsRank >= 2 &&
             size->dim == rhsRank - 1)
      dim = outRank - 1;
    else
      return refuse("MatMul would sum along it");
  } else if (opType.starts_with("Reduce") || opType == "ArgMax" ||
             opType == "ArgMin" || opType == "Softmax" ||
             opType == "LogSoftmax" || opType == "TopK") {
    int64_t rank = shapeOf(node.getInput(0)).size();
    std::optional<SmallVector<int64_t>> axes;
    bool keepdims = node.getInt("keepdims", 1) != 0;
    if (opType.starts_with("Reduce")) {
      axes = readAxes(node, opType == "ReduceSum" ? 13 : 18, 1, rank);
      if (axes && axes->empty() && node.getInt("noop_with_empty_axes", 0) == 0)
        axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    } else {
      bool softmax = opType == "Softmax" || opType == "LogSoftmax";
      int64_t fallback = -1; // TopK's; Softmax's before opset 13 is 1
      if (opType == "ArgMax" || opType == "ArgMin" ||
          (softmax && node.getOpset() < 13))
        fallback = opType.starts_with("Arg") ? 0 : 1;
      int64_t axis = node.getInt("axis", fallback);
      axes = SmallVector<int64_t>{axis < 0 ? axis + rank : axis};
      if (opType == "Softmax" || opType == "LogSoftmax" || opType == "TopK")
        keepdims = true;
    }
    // Before opset 13, Softmax and LogSoftmax normalise over every
    // dimension from the axis on.
    bool coerced = (opType == "Softmax" || opType == "LogSoftmax") &&
                   node.getOpset() < 13 && axes && size->dim > (*axes)[0];
    if (!axes || coerced || llvm::is_contained(*axes, size->dim))
      return refuse(opType + " reduces along it (or its axes are not "
                             "constant)");
    dim = size->dim;
    if (!keepdims)
      dim -= llvm::count_if(*axes, [&](int64_t a) { return a < size->dim; });
    numOutputs = node.getNumOutputs();
  } else {
    return refuse("Kiln passes such a size through element-wise operators, "
                  "Transpose, Gather, GatherND, Squeeze, Unsqueeze, Flatten, "
                  "Reshape of unit dimensions, Slice, Concat, MatMul and "
                  "reductions along other dimensions only (yet)");
  }
  if (node.hasFailed())
    return failure();
  for (unsigned i = 0; i < numOutputs; ++i) {
    if (node.getNode().output(i).empty())
      continue;
    Value result = node.getState().values.lookup(node.getNode().output(i));
    if (!result)
      continue;
    ArrayRef<int64_t> shape = shapeOf(result);
    int64_t bound = shapeOf(node.getInput(sizeInput))[size->dim];
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size()) ||
        shape[dim] != bound)
      return refuse("Kiln cannot tell where it goes in the output");
    node.setDataDependent(result, size->count, dim);
  }
  return success();
}
