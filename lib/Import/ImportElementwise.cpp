//===- ImportElementwise.cpp - Elementwise operators ----------------------===//
//
// ONNX's elementwise operators. Variadic ones (Max, Min, Sum, Mean) become
// chains of binary graph ops; Clip becomes max then min; BitShift one of two
// shift ops. Every attribute is made explicit with ONNX's default. Ops are
// built through `createFolded`, so that shape arithmetic on constants
// (Shape -> Cast -> Mul -> Where...) imports as the constants that a later
// Expand, Reshape or ConstantOfShape needs.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/TypeUtilities.h"

#include <limits>

using namespace mlir;
using namespace kiln;

/// A rank-0 graph.constant of `element` holding `value`.
static Value createScalar(NodeImporter &node, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute scalar;
  if (auto floatType = dyn_cast<FloatType>(element))
    scalar = FloatAttr::get(floatType, value);
  else
    scalar = IntegerAttr::get(element, static_cast<int64_t>(value));
  return node.create<graph::ConstantOp>(
      cast<TypedAttr>(DenseElementsAttr::get(type, scalar)));
}

/// Binary ops that broadcast as numpy does (from opset 7 for the arithmetic
/// ones; before, they took `broadcast` and `axis` attributes instead).
template <typename OpTy> static LogicalResult importBinary(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  return node.setResults(node.createFolded<OpTy>(lhs, rhs));
}

static LogicalResult importWhere(NodeImporter &node) {
  Value condition = node.getInput(0), lhs = node.getInput(1),
        rhs = node.getInput(2);
  if (!condition || !lhs || !rhs)
    return node.emitError() << "needs three inputs";
  // Checked before the op is made: its folder reads the condition's
  // constant as booleans (a float condition read as one overflowed a heap
  // buffer, found by kiln-fuzz-model-proto).
  auto conditionType = dyn_cast<ShapedType>(condition.getType());
  if (!conditionType || !conditionType.getElementType().isInteger(1))
    return node.emitError()
           << "takes a bool condition, not " << condition.getType();
  return node.setResults(
      node.createFolded<graph::WhereOp>(condition, lhs, rhs));
}

template <typename OpTy> static LogicalResult importUnary(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  return node.setResults(node.createFolded<OpTy>(input));
}

/// Folds the node's inputs left to right with the binary `OpTy`.
template <typename OpTy> static Value foldInputs(NodeImporter &node) {
  Value result;
  for (unsigned i = 0, e = node.getNumInputs(); i < e; ++i) {
    Value input = node.getInput(i);
    if (!input)
      continue;
    result = result ? node.createFolded<OpTy>(result, input) : input;
    if (!result)
      return Value();
  }
  if (!result)
    node.emitError() << "needs at least one input";
  return result;
}

/// Max, Min and Sum: variadic, broadcasting from opset 8.
template <typename OpTy>
static LogicalResult importVariadic(NodeImporter &node) {
  return node.setResults(foldInputs<OpTy>(node));
}

static LogicalResult importMean(NodeImporter &node) {
  Value sum = foldInputs<graph::AddOp>(node);
  if (!sum)
    return failure();
  unsigned count = 0;
  for (unsigned i = 0, e = node.getNumInputs(); i < e; ++i)
    count += node.getInput(i) ? 1 : 0;
  if (count == 1)
    return node.setResults(sum);
  Value divisor = createScalar(node, getElementTypeOrSelf(sum.getType()),
                               static_cast<double>(count));
  if (!divisor)
    return failure();
  return node.setResults(node.createFolded<graph::DivOp>(sum, divisor));
}

static LogicalResult importMod(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  bool fmod = node.getInt("fmod", 0) != 0;
  return node.setResults(node.createFolded<graph::ModOp>(
      lhs, rhs, node.getBuilder().getBoolAttr(fmod)));
}

static LogicalResult importBitShift(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  std::string direction = node.getString("direction");
  if (direction == "LEFT")
    return node.setResults(node.createFolded<graph::ShiftLeftOp>(lhs, rhs));
  if (direction == "RIGHT")
    return node.setResults(node.createFolded<graph::ShiftRightOp>(lhs, rhs));
  return node.emitError() << "direction '" << direction
                          << "' is neither LEFT nor RIGHT";
}

/// A unary op with float attributes given as (name, default) pairs.
template <typename OpTy, typename... Defaults>
static LogicalResult importWithFloats(NodeImporter &node,
                                      Defaults... defaults) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  Builder &b = node.getBuilder();
  return node.setResults(node.createFolded<OpTy>(
      input,
      b.getF32FloatAttr(node.getFloat(defaults.first, defaults.second))...));
}

using FloatDefault = std::pair<const char *, float>;

static LogicalResult importLeakyRelu(NodeImporter &node) {
  return importWithFloats<graph::LeakyReluOp>(node,
                                              FloatDefault{"alpha", 0.01f});
}
static LogicalResult importElu(NodeImporter &node) {
  return importWithFloats<graph::EluOp>(node, FloatDefault{"alpha", 1.0f});
}
static LogicalResult importCelu(NodeImporter &node) {
  return importWithFloats<graph::CeluOp>(node, FloatDefault{"alpha", 1.0f});
}
static LogicalResult importSelu(NodeImporter &node) {
  return importWithFloats<graph::SeluOp>(
      node, FloatDefault{"alpha", 1.67326319217681884765625f},
      FloatDefault{"gamma", 1.05070102214813232421875f});
}
static LogicalResult importThresholdedRelu(NodeImporter &node) {
  return importWithFloats<graph::ThresholdedReluOp>(
      node, FloatDefault{"alpha", 1.0f});
}
static LogicalResult importHardSigmoid(NodeImporter &node) {
  return importWithFloats<graph::HardSigmoidOp>(
      node, FloatDefault{"alpha", 0.2f}, FloatDefault{"beta", 0.5f});
}

static LogicalResult importGelu(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  std::string approximate = node.getString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return node.emitError()
           << "approximate '" << approximate << "' is neither none nor tanh";
  return node.setResults(node.createFolded<graph::GeluOp>(
      input, node.getBuilder().getBoolAttr(approximate == "tanh")));
}

static LogicalResult importIsInf(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  Builder &b = node.getBuilder();
  return node.setResults(node.createFolded<graph::IsInfOp>(
      input, b.getBoolAttr(node.getInt("detect_positive", 1) != 0),
      b.getBoolAttr(node.getInt("detect_negative", 1) != 0)));
}

/// Clip as max(x, min) then min(., max): a bound above the other gives the
/// upper bound everywhere, as in ONNX's reference.
static LogicalResult clip(NodeImporter &node, Value input, Value lower,
                          Value upper) {
  Value result = input;
  if (lower)
    result = node.createFolded<graph::MaxOp>(result, lower);
  if (result && upper)
    result = node.createFolded<graph::MinOp>(result, upper);
  return node.setResults(result);
}

/// Clip before opset 11: `min` and `max` attributes (float tensors only).
static LogicalResult importClipAttributes(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  Type element = getElementTypeOrSelf(input.getType());
  Value lower, upper;
  if (node.hasAttr("min") &&
      !(lower = createScalar(node, element, node.getFloat("min"))))
    return failure();
  if (node.hasAttr("max") &&
      !(upper = createScalar(node, element, node.getFloat("max"))))
    return failure();
  return clip(node, input, lower, upper);
}

/// Clip from opset 11: optional scalar `min` and `max` inputs.
static LogicalResult importClipInputs(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  Value lower = node.getInput(1), upper = node.getInput(2);
  for (Value bound : {lower, upper}) {
    if (bound && cast<RankedTensorType>(bound.getType()).getNumElements() != 1)
      return node.emitError()
             << "min and max must be scalars, got " << bound.getType();
  }
  return clip(node, input, lower, upper);
}

/// Converts `input` to `element` (no op when it already has it), with Cast's
/// `saturate` and `round_mode` (opsets 19 and 24; only 8- and 4-bit float
/// results read them).
static LogicalResult castTo(NodeImporter &node, Value input, Type element) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getElementType() == element)
    return node.setResults(input);
  bool saturate = node.getInt("saturate", 1) != 0;
  std::string roundMode = node.getString("round_mode", "up");
  if (roundMode != "up" && roundMode != "down" && roundMode != "nearest")
    return node.emitError() << "round_mode must be 'up', 'down' or "
                               "'nearest', got '"
                            << roundMode << "'";
  return node.setResults(node.foldResults(graph::CastOp::create(
      node.getBuilder(), node.getLoc(), inputType.clone(element), input,
      saturate, roundMode)));
}

/// The element type the `to` attribute names (a TensorProto data type); an
/// error naming `what` ("casting", "bit-casting") when it is missing or
/// unsupported.
static FailureOr<Type> getTargetType(NodeImporter &node, StringRef what) {
  if (!node.hasAttr("to"))
    return node.emitError() << "needs a 'to' attribute";
  int64_t to = node.getInt("to");
  Type element = convertElementType(node.getContext(), to);
  if (!element)
    return node.emitError()
           << what << " to " << getONNXTypeName(static_cast<int32_t>(to))
           << " is not supported";
  return element;
}

/// Cast from opset 6 (`to` is a TensorProto data type).
static LogicalResult importCast(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  FailureOr<Type> element = getTargetType(node, "casting");
  if (failed(element))
    return failure();
  return castTo(node, input, *element);
}

/// BitCast (opset 26): the bits of each element as `to`, of the same width.
static LogicalResult importBitCast(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  FailureOr<Type> element = getTargetType(node, "bit-casting");
  if (failed(element))
    return failure();
  auto inputType = cast<RankedTensorType>(input.getType());
  Type from = inputType.getElementType();
  if (graph::BitCastOp::getStorageBits(from) !=
      graph::BitCastOp::getStorageBits(*element))
    return node.emitError()
           << "cannot bit-cast " << from << " to "
           << getONNXTypeName(static_cast<int32_t>(node.getInt("to")))
           << ": they differ in width";
  if (from == *element)
    return node.setResults(input);
  return node.setResults(graph::BitCastOp::create(
      node.getBuilder(), node.getLoc(), inputType.clone(*element), input));
}

static LogicalResult importCastLike(NodeImporter &node) {
  Value input = node.getInput(0), like = node.getInput(1);
  if (!input || !like)
    return node.emitError() << "needs two inputs";
  return castTo(node, input, getElementTypeOrSelf(like.getType()));
}

void kiln::registerElementwiseImporters(NodeImporterRegistry &registry) {
  // Unary ops whose opset-1 versions only add the legacy `consumed_inputs`
  // attribute are registered from 1.
  registry.add("Abs", /*minOpset=*/1, importUnary<graph::AbsOp>);
  registry.add("Acos", /*minOpset=*/7, importUnary<graph::AcosOp>);
  registry.add("Acosh", /*minOpset=*/9, importUnary<graph::AcoshOp>);
  registry.add("Add", /*minOpset=*/7, importBinary<graph::AddOp>);
  registry.add("And", /*minOpset=*/7, importBinary<graph::AndOp>);
  registry.add("Asin", /*minOpset=*/7, importUnary<graph::AsinOp>);
  registry.add("Asinh", /*minOpset=*/9, importUnary<graph::AsinhOp>);
  registry.add("Atan", /*minOpset=*/7, importUnary<graph::AtanOp>);
  registry.add("Atanh", /*minOpset=*/9, importUnary<graph::AtanhOp>);
  registry.add("BitCast", /*minOpset=*/26, importBitCast);
  registry.add("BitShift", /*minOpset=*/11, importBitShift);
  registry.add("BitwiseAnd", /*minOpset=*/18,
               importBinary<graph::BitwiseAndOp>);
  registry.add("BitwiseNot", /*minOpset=*/18, importUnary<graph::BitwiseNotOp>);
  registry.add("BitwiseOr", /*minOpset=*/18, importBinary<graph::BitwiseOrOp>);
  registry.add("BitwiseXor", /*minOpset=*/18,
               importBinary<graph::BitwiseXorOp>);
  registry.add("Cast", /*minOpset=*/6, importCast);
  registry.add("CastLike", /*minOpset=*/15, importCastLike);
  registry.add("Ceil", /*minOpset=*/1, importUnary<graph::CeilOp>);
  registry.add("Celu", /*minOpset=*/12, importCelu);
  registry.add("Clip", /*minOpset=*/1, importClipAttributes, /*maxOpset=*/10);
  registry.add("Clip", /*minOpset=*/11, importClipInputs);
  registry.add("Cos", /*minOpset=*/7, importUnary<graph::CosOp>);
  registry.add("Cosh", /*minOpset=*/9, importUnary<graph::CoshOp>);
  registry.add("Div", /*minOpset=*/7, importBinary<graph::DivOp>);
  registry.add("Elu", /*minOpset=*/1, importElu);
  registry.add("Equal", /*minOpset=*/7, importBinary<graph::EqualOp>);
  registry.add("Erf", /*minOpset=*/9, importUnary<graph::ErfOp>);
  registry.add("Exp", /*minOpset=*/1, importUnary<graph::ExpOp>);
  registry.add("Floor", /*minOpset=*/1, importUnary<graph::FloorOp>);
  registry.add("Gelu", /*minOpset=*/20, importGelu);
  registry.add("Greater", /*minOpset=*/7, importBinary<graph::GreaterOp>);
  registry.add("GreaterOrEqual", /*minOpset=*/12,
               importBinary<graph::GreaterEqualOp>);
  registry.add("HardSigmoid", /*minOpset=*/1, importHardSigmoid);
  registry.add("HardSwish", /*minOpset=*/14, importUnary<graph::HardSwishOp>);
  registry.add("IsInf", /*minOpset=*/10, importIsInf);
  registry.add("IsNaN", /*minOpset=*/9, importUnary<graph::IsNaNOp>);
  registry.add("LeakyRelu", /*minOpset=*/1, importLeakyRelu);
  registry.add("Less", /*minOpset=*/7, importBinary<graph::LessOp>);
  registry.add("LessOrEqual", /*minOpset=*/12,
               importBinary<graph::LessEqualOp>);
  registry.add("Log", /*minOpset=*/1, importUnary<graph::LogOp>);
  registry.add("Max", /*minOpset=*/6, importVariadic<graph::MaxOp>);
  registry.add("Mean", /*minOpset=*/6, importMean);
  registry.add("Min", /*minOpset=*/6, importVariadic<graph::MinOp>);
  registry.add("Mish", /*minOpset=*/18, importUnary<graph::MishOp>);
  registry.add("Mod", /*minOpset=*/10, importMod);
  registry.add("Mul", /*minOpset=*/7, importBinary<graph::MulOp>);
  registry.add("Neg", /*minOpset=*/1, importUnary<graph::NegOp>);
  registry.add("Not", /*minOpset=*/1, importUnary<graph::NotOp>);
  registry.add("Or", /*minOpset=*/7, importBinary<graph::OrOp>);
  registry.add("Pow", /*minOpset=*/7, importBinary<graph::PowOp>);
  registry.add("PRelu", /*minOpset=*/7, importBinary<graph::PReluOp>);
  registry.add("Reciprocal", /*minOpset=*/1, importUnary<graph::ReciprocalOp>);
  registry.add("Relu", /*minOpset=*/1, importUnary<graph::ReluOp>);
  registry.add("Round", /*minOpset=*/11, importUnary<graph::RoundOp>);
  registry.add("Selu", /*minOpset=*/1, importSelu);
  registry.add("Sigmoid", /*minOpset=*/1, importUnary<graph::SigmoidOp>);
  registry.add("Sign", /*minOpset=*/9, importUnary<graph::SignOp>);
  registry.add("Sin", /*minOpset=*/7, importUnary<graph::SinOp>);
  registry.add("Sinh", /*minOpset=*/9, importUnary<graph::SinhOp>);
  registry.add("Softplus", /*minOpset=*/1, importUnary<graph::SoftplusOp>);
  registry.add("Softsign", /*minOpset=*/1, importUnary<graph::SoftsignOp>);
  registry.add("Sqrt", /*minOpset=*/1, importUnary<graph::SqrtOp>);
  registry.add("Sub", /*minOpset=*/7, importBinary<graph::SubOp>);
  registry.add("Sum", /*minOpset=*/6, importVariadic<graph::AddOp>);
  registry.add("Tan", /*minOpset=*/7, importUnary<graph::TanOp>);
  registry.add("Tanh", /*minOpset=*/1, importUnary<graph::TanhOp>);
  registry.add("ThresholdedRelu", /*minOpset=*/10, importThresholdedRelu);
  registry.add("Where", /*minOpset=*/9, importWhere);
  registry.add("Xor", /*minOpset=*/7, importBinary<graph::XorOp>);
}
