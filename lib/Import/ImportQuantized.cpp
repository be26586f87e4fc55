//===- ImportQuantized.cpp - Quantised operators --------------------------===//
//
// The quantised operators, imported as graph ops on the integers (the
// quantised values in f32, exact) and their scales: QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
// QLinearMatMul, QLinearConv, onnxruntime's com.microsoft QLinear* operators
// and QGemm, and the DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear
// pattern of QDQ models (docs/quantization.md).
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

//===----------------------------------------------------------------------===//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
//===----------------------------------------------------------------------===//

/// Whether `element` is an 8- or 4-bit float (f8E4M3FN ... f4E2M1FN).
static bool isNarrowFloat(Type element) {
  return isa<FloatType>(element) && element.getIntOrFloatBitWidth() <= 8;
}

/// A scale or zero point (already of a compute type) made broadcastable to
/// `shape`, as ONNX's reference does: a scalar or a one-element tensor stays
/// a scalar; per-axis, a 1-D tensor lies along `axis`; blocked, each entry is
/// repeated `blockSize` times along `axis` (the last block may be short).
static Value alignQuantParameter(NodeImporter &node, Value value,
                                 ArrayRef<int64_t> shape, int64_t axis,
                                 int64_t blockSize) {
  RankedTensorType type = tensorType(value);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (type.getRank() == 0)
    return value;
  if (type.getNumElements() == 1)
    return node.create<graph::ReshapeOp>(value, ArrayRef<int64_t>{},
                                         /*allow_zero=*/false);
  if (axis < 0 || axis >= rank) {
    node.emitError() << "axis " << axis << " is out of range for an input of "
                     << "rank " << rank << " with a per-axis scale or zero "
                     << "point";
    return {};
  }
  if (blockSize <= 0) {
    if (type.getRank() != 1 || type.getDimSize(0) != shape[axis]) {
      node.emitError() << "a per-axis scale or zero point must have "
                       << shape[axis] << " elements along axis " << axis
                       << ", got " << type;
      return {};
    }
    SmallVector<int64_t> dims(rank, 1);
    dims[axis] = shape[axis];
    return node.create<graph::ReshapeOp>(value, dims, /*allow_zero=*/false);
  }
  int64_t blocks = (shape[axis] + blockSize - 1) / blockSize;
  bool matches = type.getRank() == rank;
  for (int64_t d = 0; matches && d < rank; ++d)
    matches = type.getDimSize(d) == (d == axis ? blocks : shape[d]);
  if (!matches) {
    node.emitError() << "a blocked scale or zero point must have shape "
                     << graph::formatShape(shape) << " with " << blocks
                     << " blocks of " << blockSize << " along axis " << axis
                     << ", got " << type;
    return {};
  }
  // [.., blocks, ..] -> [.., blocks, 1, ..] -> [.., blocks, B, ..]
  // -> [.., blocks * B, ..], then cut to the input's length.
  SmallVector<int64_t> split(shape), spread(shape), merged(shape);
  split[axis] = blocks;
  split.insert(split.begin() + axis + 1, 1);
  spread[axis] = blocks;
  spread.insert(spread.begin() + axis + 1, blockSize);
  merged[axis] = blocks * blockSize;
  Value result =
      node.create<graph::ReshapeOp>(value, split, /*allow_zero=*/false);
  if (result)
    result = node.create<graph::ExpandOp>(result, spread);
  if (result)
    result = node.create<graph::ReshapeOp>(result, merged,
                                           /*allow_zero=*/false);
  if (result && merged[axis] != shape[axis]) {
    SmallVector<int64_t> starts(rank, 0), ends(shape), steps(rank, 1);
    result = node.create<graph::SliceOp>(result, starts, ends, steps);
  }
  return result;
}

/// The `axis` and `block_size` attributes, checked against `x`. A scale of
/// one element applies to the whole tensor and ignores them (opset 10's
/// default axis 1 on a 1-D input is no error).
static FailureOr<std::pair<int64_t, int64_t>> quantAxis(NodeImporter &node,
                                                        Value x, Value scale) {
  int64_t blockSize = node.getInt("block_size", 0);
  if (tensorType(scale).getNumElements() == 1)
    return std::make_pair(int64_t(0), int64_t(0));
  FailureOr<int64_t> axis =
      normalizeAxis(node, node.getInt("axis", 1), tensorType(x).getRank());
  if (failed(axis))
    return failure();
  if (blockSize < 0) {
    node.emitError() << "block_size must not be negative, got " << blockSize;
    return failure();
  }
  return std::make_pair(*axis, blockSize);
}

/// The elements of a graph.constant of 8-, 16- or 32-bit integers or of f32
/// (inline or a blob; through reshapes), in row-major order, as doubles;
/// nothing otherwise.
static std::optional<std::vector<double>> constantElements(Value value) {
  // A reshape keeps the row-major order: look through it.
  while (auto reshape = value ? value.getDefiningOp<graph::ReshapeOp>()
                              : graph::ReshapeOp())
    value = reshape.getInput();
  auto constant = value ? value.getDefiningOp<graph::ConstantOp>() : nullptr;
  if (!constant)
    return std::nullopt;
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  bool isInt = isa<IntegerType>(element);
  unsigned width = element.getIntOrFloatBitWidth();
  if (!(element.isF32() ||
        (isInt && (width == 8 || width == 16 || width == 32))))
    return std::nullopt;
  ArrayRef<char> raw;
  bool splat = false;
  Attribute attr = constant.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    raw = dense.getRawData();
    splat = dense.isSplat();
  } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    raw = blob->getData();
  } else {
    return std::nullopt;
  }
  int64_t count = type.getNumElements();
  size_t bytes = width / 8;
  if (raw.size() < (splat ? 1 : size_t(count)) * bytes)
    return std::nullopt;
  bool isUnsigned = element.isUnsignedInteger();
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) {
    const char *at = raw.data() + (splat ? 0 : size_t(i) * bytes);
    if (element.isF32()) {
      float f;
      std::memcpy(&f, at, 4);
      values[i] = f;
    } else if (width == 8) {
      values[i] = isUnsigned ? double(uint8_t(*at)) : double(int8_t(*at));
    } else if (width == 16) {
      uint16_t u;
      std::memcpy(&u, at, 2);
      values[i] = isUnsigned ? double(u) : double(int16_t(u));
    } else {
      uint32_t u;
      std::memcpy(&u, at, 4);
      values[i] = isUnsigned ? double(u) : double(int32_t(u));
    }
  }
  return values;
}

/// Whether `value` is a graph.constant (through reshapes), without reading
/// its elements.
static bool isConstant(Value value) {
  while (auto reshape = value ? value.getDefiningOp<graph::ReshapeOp>()
                              : graph::ReshapeOp())
    value = reshape.getInput();
  return value && value.getDefiningOp<graph::ConstantOp>();
}

/// DequantizeLinear of a constant (a quantised weight or bias), per tensor
/// or per axis, to f32 (a null scale is 1): computed here, so that the weight
/// is a constant that the graph passes fold and pack like a float model's (as
/// ops, a convolution's weight would be computed at every run, and nothing
/// folded into it). Null where it is not such a constant.
static Value foldDequantizeLinear(NodeImporter &node, Value x, Value scale,
                                  Value zeroPoint, int64_t axis,
                                  int64_t blockSize, Type resultElement) {
  if (blockSize > 0 || !resultElement.isF32())
    return {};
  std::optional<std::vector<double>> q = constantElements(x);
  std::optional<std::vector<double>> s =
      scale ? constantElements(scale) : std::vector<double>{1.0};
  std::optional<std::vector<double>> zp =
      zeroPoint ? constantElements(zeroPoint) : std::vector<double>{0.0};
  if (!q || !s || !zp || (scale && !elementType(scale).isF32()) ||
      isa<FloatType>(elementType(x)))
    return {};
  auto type = tensorType(x);
  ArrayRef<int64_t> shape = type.getShape();
  // Per axis needs that axis (an empty scale of a scalar has none: the op's
  // own checks refuse it).
  bool perTensor = s->size() == 1 && zp->size() == 1;
  if (!perTensor && (axis < 0 || axis >= type.getRank()))
    return {};
  int64_t channels = perTensor ? 1 : shape[axis];
  if ((s->size() != 1 && static_cast<int64_t>(s->size()) != channels) ||
      (zp->size() != 1 && static_cast<int64_t>(zp->size()) != channels))
    return {};
  int64_t inner = 1;
  for (int64_t d = axis + 1; channels > 1 && d < type.getRank(); ++d)
    inner *= shape[d];
  auto resultType = RankedTensorType::get(shape, resultElement);
  int64_t count = type.getNumElements();
  ElementsAttr attr =
      makeElementsAttr(resultType, count, count * 4, "dequantized",
                       [&](MutableArrayRef<char> out) {
                         auto *data = reinterpret_cast<float *>(out.data());
                         for (int64_t i = 0; i < count; ++i) {
                           int64_t c =
                               channels > 1 ? (i / inner) % channels : 0;
                           double zero = (*zp)[zp->size() == 1 ? 0 : c];
                           // In f32, as the ops compute it.
                           data[i] = (float((*q)[i]) - float(zero)) *
                                     float((*s)[s->size() == 1 ? 0 : c]);
                         }
                       });
  return node.create<graph::ConstantOp>(cast<TypedAttr>(attr));
}

/// `x` (integers) in f32: a constant converted here (a bias, which the
/// graph passes then fold into the convolution), else a cast.
static Value integersAsF32(NodeImporter &node, Value x) {
  Type f32 = Float32Type::get(node.getContext());
  if (!x)
    return x;
  if (Value folded = foldDequantizeLinear(node, x, Value(), Value(), 0, 0, f32))
    return folded;
  return castTo(node, x, f32);
}

/// Whether two zero points (null: 0) are the same, as values.
static bool sameZeroPoint(Value a, Value b) {
  if (a == b)
    return true;
  std::optional<std::vector<double>> va =
      a ? constantElements(a) : std::vector<double>{0.0};
  std::optional<std::vector<double>> vb =
      b ? constantElements(b) : std::vector<double>{0.0};
  return va && vb && va->size() == 1 && vb->size() == 1 &&
         va->front() == vb->front();
}

/// q - zero_point in f32 as the QuantizeLinear that made q recorded it;
/// null where it recorded nothing for that zero point.
static Value recordedShift(NodeImporter &node, Value q, Value zeroPoint) {
  auto it = node.getState().quantizedShifts.find(q);
  if (it == node.getState().quantizedShifts.end() ||
      !sameZeroPoint(it->second.second, zeroPoint))
    return {};
  return it->second.first;
}

/// DequantizeLinear (opset 10): (x - zero_point) * scale in f32, then the
/// scale's type (or `output_dtype`). Float8 and float4 inputs have no zero
/// point (it must be 0).
static LogicalResult importDequantizeLinear(NodeImporter &node) {
  Value x = node.getInput(0), scale = node.getInput(1),
        zeroPoint = node.getInput(2);
  if (!x || !scale)
    return node.emitError() << "needs x and x_scale";
  if (!tensorType(x).hasStaticShape())
    return node.emitError() << "needs a static input shape";
  FailureOr<std::pair<int64_t, int64_t>> axis = quantAxis(node, x, scale);
  if (failed(axis))
    return failure();
  Type f32 = Float32Type::get(node.getContext());
  Type resultElement = elementType(scale);
  if (int64_t dtype = node.getInt("output_dtype", 0)) {
    resultElement = convertElementType(node.getContext(), dtype);
    if (!isa_and_nonnull<FloatType>(resultElement) ||
        isNarrowFloat(resultElement))
      return node.emitError() << "output_dtype " << getONNXTypeName(dtype)
                              << " is not supported";
  }
  Value result = foldDequantizeLinear(node, x, scale, zeroPoint, axis->first,
                                      axis->second, resultElement);
  Value shifted = recordedShift(node, x, zeroPoint);
  if (!result && shifted && resultElement.isF32() &&
      tensorType(scale).getNumElements() == 1) {
    Value s = node.create<graph::ReshapeOp>(castTo(node, scale, f32),
                                            ArrayRef<int64_t>{},
                                            /*allow_zero=*/false);
    result = s ? node.create<graph::MulOp>(shifted, s) : Value();
    if (!result)
      return failure();
  }
  if (!result) {
    ArrayRef<int64_t> shape = tensorType(x).getShape();
    Value value = castTo(node, x, f32);
    if (zeroPoint && !isNarrowFloat(elementType(x))) {
      Value zp = alignQuantParameter(node, castTo(node, zeroPoint, f32), shape,
                                     axis->first, axis->second);
      if (!zp)
        return failure();
      value = node.create<graph::SubOp>(value, zp);
    }
    Value s = alignQuantParameter(node, castTo(node, scale, f32), shape,
                                  axis->first, axis->second);
    if (!s || !value)
      return failure();
    value = node.create<graph::MulOp>(value, s);
    result = castTo(node, value, resultElement);
  }
  // Remembered for the Conv, MatMul or Gemm that may take it (QDQ models).
  Type element = elementType(x);
  if (result && axis->second == 0 && resultElement.isF32() &&
      elementType(scale).isF32() &&
      (element.isInteger(8) || element.isSignlessInteger(32)))
    node.getState().dequantized[result] = {
        x, scale, zeroPoint,
        tensorType(scale).getNumElements() == 1 ? -1 : axis->first};
  return node.setResults(result);
}

/// round(scaled) + zero_point, saturated to the range of `target`, an
/// integer type of at most 16 bits: the integer half of QuantizeLinear.
/// Rounded (half to even) in the type of `scaled`, then computed in f32,
/// where such integers are exact. `shifted`, when given, receives the f32
/// value q - zero_point, which a DequantizeLinear of the result and the next
/// quantised product use rather than converting q back.
static Value quantizeToInteger(NodeImporter &node, Value scaled, Value zp,
                               Type target, Value *shifted = nullptr) {
  Type f32 = Float32Type::get(node.getContext());
  unsigned width = target.getIntOrFloatBitWidth();
  bool isUnsigned = target.isUnsignedInteger();
  double low = isUnsigned ? 0.0 : -std::ldexp(1.0, width - 1);
  double high =
      isUnsigned ? std::ldexp(1.0, width) - 1 : std::ldexp(1.0, width - 1) - 1;
  Value zpf = castTo(node, zp, f32);
  Value lower = createScalar(node, f32, low);
  Value upper = createScalar(node, f32, high);
  if (zpf) {
    lower = node.create<graph::SubOp>(lower, zpf);
    upper = lower ? node.create<graph::SubOp>(upper, zpf) : Value();
  }
  Value value = node.create<graph::RoundOp>(scaled);
  value = castTo(node, value, f32);
  if (value && lower)
    value = node.create<graph::MaxOp>(ValueRange{value, lower});
  if (value && upper)
    value = node.create<graph::MinOp>(ValueRange{value, upper});
  if (!value)
    return {};
  if (shifted)
    *shifted = value;
  if (zpf)
    value = node.create<graph::AddOp>(value, zpf);
  return castTo(node, value, target);
}

static Value requantizeAccumulation(NodeImporter &node, Value x, Value scale,
                                    Value zeroPoint, Type target);

/// QuantizeLinear (opset 10): x / scale (in `precision`, else in the common
/// type of x and scale), then to the zero point's type (or `output_dtype`,
/// default uint8): integers round half to even, add the zero point and
/// saturate; float8 casts with `saturate` (the zero point must be 0); float4
/// adds the zero point and casts.
static LogicalResult importQuantizeLinear(NodeImporter &node) {
  Value x = node.getInput(0), scale = node.getInput(1),
        zeroPoint = node.getInput(2);
  if (!x || !scale)
    return node.emitError() << "needs x and y_scale";
  if (!tensorType(x).hasStaticShape())
    return node.emitError() << "needs a static input shape";
  FailureOr<std::pair<int64_t, int64_t>> axis = quantAxis(node, x, scale);
  if (failed(axis))
    return failure();
  MLIRContext *ctx = node.getContext();
  Type target = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  if (zeroPoint)
    target = elementType(zeroPoint);
  else if (int64_t dtype = node.getInt("output_dtype", 0))
    target = convertElementType(ctx, dtype);
  if (!target ||
      !(isNarrowFloat(target) ||
        (target.isInteger() && target.getIntOrFloatBitWidth() <= 16 &&
         !target.isInteger(1))))
    return node.emitError()
           << "quantizing to " << target << " is not supported";
  Type compute = elementType(x) == elementType(scale)
                     ? elementType(x)
                     : Type(Float32Type::get(ctx));
  if (int64_t precision = node.getInt("precision", 0)) {
    compute = convertElementType(ctx, precision);
    if (!isa_and_nonnull<FloatType>(compute) || isNarrowFloat(compute))
      return node.emitError() << "precision " << getONNXTypeName(precision)
                              << " is not supported";
  }
  if (Value fused = requantizeAccumulation(node, x, scale, zeroPoint, target))
    return node.setResults(fused);
  ArrayRef<int64_t> shape = tensorType(x).getShape();
  Value s = alignQuantParameter(node, castTo(node, scale, compute), shape,
                                axis->first, axis->second);
  if (!s)
    return failure();
  Value scaled = node.create<graph::DivOp>(castTo(node, x, compute), s);
  if (!scaled)
    return failure();
  bool saturate = node.getInt("saturate", 1) != 0;
  if (target.isInteger()) {
    Value zp;
    if (zeroPoint) {
      zp = alignQuantParameter(
          node, castTo(node, zeroPoint, IntegerType::get(ctx, 32)), shape,
          axis->first, axis->second);
      if (!zp)
        return failure();
    }
    Value shifted;
    Value result = quantizeToInteger(node, scaled, zp, target, &shifted);
    if (result && tensorType(scale).getNumElements() == 1 &&
        (!zeroPoint || tensorType(zeroPoint).getNumElements() == 1))
      node.getState().quantizedShifts[result] = {shifted, zeroPoint};
    return result ? node.setResults(result) : failure();
  }
  if (zeroPoint && isa<Float4E2M1FNType>(target)) {
    Value zp = alignQuantParameter(node, castTo(node, zeroPoint, compute),
                                   shape, axis->first, axis->second);
    if (!zp)
      return failure();
    scaled = node.create<graph::AddOp>(scaled, zp);
  }
  return node.setResults(graph::CastOp::create(node.getBuilder(), node.getLoc(),
                                               tensorType(scaled).clone(target),
                                               scaled, saturate, "up"));
}

/// DynamicQuantizeLinear (opset 11): uint8 quantization of x with the scale
/// and zero point that map [min(x, 0), max(x, 0)] onto [0, 255].
static LogicalResult importDynamicQuantizeLinear(NodeImporter &node) {
  Value x = node.getInput(0);
  if (!x || !elementType(x).isF32())
    return node.emitError() << "needs an f32 input";
  if (!tensorType(x).hasStaticShape())
    return node.emitError() << "needs a static input shape";
  MLIRContext *ctx = node.getContext();
  Type f32 = Float32Type::get(ctx);
  Type u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  SmallVector<int64_t> all = trailingAxes(0, tensorType(x).getRank());
  Value zero = createScalar(node, f32, 0.0);
  Value xMax = node.create<graph::ReduceMaxOp>(x, all, /*keepdims=*/false);
  Value xMin = node.create<graph::ReduceMinOp>(x, all, /*keepdims=*/false);
  if (!xMax || !xMin)
    return failure();
  xMax = node.create<graph::MaxOp>(ValueRange{xMax, zero});
  xMin = node.create<graph::MinOp>(ValueRange{xMin, zero});
  // scale = (max == min ? 1 : max - min) / 255
  Value range = node.create<graph::SubOp>(xMax, xMin);
  Value empty = node.create<graph::EqualOp>(xMax, xMin);
  range =
      node.create<graph::WhereOp>(empty, createScalar(node, f32, 1.0), range);
  Value scale =
      node.create<graph::DivOp>(range, createScalar(node, f32, 255.0));
  // zero point = round(clamp(0 - min / scale, 0, 255))
  Value zpFloat =
      node.create<graph::NegOp>(node.create<graph::DivOp>(xMin, scale));
  zpFloat = node.create<graph::MinOp>(
      ValueRange{node.create<graph::MaxOp>(ValueRange{zpFloat, zero}),
                 createScalar(node, f32, 255.0)});
  zpFloat = node.create<graph::RoundOp>(zpFloat);
  Value zp = castTo(node, zpFloat, IntegerType::get(ctx, 32));
  Value y =
      quantizeToInteger(node, node.create<graph::DivOp>(x, scale), zp, u8);
  if (!y)
    return failure();
  return node.setResults({y, scale, castTo(node, zpFloat, u8)});
}

//===----------------------------------------------------------------------===//
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
//===----------------------------------------------------------------------===//
//
// Imported as the products of the zero-point-shifted operands in f32, then
// (for the QLinear ops) requantised: round(acc * (x_scale * w_scale /
// y_scale) + y_zero_point), saturated. The shifted 8-bit operands and
// their products are exact in f32, and so is the accumulation while its
// partial sums stay below 2^24 (a K of 1040 for int8 x int8); beyond that
// each sum rounds as an f32 matmul does. Constant weights fold at import
// into float weights, which the graph passes pack like any other.

/// Whether `element` is int8 or uint8.
static bool isByte(Type element) { return element.isInteger(8); }

/// Refuses a constant scale that is zero, negative, NaN or infinite (ONNX
/// gives no meaning to such a scale); a scale known only at run time is
/// taken as it comes.
static LogicalResult checkScale(NodeImporter &node, Value scale,
                                StringRef what) {
  std::optional<std::vector<double>> values = constantElements(scale);
  if (!values)
    return success();
  for (auto [i, v] : llvm::enumerate(*values))
    if (!(v > 0.0) || std::isinf(v))
      return node.emitError() << what << " must be positive and finite, got "
                              << v << (values->size() > 1 ? " at index " : "")
                              << (values->size() > 1 ? std::to_string(i) : "");
  return success();
}

/// `x - zero_point` in f32, the zero point a scalar or (when `axis` >= 0)
/// one value per index of `axis`. The zero point must have x's type.
static Value shiftedOperand(NodeImporter &node, Value x, Value zeroPoint,
                            int64_t axis, StringRef what) {
  Type f32 = Float32Type::get(node.getContext());
  if (!isByte(elementType(x))) {
    node.emitError() << what << " must be int8 or uint8, got "
                     << elementType(x);
    return {};
  }
  if (zeroPoint && elementType(zeroPoint) != elementType(x)) {
    node.emitError() << "the zero point of " << what << " must have its type "
                     << elementType(x) << ", got " << elementType(zeroPoint);
    return {};
  }
  if (zeroPoint && tensorType(zeroPoint).getNumElements() != 1 && axis < 0) {
    node.emitError() << "the zero point of " << what
                     << " must be a scalar, got " << zeroPoint.getType();
    return {};
  }
  if (Value shifted = recordedShift(node, x, zeroPoint))
    return shifted;
  // A constant (a weight) is shifted here, into a float constant that the
  // graph passes pack.
  if (Value folded = foldDequantizeLinear(node, x, /*scale=*/Value(), zeroPoint,
                                          std::max<int64_t>(axis, 0), 0, f32))
    return folded;
  Value value = castTo(node, x, f32);
  if (!zeroPoint)
    return value;
  Value zp =
      alignQuantParameter(node, castTo(node, zeroPoint, f32),
                          tensorType(x).getShape(), std::max<int64_t>(axis, 0),
                          /*blockSize=*/0);
  return zp ? node.create<graph::SubOp>(value, zp) : Value();
}

/// The requantisation of an f32 accumulator: round(acc * multiplier) +
/// zero_point (rounding half to even), saturated to `target` (int8 or
/// uint8), as QuantizeLinear and onnxruntime's kernels compute it (ONNX's
/// reference adds the zero point before rounding, which differs only at a
/// tie with an odd zero point). `multiplier` broadcasts against acc.
static Value requantize(NodeImporter &node, Value acc, Value multiplier,
                        Value zeroPoint, Type target,
                        Value *shifted = nullptr) {
  Value value = node.create<graph::MulOp>(acc, multiplier);
  Value zp;
  if (value && zeroPoint)
    zp = node.create<graph::ReshapeOp>(
        castTo(node, zeroPoint, IntegerType::get(node.getContext(), 32)),
        ArrayRef<int64_t>{}, /*allow_zero=*/false);
  if (!value || (zeroPoint && !zp))
    return {};
  return quantizeToInteger(node, value, zp, target, shifted);
}

/// requantize() of a QLinear operator's result, recording q - zero point
/// for the next quantised operator (a scalar zero point only).
static Value requantizeAndRecord(NodeImporter &node, Value acc,
                                 Value multiplier, Value zeroPoint,
                                 Type target) {
  Value shifted;
  Value result = requantize(node, acc, multiplier, zeroPoint, target, &shifted);
  if (result && (!zeroPoint || tensorType(zeroPoint).getNumElements() == 1))
    node.getState().quantizedShifts[result] = {shifted, zeroPoint};
  return result;
}

/// x_scale * w_scale / y_scale, computed in the scales' type (as ONNX's
/// reference does), then in f32. `alignW` places a per-channel w_scale.
static Value requantMultiplier(NodeImporter &node, Value xScale, Value wScale,
                               Value yScale, function_ref<Value(Value)> alignX,
                               function_ref<Value(Value)> alignW) {
  if (failed(checkScale(node, xScale, "the first operand's scale")) ||
      failed(checkScale(node, wScale, "the second operand's scale")) ||
      failed(checkScale(node, yScale, "the output's scale")))
    return {};
  Type scaleType = elementType(xScale);
  if (!isa<FloatType>(scaleType) || elementType(wScale) != scaleType ||
      elementType(yScale) != scaleType) {
    node.emitError() << "the scales must share one float type, got "
                     << elementType(xScale) << ", " << elementType(wScale)
                     << " and " << elementType(yScale);
    return {};
  }
  if (tensorType(yScale).getNumElements() != 1) {
    node.emitError() << "the output's scale must be a scalar, got "
                     << yScale.getType();
    return {};
  }
  Value x = alignX(xScale), w = alignW(wScale);
  Value y = node.create<graph::ReshapeOp>(yScale, ArrayRef<int64_t>{},
                                          /*allow_zero=*/false);
  if (!x || !w || !y)
    return {};
  // Constant scales (the usual case) make a constant multiplier, which the
  // graph passes lay out with the convolution's result.
  std::optional<std::vector<double>> xv = constantElements(x),
                                     wv = constantElements(w),
                                     yv = constantElements(y);
  if (scaleType.isF32() && xv && wv && yv && xv->size() == 1 &&
      yv->size() == 1) {
    std::vector<float> values(wv->size());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = (float(xv->front()) * float((*wv)[i])) / float(yv->front());
    return node.create<graph::ConstantOp>(cast<TypedAttr>(
        DenseElementsAttr::get(tensorType(w), ArrayRef<float>(values))));
  }
  Value product = node.create<graph::MulOp>(x, w);
  Value multiplier = product ? node.create<graph::DivOp>(product, y) : Value();
  return castTo(node, multiplier, Float32Type::get(node.getContext()));
}

/// A 1-D per-row (axis rank-2) or per-column (axis rank-1) parameter of a
/// matmul operand of `shape`, or a scalar, made broadcastable.
static Value alignMatMulParameter(NodeImporter &node, Value value,
                                  ArrayRef<int64_t> shape, bool rows) {
  int64_t rank = shape.size();
  if (tensorType(value).getNumElements() == 1 || rank < 2)
    return alignQuantParameter(node, value, shape, 0, 0);
  return alignQuantParameter(node, value, shape, rows ? rank - 2 : rank - 1, 0);
}

/// MatMulInteger (opset 10): (A - a_zero_point) x (B - b_zero_point) in
/// int32; a_zero_point per row of A or a scalar, b_zero_point per column of
/// B or a scalar.
static LogicalResult importMatMulInteger(NodeImporter &node) {
  Value a = node.getInput(0), b = node.getInput(1);
  if (!a || !b)
    return node.emitError() << "needs inputs A and B";
  int64_t rankA = tensorType(a).getRank(), rankB = tensorType(b).getRank();
  Value lhs = shiftedOperand(node, a, node.getInput(2),
                             rankA >= 2 ? rankA - 2 : -1, "A");
  Value rhs = shiftedOperand(node, b, node.getInput(3), rankB - 1, "B");
  Value product = lhs && rhs ? node.create<graph::MatMulOp>(lhs, rhs) : Value();
  return node.setResults(
      castTo(node, product, IntegerType::get(node.getContext(), 32)));
}

/// QLinearMatMul (opset 10; opset 21 adds f16 and bf16 scales): the matmul
/// of the shifted operands, requantised to y's scale and zero point.
static LogicalResult importQLinearMatMul(NodeImporter &node) {
  Value a = node.getInput(0), aScale = node.getInput(1),
        aZero = node.getInput(2), b = node.getInput(3),
        bScale = node.getInput(4), bZero = node.getInput(5),
        yScale = node.getInput(6), yZero = node.getInput(7);
  if (!a || !aScale || !b || !bScale || !yScale)
    return node.emitError() << "needs a, a_scale, b, b_scale and y_scale";
  int64_t rankA = tensorType(a).getRank(), rankB = tensorType(b).getRank();
  Value lhs = shiftedOperand(node, a, aZero, rankA >= 2 ? rankA - 2 : -1, "a");
  Value rhs = shiftedOperand(node, b, bZero, rankB - 1, "b");
  Value acc = lhs && rhs ? node.create<graph::MatMulOp>(lhs, rhs) : Value();
  if (!acc)
    return failure();
  Value multiplier = requantMultiplier(
      node, aScale, bScale, yScale,
      [&](Value v) {
        return alignMatMulParameter(node, v, tensorType(a).getShape(), true);
      },
      [&](Value v) {
        return alignMatMulParameter(node, v, tensorType(b).getShape(), false);
      });
  if (!multiplier)
    return failure();
  if (yZero && !isByte(elementType(yZero)))
    return node.emitError()
           << "y_zero_point must be int8 or uint8, got " << elementType(yZero);
  Type target = yZero ? elementType(yZero) : elementType(a);
  return node.setResults(
      requantizeAndRecord(node, acc, multiplier, yZero, target));
}

/// ConvInteger (opset 10): the convolution of (x - x_zero_point) and
/// (w - w_zero_point) in int32, w_zero_point a scalar or one per output
/// channel; padding is the zero point (0 once shifted).
static LogicalResult importConvInteger(NodeImporter &node) {
  Value x = node.getInput(0), w = node.getInput(1);
  if (!x || !w)
    return node.emitError() << "needs inputs x and w";
  Value input = shiftedOperand(node, x, node.getInput(2), -1, "x");
  Value weight = shiftedOperand(node, w, node.getInput(3), 0, "w");
  if (!input || !weight)
    return failure();
  FailureOr<Value> conv =
      createConvFromAttributes(node, input, weight, /*bias=*/Value());
  if (failed(conv))
    return failure();
  return node.setResults(
      castTo(node, *conv, IntegerType::get(node.getContext(), 32)));
}

/// QLinearConv (opset 10): the convolution of the shifted operands plus the
/// int32 bias, requantised; w_scale and w_zero_point are scalars or one per
/// output channel.
static LogicalResult importQLinearConv(NodeImporter &node) {
  Value x = node.getInput(0), xScale = node.getInput(1),
        xZero = node.getInput(2), w = node.getInput(3),
        wScale = node.getInput(4), wZero = node.getInput(5),
        yScale = node.getInput(6), yZero = node.getInput(7),
        bias = node.getInput(8);
  if (!x || !xScale || !w || !wScale || !yScale)
    return node.emitError() << "needs x, x_scale, w, w_scale and y_scale";
  Value input = shiftedOperand(node, x, xZero, -1, "x");
  Value weight = shiftedOperand(node, w, wZero, 0, "w");
  if (!input || !weight)
    return failure();
  if (bias && !elementType(bias).isInteger(32))
    return node.emitError()
           << "the bias must be int32, got " << elementType(bias);
  FailureOr<Value> conv =
      createConvFromAttributes(node, input, weight, integersAsF32(node, bias));
  if (failed(conv))
    return failure();
  ArrayRef<int64_t> outShape = tensorType(*conv).getShape();
  Value multiplier = requantMultiplier(
      node, xScale, wScale, yScale,
      [&](Value v) {
        if (tensorType(v).getNumElements() != 1) {
          node.emitError() << "x_scale must be a scalar, got " << v.getType();
          return Value();
        }
        return alignQuantParameter(node, v, outShape, 0, 0);
      },
      [&](Value v) { return alignQuantParameter(node, v, outShape, 1, 0); });
  if (!multiplier)
    return failure();
  if (yZero && !isByte(elementType(yZero)))
    return node.emitError()
           << "y_zero_point must be int8 or uint8, got " << elementType(yZero);
  Type target = yZero ? elementType(yZero) : elementType(x);
  return node.setResults(
      requantizeAndRecord(node, *conv, multiplier, yZero, target));
}

//===----------------------------------------------------------------------===//
// QDQ models: DequantizeLinear -> Conv / MatMul / Gemm -> QuantizeLinear
//===----------------------------------------------------------------------===//
//
// The DequantizeLinear of an activation and of a weight before a Conv,
// MatMul or Gemm, and the QuantizeLinear after it (through Relu and Clip),
// import as the QLinear form: the product of the shifted integers,
// requantised once. That is what onnxruntime runs for such a model, and it
// is exact where the float form rounds every product.

/// The dequantized activation (per tensor, 8-bit) behind `value`.
static const DequantizedValue *dequantizedActivation(NodeImporter &node,
                                                     Value value) {
  auto it = node.getState().dequantized.find(value);
  if (it == node.getState().dequantized.end() || it->second.axis >= 0 ||
      !isByte(elementType(it->second.integer)))
    return nullptr;
  return &it->second;
}

/// The dequantized constant weight (8-bit, per tensor or along `axis`)
/// behind `value`.
static const DequantizedValue *dequantizedWeight(NodeImporter &node,
                                                 Value value, int64_t axis) {
  auto it = node.getState().dequantized.find(value);
  if (it == node.getState().dequantized.end())
    return nullptr;
  const DequantizedValue &w = it->second;
  if (!isByte(elementType(w.integer)) || (w.axis >= 0 && w.axis != axis) ||
      !isConstant(w.integer))
    return nullptr;
  return &w;
}

/// The int32 bias behind `value` when its scale is the input's times the
/// weight's (`channels` of them) and its zero point 0, as quantisers write
/// it; null otherwise.
static Value quantizedBias(NodeImporter &node, Value value,
                           const DequantizedValue &input,
                           const DequantizedValue &weight, int64_t channels) {
  auto it = node.getState().dequantized.find(value);
  if (it == node.getState().dequantized.end())
    return {};
  const DequantizedValue &b = it->second;
  std::optional<std::vector<double>> scale = constantElements(b.scale);
  std::optional<std::vector<double>> inScale = constantElements(input.scale);
  std::optional<std::vector<double>> wScale = constantElements(weight.scale);
  if (!elementType(b.integer).isSignlessInteger(32) || !scale || !inScale ||
      !wScale || tensorType(b.integer).getRank() != 1 ||
      tensorType(b.integer).getDimSize(0) != channels)
    return {};
  if (b.zeroPoint) {
    std::optional<std::vector<double>> zp = constantElements(b.zeroPoint);
    if (!zp || llvm::any_of(*zp, [](double v) { return v != 0.0; }))
      return {};
  }
  for (int64_t c = 0; c < channels; ++c) {
    double expected =
        float((*inScale)[0]) * float((*wScale)[wScale->size() == 1 ? 0 : c]);
    double actual = (*scale)[scale->size() == 1 ? 0 : c];
    if (std::abs(actual - expected) > 1e-6 * std::abs(expected))
      return {};
  }
  return integersAsF32(node, b.integer);
}

/// `acc * inputScale * weightScale`, recorded as an Accumulation.
static Value recordAccumulation(NodeImporter &node, Value acc, Value inputScale,
                                Value weightScale) {
  Value scale = inputScale && weightScale
                    ? node.create<graph::MulOp>(inputScale, weightScale)
                    : Value();
  Value result = scale ? node.create<graph::MulOp>(acc, scale) : Value();
  if (result)
    node.getState().accumulations[result] = {acc, inputScale, weightScale};
  return result;
}

Value kiln::createQuantizedConv(NodeImporter &node, Value input, Value weight,
                                Value bias) {
  const DequantizedValue *x = dequantizedActivation(node, input);
  const DequantizedValue *w = x ? dequantizedWeight(node, weight, 0) : nullptr;
  if (!w || tensorType(weight).getRank() < 3)
    return {};
  int64_t filters = tensorType(weight).getDimSize(0);
  Value biasValue;
  if (bias && !(biasValue = quantizedBias(node, bias, *x, *w, filters)))
    return {};
  Value xs = shiftedOperand(node, x->integer, x->zeroPoint, -1, "x");
  Value ws = shiftedOperand(node, w->integer, w->zeroPoint, 0, "w");
  if (!xs || !ws)
    return {};
  FailureOr<Value> acc = createConvFromAttributes(node, xs, ws, biasValue);
  if (failed(acc))
    return {};
  ArrayRef<int64_t> shape = tensorType(*acc).getShape();
  return recordAccumulation(node, *acc,
                            alignQuantParameter(node, x->scale, shape, 0, 0),
                            alignQuantParameter(node, w->scale, shape, 1, 0));
}

Value kiln::createQuantizedMatMul(NodeImporter &node, Value lhs, Value rhs,
                                  Value bias, bool transposeRhs) {
  const DequantizedValue *a = dequantizedActivation(node, lhs);
  if (!a || tensorType(rhs).getRank() != 2 || tensorType(lhs).getRank() < 2)
    return {};
  // The weight's output columns: its axis 1, or 0 when it is transposed.
  int64_t columnAxis = transposeRhs ? 0 : 1;
  const DequantizedValue *b = dequantizedWeight(node, rhs, columnAxis);
  if (!b)
    return {};
  int64_t columns = tensorType(rhs).getDimSize(columnAxis);
  Value biasValue;
  if (bias && !(biasValue = quantizedBias(node, bias, *a, *b, columns)))
    return {};
  Value as = shiftedOperand(node, a->integer, a->zeroPoint, -1, "A");
  Value bs = shiftedOperand(node, b->integer, b->zeroPoint, columnAxis, "B");
  if (bs && transposeRhs)
    bs = node.createFolded<graph::TransposeOp>(bs, ArrayRef<int64_t>{1, 0});
  Value acc = as && bs ? node.create<graph::MatMulOp>(as, bs) : Value();
  if (acc && biasValue)
    acc = node.create<graph::AddOp>(acc, biasValue);
  if (!acc)
    return {};
  ArrayRef<int64_t> shape = tensorType(acc).getShape();
  Value weightScale = b->scale;
  if (tensorType(weightScale).getNumElements() != 1)
    weightScale =
        alignQuantParameter(node, weightScale, shape, shape.size() - 1, 0);
  else
    weightScale = alignQuantParameter(node, weightScale, shape, 0, 0);
  return recordAccumulation(
      node, acc, alignQuantParameter(node, a->scale, shape, 0, 0), weightScale);
}

/// A sum of two dequantized activations (per tensor, 8-bit): a QDQ Add.
static bool isQuantizedSum(NodeImporter &node, Value value) {
  auto add = value.getDefiningOp<graph::AddOp>();
  return add && add->getNumOperands() == 2 &&
         dequantizedActivation(node, add->getOperand(0)) &&
         dequantizedActivation(node, add->getOperand(1));
}

/// QuantizeLinear (per tensor, to 8 bits) of an Accumulation or of a sum
/// of two dequantized activations, through Relu and Clip (graph.relu, and
/// graph.max and graph.min with a constant), as onnxruntime's QLinearConv
/// and QLinearAdd compute it:
///   round(acc * (input scale * weight scale / scale)) + zero point,
///   round(a * (sa / scale) + b * (sb / scale) + (zero point - ...)),
/// then the bounds quantised (a monotonic map commutes with a clamp). Null
/// where `x` is neither.
static Value requantizeAccumulation(NodeImporter &node, Value x, Value scale,
                                    Value zeroPoint, Type target) {
  if (!isByte(target) || tensorType(scale).getNumElements() != 1 ||
      !elementType(scale).isF32())
    return {};
  // The bounds from the outermost in: (is a lower bound, value).
  SmallVector<std::pair<bool, double>> bounds;
  Value value = x;
  auto &accumulations = node.getState().accumulations;
  while (!accumulations.count(value) && !isQuantizedSum(node, value)) {
    Operation *def = value.getDefiningOp();
    if (isa_and_nonnull<graph::ReluOp>(def)) {
      bounds.push_back({true, 0.0});
    } else if (isa_and_nonnull<graph::MaxOp, graph::MinOp>(def) &&
               def->getNumOperands() == 2) {
      std::optional<std::vector<double>> bound =
          constantElements(def->getOperand(1));
      if (!bound || bound->size() != 1)
        return {};
      bounds.push_back({isa<graph::MaxOp>(def), bound->front()});
    } else {
      return {};
    }
    value = def->getOperand(0);
  }
  std::optional<std::vector<double>> ys = constantElements(scale);
  std::optional<std::vector<double>> zp =
      zeroPoint ? constantElements(zeroPoint) : std::vector<double>{0.0};
  if (!bounds.empty() && (!ys || !zp || zp->size() != 1))
    return {};
  Type f32 = Float32Type::get(node.getContext());
  Value zpf;
  if (zeroPoint)
    zpf = node.create<graph::ReshapeOp>(castTo(node, zeroPoint, f32),
                                        ArrayRef<int64_t>{},
                                        /*allow_zero=*/false);
  // The result q, and t = q - zero point in f32.
  Value result, shifted;
  if (accumulations.count(value)) {
    Accumulation accumulation = accumulations.lookup(value);
    Value multiplier = requantMultiplier(
        node, accumulation.inputScale, accumulation.weightScale, scale,
        [](Value v) { return v; }, [](Value v) { return v; });
    result = multiplier ? requantize(node, accumulation.acc, multiplier,
                                     zeroPoint, target, &shifted)
                        : Value();
  } else {
    // sum(operand * (s / scale)) + (zero point - sum(z * (s / scale))): the
    // zero points folded into one constant, as onnxruntime's kernel does.
    Operation *add = value.getDefiningOp();
    Value outScale = node.create<graph::ReshapeOp>(scale, ArrayRef<int64_t>{},
                                                   /*allow_zero=*/false);
    Value sum, offset;
    if (zeroPoint)
      offset = node.create<graph::ReshapeOp>(castTo(node, zeroPoint, f32),
                                             ArrayRef<int64_t>{},
                                             /*allow_zero=*/false);
    for (Value operand : add->getOperands()) {
      const DequantizedValue *d = dequantizedActivation(node, operand);
      Value s = node.create<graph::ReshapeOp>(castTo(node, d->scale, f32),
                                              ArrayRef<int64_t>{},
                                              /*allow_zero=*/false);
      Value ratio =
          s && outScale ? node.create<graph::DivOp>(s, outScale) : Value();
      // The integers in f32 (from the recorded shift, where there is one).
      Value integers;
      if (Value t = recordedShift(node, d->integer, d->zeroPoint))
        integers = d->zeroPoint
                       ? node.create<graph::AddOp>(
                             t, node.create<graph::ReshapeOp>(
                                    castTo(node, d->zeroPoint, f32),
                                    ArrayRef<int64_t>{}, /*allow_zero=*/false))
                       : t;
      else
        integers = castTo(node, d->integer, f32);
      Value term = ratio && integers
                       ? node.create<graph::MulOp>(integers, ratio)
                       : Value();
      if (!term)
        return {};
      sum = sum ? node.create<graph::AddOp>(sum, term) : term;
      if (d->zeroPoint) {
        Value z = node.create<graph::MulOp>(
            node.create<graph::ReshapeOp>(castTo(node, d->zeroPoint, f32),
                                          ArrayRef<int64_t>{},
                                          /*allow_zero=*/false),
            ratio);
        offset = offset ? node.create<graph::SubOp>(offset, z)
                        : node.create<graph::NegOp>(z);
      }
      if (!sum || (d->zeroPoint && !offset))
        return {};
    }
    if (offset)
      sum = node.create<graph::AddOp>(sum, offset);
    // The zero point is in the sum: q itself comes out, and t = q - zp.
    result =
        sum ? quantizeToInteger(node, sum, Value(), target, &shifted) : Value();
    if (result && zpf)
      shifted = node.create<graph::SubOp>(shifted, zpf);
  }
  if (!result || !shifted)
    return {};
  if (!bounds.empty()) {
    // The bounds on t, innermost first, then q = t + zero point.
    bool isUnsigned = target.isUnsignedInteger();
    for (auto [lower, bound] : llvm::reverse(bounds)) {
      double q =
          std::nearbyint(float(bound) / float(ys->front())) + zp->front();
      q = std::clamp(q, isUnsigned ? 0.0 : -128.0, isUnsigned ? 255.0 : 127.0);
      Value limit = createScalar(node, f32, q - zp->front());
      shifted = lower ? node.create<graph::MaxOp>(ValueRange{shifted, limit})
                      : node.create<graph::MinOp>(ValueRange{shifted, limit});
      if (!shifted)
        return {};
    }
    result = castTo(
        node, zpf ? node.create<graph::AddOp>(shifted, zpf) : shifted, target);
  }
  if (result)
    node.getState().quantizedShifts[result] = {shifted, zeroPoint};
  return result;
}

//===----------------------------------------------------------------------===//
// onnxruntime's quantised operators (com.microsoft): QLinearAdd, QLinearMul,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat,
// QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QGemm
//===----------------------------------------------------------------------===//
//
// What onnxruntime's quantize_static writes in its QOperator format, each
// the float operator between a dequantisation of its inputs and a
// quantisation of its output (per tensor), as onnxruntime defines them.

/// (x - zero_point) * scale in f32, scale and zero point per tensor.
static Value dequantizeTensor(NodeImporter &node, Value x, Value scale,
                              Value zeroPoint, StringRef what) {
  if (!x || !scale) {
    node.emitError() << "needs " << what << " and its scale";
    return {};
  }
  if (tensorType(scale).getNumElements() != 1) {
    node.emitError() << "the scale of " << what << " must be a scalar, got "
                     << scale.getType();
    return {};
  }
  if (failed(checkScale(node, scale, Twine("the scale of ", what).str())))
    return {};
  Value shifted = shiftedOperand(node, x, zeroPoint, -1, what);
  Value s = node.create<graph::ReshapeOp>(
      castTo(node, scale, Float32Type::get(node.getContext())),
      ArrayRef<int64_t>{}, /*allow_zero=*/false);
  Value result = shifted && s ? node.create<graph::MulOp>(shifted, s) : Value();
  if (result && elementType(scale).isF32())
    node.getState().dequantized[result] = {x, scale, zeroPoint, -1};
  return result;
}

/// round(value / scale) + zero_point, saturated to the zero point's type
/// (else `fallback`), scale and zero point per tensor.
static Value quantizeTensor(NodeImporter &node, Value value, Value scale,
                            Value zeroPoint, Type fallback) {
  if (!value)
    return {};
  if (!scale || tensorType(scale).getNumElements() != 1) {
    node.emitError() << "needs a scalar output scale";
    return {};
  }
  if (failed(checkScale(node, scale, "the output's scale")))
    return {};
  Type target = zeroPoint ? elementType(zeroPoint) : fallback;
  if (!isByte(target)) {
    node.emitError() << "the output's zero point must be int8 or uint8, got "
                     << target;
    return {};
  }
  MLIRContext *ctx = node.getContext();
  Value s = node.create<graph::ReshapeOp>(
      castTo(node, scale, Float32Type::get(ctx)), ArrayRef<int64_t>{},
      /*allow_zero=*/false);
  Value scaled = s ? node.create<graph::DivOp>(value, s) : Value();
  Value zp;
  if (zeroPoint) {
    zp = node.create<graph::ReshapeOp>(
        castTo(node, zeroPoint, IntegerType::get(ctx, 32)), ArrayRef<int64_t>{},
        /*allow_zero=*/false);
    if (!zp)
      return {};
  }
  Value shifted;
  Value result =
      scaled ? quantizeToInteger(node, scaled, zp, target, &shifted) : Value();
  if (result)
    node.getState().quantizedShifts[result] = {shifted, zeroPoint};
  return result;
}

/// QLinearAdd and QLinearMul: A, A_scale, A_zero_point, B, B_scale,
/// B_zero_point, C_scale, C_zero_point; numpy broadcasting.
template <typename OpTy>
static LogicalResult importQLinearBinary(NodeImporter &node) {
  Value a = dequantizeTensor(node, node.getInput(0), node.getInput(1),
                             node.getInput(2), "A");
  Value b = a ? dequantizeTensor(node, node.getInput(3), node.getInput(4),
                                 node.getInput(5), "B")
              : Value();
  Value c = a && b ? node.create<OpTy>(a, b) : Value();
  if (!c)
    return failure();
  // A sum requantises as onnxruntime's kernel does (each addend scaled by
  // its scale over C's).
  Value cScale = node.getInput(6), cZero = node.getInput(7);
  if (std::is_same_v<OpTy, graph::AddOp> && cScale)
    if (Value fused = requantizeAccumulation(
            node, c, cScale, cZero,
            cZero ? elementType(cZero) : elementType(node.getInput(0))))
      return node.setResults(fused);
  return node.setResults(
      quantizeTensor(node, c, cScale, cZero, elementType(node.getInput(0))));
}

/// QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale,
/// y_zero_point; the mean over the spatial dimensions (NCHW..., or NHWC...
/// with channels_last).
static LogicalResult importQLinearGlobalAveragePool(NodeImporter &node) {
  Value x = dequantizeTensor(node, node.getInput(0), node.getInput(1),
                             node.getInput(2), "X");
  bool channelsLast = node.getInt("channels_last", 0) != 0;
  if (!x || node.hasFailed())
    return failure();
  int64_t rank = tensorType(x).getRank();
  if (rank < 3)
    return node.emitError() << "X must have rank >= 3, got " << x.getType();
  SmallVector<int64_t> axes =
      channelsLast ? trailingAxes(1, rank - 1) : trailingAxes(2, rank);
  Value mean = node.create<graph::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  return node.setResults(quantizeTensor(node, mean, node.getInput(3),
                                        node.getInput(4),
                                        elementType(node.getInput(0))));
}

/// QLinearAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point;
/// AveragePool's attributes (NCHW; channels_last is not supported).
static LogicalResult importQLinearAveragePool(NodeImporter &node) {
  Value x = dequantizeTensor(node, node.getInput(0), node.getInput(1),
                             node.getInput(2), "X");
  bool channelsLast = node.getInt("channels_last", 0) != 0;
  if (!x || node.hasFailed())
    return failure();
  if (channelsLast)
    return node.emitError() << "channels_last is not supported";
  Value pooled = createAveragePoolFromAttributes(node, x);
  if (!pooled)
    return failure();
  return node.setResults(quantizeTensor(node, pooled, node.getInput(3),
                                        node.getInput(4),
                                        elementType(node.getInput(0))));
}

/// QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
/// per input; `axis`.
static LogicalResult importQLinearConcat(NodeImporter &node) {
  unsigned count = node.getNumInputs();
  if (count < 5 || (count - 2) % 3 != 0)
    return node.emitError() << "needs Y_scale, Y_zero_point and triples "
                               "(X, X_scale, X_zero_point), got "
                            << count << " inputs";
  int64_t axisAttr = node.getInt("axis", 0);
  if (node.hasFailed())
    return failure();
  SmallVector<Value> parts;
  for (unsigned i = 2; i < count; i += 3) {
    Value part = dequantizeTensor(node, node.getInput(i), node.getInput(i + 1),
                                  node.getInput(i + 2), "an input");
    if (!part)
      return failure();
    parts.push_back(part);
  }
  FailureOr<int64_t> axis =
      normalizeAxis(node, axisAttr, tensorType(parts.front()).getRank());
  if (failed(axis))
    return failure();
  Value joined =
      node.create<graph::ConcatOp>(ValueRange(parts), uint64_t(*axis));
  return node.setResults(quantizeTensor(node, joined, node.getInput(0),
                                        node.getInput(1),
                                        elementType(node.getInput(2))));
}

/// QLinearLeakyRelu (`alpha`, default 0.01) and QLinearSigmoid: X, X_scale,
/// X_zero_point, Y_scale, Y_zero_point.
template <bool Leaky>
static LogicalResult importQLinearUnary(NodeImporter &node) {
  Value x = dequantizeTensor(node, node.getInput(0), node.getInput(1),
                             node.getInput(2), "X");
  float alpha = node.getFloat("alpha", 0.01f);
  if (!x || node.hasFailed())
    return failure();
  Value y = Leaky ? node.create<graph::LeakyReluOp>(
                        x, node.getBuilder().getF32FloatAttr(alpha))
                  : node.create<graph::SigmoidOp>(x);
  return node.setResults(quantizeTensor(node, y, node.getInput(3),
                                        node.getInput(4),
                                        elementType(node.getInput(0))));
}

/// QLinearSoftmax: X, X_scale, x_zero_point, y_scale, y_zero_point; `axis`
/// with the meaning of Softmax at opset `opset` (before 13: every axis from
/// `axis` on).
static LogicalResult importQLinearSoftmax(NodeImporter &node) {
  Value x = dequantizeTensor(node, node.getInput(0), node.getInput(1),
                             node.getInput(2), "X");
  int64_t axisAttr = node.getInt("axis", -1);
  int64_t opset = node.getInt("opset", 13);
  if (!x || node.hasFailed())
    return failure();
  int64_t rank = tensorType(x).getRank();
  FailureOr<int64_t> axis = normalizeAxis(node, axisAttr, rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> axes =
      opset < 13 ? trailingAxes(*axis, rank) : SmallVector<int64_t>{*axis};
  Value y = node.create<graph::SoftmaxOp>(x, axes);
  return node.setResults(quantizeTensor(node, y, node.getInput(3),
                                        node.getInput(4),
                                        elementType(node.getInput(0))));
}

/// QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32,
/// scaled by a_scale * b_scale), y_scale, y_zero_point; alpha, transA,
/// transB. Y = alpha * a_scale * b_scale * (A'B' + C), requantised when
/// y_scale is given, else float. b's scale and zero point are scalars or one
/// per output column.
static LogicalResult importQGemm(NodeImporter &node) {
  Value a = node.getInput(0), aScale = node.getInput(1),
        aZero = node.getInput(2), b = node.getInput(3),
        bScale = node.getInput(4), bZero = node.getInput(5),
        bias = node.getInput(6), yScale = node.getInput(7),
        yZero = node.getInput(8);
  if (!a || !aScale || !b || !bScale)
    return node.emitError() << "needs A, a_scale, B and b_scale";
  float alpha = node.getFloat("alpha", 1.0f);
  bool transA = node.getInt("transA", 0) != 0;
  bool transB = node.getInt("transB", 0) != 0;
  if (node.hasFailed())
    return failure();
  if (tensorType(a).getRank() != 2 || tensorType(b).getRank() != 2)
    return node.emitError() << "A and B must be matrices, got " << a.getType()
                            << " and " << b.getType();
  if (transA)
    a = node.create<graph::TransposeOp>(a, ArrayRef<int64_t>{1, 0});
  if (!a)
    return failure();
  Value lhs = shiftedOperand(node, a, aZero, -1, "A");
  // B shifted before its transpose, so that a constant B folds into a
  // float constant (its zero points are per output column: B's axis 0 when
  // transposed).
  Value rhs = shiftedOperand(node, b, bZero, transB ? 0 : 1, "B");
  if (rhs && transB)
    rhs = node.create<graph::TransposeOp>(rhs, ArrayRef<int64_t>{1, 0});
  Value acc = lhs && rhs ? node.create<graph::MatMulOp>(lhs, rhs) : Value();
  if (acc && bias) {
    if (!elementType(bias).isInteger(32))
      return node.emitError() << "C must be int32, got " << elementType(bias);
    acc = node.create<graph::AddOp>(
        acc, castTo(node, bias, Float32Type::get(node.getContext())));
  }
  if (!acc)
    return failure();
  ArrayRef<int64_t> shape = tensorType(acc).getShape();
  Value one = createScalar(node, elementType(aScale), 1.0);
  Value multiplier = requantMultiplier(
      node, aScale, bScale, yScale ? yScale : one,
      [&](Value v) {
        if (tensorType(v).getNumElements() != 1) {
          node.emitError() << "a_scale must be a scalar, got " << v.getType();
          return Value();
        }
        return alignQuantParameter(node, v, shape, 0, 0);
      },
      [&](Value v) { return alignQuantParameter(node, v, shape, 1, 0); });
  if (multiplier && alpha != 1.0f)
    multiplier = node.create<graph::MulOp>(
        multiplier,
        createScalar(node, Float32Type::get(node.getContext()), alpha));
  if (!multiplier)
    return failure();
  if (!yScale)
    return node.setResults(node.create<graph::MulOp>(acc, multiplier));
  if (yZero && !isByte(elementType(yZero)))
    return node.emitError()
           << "y_zero_point must be int8 or uint8, got " << elementType(yZero);
  return node.setResults(requantizeAndRecord(
      node, acc, multiplier, yZero,
      yZero ? elementType(yZero) : elementType(node.getInput(0))));
}

void kiln::registerQuantizedImporters(NodeImporterRegistry &registry) {
  registry.add("ConvInteger", /*minOpset=*/10, importConvInteger);
  registry.add("DequantizeLinear", /*minOpset=*/10, importDequantizeLinear);
  registry.add("DynamicQuantizeLinear", /*minOpset=*/11,
               importDynamicQuantizeLinear);
  registry.add("MatMulInteger", /*minOpset=*/10, importMatMulInteger);
  registry.add("QLinearConv", /*minOpset=*/10, importQLinearConv);
  registry.add("QLinearMatMul", /*minOpset=*/10, importQLinearMatMul);
  registry.add("QuantizeLinear", /*minOpset=*/10, importQuantizeLinear);
  // onnxruntime's com.microsoft operators, at that domain's opset 1.
  registry.add("com.microsoft.QGemm", 1, importQGemm);
  registry.add("com.microsoft.QLinearAdd", 1,
               importQLinearBinary<graph::AddOp>);
  registry.add("com.microsoft.QLinearAveragePool", 1, importQLinearAveragePool);
  registry.add("com.microsoft.QLinearConcat", 1, importQLinearConcat);
  registry.add("com.microsoft.QLinearGlobalAveragePool", 1,
               importQLinearGlobalAveragePool);
  registry.add("com.microsoft.QLinearLeakyRelu", 1, importQLinearUnary<true>);
  registry.add("com.microsoft.QLinearMul", 1,
               importQLinearBinary<graph::MulOp>);
  registry.add("com.microsoft.QLinearSigmoid", 1, importQLinearUnary<false>);
  registry.add("com.microsoft.QLinearSoftmax", 1, importQLinearSoftmax);
}
