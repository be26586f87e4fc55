//===- GraphNNOps.cpp - Convolution, matmul and friends -------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

/// Checks what the result type depends on; shared by the verifier and type
/// inference so that both name the same problem.
static LogicalResult checkConvOperands(std::optional<Location> loc,
                                       RankedTensorType input,
                                       RankedTensorType weight,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations,
                                       int64_t group) {
  int64_t rank = input.getRank();
  if (rank < 3)
    return emitOptionalError(loc, "input must have rank >= 3 (N, C and at "
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
  if (!ShapedType::isDynamic(channels) && !ShapedType::isDynamic(perGroup) &&
      channels != perGroup * group)
    return emitOptionalError(loc, "input has ", channels,
                             " channels but weight expects ", perGroup,
                             " per group x ", group, " groups");
  if (!ShapedType::isDynamic(filters) && filters % group != 0)
    return emitOptionalError(loc, "group ", group,
                             " does not divide the number of filters ",
                             filters);
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> pads = adaptor.getPads();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  if (failed(checkConvOperands(loc, input, weight, strides, pads, dilations,
                               adaptor.getGroup())))
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

LogicalResult ConvOp::verify() {
  auto input = getInput().getType();
  auto weight = getWeight().getType();
  if (input.getElementType() != weight.getElementType())
    return emitOpError("input element type ")
           << input.getElementType() << " differs from weight element type "
           << weight.getElementType();
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1 ||
        failed(verifyCompatibleShape(biasType.getShape(),
                                     {weight.getDimSize(0)})))
      return emitOpError("bias must have one element per filter (")
             << weight.getDimSize(0) << "), got " << biasType;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "operands must have rank >= 1, got ", lhs,
                             " and ", rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  // Promote 1-D operands to matrices as numpy does.
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  int64_t k1 = a.back(), k2 = b[b.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "contraction sizes differ: ",
                             formatShape(lhs.getShape()), " x ",
                             formatShape(rhs.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(a).drop_back(2),
                               ArrayRef<int64_t>(b).drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "batch dimensions of ",
                             formatShape(lhs.getShape()), " and ",
                             formatShape(rhs.getShape()),
                             " do not broadcast");
  SmallVector<int64_t> shape = *batch;
  if (lhs.getRank() > 1)
    shape.push_back(a[a.size() - 2]);
  if (rhs.getRank() > 1)
    shape.push_back(b.back());
  inferred.push_back(RankedTensorType::get(shape, lhs.getElementType()));
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
