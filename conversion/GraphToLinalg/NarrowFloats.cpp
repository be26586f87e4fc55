//===- NarrowFloats.cpp - 8- and 4-bit floats in integer arithmetic -------===//
//
// Every narrow float but f8E8M0FNU is a sign bit, E exponent bits with a bias
// and M mantissa bits, with subnormals; they differ in their special values:
//
//   type         E  M  bias  largest finite  special codes (magnitude bits)
//   f8E4M3FN     4  3   7    448   (0x7E)    0x7F NaN; no infinity
//   f8E4M3FNUZ   4  3   8    240   (0x7F)    0x80 (-0) is the only NaN
//   f8E5M2       5  2  15    57344 (0x7B)    0x7C infinity, 0x7D-0x7F NaN
//   f8E5M2FNUZ   5  2  16    57344 (0x7F)    0x80 (-0) is the only NaN
//   f4E2M1FN     2  1   1    6     (0x7)     none
//
// f32 -> narrow: a normal result is the f32 bit pattern shifted right by
// 23 - M with round-to-nearest-even (add half an ulp minus one, plus the kept
// lowest bit), re-biased; a carry out of the mantissa moves into the exponent
// as it should. A subnormal result is |x| scaled by 2^(bias - 1 + M) and
// rounded to an integer, which is its code (2^M, the carry, is the smallest
// normal). A code above the largest finite one is an overflow.
//
// narrow -> f32: the mantissa and exponent are moved into place and the
// exponent re-biased; subnormals are their mantissa times 2^(1 - bias - M).
//
// f8E8M0FNU is an unsigned, biased (127) exponent alone; 0xFF is NaN. Its
// code is the exponent field of the f32, rounded up, down or to nearest by
// the mantissa as ONNX's Cast specifies.
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/NarrowFloats.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {
namespace {

enum class Specials {
  IEEE, // infinity at the top exponent, NaNs above it (f8E5M2)
  FN,   // no infinity, the all-ones magnitude is NaN (f8E4M3FN)
  FNUZ, // no infinity and no -0: the -0 code is NaN
  None, // no infinity, no NaN (f4E2M1FN)
};

struct Format {
  unsigned bits;
  unsigned mantissaBits;
  int bias;
  Specials specials;
  uint32_t maxCode; // magnitude bits of the largest finite value
};

std::optional<Format> formatOf(Type type) {
  if (isa<Float8E4M3FNType>(type))
    return Format{8, 3, 7, Specials::FN, 0x7E};
  if (isa<Float8E4M3FNUZType>(type))
    return Format{8, 3, 8, Specials::FNUZ, 0x7F};
  if (isa<Float8E5M2Type>(type))
    return Format{8, 2, 15, Specials::IEEE, 0x7B};
  if (isa<Float8E5M2FNUZType>(type))
    return Format{8, 2, 16, Specials::FNUZ, 0x7F};
  if (isa<Float4E2M1FNType>(type))
    return Format{4, 1, 1, Specials::None, 0x7};
  return std::nullopt;
}

/// Builds integer and float scalar ops at one location.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value bitAnd(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value bitOr(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value shl(Value x, Value y) { return arith::ShLIOp::create(b, loc, x, y); }
  Value shr(Value x, Value y) { return arith::ShRUIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value toBits(Value f) {
    return arith::BitcastOp::create(b, loc, b.getI32Type(), f);
  }
  Value toF32(Value bits) {
    return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
  }
  /// The code of a narrow float as an i32 (zero-extended).
  Value codeOf(Value x) {
    unsigned width = x.getType().getIntOrFloatBitWidth();
    Value bits = arith::BitcastOp::create(b, loc, b.getIntegerType(width), x);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), bits);
  }
  /// The narrow float of type `to` whose code is the low bits of `code`.
  Value fromCode(Value code, Type to) {
    unsigned width = to.getIntOrFloatBitWidth();
    Value bits = arith::TruncIOp::create(b, loc, b.getIntegerType(width), code);
    return arith::BitcastOp::create(b, loc, to, bits);
  }
};

using P = arith::CmpIPredicate;

Value decodeE8M0(Emitter &e, Value code) {
  // 2^(code - 127); code 0 is 2^-127, an f32 subnormal.
  Value bits = e.select(e.cmp(P::eq, code, e.i32(0)), e.i32(0x400000),
                        e.shl(code, e.i32(23)));
  Value value = e.toF32(bits);
  return e.select(e.cmp(P::eq, code, e.i32(0xFF)), e.f32(std::nan("")), value);
}

Value encodeE8M0(Emitter &e, Value bits, bool saturate, StringRef roundMode) {
  Value exponent = e.bitAnd(e.shr(bits, e.i32(23)), e.i32(0xFF));
  Value zero = e.i32(0);
  Value roundUp;
  if (roundMode == "up") {
    roundUp = e.cmp(P::ne, e.bitAnd(bits, e.i32(0x7FFFFF)), zero);
  } else if (roundMode == "nearest") {
    // Up when the first dropped bit is set and the rest or the kept lowest
    // bit (1 unless the exponent field is 0) is: ties to even.
    Value guard = e.cmp(P::ne, e.bitAnd(bits, e.i32(0x400000)), zero);
    Value rest = e.cmp(P::ne, e.bitAnd(bits, e.i32(0x3FFFFF)), zero);
    Value odd = e.cmp(P::ne, exponent, zero);
    roundUp = arith::AndIOp::create(
        e.b, e.loc, guard, arith::OrIOp::create(e.b, e.loc, rest, odd));
  } else {
    roundUp = arith::ConstantOp::create(e.b, e.loc, e.b.getBoolAttr(false));
  }
  if (saturate)
    roundUp = arith::AndIOp::create(e.b, e.loc, roundUp,
                                    e.cmp(P::ne, exponent, e.i32(0xFE)));
  Value rounded = e.add(
      exponent, arith::ExtUIOp::create(e.b, e.loc, e.b.getI32Type(), roundUp));
  // Infinities and NaNs (exponent field 0xFF) stay 0xFF, NaN.
  return e.select(e.cmp(P::eq, exponent, e.i32(0xFF)), e.i32(0xFF), rounded);
}

} // namespace

bool isNarrowFloat(Type type) {
  return formatOf(type).has_value() || isa<Float8E8M0FNUType>(type);
}

Value decodeNarrowFloat(OpBuilder &b, Location loc, Value x) {
  Emitter e{b, loc};
  Value code = e.codeOf(x);
  std::optional<Format> format = formatOf(x.getType());
  if (!format)
    return decodeE8M0(e, code);
  const Format &f = *format;
  uint32_t signShift = f.bits - 1;
  uint32_t magnitudeMask = (1u << signShift) - 1;
  uint32_t mantissaMask = (1u << f.mantissaBits) - 1;
  Value magnitude = e.bitAnd(code, e.i32(magnitudeMask));
  Value negative = e.cmp(P::ne, e.shr(code, e.i32(signShift)), e.i32(0));
  Value exponent = e.shr(magnitude, e.i32(f.mantissaBits));
  // Normal: exponent and mantissa moved to f32's places, then re-biased.
  Value normal =
      e.toF32(e.add(e.shl(magnitude, e.i32(23 - f.mantissaBits)),
                    e.i32(static_cast<int64_t>(127 - f.bias) << 23)));
  // Subnormal: mantissa * 2^(1 - bias - M), exact in f32.
  Value mantissa = e.bitAnd(magnitude, e.i32(mantissaMask));
  Value subnormal = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), mantissa),
      e.f32(std::ldexp(1.0, 1 - f.bias - static_cast<int>(f.mantissaBits))));
  Value value = e.select(e.cmp(P::eq, exponent, e.i32(0)), subnormal, normal);
  if (f.specials == Specials::IEEE) {
    Value infCode = e.i32(f.maxCode + 1);
    value = e.select(e.cmp(P::eq, magnitude, infCode),
                     e.f32(std::numeric_limits<float>::infinity()), value);
    value =
        e.select(e.cmp(P::ugt, magnitude, infCode), e.f32(std::nan("")), value);
  }
  if (f.specials == Specials::FN)
    value = e.select(e.cmp(P::eq, magnitude, e.i32(magnitudeMask)),
                     e.f32(std::nan("")), value);
  value = e.select(negative, arith::NegFOp::create(b, loc, value), value);
  if (f.specials == Specials::FNUZ)
    value = e.select(e.cmp(P::eq, code, e.i32(1u << signShift)),
                     e.f32(std::nan("")), value);
  return value;
}

Value encodeNarrowFloat(OpBuilder &b, Location loc, Value x, FloatType to,
                        bool saturate, StringRef roundMode) {
  Emitter e{b, loc};
  Value bits = e.toBits(x);
  std::optional<Format> format = formatOf(to);
  if (!format)
    return e.fromCode(encodeE8M0(e, bits, saturate, roundMode), to);
  const Format &f = *format;
  uint32_t shift = 23 - f.mantissaBits;
  uint32_t signShift = f.bits - 1;
  Value sign = e.shr(bits, e.i32(31));
  Value magnitude = e.bitAnd(bits, e.i32(0x7FFFFFFF));

  // Normal results: round the f32 pattern to M mantissa bits, re-bias.
  Value lowest = e.bitAnd(e.shr(magnitude, e.i32(shift)), e.i32(1));
  Value rounded =
      e.shr(e.add(e.add(magnitude, e.i32((1u << (shift - 1)) - 1)), lowest),
            e.i32(shift));
  Value normal = e.sub(
      rounded, e.i32(static_cast<int64_t>(127 - f.bias) << f.mantissaBits));
  // Subnormal results: |x| in units of the smallest subnormal, rounded to
  // nearest even (clamped first so that the conversion stays in range).
  Value scaled = arith::MulFOp::create(
      b, loc, e.toF32(magnitude),
      e.f32(std::ldexp(1.0, f.bias - 1 + static_cast<int>(f.mantissaBits))));
  scaled =
      arith::MinimumFOp::create(b, loc, scaled, e.f32(1u << f.mantissaBits));
  Value subnormal = arith::FPToUIOp::create(
      b, loc, b.getI32Type(), math::RoundEvenOp::create(b, loc, scaled));
  Value smallestNormal = e.i32(static_cast<int64_t>(128 - f.bias) << 23);
  Value code =
      e.select(e.cmp(P::ult, magnitude, smallestNormal), subnormal, normal);

  Value overflow = e.cmp(P::ugt, code, e.i32(f.maxCode));
  bool saturates = saturate || f.specials == Specials::None;
  Value overflowCode;
  if (saturates)
    overflowCode = e.i32(f.maxCode);
  else if (f.specials == Specials::IEEE)
    overflowCode = e.i32(f.maxCode + 1); // infinity
  else
    overflowCode = e.i32(f.maxCode | 1); // FN: NaN; FNUZ: replaced below
  code = e.select(overflow, overflowCode, code);
  Value result = e.bitOr(code, e.shl(sign, e.i32(signShift)));

  Value isNaN = e.cmp(P::ugt, magnitude, e.i32(0x7F800000));
  Value nanCode;
  switch (f.specials) {
  case Specials::IEEE:
    nanCode = e.bitOr(e.i32(f.maxCode + 3), e.shl(sign, e.i32(signShift)));
    break;
  case Specials::FN:
    nanCode = e.bitOr(e.i32(0x7F), e.shl(sign, e.i32(signShift)));
    break;
  case Specials::FNUZ:
    nanCode = e.i32(0x80);
    // No -0: a negative value that rounds to zero is +0.
    result = e.select(e.cmp(P::eq, code, e.i32(0)), e.i32(0), result);
    if (!saturate)
      result = e.select(overflow, nanCode, result);
    break;
  case Specials::None:
    // No NaN to give: like ml_dtypes (ONNX's reference), a zero of the
    // opposite sign.
    nanCode =
        e.shl(arith::XOrIOp::create(b, loc, sign, e.i32(1)), e.i32(signShift));
    break;
  }
  result = e.select(isNaN, nanCode, result);
  return e.fromCode(result, to);
}

Value truncateF64ToHalf(OpBuilder &b, Location loc, Value x, FloatType to) {
  Emitter e{b, loc};
  Value nearest = arith::TruncFOp::create(b, loc, b.getF32Type(), x);
  // Inexact: of the two f32 values around x, take the one with an odd
  // mantissa: `nearest` if it is odd, else its neighbour towards x.
  Value exact = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::UEQ,
      arith::ExtFOp::create(b, loc, b.getF64Type(), nearest), x);
  Value bits = e.toBits(nearest);
  Value odd = e.cmp(P::ne, e.bitAnd(bits, e.i32(1)), e.i32(0));
  Value absX = math::AbsFOp::create(b, loc, x);
  Value absNearest =
      arith::ExtFOp::create(b, loc, b.getF64Type(),
                            math::AbsFOp::create(b, loc, nearest).getResult());
  Value away = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, absX,
                                     absNearest);
  Value neighbour =
      e.select(away, e.add(bits, e.i32(1)), e.sub(bits, e.i32(1)));
  Value keep = arith::OrIOp::create(b, loc, exact, odd);
  Value toOdd = e.toF32(e.select(keep, bits, neighbour));
  return arith::TruncFOp::create(b, loc, to, toOdd);
}

} // namespace kiln
