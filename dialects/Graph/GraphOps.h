//===- GraphOps.h - Ops of the Kiln graph dialect ---------------*- C++ -*-===//

#ifndef KILN_DIALECTS_GRAPH_GRAPHOPS_H
#define KILN_DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Graph/GraphInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/GraphEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Graph/GraphAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/GraphOps.h.inc"

#include <optional>

namespace kiln::graph {

/// What the indices of a gather or a scatter index: the tensor of indices,
/// and the size of the dimension each index falls in. An index must lie in
/// [-size, size - 1] (ONNX: an error otherwise), or in [0, size - 1] with
/// `fromZero` (an op marked kiln.indices_from_zero: RoiAlign's batch
/// indices, MaxUnpool's positions). With `perPosition`, the indices' last
/// dimension holds one index per entry of `sizes` (GatherND, ScatterND);
/// else every index falls in the one size (Gather, GatherElements,
/// ScatterElements).
struct IndexedDims {
  mlir::Value indices;
  llvm::SmallVector<int64_t> sizes;
  bool perPosition = false;
  bool fromZero = false;

  /// The least index allowed into a dimension of `size`.
  int64_t least(int64_t size) const { return fromZero ? 0 : -size; }
};

/// The IndexedDims of `op`, or nullopt for an op that reads no indices, or
/// whose indexed sizes are not static.
std::optional<IndexedDims> getIndexedDims(mlir::Operation *op);

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_GRAPHOPS_H
