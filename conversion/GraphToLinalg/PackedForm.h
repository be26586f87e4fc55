//===- PackedForm.h - Products in dot-product form ---------------*- C++
//-*-===//
//
// A blocked convolution or matrix product marked `kiln.integer_input` (8-bit
// integer operands) or `kiln.bf16` (bf16 operands) by
// kiln-graph-mark-integer-contractions lowers to a packed form: the
// reduction split into groups (four bytes, or two bf16) innermost in both
// operands, the shape of the targets' dot-product instructions. PackedForm
// holds what differs between the two: element and accumulator types, the
// input's conversion and padding element, the constants, the body.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONVERSION_GRAPHTOLINALG_PACKEDFORM_H
#define KILN_CONVERSION_GRAPHTOLINALG_PACKEDFORM_H

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

namespace kiln {

/// A packed form's element types: 8-bit integers in groups of four into
/// i32 (`kiln.integer_input`), or bf16 in pairs into f32 (`kiln.bf16`).
struct PackedForm {
  int64_t group;      ///< 4 or 2
  mlir::Type element; ///< i8 or bf16
  mlir::Type acc;     ///< i32 or f32
  int64_t low = 0;    ///< the integer input's lowest value (int8)

  /// The form `op` is marked for, if any.
  static std::optional<PackedForm> of(mlir::Operation *op, mlir::Builder &b);

  bool isInteger() const { return group == 4; }

  /// Whether `weights` are what the form takes: int8 integers, or anything
  /// for bf16 (rounded).
  bool holds(mlir::ArrayRef<double> weights) const;

  /// `values` as a constant of `shape` in the element type.
  mlir::Value constant(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::ArrayRef<int64_t> shape,
                       mlir::ArrayRef<double> values) const;

  /// The accumulators' start per output channel, `perChannel`, as a
  /// constant of `shape` in the accumulator type.
  mlir::Value start(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::ArrayRef<int64_t> shape,
                    mlir::ArrayRef<double> perChannel) const;

  /// `input` (f32) in the element type: bytes x - low, or bf16.
  mlir::Value convertInput(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input) const;

  /// The element that stands for an input of 0 (padding).
  mlir::Value zero(mlir::OpBuilder &b, mlir::Location loc) const;

  /// Yields acc + x * w, extended: zext and sext (int8), or extf (bf16).
  void body(mlir::OpBuilder &b, mlir::Location loc,
            mlir::ValueRange args) const;

  /// The accumulator `x` as an f32 scalar.
  mlir::Value toFloat(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value x) const;
};

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOLINALG_PACKEDFORM_H
