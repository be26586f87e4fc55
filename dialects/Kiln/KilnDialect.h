//===- KilnDialect.h - The kiln dialect -------------------------*- C++ -*-===//

#ifndef KILN_DIALECTS_KILN_KILNDIALECT_H
#define KILN_DIALECTS_KILN_KILNDIALECT_H

#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/IR/Dialect.h"

#include "dialects/Kiln/KilnDialect.h.inc"

#endif // KILN_DIALECTS_KILN_KILNDIALECT_H
