//===- ImportTraining.cpp - ai.onnx.preview.training optimisers
//------------===//
//
// The optimiser update rules of ai.onnx.preview.training (Adagrad, Adam and
// Momentum): one step of each, elementwise on every tensor it optimises. A
// model that runs a training step ahead of time (an exported optimiser, a
// node test) imports them as graph arithmetic; the learning rate R and the
// step count T are run-time scalars, so the bias corrections that depend on
// T are computed at run time too.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// The inputs of an optimiser node: R, T, then `groups` lists of `count`
/// tensors each (X..., G..., V..., H...).
struct OptimizerInputs {
  Value rate;     // R, cast to the tensors' element type
  Value steps;    // T, cast to the tensors' element type
  Value positive; // T > 0
  int64_t count = 0;
  SmallVector<SmallVector<Value>> lists;
};

} // namespace

/// Reads and checks R, T and the `groups` tensor lists. Every list holds
/// float tensors, the i-th of each list of one shape and type.
static FailureOr<OptimizerInputs>
getOptimizerInputs(NodeImporter &node, unsigned groups, StringRef names) {
  unsigned numInputs = node.getNumInputs();
  if (numInputs < 2 + groups || (numInputs - 2) % groups != 0) {
    node.emitError() << "needs R, T and " << groups << " equally long lists ("
                     << names << "), got " << numInputs << " inputs";
    return failure();
  }
  OptimizerInputs in;
  in.count = (numInputs - 2) / groups;
  for (unsigned g = 0; g < groups; ++g) {
    in.lists.emplace_back();
    for (int64_t i = 0; i < in.count; ++i) {
      Value v = node.getInput(2 + g * in.count + i);
      if (!v) {
        node.emitError() << "input " << 2 + g * in.count + i << " is missing ("
                         << names << " are all required)";
        return failure();
      }
      RankedTensorType type = tensorType(v);
      if (!isa<FloatType>(type.getElementType())) {
        node.emitError() << "optimises float tensors only, got " << type
                         << " for input " << 2 + g * in.count + i;
        return failure();
      }
      if (g > 0 && type != tensorType(in.lists[0][i])) {
        node.emitError() << "input " << 2 + g * in.count + i << " is " << type
                         << ", but the tensor it updates is "
                         << tensorType(in.lists[0][i]);
        return failure();
      }
      in.lists.back().push_back(v);
    }
  }
  Value rate = node.getInput(0), steps = node.getInput(1);
  if (!rate || !steps) {
    node.emitError() << "needs the learning rate R and the step count T";
    return failure();
  }
  if (tensorType(rate).getNumElements() != 1 ||
      !isa<FloatType>(elementType(rate)) ||
      tensorType(steps).getNumElements() != 1 ||
      !elementType(steps).isInteger(64)) {
    node.emitError() << "R must be a float scalar and T an int64 scalar, got "
                     << rate.getType() << " and " << steps.getType();
    return failure();
  }
  Type element = elementType(in.lists[0][0]);
  auto scalar = [&](Value v) {
    if (tensorType(v).getRank() != 0)
      v = node.create<graph::ReshapeOp>(v, ArrayRef<int64_t>{}, false);
    return castTo(node, v, element);
  };
  in.rate = scalar(rate);
  Value t = scalar(steps);
  Value zero = createScalar(node, element, 0.0);
  in.steps = t;
  in.positive = t && zero ? node.create<graph::GreaterOp>(t, zero) : Value();
  if (!in.rate || !in.steps || !in.positive)
    return failure();
  return in;
}

/// `a * x + y` with the scalar `a` (y alone when a is 0).
static Value scaledAdd(NodeImporter &node, double a, Value x, Value y) {
  if (a == 0.0)
    return y;
  Value scale = createScalar(node, elementType(x), a);
  Value product = scale ? node.create<graph::MulOp>(scale, x) : Value();
  return product ? node.create<graph::AddOp>(product, y) : Value();
}

/// Adagrad: r = R / (1 + T * decay_factor); G' = norm_coefficient * X + G;
/// H_new = H + G'^2; X_new = X - r * G' / (sqrt(H_new) + epsilon).
/// Outputs X_new..., H_new...
static LogicalResult importAdagrad(NodeImporter &node) {
  double decay = node.getFloat("decay_factor", 0.0f);
  double epsilon = node.getFloat("epsilon", 0.0f);
  double norm = node.getFloat("norm_coefficient", 0.0f);
  if (node.hasFailed())
    return failure();
  FailureOr<OptimizerInputs> in = getOptimizerInputs(node, 3, "X, G, H");
  if (failed(in))
    return failure();
  Type element = elementType(in->lists[0][0]);
  Value one = createScalar(node, element, 1.0);
  Value denominator = scaledAdd(node, decay, in->steps, one);
  Value rate =
      denominator ? node.create<graph::DivOp>(in->rate, denominator) : Value();
  Value eps = createScalar(node, element, epsilon);
  if (!rate || !eps)
    return failure();
  SmallVector<Value> xs, hs;
  for (int64_t i = 0; i < in->count; ++i) {
    Value x = in->lists[0][i], g = in->lists[1][i], h = in->lists[2][i];
    Value reg = scaledAdd(node, norm, x, g);
    Value square = reg ? node.create<graph::MulOp>(reg, reg) : Value();
    Value hNew = square ? node.create<graph::AddOp>(h, square) : Value();
    Value root = hNew ? node.create<graph::SqrtOp>(hNew) : Value();
    Value scaling = root ? node.create<graph::AddOp>(root, eps) : Value();
    Value step = reg ? node.create<graph::MulOp>(rate, reg) : Value();
    Value update =
        step && scaling ? node.create<graph::DivOp>(step, scaling) : Value();
    Value xNew = update ? node.create<graph::SubOp>(x, update) : Value();
    if (!xNew)
      return failure();
    xs.push_back(xNew);
    hs.push_back(hNew);
  }
  xs.append(hs);
  return node.setResults(xs);
}

/// Adam: G' = norm_coefficient * X + G; V_new = alpha V + (1 - alpha) G';
/// H_new = beta H + (1 - beta) G'^2; r = R sqrt(1 - beta^T) / (1 - alpha^T)
/// when T > 0, else R; X_new = (1 - norm_coefficient_post) (X - r V_new /
/// (sqrt(H_new) + epsilon)). Outputs X_new..., V_new..., H_new...
static LogicalResult importAdam(NodeImporter &node) {
  double alpha = node.getFloat("alpha", 0.9f);
  double beta = node.getFloat("beta", 0.999f);
  double epsilon = node.getFloat("epsilon", 0.0f);
  double norm = node.getFloat("norm_coefficient", 0.0f);
  double normPost = node.getFloat("norm_coefficient_post", 0.0f);
  if (node.hasFailed())
    return failure();
  FailureOr<OptimizerInputs> in = getOptimizerInputs(node, 4, "X, G, V, H");
  if (failed(in))
    return failure();
  Type element = elementType(in->lists[0][0]);
  // The bias-corrected rate, on scalars.
  auto oneMinusPower = [&](double base) -> Value {
    Value b = createScalar(node, element, base);
    Value power = b ? node.create<graph::PowOp>(b, in->steps) : Value();
    Value one = createScalar(node, element, 1.0);
    return power && one ? node.create<graph::SubOp>(one, power) : Value();
  };
  Value betaTerm = oneMinusPower(beta), alphaTerm = oneMinusPower(alpha);
  Value root = betaTerm ? node.create<graph::SqrtOp>(betaTerm) : Value();
  Value scaled = root ? node.create<graph::MulOp>(in->rate, root) : Value();
  Value corrected = scaled && alphaTerm
                        ? node.create<graph::DivOp>(scaled, alphaTerm)
                        : Value();
  Value rate =
      corrected ? node.create<graph::WhereOp>(in->positive, corrected, in->rate)
                : Value();
  Value eps = createScalar(node, element, epsilon);
  Value alphaV = createScalar(node, element, alpha);
  Value betaV = createScalar(node, element, beta);
  Value post = createScalar(node, element, 1.0 - normPost);
  if (!rate || !eps || !alphaV || !betaV || !post)
    return failure();
  SmallVector<Value> xs, vs, hs;
  for (int64_t i = 0; i < in->count; ++i) {
    Value x = in->lists[0][i], g = in->lists[1][i], v = in->lists[2][i],
          h = in->lists[3][i];
    Value reg = scaledAdd(node, norm, x, g);
    Value momentum = node.create<graph::MulOp>(alphaV, v);
    Value vNew =
        reg && momentum ? scaledAdd(node, 1.0 - alpha, reg, momentum) : Value();
    Value square = reg ? node.create<graph::MulOp>(reg, reg) : Value();
    Value second = node.create<graph::MulOp>(betaV, h);
    Value hNew = square && second ? scaledAdd(node, 1.0 - beta, square, second)
                                  : Value();
    Value hRoot = hNew ? node.create<graph::SqrtOp>(hNew) : Value();
    Value scaling = hRoot ? node.create<graph::AddOp>(hRoot, eps) : Value();
    Value ratio =
        vNew && scaling ? node.create<graph::DivOp>(vNew, scaling) : Value();
    Value step = ratio ? node.create<graph::MulOp>(rate, ratio) : Value();
    Value xNew = step ? node.create<graph::SubOp>(x, step) : Value();
    if (xNew && normPost != 0.0)
      xNew = node.create<graph::MulOp>(post, xNew);
    if (!xNew || !hNew)
      return failure();
    xs.push_back(xNew);
    vs.push_back(vNew);
    hs.push_back(hNew);
  }
  xs.append(vs);
  xs.append(hs);
  return node.setResults(xs);
}

/// Momentum: G' = norm_coefficient * X + G; V_new = alpha V + b G' with
/// b = beta when T > 0, else 1; X_new = X - R V_new ("standard") or
/// X - R (G' + alpha V_new) ("nesterov"). Outputs X_new..., V_new...
static LogicalResult importMomentum(NodeImporter &node) {
  double alpha = node.getFloat("alpha", 0.0f);
  double beta = node.getFloat("beta", 0.0f);
  double norm = node.getFloat("norm_coefficient", 0.0f);
  std::string mode = node.getString("mode", "standard");
  if (node.hasFailed())
    return failure();
  if (mode != "standard" && mode != "nesterov")
    return node.emitError()
           << "mode must be \"standard\" or \"nesterov\", got \"" << mode
           << "\"";
  FailureOr<OptimizerInputs> in = getOptimizerInputs(node, 3, "X, G, V");
  if (failed(in))
    return failure();
  Type element = elementType(in->lists[0][0]);
  Value betaV = createScalar(node, element, beta);
  Value one = createScalar(node, element, 1.0);
  Value alphaV = createScalar(node, element, alpha);
  Value gradScale = betaV && one
                        ? node.create<graph::WhereOp>(in->positive, betaV, one)
                        : Value();
  if (!gradScale || !alphaV)
    return failure();
  SmallVector<Value> xs, vs;
  for (int64_t i = 0; i < in->count; ++i) {
    Value x = in->lists[0][i], g = in->lists[1][i], v = in->lists[2][i];
    Value reg = scaledAdd(node, norm, x, g);
    Value momentum = node.create<graph::MulOp>(alphaV, v);
    Value grad = reg ? node.create<graph::MulOp>(gradScale, reg) : Value();
    Value vNew =
        momentum && grad ? node.create<graph::AddOp>(momentum, grad) : Value();
    Value direction = vNew;
    if (vNew && mode == "nesterov") {
      Value ahead = node.create<graph::MulOp>(alphaV, vNew);
      direction = ahead ? node.create<graph::AddOp>(reg, ahead) : Value();
    }
    Value step =
        direction ? node.create<graph::MulOp>(in->rate, direction) : Value();
    Value xNew = step ? node.create<graph::SubOp>(x, step) : Value();
    if (!xNew)
      return failure();
    xs.push_back(xNew);
    vs.push_back(vNew);
  }
  xs.append(vs);
  return node.setResults(xs);
}

void kiln::registerTrainingImporters(NodeImporterRegistry &registry) {
  registry.add("ai.onnx.preview.training.Adagrad", 1, importAdagrad);
  registry.add("ai.onnx.preview.training.Adam", 1, importAdam);
  registry.add("ai.onnx.preview.training.Momentum", 1, importMomentum);
}
