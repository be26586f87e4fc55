//===- GraphOps.td - Ops of the Kiln graph dialect ---------*- tablegen -*-===//
//
// Ops are grouped by family, one file each; this file includes them all.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_OPS
#define KILN_GRAPH_OPS

include "dialects/Graph/GraphBase.td"
include "dialects/Graph/GraphCoreOps.td"
include "dialects/Graph/GraphElementwiseOps.td"
include "dialects/Graph/GraphLayoutOps.td"
include "dialects/Graph/GraphNNOps.td"
include "dialects/Graph/GraphReductionOps.td"
include "dialects/Graph/GraphShapeOps.td"

#endif // KILN_GRAPH_OPS
