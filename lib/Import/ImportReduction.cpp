//===- ImportReduction.cpp - Reduction operators --------------------------===//
//
// ReduceSum, ReduceMean, ReduceMax and their kin, Softmax, LogSoftmax,
// Hardmax, ArgMax, ArgMin, CumSum, CumProd and TopK.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

using namespace mlir;
using namespace kiln;

/// Turns possibly negative ONNX axes of a rank-`rank` input into the sorted,
/// non-negative axes that graph ops take; an error names the node when one is
/// out of range or repeated.
static LogicalResult normalizeAxes(NodeImporter &node, ArrayRef<int64_t> axes,
                                   int64_t rank,
                                   SmallVectorImpl<int64_t> &normalized) {
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return node.emitError() << "axis " << axis << " is out of range for an "
                              << "input of rank " << rank << " (expected [-"
                              << rank << ", " << rank - 1 << "])";
    normalized.push_back(axis < 0 ? axis + rank : axis);
  }
  llvm::sort(normalized);
  if (std::adjacent_find(normalized.begin(), normalized.end()) !=
      normalized.end())
    return node.emitError()
           << "axes " << graph::formatShape(axes) << " name a dimension twice";
  return success();
}

/// Reads a constant integer input (an axes list or an axis) into `values`.
/// The input must be a graph constant: Kiln needs axes at compile time.
static LogicalResult getConstantInts(NodeImporter &node, unsigned index,
                                     StringRef what,
                                     SmallVectorImpl<int64_t> &values) {
  auto attr =
      dyn_cast_or_null<DenseIntElementsAttr>(node.getConstantInput(index));
  if (!attr)
    return node.emitError() << "input '" << what
                            << "' must be a constant integer tensor (an "
                               "initializer or a Constant node): Kiln needs "
                               "it at compile time";
  for (const APInt &value : attr.getValues<APInt>())
    values.push_back(value.getSExtValue());
  return success();
}

/// Whether `input` has a float element type; else an error naming the node.
static LogicalResult requireFloat(NodeImporter &node, Value input) {
  Type element = cast<ShapedType>(input.getType()).getElementType();
  if (isa<FloatType>(element))
    return success();
  return node.emitError() << "Kiln computes " << node.getOpType()
                          << " on float tensors only, got " << element;
}

/// A rank-1 i64 graph.constant.
static Value createI64Vector(NodeImporter &node, ArrayRef<int64_t> values) {
  return import::createI64Constant(node, {static_cast<int64_t>(values.size())},
                                   values);
}

/// ReduceX over `count` axes read at run time. Every set of `count`
/// distinct axes is reduced, padded with zeros to the output's largest
/// shape (each dimension the largest it has for any set: without keepdims
/// the kept dimensions in order), and stacked; the run's set is numbered by
/// the sum of 2^axis (a Gather of powers of two, whose index check fails
/// the run on an axis out of [-rank, rank)), and a Gather takes its
/// reduction. Each output dimension whose size differs between the sets is
/// a size the run decides (NodeImporter::setDataDependent); a repeated axis
/// fails the run. Costs one reduction per set: C(rank, count).
template <typename OpTy>
static LogicalResult importReduceAtRunTimeAxes(NodeImporter &node, Value input,
                                               int64_t count, bool keepdims) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  if (count > rank || rank > 16)
    return node.emitError() << count << " axes read at run time for an input "
                            << "of rank " << rank << " (at most the rank, "
                            << "and rank 16)";
  // The sets of `count` axes, as bit masks, and the output's shape for each.
  SmallVector<uint64_t> sets;
  for (uint64_t mask = 0; mask < (uint64_t(1) << rank); ++mask)
    if (llvm::popcount(mask) == count)
      sets.push_back(mask);
  // A reduction per set: bounded, so that a model cannot ask for thousands.
  constexpr size_t kMaxSets = 128;
  if (sets.size() > kMaxSets)
    return node.emitError() << count << " axes read at run time of an input "
                            << "of rank " << rank << " make " << sets.size()
                            << " sets of axes, more than the " << kMaxSets
                            << " Kiln reduces in advance; give the axes as a "
                               "constant";
  auto shapeFor = [&](uint64_t mask) {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      bool reduced = mask & (uint64_t(1) << d);
      if (keepdims)
        shape.push_back(reduced ? 1 : type.getDimSize(d));
      else if (!reduced)
        shape.push_back(type.getDimSize(d));
    }
    return shape;
  };
  SmallVector<int64_t> largest = shapeFor(sets.front());
  for (uint64_t mask : sets)
    for (auto [d, size] : llvm::enumerate(shapeFor(mask)))
      largest[d] = std::max(largest[d], size);

  SmallVector<Value> laidOut;
  SmallVector<int64_t> oneMore{1};
  oneMore.append(largest);
  for (uint64_t mask : sets) {
    SmallVector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d)
      if (mask & (uint64_t(1) << d))
        axes.push_back(d);
    Value reduced = node.create<OpTy>(input, ArrayRef<int64_t>(axes), true);
    if (!reduced)
      return failure();
    // Padded with zeros to the largest shape: only the entries within the
    // run's sizes are the output.
    SmallVector<int64_t> shape = shapeFor(mask);
    if (!keepdims)
      reduced = node.create<graph::ReshapeOp>(reduced, shape,
                                              /*allow_zero=*/true);
    SmallVector<int64_t> pads(2 * shape.size(), 0);
    for (auto [d, size] : llvm::enumerate(shape))
      pads[shape.size() + d] = largest[d] - size;
    if (reduced)
      reduced = node.create<graph::PadOp>(reduced, pads, "constant",
                                          llvm::APFloat(0.0));
    if (reduced)
      reduced = node.create<graph::ReshapeOp>(reduced, oneMore,
                                              /*allow_zero=*/true);
    if (!reduced)
      return failure();
    laidOut.push_back(reduced);
  }
  Value stacked = laidOut.size() == 1
                      ? laidOut.front()
                      : node.create<graph::ConcatOp>(laidOut, uint64_t(0));

  // The run's set: its mask, then its place in the stack (a mask of another
  // popcount, from a repeated axis, gets a place past the end).
  SmallVector<int64_t> powers,
      places(uint64_t(1) << rank, static_cast<int64_t>(sets.size()));
  for (int64_t d = 0; d < rank; ++d)
    powers.push_back(int64_t(1) << d);
  for (auto [i, mask] : llvm::enumerate(sets))
    places[mask] = static_cast<int64_t>(i);
  Value bits = node.create<graph::GatherOp>(createI64Vector(node, powers),
                                            node.getInput(1), uint64_t(0));
  Value mask =
      bits ? node.create<graph::ReduceSumOp>(bits, ArrayRef<int64_t>{0}, false)
           : Value();
  Value place = mask ? node.create<graph::GatherOp>(
                           createI64Vector(node, places), mask, uint64_t(0))
                     : Value();
  Value result = place && stacked
                     ? node.create<graph::GatherOp>(stacked, place, uint64_t(0))
                     : Value();
  if (!result)
    return failure();
  for (int64_t d = 0; d < static_cast<int64_t>(largest.size()); ++d) {
    SmallVector<int64_t> sizes;
    for (uint64_t mask : sets)
      sizes.push_back(shapeFor(mask)[d]);
    if (llvm::all_equal(sizes))
      continue;
    Value size = node.create<graph::GatherOp>(createI64Vector(node, sizes),
                                              place, uint64_t(0));
    if (!size)
      return failure();
    node.setDataDependent(result, size, d);
  }
  return node.setResults(result);
}

/// ReduceX. Its axes are an attribute before `axesInputSince` and an optional
/// input from then on, a constant or read at run time, with
/// `noop_with_empty_axes` choosing what an empty list means.
template <typename OpTy, int64_t axesInputSince, bool floatOnly = false>
static LogicalResult importReduce(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (floatOnly && failed(requireFloat(node, input)))
    return failure();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  bool keepdims = node.getInt("keepdims", 1) != 0;
  SmallVector<int64_t> axes;
  bool noop = false;
  if (node.getOpset() >= axesInputSince) {
    noop = node.getInt("noop_with_empty_axes", 0) != 0;
    Value axesInput = node.getInput(1);
    auto axesType = axesInput ? cast<RankedTensorType>(axesInput.getType())
                              : RankedTensorType();
    if (axesInput && !node.getConstantInput(1) &&
        axesType.getNumElements() != 0) {
      if (axesType.getRank() != 1 || !axesType.getElementType().isInteger(64))
        return node.emitError() << "input 'axes', read at run time, must be "
                                   "a 1-D int64 tensor, not "
                                << axesType;
      if (node.hasFailed())
        return failure();
      return importReduceAtRunTimeAxes<OpTy>(node, input,
                                             axesType.getDimSize(0), keepdims);
    }
    if (axesInput && axesType.getNumElements() != 0 &&
        failed(getConstantInts(node, 1, "axes", axes)))
      return failure();
  } else {
    axes = node.getInts("axes");
  }
  if (node.hasFailed())
    return failure();
  SmallVector<int64_t> normalized;
  if (failed(normalizeAxes(node, axes, rank, normalized)))
    return failure();
  // An empty list reduces everything unless noop_with_empty_axes is set.
  if (normalized.empty() && !noop)
    normalized = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  return node.setResults(
      node.create<OpTy>(input, ArrayRef<int64_t>(normalized), keepdims));
}

/// Softmax, LogSoftmax and Hardmax. Before opset 13 the input was coerced to
/// 2-D at `axis` (default 1): the graph op normalises over every axis from
/// `axis` on. From 13 on, over `axis` alone (default -1).
template <typename OpTy>
static LogicalResult importSoftmaxLike(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (!std::is_same_v<OpTy, graph::HardmaxOp> &&
      failed(requireFloat(node, input)))
    return failure();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  bool coerce2D = node.getOpset() < 13;
  int64_t axis = node.getInt("axis", coerce2D ? 1 : -1);
  if (node.hasFailed())
    return failure();
  if (rank == 0)
    return node.emitError() << "needs an input of rank >= 1";
  SmallVector<int64_t> axes;
  if (failed(normalizeAxes(node, {axis}, rank, axes)))
    return failure();
  if (coerce2D)
    axes = llvm::to_vector(llvm::seq<int64_t>(axes.front(), rank));
  return node.setResults(node.create<OpTy>(input, ArrayRef<int64_t>(axes)));
}

/// ArgMax and ArgMin (select_last_index since opset 12, default 0).
template <typename OpTy>
static LogicalResult importArgReduce(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = node.getInt("axis", 0);
  bool keepdims = node.getInt("keepdims", 1) != 0;
  bool selectLast = node.getInt("select_last_index", 0) != 0;
  if (node.hasFailed())
    return failure();
  SmallVector<int64_t> axes;
  if (failed(normalizeAxes(node, {axis}, rank, axes)))
    return failure();
  return node.setResults(node.create<OpTy>(
      input, static_cast<uint64_t>(axes.front()), keepdims, selectLast));
}

/// CumSum or CumProd along an axis read at run time: the op along every
/// axis, stacked, and the run's taken by a Gather, whose index check fails
/// the run on an axis out of [-rank, rank) (negative ones count from the
/// end, as ONNX's do). Costs the op once per dimension.
template <typename OpTy>
static LogicalResult importCumulativeAtRunTimeAxis(NodeImporter &node,
                                                   Value input, bool exclusive,
                                                   bool reverse) {
  auto type = cast<RankedTensorType>(input.getType());
  Value axis = node.getInput(1);
  auto axisType = cast<RankedTensorType>(axis.getType());
  if (axisType.getNumElements() != 1 ||
      !isa<IntegerType>(axisType.getElementType()))
    return node.emitError()
           << "input 'axis' must hold one integer, not " << axisType;
  if (axisType.getRank() != 0)
    axis = node.create<graph::ReshapeOp>(axis, SmallVector<int64_t>{},
                                         /*allow_zero=*/false);
  SmallVector<int64_t> oneMore{1};
  oneMore.append(type.getShape().begin(), type.getShape().end());
  SmallVector<Value> each;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value along =
        node.create<OpTy>(input, static_cast<uint64_t>(d), exclusive, reverse);
    if (!along)
      return failure();
    each.push_back(
        node.create<graph::ReshapeOp>(along, oneMore, /*allow_zero=*/false));
  }
  Value stacked = each.size() == 1
                      ? each.front()
                      : node.create<graph::ConcatOp>(each, uint64_t(0));
  if (!axis || !stacked)
    return failure();
  return node.setResults(
      node.create<graph::GatherOp>(stacked, axis, uint64_t(0)));
}

/// CumSum and CumProd: the axis is an input of one element, a constant or
/// read at run time.
template <typename OpTy>
static LogicalResult importCumulative(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input || !node.getInput(1))
    return node.emitError() << "needs inputs x and axis";
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  bool exclusive = node.getInt("exclusive", 0) != 0;
  bool reverse = node.getInt("reverse", 0) != 0;
  if (node.hasFailed())
    return failure();
  if (!node.getConstantInput(1))
    return importCumulativeAtRunTimeAxis<OpTy>(node, input, exclusive, reverse);
  SmallVector<int64_t> axis;
  if (failed(getConstantInts(node, 1, "axis", axis)))
    return failure();
  if (axis.size() != 1)
    return node.emitError()
           << "input 'axis' must hold one value, got " << axis.size();
  SmallVector<int64_t> axes;
  if (failed(normalizeAxes(node, axis, rank, axes)))
    return failure();
  return node.setResults(node.create<OpTy>(
      input, static_cast<uint64_t>(axes.front()), exclusive, reverse));
}

/// TopK of a K read at run time: the whole axis sorted, of which the run
/// decides that K entries are the output (NodeImporter::setDataDependent).
/// A K above the axis' size fails the run (a Gather's index check); a
/// negative one gives no entries.
static LogicalResult importTopKAtRunTimeK(NodeImporter &node, Value input,
                                          int64_t axis, bool largest) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> axes;
  if (failed(normalizeAxes(node, {axis}, type.getRank(), axes)))
    return failure();
  int64_t size = type.getDimSize(axes.front());
  Value k = node.getInput(1);
  auto kType = cast<RankedTensorType>(k.getType());
  if (kType.getNumElements() != 1 || !kType.getElementType().isInteger(64))
    return node.emitError() << "K must hold one int64, not " << kType;
  if (kType.getRank() != 0)
    k = node.create<graph::ReshapeOp>(k, SmallVector<int64_t>{},
                                      /*allow_zero=*/false);
  Value zero = import::createI64Constant(node, {}, {0});
  Value sizes =
      createI64Vector(node, llvm::to_vector(llvm::seq<int64_t>(0, size + 1)));
  Value count = k ? node.create<graph::MaxOp>(ValueRange{k, zero}) : Value();
  if (count)
    count = node.create<graph::GatherOp>(sizes, count, uint64_t(0));
  Operation *op = count ? node.createOp<graph::TopKOp>(
                              input, static_cast<uint64_t>(axes.front()),
                              static_cast<uint64_t>(size), largest, true)
                        : nullptr;
  if (!op)
    return failure();
  node.setDataDependent(op->getResult(0), count, axes.front());
  node.setDataDependent(op->getResult(1), count, axes.front());
  return node.setResults(op->getResults());
}

/// TopK: `k` is an attribute before opset 10 and an input (one element)
/// from then on, a constant or read at run time; `largest` and `sorted`
/// exist from opset 11.
static LogicalResult importTopK(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = node.getInt("axis", -1);
  bool largest = node.getInt("largest", 1) != 0;
  bool sorted = node.getInt("sorted", 1) != 0;
  SmallVector<int64_t> k;
  if (node.getOpset() < 10) {
    k.push_back(node.getInt("k", -1));
  } else {
    if (!node.getInput(1))
      return node.emitError() << "needs input K";
    if (!node.getConstantInput(1))
      return importTopKAtRunTimeK(node, input, axis, largest);
    if (failed(getConstantInts(node, 1, "K", k)))
      return failure();
  }
  if (node.hasFailed())
    return failure();
  if (k.size() != 1 || k.front() < 0)
    return node.emitError()
           << "K must be one non-negative value, got " << graph::formatShape(k);
  SmallVector<int64_t> axes;
  if (failed(normalizeAxes(node, {axis}, rank, axes)))
    return failure();
  Operation *op = node.createOp<graph::TopKOp>(
      input, static_cast<uint64_t>(axes.front()),
      static_cast<uint64_t>(k.front()), largest, sorted);
  if (!op)
    return failure();
  return node.setResults(op->getResults());
}

void kiln::registerReductionImporters(NodeImporterRegistry &registry) {
  using namespace graph;
  // ReduceSum took its axes as an input from opset 13, the others from 18.
  registry.add("ReduceSum", 1, importReduce<ReduceSumOp, 13>);
  registry.add("ReduceMean", 1, importReduce<ReduceMeanOp, 18>);
  registry.add("ReduceMax", 1, importReduce<ReduceMaxOp, 18>);
  registry.add("ReduceMin", 1, importReduce<ReduceMinOp, 18>);
  registry.add("ReduceProd", 1, importReduce<ReduceProdOp, 18>);
  registry.add("ReduceL1", 1, importReduce<ReduceL1Op, 18>);
  registry.add("ReduceL2", 1, importReduce<ReduceL2Op, 18, true>);
  registry.add("ReduceLogSum", 1, importReduce<ReduceLogSumOp, 18, true>);
  registry.add("ReduceLogSumExp", 1, importReduce<ReduceLogSumExpOp, 18, true>);
  registry.add("ReduceSumSquare", 1, importReduce<ReduceSumSquareOp, 18>);
  registry.add("Softmax", 1, importSoftmaxLike<SoftmaxOp>);
  registry.add("LogSoftmax", 1, importSoftmaxLike<LogSoftmaxOp>);
  registry.add("Hardmax", 1, importSoftmaxLike<HardmaxOp>);
  registry.add("ArgMax", 1, importArgReduce<ArgMaxOp>);
  registry.add("ArgMin", 1, importArgReduce<ArgMinOp>);
  registry.add("CumSum", 11, importCumulative<graph::CumSumOp>);
  registry.add("CumProd", 26, importCumulative<graph::CumProdOp>);
  registry.add("TopK", 1, importTopK);
}
