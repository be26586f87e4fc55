//===- Passes.h - Passes of the graph dialect -------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
#define KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H

#include "dialects/Graph/GraphDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln::graph {

#define GEN_PASS_DECL
#include "dialects/Graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/Graph/Transforms/Passes.h.inc"

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_TRANSFORMS_PASSES_H
