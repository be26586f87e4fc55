//===- ImportRecurrent.cpp - RNN, GRU and LSTM ----------------------------===//
//
// ONNX's recurrent layers: per direction, the input projections of every
// time step as one GEMM, [seq * batch, input] x [input, gates * hidden] plus
// the biases that do not depend on the state, then a graph.recurrence that
// runs the steps (and lowers to a loop over them: one small matmul and the
// gates' elementwise arithmetic per step). The importer resolves ONNX's
// defaults (activations and their parameters), splits W, R, B, P and the
// initial states by direction, and lays the outputs out as ONNX does:
// Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]),
// Y_h and Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
// Bidirectional layers run forward, then reverse.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

enum class CellKind { RNN, GRU, LSTM };

/// One activation of a cell (lower case), with its alpha and beta where it
/// takes them (0 where not).
struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
};

/// The values of `value` when it is an f32 graph.constant (inline or a
/// resource blob).
std::optional<SmallVector<float>> constantFloats(Value value) {
  auto constant = value ? value.getDefiningOp<graph::ConstantOp>() : nullptr;
  if (!constant ||
      !cast<RankedTensorType>(value.getType()).getElementType().isF32())
    return std::nullopt;
  Attribute attr = constant.getValue();
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(attr)) {
    if (std::optional<ArrayRef<float>> data = resource.tryGetAsArrayRef())
      return SmallVector<float>(data->begin(), data->end());
    return std::nullopt;
  }
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  SmallVector<float> values;
  for (APFloat v : dense.getValues<APFloat>())
    values.push_back(v.convertToFloat());
  return values;
}

/// What the three cells share.
class RecurrentImporter {
public:
  RecurrentImporter(NodeImporter &node, CellKind kind)
      : node(node), kind(kind), b(node.getBuilder()) {}

  LogicalResult run();

private:
  /// Gates per cell: RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c).
  int64_t gates() const {
    return kind == CellKind::RNN ? 1 : kind == CellKind::GRU ? 3 : 4;
  }
  /// Activations per direction: RNN f; GRU f, g; LSTM f, g, h.
  int64_t activationsPerDirection() const {
    return kind == CellKind::RNN ? 1 : kind == CellKind::GRU ? 2 : 3;
  }

  LogicalResult readAttributes();
  Value slice(Value input, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends);
  Value reshape(Value input, ArrayRef<int64_t> shape) {
    return input ? node.create<graph::ReshapeOp>(input, shape,
                                                 /*allow_zero=*/true)
                 : Value();
  }
  Value transpose(Value input, ArrayRef<int64_t> perm) {
    return input ? node.create<graph::TransposeOp>(input, perm) : Value();
  }
  Value add(Value lhs, Value rhs) {
    return lhs && rhs ? node.create<graph::AddOp>(lhs, rhs) : Value();
  }
  Value mul(Value lhs, Value rhs) {
    return lhs && rhs ? node.create<graph::MulOp>(lhs, rhs) : Value();
  }
  Value zeros(ArrayRef<int64_t> shape);
  /// A constant of `shape` whose element i is element `from(i)` of the f32
  /// constant `source`; null when `source` is not one. Weights are split by
  /// direction and transposed here, once, rather than by every run.
  Value rearranged(Value source, ArrayRef<int64_t> shape, StringRef name,
                   llvm::function_ref<int64_t(int64_t)> from);
  /// [dirs, batch, hidden] -> the direction's [batch, hidden], or zeros.
  Value initialState(Value state, int64_t d);
  /// The outputs of direction `d`: Y as [seq, 1, batch, hidden], the last
  /// hidden state and (LSTM) the last cell state as [1, batch, hidden].
  LogicalResult direction(int64_t d, Value x, Value &y, Value &lastH,
                          Value &lastC);

  NodeImporter &node;
  CellKind kind;
  OpBuilder &b;
  Type element;
  int64_t seq = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1;
  bool reverseOnly = false, layout = false, linearBeforeReset = false,
       inputForget = false;
  std::optional<float> clipValue;
  SmallVector<Activation> activations;
  Value w, r, bias, lengths, initialH, initialC, peepholes;
};

Value RecurrentImporter::slice(Value input, ArrayRef<int64_t> starts,
                               ArrayRef<int64_t> ends) {
  if (!input)
    return {};
  SmallVector<int64_t> steps(starts.size(), 1);
  return node.createFolded<graph::SliceOp>(input, starts, ends, steps);
}

Value RecurrentImporter::rearranged(Value source, ArrayRef<int64_t> shape,
                                    StringRef name,
                                    llvm::function_ref<int64_t(int64_t)> from) {
  std::optional<SmallVector<float>> values = constantFloats(source);
  if (!values)
    return {};
  auto type = RankedTensorType::get(shape, element);
  int64_t count = type.getNumElements();
  ElementsAttr result = makeElementsAttr(
      type, count, count * 4, (node.getName() + "_" + name).str(),
      [&](MutableArrayRef<char> bytes) {
        auto *out = reinterpret_cast<float *>(bytes.data());
        for (int64_t i = 0; i < count; ++i)
          out[i] = (*values)[from(i)];
      });
  return node.create<graph::ConstantOp>(cast<TypedAttr>(result));
}

Value RecurrentImporter::zeros(ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, element);
  return node.create<graph::ConstantOp>(cast<TypedAttr>(DenseElementsAttr::get(
      type, FloatAttr::get(cast<FloatType>(element), 0.0))));
}

LogicalResult RecurrentImporter::readAttributes() {
  std::string direction = node.getString("direction", "forward");
  if (direction == "bidirectional")
    directions = 2;
  else if (direction == "reverse")
    reverseOnly = true;
  else if (direction != "forward")
    return node.emitError() << "direction '" << direction
                            << "' is not forward, reverse or bidirectional";
  layout = node.getInt("layout", 0) != 0;
  linearBeforeReset = node.getInt("linear_before_reset", 0) != 0;
  inputForget = node.getInt("input_forget", 0) != 0;
  if (node.hasAttr("clip")) {
    float value = node.getFloat("clip");
    if (!(value > 0))
      return node.emitError() << "clip must be positive, not " << value;
    clipValue = value;
  }

  // The activations, and the alphas and betas of those that take them, in
  // order (as onnxruntime reads them).
  SmallVector<std::string> names = node.getStrings("activations");
  SmallVector<float> alphas = node.getFloats("activation_alpha");
  SmallVector<float> betas = node.getFloats("activation_beta");
  int64_t count = activationsPerDirection() * directions;
  if (names.empty()) {
    for (int64_t d = 0; d < directions; ++d) {
      if (kind == CellKind::RNN)
        names.push_back("Tanh");
      else
        names.append({"Sigmoid", "Tanh"});
      if (kind == CellKind::LSTM)
        names.push_back("Tanh");
    }
  }
  if (static_cast<int64_t>(names.size()) != count)
    return node.emitError()
           << "has " << names.size() << " activations; " << count
           << " expected (" << activationsPerDirection() << " per direction)";
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &given : names) {
    Activation activation;
    activation.name = StringRef(given).lower();
    // (alpha default, beta default), NaN for a parameter it does not take.
    auto [alphaDefault, betaDefault] =
        llvm::StringSwitch<std::pair<float, float>>(activation.name)
            .Case("leakyrelu", {0.01f, NAN})
            .Case("thresholdedrelu", {1.0f, NAN})
            .Case("elu", {1.0f, NAN})
            .Case("hardsigmoid", {0.2f, 0.5f})
            .Case("affine", {1.0f, 0.0f})
            .Case("scaledtanh", {1.0f, 1.0f})
            .Cases({"sigmoid", "tanh", "relu", "softsign", "softplus"},
                   {NAN, NAN})
            .Default({-1.0f, -1.0f});
    if (alphaDefault == -1.0f)
      return node.emitError() << "activation '" << given
                              << "' is not one Kiln supports (Sigmoid, Tanh, "
                                 "Relu, LeakyRelu, ThresholdedRelu, Elu, "
                                 "HardSigmoid, Affine, ScaledTanh, Softsign, "
                                 "Softplus)";
    if (!std::isnan(alphaDefault))
      activation.alpha =
          nextAlpha < alphas.size() ? alphas[nextAlpha++] : alphaDefault;
    if (!std::isnan(betaDefault))
      activation.beta =
          nextBeta < betas.size() ? betas[nextBeta++] : betaDefault;
    activations.push_back(activation);
  }
  return failure(node.hasFailed());
}

Value RecurrentImporter::initialState(Value state, int64_t d) {
  if (!state)
    return zeros({batch, hidden});
  // layout 1: [batch, dirs, hidden].
  Value one = layout ? slice(state, {0, d, 0}, {batch, d + 1, hidden})
                     : slice(state, {d, 0, 0}, {d + 1, batch, hidden});
  return reshape(one, {batch, hidden});
}

LogicalResult RecurrentImporter::direction(int64_t d, Value x, Value &y,
                                           Value &lastH, Value &lastC) {
  int64_t width = gates() * hidden;
  bool reverse = reverseOnly || d == 1;
  ArrayRef<Activation> acts =
      ArrayRef(activations)
          .slice(d * activationsPerDirection(), activationsPerDirection());

  // The input projections of every step at once, with the biases that do
  // not depend on the state: [seq * batch, width].
  Value wd = rearranged(w, {width, inputSize}, "W" + std::to_string(d),
                        [&](int64_t i) { return d * width * inputSize + i; });
  if (!wd)
    wd = reshape(slice(w, {d, 0, 0}, {d + 1, width, inputSize}),
                 {width, inputSize});
  // R transposed, [hidden, width]: element (k, n) is R[d][n][k].
  Value rt =
      rearranged(r, {hidden, width}, "RT" + std::to_string(d), [&](int64_t i) {
        int64_t k = i / width, n = i % width;
        return (d * width + n) * hidden + k;
      });
  if (!rt)
    rt = transpose(
        reshape(slice(r, {d, 0, 0}, {d + 1, width, hidden}), {width, hidden}),
        {1, 0});
  Value inputBias, stateBias;
  // GRU with linear_before_reset scales Rb of the h gate by r: it stays
  // with the state's product, the rest joins the projections.
  bool splitStateBias = kind == CellKind::GRU && linearBeforeReset;
  if (bias) {
    int64_t base = d * 2 * width;
    if (std::optional<SmallVector<float>> all = constantFloats(bias)) {
      // Wb + Rb, summed here once.
      SmallVector<float> sum(width), state(hidden);
      for (int64_t i = 0; i < width; ++i) {
        float rb = (*all)[base + width + i];
        bool isState = splitStateBias && i >= 2 * hidden;
        sum[i] = (*all)[base + i] + (isState ? 0.0f : rb);
        if (isState)
          state[i - 2 * hidden] = rb;
      }
      auto denseOf = [&](ArrayRef<float> values) {
        auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                          element);
        return node.create<graph::ConstantOp>(
            cast<TypedAttr>(DenseElementsAttr::get(type, values)));
      };
      inputBias = denseOf(sum);
      if (splitStateBias)
        stateBias = denseOf(state);
    } else {
      Value wb = reshape(slice(bias, {d, 0}, {d + 1, width}), {width});
      Value rb = reshape(slice(bias, {d, width}, {d + 1, 2 * width}), {width});
      if (splitStateBias) {
        Value rzr = slice(rb, {0}, {2 * hidden});
        Value rzrPadded =
            rzr ? node.create<graph::ConcatOp>(ValueRange{rzr, zeros({hidden})},
                                               uint64_t(0))
                : Value();
        inputBias = add(wb, rzrPadded);
        stateBias = slice(rb, {2 * hidden}, {3 * hidden});
      } else {
        inputBias = add(wb, rb);
      }
    }
  }
  Value flat = reshape(x, {seq * batch, inputSize});
  Value projected =
      flat && wd
          ? node.create<graph::GemmOp>(flat, wd, inputBias, llvm::APFloat(1.0f),
                                       llvm::APFloat(1.0f), false, true)
          : Value();
  projected = reshape(projected, {seq, batch, width});
  if (!projected || !rt)
    return failure();

  Value peepholeD;
  if (peepholes) {
    peepholeD = rearranged(peepholes, {3 * hidden}, "P" + std::to_string(d),
                           [&](int64_t i) { return d * 3 * hidden + i; });
    if (!peepholeD)
      peepholeD =
          reshape(slice(peepholes, {d, 0}, {d + 1, 3 * hidden}), {3 * hidden});
  }
  Value h0 = initialState(initialH, d);
  Value c0 = kind == CellKind::LSTM ? initialState(initialC, d) : Value();
  if (!h0 || (kind == CellKind::LSTM && !c0))
    return failure();

  SmallVector<Attribute> names;
  SmallVector<float> alphas, betas;
  for (const Activation &activation : acts) {
    names.push_back(b.getStringAttr(activation.name));
    alphas.push_back(activation.alpha);
    betas.push_back(activation.beta);
  }
  graph::RecurrentCell cell = kind == CellKind::RNN ? graph::RecurrentCell::RNN
                              : kind == CellKind::GRU
                                  ? graph::RecurrentCell::GRU
                                  : graph::RecurrentCell::LSTM;
  Operation *recurrence = node.createOp<graph::RecurrenceOp>(
      projected, rt, h0, c0, stateBias, peepholeD, lengths,
      graph::RecurrentCellAttr::get(b.getContext(), cell),
      b.getArrayAttr(names), b.getDenseF32ArrayAttr(alphas),
      b.getDenseF32ArrayAttr(betas),
      clipValue ? b.getF32FloatAttr(*clipValue) : FloatAttr(),
      b.getBoolAttr(reverse), b.getBoolAttr(linearBeforeReset),
      b.getBoolAttr(inputForget));
  if (!recurrence)
    return failure();
  y = reshape(recurrence->getResult(0), {seq, 1, batch, hidden});
  lastH = reshape(recurrence->getResult(1), {1, batch, hidden});
  lastC = kind == CellKind::LSTM
              ? reshape(recurrence->getResult(2), {1, batch, hidden})
              : Value();
  return success(y && lastH);
}

LogicalResult RecurrentImporter::run() {
  Value x = node.getInput(0);
  w = node.getInput(1);
  r = node.getInput(2);
  bias = node.getInput(3);
  lengths = node.getInput(4);
  initialH = node.getInput(5);
  initialC = kind == CellKind::LSTM ? node.getInput(6) : Value();
  peepholes = kind == CellKind::LSTM ? node.getInput(7) : Value();
  if (!x || !w || !r)
    return node.emitError() << "needs inputs X, W and R";
  if (failed(readAttributes()))
    return failure();

  auto xType = cast<RankedTensorType>(x.getType());
  element = xType.getElementType();
  if (!isa<FloatType>(element))
    return node.emitError() << "X must be a float tensor";
  if (xType.getRank() != 3 || !xType.hasStaticShape())
    return node.emitError() << "X must have a static shape [seq, batch, "
                               "input] (or [batch, seq, input] with layout 1)";
  int64_t hiddenAttr = node.getInt("hidden_size", 0);
  auto wType = cast<RankedTensorType>(w.getType());
  if (wType.getRank() != 3 || !wType.hasStaticShape() ||
      wType.getDimSize(0) != directions || wType.getDimSize(1) % gates() != 0)
    return node.emitError() << "W must be [" << directions << ", " << gates()
                            << " * hidden_size, input_size]";
  hidden = hiddenAttr ? hiddenAttr : wType.getDimSize(1) / gates();
  seq = xType.getDimSize(layout ? 1 : 0);
  batch = xType.getDimSize(layout ? 0 : 1);
  inputSize = xType.getDimSize(2);
  auto expect = [&](Value value, StringRef name,
                    ArrayRef<int64_t> shape) -> LogicalResult {
    if (!value)
      return success();
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() == shape &&
        (name == "sequence_lens" || type.getElementType() == element))
      return success();
    InFlightDiagnostic diag = node.emitError()
                              << name << " must be " << element << " [";
    llvm::interleave(shape, diag, ",");
    return diag << "], not " << value.getType();
  };
  SmallVector<int64_t> state =
      layout ? SmallVector<int64_t>{batch, directions, hidden}
             : SmallVector<int64_t>{directions, batch, hidden};
  if (failed(expect(w, "W", {directions, gates() * hidden, inputSize})) ||
      failed(expect(r, "R", {directions, gates() * hidden, hidden})) ||
      failed(expect(bias, "B", {directions, 2 * gates() * hidden})) ||
      failed(expect(lengths, "sequence_lens", {batch})) ||
      failed(expect(initialH, "initial_h", state)) ||
      failed(expect(initialC, "initial_c", state)) ||
      failed(expect(peepholes, "P", {directions, 3 * hidden})))
    return failure();
  if (lengths) {
    auto lengthType = cast<RankedTensorType>(lengths.getType());
    if (!lengthType.getElementType().isSignlessInteger(32) &&
        !lengthType.getElementType().isSignlessInteger(64))
      return node.emitError() << "sequence_lens must be int32";
    if (!lengthType.getElementType().isInteger(64))
      lengths = graph::CastOp::create(
          b, node.getLoc(), lengthType.clone(b.getI64Type()), lengths);
  }

  // The steps read X as [seq, batch, input].
  Value xs = layout ? transpose(x, {1, 0, 2}) : x;
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    Value y, lastH, lastC;
    if (failed(direction(d, xs, y, lastH, lastC)))
      return failure();
    ys.push_back(y);
    hs.push_back(lastH);
    cs.push_back(lastC);
  }
  auto join = [&](ArrayRef<Value> parts, uint64_t axis) -> Value {
    if (parts.size() == 1 || !parts[0])
      return parts[0];
    return node.create<graph::ConcatOp>(ValueRange(parts), axis);
  };
  Value y = join(ys, 1);  // [seq, dirs, batch, hidden]
  Value yh = join(hs, 0); // [dirs, batch, hidden]
  Value yc = kind == CellKind::LSTM ? join(cs, 0) : Value();
  if (layout) {
    y = transpose(y, {2, 0, 1, 3}); // [batch, seq, dirs, hidden]
    yh = transpose(yh, {1, 0, 2});  // [batch, dirs, hidden]
    yc = yc ? transpose(yc, {1, 0, 2}) : Value();
  }
  SmallVector<Value> results = {y, yh};
  if (kind == CellKind::LSTM)
    results.push_back(yc);
  if (llvm::any_of(results, [](Value v) { return !v; }))
    return failure();
  // The node lists only the outputs it names, in order.
  results.resize(std::min<size_t>(results.size(), node.getNumOutputs()));
  return node.setResults(results);
}

LogicalResult importRNN(NodeImporter &node) {
  return RecurrentImporter(node, CellKind::RNN).run();
}
LogicalResult importGRU(NodeImporter &node) {
  return RecurrentImporter(node, CellKind::GRU).run();
}
LogicalResult importLSTM(NodeImporter &node) {
  return RecurrentImporter(node, CellKind::LSTM).run();
}

} // namespace

void kiln::registerRecurrentImporters(NodeImporterRegistry &registry) {
  // Opsets 7 to 13 and 14+ (layout) read alike: layout defaults to 0.
  registry.add("RNN", /*minOpset=*/7, importRNN);
  registry.add("GRU", /*minOpset=*/7, importGRU);
  registry.add("LSTM", /*minOpset=*/7, importLSTM);
}
