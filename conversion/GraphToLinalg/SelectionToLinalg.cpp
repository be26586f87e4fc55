//===- SelectionToLinalg.cpp - NonZero, Unique, NonMaxSuppression ---------===//
//
// The ops whose result sizes depend on the data (GraphReductionOps.td)
// become scalar scf loops over tensors: each result has the static size of
// the most it can hold, zero-filled, and the loops write its first `count`
// entries and the count. They are sequential by nature (each entry's
// position depends on the ones before it), run once per model call, and
// bufferize in place (the carried tensors are updated with tensor.insert).
//
// Costs: NonZero is linear in the elements; Unique compares every pair of
// slices (quadratic in their number, like TopK's lowering); NonMaxSuppression
// scans a class's boxes once per box it takes.
//
//===----------------------------------------------------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"
#include "conversion/GraphToLinalg/LoweringUtils.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {
namespace {

using LoopBody = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value iv, ValueRange carried)>;
using BranchBody =
    llvm::function_ref<SmallVector<Value>(OpBuilder &, Location)>;

/// An scf.for over [lower, upper) carrying `init`; returns the final values.
SmallVector<Value> buildLoop(OpBuilder &b, Location loc, Value lower,
                             Value upper, ValueRange init, LoopBody body) {
  auto loop = scf::ForOp::create(
      b, loc, lower, upper, indexConstant(b, loc, 1), init,
      [&](OpBuilder &nb, Location nloc, Value iv, ValueRange carried) {
        scf::YieldOp::create(nb, nloc, body(nb, nloc, iv, carried));
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> buildLoop(OpBuilder &b, Location loc, int64_t upper,
                             ValueRange init, LoopBody body) {
  return buildLoop(b, loc, indexConstant(b, loc, 0),
                   indexConstant(b, loc, upper), init, body);
}

/// An scf.if yielding the values of whichever branch runs.
SmallVector<Value> buildIf(OpBuilder &b, Location loc, Value condition,
                           BranchBody thenBody, BranchBody elseBody) {
  auto op = scf::IfOp::create(
      b, loc, condition,
      [&](OpBuilder &nb, Location nloc) {
        scf::YieldOp::create(nb, nloc, thenBody(nb, nloc));
      },
      [&](OpBuilder &nb, Location nloc) {
        scf::YieldOp::create(nb, nloc, elseBody(nb, nloc));
      });
  return SmallVector<Value>(op.getResults());
}

/// An scf.if that passes `carried` on unchanged when `condition` is false.
SmallVector<Value> buildWhen(OpBuilder &b, Location loc, Value condition,
                             ValueRange carried, BranchBody thenBody) {
  return buildIf(b, loc, condition, thenBody, [&](OpBuilder &, Location) {
    return llvm::to_vector(carried);
  });
}

Value toI64(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

/// A tensor<i64> holding `index`.
Value countTensor(OpBuilder &b, Location loc, Value index) {
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()),
      ValueRange{toI64(b, loc, index)});
}

Value zeroFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                 Type element) {
  return createFilled(b, loc, RankedTensorType::get(shape, element), 0.0);
}

Value cmpI(OpBuilder &b, Location loc, arith::CmpIPredicate predicate, Value a,
           Value c) {
  return arith::CmpIOp::create(b, loc, predicate, a, c);
}
Value cmpF(OpBuilder &b, Location loc, arith::CmpFPredicate predicate, Value a,
           Value c) {
  return arith::CmpFOp::create(b, loc, predicate, a, c);
}
Value andI(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}
Value orI(OpBuilder &b, Location loc, Value a, Value c) {
  return arith::OrIOp::create(b, loc, a, c);
}
Value notI(OpBuilder &b, Location loc, Value a) {
  Value one = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  return arith::XOrIOp::create(b, loc, a, one);
}
Value addOne(OpBuilder &b, Location loc, Value index) {
  return arith::AddIOp::create(b, loc, index, indexConstant(b, loc, 1));
}

/// `value` viewed as 1-D (collapsed, or a scalar expanded).
Value flatten(OpBuilder &b, Location loc, Value value) {
  auto type = getTensorType(value);
  auto flatType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 1)
    return value;
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{all});
}

//===----------------------------------------------------------------------===//
// NonZero
//===----------------------------------------------------------------------===//

/// One loop over the elements in row-major order; a nonzero one writes its
/// position into the next column.
struct NonZeroLowering : OpConversionPattern<graph::NonZeroOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::NonZeroOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!allStatic(op))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = getTensorType(input);
    ArrayRef<int64_t> shape = type.getShape();
    int64_t rank = type.getRank(), count = type.getNumElements();
    Type element = type.getElementType();
    Value flat = flatten(rewriter, loc, input);
    Value indices =
        zeroFilled(rewriter, loc, {rank, count}, rewriter.getI64Type());
    SmallVector<Value> result = buildLoop(
        rewriter, loc, count, {indices, indexConstant(rewriter, loc, 0)},
        [&](OpBuilder &b, Location l, Value i, ValueRange carried) {
          Value x = tensor::ExtractOp::create(b, l, flat, i);
          Value nonzero;
          if (isa<FloatType>(element))
            nonzero = cmpF(b, l, arith::CmpFPredicate::UNE, x,
                           createScalarConstant(b, l, element, 0.0));
          else
            nonzero = cmpI(b, l, arith::CmpIPredicate::ne, x,
                           createScalarConstant(b, l, element, 0.0));
          return buildWhen(
              b, l, nonzero, carried, [&](OpBuilder &tb, Location tl) {
                Value written = carried[0], column = carried[1];
                // The position of element i, the last dimension fastest.
                Value rest = i;
                for (int64_t d = rank - 1; d >= 0; --d) {
                  Value size = indexConstant(tb, tl, shape[d]);
                  Value at = arith::RemUIOp::create(tb, tl, rest, size);
                  rest = arith::DivUIOp::create(tb, tl, rest, size);
                  written = tensor::InsertOp::create(
                      tb, tl, toI64(tb, tl, at), written,
                      ValueRange{indexConstant(tb, tl, d), column});
                }
                return SmallVector<Value>{written, addOne(tb, tl, column)};
              });
        });
    rewriter.replaceOp(op, {result[0], countTensor(rewriter, loc, result[1])});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Unique
//===----------------------------------------------------------------------===//

/// Element comparisons for Unique: floats as numbers with NaNs equal to each
/// other and after every number; integers by their signedness.
struct ElementOrder {
  Type element;
  bool isUnsigned;

  Value equal(OpBuilder &b, Location loc, Value x, Value y) const {
    if (!isa<FloatType>(element))
      return cmpI(b, loc, arith::CmpIPredicate::eq, x, y);
    Value same = cmpF(b, loc, arith::CmpFPredicate::OEQ, x, y);
    Value bothNaN = andI(b, loc, cmpF(b, loc, arith::CmpFPredicate::UNO, x, x),
                         cmpF(b, loc, arith::CmpFPredicate::UNO, y, y));
    return orI(b, loc, same, bothNaN);
  }

  Value less(OpBuilder &b, Location loc, Value x, Value y) const {
    if (!isa<FloatType>(element))
      return cmpI(b, loc,
                  isUnsigned ? arith::CmpIPredicate::ult
                             : arith::CmpIPredicate::slt,
                  x, y);
    Value below = cmpF(b, loc, arith::CmpFPredicate::OLT, x, y);
    Value numberBeforeNaN =
        andI(b, loc, cmpF(b, loc, arith::CmpFPredicate::ORD, x, x),
             cmpF(b, loc, arith::CmpFPredicate::UNO, y, y));
    return orI(b, loc, below, numberBeforeNaN);
  }
};

/// Unique over the slices along the axis, moved to the front and each
/// flattened into a row of `rows` (n x L):
///   first[i] = the least j with row j == row i;
///   pos[i]   = for a first occurrence, its place among the distinct rows
///              (the number of distinct rows less than it when sorted, of
///              distinct rows before it otherwise);
/// then each row i adds to counts[pos[first[i]]] and sets inverse[i], and a
/// first occurrence writes its row and index at pos[i].
struct UniqueLowering : OpConversionPattern<graph::UniqueOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::UniqueOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!allStatic(op))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value input = adaptor.getInput();
    auto type = getTensorType(input);
    Type element = type.getElementType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    int64_t n = type.getDimSize(axis);
    int64_t width = n == 0 ? 0 : type.getNumElements() / n;
    ElementOrder order{
        element, isUnsignedInteger(op.getInput().getType().getElementType()) ||
                     element.isInteger(1)};

    // The slices as rows: the axis moved to the front, the rest collapsed.
    SmallVector<int64_t> perm{axis};
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        perm.push_back(d);
    SmallVector<int64_t> movedShape;
    for (int64_t d : perm)
      movedShape.push_back(type.getDimSize(d));
    auto movedType = RankedTensorType::get(movedShape, element);
    Value moved = input;
    if (axis != 0) {
      Value init = tensor::EmptyOp::create(b, loc, movedShape, element);
      moved =
          linalg::TransposeOp::create(b, loc, input, init, perm)->getResult(0);
    }
    auto rowsType = RankedTensorType::get({n, width}, element);
    SmallVector<ReassociationIndices> toRows{{0}, {}};
    if (rank == 1) {
      toRows = {{0, 1}};
    } else {
      for (int64_t d = 1; d < rank; ++d)
        toRows[1].push_back(d);
    }
    Value rows =
        rank == 1
            ? tensor::ExpandShapeOp::create(b, loc, rowsType, moved, toRows)
                  .getResult()
            : tensor::CollapseShapeOp::create(b, loc, rowsType, moved, toRows)
                  .getResult();

    // Row j against row i: (equal, less), the first differing element
    // deciding.
    auto compareRows = [&](OpBuilder &ob, Location l, Value j, Value i) {
      Value no = arith::ConstantIntOp::create(ob, l, ob.getI1Type(), 0);
      SmallVector<Value> state = buildLoop(
          ob, l, width, {no, no},
          [&](OpBuilder &lb, Location ll, Value e, ValueRange carried) {
            Value x = tensor::ExtractOp::create(lb, ll, rows, ValueRange{j, e});
            Value y = tensor::ExtractOp::create(lb, ll, rows, ValueRange{i, e});
            Value differ = notI(lb, ll, order.equal(lb, ll, x, y));
            Value decided = carried[0];
            Value decidesNow = andI(lb, ll, notI(lb, ll, decided), differ);
            Value less = arith::SelectOp::create(
                lb, ll, decidesNow, order.less(lb, ll, x, y), carried[1]);
            return SmallVector<Value>{orI(lb, ll, decided, differ), less};
          });
      return std::make_pair(notI(ob, l, state[0]), state[1]);
    };

    Type i64 = b.getI64Type();
    Value zero = indexConstant(b, loc, 0);
    // first[i]
    Value first = buildLoop(
        b, loc, n, {zeroFilled(b, loc, {n}, i64)},
        [&](OpBuilder &ob, Location l, Value i, ValueRange carried) {
          Value no = arith::ConstantIntOp::create(ob, l, ob.getI1Type(), 0);
          SmallVector<Value> found = buildLoop(
              ob, l, indexConstant(ob, l, 0), i, {i, no},
              [&](OpBuilder &lb, Location ll, Value j, ValueRange state) {
                Value equal = compareRows(lb, ll, j, i).first;
                Value take = andI(lb, ll, equal, notI(lb, ll, state[1]));
                Value at = arith::SelectOp::create(lb, ll, take, j, state[0]);
                return SmallVector<Value>{at, orI(lb, ll, state[1], equal)};
              });
          Value stored = tensor::InsertOp::create(ob, l, toI64(ob, l, found[0]),
                                                  carried[0], ValueRange{i});
          return SmallVector<Value>{stored};
        })[0];
    auto firstOf = [&](OpBuilder &ob, Location l, Value i) -> Value {
      Value raw = tensor::ExtractOp::create(ob, l, first, ValueRange{i});
      return arith::IndexCastOp::create(ob, l, ob.getIndexType(), raw);
    };
    auto isFirst = [&](OpBuilder &ob, Location l, Value i) {
      return cmpI(ob, l, arith::CmpIPredicate::eq, firstOf(ob, l, i), i);
    };

    // pos[i] for the first occurrences, and the number of distinct rows.
    SmallVector<Value> placed = buildLoop(
        b, loc, n, {zeroFilled(b, loc, {n}, i64), zero},
        [&](OpBuilder &ob, Location l, Value i, ValueRange carried) {
          return buildWhen(
              ob, l, isFirst(ob, l, i), carried,
              [&](OpBuilder &tb, Location tl) {
                Value place = carried[1];
                if (op.getSorted()) {
                  place = buildLoop(
                      tb, tl, n, {indexConstant(tb, tl, 0)},
                      [&](OpBuilder &lb, Location ll, Value j,
                          ValueRange count) {
                        Value less = compareRows(lb, ll, j, i).second;
                        Value counted = andI(lb, ll, isFirst(lb, ll, j), less);
                        Value one = arith::IndexCastUIOp::create(
                            lb, ll, lb.getIndexType(), counted);
                        return SmallVector<Value>{
                            arith::AddIOp::create(lb, ll, count[0], one)};
                      })[0];
                }
                Value stored = tensor::InsertOp::create(
                    tb, tl, toI64(tb, tl, place), carried[0], ValueRange{i});
                return SmallVector<Value>{stored, addOne(tb, tl, carried[1])};
              });
        });
    Value pos = placed[0];

    // The results.
    Value valueRows = zeroFilled(b, loc, {n, width}, element);
    Value indices = zeroFilled(b, loc, {n}, i64);
    Value inverse = zeroFilled(b, loc, {n}, i64);
    Value counts = zeroFilled(b, loc, {n}, i64);
    SmallVector<Value> results = buildLoop(
        b, loc, n, {valueRows, indices, inverse, counts},
        [&](OpBuilder &ob, Location l, Value i, ValueRange carried) {
          Value f = firstOf(ob, l, i);
          Value placeI64 = tensor::ExtractOp::create(ob, l, pos, ValueRange{f});
          Value place =
              arith::IndexCastOp::create(ob, l, ob.getIndexType(), placeI64);
          Value inv = tensor::InsertOp::create(ob, l, placeI64, carried[2],
                                               ValueRange{i});
          Value old =
              tensor::ExtractOp::create(ob, l, carried[3], ValueRange{place});
          Value one = arith::ConstantIntOp::create(ob, l, ob.getI64Type(), 1);
          Value cnt = tensor::InsertOp::create(
              ob, l, arith::AddIOp::create(ob, l, old, one), carried[3],
              ValueRange{place});
          SmallVector<Value> firstWrites = buildWhen(
              ob, l, cmpI(ob, l, arith::CmpIPredicate::eq, f, i),
              {carried[0], carried[1]}, [&](OpBuilder &tb, Location tl) {
                SmallVector<OpFoldResult> offsets{i, tb.getIndexAttr(0)};
                SmallVector<OpFoldResult> sizes{tb.getIndexAttr(1),
                                                tb.getIndexAttr(width)};
                SmallVector<OpFoldResult> strides(2, tb.getIndexAttr(1));
                Value row = tensor::ExtractSliceOp::create(
                    tb, tl, rows, offsets, sizes, strides);
                offsets[0] = place;
                Value written = tensor::InsertSliceOp::create(
                    tb, tl, row, carried[0], offsets, sizes, strides);
                Value idx = tensor::InsertOp::create(
                    tb, tl, toI64(tb, tl, i), carried[1], ValueRange{place});
                return SmallVector<Value>{written, idx};
              });
          return SmallVector<Value>{firstWrites[0], firstWrites[1], inv, cnt};
        });

    // The rows back into the input's layout.
    Value values =
        rank == 1
            ? tensor::CollapseShapeOp::create(b, loc, type, results[0], toRows)
                  .getResult()
            : tensor::ExpandShapeOp::create(b, loc, movedType, results[0],
                                            toRows)
                  .getResult();
    if (axis != 0) {
      SmallVector<int64_t> back(rank);
      for (int64_t d = 0; d < rank; ++d)
        back[perm[d]] = d;
      Value init = tensor::EmptyOp::create(b, loc, type.getShape(), element);
      values =
          linalg::TransposeOp::create(b, loc, values, init, back)->getResult(0);
    }
    rewriter.replaceOp(op, {values, results[1], results[2], results[3],
                            countTensor(b, loc, placed[1])});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// NonMaxSuppression
//===----------------------------------------------------------------------===//

/// Per batch and class: up to `boxes` picks, each the best box not taken
/// yet (above the score threshold; NaN scores never), kept when no kept box
/// of the class overlaps it by more than the IoU threshold, until the class
/// has its `max_boxes` or no box is left.
struct NonMaxSuppressionLowering
    : OpConversionPattern<graph::NonMaxSuppressionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::NonMaxSuppressionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!allStatic(op))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    auto boxesType = getTensorType(adaptor.getBoxes());
    Type f32 = rewriter.getF32Type();
    if (boxesType.getElementType() != f32 ||
        getTensorType(adaptor.getScores()).getElementType() != f32)
      return rewriter.notifyMatchFailure(op, "boxes and scores must be f32");
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value boxes = adaptor.getBoxes(), scores = adaptor.getScores();
    int64_t batches = boxesType.getDimSize(0);
    int64_t numBoxes = boxesType.getDimSize(1);
    int64_t classes = getTensorType(scores).getDimSize(1);
    int64_t bound = op.getBound();
    bool center = op.getCenterPointBox();
    Type i64 = b.getI64Type(), i1 = b.getI1Type();

    Value limit = tensor::ExtractOp::create(b, loc, adaptor.getMaxBoxes());
    limit = arith::MaxSIOp::create(
        b, loc, limit, arith::ConstantIntOp::create(b, loc, i64, 0));
    limit = arith::MinSIOp::create(
        b, loc, limit, arith::ConstantIntOp::create(b, loc, i64, bound));
    limit = arith::IndexCastOp::create(b, loc, b.getIndexType(), limit);
    auto readScalar = [&](Value scalar) -> Value {
      Value value = tensor::ExtractOp::create(b, loc, scalar);
      if (value.getType() != f32)
        value = arith::ExtFOp::create(b, loc, f32, value);
      return value;
    };
    Value iouThreshold = readScalar(adaptor.getIouThreshold());
    Value scoreThreshold = adaptor.getScoreThreshold()
                               ? readScalar(adaptor.getScoreThreshold())
                               : Value();

    // (x min, x max, y min, y max) of box `box` of batch `batch`.
    auto extent = [&](OpBuilder &ob, Location l, Value batch, Value box) {
      SmallVector<Value> v;
      for (int64_t c = 0; c < 4; ++c)
        v.push_back(tensor::ExtractOp::create(
            ob, l, boxes, ValueRange{batch, box, indexConstant(ob, l, c)}));
      if (center) {
        Value half = arith::ConstantOp::create(ob, l, ob.getF32FloatAttr(0.5f));
        Value w = arith::MulFOp::create(ob, l, v[2], half);
        Value h = arith::MulFOp::create(ob, l, v[3], half);
        return SmallVector<Value>{arith::SubFOp::create(ob, l, v[0], w),
                                  arith::AddFOp::create(ob, l, v[0], w),
                                  arith::SubFOp::create(ob, l, v[1], h),
                                  arith::AddFOp::create(ob, l, v[1], h)};
      }
      return SmallVector<Value>{arith::MinimumFOp::create(ob, l, v[1], v[3]),
                                arith::MaximumFOp::create(ob, l, v[1], v[3]),
                                arith::MinimumFOp::create(ob, l, v[0], v[2]),
                                arith::MaximumFOp::create(ob, l, v[0], v[2])};
    };
    // Whether boxes p and q overlap by more than the threshold (ONNX's
    // reference: a positive intersection, positive areas and union).
    auto suppresses = [&](OpBuilder &ob, Location l, ArrayRef<Value> p,
                          ArrayRef<Value> q) -> Value {
      auto sub = [&](Value x, Value y) {
        return arith::SubFOp::create(ob, l, x, y).getResult();
      };
      auto mul = [&](Value x, Value y) {
        return arith::MulFOp::create(ob, l, x, y).getResult();
      };
      auto gt = [&](Value x, Value y) {
        return cmpF(ob, l, arith::CmpFPredicate::OGT, x, y);
      };
      Value zeroF = arith::ConstantOp::create(ob, l, ob.getF32FloatAttr(0.0f));
      Value xLow = arith::MaximumFOp::create(ob, l, p[0], q[0]);
      Value xHigh = arith::MinimumFOp::create(ob, l, p[1], q[1]);
      Value yLow = arith::MaximumFOp::create(ob, l, p[2], q[2]);
      Value yHigh = arith::MinimumFOp::create(ob, l, p[3], q[3]);
      Value inter = mul(sub(xHigh, xLow), sub(yHigh, yLow));
      Value areaP = mul(sub(p[1], p[0]), sub(p[3], p[2]));
      Value areaQ = mul(sub(q[1], q[0]), sub(q[3], q[2]));
      Value unionArea = sub(arith::AddFOp::create(ob, l, areaP, areaQ), inter);
      Value iou = arith::DivFOp::create(ob, l, inter, unionArea);
      Value result = andI(ob, l, gt(xHigh, xLow), gt(yHigh, yLow));
      for (Value positive : {inter, areaP, areaQ, unionArea})
        result = andI(ob, l, result, gt(positive, zeroF));
      return andI(ob, l, result, gt(iou, iouThreshold));
    };

    Value selected = zeroFilled(b, loc, {batches * classes * bound, 3}, i64);
    Value taken = zeroFilled(b, loc, {numBoxes}, i1);
    Value kept = zeroFilled(b, loc, {std::max<int64_t>(bound, 1)}, i64);
    Value zero = indexConstant(b, loc, 0);
    SmallVector<Value> result = buildLoop(
        b, loc, batches, {selected, zero, taken, kept},
        [&](OpBuilder &bb, Location bl, Value batch, ValueRange byBatch) {
          return buildLoop(
              bb, bl, classes, byBatch,
              [&](OpBuilder &cb, Location cl, Value cls, ValueRange byClass) {
                Value fresh = linalg::FillOp::create(
                                  cb, cl,
                                  ValueRange{arith::ConstantIntOp::create(
                                      cb, cl, cb.getI1Type(), 0)},
                                  ValueRange{byClass[2]})
                                  .getResult(0);
                Value done = cmpI(cb, cl, arith::CmpIPredicate::eq, limit,
                                  indexConstant(cb, cl, 0));
                // (selected, count, taken, kept, kept count, done)
                SmallVector<Value> init{byClass[0],
                                        byClass[1],
                                        fresh,
                                        byClass[3],
                                        indexConstant(cb, cl, 0),
                                        done};
                SmallVector<Value> picks = buildLoop(
                    cb, cl, numBoxes, init,
                    [&](OpBuilder &pb, Location pl, Value, ValueRange s) {
                      return buildWhen(pb, pl, notI(pb, pl, s[5]), s,
                                       [&](OpBuilder &tb, Location tl) {
                                         return pick(tb, tl, s, batch, cls,
                                                     numBoxes, scores,
                                                     scoreThreshold, limit,
                                                     extent, suppresses);
                                       });
                    });
                return SmallVector<Value>{picks[0], picks[1], picks[2],
                                          picks[3]};
              });
        });
    rewriter.replaceOp(op, {result[0], countTensor(b, loc, result[1])});
    return success();
  }

  /// One pick: state (selected, count, taken, kept, kept count, done).
  template <typename Extent, typename Suppresses>
  static SmallVector<Value>
  pick(OpBuilder &b, Location loc, ValueRange s, Value batch, Value cls,
       int64_t numBoxes, Value scores, Value scoreThreshold, Value limit,
       Extent &extent, Suppresses &suppresses) {
    Type f32 = b.getF32Type();
    Value none = indexConstant(b, loc, -1);
    Value lowest = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    // The best box left: the highest score, the lowest index among equals.
    SmallVector<Value> best = buildLoop(
        b, loc, numBoxes, {none, lowest},
        [&](OpBuilder &lb, Location l, Value j, ValueRange state) {
          Value score = tensor::ExtractOp::create(lb, l, scores,
                                                  ValueRange{batch, cls, j});
          if (score.getType() != f32)
            score = arith::ExtFOp::create(lb, l, f32, score);
          Value free = notI(lb, l, tensor::ExtractOp::create(lb, l, s[2], j));
          Value eligible =
              andI(lb, l, free,
                   cmpF(lb, l, arith::CmpFPredicate::ORD, score, score));
          if (scoreThreshold)
            eligible = andI(
                lb, l, eligible,
                cmpF(lb, l, arith::CmpFPredicate::OGT, score, scoreThreshold));
          Value better =
              orI(lb, l, cmpI(lb, l, arith::CmpIPredicate::eq, state[0], none),
                  cmpF(lb, l, arith::CmpFPredicate::OGT, score, state[1]));
          Value take = andI(lb, l, eligible, better);
          return SmallVector<Value>{
              arith::SelectOp::create(lb, l, take, j, state[0]),
              arith::SelectOp::create(lb, l, take, score, state[1])};
        });
    Value found = cmpI(b, loc, arith::CmpIPredicate::ne, best[0], none);
    SmallVector<Value> next = buildIf(
        b, loc, found,
        [&](OpBuilder &tb, Location tl) {
          Value box = best[0];
          Value taken = tensor::InsertOp::create(
              tb, tl, arith::ConstantIntOp::create(tb, tl, tb.getI1Type(), 1),
              s[2], ValueRange{box});
          SmallVector<Value> mine = extent(tb, tl, batch, box);
          Value no = arith::ConstantIntOp::create(tb, tl, tb.getI1Type(), 0);
          Value suppressed = buildLoop(
              tb, tl, indexConstant(tb, tl, 0), s[4], {no},
              [&](OpBuilder &lb, Location l, Value k, ValueRange state) {
                Value other = arith::IndexCastOp::create(
                    lb, l, lb.getIndexType(),
                    tensor::ExtractOp::create(lb, l, s[3], k));
                SmallVector<Value> theirs = extent(lb, l, batch, other);
                return SmallVector<Value>{
                    orI(lb, l, state[0], suppresses(lb, l, mine, theirs))};
              })[0];
          SmallVector<Value> carried{s[0], s[1], taken, s[3], s[4]};
          SmallVector<Value> after = buildWhen(
              tb, tl, notI(tb, tl, suppressed), carried,
              [&](OpBuilder &kb, Location kl) {
                Value row = s[1];
                Value written = s[0];
                Value batchIndex = toI64(kb, kl, batch);
                Value classIndex = toI64(kb, kl, cls);
                Value boxIndex = toI64(kb, kl, box);
                for (auto [c, value] : llvm::enumerate(
                         SmallVector<Value>{batchIndex, classIndex, boxIndex}))
                  written = tensor::InsertOp::create(
                      kb, kl, value, written,
                      ValueRange{row, indexConstant(kb, kl, c)});
                Value keptNow = tensor::InsertOp::create(kb, kl, boxIndex, s[3],
                                                         ValueRange{s[4]});
                return SmallVector<Value>{written, addOne(kb, kl, row), taken,
                                          keptNow, addOne(kb, kl, s[4])};
              });
          Value full = cmpI(tb, tl, arith::CmpIPredicate::sge, after[4], limit);
          after.push_back(full);
          return after;
        },
        [&](OpBuilder &eb, Location el) {
          SmallVector<Value> same(s.begin(), s.end());
          same[5] = arith::ConstantIntOp::create(eb, el, eb.getI1Type(), 1);
          return same;
        });
    return next;
  }
};

} // namespace

void populateSelectionToLinalgPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<NonZeroLowering, UniqueLowering, NonMaxSuppressionLowering>(
      converter, patterns.getContext());
}

} // namespace kiln
