//===- ImportReduction.cpp - Reduction operators --------------------------===//
//
// ReduceSum, ReduceMean, ReduceMax and their kin, ArgMax, ArgMin.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln;

void kiln::registerReductionImporters(NodeImporterRegistry &registry) {
  (void)registry;
}
