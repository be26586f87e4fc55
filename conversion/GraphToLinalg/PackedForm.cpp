//===- PackedForm.cpp - Products in dot-product form ----------------------===//

#include "conversion/GraphToLinalg/PackedForm.h"

#include <cmath>

using namespace mlir;

namespace kiln {

std::optional<PackedForm> PackedForm::of(Operation *op, Builder &b) {
  if (auto range = op->getAttrOfType<DenseI64ArrayAttr>(attr::kIntegerInput))
    return PackedForm{4, b.getI8Type(), b.getI32Type(), range[0]};
  if (op->hasAttr(attr::kBF16))
    return PackedForm{2, b.getBF16Type(), b.getF32Type(), 0};
  return std::nullopt;
}

bool PackedForm::holds(ArrayRef<double> weights) const {
  return !isInteger() || llvm::all_of(weights, [](double w) {
    return w == std::nearbyint(w) && w >= -128 && w <= 127;
  });
}

/// `values` (whole numbers for an integer type) as a constant of `type`: its
/// i8, i32, f32 or bf16 elements, the floats rounded to nearest even.
static Value constantOf(OpBuilder &b, Location loc, RankedTensorType type,
                        ArrayRef<double> values) {
  auto dense = [&](auto typed) -> Value {
    using T = typename decltype(typed)::value_type;
    SmallVector<T> elements(values.begin(), values.end());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, ArrayRef(elements)));
  };
  Type element = type.getElementType();
  if (element.isInteger(8))
    return dense(SmallVector<int8_t>());
  if (element.isInteger(32))
    return dense(SmallVector<int32_t>());
  if (element.isF32())
    return dense(SmallVector<float>());
  SmallVector<APFloat> floats;
  floats.reserve(values.size());
  for (double v : values) {
    APFloat value(v);
    bool lost;
    value.convert(cast<FloatType>(element).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
    floats.push_back(value);
  }
  return arith::ConstantOp::create(b, loc,
                                   DenseElementsAttr::get(type, floats));
}

Value PackedForm::constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                           ArrayRef<double> values) const {
  return constantOf(b, loc, RankedTensorType::get(shape, element), values);
}

Value PackedForm::start(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                        ArrayRef<double> perChannel) const {
  return constantOf(b, loc, RankedTensorType::get(shape, acc), perChannel);
}

Value PackedForm::convertInput(OpBuilder &b, Location loc, Value input) const {
  RankedTensorType type = getTensorType(input);
  Value lowValue = createScalarConstant(b, loc, type.getElementType(), low);
  Value converted = buildBroadcastElementwise(
      b, loc, type.clone(element), input,
      [&](OpBuilder &nb, Location nloc, ValueRange args) -> Value {
        if (!isInteger())
          return arith::TruncFOp::create(nb, nloc, element, args[0]);
        Value shifted = arith::SubFOp::create(nb, nloc, args[0], lowValue);
        return arith::FPToUIOp::create(nb, nloc, element, shifted);
      });
  // The bytes hold the input exactly (integers in [low, low + 255]), so
  // the input's other readers may read them instead
  // (kiln-codegen-fuse-elementwise).
  if (Operation *op = converted.getDefiningOp();
      isInteger() && op && op->getName().getStringRef() == "linalg.generic")
    op->setAttr(attr::kToBytes, b.getI64IntegerAttr(low));
  return converted;
}

Value PackedForm::zero(OpBuilder &b, Location loc) const {
  if (!isInteger())
    return createScalarConstant(b, loc, element, 0.0);
  int64_t zeroByte = -low > 127 ? -low - 256 : -low;
  return arith::ConstantOp::create(
      b, loc, b.getI8IntegerAttr(static_cast<int8_t>(zeroByte)));
}

void PackedForm::body(OpBuilder &b, Location loc, ValueRange args) const {
  if (isInteger()) {
    Value x = arith::ExtUIOp::create(b, loc, acc, args[0]);
    Value y = arith::ExtSIOp::create(b, loc, acc, args[1]);
    Value product = arith::MulIOp::create(b, loc, x, y);
    linalg::YieldOp::create(
        b, loc, ValueRange{arith::AddIOp::create(b, loc, args[2], product)});
    return;
  }
  Value x = arith::ExtFOp::create(b, loc, acc, args[0]);
  Value y = arith::ExtFOp::create(b, loc, acc, args[1]);
  Value product = arith::MulFOp::create(b, loc, x, y);
  linalg::YieldOp::create(
      b, loc, ValueRange{arith::AddFOp::create(b, loc, args[2], product)});
}

Value PackedForm::toFloat(OpBuilder &b, Location loc, Value x) const {
  return isInteger() ? arith::SIToFPOp::create(b, loc, b.getF32Type(), x) : x;
}

} // namespace kiln
