//===- GraphInterfaces.h - Interfaces of the graph dialect ------*- C++ -*-===//

#ifndef KILN_DIALECTS_GRAPH_GRAPHINTERFACES_H
#define KILN_DIALECTS_GRAPH_GRAPHINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace kiln::graph {

/// The elementwise rule of SampleWiseOpInterface: every operand that carries
/// the batch has the rank of `op`'s first result, and every other one
/// broadcasts along the batch (a lower rank, or a first dimension of 1).
bool isElementwiseSampleWise(mlir::Operation *op,
                             llvm::function_ref<bool(mlir::Value)> carries);

} // namespace kiln::graph

#include "dialects/Graph/GraphInterfaces.h.inc"

#endif // KILN_DIALECTS_GRAPH_GRAPHINTERFACES_H
