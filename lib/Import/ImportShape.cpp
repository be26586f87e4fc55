//===- ImportShape.cpp - Shape and data-movement operators ----------------===//
//
// Reshape, Transpose, Concat, Slice, Gather and their kin.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln;

void kiln::registerShapeImporters(NodeImporterRegistry &registry) {
  (void)registry;
}
