//===- GraphCoreOps.cpp - Constants and structure -------------------------===//

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln::graph;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::verify() {
  if (!isa<ElementsAttr>(getValue()))
    return emitOpError("value must be an elements attribute (dense or "
                       "dense_resource), got ")
           << getValue();
  return success();
}
