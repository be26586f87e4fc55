//===- PackedForm.h - Convolutions and products in dot-product form -*- C++
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

#include <cmath>

namespace kiln {

/// A packed form's element types: 8-bit integers in groups of four into
/// i32 (`kiln.integer_input`), or bf16 in pairs into f32 (`kiln.bf16`).
struct PackedForm {
  int64_t group;      ///< 4 or 2
  mlir::Type element; ///< i8 or bf16
  mlir::Type acc;     ///< i32 or f32
  int64_t low = 0;    ///< the integer input's lowest value (int8)

  /// The form `op` is marked for, if any.
  static std::optional<PackedForm> of(mlir::Operation *op, mlir::Builder &b) {
    if (auto range =
            op->getAttrOfType<mlir::DenseI64ArrayAttr>(attr::kIntegerInput))
      return PackedForm{4, b.getI8Type(), b.getI32Type(), range[0]};
    if (op->hasAttr(attr::kBF16))
      return PackedForm{2, b.getBF16Type(), b.getF32Type(), 0};
    return std::nullopt;
  }

  bool isInteger() const { return group == 4; }

  /// Whether `weights` are what the form takes: int8 integers, or anything
  /// for bf16 (rounded).
  bool holds(mlir::ArrayRef<double> weights) const {
    return !isInteger() || llvm::all_of(weights, [](double w) {
      return w == std::nearbyint(w) && w >= -128 && w <= 127;
    });
  }

  /// `values` as a constant of `shape` in the element type.
  mlir::Value constant(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::ArrayRef<int64_t> shape,
                       mlir::ArrayRef<double> values) const {
    auto type = mlir::RankedTensorType::get(shape, element);
    if (isInteger()) {
      mlir::SmallVector<int8_t> bytes(values.size());
      for (auto [to, v] : llvm::zip_equal(bytes, values))
        to = static_cast<int8_t>(v);
      return mlir::arith::ConstantOp::create(
          b, loc, mlir::DenseElementsAttr::get(type, mlir::ArrayRef(bytes)));
    }
    mlir::SmallVector<mlir::APFloat> halves;
    halves.reserve(values.size());
    for (double v : values) {
      mlir::APFloat value(v);
      bool lost;
      value.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
                    &lost);
      halves.push_back(value);
    }
    return mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(type, halves));
  }

  /// The accumulators' start per output channel, `perChannel`, as a
  /// constant [rows..., channels] of the accumulator type.
  mlir::Value start(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::ArrayRef<int64_t> shape,
                    mlir::ArrayRef<double> perChannel) const {
    auto type = mlir::RankedTensorType::get(shape, acc);
    if (isInteger()) {
      mlir::SmallVector<int32_t> words(perChannel.size());
      for (auto [to, v] : llvm::zip_equal(words, perChannel))
        to = static_cast<int32_t>(v);
      return mlir::arith::ConstantOp::create(
          b, loc, mlir::DenseElementsAttr::get(type, mlir::ArrayRef(words)));
    }
    mlir::SmallVector<float> floats(perChannel.begin(), perChannel.end());
    return mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(type, mlir::ArrayRef(floats)));
  }

  /// `input` (f32) in the element type: bytes x - low, or bf16.
  mlir::Value convertInput(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Value input) const {
    mlir::RankedTensorType type = getTensorType(input);
    mlir::Value lowValue =
        createScalarConstant(b, loc, type.getElementType(), low);
    return buildBroadcastElementwise(
        b, loc, type.clone(element), input,
        [&](mlir::OpBuilder &nb, mlir::Location nloc,
            mlir::ValueRange args) -> mlir::Value {
          if (!isInteger())
            return mlir::arith::TruncFOp::create(nb, nloc, element, args[0]);
          mlir::Value shifted =
              mlir::arith::SubFOp::create(nb, nloc, args[0], lowValue);
          return mlir::arith::FPToUIOp::create(nb, nloc, element, shifted);
        });
  }

  /// The element that stands for an input of 0 (padding).
  mlir::Value zero(mlir::OpBuilder &b, mlir::Location loc) const {
    if (!isInteger())
      return createScalarConstant(b, loc, element, 0.0);
    int64_t zeroByte = -low > 127 ? -low - 256 : -low;
    return mlir::arith::ConstantOp::create(
        b, loc, b.getI8IntegerAttr(static_cast<int8_t>(zeroByte)));
  }

  /// acc + x * w, extended: zext and sext (int8), or extf (bf16).
  void body(mlir::OpBuilder &b, mlir::Location loc,
            mlir::ValueRange args) const {
    if (isInteger()) {
      mlir::Value x = mlir::arith::ExtUIOp::create(b, loc, acc, args[0]);
      mlir::Value y = mlir::arith::ExtSIOp::create(b, loc, acc, args[1]);
      mlir::Value product = mlir::arith::MulIOp::create(b, loc, x, y);
      mlir::linalg::YieldOp::create(
          b, loc,
          mlir::ValueRange{
              mlir::arith::AddIOp::create(b, loc, args[2], product)});
      return;
    }
    mlir::Value x = mlir::arith::ExtFOp::create(b, loc, acc, args[0]);
    mlir::Value y = mlir::arith::ExtFOp::create(b, loc, acc, args[1]);
    mlir::Value product = mlir::arith::MulFOp::create(b, loc, x, y);
    mlir::linalg::YieldOp::create(b, loc,
                                  mlir::ValueRange{mlir::arith::AddFOp::create(
                                      b, loc, args[2], product)});
  }

  /// The accumulator `x` as an f32 scalar.
  mlir::Value toFloat(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value x) const {
    return isInteger()
               ? mlir::arith::SIToFPOp::create(b, loc, b.getF32Type(), x)
               : x;
  }
};

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOLINALG_PACKEDFORM_H
