//===- GraphLayoutOps.cpp - Blocked layouts and their ops -----------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace kiln::graph;

LogicalResult
BlockedLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t c) {
  if (c <= 0)
    return emitError() << "block size c must be positive, got " << c;
  return success();
}

/// The block size of `type`, a 5-D tensor whose encoding is
/// #graph.blocked<c> and whose innermost dimension is c; an error naming
/// `what` otherwise.
static FailureOr<int64_t> getBlockSize(Operation *op, Type type,
                                       StringRef what) {
  auto tensor = cast<RankedTensorType>(type);
  auto layout = dyn_cast_or_null<BlockedLayoutAttr>(tensor.getEncoding());
  if (!layout)
    return op->emitOpError() << what << " must have the #graph.blocked "
                             << "encoding, got " << type;
  if (tensor.getRank() != 5)
    return op->emitOpError()
           << what << " must be 5-D (N, C1, H, W, c), got " << type;
  if (tensor.getDimSize(4) != layout.getC())
    return op->emitOpError()
           << what << " has innermost dimension " << tensor.getDimSize(4)
           << " but block size " << layout.getC();
  return layout.getC();
}

static bool sameOrDynamic(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that `plain` (NCHW) and `blocked` (N x C1 x H x W x c) hold the
/// same data.
static LogicalResult verifyConversion(Operation *op, RankedTensorType plain,
                                      RankedTensorType blocked) {
  FailureOr<int64_t> c = getBlockSize(op, blocked, "the blocked tensor");
  if (failed(c))
    return failure();
  if (plain.getRank() != 4)
    return op->emitOpError() << "the NCHW tensor must be 4-D, got " << plain;
  if (plain.getElementType() != blocked.getElementType())
    return op->emitOpError()
           << "element types differ: " << plain << " and " << blocked;
  int64_t channels = plain.getDimSize(1);
  int64_t blocks = ShapedType::isDynamic(channels)
                       ? ShapedType::kDynamic
                       : llvm::divideCeil(channels, *c);
  if (!sameOrDynamic(plain.getDimSize(0), blocked.getDimSize(0)) ||
      !sameOrDynamic(blocks, blocked.getDimSize(1)) ||
      !sameOrDynamic(plain.getDimSize(2), blocked.getDimSize(2)) ||
      !sameOrDynamic(plain.getDimSize(3), blocked.getDimSize(3)))
    return op->emitOpError()
           << plain << " in blocks of " << *c << " is not " << blocked;
  return success();
}

LogicalResult ToBlockedOp::verify() {
  return verifyConversion(*this, getInput().getType(), getResult().getType());
}

OpFoldResult ToBlockedOp::fold(FoldAdaptor) {
  auto from = getInput().getDefiningOp<FromBlockedOp>();
  if (from && from.getInput().getType() == getResult().getType())
    return from.getInput();
  return {};
}

LogicalResult FromBlockedOp::verify() {
  return verifyConversion(*this, getResult().getType(), getInput().getType());
}

OpFoldResult FromBlockedOp::fold(FoldAdaptor) {
  auto to = getInput().getDefiningOp<ToBlockedOp>();
  if (to && to.getInput().getType() == getResult().getType())
    return to.getInput();
  return {};
}

/// Checks the window attributes of a 2-D blocked op and that `result` has
/// the spatial sizes they give for `input`.
static LogicalResult verifyWindow(Operation *op, RankedTensorType input,
                                  RankedTensorType result,
                                  ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations, bool ceilMode) {
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      pads.size() != 4)
    return op->emitOpError("needs 2 kernel sizes, strides and dilations and "
                           "4 pads");
  for (int i = 0; i < 2; ++i) {
    int64_t expected =
        convOutputSize(input.getDimSize(2 + i), kernel[i], strides[i], pads[i],
                       pads[2 + i], dilations[i], ceilMode);
    if (!sameOrDynamic(expected, result.getDimSize(2 + i)))
      return op->emitOpError()
             << "result spatial dimension " << i << " is "
             << result.getDimSize(2 + i) << ", expected " << expected;
  }
  return success();
}

/// The epilogue of a blocked convolution: a bias of `blocks` x c (the
/// output's channel blocks, named `blocks` in the message), a residual of
/// the result's type, and as many activation parameters as the activation
/// takes.
static LogicalResult verifyEpilogue(Operation *op, RankedTensorType result,
                                    int64_t c, StringRef blocks, Value bias,
                                    Value residual, Activation activation,
                                    ArrayRef<float> activationParams) {
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 2 ||
        !sameOrDynamic(biasType.getDimSize(0), result.getDimSize(1)) ||
        biasType.getDimSize(1) != c)
      return op->emitOpError()
             << "bias must be " << blocks << " x " << c << ", got " << biasType;
  }
  if (residual && residual.getType() != result)
    return op->emitOpError() << "residual " << residual.getType()
                             << " differs from the result " << result;
  int64_t params = FusedConvOp::getNumActivationParams(activation);
  if (static_cast<int64_t>(activationParams.size()) != params)
    return op->emitOpError()
           << "activation " << stringifyActivation(activation) << " takes "
           << params << " parameters, got " << activationParams.size();
  return success();
}

LogicalResult BlockedConvOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  RankedTensorType weight = getWeight().getType();
  FailureOr<int64_t> cIn = getBlockSize(*this, input, "input");
  if (failed(cIn))
    return failure();
  FailureOr<int64_t> c = getBlockSize(*this, result, "result");
  if (failed(c))
    return failure();
  if (input.getElementType() != result.getElementType() ||
      weight.getElementType() != result.getElementType())
    return emitOpError("operands and result must have one element type");
  if (weight.getRank() != 6 || weight.getDimSize(4) != *cIn ||
      weight.getDimSize(5) != *c ||
      !sameOrDynamic(weight.getDimSize(0), result.getDimSize(1)))
    return emitOpError() << "weight must be K1 x C1 x kh x kw x " << *cIn
                         << " x " << *c << " for input " << input
                         << " and result " << result << ", got " << weight;
  // Grouped: the input's C1 blocks are groups of the weight's C1, and the
  // filter blocks as many groups.
  int64_t inputBlocks = input.getDimSize(1), groupBlocks = weight.getDimSize(1);
  if (!ShapedType::isDynamic(inputBlocks) &&
      !ShapedType::isDynamic(groupBlocks) && inputBlocks != groupBlocks) {
    int64_t filterBlocks = weight.getDimSize(0);
    if (groupBlocks <= 0 || inputBlocks % groupBlocks != 0 ||
        ShapedType::isDynamic(filterBlocks) ||
        filterBlocks % (inputBlocks / groupBlocks) != 0)
      return emitOpError() << "weight's " << groupBlocks
                           << " input channel blocks per group "
                           << "must divide the input's " << inputBlocks
                           << " into groups that divide the " << filterBlocks
                           << " filter blocks";
  }
  if (!sameOrDynamic(input.getDimSize(0), result.getDimSize(0)))
    return emitOpError("input and result have different batch sizes");
  if (failed(verifyEpilogue(*this, result, *c, "K1", getBias(), getResidual(),
                            getActivation(), getActivationParams())))
    return failure();
  SmallVector<int64_t> kernel = {weight.getDimSize(2), weight.getDimSize(3)};
  return verifyWindow(*this, input, result, kernel, getStrides(), getPads(),
                      getDilations(), /*ceilMode=*/false);
}

/// A blocked pool's checks, the same for its maximum and its average: both
/// operands blocked alike, differing only in their spatial dimensions, and
/// the window.
template <typename PoolOp> static LogicalResult verifyBlockedPool(PoolOp op) {
  RankedTensorType input = op.getInput().getType();
  RankedTensorType result = op.getResult().getType();
  if (failed(getBlockSize(op, input, "input")) ||
      failed(getBlockSize(op, result, "result")))
    return failure();
  if (input.getEncoding() != result.getEncoding() ||
      input.getElementType() != result.getElementType() ||
      !sameOrDynamic(input.getDimSize(0), result.getDimSize(0)) ||
      !sameOrDynamic(input.getDimSize(1), result.getDimSize(1)))
    return op.emitOpError() << "input " << input << " and result " << result
                            << " must differ only in their spatial dimensions";
  return verifyWindow(op, input, result, op.getKernelShape(), op.getStrides(),
                      op.getPads(), op.getDilations(), op.getCeilMode());
}

LogicalResult BlockedMaxPoolOp::verify() { return verifyBlockedPool(*this); }

LogicalResult BlockedDepthwiseConvOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  RankedTensorType weight = getWeight().getType();
  FailureOr<int64_t> c = getBlockSize(*this, result, "result");
  if (failed(c) || failed(getBlockSize(*this, input, "input")))
    return failure();
  if (input.getEncoding() != result.getEncoding() ||
      !sameOrDynamic(input.getDimSize(0), result.getDimSize(0)) ||
      !sameOrDynamic(input.getDimSize(1), result.getDimSize(1)))
    return emitOpError() << "input " << input << " and result " << result
                         << " must differ only in their spatial dimensions";
  if (input.getElementType() != result.getElementType() ||
      weight.getElementType() != result.getElementType())
    return emitOpError("operands and result must have one element type");
  if (weight.getRank() != 4 || weight.getDimSize(3) != *c ||
      !sameOrDynamic(weight.getDimSize(0), result.getDimSize(1)))
    return emitOpError() << "weight must be C1 x kh x kw x " << *c
                         << " for result " << result << ", got " << weight;
  if (failed(verifyEpilogue(*this, result, *c, "C1", getBias(), getResidual(),
                            getActivation(), getActivationParams())))
    return failure();
  SmallVector<int64_t> kernel = {weight.getDimSize(1), weight.getDimSize(2)};
  return verifyWindow(*this, input, result, kernel, getStrides(), getPads(),
                      getDilations(), /*ceilMode=*/false);
}

LogicalResult BlockedAveragePoolOp::verify() {
  return verifyBlockedPool(*this);
}
