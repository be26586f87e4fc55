//===- ImportComposite.cpp - Operators imported by decomposition ----------===//
//
// ONNX operators that Kiln has no graph op for and imports as a subgraph of
// existing ones, following each operator's ONNX function body:
// RMSNormalization, RotaryEmbedding, NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss, Attention, and QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear. No new op, no new lowering: the pieces are lowered as
// usual.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static Type elementType(Value value) {
  return tensorType(value).getElementType();
}

/// A rank-0 graph.constant of `element` holding `value`.
static Value createScalar(NodeImporter &node, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute scalar;
  if (auto floatType = dyn_cast<FloatType>(element))
    scalar = FloatAttr::get(floatType, value);
  else if (element.isInteger(1))
    scalar = BoolAttr::get(node.getContext(), value != 0.0);
  else
    scalar = IntegerAttr::get(element, static_cast<int64_t>(value));
  return node.create<graph::ConstantOp>(
      cast<TypedAttr>(DenseElementsAttr::get(type, scalar)));
}

/// `input` converted to `element` (itself when it already has it).
static Value castTo(NodeImporter &node, Value input, Type element) {
  if (!input || elementType(input) == element)
    return input;
  return graph::CastOp::create(node.getBuilder(), node.getLoc(),
                               tensorType(input).clone(element), input);
}

/// The axes [from, rank).
static SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes;
  for (int64_t i = from; i < rank; ++i)
    axes.push_back(i);
  return axes;
}

/// The element type named by a `stash_type` attribute (1: float32; anything
/// else: the input's own type, which Kiln only supports when it is a float).
static Type stashType(NodeImporter &node, Value input) {
  int64_t stash = node.getInt("stash_type", 1);
  if (stash == 1)
    return Float32Type::get(node.getContext());
  return elementType(input);
}

/// Normalizes `axis` for rank `rank`; an error names the node when it is out
/// of range.
static FailureOr<int64_t> normalizeAxis(NodeImporter &node, int64_t axis,
                                        int64_t rank) {
  if (axis < -rank || axis >= rank) {
    node.emitError() << "axis " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
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
  return node.setResults(castTo(node, value, resultElement));
}

/// round(x / scale) + zero_point, clamped to the range of `target`, an
/// integer type: the integer half of QuantizeLinear.
static Value quantizeToInteger(NodeImporter &node, Value scaled, Value zp,
                               Type target) {
  Type i32 = IntegerType::get(node.getContext(), 32);
  unsigned width = target.getIntOrFloatBitWidth();
  bool isUnsigned = target.isUnsignedInteger();
  double low = isUnsigned ? 0.0 : -std::ldexp(1.0, width - 1);
  double high =
      isUnsigned ? std::ldexp(1.0, width) - 1 : std::ldexp(1.0, width - 1) - 1;
  // Rounded to an integer (half to even) first, the zero point added in
  // integers: as exact as ONNX's reference for any scaled value in range.
  Value value = node.create<graph::RoundOp>(scaled);
  value = castTo(node, value, i32);
  if (value && zp)
    value = node.create<graph::AddOp>(value, zp);
  if (value)
    value = node.create<graph::MaxOp>(
        ValueRange{value, createScalar(node, i32, low)});
  if (value)
    value = node.create<graph::MinOp>(
        ValueRange{value, createScalar(node, i32, high)});
  return value ? castTo(node, value, target) : Value();
}

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
    Value result = quantizeToInteger(node, scaled, zp, target);
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

void kiln::registerCompositeImporters(NodeImporterRegistry &registry) {
  registry.add("Attention", /*minOpset=*/23, importAttention);
  registry.add("DequantizeLinear", /*minOpset=*/10, importDequantizeLinear);
  registry.add("DynamicQuantizeLinear", /*minOpset=*/11,
               importDynamicQuantizeLinear);
  registry.add("NegativeLogLikelihoodLoss", /*minOpset=*/12, importNLLLoss);
  registry.add("QuantizeLinear", /*minOpset=*/10, importQuantizeLinear);
  registry.add("RMSNormalization", /*minOpset=*/23, importRMSNorm);
  registry.add("RotaryEmbedding", /*minOpset=*/23, importRotaryEmbedding);
  registry.add("SoftmaxCrossEntropyLoss", /*minOpset=*/12,
               importSoftmaxCrossEntropyLoss);
}
