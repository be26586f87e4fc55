//===- GraphDialect.h - The Kiln graph dialect ------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_GRAPH_GRAPHDIALECT_H
#define KILN_DIALECTS_GRAPH_GRAPHDIALECT_H

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/IR/Dialect.h"

#include "dialects/Graph/GraphDialect.h.inc"

#endif // KILN_DIALECTS_GRAPH_GRAPHDIALECT_H
