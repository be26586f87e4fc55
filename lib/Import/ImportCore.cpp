//===- ImportCore.cpp - Constants and value plumbing ----------------------===//
//
// Constant, Identity, Dropout (inference only) and the optional type of a
// tensor (Optional, OptionalGetElement, OptionalHasElement).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace kiln;

static LogicalResult importConstant(NodeImporter &node) {
  static const char *const kinds[] = {
      "value",      "value_float",  "value_floats",  "value_int",
      "value_ints", "value_string", "value_strings", "sparse_value"};
  SmallVector<llvm::StringRef> present;
  for (const char *kind : kinds)
    if (node.hasAttr(kind))
      present.push_back(kind);
  if (present.size() != 1)
    return node.emitError()
           << "needs exactly one value attribute, got " << present.size();
  llvm::StringRef kind = present.front();
  Builder &b = node.getBuilder();
  ElementsAttr value;
  if (kind == "value") {
    value = node.getTensor(kind);
  } else if (kind == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   node.getFloat(kind));
  } else if (kind == "value_floats") {
    SmallVector<float> values = node.getFloats(kind);
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(values.size())},
                              b.getF32Type()),
        ArrayRef<float>(values));
  } else if (kind == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   node.getInt(kind));
  } else if (kind == "value_ints") {
    SmallVector<int64_t> values = node.getInts(kind);
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(values.size())},
                              b.getI64Type()),
        ArrayRef<int64_t>(values));
  } else {
    return node.emitError() << "attribute '" << kind
                            << "' is not supported (string and sparse "
                               "constants)";
  }
  if (!value || node.hasFailed())
    return failure();
  return node.setResults(
      node.create<graph::ConstantOp>(cast<TypedAttr>(value)));
}

static LogicalResult importIdentity(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  return node.setResults(input);
}

/// Dropout is the identity at inference, and its mask is all true. So it is
/// in training mode with a constant ratio of 0 (torchvision's Swin
/// exports its attention dropout so). A model that drops at random
/// (training_mode not a constant false, and a ratio that may not be 0) is
/// refused.
static LogicalResult importDropout(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (node.getInput(2)) {
    auto trainingMode =
        dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(2));
    auto ratio =
        node.getInput(1)
            ? dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(1))
            : DenseElementsAttr();
    bool inference = trainingMode && trainingMode.isSplat() &&
                     trainingMode.getElementType().isInteger(1) &&
                     !trainingMode.getSplatValue<bool>();
    bool dropsNothing = ratio && ratio.isSplat() &&
                        isa<FloatType>(ratio.getElementType()) &&
                        ratio.getSplatValue<APFloat>().isZero();
    if (!inference && !dropsNothing)
      return node.emitError()
             << "training_mode must be a constant false (or the ratio a "
                "constant 0); Kiln imports Dropout for inference only";
  }
  if (!node.isOutputUsed(1))
    return node.setResults(input);
  auto inputType = cast<RankedTensorType>(input.getType());
  if (!inputType.hasStaticShape())
    return node.emitError() << "the mask output needs a static input shape";
  auto maskType = inputType.clone(node.getBuilder().getI1Type());
  Value mask = node.create<graph::ConstantOp>(
      cast<TypedAttr>(DenseElementsAttr::get(maskType, true)));
  return node.setResults({input, mask});
}

/// The optional type of a tensor: Kiln represents a present optional tensor
/// by the tensor itself, so Optional of a tensor and OptionalGetElement are
/// the identity, and OptionalHasElement is a constant (false without an
/// input). An empty Optional (no input) has no tensor to stand for it.
static LogicalResult importOptional(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "an empty optional is not supported (Kiln "
                               "represents an optional tensor by the tensor)";
  return node.setResults(input);
}

static LogicalResult importOptionalHasElement(NodeImporter &node) {
  auto type = RankedTensorType::get({}, node.getBuilder().getI1Type());
  return node.setResults(node.create<graph::ConstantOp>(cast<TypedAttr>(
      DenseElementsAttr::get(type, static_cast<bool>(node.getInput(0))))));
}

void kiln::registerCoreImporters(NodeImporterRegistry &registry) {
  registry.add("Constant", /*minOpset=*/1, importConstant);
  registry.add("Dropout", /*minOpset=*/1, importDropout);
  registry.add("Identity", /*minOpset=*/1, importIdentity);
  registry.add("Optional", /*minOpset=*/15, importOptional);
  registry.add("OptionalGetElement", /*minOpset=*/15, importOptional);
  registry.add("OptionalHasElement", /*minOpset=*/15, importOptionalHasElement);
}
