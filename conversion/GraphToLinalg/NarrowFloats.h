//===- NarrowFloats.h - 8- and 4-bit floats in integer arithmetic -*- C++
//-*-===//
//
// LLVM has no arithmetic on the 8- and 4-bit floats (f8E4M3FN, f8E4M3FNUZ,
// f8E5M2, f8E5M2FNUZ, f8E8M0FNU, f4E2M1FN): its type conversion turns them
// into integers of their width. graph.cast therefore converts them to and
// from f32 with integer operations on the bit patterns, built here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_GRAPHTOLINALG_NARROWFLOATS_H
#define KILN_CONVERSION_GRAPHTOLINALG_NARROWFLOATS_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// Whether `type` is one of the 8- or 4-bit floats handled here.
bool isNarrowFloat(mlir::Type type);

/// The f32 value of `x`, a scalar of a narrow float type: exact.
mlir::Value decodeNarrowFloat(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value x);

/// `x` (an f32 scalar) as a scalar of the narrow float type `to`, rounded as
/// ONNX's Cast does: to nearest even; with `saturate`, values beyond the
/// largest finite value (infinities included) become it, otherwise they
/// become infinity (f8E5M2) or NaN. f4E2M1FN always saturates. For
/// f8E8M0FNU, `roundMode` ("up", "down", "nearest") rounds the exponent.
mlir::Value encodeNarrowFloat(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value x, mlir::FloatType to, bool saturate,
                              llvm::StringRef roundMode);

/// `x` (an f64 scalar) rounded to nearest even into the 16-bit float `to`
/// (f16 or bf16) without the libgcc call LLVM emits for a direct fptrunc
/// (__truncdfhf2), which a model .so cannot link: x is first rounded to f32
/// to odd, which keeps the second rounding correct (24 bits >= 11 + 2).
mlir::Value truncateF64ToHalf(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value x, mlir::FloatType to);

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOLINALG_NARROWFLOATS_H
