//===- GraphElementwiseOps.cpp - Elementwise ops --------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln::graph;

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

/// The numpy broadcast of the shapes of `values`, or an error naming them.
static FailureOr<SmallVector<int64_t>>
inferBroadcastShape(std::optional<Location> loc, ValueRange values) {
  SmallVector<int64_t> shape;
  for (Value value : values) {
    auto type = cast<RankedTensorType>(value.getType());
    auto broadcast = broadcastShapes(shape, type.getShape());
    if (!broadcast) {
      std::string shapes;
      for (auto [i, v] : llvm::enumerate(values)) {
        if (i)
          shapes += i + 1 == values.size() ? " and " : ", ";
        shapes += formatShape(cast<RankedTensorType>(v.getType()).getShape());
      }
      return emitOptionalError(loc, "operand shapes ", shapes,
                               " do not broadcast");
    }
    shape = std::move(*broadcast);
  }
  return shape;
}

/// Checks that `lhs` and `rhs` have one element type.
static LogicalResult verifySameElementType(std::optional<Location> loc,
                                           Value lhs, Value rhs) {
  Type lhsElement = getElementTypeOrSelf(lhs.getType());
  Type rhsElement = getElementTypeOrSelf(rhs.getType());
  if (lhsElement != rhsElement)
    return emitOptionalError(loc, "operands have different element types: ",
                             lhsElement, " and ", rhsElement);
  return success();
}

/// Infers the type of a broadcast binary op: the broadcast shape with
/// `resultElement`, or the operands' element type when it is null.
static LogicalResult
inferBroadcastBinary(std::optional<Location> loc, Value lhs, Value rhs,
                     Type resultElement,
                     SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifySameElementType(loc, lhs, rhs)))
    return failure();
  auto shape = inferBroadcastShape(loc, {lhs, rhs});
  if (failed(shape))
    return failure();
  if (!resultElement)
    resultElement = getElementTypeOrSelf(lhs.getType());
  inferredReturnTypes.push_back(RankedTensorType::get(*shape, resultElement));
  return success();
}

#define KILN_BROADCAST_BINARY_OP(OpClass, resultElement)                       \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *context, std::optional<Location> loc, Adaptor adaptor,      \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    (void)context;                                                             \
    return inferBroadcastBinary(loc, adaptor.getLhs(), adaptor.getRhs(),       \
                                resultElement, inferredReturnTypes);           \
  }

KILN_BROADCAST_BINARY_OP(AddOp, Type())
KILN_BROADCAST_BINARY_OP(SubOp, Type())
KILN_BROADCAST_BINARY_OP(MulOp, Type())
KILN_BROADCAST_BINARY_OP(DivOp, Type())
KILN_BROADCAST_BINARY_OP(MaxOp, Type())
KILN_BROADCAST_BINARY_OP(MinOp, Type())
KILN_BROADCAST_BINARY_OP(ModOp, Type())
KILN_BROADCAST_BINARY_OP(PReluOp, Type())
KILN_BROADCAST_BINARY_OP(ShiftLeftOp, Type())
KILN_BROADCAST_BINARY_OP(ShiftRightOp, Type())
KILN_BROADCAST_BINARY_OP(AndOp, Type())
KILN_BROADCAST_BINARY_OP(OrOp, Type())
KILN_BROADCAST_BINARY_OP(XorOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseAndOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseOrOp, Type())
KILN_BROADCAST_BINARY_OP(BitwiseXorOp, Type())
KILN_BROADCAST_BINARY_OP(EqualOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(LessOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(LessEqualOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(GreaterOp, IntegerType::get(context, 1))
KILN_BROADCAST_BINARY_OP(GreaterEqualOp, IntegerType::get(context, 1))

#undef KILN_BROADCAST_BINARY_OP

LogicalResult
PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                        Adaptor adaptor,
                        SmallVectorImpl<Type> &inferredReturnTypes) {
  Type base = getElementTypeOrSelf(adaptor.getLhs().getType());
  auto shape = inferBroadcastShape(loc, {adaptor.getLhs(), adaptor.getRhs()});
  if (failed(shape))
    return failure();
  inferredReturnTypes.push_back(RankedTensorType::get(*shape, base));
  return success();
}

LogicalResult
WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                          Adaptor adaptor,
                          SmallVectorImpl<Type> &inferredReturnTypes) {
  if (failed(verifySameElementType(loc, adaptor.getLhs(), adaptor.getRhs())))
    return failure();
  auto shape = inferBroadcastShape(
      loc, {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()});
  if (failed(shape))
    return failure();
  inferredReturnTypes.push_back(RankedTensorType::get(
      *shape, getElementTypeOrSelf(adaptor.getLhs().getType())));
  return success();
}

//===----------------------------------------------------------------------===//
// Float classification
//===----------------------------------------------------------------------===//

static LogicalResult inferFloatClass(MLIRContext *context, Value input,
                                     SmallVectorImpl<Type> &inferred) {
  inferred.push_back(cast<RankedTensorType>(input.getType())
                         .clone(IntegerType::get(context, 1)));
  return success();
}

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferFloatClass(context, adaptor.getInput(), inferred);
}

LogicalResult IsInfOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferFloatClass(context, adaptor.getInput(), inferred);
}
