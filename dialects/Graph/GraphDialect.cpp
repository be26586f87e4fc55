//===- GraphDialect.cpp - The Kiln graph dialect --------------------------===//

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::graph;

#include "dialects/Graph/GraphDialect.cpp.inc"
#include "dialects/Graph/GraphEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Graph/GraphAttrs.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Graph/GraphOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Graph/GraphAttrs.cpp.inc"
      >();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || typed.getType() != type || !isa<RankedTensorType>(type))
    return nullptr;
  return ConstantOp::create(builder, loc, typed);
}

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.cpp.inc"
