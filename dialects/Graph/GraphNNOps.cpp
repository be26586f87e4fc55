//===- GraphNNOps.cpp - Convolution, matmul and friends -------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

/// Checks what the result type depends on; shared by the verifier and type
/// inference so that both name the same problem.
static LogicalResult
checkConvOperands(std::optional<Location> loc, RankedTensorType input,
                  RankedTensorType weight, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                  int64_t group) {
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc,
                             "input must have rank >= 3 (N, C and at "
                             "least one spatial dimension), got ",
                             input);
  if (weight.getRank() != rank)
    return emitOptionalError(loc, "weight rank ", weight.getRank(),
                             " differs from input rank ", rank);
  size_t spatial = rank - 2;
  if (strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return emitOptionalError(
        loc, "expected ", spatial, " strides and dilations and ", 2 * spatial,
        " pads for ", spatial, " spatial dimensions, got ", strides.size(),
        ", ", dilations.size(), " and ", pads.size());
  if (llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "strides and dilations must be positive and "
                                  "pads non-negative");
  int64_t channels = input.getDimSize(1);
  int64_t filters = weight.getDimSize(0);
  int64_t perGroup = weight.getDimSize(1);
  int64_t expected = 0;
  if (!ShapedType::isDynamic(channels) && !ShapedType::isDynamic(perGroup) &&
      (__builtin_mul_overflow(perGroup, group, &expected) ||
       channels != expected))
    return emitOptionalError(loc, "input has ", channels,
                             " channels but weight expects ", perGroup,
                             " per group x ", group, " groups");
  if (!ShapedType::isDynamic(filters) && filters % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " does not divide the number of filters ",
                             filters);
  return success();
}

/// The result type of a convolution; shared by Conv and FusedConv.
static LogicalResult inferConvType(std::optional<Location> loc,
                                   Value inputValue, Value weightValue,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations, int64_t group,
                                   SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(inputValue.getType());
  auto weight = cast<RankedTensorType>(weightValue.getType());
  if (failed(checkConvOperands(loc, input, weight, strides, pads, dilations,
                               group)))
    return failure();
  size_t spatial = input.getRank() - 2;
  SmallVector<int64_t> shape = {input.getDimSize(0), weight.getDimSize(0)};
  for (size_t i = 0; i < spatial; ++i)
    shape.push_back(convOutputSize(input.getDimSize(2 + i),
                                   weight.getDimSize(2 + i), strides[i],
                                   pads[i], pads[spatial + i], dilations[i]));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  return inferConvType(loc, adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), adaptor.getGroup(), inferred);
}

/// What Conv and ConvTranspose check alike: the input and weight element
/// types agree, and the optional bias holds one element per output channel
/// (`channels`, called `what` in the message).
static LogicalResult verifyWeightAndBias(Operation *op, RankedTensorType input,
                                         RankedTensorType weight, Value bias,
                                         int64_t channels, StringRef what) {
  if (input.getElementType() != weight.getElementType())
    return op->emitOpError("input element type ")
           << input.getElementType() << " differs from weight element type "
           << weight.getElementType();
  if (!bias)
    return success();
  auto biasType = cast<RankedTensorType>(bias.getType());
  if (biasType.getRank() != 1 ||
      failed(verifyCompatibleShape(biasType.getShape(), {channels})))
    return op->emitOpError("bias must have one element per ")
           << what << " (" << channels << "), got " << biasType;
  return success();
}

LogicalResult ConvOp::verify() {
  auto weight = getWeight().getType();
  return verifyWeightAndBias(*this, getInput().getType(), weight, getBias(),
                             weight.getDimSize(0), "filter");
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

/// The result type of a matrix product; shared by MatMul and FusedMatMul.
static LogicalResult inferMatMulType(std::optional<Location> loc,
                                     Value lhsValue, Value rhsValue,
                                     SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(lhsValue.getType());
  auto rhs = cast<RankedTensorType>(rhsValue.getType());
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "operands must have rank >= 1, got ", lhs,
                             " and ", rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(
        loc, "operands have different element types: ", lhs.getElementType(),
        " and ", rhs.getElementType());
  // Promote 1-D operands to matrices as numpy does.
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(
        loc, "contraction sizes differ: ", formatShape(lhs.getShape()), " x ",
        formatShape(rhs.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(a).drop_back(2),
                               ArrayRef<int64_t>(b).drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dimensions of ",
                             formatShape(lhs.getShape()), " and ",
                             formatShape(rhs.getShape()), " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  if (lhs.getRank() > 1)
    shape.push_back(a[a.size() - 2]);
  if (rhs.getRank() > 1)
    shape.push_back(b.back());
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferMatMulType(loc, adaptor.getLhs(), adaptor.getRhs(), inferred);
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

FailureOr<std::pair<SmallVector<std::string>, std::string>>
EinsumOp::parseEquation(StringRef equation) {
  auto [lhs, output] = equation.split("->");
  if (!equation.contains("->"))
    return failure();
  SmallVector<std::string> inputs;
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  for (StringRef term : terms)
    inputs.push_back(term.str());
  auto letters = [](StringRef term) {
    return llvm::all_of(term, [](char c) { return llvm::isAlpha(c); });
  };
  if (!llvm::all_of(terms, letters) || !letters(output))
    return failure();
  return std::make_pair(inputs, output.str());
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto parsed = parseEquation(adaptor.getEquation());
  if (failed(parsed))
    return emitOptionalError(loc, "malformed equation '", adaptor.getEquation(),
                             "' (expected letters, commas and '->')");
  auto &[terms, output] = *parsed;
  ValueRange operands = adaptor.getInputs();
  if (operands.empty() || terms.size() != operands.size())
    return emitOptionalError(loc, "the equation has ", terms.size(),
                             " input term(s) for ", operands.size(),
                             " operand(s)");
  // Each letter's size: one size, or 1, which broadcasts.
  llvm::DenseMap<char, int64_t> sizes;
  Type element = cast<RankedTensorType>(operands[0].getType()).getElementType();
  for (auto [term, operand] : llvm::zip(terms, operands)) {
    auto type = cast<RankedTensorType>(operand.getType());
    if (type.getElementType() != element)
      return emitOptionalError(loc, "operands of different element types");
    if (int64_t(term.size()) != type.getRank())
      return emitOptionalError(loc, "term '", term, "' for an operand of rank ",
                               type.getRank());
    for (auto [letter, dim] : llvm::zip(term, type.getShape())) {
      if (ShapedType::isDynamic(dim))
        return emitOptionalError(loc, "needs static shapes");
      auto [it, inserted] = sizes.try_emplace(letter, dim);
      if (inserted || it->second == dim || dim == 1)
        continue;
      if (it->second != 1)
        return emitOptionalError(loc, "letter '", StringRef(&letter, 1),
                                 "' has sizes ", it->second, " and ", dim);
      it->second = dim;
    }
  }
  SmallVector<int64_t> shape;
  for (char letter : output) {
    auto it = sizes.find(letter);
    if (it == sizes.end() || llvm::count(output, letter) != 1)
      return emitOptionalError(loc, "output letter '", StringRef(&letter, 1),
                               "' is not an input's, or is repeated");
    shape.push_back(it->second);
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = cast<RankedTensorType>(adaptor.getA().getType());
  auto b = cast<RankedTensorType>(adaptor.getB().getType());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "A and B must be matrices, got ", a, " and ",
                             b);
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, "A and B have different element types");
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = a.getDimSize(transA ? 1 : 0), k1 = a.getDimSize(transA ? 0 : 1);
  int64_t k2 = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "contraction sizes differ: A gives ", k1,
                             ", B gives ", k2);
  inferred.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult GemmOp::verify() {
  Value c = getC();
  if (!c)
    return success();
  auto cType = cast<RankedTensorType>(c.getType());
  auto result = getResult().getType();
  if (cType.getElementType() != result.getElementType())
    return emitOpError("C element type ")
           << cType.getElementType() << " differs from the result's "
           << result.getElementType();
  auto shape = broadcastShapes(cType.getShape(), result.getShape());
  if (cType.getRank() > 2 || !shape ||
      failed(verifyCompatibleShape(*shape, result.getShape())))
    return emitOpError("C of shape ")
           << formatShape(cType.getShape())
           << " does not broadcast to the result shape "
           << formatShape(result.getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// ConvTransposeOp
//===----------------------------------------------------------------------===//

LogicalResult
ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> pads = adaptor.getPads();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  ArrayRef<int64_t> outputPadding = adaptor.getOutputPadding();
  int64_t group = adaptor.getGroup();
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc,
                             "input must have rank >= 3 (N, C and at "
                             "least one spatial dimension), got ",
                             input);
  if (weight.getRank() != rank)
    return emitOptionalError(loc, "weight rank ", weight.getRank(),
                             " differs from input rank ", rank);
  size_t spatial = rank - 2;
  if (strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial)
    return emitOptionalError(loc, "expected ", spatial,
                             " strides, dilations and output_padding "
                             "and ",
                             2 * spatial, " pads for ", spatial,
                             " spatial dimensions");
  if (llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }) ||
      llvm::any_of(outputPadding, [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "strides and dilations must be positive, "
                                  "pads and output_padding non-negative");
  int64_t channels = input.getDimSize(1), weightChannels = weight.getDimSize(0);
  if (!ShapedType::isDynamic(channels) &&
      !ShapedType::isDynamic(weightChannels) && channels != weightChannels)
    return emitOptionalError(loc, "input has ", channels,
                             " channels but weight has ", weightChannels);
  if (!ShapedType::isDynamic(weightChannels) && weightChannels % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " does not divide the number of channels ",
                             weightChannels);
  int64_t perGroup = weight.getDimSize(1), filters = ShapedType::kDynamic;
  if (!ShapedType::isDynamic(perGroup) &&
      __builtin_mul_overflow(perGroup, group, &filters))
    return emitOptionalError(loc, "group ", group, " times ", perGroup,
                             " filters per group overflows");
  SmallVector<int64_t> shape = {input.getDimSize(0), filters};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = input.getDimSize(2 + i), k = weight.getDimSize(2 + i);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(k)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    // In 128 bits: the attributes may be any 64-bit values.
    __int128 size = __int128(strides[i]) * (in - 1) + outputPadding[i] +
                    __int128(dilations[i]) * (k - 1) + 1 - pads[i] -
                    pads[spatial + i];
    if (size <= 0)
      return emitOptionalError(loc, "pads ", formatShape(pads),
                               " leave no output in spatial dimension ", i);
    if (size > INT64_MAX)
      return emitOptionalError(loc,
                               "strides, dilations and padding make "
                               "spatial dimension ",
                               i, " larger than a tensor can hold");
    shape.push_back(int64_t(size));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::verify() {
  return verifyWeightAndBias(*this, getInput().getType(), getWeight().getType(),
                             getBias(), getResult().getType().getDimSize(1),
                             "output channel");
}

//===----------------------------------------------------------------------===//
// FusedConvOp and FusedMatMulOp
//===----------------------------------------------------------------------===//

static int64_t numActivationParams(Activation activation) {
  switch (activation) {
  case Activation::Clip:
  case Activation::HardSigmoid:
    return 2;
  case Activation::LeakyRelu:
    return 1;
  default:
    return 0;
  }
}

int64_t FusedConvOp::getNumActivationParams(Activation activation) {
  return numActivationParams(activation);
}

int64_t FusedMatMulOp::getNumActivationParams(Activation activation) {
  return numActivationParams(activation);
}

/// What both fused ops check: the epilogue's operands and parameters.
static LogicalResult verifyEpilogue(Operation *op, Value result, Value residual,
                                    Activation activation,
                                    ArrayRef<float> params) {
  int64_t expected = numActivationParams(activation);
  if (static_cast<int64_t>(params.size()) != expected)
    return op->emitOpError("activation ")
           << stringifyActivation(activation) << " takes " << expected
           << " activation_params, got " << params.size();
  if (activation == Activation::Clip && params[0] > params[1])
    return op->emitOpError("clip bounds are reversed: min ")
           << params[0] << " > max " << params[1];
  if (residual && residual.getType() != result.getType())
    return op->emitOpError("residual type ")
           << residual.getType() << " differs from result type "
           << result.getType();
  return success();
}

LogicalResult FusedConvOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferConvType(loc, adaptor.getInput(), adaptor.getWeight(),
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), adaptor.getGroup(), inferred);
}

LogicalResult FusedConvOp::verify() {
  auto weight = getWeight().getType();
  if (failed(verifyWeightAndBias(*this, getInput().getType(), weight, getBias(),
                                 weight.getDimSize(0), "filter")))
    return failure();
  return verifyEpilogue(*this, getResult(), getResidual(), getActivation(),
                        getActivationParams());
}

LogicalResult FusedMatMulOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferMatMulType(loc, adaptor.getLhs(), adaptor.getRhs(), inferred);
}

LogicalResult FusedMatMulOp::verify() {
  RankedTensorType resultType = getResult().getType();
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    int64_t columns = resultType.getRank() == 0
                          ? 1
                          : resultType.getDimSize(resultType.getRank() - 1);
    if (biasType.getRank() != 1 ||
        failed(verifyCompatibleShape(biasType.getShape(), {columns})) ||
        biasType.getElementType() != resultType.getElementType())
      return emitOpError("bias must have one element per column (")
             << columns << ") of the result's element type, got " << biasType;
  }
  return verifyEpilogue(*this, getResult(), getResidual(), getActivation(),
                        getActivationParams());
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Result type of a pooling op over the spatial dimensions of `input`.
static LogicalResult inferPoolType(std::optional<Location> loc,
                                   Value inputValue, ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations, bool ceilMode,
                                   SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(inputValue.getType());
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc,
                             "input must have rank >= 3 (N, C and at "
                             "least one spatial dimension), got ",
                             input);
  size_t spatial = rank - 2;
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial || pads.size() != 2 * spatial)
    return emitOptionalError(
        loc, "expected ", spatial, " kernel sizes, strides and dilations and ",
        2 * spatial, " pads for ", spatial, " spatial dimensions, got ",
        kernel.size(), ", ", strides.size(), ", ", dilations.size(), " and ",
        pads.size());
  if (llvm::any_of(kernel, [](int64_t k) { return k <= 0; }) ||
      llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "kernel_shape, strides and dilations must "
                                  "be positive and pads non-negative");
  for (size_t i = 0; i < spatial; ++i)
    if (pads[i] >= kernel[i] || pads[spatial + i] >= kernel[i])
      return emitOptionalError(loc, "pads ", formatShape(pads),
                               " must be smaller than the kernel ",
                               formatShape(kernel));
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  for (size_t i = 0; i < spatial; ++i)
    shape.push_back(convOutputSize(input.getDimSize(2 + i), kernel[i],
                                   strides[i], pads[i], pads[spatial + i],
                                   dilations[i], ceilMode));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPoolType(loc, adaptor.getInput(), adaptor.getKernelShape(),
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), adaptor.getCeilMode(), inferred);
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferPoolType(loc, adaptor.getInput(), adaptor.getKernelShape(),
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), adaptor.getCeilMode(), inferred);
}

static LogicalResult inferGlobalPoolType(std::optional<Location> loc,
                                         Value inputValue,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(inputValue.getType());
  if (input.getRank() < 3)
    return emitOptionalError(loc,
                             "input must have rank >= 3 (N, C and at "
                             "least one spatial dimension), got ",
                             input);
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  shape.append(input.getRank() - 2, 1);
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult GlobalAveragePoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferGlobalPoolType(loc, adaptor.getInput(), inferred);
}

LogicalResult
GlobalMaxPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  return inferGlobalPoolType(loc, adaptor.getInput(), inferred);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Checks that each of `params` is a vector of one element per channel of
/// `input` (dimension 1) with the input's element type.
static LogicalResult checkPerChannel(std::optional<Location> loc, Value input,
                                     ValueRange params,
                                     ArrayRef<StringRef> names) {
  auto inputType = cast<RankedTensorType>(input.getType());
  if (inputType.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2 (N, C, ...), got ",
                             inputType);
  int64_t channels = inputType.getDimSize(1);
  for (auto [param, name] : llvm::zip_equal(params, names)) {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getElementType() != inputType.getElementType())
      return emitOptionalError(
          loc, name, " element type ", type.getElementType(),
          " differs from the input's ", inputType.getElementType());
    if (type.getRank() != 1 ||
        failed(verifyCompatibleShape(type.getShape(), {channels})))
      return emitOptionalError(loc, name,
                               " must have one element per channel (", channels,
                               "), got ", type);
  }
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  if (failed(checkPerChannel(loc, adaptor.getInput(),
                             {adaptor.getScale(), adaptor.getBias(),
                              adaptor.getMean(), adaptor.getVar()},
                             {"scale", "bias", "mean", "var"})))
    return failure();
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult
InstanceNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 3)
    return emitOptionalError(loc,
                             "input must have rank >= 3 (N, C and at "
                             "least one spatial dimension), got ",
                             input);
  if (failed(checkPerChannel(loc, adaptor.getInput(),
                             {adaptor.getScale(), adaptor.getBias()},
                             {"scale", "bias"})))
    return failure();
  inferred.push_back(input);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (axis >= input.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  SmallVector<Value> params = {adaptor.getScale()};
  if (adaptor.getBias())
    params.push_back(adaptor.getBias());
  for (Value param : params) {
    auto type = cast<RankedTensorType>(param.getType());
    if (type.getElementType() != input.getElementType())
      return emitOptionalError(
          loc, "scale and bias element type ", type.getElementType(),
          " differs from the input's ", input.getElementType());
    auto shape = broadcastShapes(type.getShape(), normalized);
    if (type.getRank() > static_cast<int64_t>(normalized.size()) || !shape ||
        failed(verifyCompatibleShape(*shape, normalized)))
      return emitOptionalError(loc, "scale or bias of shape ",
                               formatShape(type.getShape()),
                               " does not broadcast to the normalized shape ",
                               formatShape(normalized));
  }
  inferred.push_back(input);
  return success();
}

LogicalResult LRNOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2 (N, C, ...), got ",
                             input);
  inferred.push_back(input);
  return success();
}

//===----------------------------------------------------------------------===//
// RecurrenceOp
//===----------------------------------------------------------------------===//

ArrayRef<llvm::StringLiteral> RecurrenceOp::getActivationNames() {
  static constexpr llvm::StringLiteral names[] = {
      "sigmoid",         "tanh",   "relu",      "leakyrelu",
      "thresholdedrelu", "elu",    "softsign",  "softplus",
      "hardsigmoid",     "affine", "scaledtanh"};
  return names;
}

LogicalResult RecurrenceOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto projected = cast<RankedTensorType>(adaptor.getProjected().getType());
  auto initial = cast<RankedTensorType>(adaptor.getInitialH().getType());
  if (projected.getRank() != 3 || initial.getRank() != 2)
    return emitOptionalError(loc, "projected must be [seq, batch, gates * "
                                  "hidden] and initial_h [batch, hidden]");
  Type element = projected.getElementType();
  int64_t seq = projected.getDimSize(0), batch = projected.getDimSize(1);
  int64_t hidden = initial.getDimSize(1);
  inferred.push_back(RankedTensorType::get({seq, batch, hidden}, element));
  inferred.push_back(RankedTensorType::get({batch, hidden}, element));
  if (adaptor.getCell() == RecurrentCell::LSTM)
    inferred.push_back(RankedTensorType::get({batch, hidden}, element));
  return success();
}

LogicalResult RecurrenceOp::verify() {
  RecurrentCell cell = getCell();
  auto projected = getProjected().getType();
  int64_t seq = projected.getDimSize(0), batch = projected.getDimSize(1);
  int64_t hidden = getInitialH().getType().getDimSize(1);
  int64_t gates = getNumGates(cell);
  auto expect = [&](Value value, StringRef name,
                    ArrayRef<int64_t> shape) -> LogicalResult {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() == shape)
      return success();
    return emitOpError() << name << " must be " << formatShape(shape)
                         << ", not " << formatShape(type.getShape());
  };
  if (failed(
          expect(getProjected(), "projected", {seq, batch, gates * hidden})) ||
      failed(expect(getRecurrent(), "recurrent", {hidden, gates * hidden})) ||
      failed(expect(getInitialH(), "initial_h", {batch, hidden})))
    return failure();
  if ((cell == RecurrentCell::LSTM) != static_cast<bool>(getInitialC()))
    return emitOpError() << "initial_c is given exactly for lstm";
  if (getInitialC() &&
      failed(expect(getInitialC(), "initial_c", {batch, hidden})))
    return failure();
  if (getPeepholes() &&
      (cell != RecurrentCell::LSTM ||
       failed(expect(getPeepholes(), "peepholes", {3 * hidden}))))
    return emitOpError() << "peepholes are lstm's, [3 * hidden]";
  if (getStateBias() &&
      (cell != RecurrentCell::GRU || !getLinearBeforeReset() ||
       failed(expect(getStateBias(), "state_bias", {hidden}))))
    return emitOpError()
           << "state_bias is gru's with linear_before_reset, [hidden]";
  if (getLengths() && failed(expect(getLengths(), "lengths", {batch})))
    return failure();
  int64_t count = getNumActivations(cell);
  if (static_cast<int64_t>(getActivations().size()) != count ||
      static_cast<int64_t>(getActivationAlpha().size()) != count ||
      static_cast<int64_t>(getActivationBeta().size()) != count)
    return emitOpError() << "has " << count
                         << " activations, each with an alpha and a beta";
  for (Attribute name : getActivations())
    if (!llvm::is_contained(getActivationNames(),
                            cast<StringAttr>(name).getValue()))
      return emitOpError() << "unknown activation " << name;
  if (getClip() && !(getClip()->convertToFloat() > 0))
    return emitOpError() << "clip must be positive";
  return success();
}
