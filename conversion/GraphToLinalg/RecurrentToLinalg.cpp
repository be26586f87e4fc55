//===- RecurrentToLinalg.cpp - graph.recurrence as a loop over the steps --===//
//
// graph.recurrence becomes an scf.for over the sequence that carries the
// hidden state (and LSTM's cell state) and the output being filled. Each
// step is a few ops on [batch, hidden] tensors: the step's slice of the
// input projections (computed before, as one GEMM, by the importer), one
// linalg.matmul of the state with R^T (GRU without linear_before_reset: a
// second one on r * H), and elementwise linalg.generics for the gates, whose
// bodies apply the activations. CPU code generation then treats the loop's
// body as it treats any other linalg ops.
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;

namespace kiln {
namespace {

/// One activation with its parameters.
struct Activation {
  StringRef name;
  float alpha, beta;
};

/// `activation` applied to the float scalar `x`.
Value activate(OpBuilder &b, Location loc, const Activation &activation,
               Value x) {
  auto c = [&](double value) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(x.getType(), value))
        .getResult();
  };
  auto mul = [&](Value l, Value r) -> Value {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) -> Value {
    return arith::AddFOp::create(b, loc, l, r);
  };
  StringRef name = activation.name;
  float alpha = activation.alpha, beta = activation.beta;
  if (name == "sigmoid")
    return buildActivation(b, loc, graph::Activation::Sigmoid, {}, x);
  if (name == "tanh")
    return math::TanhOp::create(b, loc, x);
  if (name == "relu")
    return buildActivation(b, loc, graph::Activation::Relu, {}, x);
  if (name == "leakyrelu")
    return buildActivation(b, loc, graph::Activation::LeakyRelu, {alpha}, x);
  if (name == "hardsigmoid")
    return buildActivation(b, loc, graph::Activation::HardSigmoid,
                           {alpha, beta}, x);
  if (name == "thresholdedrelu") {
    Value above =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(alpha));
    return arith::SelectOp::create(b, loc, above, x, c(0));
  }
  if (name == "elu") {
    Value negative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, c(0));
    Value expm1 =
        arith::SubFOp::create(b, loc, math::ExpOp::create(b, loc, x), c(1));
    return arith::SelectOp::create(b, loc, negative, mul(c(alpha), expm1), x);
  }
  if (name == "softsign")
    return buildSoftsign(b, loc, x);
  if (name == "softplus")
    return buildSoftplus(b, loc, x);
  if (name == "affine")
    return add(mul(c(alpha), x), c(beta));
  // scaledtanh (the verifier admits no other name)
  return mul(c(alpha), math::TanhOp::create(b, loc, mul(c(beta), x)));
}

struct RecurrenceLowering : OpConversionPattern<graph::RecurrenceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::RecurrenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto projectedType = getTensorType(adaptor.getProjected());
    if (!projectedType.hasStaticShape() ||
        !getTensorType(adaptor.getInitialH()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Location loc = op.getLoc();
    graph::RecurrentCell cell = op.getCell();
    bool lstm = cell == graph::RecurrentCell::LSTM;
    bool gru = cell == graph::RecurrentCell::GRU;
    bool linearBeforeReset = op.getLinearBeforeReset();
    int64_t seq = projectedType.getDimSize(0);
    int64_t batch = projectedType.getDimSize(1);
    int64_t width = projectedType.getDimSize(2);
    int64_t hidden = getTensorType(adaptor.getInitialH()).getDimSize(1);
    Type element = projectedType.getElementType();
    auto stateType = RankedTensorType::get({batch, hidden}, element);
    auto rowType = RankedTensorType::get({batch, width}, element);
    std::optional<float> clip;
    if (op.getClip())
      clip = op.getClip()->convertToFloat();
    SmallVector<Activation> acts;
    for (auto [name, alpha, beta] :
         llvm::zip(op.getActivations(), op.getActivationAlpha(),
                   op.getActivationBeta()))
      acts.push_back({cast<StringAttr>(name).getValue(), alpha, beta});

    Value recurrent = adaptor.getRecurrent();
    // GRU without linear_before_reset: H multiplies R's z and r columns,
    // r * H its h columns.
    Value recurrentState = recurrent, recurrentReset;
    int64_t stateWidth = width;
    if (gru && !linearBeforeReset) {
      stateWidth = 2 * hidden;
      recurrentState =
          slice(rewriter, loc, recurrent, 0, 0, hidden, stateWidth);
      recurrentReset =
          slice(rewriter, loc, recurrent, 0, 2 * hidden, hidden, hidden);
    }
    // lengths [batch] as [batch, 1], to broadcast along the hidden units.
    Value lengths = adaptor.getLengths();
    if (lengths)
      lengths = tensor::ExpandShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({batch, 1}, rewriter.getI64Type()), lengths,
          SmallVector<ReassociationIndices>{{0, 1}});

    // The states of every step, [seq + 1, batch, hidden]: step s reads its
    // previous state at s and writes the new one at s + 1. Carrying the whole
    // history (rather than one state) keeps every value the loop yields an
    // insert into what it carries, which bufferizes in place whatever later
    // passes do to the ops that compute the state.
    auto historyType = RankedTensorType::get({seq + 1, batch, hidden}, element);
    auto atStep = [&](OpBuilder &b, Location l, Value index) {
      return SmallVector<OpFoldResult>{index, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
    };
    SmallVector<OpFoldResult> stateSizes = {rewriter.getIndexAttr(1),
                                            rewriter.getIndexAttr(batch),
                                            rewriter.getIndexAttr(hidden)};
    SmallVector<OpFoldResult> unitSteps(3, rewriter.getIndexAttr(1));
    auto history = [&](Value initial) -> Value {
      Value empty = tensor::EmptyOp::create(rewriter, loc,
                                            historyType.getShape(), element);
      return tensor::InsertSliceOp::create(
          rewriter, loc, initial, empty,
          atStep(rewriter, loc,
                 arith::ConstantIndexOp::create(rewriter, loc, 0)),
          stateSizes, unitSteps);
    };
    SmallVector<Value> inits = {history(adaptor.getInitialH())};
    if (lstm)
      inits.push_back(history(adaptor.getInitialC()));
    auto yType = RankedTensorType::get({seq, batch, hidden}, element);
    inits.push_back(
        tensor::EmptyOp::create(rewriter, loc, yType.getShape(), element));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value steps = arith::ConstantIndexOp::create(rewriter, loc, seq);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, steps, one, inits,
        [&](OpBuilder &b, Location l, Value step, ValueRange carried) {
          Value next = arith::AddIOp::create(
              b, l, step, arith::ConstantIndexOp::create(b, l, 1));
          auto read = [&](Value all, Value index) -> Value {
            return tensor::ExtractSliceOp::create(b, l, stateType, all,
                                                  atStep(b, l, index),
                                                  stateSizes, unitSteps);
          };
          Value h = read(carried[0], step);
          Value c = lstm ? read(carried[1], step) : Value();
          Value hInit = read(carried[0], next);
          Value cInit = lstm ? read(carried[1], next) : Value();
          Value y = carried.back();
          Value t = step;
          if (op.getReverse())
            t = arith::SubIOp::create(
                b, l, arith::ConstantIndexOp::create(b, l, seq - 1), step);
          // P[t]: [batch, width].
          SmallVector<OpFoldResult> offsets = {t, b.getIndexAttr(0),
                                               b.getIndexAttr(0)};
          Value xt = tensor::ExtractSliceOp::create(
              b, l, rowType, adaptor.getProjected(), offsets,
              {b.getIndexAttr(1), b.getIndexAttr(batch), b.getIndexAttr(width)},
              {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
          Value hr = matmul(b, l, h, recurrentState, batch, stateWidth);
          auto gateOf = [&](Value all, int64_t g) {
            return slice(b, l, all, 0, g * hidden, batch, hidden);
          };
          // The step, as a scalar of the lengths' type, for the mask.
          Value tI64 = lengths
                           ? arith::IndexCastOp::create(b, l, b.getI64Type(), t)
                                 .getResult()
                           : Value();
          auto pre = [&](OpBuilder &nb, Location nl, Value x) {
            if (!clip)
              return x;
            auto bound = [&](double v) {
              return arith::ConstantOp::create(nb, nl,
                                               nb.getFloatAttr(element, v));
            };
            x = arith::MaximumFOp::create(nb, nl, x, bound(-*clip));
            return arith::MinimumFOp::create(nb, nl, x, bound(*clip))
                .getResult();
          };
          auto sum = [&](OpBuilder &nb, Location nl, Value x, Value r) {
            return pre(nb, nl, arith::AddFOp::create(nb, nl, x, r));
          };
          // `value` where the step is live for the batch entry, else `old`
          // (lengths is the last operand when given).
          auto keep = [&](OpBuilder &nb, Location nl, ValueRange args,
                          Value value, Value old) -> Value {
            if (!lengths)
              return value;
            Value live = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::slt, tI64, args.back());
            return arith::SelectOp::create(nb, nl, live, value, old);
          };
          auto withLengths = [&](SmallVector<Value> operands) {
            if (lengths)
              operands.push_back(lengths);
            return operands;
          };

          Value newH, newC;
          if (cell == graph::RecurrentCell::RNN) {
            newH = buildBroadcastElementwise(
                b, l, stateType, withLengths({xt, hr, h}),
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  Value v = activate(nb, nl, acts[0], sum(nb, nl, a[0], a[1]));
                  return keep(nb, nl, a, v, a[2]);
                },
                hInit);
          } else if (gru) {
            Value xz = gateOf(xt, 0), xr = gateOf(xt, 1), xh = gateOf(xt, 2);
            Value hz = gateOf(hr, 0), hrr = gateOf(hr, 1);
            Value candidate;
            Value z = buildBroadcastElementwise(
                b, l, stateType, {xz, hz},
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  return activate(nb, nl, acts[0], sum(nb, nl, a[0], a[1]));
                });
            if (linearBeforeReset) {
              // h = g(P_h + r * (H R_h + Rb_h)).
              SmallVector<Value> operands = {xr, hrr, xh, gateOf(hr, 2)};
              if (adaptor.getStateBias())
                operands.push_back(adaptor.getStateBias());
              candidate = buildBroadcastElementwise(
                  b, l, stateType, operands,
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    Value r =
                        activate(nb, nl, acts[0], sum(nb, nl, a[0], a[1]));
                    Value hh = a[3];
                    if (a.size() > 4)
                      hh = arith::AddFOp::create(nb, nl, hh, a[4]);
                    Value gated = arith::MulFOp::create(nb, nl, r, hh);
                    return activate(nb, nl, acts[1], sum(nb, nl, a[2], gated));
                  });
            } else {
              // h = g(P_h + (r * H) R_h).
              Value resetH = buildBroadcastElementwise(
                  b, l, stateType, {xr, hrr, h},
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    Value r =
                        activate(nb, nl, acts[0], sum(nb, nl, a[0], a[1]));
                    return arith::MulFOp::create(nb, nl, r, a[2]).getResult();
                  });
              Value product =
                  matmul(b, l, resetH, recurrentReset, batch, hidden);
              candidate = buildBroadcastElementwise(
                  b, l, stateType, {xh, product},
                  [&](OpBuilder &nb, Location nl, ValueRange a) {
                    return activate(nb, nl, acts[1], sum(nb, nl, a[0], a[1]));
                  });
            }
            // H = (1 - z) * h + z * H = h + z * (H - h).
            newH = buildBroadcastElementwise(
                b, l, stateType, withLengths({z, candidate, h}),
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  Value diff = arith::SubFOp::create(nb, nl, a[2], a[1]);
                  Value v = arith::AddFOp::create(
                      nb, nl, a[1], arith::MulFOp::create(nb, nl, a[0], diff));
                  return keep(nb, nl, a, v, a[2]);
                },
                hInit);
          } else {
            Value peepholes = adaptor.getPeepholes();
            auto peephole = [&](int64_t g) -> Value {
              return peepholes ? slice1(b, l, peepholes, g * hidden, hidden)
                               : Value();
            };
            // C = f * C + i * g(c~); peepholes p_i, p_f on the old C.
            SmallVector<Value> cOperands = {gateOf(xt, 0),
                                            gateOf(hr, 0),
                                            gateOf(xt, 2),
                                            gateOf(hr, 2),
                                            gateOf(xt, 3),
                                            gateOf(hr, 3),
                                            c};
            if (peepholes)
              cOperands.append({peephole(0), peephole(2)});
            bool inputForget = op.getInputForget();
            newC = buildBroadcastElementwise(
                b, l, stateType, withLengths(cOperands),
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  Value oldC = a[6];
                  Value gi = arith::AddFOp::create(nb, nl, a[0], a[1]);
                  Value gf = arith::AddFOp::create(nb, nl, a[2], a[3]);
                  if (peepholes) {
                    gi = arith::AddFOp::create(
                        nb, nl, gi, arith::MulFOp::create(nb, nl, a[7], oldC));
                    gf = arith::AddFOp::create(
                        nb, nl, gf, arith::MulFOp::create(nb, nl, a[8], oldC));
                  }
                  Value i = activate(nb, nl, acts[0], pre(nb, nl, gi));
                  Value f =
                      inputForget
                          ? arith::SubFOp::create(
                                nb, nl,
                                arith::ConstantOp::create(
                                    nb, nl, nb.getFloatAttr(element, 1.0)),
                                i)
                                .getResult()
                          : activate(nb, nl, acts[0], pre(nb, nl, gf));
                  Value candidate =
                      activate(nb, nl, acts[1], sum(nb, nl, a[4], a[5]));
                  Value v = arith::AddFOp::create(
                      nb, nl, arith::MulFOp::create(nb, nl, f, oldC),
                      arith::MulFOp::create(nb, nl, i, candidate));
                  return keep(nb, nl, a, v, oldC);
                },
                cInit);
            // H = o * h(C); peephole p_o on the new C.
            SmallVector<Value> hOperands = {gateOf(xt, 1), gateOf(hr, 1), newC,
                                            h};
            if (peepholes)
              hOperands.push_back(peephole(1));
            newH = buildBroadcastElementwise(
                b, l, stateType, withLengths(hOperands),
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  Value go = arith::AddFOp::create(nb, nl, a[0], a[1]);
                  if (peepholes)
                    go = arith::AddFOp::create(
                        nb, nl, go, arith::MulFOp::create(nb, nl, a[4], a[2]));
                  Value o = activate(nb, nl, acts[0], pre(nb, nl, go));
                  Value v = arith::MulFOp::create(
                      nb, nl, o, activate(nb, nl, acts[2], a[2]));
                  return keep(nb, nl, a, v, a[3]);
                },
                hInit);
          }
          // The step's output: H where live, else 0.
          Value out = newH;
          if (lengths)
            out = buildBroadcastElementwise(
                b, l, stateType, {newH, lengths},
                [&](OpBuilder &nb, Location nl, ValueRange a) {
                  Value live = arith::CmpIOp::create(
                      nb, nl, arith::CmpIPredicate::slt, tI64, a[1]);
                  Value zeroValue = arith::ConstantOp::create(
                      nb, nl, nb.getFloatAttr(element, 0.0));
                  return arith::SelectOp::create(nb, nl, live, a[0], zeroValue)
                      .getResult();
                });
          Value written = tensor::InsertSliceOp::create(
              b, l, out, y, offsets,
              {b.getIndexAttr(1), b.getIndexAttr(batch),
               b.getIndexAttr(hidden)},
              {b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
          auto write = [&](Value value, Value all) -> Value {
            return tensor::InsertSliceOp::create(
                b, l, value, all, atStep(b, l, next), stateSizes, unitSteps);
          };
          SmallVector<Value> yielded = {write(newH, carried[0])};
          if (lstm)
            yielded.push_back(write(newC, carried[1]));
          yielded.push_back(written);
          scf::YieldOp::create(b, l, yielded);
        });
    // The last states are the history's last entries.
    ValueRange results = loop.getResults();
    Value last = arith::ConstantIndexOp::create(rewriter, loc, seq);
    auto lastOf = [&](Value all) -> Value {
      return tensor::ExtractSliceOp::create(rewriter, loc, stateType, all,
                                            atStep(rewriter, loc, last),
                                            stateSizes, unitSteps);
    };
    SmallVector<Value> replacements = {results.back(), lastOf(results[0])};
    if (lstm)
      replacements.push_back(lastOf(results[1]));
    rewriter.replaceOp(op, replacements);
    return success();
  }

  /// `value`[row:row+rows, column:column+columns] of a 2-D tensor.
  static Value slice(OpBuilder &b, Location loc, Value value, int64_t row,
                     int64_t column, int64_t rows, int64_t columns) {
    auto type = RankedTensorType::get({rows, columns},
                                      getTensorType(value).getElementType());
    if (getTensorType(value) == type)
      return value;
    return tensor::ExtractSliceOp::create(
        b, loc, type, value,
        ArrayRef<OpFoldResult>{b.getIndexAttr(row), b.getIndexAttr(column)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(rows), b.getIndexAttr(columns)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }

  /// `value`[start:start+size] of a 1-D tensor.
  static Value slice1(OpBuilder &b, Location loc, Value value, int64_t start,
                      int64_t size) {
    auto type =
        RankedTensorType::get({size}, getTensorType(value).getElementType());
    return tensor::ExtractSliceOp::create(
        b, loc, type, value, ArrayRef<OpFoldResult>{b.getIndexAttr(start)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }

  /// lhs [rows, k] x rhs [k, columns].
  static Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      int64_t rows, int64_t columns) {
    auto type = RankedTensorType::get({rows, columns},
                                      getTensorType(lhs).getElementType());
    Value zero = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type.getElementType(), 0.0));
    Value init = createFilled(b, loc, type, zero);
    return linalg::MatmulOp::create(b, loc, TypeRange{type},
                                    ValueRange{lhs, rhs}, init)
        .getResult(0);
  }
};

} // namespace

void populateRecurrentToLinalgPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<RecurrenceLowering>(converter, patterns.getContext());
}

} // namespace kiln
