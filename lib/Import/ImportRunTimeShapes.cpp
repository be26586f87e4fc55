//===- ImportRunTimeShapes.cpp - Shape operands read at run time ----------===//
//
// A Reshape, Squeeze, Unsqueeze, Expand, Tile, ConstantOfShape or Range
// whose shape operand is a run-time value. Kiln's buffers have sizes known
// when compiling, so each result dimension that the operand decides is a
// size the run decides (NodeImporter::setDataDependent), as NonZero's or a
// run-time Slice's are: the op computes the result padded to a bound along
// that dimension, the size is computed from the operand, checked against
// the bound when the model runs (graph.check_size: out of range, the run
// fails naming the node), and the runtime returns the output at the run's
// shape.
//
// The bound of a dimension comes, in this order, from --dynamic-dims by the
// size's name (`<output>_<dimension>`, or the dim_param the model declares
// there), from the size the model declares for that dimension, or from
// what the operator allows (a Reshape's sizes are at most its element
// count; a Squeeze's or Unsqueeze's are the input's); without any, the
// compiler refuses the node and names the option. A Reshape's elements are
// laid into the padded result by a gather, so it costs the padded size.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportRunTimeShapes.h"

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/Support/MathExtras.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

using namespace mlir;
using namespace kiln;
using kiln::graph::formatShape;
using kiln::import::castTo;
using kiln::import::createI64Constant;
using kiln::import::tensorType;

namespace {

/// The most elements that a result padded to its bounds may hold.
constexpr int64_t kMaxPaddedElements = int64_t(1) << 24;

/// The scalar arithmetic of sizes read at run time, on 0-D i64 tensors,
/// null-safe as NullSafe is.
class Sizes : public import::NullSafe {
public:
  explicit Sizes(NodeImporter &node) : NullSafe{node} {}

  Value constant(int64_t value) { return createI64Constant(node, {}, {value}); }
  Value real(double value) {
    return scalar(value, node.getBuilder().getF64Type());
  }
  /// 1 where `condition` holds, else 0.
  Value ones(Value condition) {
    return castTo(node, condition, node.getBuilder().getI64Type());
  }
  /// Entry `i` of the run-time vector `values` (a scalar is one entry), as
  /// i64.
  Value entry(Value values, int64_t i) {
    if (!values)
      return {};
    Builder &b = node.getBuilder();
    if (tensorType(values).getRank() == 0)
      values = node.createFolded<graph::ReshapeOp>(
          values, b.getDenseI64ArrayAttr({1}), b.getBoolAttr(true));
    values = castTo(node, values, b.getI64Type());
    return values
               ? node.create<graph::GatherOp>(values, constant(i), uint64_t(0))
               : Value();
  }
  /// `size`, checked against [low, high] when the model runs and clamped
  /// into it; `what` names it in the run's error.
  Value check(Value size, int64_t low, int64_t high, const std::string &what) {
    Builder &b = node.getBuilder();
    return size
               ? node.create<graph::CheckSizeOp>(size, b.getI64IntegerAttr(low),
                                                 b.getI64IntegerAttr(high),
                                                 b.getStringAttr(what))
               : Value();
  }
};

std::string dimension(int64_t d) { return "dimension " + std::to_string(d); }

/// Operand `i` as a 1-D integer (or, with `real`, float) tensor of a
/// static length; an error names `what` otherwise.
FailureOr<int64_t> vectorLength(NodeImporter &node, unsigned i, StringRef what,
                                bool real = false) {
  RankedTensorType type = tensorType(node.getInput(i));
  Type element = type.getElementType();
  if (type.getRank() != 1 || type.isDynamicDim(0) ||
      !(isa<IntegerType>(element) || (real && isa<FloatType>(element))))
    return node.emitError()
           << what << " must be a 1-D " << (real ? "float" : "integer")
           << " tensor of a static length, not " << type;
  return type.getDimSize(0);
}

/// The input must have a static shape: its sizes are in the code.
LogicalResult staticInput(NodeImporter &node, Value input) {
  if (tensorType(input).hasStaticShape())
    return success();
  return node.emitError() << "an operand read at run time shapes only an "
                             "input of static shape, not "
                          << tensorType(input);
}

/// The bound of dimension `dim` of output `output` (see the file comment);
/// `derived` is the operator's own, `operand` the input it is read from.
FailureOr<int64_t> runTimeSizeBound(NodeImporter &node, unsigned output,
                                    int64_t dim, std::optional<int64_t> derived,
                                    unsigned operand) {
  GraphImportState &state = node.getState();
  const std::string &name = node.getNode().output(output);
  std::string symbol = name + "_" + std::to_string(dim);
  std::optional<int64_t> declared;
  std::string declaredName;
  if (auto it = state.declaredDims.find(name);
      it != state.declaredDims.end() &&
      dim < static_cast<int64_t>(it->second.size())) {
    if (it->second[dim].first >= 0)
      declared = it->second[dim].first;
    else
      declaredName = it->second[dim].second;
  }
  std::optional<int64_t> bound;
  for (const std::string &key : {symbol, declaredName}) {
    auto given = state.runTimeSizeBounds.find(key);
    if (key.empty() || given == state.runTimeSizeBounds.end())
      continue;
    state.runTimeSizeBoundsUsed.insert(key);
    bound = given->second.second;
    break;
  }
  if (!bound)
    bound = declared;
  if (bound && derived)
    return std::min(*bound, *derived);
  if (bound)
    return *bound;
  if (derived)
    return *derived;
  const std::string &from = node.getNode().input(operand);
  return node.emitError()
         << dimension(dim) << " of output '" << name << "' is read from '"
         << from
         << "' when the model runs, and nothing bounds it: give its largest "
            "size with --dynamic-dims "
         << symbol << "=1..MAX, declare the output's shape in the model, or "
         << "make '" << from << "' a constant";
}

/// Refuses a result whose padded shape is too large to plan.
LogicalResult checkPadded(NodeImporter &node, ArrayRef<int64_t> bounds) {
  int64_t total = 1;
  for (int64_t bound : bounds)
    if (llvm::MulOverflow(total, bound, total) || total > kMaxPaddedElements)
      return node.emitError()
             << "its result, padded to the bounds " << formatShape(bounds)
             << " of the sizes it reads at run time, would hold more than "
             << kMaxPaddedElements
             << " elements: give smaller bounds with --dynamic-dims, or make "
                "the operand a constant";
  return success();
}

/// Binds the node's result: each non-null entry of `counts` is the run's
/// size of that dimension. `zeros`, each 0 where the operands are valid,
/// are added to the first count, so that their checks stay in the program.
LogicalResult finish(NodeImporter &node, Sizes &sizes, Value result,
                     SmallVector<Value> counts, ArrayRef<Value> zeros) {
  if (!result || llvm::any_of(zeros, [](Value v) { return !v; }))
    return failure();
  if (!zeros.empty() && !counts.empty()) {
    auto *first = llvm::find_if(counts, [](Value v) { return bool(v); });
    if (first == counts.end()) {
      counts[0] = sizes.constant(tensorType(result).getDimSize(0));
      first = counts.begin();
    }
    for (Value zero : zeros)
      *first = sizes.add(*first, zero);
  }
  for (auto [d, count] : llvm::enumerate(counts)) {
    if (!count)
      continue;
    node.setDataDependent(result, count, d);
  }
  return node.setResults(result);
}

/// `input`'s elements in order, laid out row-major in the run's `sizes`
/// within a tensor of shape `bounds`: element (i0, ..., ik) is the flat
/// input's element sum(i_j * stride_j), its index clamped into the input.
Value layOut(NodeImporter &node, Sizes &sizes, Value input,
             ArrayRef<Value> runSizes, ArrayRef<int64_t> bounds) {
  RankedTensorType type = tensorType(input);
  int64_t count = type.getNumElements();
  auto resultType = RankedTensorType::get(bounds, type.getElementType());
  if (count == 0)
    return graph::ConstantOp::create(
        node.getBuilder(), node.getLoc(),
        cast<TypedAttr>(DenseElementsAttr::get(
            resultType, node.getBuilder().getZeroAttr(type.getElementType()))));
  Builder &b = node.getBuilder();
  Value flat = node.createFolded<graph::ReshapeOp>(
      input, b.getDenseI64ArrayAttr({count}), b.getBoolAttr(true));
  int64_t rank = bounds.size();
  if (rank == 0)
    return node.createFolded<graph::ReshapeOp>(flat, b.getDenseI64ArrayAttr({}),
                                               b.getBoolAttr(true));
  Value index, stride = sizes.constant(1);
  for (int64_t k = rank - 1; k >= 0; --k) {
    SmallVector<int64_t> shape(rank, 1);
    shape[k] = bounds[k];
    Value iota = createI64Constant(
        node, shape, llvm::to_vector(llvm::seq<int64_t>(0, bounds[k])));
    Value term = sizes.mul(iota, stride);
    index = index ? sizes.add(index, term) : term;
    stride = sizes.mul(stride, runSizes[k]);
  }
  index =
      sizes.min(sizes.max(index, sizes.constant(0)), sizes.constant(count - 1));
  return node.create<graph::GatherOp>(flat, index, uint64_t(0));
}

/// Lays `input` out in `runSizes` (its elements kept in order, as Reshape,
/// Squeeze and Unsqueeze do), each size checked against its bound (at most
/// `derived`).
LogicalResult reshapeTo(NodeImporter &node, Sizes &sizes, Value input,
                        ArrayRef<Value> runSizes,
                        std::optional<int64_t> derived, ArrayRef<Value> zeros) {
  SmallVector<int64_t> bounds;
  SmallVector<Value> counts;
  for (auto [k, size] : llvm::enumerate(runSizes)) {
    FailureOr<int64_t> bound = runTimeSizeBound(node, 0, k, derived, 1);
    if (failed(bound))
      return failure();
    bounds.push_back(*bound);
    counts.push_back(sizes.check(size, 0, *bound, dimension(k) + "'s size"));
  }
  if (failed(checkPadded(node, bounds)))
    return failure();
  return finish(node, sizes, layOut(node, sizes, input, counts, bounds), counts,
                zeros);
}

/// The largest size of `input`'s dimensions, at least 1.
int64_t largestSize(Value input) {
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  return std::max<int64_t>(
      1, shape.empty() ? 1 : *std::max_element(shape.begin(), shape.end()));
}

/// The `count` entries of the run-time vector `axes`, each checked to lie
/// in [-rank, rank) and counted from the front.
SmallVector<Value> namedAxes(Sizes &sizes, Value axes, int64_t count,
                             int64_t rank) {
  SmallVector<Value> named;
  for (int64_t j = 0; j < count; ++j) {
    Value axis = sizes.check(sizes.entry(axes, j), -rank, rank - 1, "axis");
    named.push_back(sizes.where(sizes.less(axis, sizes.constant(0)),
                                sizes.add(axis, sizes.constant(rank)), axis));
  }
  return named;
}

/// How many of `named` name dimension `d`, checked to be at most `most`
/// (`what` names the count in the run's error); `each` gets 1 or 0 per
/// entry.
Value namings(Sizes &sizes, ArrayRef<Value> named, int64_t d, int64_t most,
              const std::string &what, SmallVectorImpl<Value> *each = nullptr) {
  Value hits = sizes.constant(0);
  for (Value axis : named) {
    Value hit = sizes.ones(sizes.equal(axis, sizes.constant(d)));
    if (each)
      each->push_back(hit);
    hits = sizes.add(hits, hit);
  }
  return sizes.check(hits, 0, most, what);
}

/// The sizes of `rank` dimensions of which those with `hits[d] == 1` are 1
/// (inserted) or dropped (`drop`), the others taking `shape`'s sizes in
/// order.
SmallVector<Value> keptSizes(Sizes &sizes, ArrayRef<Value> hits,
                             ArrayRef<int64_t> shape, int64_t resultRank,
                             bool drop) {
  // seen[d]: how many of the dimensions up to d are kept.
  SmallVector<Value> kept, seen;
  for (Value hit : hits) {
    kept.push_back(sizes.sub(sizes.constant(1), hit));
    seen.push_back(seen.empty() ? kept.back()
                                : sizes.add(seen.back(), kept.back()));
  }
  SmallVector<Value> result;
  for (int64_t k = 0; k < resultRank; ++k) {
    Value size = sizes.constant(0);
    if (drop) {
      // Output k is the (k+1)-th kept input dimension.
      for (auto [d, s] : llvm::enumerate(shape))
        size = sizes.add(
            size, sizes.mul(sizes.mul(sizes.ones(sizes.equal(
                                          seen[d], sizes.constant(k + 1))),
                                      kept[d]),
                            sizes.constant(s)));
    } else {
      // Output k is 1 where inserted, else input dimension seen[k] - 1.
      for (auto [i, s] : llvm::enumerate(shape))
        size = sizes.add(
            size, sizes.mul(sizes.mul(sizes.ones(sizes.equal(
                                          seen[k], sizes.constant(i + 1))),
                                      kept[k]),
                            sizes.constant(s)));
      size = sizes.add(size, hits[k]);
    }
    result.push_back(size);
  }
  return result;
}

} // namespace

bool kiln::isRunTimeShapeOperand(NodeImporter &node, unsigned i) {
  Value value = node.getInput(i);
  if (!value || node.getConstantInput(i) ||
      node.getState().shapeValues.count(value))
    return false;
  RankedTensorType type = tensorType(value);
  return !type.hasStaticShape() || type.getNumElements() != 0;
}

LogicalResult kiln::importReshapeAtRunTime(NodeImporter &node, Value input,
                                           bool allowZero) {
  FailureOr<int64_t> rank = vectorLength(node, 1, "the shape input");
  if (failed(rank) || failed(staticInput(node, input)))
    return failure();
  RankedTensorType type = tensorType(input);
  int64_t count = type.getNumElements();
  Sizes sizes(node);
  SmallVector<Value> raw;
  for (int64_t k = 0; k < *rank; ++k) {
    Value size = sizes.entry(node.getInput(1), k);
    // A 0 copies the input's size (unless allowzero).
    if (!allowZero && k < type.getRank())
      size = sizes.where(sizes.equal(size, sizes.constant(0)),
                         sizes.constant(type.getDimSize(k)), size);
    raw.push_back(size);
  }
  // A -1 is what the element count leaves.
  Value known = sizes.constant(1);
  for (Value size : raw)
    known = sizes.mul(known, sizes.where(sizes.equal(size, sizes.constant(-1)),
                                         sizes.constant(1), size));
  Value left =
      sizes.div(sizes.constant(count), sizes.max(known, sizes.constant(1)));
  SmallVector<Value> runSizes;
  for (Value size : raw)
    runSizes.push_back(
        sizes.where(sizes.equal(size, sizes.constant(-1)), left, size));
  // The run's sizes must hold the input's elements.
  Value total = sizes.constant(1);
  for (Value size : runSizes)
    total = sizes.mul(total, size);
  Value zero =
      sizes.sub(sizes.check(total, count, count, "element count of the shape"),
                sizes.constant(count));
  std::optional<int64_t> derived;
  if (count > 0)
    derived = count;
  return reshapeTo(node, sizes, input, runSizes, derived, {zero});
}

LogicalResult kiln::importSqueezeOrUnsqueezeAtRunTime(NodeImporter &node,
                                                      Value input, bool drop) {
  FailureOr<int64_t> count = vectorLength(node, 1, "the axes input");
  if (failed(count) || failed(staticInput(node, input)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t inputRank = shape.size();
  if (drop && *count > inputRank)
    return node.emitError() << "squeezes " << *count
                            << " axes of a tensor of rank " << inputRank;
  // The axes index the input's dimensions (Squeeze) or the result's
  // (Unsqueeze); each dimension may be named once, and dropped only where
  // its size is 1.
  int64_t rank = drop ? inputRank : inputRank + *count;
  Sizes sizes(node);
  SmallVector<Value> named = namedAxes(sizes, node.getInput(1), *count, rank);
  SmallVector<Value> hits;
  for (int64_t d = 0; d < rank; ++d) {
    std::string what = "number of axes naming " + dimension(d);
    if (drop)
      what += " (of size " + std::to_string(shape[d]) + ")";
    hits.push_back(namings(sizes, named, d, drop ? shape[d] == 1 : 1, what));
  }
  SmallVector<Value> runSizes =
      keptSizes(sizes, hits, shape, drop ? rank - *count : rank, drop);
  return reshapeTo(node, sizes, input, runSizes, largestSize(input), {});
}

LogicalResult kiln::importExpandAtRunTime(NodeImporter &node, Value input) {
  FailureOr<int64_t> length = vectorLength(node, 1, "the shape input");
  if (failed(length) || failed(staticInput(node, input)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  int64_t resultRank = std::max(rank, *length);
  Sizes sizes(node);
  SmallVector<int64_t> target;
  SmallVector<Value> counts(resultRank), zeros;
  for (int64_t k = 0; k < resultRank; ++k) {
    int64_t i = k - (resultRank - rank), s = k - (resultRank - *length);
    int64_t size = i >= 0 ? shape[i] : 1;
    if (s < 0) {
      target.push_back(size);
      continue;
    }
    Value entry = sizes.entry(node.getInput(1), s);
    if (size != 1) {
      // The shape's entry must be 1 or the input's size.
      target.push_back(size);
      Value checked = sizes.check(
          sizes.where(sizes.equal(entry, sizes.constant(1)),
                      sizes.constant(size), entry),
          size, size, "entry " + std::to_string(s) + " of the shape");
      zeros.push_back(sizes.sub(checked, sizes.constant(size)));
      continue;
    }
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, k, std::nullopt, /*operand=*/1);
    if (failed(bound))
      return failure();
    target.push_back(*bound);
    counts[k] = sizes.check(entry, 0, *bound, dimension(k) + "'s size");
  }
  if (failed(checkPadded(node, target)))
    return failure();
  Value result = node.createFolded<graph::ExpandOp>(
      input, node.getBuilder().getDenseI64ArrayAttr(target));
  return finish(node, sizes, result, counts, zeros);
}

LogicalResult kiln::importTileAtRunTime(NodeImporter &node, Value input) {
  FailureOr<int64_t> length = vectorLength(node, 1, "the repeats input");
  if (failed(length) || failed(staticInput(node, input)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  if (*length != rank)
    return node.emitError()
           << "has " << *length << " repeats for an input of rank " << rank;
  Sizes sizes(node);
  SmallVector<int64_t> target;
  SmallVector<Value> counts(rank);
  Value result = input;
  for (int64_t k = 0; k < rank; ++k) {
    if (shape[k] == 0) {
      target.push_back(0);
      continue;
    }
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, k, std::nullopt, /*operand=*/1);
    if (failed(bound))
      return failure();
    target.push_back(*bound);
    // The repeat count first, so that its product cannot overflow.
    Value repeats =
        sizes.check(sizes.entry(node.getInput(1), k), 0, *bound / shape[k],
                    dimension(k) + "'s repeat count");
    counts[k] = sizes.mul(repeats, sizes.constant(shape[k]));
    SmallVector<int64_t> positions;
    for (int64_t j = 0; j < *bound; ++j)
      positions.push_back(j % shape[k]);
    result = node.create<graph::GatherOp>(
        result, createI64Constant(node, {*bound}, positions), uint64_t(k));
    if (!result)
      return failure();
  }
  if (failed(checkPadded(node, target)))
    return failure();
  return finish(node, sizes, result, counts, {});
}

LogicalResult kiln::importConstantOfShapeAtRunTime(NodeImporter &node,
                                                   Attribute value) {
  FailureOr<int64_t> length = vectorLength(node, 0, "the shape input");
  if (failed(length))
    return failure();
  Sizes sizes(node);
  SmallVector<int64_t> target;
  SmallVector<Value> counts;
  for (int64_t k = 0; k < *length; ++k) {
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, k, std::nullopt, /*operand=*/0);
    if (failed(bound))
      return failure();
    target.push_back(*bound);
    counts.push_back(sizes.check(sizes.entry(node.getInput(0), k), 0, *bound,
                                 dimension(k) + "'s size"));
  }
  if (failed(checkPadded(node, target)))
    return failure();
  auto type = RankedTensorType::get(target, cast<TypedAttr>(value).getType());
  Value result =
      graph::ConstantOp::create(node.getBuilder(), node.getLoc(),
                                cast<TypedAttr>(DenseElementsAttr::get(
                                    type, ArrayRef<Attribute>{value})));
  return finish(node, sizes, result, counts, {});
}

LogicalResult kiln::importRangeAtRunTime(NodeImporter &node) {
  for (unsigned i = 0; i < 3; ++i)
    if (!node.getInput(i) || tensorType(node.getInput(i)).getNumElements() != 1)
      return node.emitError() << "start, limit and delta must be scalars";
  Value start = node.getInput(0), limit = node.getInput(1),
        delta = node.getInput(2);
  Type element = tensorType(start).getElementType();
  if (tensorType(limit).getElementType() != element ||
      tensorType(delta).getElementType() != element)
    return node.emitError() << "start, limit and delta must have one type";
  FailureOr<int64_t> bound =
      runTimeSizeBound(node, 0, 0, std::nullopt, /*operand=*/1);
  if (failed(bound) || failed(checkPadded(node, {*bound})))
    return failure();
  Builder &b = node.getBuilder();
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  auto scalar = [&](Value v, Type type) {
    return castTo(node,
                  node.createFolded<graph::ReshapeOp>(
                      v, b.getDenseI64ArrayAttr({}), b.getBoolAttr(true)),
                  type);
  };
  Sizes sizes(node);
  // ceil((limit - start) / delta) elements, computed in f64 as ONNX says;
  // a delta of 0 counts -1, which fails the check.
  Value first = scalar(start, f64), step = scalar(delta, f64);
  Value steps = node.create<graph::CeilOp>(
      sizes.div(sizes.sub(scalar(limit, f64), first), step));
  steps = sizes.max(steps, sizes.real(0));
  steps = sizes.min(steps, sizes.real(0x1p53));
  steps = sizes.where(sizes.equal(steps, steps), steps, sizes.real(-1)); // NaN
  steps = sizes.where(sizes.equal(step, sizes.real(0)), sizes.real(-1), steps);
  Value count =
      sizes.check(castTo(node, steps, i64), 0, *bound, "number of elements");
  // start + i * delta, in f64 for floats (then rounded) and i64 for
  // integers.
  Type compute = isa<FloatType>(element) ? f64 : i64;
  SmallVector<int64_t> positions =
      llvm::to_vector(llvm::seq<int64_t>(0, *bound));
  Value iota =
      castTo(node, createI64Constant(node, {*bound}, positions), compute);
  Value values = castTo(node,
                        sizes.add(scalar(start, compute),
                                  sizes.mul(iota, scalar(delta, compute))),
                        element);
  return finish(node, sizes, values, {count}, {});
}

LogicalResult kiln::importSliceWithRunTimeAxes(NodeImporter &node,
                                               Value input) {
  if (failed(staticInput(node, input)))
    return failure();
  FailureOr<int64_t> count = vectorLength(node, 1, "the starts input");
  if (failed(count))
    return failure();
  if (tensorType(input).getRank() == 0)
    return node.emitError() << "cannot slice a scalar";
  for (unsigned i = 2; i < 5; ++i)
    if (node.getInput(i) &&
        (failed(vectorLength(node, i, "each of ends, axes and steps")) ||
         tensorType(node.getInput(i)).getDimSize(0) != *count))
      return node.emitError()
             << "starts, ends, axes and steps differ in length";
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  Sizes sizes(node);
  // Absent axes are 0, 1, ...; absent steps 1.
  Value axes = node.getInput(3), steps = node.getInput(4);
  if (!axes)
    axes = createI64Constant(node, {*count},
                             llvm::to_vector(llvm::seq<int64_t>(0, *count)));
  if (!steps)
    steps = createI64Constant(node, {*count}, SmallVector<int64_t>(*count, 1));
  SmallVector<Value> named = namedAxes(sizes, axes, *count, rank);
  Value result = input;
  SmallVector<Value> counts(rank);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = shape[d];
    // This dimension's entry of each list (0 where no axis names it).
    SmallVector<Value> hit;
    Value hits = namings(sizes, named, d, 1,
                         "number of axes naming " + dimension(d), &hit);
    auto pick = [&](Value values, int64_t absent) {
      Value sum = sizes.constant(0);
      for (auto [j, h] : llvm::enumerate(hit))
        sum = sizes.add(sum, sizes.mul(h, sizes.entry(values, j)));
      return sizes.where(sizes.equal(hits, sizes.constant(1)), sum,
                         sizes.constant(absent));
    };
    Value start = pick(node.getInput(1), 0);
    Value end = pick(node.getInput(2), std::numeric_limits<int64_t>::max());
    Value step =
        sizes.check(pick(steps, 1), std::numeric_limits<int64_t>::min() + 1,
                    std::numeric_limits<int64_t>::max(), "step");
    Value negative = sizes.less(step, sizes.constant(0));
    Value magnitude = sizes.check(
        sizes.where(negative, sizes.sub(sizes.constant(0), step), step), 1,
        std::numeric_limits<int64_t>::max(), "magnitude of the step");
    if (size == 0) {
      counts[d] = sizes.mul(magnitude, sizes.constant(0));
      continue;
    }
    // A step longer than the axis takes one element, as one of size + 1.
    magnitude = sizes.min(magnitude, sizes.constant(size + 1));
    step = sizes.where(negative, sizes.sub(sizes.constant(0), magnitude),
                       magnitude);
    auto wrap = [&](Value v) {
      return sizes.where(sizes.less(v, sizes.constant(0)),
                         sizes.add(v, sizes.constant(size)), v);
    };
    auto clamp = [&](Value v, int64_t low, int64_t high) {
      return sizes.min(sizes.max(wrap(v), sizes.constant(low)),
                       sizes.constant(high));
    };
    // Forwards: [start, end) in [0, size]; backwards: (end, start] in
    // [-1, size - 1].
    Value first =
        sizes.where(negative, clamp(start, 0, size - 1), clamp(start, 0, size));
    Value last =
        sizes.where(negative, clamp(end, -1, size - 1), clamp(end, 0, size));
    Value span =
        sizes.where(negative, sizes.sub(first, last), sizes.sub(last, first));
    // ceil(span / magnitude) without overflow; none where span <= 0.
    Value taken = sizes.where(
        sizes.less(sizes.constant(0), span),
        sizes.add(sizes.div(sizes.sub(span, sizes.constant(1)), magnitude),
                  sizes.constant(1)),
        sizes.constant(0));
    FailureOr<int64_t> bound = runTimeSizeBound(node, 0, d, size, 3);
    if (failed(bound))
      return failure();
    counts[d] = sizes.check(taken, 0, *bound, dimension(d) + "'s size");
    Value iota = createI64Constant(
        node, {*bound}, llvm::to_vector(llvm::seq<int64_t>(0, *bound)));
    Value indices = sizes.min(
        sizes.max(sizes.add(first, sizes.mul(iota, step)), sizes.constant(0)),
        sizes.constant(size - 1));
    result = node.create<graph::GatherOp>(result, indices, uint64_t(d));
    if (!result)
      return failure();
  }
  return finish(node, sizes, result, counts, {});
}

/// `input` padded (or cropped, by negative amounts) by `begins[d]` and
/// `ends[d]` along each dimension d that has them, to a result of
/// `bounds`; `counts[d]` are the run's sizes. As ONNX does, negative pads
/// crop first and the rest pads the cropped axis.
static Value padAtRunTime(NodeImporter &node, Sizes &sizes, Value input,
                          StringRef mode, Value fill, ArrayRef<Value> begins,
                          ArrayRef<Value> ends, ArrayRef<int64_t> bounds) {
  Builder &b = node.getBuilder();
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  if (tensorType(input).getNumElements() == 0) {
    // Nothing to read: the fill everywhere (the constant mode; the callers
    // refuse the others).
    Value result = node.createFolded<graph::ReshapeOp>(
        fill, b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)),
        b.getBoolAttr(false));
    return node.createFolded<graph::ExpandOp>(result,
                                              b.getDenseI64ArrayAttr(bounds));
  }
  Value result = input, inside;
  for (int64_t d = 0; d < rank; ++d) {
    if (!begins[d])
      continue;
    int64_t size = shape[d];
    Value begin = begins[d], end = ends[d];
    // The cropped axis is [low, low + length); `at` is the position in it.
    Value zero = sizes.constant(0);
    Value low = sizes.max(sizes.sub(zero, begin), zero);
    Value length = sizes.sub(sizes.sub(sizes.constant(size), low),
                             sizes.max(sizes.sub(zero, end), zero));
    if (mode != "constant")
      length = sizes.check(length, 1, size,
                           dimension(d) + "'s length after the negative pads");
    Value at = sizes.sub(
        createI64Constant(node, {bounds[d]},
                          llvm::to_vector(llvm::seq<int64_t>(0, bounds[d]))),
        sizes.max(begin, zero));
    Value last = sizes.sub(length, sizes.constant(1));
    Value within;
    if (mode == "wrap") {
      within = node.create<graph::ModOp>(at, length, false);
    } else if (mode == "reflect") {
      // Mirrored about the first and last elements: period 2 (length - 1).
      Value period = sizes.max(sizes.add(last, last), sizes.constant(1));
      Value folded = node.create<graph::ModOp>(at, period, false);
      within = sizes.where(sizes.less(folded, length), folded,
                           sizes.sub(period, folded));
    } else {
      within = sizes.min(sizes.max(at, zero), last);
    }
    Value index = sizes.min(sizes.max(sizes.add(low, within), zero),
                            sizes.constant(size - 1));
    if (mode == "constant") {
      SmallVector<int64_t> along(rank, 1);
      along[d] = bounds[d];
      Value valid = node.create<graph::AndOp>(
          sizes.less(at, length), node.create<graph::GreaterEqualOp>(at, zero));
      valid = node.createFolded<graph::ReshapeOp>(
          valid, b.getDenseI64ArrayAttr(along), b.getBoolAttr(false));
      inside = inside ? node.create<graph::AndOp>(inside, valid) : valid;
    }
    result = node.create<graph::GatherOp>(result, index, uint64_t(d));
    if (!result)
      return {};
  }
  if (inside)
    result = node.create<graph::WhereOp>(inside, result, fill);
  return result;
}

/// The fill of a constant pad: input `i` (a constant or a run-time scalar
/// of the input's type) where present, else 0; null after an error.
static Value padFill(NodeImporter &node, Value input, unsigned i) {
  Type element = tensorType(input).getElementType();
  Value fill = node.getInput(i);
  if (!fill)
    return import::createScalar(node, element, 0.0);
  if (tensorType(fill).getNumElements() != 1 ||
      tensorType(fill).getElementType() != element) {
    node.emitError() << "the pad value must be one element of the input's "
                        "type, got "
                     << fill.getType();
    return {};
  }
  Builder &b = node.getBuilder();
  return node.createFolded<graph::ReshapeOp>(fill, b.getDenseI64ArrayAttr({}),
                                             b.getBoolAttr(true));
}

LogicalResult kiln::importPadAtRunTime(NodeImporter &node, Value input,
                                       StringRef mode) {
  if (failed(staticInput(node, input)))
    return failure();
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  FailureOr<int64_t> padCount = vectorLength(node, 1, "the pads input");
  if (failed(padCount))
    return failure();
  int64_t axisCount = rank;
  Value axes = node.getInput(3);
  if (axes) {
    FailureOr<int64_t> length = vectorLength(node, 3, "the axes input");
    if (failed(length))
      return failure();
    axisCount = *length;
  } else {
    axes = createI64Constant(node, {rank},
                             llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  }
  if (*padCount != 2 * axisCount)
    return node.emitError() << "expected " << 2 * axisCount << " pads for "
                            << axisCount << " axes, got " << *padCount;
  if (rank == 0)
    return node.emitError() << "cannot pad a scalar";
  // Axes given as constants leave the other dimensions as they are.
  SmallVector<bool> mayPad(rank, true);
  if (auto constant = dyn_cast_or_null<DenseIntElementsAttr>(
          node.getInput(3) ? node.getConstantInput(3) : ElementsAttr())) {
    mayPad.assign(rank, false);
    for (const APInt &axis : constant.getValues<APInt>()) {
      FailureOr<int64_t> d =
          import::normalizeAxis(node, axis.getSExtValue(), rank);
      if (failed(d))
        return failure();
      mayPad[*d] = true;
    }
  }
  Value fill = padFill(node, input, 2);
  if (!fill)
    return failure();
  if (tensorType(input).getNumElements() == 0 && mode != "constant")
    return node.emitError()
           << "cannot pad an empty input in mode '" << mode << "'";
  Sizes sizes(node);
  SmallVector<Value> named = namedAxes(sizes, axes, axisCount, rank);
  SmallVector<int64_t> bounds(shape);
  SmallVector<Value> counts(rank), begins(rank), ends(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (!mayPad[d])
      continue;
    int64_t size = shape[d];
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, d, std::nullopt, /*operand=*/1);
    if (failed(bound))
      return failure();
    bounds[d] = *bound;
    SmallVector<Value> hit;
    namings(sizes, named, d, 1, "number of axes naming " + dimension(d), &hit);
    // Each pad lies in [-size, bound], so that their sum cannot overflow.
    auto pad = [&](int64_t offset, StringRef which) {
      Value sum = sizes.constant(0);
      for (auto [j, h] : llvm::enumerate(hit))
        sum = sizes.add(
            sum, sizes.mul(h, sizes.entry(node.getInput(1), j + offset)));
      return sizes.check(sum, -size, *bound,
                         dimension(d) + "'s " + which.str() + " pad");
    };
    begins[d] = pad(0, "leading");
    ends[d] = pad(axisCount, "trailing");
    counts[d] = sizes.check(
        sizes.add(sizes.constant(size), sizes.add(begins[d], ends[d])), 0,
        *bound, dimension(d) + "'s size");
  }
  if (failed(checkPadded(node, bounds)))
    return failure();
  return finish(
      node, sizes,
      padAtRunTime(node, sizes, input, mode, fill, begins, ends, bounds),
      counts, {});
}

LogicalResult kiln::importCenterCropPadAtRunTime(NodeImporter &node,
                                                 Value input,
                                                 ArrayRef<int64_t> axes) {
  if (failed(staticInput(node, input)))
    return failure();
  FailureOr<int64_t> length = vectorLength(node, 1, "the shape input");
  if (failed(length))
    return failure();
  if (*length != static_cast<int64_t>(axes.size()))
    return node.emitError() << "the shape input has " << *length
                            << " sizes for " << axes.size() << " axes";
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  int64_t rank = shape.size();
  Sizes sizes(node);
  SmallVector<int64_t> bounds(shape);
  SmallVector<Value> counts(rank), begins(rank), ends(rank);
  for (auto [k, d] : llvm::enumerate(axes)) {
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, d, std::nullopt, /*operand=*/1);
    if (failed(bound))
      return failure();
    bounds[d] = *bound;
    Value target = sizes.check(sizes.entry(node.getInput(1), k), 0, *bound,
                               dimension(d) + "'s size");
    // Centred: a crop starts at (size - target) / 2, a pad puts
    // (target - size) / 2 before.
    Value grow = sizes.sub(target, sizes.constant(shape[d]));
    Value two = sizes.constant(2), zero = sizes.constant(0);
    Value half =
        sizes.where(sizes.less(grow, zero),
                    sizes.sub(zero, sizes.div(sizes.sub(zero, grow), two)),
                    sizes.div(grow, two));
    begins[d] = half;
    ends[d] = sizes.sub(grow, half);
    counts[d] = target;
  }
  if (failed(checkPadded(node, bounds)))
    return failure();
  Value fill =
      import::createScalar(node, tensorType(input).getElementType(), 0.0);
  return finish(
      node, sizes,
      padAtRunTime(node, sizes, input, "constant", fill, begins, ends, bounds),
      counts, {});
}

LogicalResult kiln::importOneHotAtRunTime(NodeImporter &node, Value indices,
                                          Value values, int64_t axis) {
  Value depth = node.getInput(1);
  if (tensorType(depth).getNumElements() != 1)
    return node.emitError()
           << "depth must be one value, not " << depth.getType();
  if (tensorType(values).getNumElements() != 2)
    return node.emitError() << "values must hold two entries (off, on), not "
                            << values.getType();
  FailureOr<int64_t> bound =
      runTimeSizeBound(node, 0, axis, std::nullopt, /*operand=*/1);
  if (failed(bound))
    return failure();
  Builder &b = node.getBuilder();
  Type i64 = b.getI64Type();
  Sizes sizes(node);
  // (A float depth is truncated to an integer.)
  Value count = sizes.check(
      castTo(node,
             node.createFolded<graph::ReshapeOp>(
                 depth, b.getDenseI64ArrayAttr({}), b.getBoolAttr(true)),
             i64),
      1, *bound, "depth");
  // Negative indices count from the depth; the position that equals an
  // index is `on`, the others (all of them for an index out of range) are
  // `off`.
  indices = castTo(node, indices, i64);
  indices = sizes.where(sizes.less(indices, sizes.constant(0)),
                        sizes.add(indices, count), indices);
  SmallVector<int64_t> shape(tensorType(indices).getShape());
  shape.insert(shape.begin() + axis, 1);
  indices = node.createFolded<graph::ReshapeOp>(
      indices, b.getDenseI64ArrayAttr(shape), b.getBoolAttr(true));
  SmallVector<int64_t> along(shape.size(), 1);
  along[axis] = *bound;
  if (failed(checkPadded(node, {*bound})))
    return failure();
  Value positions = createI64Constant(
      node, along, llvm::to_vector(llvm::seq<int64_t>(0, *bound)));
  values = node.createFolded<graph::ReshapeOp>(
      values, b.getDenseI64ArrayAttr({2}), b.getBoolAttr(true));
  Value result = node.create<graph::WhereOp>(
      sizes.equal(indices, positions),
      node.create<graph::GatherOp>(values, sizes.constant(1), uint64_t(0)),
      node.create<graph::GatherOp>(values, sizes.constant(0), uint64_t(0)));
  SmallVector<Value> counts(shape.size());
  counts[axis] = count;
  return finish(node, sizes, result, counts, {});
}

LogicalResult kiln::importWindowAtRunTime(NodeImporter &node,
                                          ArrayRef<double> terms, bool periodic,
                                          Type element) {
  Value size = node.getInput(0);
  if (tensorType(size).getNumElements() != 1 ||
      !isa<IntegerType>(tensorType(size).getElementType()))
    return node.emitError()
           << "size must be one integer, not " << size.getType();
  FailureOr<int64_t> bound =
      runTimeSizeBound(node, 0, 0, std::nullopt, /*operand=*/0);
  if (failed(bound) || failed(checkPadded(node, {*bound})))
    return failure();
  Builder &b = node.getBuilder();
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  Sizes sizes(node);
  Value count = sizes.check(
      castTo(node,
             node.createFolded<graph::ReshapeOp>(
                 size, b.getDenseI64ArrayAttr({}), b.getBoolAttr(true)),
             i64),
      0, *bound, "size");
  // sum_k terms[k] cos(2 pi k i / N), N the size (periodic) or the size
  // less 1 (symmetric), in f64 as the constant windows are computed.
  Value span = castTo(node, count, f64);
  if (!periodic)
    span = sizes.sub(span, sizes.real(1));
  Value step = sizes.div(sizes.real(2.0 * M_PI), span);
  Value angle = sizes.mul(
      castTo(node,
             createI64Constant(node, {*bound},
                               llvm::to_vector(llvm::seq<int64_t>(0, *bound))),
             f64),
      step);
  Value window = sizes.real(terms[0]);
  for (size_t k = 1; k < terms.size(); ++k)
    window = sizes.add(
        window, sizes.mul(sizes.real(terms[k]),
                          node.create<graph::CosOp>(sizes.mul(
                              angle, sizes.real(static_cast<double>(k))))));
  return finish(node, sizes, castTo(node, window, element), {count}, {});
}

namespace {

/// Keys' cubic kernel with coefficient `a`, or the triangle, at the
/// distances `dist` (f64).
Value resizeKernel(NodeImporter &node, Sizes &sizes, Value dist, bool cubic,
                   double a) {
  dist = node.create<graph::AbsOp>(dist);
  if (!cubic)
    return sizes.max(sizes.sub(sizes.real(1), dist), sizes.real(0));
  // ((a + 2) d - (a + 3)) d^2 + 1 up to 1, ((a d - 5a) d + 8a) d - 4a up
  // to 2, 0 beyond.
  Value near = sizes.add(
      sizes.mul(sizes.mul(sizes.sub(sizes.mul(sizes.real(a + 2), dist),
                                    sizes.real(a + 3)),
                          dist),
                dist),
      sizes.real(1));
  Value far = sizes.sub(
      sizes.mul(sizes.add(sizes.mul(sizes.sub(sizes.mul(sizes.real(a), dist),
                                              sizes.real(5 * a)),
                                    dist),
                          sizes.real(8 * a)),
                dist),
      sizes.real(4 * a));
  return sizes.where(
      node.create<graph::LessEqualOp>(dist, sizes.real(1)), near,
      sizes.where(sizes.less(dist, sizes.real(2)), far, sizes.real(0)));
}

} // namespace

LogicalResult kiln::importResizeAtRunTime(NodeImporter &node, Value input,
                                          const RunTimeResize &resize) {
  if (failed(staticInput(node, input)))
    return failure();
  RankedTensorType type = tensorType(input);
  if (!isa<FloatType>(type.getElementType()))
    return node.emitError() << "resizes by scales or sizes read at run time "
                               "only float tensors, not "
                            << type;
  if (type.getNumElements() == 0)
    return node.emitError() << "cannot resize an empty input by scales or "
                               "sizes read at run time";
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = shape.size(), count = resize.axes.size();
  if (resize.mode != "nearest" && resize.mode != "linear" &&
      resize.mode != "cubic")
    return node.emitError() << "mode '" << resize.mode << "' is not supported";
  if (resize.policy != "stretch" && resize.policy != "not_larger" &&
      resize.policy != "not_smaller")
    return node.emitError() << "keep_aspect_ratio_policy '" << resize.policy
                            << "' is not supported";
  for (auto [k, d] : llvm::enumerate(resize.axes))
    if (d < 0 || d >= rank ||
        llvm::is_contained(ArrayRef(resize.axes).take_front(k), d))
      return node.emitError() << "the axes must be distinct dimensions of a "
                                 "tensor of rank "
                              << rank;
  FailureOr<int64_t> given =
      resize.bySizes ? vectorLength(node, resize.operand, "the sizes input")
                     : vectorLength(node, resize.operand, "the scales input",
                                    /*real=*/true);
  if (failed(given))
    return failure();
  if (*given != count)
    return node.emitError()
           << "expected " << count << (resize.bySizes ? " sizes" : " scales")
           << ", got " << *given;
  Builder &b = node.getBuilder();
  Type f64 = b.getF64Type(), i64 = b.getI64Type();
  Sizes sizes(node);
  auto entryOf = [&](unsigned operand, int64_t i) {
    Value values = castTo(node, node.getInput(operand), f64);
    return node.create<graph::GatherOp>(values, sizes.constant(i), uint64_t(0));
  };
  auto floor = [&](Value v) { return node.create<graph::FloorOp>(v); };
  // Each resized axis' scale and size (f64), as the static import computes
  // them.
  SmallVector<Value> scales, outSizes;
  for (auto [k, d] : llvm::enumerate(resize.axes)) {
    Value in = sizes.real(double(shape[d]));
    if (!resize.bySizes) {
      scales.push_back(entryOf(resize.operand, k));
      outSizes.push_back(floor(sizes.mul(in, scales.back())));
    } else {
      outSizes.push_back(entryOf(resize.operand, k));
      scales.push_back(sizes.div(outSizes.back(), in));
    }
  }
  if (resize.bySizes && resize.policy != "stretch") {
    // One scale, the smallest (not_larger) or the largest (not_smaller),
    // and the sizes it makes, rounded half up.
    Value scale = scales.front();
    for (Value s : ArrayRef(scales).drop_front())
      scale = resize.policy == "not_larger" ? sizes.min(scale, s)
                                            : sizes.max(scale, s);
    for (auto [k, d] : llvm::enumerate(resize.axes)) {
      scales[k] = scale;
      outSizes[k] = floor(sizes.add(
          sizes.mul(scale, sizes.real(double(shape[d]))), sizes.real(0.5)));
    }
  }
  // Upsample before opset 10 rounds nearest down when enlarging, up when
  // shrinking (any scale below 1).
  Value shrinks;
  if (resize.nearestByShrink) {
    shrinks = sizes.real(0);
    for (Value s : scales)
      shrinks =
          sizes.max(shrinks, castTo(node, sizes.less(s, sizes.real(1)), f64));
  }
  Value result = castTo(node, input, f64), outside;
  SmallVector<Value> counts(rank);
  SmallVector<int64_t> bounds(shape);
  for (auto [k, d] : llvm::enumerate(resize.axes)) {
    int64_t in = shape[d];
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, d, std::nullopt, resize.operand);
    if (failed(bound))
      return failure();
    bounds[d] = *bound;
    // The size, kept within [-1, 2^53] (NaN at -1) before it becomes an
    // integer.
    Value size =
        sizes.min(sizes.max(outSizes[k], sizes.real(-1)), sizes.real(0x1p53));
    size = sizes.where(sizes.equal(size, size), size, sizes.real(-1));
    counts[d] = sizes.check(castTo(node, size, i64), 0, *bound,
                            dimension(d) + "'s size");
    Value out = castTo(node, counts[d], f64), scale = scales[k];
    // Each result position's coordinate in the input.
    Value o = castTo(
        node,
        createI64Constant(node, {*bound},
                          llvm::to_vector(llvm::seq<int64_t>(0, *bound))),
        f64);
    Value half = sizes.sub(sizes.div(sizes.add(o, sizes.real(0.5)), scale),
                           sizes.real(0.5));
    Value x;
    StringRef transform = resize.transform;
    if (transform == "align_corners") {
      Value length = sizes.mul(scale, sizes.real(double(in)));
      x = sizes.where(
          sizes.equal(length, sizes.real(1)), sizes.real(0),
          sizes.mul(o, sizes.div(sizes.real(double(in - 1)),
                                 sizes.sub(length, sizes.real(1)))));
    } else if (transform == "asymmetric") {
      x = sizes.div(o, scale);
    } else if (transform == "tf_crop_and_resize") {
      Value start = entryOf(resize.roi, k),
            end = entryOf(resize.roi, k + count);
      Value last = sizes.real(double(in - 1));
      x = sizes.where(
          sizes.equal(out, sizes.real(1)),
          sizes.mul(sizes.mul(sizes.real(0.5), sizes.add(start, end)), last),
          sizes.add(
              sizes.mul(start, last),
              sizes.mul(o, sizes.div(sizes.mul(sizes.sub(end, start), last),
                                     sizes.sub(out, sizes.real(1))))));
      SmallVector<int64_t> along(rank, 1);
      along[d] = *bound;
      Value out = node.create<graph::OrOp>(
          sizes.less(x, sizes.real(0)),
          node.create<graph::GreaterOp>(x, sizes.real(double(in - 1))));
      out = node.createFolded<graph::ReshapeOp>(
          out, b.getDenseI64ArrayAttr(along), b.getBoolAttr(false));
      outside = outside ? node.create<graph::OrOp>(outside, out) : out;
    } else if (transform == "pytorch_half_pixel") {
      x = sizes.where(sizes.equal(out, sizes.real(1)), sizes.real(0), half);
    } else if (transform == "half_pixel_symmetric") {
      Value offset = sizes.mul(
          sizes.real(double(in) / 2),
          sizes.sub(sizes.real(1),
                    sizes.div(out, sizes.mul(scale, sizes.real(double(in))))));
      x = sizes.add(half, offset);
    } else {
      x = half;
    }
    // The weights W[o, i] of input position i in result position o.
    Value positions =
        castTo(node,
               createI64Constant(node, {1, in},
                                 llvm::to_vector(llvm::seq<int64_t>(0, in))),
               f64);
    Value column = node.createFolded<graph::ReshapeOp>(
        x, b.getDenseI64ArrayAttr({*bound, 1}), b.getBoolAttr(false));
    auto clampTo = [&](Value v) {
      return sizes.min(sizes.max(v, sizes.real(0)), sizes.real(double(in - 1)));
    };
    auto oneHot = [&](Value at) {
      return castTo(node, sizes.equal(at, positions), f64);
    };
    Value weights;
    if (resize.mode == "nearest") {
      auto round = [&](StringRef how) -> Value {
        if (how == "floor")
          return floor(column);
        if (how == "ceil")
          return node.create<graph::CeilOp>(column);
        if (how == "round_prefer_ceil")
          return floor(sizes.add(column, sizes.real(0.5)));
        return node.create<graph::CeilOp>(sizes.sub(column, sizes.real(0.5)));
      };
      Value rounded = shrinks ? sizes.where(sizes.equal(shrinks, sizes.real(1)),
                                            round("ceil"), round("floor"))
                              : round(resize.nearestMode);
      weights = oneHot(clampTo(rounded));
    } else {
      bool cubic = resize.mode == "cubic";
      Value effective =
          resize.antialias ? sizes.min(scale, sizes.real(1)) : sizes.real(1);
      // The two taps of x clamped into the input (linear at full scale).
      Value clamped;
      if (!cubic) {
        Value at = clampTo(column), low = floor(at);
        Value w = sizes.sub(at, low);
        clamped = sizes.add(
            sizes.mul(sizes.sub(sizes.real(1), w), oneHot(low)),
            sizes.mul(w, oneHot(clampTo(sizes.add(low, sizes.real(1))))));
      }
      if (!cubic && !resize.antialias) {
        weights = clamped;
      } else {
        // The kernel at every position j the taps may reach (a scale
        // makes at least one result: it is at least 1 / (2 in), so the
        // kernel reaches at most 4 in beyond x), positions outside the
        // input then added onto its edges, as the reference clamps them.
        int64_t reach = 4 * in + 3;
        if (failed(checkPadded(node, {*bound, in + 2 * reach})))
          return failure();
        SmallVector<int64_t> extended, fold;
        for (int64_t j = -reach; j < in + reach; ++j) {
          extended.push_back(j);
          for (int64_t i = 0; i < in; ++i)
            fold.push_back(std::clamp<int64_t>(j, 0, in - 1) == i);
        }
        int64_t width = extended.size();
        Value js =
            castTo(node, createI64Constant(node, {1, width}, extended), f64);
        Value taps = resizeKernel(node, sizes,
                                  sizes.mul(sizes.sub(js, column), effective),
                                  cubic, resize.cubicCoeffA);
        if (resize.excludeOutside)
          taps = sizes.mul(
              taps,
              castTo(node,
                     node.create<graph::AndOp>(
                         node.create<graph::GreaterEqualOp>(js, sizes.real(0)),
                         sizes.less(js, sizes.real(double(in)))),
                     f64));
        if (resize.excludeOutside || resize.antialias)
          taps = sizes.div(taps, node.create<graph::ReduceSumOp>(
                                     taps, ArrayRef<int64_t>{1}, true));
        weights = node.create<graph::MatMulOp>(
            taps,
            castTo(node, createI64Constant(node, {width, in}, fold), f64));
        if (clamped)
          weights = sizes.where(sizes.equal(effective, sizes.real(1)), clamped,
                                weights);
      }
    }
    // result = W applied along d: d moved last, times W^T, moved back.
    SmallVector<int64_t> perm;
    for (int64_t e = 0; e < rank; ++e)
      if (e != static_cast<int64_t>(d))
        perm.push_back(e);
    perm.push_back(d);
    SmallVector<int64_t> inverse(rank);
    for (int64_t e = 0; e < rank; ++e)
      inverse[perm[e]] = e;
    auto permute = [&](Value v, ArrayRef<int64_t> p) {
      return node.createFolded<graph::TransposeOp>(v,
                                                   b.getDenseI64ArrayAttr(p));
    };
    result = permute(
        node.create<graph::MatMulOp>(permute(result, perm),
                                     permute(weights, ArrayRef<int64_t>{1, 0})),
        inverse);
    if (!result)
      return failure();
  }
  if (failed(checkPadded(node, bounds)))
    return failure();
  if (outside)
    result = node.create<graph::WhereOp>(
        outside, sizes.real(resize.extrapolationValue), result);
  return finish(node, sizes, castTo(node, result, type.getElementType()),
                counts, {});
}

LogicalResult kiln::importAffineGridAtRunTime(NodeImporter &node,
                                              bool alignCorners) {
  Value theta = node.getInput(0);
  RankedTensorType type = tensorType(theta);
  FailureOr<int64_t> length = vectorLength(node, 1, "the size input");
  if (failed(length))
    return failure();
  int64_t spatial = *length - 2;
  if ((spatial != 2 && spatial != 3) || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()) || type.getRank() != 3 ||
      type.getDimSize(1) != spatial || type.getDimSize(2) != spatial + 1)
    return node.emitError() << "needs theta [N, r, r + 1] and a size [N, C, "
                               "D...] of r = 2 or 3 spatial dimensions, got "
                            << type << " and " << *length << " sizes";
  Builder &b = node.getBuilder();
  Type f64 = b.getF64Type();
  Sizes sizes(node);
  int64_t batch = type.getDimSize(0);
  // The size's N must be theta's.
  Value zero = sizes.sub(sizes.check(sizes.entry(node.getInput(1), 0), batch,
                                     batch, "the size's batch"),
                         sizes.constant(batch));
  SmallVector<int64_t> bounds;
  SmallVector<Value> counts(spatial + 2);
  for (int64_t i = 0; i < spatial; ++i) {
    FailureOr<int64_t> bound =
        runTimeSizeBound(node, 0, i + 1, std::nullopt, /*operand=*/1);
    if (failed(bound))
      return failure();
    bounds.push_back(*bound);
    counts[i + 1] = sizes.check(sizes.entry(node.getInput(1), i + 2), 1, *bound,
                                dimension(i + 1) + "'s size");
  }
  SmallVector<int64_t> full(bounds);
  full.push_back(1);
  if (failed(checkPadded(node, full)))
    return failure();
  // Each point's normalised coordinates, x (the last axis) first, then 1:
  // [bounds..., r + 1].
  SmallVector<Value> columns(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    Value n = castTo(node, counts[i + 1], f64);
    Value at = castTo(
        node,
        createI64Constant(node, {bounds[i]},
                          llvm::to_vector(llvm::seq<int64_t>(0, bounds[i]))),
        f64);
    Value c =
        alignCorners
            ? sizes.where(sizes.equal(n, sizes.real(1)), sizes.real(-1),
                          sizes.add(sizes.real(-1),
                                    sizes.div(sizes.mul(sizes.real(2), at),
                                              sizes.sub(n, sizes.real(1)))))
            : sizes.add(sizes.real(-1),
                        sizes.div(sizes.add(sizes.mul(sizes.real(2), at),
                                            sizes.real(1)),
                                  n));
    SmallVector<int64_t> along(spatial + 1, 1);
    along[i] = bounds[i];
    c = node.createFolded<graph::ReshapeOp>(c, b.getDenseI64ArrayAttr(along),
                                            b.getBoolAttr(false));
    columns[spatial - 1 - i] =
        node.createFolded<graph::ExpandOp>(c, b.getDenseI64ArrayAttr(full));
  }
  columns.push_back(node.createFolded<graph::ExpandOp>(
      sizes.real(1), b.getDenseI64ArrayAttr(full)));
  if (llvm::any_of(columns, [](Value v) { return !v; }))
    return failure();
  int64_t points = 1;
  for (int64_t bound : bounds)
    points *= bound;
  Value grid =
      node.createFolded<graph::ConcatOp>(columns, b.getI64IntegerAttr(spatial));
  grid = castTo(node,
                node.createFolded<graph::ReshapeOp>(
                    grid, b.getDenseI64ArrayAttr({points, spatial + 1}),
                    b.getBoolAttr(false)),
                type.getElementType());
  Value product = node.create<graph::MatMulOp>(
      grid, node.createFolded<graph::TransposeOp>(
                theta, b.getDenseI64ArrayAttr({0, 2, 1})));
  SmallVector<int64_t> shape = {batch};
  shape.append(bounds);
  shape.push_back(spatial);
  Value result = node.createFolded<graph::ReshapeOp>(
      product, b.getDenseI64ArrayAttr(shape), b.getBoolAttr(false));
  counts.resize(spatial + 2);
  return finish(node, sizes, result, counts, {zero});
}

Value kiln::runTimeAxis(NodeImporter &node, unsigned operand, int64_t rank,
                        int64_t last, ArrayRef<int64_t> excluded) {
  Sizes sizes(node);
  Value axis = sizes.check(sizes.entry(node.getInput(operand), 0), -rank,
                           rank - 1, "axis");
  axis = sizes.where(sizes.less(axis, sizes.constant(0)),
                     sizes.add(axis, sizes.constant(rank)), axis);
  axis = sizes.check(axis, 0, last, "axis (counted from the front)");
  if (excluded.empty())
    return axis;
  // 0 unless the axis is one of `excluded`, added so that the check stays.
  Value named = sizes.constant(0);
  for (int64_t d : excluded)
    named = sizes.add(named, sizes.ones(sizes.equal(axis, sizes.constant(d))));
  return sizes.add(
      axis,
      sizes.check(named, 0, 0, "use of an axis the operator cannot take"));
}

LogicalResult kiln::selectAtRunTime(NodeImporter &node, Value index,
                                    ArrayRef<Value> candidates) {
  if (candidates.empty() ||
      llvm::any_of(candidates, [](Value v) { return !v; }))
    return failure();
  RankedTensorType first = tensorType(candidates.front());
  int64_t rank = first.getRank();
  SmallVector<int64_t> bounds(first.getShape());
  for (Value candidate : candidates) {
    RankedTensorType type = tensorType(candidate);
    if (type.getRank() != rank ||
        type.getElementType() != first.getElementType() ||
        !type.hasStaticShape())
      return node.emitError() << "cannot choose at run time between results "
                                 "of different ranks or types";
    for (int64_t d = 0; d < rank; ++d)
      bounds[d] = std::max(bounds[d], type.getDimSize(d));
  }
  if (failed(checkPadded(node, bounds)))
    return failure();
  Sizes sizes(node);
  Builder &b = node.getBuilder();
  Value result;
  SmallVector<Value> counts(rank);
  for (auto [i, candidate] : llvm::enumerate(candidates)) {
    ArrayRef<int64_t> shape = tensorType(candidate).getShape();
    SmallVector<int64_t> pads(rank, 0);
    for (int64_t d = 0; d < rank; ++d)
      pads.push_back(bounds[d] - shape[d]);
    Value padded = candidate;
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; }))
      padded = node.create<graph::PadOp>(
          candidate, b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"),
          b.getF64FloatAttr(0.0));
    if (!padded)
      return failure();
    Value chosen = sizes.equal(index, sizes.constant(i));
    result =
        result ? node.create<graph::WhereOp>(chosen, padded, result) : padded;
    // The sizes that differ between the candidates are the run's.
    for (int64_t d = 0; d < rank; ++d) {
      bool differs = llvm::any_of(candidates, [&](Value other) {
        return tensorType(other).getDimSize(d) != shape[d];
      });
      if (!differs)
        continue;
      Value size = sizes.constant(shape[d]);
      counts[d] = counts[d] ? sizes.where(chosen, size, counts[d]) : size;
    }
  }
  return finish(node, sizes, result, counts, {});
}
