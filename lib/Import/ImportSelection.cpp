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

#include "lib/Import/ImportUtils.h"

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

static Value createI64Constant(NodeImporter &node, ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, node.getBuilder().getI64Type());
  return node.create<graph::ConstantOp>(
      cast<TypedAttr>(DenseElementsAttr::get(type, values)));
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
  auto type = tensorType(input);
  int64_t axis = 0;
  if (node.hasAttr("axis")) {
    FailureOr<int64_t> normalized =
        normalizeAxis(node, node.getInt("axis"), type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    input = node.create<graph::ReshapeOp>(
        input, SmallVector<int64_t>{type.getNumElements()},
        /*allow_zero=*/false);
    if (!input)
      return failure();
    type = tensorType(input);
  }
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
  auto type = tensorType(input);
  int64_t axis = 0;
  if (node.hasAttr("axis")) {
    FailureOr<int64_t> normalized =
        normalizeAxis(node, node.getInt("axis"), type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else if (type.getRank() != 1) {
    input = node.create<graph::ReshapeOp>(
        input, SmallVector<int64_t>{type.getNumElements()},
        /*allow_zero=*/false);
    if (!input)
      return failure();
  }
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
