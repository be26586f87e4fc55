//===- ImportNN.cpp - Convolution, matrix products and friends ------------===//

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/APFloat.h"

using namespace mlir;
using namespace kiln;

/// Explicit pads (all begins, then all ends) for `auto_pad` SAME_UPPER or
/// SAME_LOWER: the output has ceil(input / stride) elements, and the odd
/// padding element goes at the end (UPPER) or the beginning (LOWER).
static LogicalResult resolveSamePads(NodeImporter &node,
                                     RankedTensorType inputType,
                                     ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations, bool upper,
                                     SmallVectorImpl<int64_t> &pads) {
  size_t spatial = kernel.size();
  pads.assign(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = inputType.getDimSize(2 + i);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel[i]))
      return node.emitError()
             << "auto_pad SAME_* needs static spatial sizes, got input "
             << graph::formatShape(inputType.getShape()) << " and kernel "
             << graph::formatShape(kernel)
             << " (give the input a static shape in the import options)";
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t needed =
        (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in;
    int64_t total = std::max<int64_t>(needed, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = upper ? small : large;
    pads[spatial + i] = upper ? large : small;
  }
  return success();
}

static LogicalResult importConv(NodeImporter &node) {
  Value input = node.getInput(0), weight = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !weight)
    return node.emitError() << "needs inputs X and W";
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t rank = inputType.getRank();
  if (rank < 3)
    return node.emitError() << "input X must have rank >= 3 (N, C and at "
                               "least one spatial dimension), got "
                            << inputType;
  if (weightType.getRank() != rank)
    return node.emitError() << "weight W has rank " << weightType.getRank()
                            << " but input X has rank " << rank;
  size_t spatial = rank - 2;
  SmallVector<int64_t> ones(spatial, 1);

  SmallVector<int64_t> kernel =
      node.getInts("kernel_shape", weightType.getShape().drop_front(2));
  SmallVector<int64_t> strides = node.getInts("strides", ones);
  SmallVector<int64_t> dilations = node.getInts("dilations", ones);
  int64_t group = node.getInt("group", 1);
  std::string autoPad = node.getString("auto_pad", "NOTSET");
  if (node.hasFailed())
    return failure();
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial)
    return node.emitError()
           << "kernel_shape, strides and dilations need " << spatial
           << " values each (one per spatial dimension), got " << kernel.size()
           << ", " << strides.size() << " and " << dilations.size();
  for (size_t i = 0; i < spatial; ++i) {
    int64_t declared = weightType.getDimSize(2 + i);
    if (!ShapedType::isDynamic(declared) && declared != kernel[i])
      return node.emitError()
             << "kernel_shape " << graph::formatShape(kernel)
             << " differs from the weight's spatial dimensions "
             << graph::formatShape(weightType.getShape().drop_front(2));
    if (strides[i] <= 0 || dilations[i] <= 0)
      return node.emitError() << "strides and dilations must be positive";
  }
  if (group <= 0)
    return node.emitError() << "group must be positive, got " << group;

  SmallVector<int64_t> pads;
  if (autoPad == "NOTSET") {
    pads = node.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial)
      return node.emitError()
             << "pads needs " << 2 * spatial
             << " values (begins, then ends), got " << pads.size();
    if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
      return node.emitError() << "pads must not be negative";
  } else if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    if (failed(resolveSamePads(node, inputType, kernel, strides, dilations,
                               autoPad == "SAME_UPPER", pads)))
      return failure();
  } else {
    return node.emitError() << "auto_pad '" << autoPad
                            << "' is not NOTSET, VALID, SAME_UPPER or "
                               "SAME_LOWER";
  }
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::ConvOp>(
      input, weight, bias, ArrayRef<int64_t>(strides), ArrayRef<int64_t>(pads),
      ArrayRef<int64_t>(dilations), static_cast<uint64_t>(group)));
}

static LogicalResult importMatMul(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  return node.setResults(node.create<graph::MatMulOp>(lhs, rhs));
}

/// Gemm from opset 7 (earlier ones take a `broadcast` attribute); C is
/// optional from opset 11 and accepted absent in all.
static LogicalResult importGemm(NodeImporter &node) {
  Value a = node.getInput(0), b = node.getInput(1), c = node.getInput(2);
  if (!a || !b)
    return node.emitError() << "needs inputs A and B";
  float alpha = node.getFloat("alpha", 1.0f);
  float beta = node.getFloat("beta", 1.0f);
  int64_t transA = node.getInt("transA", 0);
  int64_t transB = node.getInt("transB", 0);
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::GemmOp>(
      a, b, c, llvm::APFloat(alpha), llvm::APFloat(beta), transA != 0,
      transB != 0));
}

void kiln::registerNNImporters(NodeImporterRegistry &registry) {
  registry.add("Conv", /*minOpset=*/1, importConv);
  registry.add("Gemm", /*minOpset=*/7, importGemm);
  registry.add("MatMul", /*minOpset=*/1, importMatMul);
}
