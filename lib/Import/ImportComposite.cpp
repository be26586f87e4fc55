//===- ImportComposite.cpp - Operators imported by decomposition ----------===//
//
// ONNX operators that Kiln has no graph op for and imports as a subgraph of
// existing ones, following each operator's ONNX function body:
// RMSNormalization, GroupNormalization, LpNormalization,
// MeanVarianceNormalization, RotaryEmbedding, CausalConvWithState,
// LinearAttention, Swish, SwiGLU, Shrink, NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss, Attention, Det and ai.onnx.preview's
// FlexAttention
// (the quantised operators are in ImportQuantized.cpp). No new op, no new
// lowering: the pieces are lowered as usual.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The element type named by a `stash_type` attribute (1: float32; anything
/// else: the input's own type, which Kiln only supports when it is a float).
static Type stashType(NodeImporter &node, Value input) {
  int64_t stash = node.getInt("stash_type", 1);
  if (stash == 1)
    return Float32Type::get(node.getContext());
  return elementType(input);
}

//===----------------------------------------------------------------------===//
// RMSNormalization
//===----------------------------------------------------------------------===//

/// RMSNormalization (opset 23): X / sqrt(mean(X^2) + epsilon) * scale, the
/// mean over the dimensions from `axis` on, computed in `stash_type`.
static LogicalResult importRMSNorm(NodeImporter &node) {
  Value input = node.getInput(0), scale = node.getInput(1);
  if (!input || !scale)
    return node.emitError() << "needs inputs X and scale";
  if (!isa<FloatType>(elementType(input)))
    return node.emitError() << "Kiln computes RMSNormalization on float "
                               "tensors only, got "
                            << elementType(input);
  int64_t rank = tensorType(input).getRank();
  int64_t axisAttr = node.getInt("axis", -1);
  float epsilon = node.getFloat("epsilon", 1e-5f);
  Type stash = stashType(node, input);
  if (node.hasFailed())
    return failure();
  FailureOr<int64_t> axis = normalizeAxis(node, axisAttr, rank);
  if (failed(axis))
    return failure();
  Value x = castTo(node, input, stash);
  Value squared = node.create<graph::MulOp>(x, x);
  if (!squared)
    return failure();
  Value meanSquare = node.create<graph::ReduceMeanOp>(
      squared, trailingAxes(*axis, rank), /*keepdims=*/true);
  Value eps = createScalar(node, stash, epsilon);
  if (!meanSquare || !eps)
    return failure();
  Value shifted = node.create<graph::AddOp>(meanSquare, eps);
  Value rms = shifted ? node.create<graph::SqrtOp>(shifted) : Value();
  Value inv = rms ? node.create<graph::ReciprocalOp>(rms) : Value();
  Value normalized = inv ? node.create<graph::MulOp>(x, inv) : Value();
  if (!normalized)
    return failure();
  normalized = castTo(node, normalized, elementType(input));
  return node.setResults(node.create<graph::MulOp>(normalized, scale));
}

//===----------------------------------------------------------------------===//
// GroupNormalization, LpNormalization, MeanVarianceNormalization
//===----------------------------------------------------------------------===//

/// GroupNormalization (opset 18; opset 21 takes scale and bias per channel
/// and adds stash_type): X is normalised over each group of C/num_groups
/// channels and the spatial dimensions, in `stash_type`.
static LogicalResult importGroupNorm(NodeImporter &node) {
  Value input = node.getInput(0), scale = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !scale || !bias)
    return node.emitError() << "needs inputs X, scale and bias";
  RankedTensorType type = tensorType(input);
  if (!isa<FloatType>(type.getElementType()))
    return node.emitError() << "needs a float input, got " << type;
  if (type.getRank() < 3 || !type.hasStaticShape())
    return node.emitError() << "needs a static input of rank >= 3 (N, C, "
                               "spatial...), got "
                            << type;
  int64_t groups = node.getInt("num_groups", 0);
  float epsilon = node.getFloat("epsilon", 1e-5f);
  Type stash = node.getOpset() >= 21 ? stashType(node, input)
                                     : Type(type.getElementType());
  if (node.hasFailed())
    return failure();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t channels = shape[1];
  if (groups <= 0 || channels % groups != 0)
    return node.emitError() << "num_groups must be positive and divide the "
                            << channels << " channels, got " << groups;
  // Scale and bias: one per channel (opset 21) or per group (opset 18).
  int64_t perParam = node.getOpset() >= 21 ? channels : groups;
  for (Value v : {scale, bias})
    if (tensorType(v).getRank() != 1 || tensorType(v).getDimSize(0) != perParam)
      return node.emitError() << "scale and bias need " << perParam
                              << " elements, got " << v.getType();
  int64_t spatial = type.getNumElements() / (shape[0] * channels);
  SmallVector<int64_t> grouped = {shape[0], groups,
                                  channels / groups * spatial};
  Value x = castTo(node, input, stash);
  x = node.create<graph::ReshapeOp>(x, grouped, /*allow_zero=*/false);
  if (!x)
    return failure();
  Value mean = node.create<graph::ReduceMeanOp>(x, ArrayRef<int64_t>{2}, true);
  Value centered = mean ? node.create<graph::SubOp>(x, mean) : Value();
  Value squared =
      centered ? node.create<graph::MulOp>(centered, centered) : Value();
  Value variance = squared ? node.create<graph::ReduceMeanOp>(
                                 squared, ArrayRef<int64_t>{2}, true)
                           : Value();
  Value shifted = variance ? node.create<graph::AddOp>(
                                 variance, createScalar(node, stash, epsilon))
                           : Value();
  Value stdDev = shifted ? node.create<graph::SqrtOp>(shifted) : Value();
  Value y = stdDev ? node.create<graph::DivOp>(centered, stdDev) : Value();
  if (!y)
    return failure();
  y = castTo(node, y, type.getElementType());
  SmallVector<int64_t> paramShape(type.getRank(), 1);
  if (perParam == groups) {
    // Opset 18: the per-group parameters apply to the grouped view.
    paramShape.assign({1, groups, 1});
  } else {
    y = node.create<graph::ReshapeOp>(y, shape, /*allow_zero=*/false);
    paramShape[1] = channels;
  }
  Value s = node.create<graph::ReshapeOp>(scale, paramShape, false);
  Value b = node.create<graph::ReshapeOp>(bias, paramShape, false);
  if (!y || !s || !b)
    return failure();
  y = node.create<graph::MulOp>(y, s);
  y = y ? node.create<graph::AddOp>(y, b) : Value();
  if (y && perParam == groups)
    y = node.create<graph::ReshapeOp>(y, shape, /*allow_zero=*/false);
  return node.setResults(y);
}

/// LpNormalization (opset 1): x / ||x||_p along `axis`, p 1 or 2; where the
/// norm is 0 the result is 0.
static LogicalResult importLpNorm(NodeImporter &node) {
  Value x = node.getInput(0);
  if (!x || !isa<FloatType>(elementType(x)))
    return node.emitError() << "needs a float input";
  int64_t p = node.getInt("p", 2);
  int64_t axisAttr = node.getInt("axis", -1);
  if (node.hasFailed())
    return failure();
  if (p != 1 && p != 2)
    return node.emitError() << "p must be 1 or 2, got " << p;
  FailureOr<int64_t> axis =
      normalizeAxis(node, axisAttr, tensorType(x).getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> axes(*axis);
  Value norm = p == 1 ? node.create<graph::ReduceL1Op>(x, axes, true)
                      : node.create<graph::ReduceL2Op>(x, axes, true);
  if (!norm)
    return failure();
  Type element = elementType(x);
  Value zero = createScalar(node, element, 0.0);
  Value isZero = node.create<graph::EqualOp>(norm, zero);
  Value quotient = node.create<graph::DivOp>(x, norm);
  if (!isZero || !quotient)
    return failure();
  return node.setResults(node.create<graph::WhereOp>(isZero, zero, quotient));
}

/// MeanVarianceNormalization (opset 9): (X - mean) / (sqrt(mean(X^2) -
/// mean^2) + 1e-9) over `axes` (default N, H, W), as its ONNX function.
static LogicalResult importMeanVarianceNorm(NodeImporter &node) {
  Value x = node.getInput(0);
  if (!x || !isa<FloatType>(elementType(x)))
    return node.emitError() << "needs a float input";
  int64_t rank = tensorType(x).getRank();
  SmallVector<int64_t> axes = node.getInts("axes", {0, 2, 3});
  if (node.hasFailed())
    return failure();
  for (int64_t &axis : axes) {
    FailureOr<int64_t> normalized = normalizeAxis(node, axis, rank);
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  llvm::sort(axes);
  Value mean = node.create<graph::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value square = node.create<graph::MulOp>(x, x);
  Value squareMean =
      square ? node.create<graph::ReduceMeanOp>(square, axes, true) : Value();
  Value meanSquare = mean ? node.create<graph::MulOp>(mean, mean) : Value();
  Value variance = squareMean && meanSquare
                       ? node.create<graph::SubOp>(squareMean, meanSquare)
                       : Value();
  Value std = variance ? node.create<graph::SqrtOp>(variance) : Value();
  Value shifted = std ? node.create<graph::AddOp>(
                            std, createScalar(node, elementType(x), 1e-9))
                      : Value();
  Value centered = mean ? node.create<graph::SubOp>(x, mean) : Value();
  return node.setResults(centered && shifted
                             ? node.create<graph::DivOp>(centered, shifted)
                             : Value());
}

//===----------------------------------------------------------------------===//
// CausalConvWithState
//===----------------------------------------------------------------------===//

/// CausalConvWithState (opset 27): a causal depthwise 1-D convolution over
/// [past_state (or zeros), input] along time, with an optional SiLU, and the
/// last k - 1 positions of that sequence as the present state.
static LogicalResult importCausalConvWithState(NodeImporter &node) {
  Value input = node.getInput(0), weight = node.getInput(1),
        bias = node.getInput(2), past = node.getInput(3);
  if (!input || !weight)
    return node.emitError() << "needs inputs input and weight";
  std::string activation = node.getString("activation", "none");
  if (node.hasFailed())
    return failure();
  if (activation != "none" && activation != "silu" && activation != "swish")
    return node.emitError()
           << "activation '" << activation << "' is not none, silu or swish";
  RankedTensorType type = tensorType(input), wType = tensorType(weight);
  if (type.getRank() != 3 || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()) || wType.getRank() != 3 ||
      wType.getDimSize(0) != type.getDimSize(1) || wType.getDimSize(1) != 1)
    return node.emitError() << "needs a static float input [B, C, T] and a "
                               "weight [C, 1, k], got "
                            << type << " and " << wType;
  int64_t batch = type.getDimSize(0), channels = type.getDimSize(1);
  int64_t kernel = wType.getDimSize(2);
  Value padded = input;
  if (past) {
    SmallVector<int64_t> want = {batch, channels, kernel - 1};
    if (tensorType(past).getShape() != ArrayRef<int64_t>(want))
      return node.emitError()
             << "past_state must be " << graph::formatShape(want) << ", got "
             << past.getType();
    padded = node.create<graph::ConcatOp>(ValueRange{past, input}, uint64_t(2));
  } else if (kernel > 1) {
    Builder &b = node.getBuilder();
    padded = node.create<graph::PadOp>(
        input, b.getDenseI64ArrayAttr({0, 0, kernel - 1, 0, 0, 0}),
        b.getStringAttr("constant"), b.getF64FloatAttr(0.0));
  }
  if (!padded)
    return failure();
  Value conv = node.create<graph::ConvOp>(
      padded, weight, bias, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{0, 0},
      ArrayRef<int64_t>{1}, static_cast<uint64_t>(channels));
  if (!conv)
    return failure();
  if (activation != "none") {
    Value wide = castTo(node, conv, Float32Type::get(node.getContext()));
    Value gate = node.create<graph::SigmoidOp>(wide);
    conv = gate ? castTo(node, node.create<graph::MulOp>(wide, gate),
                         type.getElementType())
                : Value();
  }
  int64_t length = tensorType(padded).getDimSize(2);
  Value present = node.create<graph::SliceOp>(
      padded, ArrayRef<int64_t>{0, 0, length - (kernel - 1)},
      ArrayRef<int64_t>{batch, channels, length}, ArrayRef<int64_t>{1, 1, 1});
  if (!conv || !present)
    return failure();
  return node.setResults({conv, present});
}

//===----------------------------------------------------------------------===//
// LinearAttention
//===----------------------------------------------------------------------===//

/// LinearAttention (opset 27): the recurrence over time of a state S
/// [B, H_kv, d_k, d_v] (linear, gated, delta or gated_delta), read by the
/// queries: o_t = scale * q_t^T S_t; heads grouped for GQA. Unrolled over
/// the (static) sequence, in f32, as ONNX's reference computes it.
static LogicalResult importLinearAttention(NodeImporter &node) {
  Value query = node.getInput(0), key = node.getInput(1),
        value = node.getInput(2), past = node.getInput(3),
        decay = node.getInput(4), beta = node.getInput(5);
  if (!query || !key || !value)
    return node.emitError() << "needs query, key and value";
  int64_t qHeads = node.getInt("q_num_heads", 0);
  int64_t kvHeads = node.getInt("kv_num_heads", 0);
  float scaleAttr = node.getFloat("scale", 0.0f);
  std::string rule = node.getString("update_rule", "gated_delta");
  if (node.hasFailed())
    return failure();
  if (rule != "linear" && rule != "gated" && rule != "delta" &&
      rule != "gated_delta")
    return node.emitError() << "update_rule '" << rule
                            << "' is not linear, gated, delta or gated_delta";
  bool gating = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (gating != static_cast<bool>(decay) || delta != static_cast<bool>(beta))
    return node.emitError()
           << "update_rule '" << rule << "' " << (gating ? "needs" : "takes no")
           << " decay and " << (delta ? "needs" : "takes no") << " beta";
  if (qHeads <= 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
    return node.emitError() << "q_num_heads (" << qHeads
                            << ") must be a positive multiple of kv_num_heads ("
                            << kvHeads << ")";
  for (Value v : {query, key, value})
    if (tensorType(v).getRank() != 3 || !tensorType(v).hasStaticShape() ||
        !isa<FloatType>(elementType(v)))
      return node.emitError() << "query, key and value must be static float "
                                 "[B, T, H * D], got "
                              << v.getType();
  ArrayRef<int64_t> qShape = tensorType(query).getShape();
  int64_t batch = qShape[0], steps = qShape[1];
  int64_t dk = qShape[2] / qHeads;
  int64_t dv = tensorType(value).getDimSize(2) / kvHeads;
  int64_t group = qHeads / kvHeads;
  if (dk * qHeads != qShape[2] ||
      dv * kvHeads != tensorType(value).getDimSize(2) ||
      tensorType(key).getShape() !=
          ArrayRef<int64_t>{batch, steps, kvHeads * dk} ||
      tensorType(value).getDimSize(1) != steps)
    return node.emitError() << "query, key and value shapes do not match the "
                               "head counts: "
                            << query.getType() << ", " << key.getType() << ", "
                            << value.getType();
  if (steps > kMaxUnrolledIterations)
    return node.emitError()
           << "the sequence is " << steps << " long: Kiln unrolls at most "
           << kMaxUnrolledIterations << " steps";
  Type f32 = Float32Type::get(node.getContext());
  // [B, T, H * D] -> [B, H, T, D], in f32.
  auto heads = [&](Value v, int64_t h) -> Value {
    int64_t d = tensorType(v).getDimSize(2) / h;
    Value r = node.create<graph::ReshapeOp>(
        castTo(node, v, f32), ArrayRef<int64_t>{batch, steps, h, d}, false);
    return r ? node.create<graph::TransposeOp>(r, ArrayRef<int64_t>{0, 2, 1, 3})
             : Value();
  };
  Value q4 = heads(query, qHeads), k4 = heads(key, kvHeads),
        v4 = heads(value, kvHeads);
  Value decay4, beta4;
  if (decay) {
    int64_t last = tensorType(decay).getShape().back();
    if (tensorType(decay).getRank() != 3 ||
        (last != kvHeads && last != kvHeads * dk))
      return node.emitError() << "decay must be [B, T, H_kv] or [B, T, H_kv "
                                 "* d_k], got "
                              << decay.getType();
    decay4 = heads(decay, kvHeads);
    decay4 = decay4 ? node.create<graph::ExpOp>(decay4) : Value();
    if (!decay4)
      return failure();
  }
  if (beta) {
    int64_t last = tensorType(beta).getShape().back();
    if (tensorType(beta).getRank() != 3 || (last != kvHeads && last != 1))
      return node.emitError() << "beta must be [B, T, H_kv] or [B, T, 1], got "
                              << beta.getType();
    beta4 = heads(beta, last);
    if (!beta4)
      return failure();
  }
  SmallVector<int64_t> stateShape = {batch, kvHeads, dk, dv};
  Value state;
  if (past) {
    if (tensorType(past).getShape() != ArrayRef<int64_t>(stateShape))
      return node.emitError()
             << "past_state must be " << graph::formatShape(stateShape)
             << ", got " << past.getType();
    state = castTo(node, past, f32);
  } else {
    state = node.create<graph::ConstantOp>(cast<TypedAttr>(
        DenseElementsAttr::get(RankedTensorType::get(stateShape, f32), 0.0f)));
  }
  double scale = scaleAttr == 0.0f ? 1.0 / std::sqrt(double(dk)) : scaleAttr;
  Value scaleValue = createScalar(node, f32, scale);
  if (!q4 || !k4 || !v4 || !state)
    return failure();
  // Step t of a [B, H, T, D] tensor as `shape`.
  auto at = [&](Value v, int64_t t, ArrayRef<int64_t> shape) -> Value {
    ArrayRef<int64_t> full = tensorType(v).getShape();
    Value slice = node.create<graph::SliceOp>(
        v, ArrayRef<int64_t>{0, 0, t, 0},
        ArrayRef<int64_t>{full[0], full[1], t + 1, full[3]},
        ArrayRef<int64_t>{1, 1, 1, 1});
    return slice ? node.create<graph::ReshapeOp>(slice, shape, false) : Value();
  };
  SmallVector<Value> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    Value k = at(k4, t, {batch, kvHeads, 1, dk});
    Value v = at(v4, t, {batch, kvHeads, 1, dv});
    Value q = at(q4, t, {batch, kvHeads, group, dk});
    if (!k || !v || !q)
      return failure();
    if (gating) {
      int64_t width = tensorType(decay4).getDimSize(3);
      Value g = at(decay4, t, {batch, kvHeads, width, 1});
      state = g ? node.create<graph::MulOp>(state, g) : Value();
    }
    if (delta && state) {
      int64_t width = tensorType(beta4).getDimSize(1);
      Value retrieved = node.create<graph::MatMulOp>(k, state);
      Value b = at(beta4, t, {batch, width, 1, 1});
      Value diff =
          retrieved ? node.create<graph::SubOp>(v, retrieved) : Value();
      v = diff && b ? node.create<graph::MulOp>(b, diff) : Value();
    }
    // k_t (x) v_t: [B, H, d_k, 1] * [B, H, 1, d_v].
    Value column = node.create<graph::ReshapeOp>(
        k, ArrayRef<int64_t>{batch, kvHeads, dk, 1}, false);
    Value outer = column && v ? node.create<graph::MulOp>(column, v) : Value();
    state = outer && state ? node.create<graph::AddOp>(state, outer) : Value();
    // [B, H_kv, G, d_k] @ [B, H_kv, d_k, d_v] -> [B, H_q, 1, d_v].
    Value read = state ? node.create<graph::MatMulOp>(q, state) : Value();
    Value scaled = read ? node.create<graph::MulOp>(read, scaleValue) : Value();
    Value out =
        scaled ? node.create<graph::ReshapeOp>(
                     scaled, ArrayRef<int64_t>{batch, qHeads, 1, dv}, false)
               : Value();
    if (!out)
      return failure();
    outputs.push_back(out);
  }
  Value stacked =
      outputs.size() == 1
          ? outputs.front()
          : node.create<graph::ConcatOp>(ValueRange(outputs), uint64_t(2));
  Value output = stacked ? node.create<graph::TransposeOp>(
                               stacked, ArrayRef<int64_t>{0, 2, 1, 3})
                         : Value();
  output =
      output ? node.create<graph::ReshapeOp>(
                   output, ArrayRef<int64_t>{batch, steps, qHeads * dv}, false)
             : Value();
  if (!output)
    return failure();
  Type stateType = past ? elementType(past) : elementType(query);
  return node.setResults({castTo(node, output, elementType(query)),
                          castTo(node, state, stateType)});
}

//===----------------------------------------------------------------------===//
// Swish, SwiGLU, Shrink
//===----------------------------------------------------------------------===//

/// x * sigmoid(alpha * x).
static Value swish(NodeImporter &node, Value x, float alpha) {
  Value scaled = x;
  if (alpha != 1.0f)
    scaled =
        node.create<graph::MulOp>(x, createScalar(node, elementType(x), alpha));
  Value gate = scaled ? node.create<graph::SigmoidOp>(scaled) : Value();
  return gate ? node.create<graph::MulOp>(x, gate) : Value();
}

/// Swish (opset 24): x * sigmoid(alpha * x).
static LogicalResult importSwish(NodeImporter &node) {
  Value x = node.getInput(0);
  if (!x || !isa<FloatType>(elementType(x)))
    return node.emitError() << "needs a float input";
  float alpha = node.getFloat("alpha", 1.0f);
  if (node.hasFailed())
    return failure();
  return node.setResults(swish(node, x, alpha));
}

/// SwiGLU (opset 28): Swish(A, alpha) * B, A and B of one shape and type.
static LogicalResult importSwiGLU(NodeImporter &node) {
  Value a = node.getInput(0), b = node.getInput(1);
  if (!a || !b || !isa<FloatType>(elementType(a)))
    return node.emitError() << "needs float inputs A and B";
  if (a.getType() != b.getType())
    return node.emitError() << "A and B must have one shape and type, got "
                            << a.getType() << " and " << b.getType();
  float alpha = node.getFloat("alpha", 1.0f);
  if (node.hasFailed())
    return failure();
  Value gated = swish(node, a, alpha);
  return node.setResults(gated ? node.create<graph::MulOp>(gated, b) : Value());
}

/// Shrink (opset 9): x + bias below -lambd, x - bias above lambd, else 0.
static LogicalResult importShrink(NodeImporter &node) {
  Value x = node.getInput(0);
  if (!x)
    return node.emitError() << "needs an input";
  float lambd = node.getFloat("lambd", 0.5f);
  float bias = node.getFloat("bias", 0.0f);
  if (node.hasFailed())
    return failure();
  Type element = elementType(x);
  // Computed in f32 for integer inputs, cast back at the end.
  Type compute = isa<FloatType>(element)
                     ? element
                     : Type(Float32Type::get(node.getContext()));
  Value v = castTo(node, x, compute);
  Value low =
      node.create<graph::LessOp>(v, createScalar(node, compute, -lambd));
  Value high =
      node.create<graph::GreaterOp>(v, createScalar(node, compute, lambd));
  Value plus = node.create<graph::AddOp>(v, createScalar(node, compute, bias));
  Value minus = node.create<graph::SubOp>(v, createScalar(node, compute, bias));
  if (!low || !high || !plus || !minus)
    return failure();
  Value upper = node.create<graph::WhereOp>(high, minus,
                                            createScalar(node, compute, 0.0));
  Value result =
      upper ? node.create<graph::WhereOp>(low, plus, upper) : Value();
  return node.setResults(castTo(node, result, element));
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

/// RotaryEmbedding (opset 23), following its ONNX function: the first
/// rotary_embedding_dim features of each head rotate, as halves or as
/// interleaved pairs, by the position's cos and sin (gathered by
/// position_ids when given); the rest pass through.
static LogicalResult importRotaryEmbedding(NodeImporter &node) {
  Value x = node.getInput(0), cosCache = node.getInput(1),
        sinCache = node.getInput(2), positions = node.getInput(3);
  if (!x || !cosCache || !sinCache)
    return node.emitError() << "needs inputs X, cos_cache and sin_cache";
  bool interleaved = node.getInt("interleaved", 0) != 0;
  int64_t numHeads = node.getInt("num_heads", 0);
  int64_t rotaryDim = node.getInt("rotary_embedding_dim", 0);
  if (node.hasFailed())
    return failure();
  RankedTensorType type = tensorType(x);
  if (!type.hasStaticShape() || (type.getRank() != 3 && type.getRank() != 4))
    return node.emitError() << "X must have a static shape [batch, seq, "
                               "hidden] or [batch, heads, seq, head_size]";
  ArrayRef<int64_t> shape = type.getShape();
  int64_t batch = shape[0];
  int64_t seq = type.getRank() == 4 ? shape[2] : shape[1];
  int64_t heads = type.getRank() == 4 ? shape[1] : numHeads;
  if (heads <= 0 || (type.getRank() == 3 && shape[2] % heads != 0))
    return node.emitError()
           << "num_heads must divide the hidden size of a 3-D input";
  int64_t headSize = type.getRank() == 4 ? shape[3] : shape[2] / heads;
  if (rotaryDim == 0)
    rotaryDim = headSize;
  if (rotaryDim < 2 || rotaryDim > headSize || rotaryDim % 2 != 0)
    return node.emitError()
           << "rotary_embedding_dim " << rotaryDim
           << " must be even and at most the head size " << headSize;
  int64_t half = rotaryDim / 2;
  auto reshape = [&](Value v, ArrayRef<int64_t> to) -> Value {
    return v ? node.create<graph::ReshapeOp>(v, to, /*allow_zero=*/true)
             : Value();
  };
  auto lastSlice = [&](Value v, int64_t start, int64_t end,
                       int64_t step) -> Value {
    if (!v)
      return v;
    ArrayRef<int64_t> s = tensorType(v).getShape();
    SmallVector<int64_t> starts(s.size(), 0), ends(s), steps(s.size(), 1);
    starts.back() = start;
    ends.back() = end;
    steps.back() = step;
    return node.create<graph::SliceOp>(v, starts, ends, steps);
  };
  auto mul = [&](Value a, Value b) -> Value {
    return a && b ? node.create<graph::MulOp>(a, b) : Value();
  };

  // [batch, seq, heads, head_size].
  Value input =
      type.getRank() == 4
          ? node.create<graph::TransposeOp>(x, ArrayRef<int64_t>{0, 2, 1, 3})
          : reshape(x, {batch, seq, heads, headSize});
  Value rotate = lastSlice(input, 0, rotaryDim, 1);
  Value keep =
      rotaryDim < headSize ? lastSlice(input, rotaryDim, headSize, 1) : Value();
  // cos and sin as [batch, seq, 1, half].
  auto cacheOf = [&](Value cache) -> Value {
    Value rows =
        positions ? node.create<graph::GatherOp>(cache, positions, uint64_t(0))
                  : cache;
    return reshape(rows, {batch, seq, 1, half});
  };
  Value cos = cacheOf(cosCache), sin = cacheOf(sinCache);
  Value x1 = interleaved ? lastSlice(rotate, 0, rotaryDim, 2)
                         : lastSlice(rotate, 0, half, 1);
  Value x2 = interleaved ? lastSlice(rotate, 1, rotaryDim, 2)
                         : lastSlice(rotate, half, rotaryDim, 1);
  Value cx1 = mul(cos, x1), sx2 = mul(sin, x2), sx1 = mul(sin, x1),
        cx2 = mul(cos, x2);
  Value real = cx1 && sx2 ? node.create<graph::SubOp>(cx1, sx2) : Value();
  Value imag = sx1 && cx2 ? node.create<graph::AddOp>(sx1, cx2) : Value();
  if (!real || !imag)
    return failure();
  Value rotated;
  if (interleaved) {
    // Pairs (real, imag) back in place: [..., half, 2] -> [..., rotaryDim].
    Value pairs = node.create<graph::ConcatOp>(
        ValueRange{reshape(real, {batch, seq, heads, half, 1}),
                   reshape(imag, {batch, seq, heads, half, 1})},
        uint64_t(4));
    rotated = reshape(pairs, {batch, seq, heads, rotaryDim});
  } else {
    rotated = node.create<graph::ConcatOp>(ValueRange{real, imag}, uint64_t(3));
  }
  Value output =
      keep && rotated
          ? node.create<graph::ConcatOp>(ValueRange{rotated, keep}, uint64_t(3))
          : rotated;
  if (!output)
    return failure();
  return node.setResults(type.getRank() == 4
                             ? node.create<graph::TransposeOp>(
                                   output, ArrayRef<int64_t>{0, 2, 1, 3})
                             : reshape(output, shape));
}
//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
//===----------------------------------------------------------------------===//

/// A reshape shape for `type` with a size-1 dimension inserted at `at`; a
/// dynamic dimension becomes -1 (an error when there are several).
static FailureOr<SmallVector<int64_t>>
unsqueezedShape(NodeImporter &node, RankedTensorType type, int64_t at) {
  SmallVector<int64_t> shape(type.getShape());
  if (llvm::count_if(shape, ShapedType::isDynamic) > 1) {
    node.emitError() << "needs at most one dynamic dimension in the target, "
                        "got "
                     << type
                     << " (give the inputs static shapes in the import "
                        "options)";
    return failure();
  }
  for (int64_t &dim : shape)
    if (ShapedType::isDynamic(dim))
      dim = -1;
  shape.insert(shape.begin() + at, 1);
  return shape;
}

/// The loss of NegativeLogLikelihoodLoss for `logProb` (N, C, d1...) and
/// `target` (N, d1...), following the ONNX function body: the picked entries
/// negated, weighted by `weight` (C) when given, zero where the target is
/// `ignoreIndex`, then reduced by `reduction`.
static Value nllLoss(NodeImporter &node, Value logProb, Value target,
                     Value weight, std::optional<int64_t> ignoreIndex,
                     StringRef reduction) {
  auto inputType = tensorType(logProb);
  auto targetType = tensorType(target);
  Type element = inputType.getElementType();
  Type indexType = targetType.getElementType();
  if (inputType.getRank() < 2) {
    node.emitError() << "input must have rank >= 2 (N, C, ...), got "
                     << inputType;
    return {};
  }
  if (targetType.getRank() != inputType.getRank() - 1) {
    node.emitError() << "target must have rank " << inputType.getRank() - 1
                     << " (the input's less C), got " << targetType;
    return {};
  }
  if (!isa<IntegerType>(indexType)) {
    node.emitError() << "target must hold integers, got " << indexType;
    return {};
  }

  // Ignored positions read class 0 and get a zero weight.
  Value ignored, safeTarget = target;
  if (ignoreIndex) {
    Value ignoreValue = createScalar(node, indexType, *ignoreIndex);
    if (!ignoreValue)
      return {};
    ignored = node.create<graph::EqualOp>(target, ignoreValue);
    Value zero = createScalar(node, indexType, 0);
    if (!ignored || !zero)
      return {};
    safeTarget = node.create<graph::WhereOp>(ignored, zero, target);
    if (!safeTarget)
      return {};
  }

  FailureOr<SmallVector<int64_t>> indexShape =
      unsqueezedShape(node, targetType, 1);
  if (failed(indexShape))
    return {};
  Value indices = node.create<graph::ReshapeOp>(safeTarget, *indexShape,
                                                /*allow_zero=*/false);
  if (!indices)
    return {};
  Value picked = node.create<graph::GatherElementsOp>(logProb, indices,
                                                      /*axis=*/uint64_t(1));
  if (!picked)
    return {};
  // Drops the size-1 class dimension.
  picked = node.create<graph::ReduceSumOp>(picked, ArrayRef<int64_t>{1},
                                           /*keepdims=*/false);
  Value loss = picked ? node.create<graph::NegOp>(picked) : Value();
  if (!loss)
    return {};

  Value weights;
  if (weight) {
    weights = node.create<graph::GatherOp>(weight, safeTarget, uint64_t(0));
    if (!weights)
      return {};
    if (ignored) {
      Value zero = createScalar(node, element, 0.0);
      weights =
          zero ? node.create<graph::WhereOp>(ignored, zero, weights) : Value();
    }
  } else if (ignored) {
    Value zero = createScalar(node, element, 0.0);
    Value one = createScalar(node, element, 1.0);
    if (!zero || !one)
      return {};
    weights = node.create<graph::WhereOp>(ignored, zero, one);
  }
  if (weight || ignored) {
    if (!weights)
      return {};
    loss = node.create<graph::MulOp>(loss, weights);
    if (!loss)
      return {};
  }

  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all = trailingAxes(0, tensorType(loss).getRank());
  Value sum = node.create<graph::ReduceSumOp>(loss, all, /*keepdims=*/false);
  if (reduction == "sum" || !sum)
    return sum;
  if (!weights)
    return node.create<graph::ReduceMeanOp>(loss, all, /*keepdims=*/false);
  Value weightSum =
      node.create<graph::ReduceSumOp>(weights, all, /*keepdims=*/false);
  return weightSum ? node.create<graph::DivOp>(sum, weightSum) : Value();
}

/// The `reduction` attribute, checked.
static FailureOr<std::string> getReduction(NodeImporter &node) {
  std::string reduction = node.getString("reduction", "mean");
  if (node.hasFailed())
    return failure();
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    node.emitError() << "reduction must be none, sum or mean, got '"
                     << reduction << "'";
    return failure();
  }
  return reduction;
}

static std::optional<int64_t> getIgnoreIndex(NodeImporter &node) {
  if (!node.hasAttr("ignore_index"))
    return std::nullopt;
  return node.getInt("ignore_index");
}

static LogicalResult importNLLLoss(NodeImporter &node) {
  Value input = node.getInput(0), target = node.getInput(1),
        weight = node.getInput(2);
  if (!input || !target)
    return node.emitError() << "needs inputs input and target";
  FailureOr<std::string> reduction = getReduction(node);
  if (failed(reduction))
    return failure();
  std::optional<int64_t> ignoreIndex = getIgnoreIndex(node);
  if (node.hasFailed())
    return failure();
  return node.setResults(
      nllLoss(node, input, target, weight, ignoreIndex, *reduction));
}

/// SoftmaxCrossEntropyLoss: NegativeLogLikelihoodLoss of LogSoftmax over the
/// class dimension (1), which is also the optional second output.
static LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &node) {
  Value scores = node.getInput(0), labels = node.getInput(1),
        weight = node.getInput(2);
  if (!scores || !labels)
    return node.emitError() << "needs inputs scores and labels";
  if (!isa<FloatType>(elementType(scores)))
    return node.emitError()
           << "scores must be floats, got " << elementType(scores);
  if (tensorType(scores).getRank() < 2)
    return node.emitError() << "scores must have rank >= 2 (N, C, ...), got "
                            << scores.getType();
  FailureOr<std::string> reduction = getReduction(node);
  if (failed(reduction))
    return failure();
  std::optional<int64_t> ignoreIndex = getIgnoreIndex(node);
  if (node.hasFailed())
    return failure();
  Value logProb =
      node.create<graph::LogSoftmaxOp>(scores, ArrayRef<int64_t>{1});
  if (!logProb)
    return failure();
  Value loss = nllLoss(node, logProb, labels, weight, ignoreIndex, *reduction);
  if (!loss)
    return failure();
  if (node.getNumOutputs() < 2)
    return node.setResults(loss);
  return node.setResults({loss, logProb});
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// A 3-D (batch, seq, heads * size) tensor as 4-D (batch, heads, seq, size).
static Value splitHeads(NodeImporter &node, Value value, int64_t heads) {
  Value split = node.create<graph::ReshapeOp>(
      value, ArrayRef<int64_t>{0, 0, heads, -1}, /*allow_zero=*/false);
  return split ? node.create<graph::TransposeOp>(split,
                                                 ArrayRef<int64_t>{0, 2, 1, 3})
               : Value();
}

/// Repeats every head of `value` (batch, kvHeads, seq, size) `groups` times in
/// place ([h0, h0, h1, h1...]) for grouped-query attention.
static Value repeatHeads(NodeImporter &node, Value value, int64_t kvHeads,
                         int64_t groups) {
  if (groups == 1)
    return value;
  SmallVector<int64_t> indices;
  for (int64_t h = 0; h < kvHeads; ++h)
    for (int64_t g = 0; g < groups; ++g)
      indices.push_back(h);
  auto type = RankedTensorType::get({static_cast<int64_t>(indices.size())},
                                    node.getBuilder().getI64Type());
  Value constant = node.create<graph::ConstantOp>(cast<TypedAttr>(
      DenseElementsAttr::get(type, ArrayRef<int64_t>(indices))));
  return constant ? node.create<graph::GatherOp>(value, constant, uint64_t(1))
                  : Value();
}

/// Attention (opset 23 and 24) following the ONNX function body:
/// softmax(softcap(Q K^T * scale) + bias) V, with grouped-query heads, a
/// boolean or additive mask, a causal mask and a key/value cache.
/// The additive mask (0 or -inf, shape [batch, 1, qLength, kvLength]) of
/// Attention's nonpad_kv_seqlen: key j is seen by query i of batch b when
/// j < nonpad[b] and, with diff = i + nonpad[b] - qLength - j, diff >= 0
/// (causal), diff <= leftWindow and -diff <= rightWindow (when >= 0).
static Value nonpadBias(NodeImporter &node, Value nonpad, Type element,
                        int64_t qLength, int64_t kvLength, bool isCausal,
                        int64_t leftWindow, int64_t rightWindow) {
  auto nonpadType = tensorType(nonpad);
  if (nonpadType.getRank() != 1 || !nonpadType.getElementType().isInteger() ||
      ShapedType::isDynamic(qLength) || ShapedType::isDynamic(kvLength)) {
    node.emitError() << "nonpad_kv_seqlen must be a 1-D integer tensor and "
                        "the sequence lengths static, got "
                     << nonpad.getType();
    return {};
  }
  MLIRContext *ctx = node.getContext();
  Type i64 = IntegerType::get(ctx, 64);
  auto indices = [&](int64_t count, ArrayRef<int64_t> shape) {
    SmallVector<int64_t> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(i);
    auto type = RankedTensorType::get(shape, i64);
    return node.create<graph::ConstantOp>(cast<TypedAttr>(
        DenseElementsAttr::get(type, ArrayRef<int64_t>(values))));
  };
  Value lengths = node.create<graph::ReshapeOp>(castTo(node, nonpad, i64),
                                                ArrayRef<int64_t>{-1, 1, 1, 1},
                                                /*allow_zero=*/false);
  Value rows = indices(qLength, {qLength, 1});
  Value cols = indices(kvLength, {kvLength});
  if (!lengths || !rows || !cols)
    return {};
  Value allowed = node.create<graph::LessOp>(cols, lengths);
  // diff = i + (nonpad - qLength) - j
  Value offset = node.create<graph::SubOp>(
      lengths, createScalar(node, i64, static_cast<double>(qLength)));
  Value diff =
      node.create<graph::SubOp>(node.create<graph::AddOp>(rows, offset), cols);
  auto both = [&](Value condition) {
    allowed = node.create<graph::AndOp>(allowed, condition);
  };
  if (isCausal)
    both(node.create<graph::GreaterEqualOp>(diff, createScalar(node, i64, 0)));
  if (leftWindow >= 0)
    both(node.create<graph::LessEqualOp>(
        diff, createScalar(node, i64, static_cast<double>(leftWindow))));
  if (rightWindow >= 0)
    both(node.create<graph::GreaterEqualOp>(
        diff, createScalar(node, i64, -static_cast<double>(rightWindow))));
  if (!allowed)
    return {};
  return node.create<graph::WhereOp>(
      allowed, createScalar(node, element, 0.0),
      createScalar(node, element, -std::numeric_limits<double>::infinity()));
}

static LogicalResult importAttention(NodeImporter &node) {
  Value q = node.getInput(0), k = node.getInput(1), v = node.getInput(2);
  Value mask = node.getInput(3), pastKey = node.getInput(4),
        pastValue = node.getInput(5);
  if (!q || !k || !v)
    return node.emitError() << "needs inputs Q, K and V";
  Value nonpad = node.getInput(6);
  if (nonpad && pastKey)
    return node.emitError() << "nonpad_kv_seqlen cannot be combined with "
                               "past_key and past_value";
  if (!pastKey != !pastValue)
    return node.emitError() << "past_key and past_value must be given together";
  Type element = elementType(q);
  if (!isa<FloatType>(element))
    return node.emitError() << "Q must hold floats, got " << element;
  if (elementType(k) != element || elementType(v) != element)
    return node.emitError()
           << "Q, K and V must have one element type, got " << element << ", "
           << elementType(k) << " and " << elementType(v);
  int64_t rank = tensorType(q).getRank();
  if ((rank != 3 && rank != 4) || tensorType(k).getRank() != rank ||
      tensorType(v).getRank() != rank)
    return node.emitError()
           << "Q, K and V must all be 3-D or all 4-D, got " << q.getType()
           << ", " << k.getType() << " and " << v.getType();

  bool isCausal = node.getInt("is_causal", 0) != 0;
  int64_t qHeads = node.getInt("q_num_heads", 0);
  int64_t kvHeads = node.getInt("kv_num_heads", 0);
  int64_t mode = node.getInt("qk_matmul_output_mode", 0);
  float softcap = node.getFloat("softcap", 0.0f);
  bool hasScale = node.hasAttr("scale");
  float scaleAttr = node.getFloat("scale", 1.0f);
  if (node.hasFailed())
    return failure();
  int64_t leftWindow = node.getInt("left_window_size", -1);
  int64_t rightWindow = node.getInt("right_window_size", -1);
  if (node.hasFailed())
    return failure();
  if (leftWindow < -1 || rightWindow < -1)
    return node.emitError() << "left_window_size and right_window_size must "
                               "be -1 or non-negative, got "
                            << leftWindow << " and " << rightWindow;
  bool windowed = leftWindow >= 0 || rightWindow >= 0;
  if (mode < 0 || mode > 3)
    return node.emitError()
           << "qk_matmul_output_mode must be 0 to 3, got " << mode;

  if (rank == 3) {
    if (qHeads <= 0 || kvHeads <= 0)
      return node.emitError() << "3-D inputs need positive q_num_heads and "
                                 "kv_num_heads, got "
                              << qHeads << " and " << kvHeads;
    q = splitHeads(node, q, qHeads);
    k = splitHeads(node, k, kvHeads);
    v = splitHeads(node, v, kvHeads);
    if (!q || !k || !v)
      return failure();
  } else {
    qHeads = tensorType(q).getDimSize(1);
    kvHeads = tensorType(k).getDimSize(1);
    if (ShapedType::isDynamic(qHeads) || ShapedType::isDynamic(kvHeads))
      return node.emitError() << "4-D Q and K need static head counts, got "
                              << q.getType() << " and " << k.getType();
    if (tensorType(v).getDimSize(1) != kvHeads)
      return node.emitError() << "K and V must have the same number of heads, "
                                 "got "
                              << k.getType() << " and " << v.getType();
  }
  if (kvHeads <= 0 || qHeads % kvHeads != 0)
    return node.emitError()
           << "q_num_heads (" << qHeads
           << ") must be a multiple of kv_num_heads (" << kvHeads << ")";

  int64_t headSize = tensorType(q).getDimSize(3);
  double scale;
  if (hasScale) {
    scale = scaleAttr;
  } else {
    if (ShapedType::isDynamic(headSize))
      return node.emitError() << "the default scale needs a static head size, "
                                 "got Q "
                              << q.getType();
    scale = 1.0 / std::sqrt(static_cast<double>(headSize));
  }

  // The cache: present = concat(past, new) along the sequence.
  int64_t pastLength = 0;
  if (pastKey) {
    pastLength = tensorType(pastKey).getDimSize(2);
    k = node.create<graph::ConcatOp>(ValueRange{pastKey, k}, uint64_t(2));
    v = node.create<graph::ConcatOp>(ValueRange{pastValue, v}, uint64_t(2));
    if (!k || !v)
      return failure();
  }
  Value presentKey = k, presentValue = v;
  int64_t qLength = tensorType(q).getDimSize(2);
  int64_t kvLength = tensorType(k).getDimSize(2);

  // The additive bias: the mask (booleans become 0 / -inf), padded with
  // "masked" up to the key length, plus the causal mask.
  double negInf = -std::numeric_limits<double>::infinity();
  Value bias;
  if (mask) {
    auto maskType = tensorType(mask);
    bool isBool = maskType.getElementType().isInteger(1);
    if (!isBool && maskType.getElementType() != element)
      return node.emitError() << "attn_mask must be bool or " << element
                              << ", got " << maskType.getElementType();
    if (maskType.getRank() == 0)
      return node.emitError() << "attn_mask must have rank >= 1";
    int64_t maskLength = maskType.getDimSize(maskType.getRank() - 1);
    if (maskLength != kvLength) {
      if (ShapedType::isDynamic(maskLength) ||
          ShapedType::isDynamic(kvLength) || maskLength > kvLength)
        return node.emitError()
               << "attn_mask's last dimension (" << maskLength
               << ") must be static and at most the key length (" << kvLength
               << ")";
      SmallVector<int64_t> pads(2 * maskType.getRank(), 0);
      pads.back() = kvLength - maskLength;
      mask = node.create<graph::PadOp>(mask, pads, "constant",
                                       llvm::APFloat(isBool ? 0.0 : negInf));
      if (!mask)
        return failure();
    }
    if (isBool) {
      Value zero = createScalar(node, element, 0.0);
      Value minus = createScalar(node, element, negInf);
      if (!zero || !minus)
        return failure();
      mask = node.create<graph::WhereOp>(mask, zero, minus);
      if (!mask)
        return failure();
    }
    bias = mask;
  }
  if (nonpad) {
    // An external cache: batch b holds nonpad[b] valid keys, and its queries
    // are the last qLength of them (causal and window masks count from
    // there), as ONNX's reference computes it.
    Value padBias = nonpadBias(node, nonpad, element, qLength, kvLength,
                               isCausal, leftWindow, rightWindow);
    if (!padBias)
      return failure();
    bias = bias ? node.create<graph::AddOp>(bias, padBias) : padBias;
    if (!bias)
      return failure();
  } else if (isCausal || windowed) {
    if (ShapedType::isDynamic(qLength) || ShapedType::isDynamic(kvLength) ||
        ShapedType::isDynamic(pastLength))
      return node.emitError() << "is_causal and window sizes need static "
                                 "sequence lengths, got "
                                 "Q "
                              << q.getType() << " and K " << k.getType();
    auto causalType = RankedTensorType::get({qLength, kvLength}, element);
    auto floatType = cast<FloatType>(element);
    SmallVector<Attribute> values;
    // Query i sits at position i + pastLength among the keys.
    for (int64_t i = 0; i < qLength; ++i) {
      for (int64_t j = 0; j < kvLength; ++j) {
        int64_t diff = i + pastLength - j;
        bool allowed = (!isCausal || diff >= 0) &&
                       (leftWindow < 0 || diff <= leftWindow) &&
                       (rightWindow < 0 || -diff <= rightWindow);
        values.push_back(FloatAttr::get(floatType, allowed ? 0.0 : negInf));
      }
    }
    Value causal = node.create<graph::ConstantOp>(
        cast<TypedAttr>(DenseElementsAttr::get(causalType, values)));
    if (!causal)
      return failure();
    bias = bias ? node.create<graph::AddOp>(bias, causal) : causal;
    if (!bias)
      return failure();
  }

  // Scores.
  Value kt = node.create<graph::TransposeOp>(
      repeatHeads(node, k, kvHeads, qHeads / kvHeads),
      ArrayRef<int64_t>{0, 1, 3, 2});
  Value values = repeatHeads(node, v, kvHeads, qHeads / kvHeads);
  if (!kt || !values)
    return failure();
  // The scale goes in as its square root, in the element type, on Q and on
  // K, as in ONNX's function body (ScaleFactorSqrt): in f16 and bf16 the
  // rounding of the scores depends on where it is applied.
  Value scaleValue = createScalar(node, element, std::sqrt(scale));
  if (!scaleValue)
    return failure();
  q = node.create<graph::MulOp>(q, scaleValue);
  kt = q ? node.create<graph::MulOp>(kt, scaleValue) : Value();
  Value scores = kt ? node.create<graph::MatMulOp>(q, kt) : Value();
  if (!scores)
    return failure();
  if (softcap > 0.0f) {
    Value cap = createScalar(node, element, softcap);
    if (!cap)
      return failure();
    Value scaled = node.create<graph::DivOp>(scores, cap);
    Value tanh = scaled ? node.create<graph::TanhOp>(scaled) : Value();
    scores = tanh ? node.create<graph::MulOp>(tanh, cap) : Value();
    if (!scores)
      return failure();
  }
  Value qkOutput = scores;
  if (bias) {
    scores = node.create<graph::AddOp>(scores, bias);
    if (!scores)
      return failure();
  }
  if (mode == 2)
    qkOutput = scores;

  Value probs = node.create<graph::SoftmaxOp>(scores, ArrayRef<int64_t>{3});
  if (!probs)
    return failure();
  if (bias) {
    // A row whose keys are all masked has probabilities 0, not NaN.
    Value rowMax = node.create<graph::ReduceMaxOp>(
        bias, ArrayRef<int64_t>{tensorType(bias).getRank() - 1},
        /*keepdims=*/true);
    Value allMasked =
        rowMax ? node.create<graph::IsInfOp>(rowMax, /*detect_positive=*/false,
                                             /*detect_negative=*/true)
               : Value();
    Value zero = createScalar(node, element, 0.0);
    if (!allMasked || !zero)
      return failure();
    probs = node.create<graph::WhereOp>(allMasked, zero, probs);
    if (!probs)
      return failure();
  }
  if (mode == 3)
    qkOutput = probs;

  Value output = node.create<graph::MatMulOp>(probs, values);
  if (!output)
    return failure();
  if (rank == 3) {
    output =
        node.create<graph::TransposeOp>(output, ArrayRef<int64_t>{0, 2, 1, 3});
    output = output ? node.create<graph::ReshapeOp>(output,
                                                    ArrayRef<int64_t>{0, 0, -1},
                                                    /*allow_zero=*/false)
                    : Value();
    if (!output)
      return failure();
  }
  SmallVector<Value> results = {output, presentKey, presentValue, qkOutput};
  results.truncate(std::min<size_t>(results.size(), node.getNumOutputs()));
  return node.setResults(results);
}

/// FlexAttention (ai.onnx.preview, opset 1): softmax(score_mod(Q K^T *
/// scale)) V with an optional prob_mod after the softmax, the modifiers
/// being subgraphs imported in place; grouped-query heads; the softmax in
/// `softmax_precision` (f32 for 16-bit inputs). As ONNX's reference: the
/// scale's square root multiplies Q and K.
static LogicalResult importFlexAttention(NodeImporter &node) {
  Value q = node.getInput(0), k = node.getInput(1), v = node.getInput(2);
  if (!q || !k || !v)
    return node.emitError() << "needs Q, K and V";
  for (Value x : {q, k, v})
    if (tensorType(x).getRank() != 4 || !tensorType(x).hasStaticShape() ||
        !isa<FloatType>(elementType(x)))
      return node.emitError() << "Q, K and V must be static float rank-4 "
                                 "tensors, got "
                              << x.getType();
  ArrayRef<int64_t> qShape = tensorType(q).getShape(),
                    kShape = tensorType(k).getShape(),
                    vShape = tensorType(v).getShape();
  int64_t qHeads = qShape[1], kvHeads = kShape[1];
  if (vShape[1] != kvHeads || vShape[2] != kShape[2] ||
      kShape[3] != qShape[3] || kvHeads <= 0 || qHeads % kvHeads != 0)
    return node.emitError() << "Q, K and V do not fit together: " << q.getType()
                            << ", " << k.getType() << ", " << v.getType();
  const onnx::GraphProto *scoreMod =
      node.hasAttr("score_mod") ? node.getGraph("score_mod") : nullptr;
  const onnx::GraphProto *probMod =
      node.hasAttr("prob_mod") ? node.getGraph("prob_mod") : nullptr;
  double scale = node.hasAttr("scale") ? double(node.getFloat("scale"))
                                       : 1.0 / std::sqrt(double(qShape[3]));
  Type element = elementType(q);
  Type compute = element.getIntOrFloatBitWidth() < 32
                     ? Type(Float32Type::get(node.getContext()))
                     : element;
  if (node.hasAttr("softmax_precision")) {
    int64_t precision = node.getInt("softmax_precision", 1);
    compute = convertElementType(node.getContext(), precision);
    if (!compute || !isa<FloatType>(compute))
      return node.emitError()
             << "softmax_precision " << getONNXTypeName(precision)
             << " is not a float type";
  }
  if (node.hasFailed())
    return failure();
  int64_t groups = qHeads / kvHeads;
  Value keys = repeatHeads(node, k, kvHeads, groups);
  Value values = repeatHeads(node, v, kvHeads, groups);
  Value root = createScalar(node, element, std::sqrt(double(float(scale))));
  Value qs = node.create<graph::MulOp>(q, root);
  Value ks = keys ? node.create<graph::MulOp>(keys, root) : Value();
  Value kt =
      ks ? node.create<graph::TransposeOp>(ks, ArrayRef<int64_t>{0, 1, 3, 2})
         : Value();
  Value scores = qs && kt ? node.create<graph::MatMulOp>(qs, kt) : Value();
  scores = castTo(node, scores, compute);
  if (!scores || !values)
    return failure();
  auto modify = [&](const onnx::GraphProto *graph, Value x) -> Value {
    if (!graph)
      return x;
    FailureOr<SmallVector<Value>> out = node.importGraph(*graph, {x});
    if (failed(out))
      return {};
    if (out->size() != 1 || (*out)[0].getType() != x.getType()) {
      node.emitError() << "a modifier subgraph must give one tensor of its "
                          "input's type "
                       << x.getType();
      return {};
    }
    return (*out)[0];
  };
  scores = modify(scoreMod, scores);
  Value probs =
      scores ? node.create<graph::SoftmaxOp>(scores, ArrayRef<int64_t>{3})
             : Value();
  probs = probs ? modify(probMod, probs) : Value();
  Value out =
      probs ? node.create<graph::MatMulOp>(probs, castTo(node, values, compute))
            : Value();
  return node.setResults(castTo(node, out, elementType(v)));
}

//===----------------------------------------------------------------------===//
// Det
//===----------------------------------------------------------------------===//

/// The largest matrix whose determinant Kiln unrolls (each column is a
/// handful of graph ops over the whole matrix).
static constexpr int64_t kMaxDetSize = 64;

/// Det (opset 11): the determinant of each [n, n] matrix of X [..., n, n],
/// by Gaussian elimination with partial pivoting (as LAPACK's getrf, which
/// numpy's det uses), unrolled over the columns: at column k the row of the
/// largest magnitude at or below k is swapped in (a gather of rows, which
/// flips the sign), and the rows below are reduced by it. The determinant
/// is the sign times the product of the pivots; a zero pivot column gives 0.
static LogicalResult importDet(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = tensorType(input);
  int64_t rank = type.getRank();
  if (!isa<FloatType>(type.getElementType()) || rank < 2 ||
      !type.hasStaticShape() ||
      type.getDimSize(rank - 1) != type.getDimSize(rank - 2))
    return node.emitError()
           << "needs static float matrices [..., n, n], got " << type;
  int64_t n = type.getDimSize(rank - 1);
  if (n > kMaxDetSize)
    return node.emitError() << "matrices of " << n << "x" << n
                            << ": Kiln unrolls determinants of at most "
                            << kMaxDetSize << "x" << kMaxDetSize;
  Type element = type.getElementType();
  Type i64 = node.getBuilder().getI64Type();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rowAxis = rank - 2;
  // A[..., rows, cols] of the current matrix.
  auto block = [&](Value a, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    SmallVector<int64_t> starts(rank, 0), ends(shape), steps(rank, 1);
    starts[rank - 2] = r0;
    ends[rank - 2] = r1;
    starts[rank - 1] = c0;
    ends[rank - 1] = c1;
    return node.create<graph::SliceOp>(a, starts, ends, steps);
  };
  // Row numbers 0..n-1 as [n, 1].
  std::vector<int64_t> rowNumbers(n);
  for (int64_t i = 0; i < n; ++i)
    rowNumbers[i] = i;
  Value rows =
      node.create<graph::ConstantOp>(cast<TypedAttr>(DenseElementsAttr::get(
          RankedTensorType::get({n, 1}, i64), ArrayRef<int64_t>(rowNumbers))));
  Value zero = createScalar(node, element, 0.0);
  Value a = input, sign = createScalar(node, element, 1.0), product;
  if (!rows || !zero || !sign)
    return failure();
  // The determinant of a 0x0 matrix is 1 (the empty product), as numpy has it.
  if (n == 0)
    return node.setResults(
        node.create<graph::ExpandOp>(sign, shape.drop_back(2)));
  for (int64_t k = 0; k < n; ++k) {
    Value column = block(a, k, n, k, k + 1);
    Value magnitude = column ? node.create<graph::AbsOp>(column) : Value();
    Value relative = magnitude ? node.create<graph::ArgMaxOp>(
                                     magnitude, uint64_t(rowAxis), true, false)
                               : Value();
    Value kValue = createScalar(node, i64, double(k));
    Value pivotRow = relative && kValue
                         ? node.create<graph::AddOp>(relative, kValue)
                         : Value();
    if (!pivotRow)
      return failure();
    if (k + 1 < n) {
      // Swap rows k and pivotRow: row r reads row idx[r].
      Value isK = node.create<graph::EqualOp>(rows, kValue);
      Value isPivot = node.create<graph::EqualOp>(rows, pivotRow);
      Value inner = isPivot ? node.create<graph::WhereOp>(isPivot, kValue, rows)
                            : Value();
      Value index = isK && inner
                        ? node.create<graph::WhereOp>(isK, pivotRow, inner)
                        : Value();
      Value full = index ? node.create<graph::ExpandOp>(index, shape) : Value();
      a = full
              ? node.create<graph::GatherElementsOp>(a, full, uint64_t(rowAxis))
              : Value();
      Value same = node.create<graph::EqualOp>(pivotRow, kValue);
      Value flipped = node.create<graph::NegOp>(sign);
      sign = same && flipped && a
                 ? node.create<graph::WhereOp>(same, sign, flipped)
                 : Value();
      if (!sign)
        return failure();
    }
    Value pivot = block(a, k, k + 1, k, k + 1);
    if (!pivot)
      return failure();
    product = product ? node.create<graph::MulOp>(product, pivot) : pivot;
    if (!product)
      return failure();
    if (k + 1 == n)
      break;
    // Rows below k minus factor * row k; a zero pivot (the column is zero
    // from k down) leaves them, and the determinant is 0 anyway.
    Value below = block(a, k + 1, n, 0, n);
    Value under = block(a, k + 1, n, k, k + 1);
    Value isZero = node.create<graph::EqualOp>(pivot, zero);
    Value ratio = under ? node.create<graph::DivOp>(under, pivot) : Value();
    Value factor = ratio && isZero
                       ? node.create<graph::WhereOp>(isZero, zero, ratio)
                       : Value();
    Value rowK = block(a, k, k + 1, 0, n);
    Value scaled =
        factor && rowK ? node.create<graph::MulOp>(factor, rowK) : Value();
    Value reduced =
        below && scaled ? node.create<graph::SubOp>(below, scaled) : Value();
    Value top = block(a, 0, k + 1, 0, n);
    a = reduced && top ? node.create<graph::ConcatOp>(ValueRange{top, reduced},
                                                      uint64_t(rowAxis))
                       : Value();
    if (!a)
      return failure();
  }
  Value det = node.create<graph::MulOp>(sign, product);
  return node.setResults(
      det ? node.create<graph::ReshapeOp>(det, shape.drop_back(2), false)
          : Value());
}

void kiln::registerCompositeImporters(NodeImporterRegistry &registry) {
  registry.add("Attention", /*minOpset=*/23, importAttention);
  registry.add("Det", /*minOpset=*/11, importDet);
  registry.add("CausalConvWithState", /*minOpset=*/27,
               importCausalConvWithState);
  registry.add("GroupNormalization", /*minOpset=*/18, importGroupNorm);
  registry.add("ai.onnx.preview.FlexAttention", 1, importFlexAttention);
  registry.add("LinearAttention", /*minOpset=*/27, importLinearAttention);
  registry.add("LpNormalization", /*minOpset=*/1, importLpNorm);
  registry.add("MeanVarianceNormalization", /*minOpset=*/9,
               importMeanVarianceNorm);
  registry.add("NegativeLogLikelihoodLoss", /*minOpset=*/12, importNLLLoss);
  registry.add("RMSNormalization", /*minOpset=*/23, importRMSNorm);
  registry.add("RotaryEmbedding", /*minOpset=*/23, importRotaryEmbedding);
  registry.add("Shrink", /*minOpset=*/9, importShrink);
  registry.add("SoftmaxCrossEntropyLoss", /*minOpset=*/12,
               importSoftmaxCrossEntropyLoss);
  registry.add("SwiGLU", /*minOpset=*/28, importSwiGLU);
  registry.add("Swish", /*minOpset=*/24, importSwish);
}
