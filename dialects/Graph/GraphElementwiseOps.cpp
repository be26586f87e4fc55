//===- GraphElementwiseOps.cpp - Elementwise ops --------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

/// Infers the broadcast result type of a binary op; shared by all of them.
static LogicalResult
inferBroadcastBinary(std::optional<Location> loc, Value lhsValue,
                     Value rhsValue,
                     SmallVectorImpl<Type> &inferredReturnTypes) {
  auto lhs = cast<RankedTensorType>(lhsValue.getType());
  auto rhs = cast<RankedTensorType>(rhsValue.getType());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return emitOptionalError(loc, "operand shapes ",
                             formatShape(lhs.getShape()), " and ",
                             formatShape(rhs.getShape()),
                             " do not broadcast");
  inferredReturnTypes.push_back(
      RankedTensorType::get(*shape, lhs.getElementType()));
  return success();
}

#define KILN_BROADCAST_BINARY_OP(OpClass)                                      \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    return inferBroadcastBinary(loc, adaptor.getLhs(), adaptor.getRhs(),       \
                                inferredReturnTypes);                          \
  }

KILN_BROADCAST_BINARY_OP(AddOp)
KILN_BROADCAST_BINARY_OP(SubOp)
KILN_BROADCAST_BINARY_OP(MulOp)
KILN_BROADCAST_BINARY_OP(DivOp)

#undef KILN_BROADCAST_BINARY_OP
