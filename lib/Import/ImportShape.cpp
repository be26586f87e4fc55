//===- ImportShape.cpp - Shape and data-movement operators ----------------===//
//
// Reshape, Transpose, Concat, Slice, Gather and their kin. Inputs that
// decide a result's shape (Reshape's shape, Slice's starts...) become
// attributes where they are constants (or sizes of symbolic dimensions,
// ImportShapeValues.cpp); where they are run-time values, the result's
// sizes are ones the run decides (ImportRunTimeShapes.cpp). Ops are built
// through `createFolded`, which folds them when their operands are
// constants: exporters compute shapes with Shape -> Gather -> Concat, and
// folding turns that arithmetic into the constant a later Reshape needs.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportRunTimeShapes.h"
#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using kiln::graph::formatShape;
using kiln::import::createI64Constant;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static Value createConstant(NodeImporter &node, ElementsAttr value) {
  return graph::ConstantOp::create(node.getBuilder(), node.getLoc(),
                                   cast<TypedAttr>(value));
}

static RankedTensorType getType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The integer values of constant input `i`. Emits an error naming `what`
/// and returns std::nullopt when the input is not a constant.
static std::optional<SmallVector<int64_t>>
getConstantInts(NodeImporter &node, unsigned i, StringRef what) {
  // An empty input holds no value to read at run time.
  if (Value value = node.getInput(i); value &&
                                      getType(value).hasStaticShape() &&
                                      getType(value).getNumElements() == 0)
    return SmallVector<int64_t>();
  auto dense = dyn_cast_or_null<DenseIntElementsAttr>(node.getConstantInput(i));
  if (!dense) {
    node.emitError() << what
                     << " must be a constant (an initializer or a Constant "
                        "node) for Kiln to compile static shapes";
    return std::nullopt;
  }
  SmallVector<int64_t> values;
  for (const APInt &v : dense.getValues<APInt>())
    values.push_back(dense.getElementType().isUnsignedInteger()
                         ? static_cast<int64_t>(v.getZExtValue())
                         : v.getSExtValue());
  return values;
}

/// The one integer of constant input `i` (a length, an axis), or
/// std::nullopt after an error naming `what`.
static std::optional<int64_t> getConstantInt(NodeImporter &node, unsigned i,
                                             StringRef what) {
  auto values = getConstantInts(node, i, what);
  if (!values)
    return std::nullopt;
  if (values->size() != 1) {
    node.emitError() << what << " must be one integer";
    return std::nullopt;
  }
  return values->front();
}

/// The values of a constant float or integer input as doubles.
static std::optional<SmallVector<double>>
getConstantDoubles(NodeImporter &node, unsigned i, StringRef what) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(i));
  if (!dense) {
    node.emitError() << what
                     << " must be a constant (an initializer or a Constant "
                        "node) for Kiln to compile static shapes";
    return std::nullopt;
  }
  SmallVector<double> values;
  if (isa<FloatType>(dense.getElementType())) {
    for (const APFloat &v : dense.getValues<APFloat>())
      values.push_back(v.convertToDouble());
  } else {
    for (const APInt &v : dense.getValues<APInt>())
      values.push_back(static_cast<double>(v.getSExtValue()));
  }
  return values;
}

/// Normalises `axis` of a tensor of `rank` dimensions to [0, rank); emits an
/// error and returns std::nullopt when it is out of range.
static std::optional<int64_t> normalizeAxis(NodeImporter &node, int64_t axis,
                                            int64_t rank) {
  if (axis < -rank || axis >= rank) {
    node.emitError() << "axis " << axis << " is out of range for rank " << rank;
    return std::nullopt;
  }
  return axis < 0 ? axis + rank : axis;
}

/// A graph.reshape to a fully known shape, where a dynamic size (at most
/// one) is written -1.
static Value reshapeTo(NodeImporter &node, Value input,
                       ArrayRef<int64_t> shape) {
  SmallVector<int64_t> entries;
  for (int64_t size : shape)
    entries.push_back(ShapedType::isDynamic(size) ? -1 : size);
  if (llvm::count(entries, -1) > 1) {
    node.emitError() << "the result shape " << formatShape(shape)
                     << " has more than one dynamic dimension";
    return {};
  }
  return node.createFolded<graph::ReshapeOp>(
      input, node.getBuilder().getDenseI64ArrayAttr(entries),
      node.getBuilder().getBoolAttr(true));
}

static Value transpose(NodeImporter &node, Value input,
                       ArrayRef<int64_t> perm) {
  return node.createFolded<graph::TransposeOp>(
      input, node.getBuilder().getDenseI64ArrayAttr(perm));
}

//===----------------------------------------------------------------------===//
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose
//===----------------------------------------------------------------------===//

/// A Reshape's shape computed from sizes of symbolic dimensions, as
/// graph.reshape spells it: a symbol at the index where the input has it
/// becomes `0` (the input's size), and one symbol left becomes `-1` where
/// the input's other dimensions hold exactly it and the same static sizes.
static std::optional<SmallVector<int64_t>> reshapeOfSymbols(NodeImporter &node,
                                                            Value input) {
  SmallVector<ShapeEntry> entries =
      node.getState().shapeValues.lookup(node.getInput(1));
  std::optional<SmallVector<ShapeEntry>> symbols =
      traceSymbols(node, input, "the input");
  if (!symbols)
    return std::nullopt;
  bool allowZero = node.getInt("allowzero", 0) != 0;
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  SmallVector<bool> copied(rank, false);
  int64_t left = -1;
  for (auto [i, entry] : llvm::enumerate(entries)) {
    int64_t at = i;
    if (!entry.isSymbolic()) {
      if (entry.value == 0 && !allowZero && at < rank)
        copied[at] = true;
      shape.push_back(entry.value);
      continue;
    }
    if (!allowZero && at < rank && (*symbols)[at].sameSize(entry)) {
      copied[at] = true;
      shape.push_back(0);
      continue;
    }
    if (left >= 0 || llvm::is_contained(shape, -1) ||
        llvm::any_of(ArrayRef(entries).drop_front(i + 1),
                     [](const ShapeEntry &e) {
                       return !e.isSymbolic() && e.value == -1;
                     })) {
      node.emitError() << "the shape, computed from the sizes of symbolic "
                          "dimensions, has more than one size that is not "
                          "the input's at the same index";
      return std::nullopt;
    }
    left = i;
    shape.push_back(-1);
  }
  if (left < 0)
    return shape;
  // The `-1` must come out as the entry's size: the input's uncopied
  // dimensions hold its symbol once, and static sizes that make up the
  // rest of the shape and the entry's factor (S x 97 from S, 388 x 16 when
  // the shape's other size is 64).
  const ShapeEntry &want = entries[left];
  int64_t symbol = want.symbol, inStatic = 1, outStatic = 1, met = 0,
          inScale = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (copied[d])
      continue;
    if ((*symbols)[d].symbol == symbol && type.isDynamicDim(d))
      ++met, inScale = (*symbols)[d].scale;
    else if (!type.isDynamicDim(d))
      inStatic *= type.getDimSize(d);
    else
      met = 2;
  }
  for (auto [i, size] : llvm::enumerate(shape))
    if (int64_t(i) != left && !(size == 0 && !allowZero))
      outStatic *= size;
  int64_t inTotal, outTotal;
  if (met != 1 || llvm::MulOverflow(inStatic, inScale, inTotal) ||
      llvm::MulOverflow(outStatic, want.scale, outTotal) ||
      inTotal != outTotal) {
    node.emitError() << "the shape, computed from the sizes of symbolic "
                        "dimensions, merges or splits the symbolic dimension '"
                     << symbolName(node, symbol) << "' with other sizes";
    return std::nullopt;
  }
  return shape;
}

static LogicalResult importReshape(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  SmallVector<int64_t> shape;
  if (node.getOpset() < 5) {
    shape = node.getInts("shape");
  } else if (isRunTimeShapeOperand(node, 1)) {
    return importReshapeAtRunTime(node, input, node.getInt("allowzero", 0));
  } else if (!node.getConstantInput(1) &&
             node.getState().shapeValues.count(node.getInput(1))) {
    auto values = reshapeOfSymbols(node, input);
    if (!values)
      return failure();
    shape = *values;
  } else {
    auto values = getConstantInts(node, 1, "the shape input");
    if (!values)
      return failure();
    shape = *values;
  }
  Builder &b = node.getBuilder();
  return node.setResults(node.createFolded<graph::ReshapeOp>(
      input, b.getDenseI64ArrayAttr(shape),
      b.getBoolAttr(node.getInt("allowzero", 0) != 0)));
}

static LogicalResult importFlatten(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  ArrayRef<int64_t> shape = getType(input).getShape();
  int64_t rank = shape.size();
  int64_t axis = node.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return node.emitError()
           << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  // The sizes of a shape computed from constants may be anything: their
  // product must fit.
  bool overflow = false;
  auto product = [&](ArrayRef<int64_t> sizes) {
    int64_t p = 1;
    for (int64_t s : sizes) {
      if (ShapedType::isDynamic(s))
        return ShapedType::kDynamic;
      overflow = overflow || llvm::MulOverflow(p, s, p);
    }
    return p;
  };
  int64_t outer = product(shape.take_front(axis));
  int64_t inner = product(shape.drop_front(axis));
  if (overflow)
    return node.emitError() << "input of shape " << graph::formatShape(shape)
                            << " has more elements than fit in 64 bits";
  return node.setResults(reshapeTo(node, input, {outer, inner}));
}

static LogicalResult importSqueeze(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  ArrayRef<int64_t> shape = getType(input).getShape();
  int64_t rank = shape.size();
  SmallVector<int64_t> axes;
  if (node.getOpset() < 13) {
    axes = node.getInts("axes");
  } else if (isRunTimeShapeOperand(node, 1)) {
    return importSqueezeOrUnsqueezeAtRunTime(node, input, /*drop=*/true);
  } else if (node.getInput(1)) {
    auto values = getConstantInts(node, 1, "the axes input");
    if (!values)
      return failure();
    axes = *values;
  }
  SmallVector<bool> removed(rank, false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = shape[d] == 1;
  }
  for (int64_t axis : axes) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    if (shape[*d] != 1 && !ShapedType::isDynamic(shape[*d]))
      return node.emitError()
             << "cannot squeeze dimension " << *d << " of size " << shape[*d];
    removed[*d] = true;
  }
  SmallVector<int64_t> result;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      result.push_back(shape[d]);
  if (llvm::count_if(result, ShapedType::isDynamic) > 1) {
    // Several `?` sizes: the squeezed axes moved last, then dropped, each
    // kept size copied at its index (a `0`).
    SmallVector<int64_t> perm;
    for (bool last : {false, true})
      for (int64_t d = 0; d < rank; ++d)
        if (removed[d] == last)
          perm.push_back(d);
    Builder &b = node.getBuilder();
    return node.setResults(node.createFolded<graph::ReshapeOp>(
        transpose(node, input, perm),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(result.size(), 0)),
        b.getBoolAttr(false)));
  }
  return node.setResults(reshapeTo(node, input, result));
}

static LogicalResult importUnsqueeze(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  ArrayRef<int64_t> shape = getType(input).getShape();
  SmallVector<int64_t> axes;
  if (node.getOpset() < 13) {
    axes = node.getInts("axes");
  } else if (isRunTimeShapeOperand(node, 1)) {
    return importSqueezeOrUnsqueezeAtRunTime(node, input, /*drop=*/false);
  } else {
    auto values = getConstantInts(node, 1, "the axes input");
    if (!values)
      return failure();
    axes = *values;
  }
  int64_t rank = shape.size() + axes.size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : axes) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    if (inserted[*d])
      return node.emitError() << "axis " << axis << " is repeated";
    inserted[*d] = true;
  }
  SmallVector<int64_t> result;
  const int64_t *next = shape.begin();
  for (int64_t d = 0; d < rank; ++d)
    result.push_back(inserted[d] ? 1 : *next++);
  if (llvm::count_if(shape, ShapedType::isDynamic) > 1) {
    // Several `?` sizes: the new axes appended (each size copied at its
    // index, a `0`), then moved into place.
    SmallVector<int64_t> spec(shape.size(), 0), perm;
    spec.append(axes.size(), 1);
    int64_t kept = 0, added = shape.size();
    for (int64_t d = 0; d < rank; ++d)
      perm.push_back(inserted[d] ? added++ : kept++);
    Builder &b = node.getBuilder();
    Value appended = node.createFolded<graph::ReshapeOp>(
        input, b.getDenseI64ArrayAttr(spec), b.getBoolAttr(false));
    return node.setResults(appended ? transpose(node, appended, perm)
                                    : Value());
  }
  return node.setResults(reshapeTo(node, input, result));
}

static LogicalResult importTranspose(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  int64_t rank = getType(input).getRank();
  SmallVector<int64_t> perm = node.getInts("perm");
  if (!node.hasAttr("perm"))
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  return node.setResults(transpose(node, input, perm));
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice
//===----------------------------------------------------------------------===//

static LogicalResult importConcat(NodeImporter &node) {
  SmallVector<Value> inputs;
  for (unsigned i = 0, e = node.getNumInputs(); i < e; ++i)
    if (Value input = node.getInput(i))
      inputs.push_back(input);
  if (inputs.empty())
    return node.emitError() << "needs at least one input";
  auto axis = normalizeAxis(node, node.getInt("axis", 1),
                            getType(inputs.front()).getRank());
  if (!axis)
    return failure();
  return node.setResults(node.createFolded<graph::ConcatOp>(
      inputs, node.getBuilder().getI64IntegerAttr(*axis)));
}

/// Split by sizes read at run time: output i gathers the positions
/// offset_i + j (the sizes before it summed, clamped into the axis) for
/// every j the axis holds, of which size_i are the output, a size the run
/// decides (NodeImporter::setDataDependent). Sizes that are negative or do
/// not add up to the axis fail the run (a Gather's index check on a
/// one-entry table; the zero it gives is added to every offset so that it
/// stays).
static LogicalResult importSplitAtRunTime(NodeImporter &node, Value input,
                                          int64_t axis) {
  RankedTensorType type = getType(input);
  int64_t axisSize = type.getDimSize(axis);
  Value split = node.getInput(1);
  auto splitType = getType(split);
  Type i64 = node.getBuilder().getI64Type();
  if (splitType.getRank() != 1 || splitType.getElementType() != i64)
    return node.emitError() << "the split input must be a 1-D int64 tensor, "
                               "not "
                            << splitType;
  int64_t count = splitType.getDimSize(0);
  if (count != node.getNumOutputs())
    return node.emitError() << "the split input has " << count << " sizes for "
                            << node.getNumOutputs() << " outputs";
  auto constant = [&](int64_t value) {
    return createI64Constant(node, {}, {value});
  };
  auto vector = [&](ArrayRef<int64_t> values) {
    return createI64Constant(node, {static_cast<int64_t>(values.size())},
                             values);
  };
  // 0 when the sizes are valid, else an index past a one-entry table.
  Value total =
      node.create<graph::ReduceSumOp>(split, ArrayRef<int64_t>{0}, false);
  Value least =
      node.create<graph::ReduceMinOp>(split, ArrayRef<int64_t>{0}, false);
  if (!total || !least)
    return failure();
  Value valid = node.create<graph::AndOp>(
      node.create<graph::EqualOp>(total, constant(axisSize)),
      node.create<graph::GreaterEqualOp>(least, constant(0)));
  Value checked = node.create<graph::GatherOp>(
      vector({0}), node.create<graph::WhereOp>(valid, constant(0), constant(1)),
      uint64_t(0));
  Value offsets = node.create<graph::CumSumOp>(split, uint64_t(0), true, false);
  if (!checked || !offsets)
    return failure();
  Value positions = vector(
      llvm::to_vector(llvm::seq<int64_t>(0, std::max<int64_t>(axisSize, 0))));
  SmallVector<Value> results;
  for (int64_t i = 0; i < count; ++i) {
    Value offset = node.create<graph::AddOp>(
        node.create<graph::GatherOp>(offsets, constant(i), uint64_t(0)),
        checked);
    Value size = node.create<graph::GatherOp>(split, constant(i), uint64_t(0));
    Value indices = node.create<graph::MinOp>(ValueRange{
        node.create<graph::MaxOp>(ValueRange{
            node.create<graph::AddOp>(positions, offset), constant(0)}),
        constant(std::max<int64_t>(axisSize - 1, 0))});
    Value result = node.create<graph::GatherOp>(input, indices,
                                                static_cast<uint64_t>(axis));
    if (!result || !size)
      return failure();
    node.setDataDependent(result, size, axis);
    results.push_back(result);
  }
  return node.setResults(results);
}

static LogicalResult importSplit(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  auto axis = normalizeAxis(node, node.getInt("axis", 0), type.getRank());
  if (!axis)
    return failure();
  int64_t axisSize = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  if (node.hasAttr("split")) {
    sizes = node.getInts("split");
  } else if (node.getInput(1) && !node.getConstantInput(1) &&
             getType(node.getInput(1)).getNumElements() != 0) {
    return importSplitAtRunTime(node, input, *axis);
  } else if (node.getInput(1)) {
    auto values = getConstantInts(node, 1, "the split input");
    if (!values)
      return failure();
    sizes = *values;
  } else {
    if (ShapedType::isDynamic(axisSize))
      return node.emitError() << "cannot split the dynamic axis " << *axis
                              << " without explicit sizes";
    int64_t count = node.hasAttr("num_outputs") ? node.getInt("num_outputs")
                                                : node.getNumOutputs();
    if (count <= 0)
      return node.emitError() << "needs at least one output";
    // Equal pieces; from opset 18 the last one may be smaller.
    int64_t piece = (axisSize + count - 1) / count;
    if (node.getOpset() < 18 && axisSize % count != 0)
      return node.emitError()
             << "axis " << *axis << " of size " << axisSize
             << " does not split into " << count << " equal pieces";
    for (int64_t i = 0, left = axisSize; i < count; ++i) {
      sizes.push_back(std::min(piece, left));
      left -= sizes.back();
    }
  }
  Builder &b = node.getBuilder();
  Operation *op = node.createOp<graph::SplitOp>(
      input, b.getI64IntegerAttr(*axis), b.getDenseI64ArrayAttr(sizes));
  if (!op)
    return failure();
  return node.setResults(node.foldResults(op));
}

/// Slice of starts and ends read at run time (constant axes and steps):
/// along each sliced axis, the indices start + step * i for every i the
/// axis can hold (ceil(size / |step|)), clamped into it, taken by a Gather;
/// how many of them are the slice, max(0, ceil((end - start) / step)) after
/// ONNX's wrapping and clamping, is a size the run decides
/// (NodeImporter::setDataDependent).
static LogicalResult importSliceAtRunTime(NodeImporter &node, Value input,
                                          ArrayRef<int64_t> axes,
                                          ArrayRef<int64_t> steps) {
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  Builder &b = node.getBuilder();
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) {
    return createI64Constant(node, {}, {value});
  };
  // Entry `i` of a run-time starts or ends input, as an i64 scalar.
  auto entry = [&](unsigned input, int64_t i) -> Value {
    Value values = node.getInput(input);
    if (getType(values).getElementType() != i64)
      values = graph::CastOp::create(node.getBuilder(), node.getLoc(),
                                     getType(values).clone(i64), values);
    return node.create<graph::GatherOp>(values, constant(i), uint64_t(0));
  };
  auto add = [&](Value l, Value r) { return node.create<graph::AddOp>(l, r); };
  auto mul = [&](Value l, Value r) { return node.create<graph::MulOp>(l, r); };
  auto max = [&](Value l, Value r) {
    return node.create<graph::MaxOp>(ValueRange{l, r});
  };
  auto min = [&](Value l, Value r) {
    return node.create<graph::MinOp>(ValueRange{l, r});
  };
  // Negative positions count from the end.
  auto wrap = [&](Value v, int64_t size) {
    Value negative = node.create<graph::LessOp>(v, constant(0));
    return node.create<graph::WhereOp>(negative, add(v, constant(size)), v);
  };
  Value result = input;
  SmallVector<std::pair<Value, int64_t>> sizes;
  for (auto [i, axis, step] : llvm::enumerate(axes, steps)) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    int64_t size = type.getDimSize(*d);
    if (step == 0)
      return node.emitError() << "step of axis " << axis << " is 0";
    if (llvm::any_of(sizes, [&](const auto &s) { return s.second == *d; }))
      return node.emitError() << "axis " << axis << " is sliced twice";
    Value start = wrap(entry(1, i), size), end = wrap(entry(2, i), size);
    Value count;
    if (step > 0) {
      start = min(max(start, constant(0)), constant(size));
      end = min(max(end, constant(0)), constant(size));
      count = node.create<graph::DivOp>(
          add(node.create<graph::SubOp>(end, start), constant(step - 1)),
          constant(step));
    } else {
      start = min(max(start, constant(0)),
                  constant(std::max<int64_t>(size - 1, 0)));
      end = min(max(end, constant(-1)), constant(size - 1));
      count = node.create<graph::DivOp>(
          add(node.create<graph::SubOp>(start, end), constant(-step - 1)),
          constant(-step));
    }
    count = max(count, constant(0));
    int64_t bound =
        size == 0 ? 0 : (size + std::abs(step) - 1) / std::abs(step);
    Value iota = createI64Constant(
        node, {bound}, llvm::to_vector(llvm::seq<int64_t>(0, bound)));
    Value indices = min(max(add(start, mul(iota, constant(step))), constant(0)),
                        constant(std::max<int64_t>(size - 1, 0)));
    result = node.create<graph::GatherOp>(result, indices,
                                          static_cast<uint64_t>(*d));
    if (!result || !count)
      return failure();
    sizes.push_back({count, *d});
  }
  for (auto [count, d] : sizes)
    node.setDataDependent(result, count, d);
  return node.setResults(result);
}

/// A Slice whose ends are sizes of symbolic dimensions (x[:, :seq]): an
/// axis that ends at a symbol starts at 0 with a step of 1 and becomes a
/// graph.prefix as long as the symbol (the data's axis must hold its
/// bound), or stays whole where the data's axis is that symbol; the other
/// axes are a static slice.
static LogicalResult importSliceToSymbols(NodeImporter &node, Value input) {
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  SmallVector<ShapeEntry> ends = *getShapeEntries(node, 2);
  auto numbers = [&](unsigned i,
                     int64_t fill) -> std::optional<SmallVector<int64_t>> {
    if (!node.getInput(i))
      return SmallVector<int64_t>(ends.size(), fill);
    std::optional<SmallVector<ShapeEntry>> entries = getShapeEntries(node, i);
    if (!entries || entries->size() != ends.size() ||
        llvm::any_of(*entries,
                     [](const ShapeEntry &e) { return e.isSymbolic(); }))
      return std::nullopt;
    return llvm::map_to_vector(*entries,
                               [](const ShapeEntry &e) { return e.value; });
  };
  std::optional<SmallVector<int64_t>> starts = numbers(1, 0),
                                      steps = numbers(4, 1), axes;
  if (node.getInput(3))
    axes = numbers(3, 0);
  else
    axes = llvm::to_vector(llvm::seq<int64_t>(0, ends.size()));
  if (!starts || !steps || !axes)
    return node.emitError() << "with ends computed from the sizes of symbolic "
                               "dimensions, starts, axes and steps must be "
                               "constants of the same length";
  SmallVector<int64_t> allStarts(rank, 0), allEnds(type.getShape()),
      allSteps(rank, 1);
  SmallVector<std::pair<int64_t, ShapeEntry>> prefixes;
  for (auto [start, end, axis, step] :
       llvm::zip(*starts, ends, *axes, *steps)) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    int64_t size = type.getDimSize(*d);
    if (end.isSymbolic() && (end.isScaled() || !end.source))
      return node.emitError()
             << "axis " << axis << " ends at " << end.scale << " times the "
             << "symbolic size '" << symbolName(node, end.symbol)
             << "', which Kiln does not slice to";
    if (end.isSymbolic()) {
      std::string name = symbolName(node, end.symbol);
      if (start != 0 || step != 1)
        return node.emitError()
               << "axis " << axis << " ends at the symbolic size '" << name
               << "': it must start at 0 with a step of 1";
      std::optional<SmallVector<ShapeEntry>> symbols =
          traceSymbols(node, input, "the data");
      if (!symbols)
        return failure();
      if (ShapedType::isDynamic(size) && (*symbols)[*d].sameSize(end))
        continue;
      int64_t bound = symbolBound(node, end.symbol);
      if (ShapedType::isDynamic(size) || bound > size)
        return node.emitError()
               << "axis " << axis << " of the data "
               << formatShape(type.getShape()) << " ends at the symbolic size '"
               << name << "', which may reach " << bound << " (--dynamic-dims "
               << name << "=MIN..MAX)";
      prefixes.push_back({*d, end});
      continue;
    }
    if (ShapedType::isDynamic(size))
      return node.emitError() << "cannot slice the dynamic dimension " << *d;
    int64_t from = start < 0 ? start + size : start;
    int64_t to = end.value < 0 ? end.value + size : end.value;
    if (step <= 0)
      return node.emitError() << "step of axis " << axis
                              << " must be positive "
                                 "beside ends computed from symbolic sizes";
    allStarts[*d] = std::clamp<int64_t>(from, 0, size);
    allEnds[*d] = std::clamp<int64_t>(to, 0, size);
    allSteps[*d] = step;
  }
  Builder &b = node.getBuilder();
  Value result = node.createFolded<graph::SliceOp>(
      input, b.getDenseI64ArrayAttr(allStarts), b.getDenseI64ArrayAttr(allEnds),
      b.getDenseI64ArrayAttr(allSteps));
  for (auto [d, end] : prefixes)
    if (result)
      result = node.create<graph::PrefixOp>(result, end.source, uint64_t(d),
                                            uint64_t(end.dim));
  return node.setResults(result);
}

static LogicalResult importSlice(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (node.getOpset() >= 10 && node.getInput(2) && !node.getConstantInput(2) &&
      node.getState().shapeValues.count(node.getInput(2)))
    return importSliceToSymbols(node, input);
  if (node.getOpset() >= 10 &&
      (isRunTimeShapeOperand(node, 3) || isRunTimeShapeOperand(node, 4)))
    return importSliceWithRunTimeAxes(node, input);
  if (node.getOpset() >= 10 && node.getInput(1) && node.getInput(2) &&
      (!node.getConstantInput(1) || !node.getConstantInput(2))) {
    // Starts or ends at run time; the axes and steps are constants.
    int64_t count = getType(node.getInput(1)).getRank() == 1
                        ? getType(node.getInput(1)).getDimSize(0)
                        : -1;
    if (count < 0 || getType(node.getInput(2)).getRank() != 1 ||
        getType(node.getInput(2)).getDimSize(0) != count)
      return node.emitError() << "starts and ends must be 1-D and of one "
                                 "length";
    // (Each axis at most once: a longer list is not a slice of this input.)
    if (count > rank)
      return node.emitError()
             << "starts and ends have " << count
             << " entries, more than the input's " << rank << " axes";
    if (node.getInput(3)) {
      auto a = getConstantInts(node, 3,
                               "the axes input (with starts or "
                               "ends read at run time)");
      if (!a)
        return failure();
      axes = *a;
    } else {
      axes = llvm::to_vector(llvm::seq<int64_t>(0, count));
    }
    if (node.getInput(4)) {
      auto st = getConstantInts(node, 4,
                                "the steps input (with starts or "
                                "ends read at run time)");
      if (!st)
        return failure();
      steps = *st;
    } else {
      steps.assign(count, 1);
    }
    if (static_cast<int64_t>(axes.size()) != count ||
        static_cast<int64_t>(steps.size()) != count)
      return node.emitError()
             << "starts, ends, axes and steps differ in length";
    return importSliceAtRunTime(node, input, axes, steps);
  }
  if (node.getOpset() < 10) {
    starts = node.getInts("starts");
    ends = node.getInts("ends");
    axes = node.getInts("axes");
  } else {
    auto s = getConstantInts(node, 1, "the starts input");
    auto e = s ? getConstantInts(node, 2, "the ends input") : std::nullopt;
    if (!s || !e)
      return failure();
    starts = *s;
    ends = *e;
    if (node.getInput(3)) {
      auto a = getConstantInts(node, 3, "the axes input");
      if (!a)
        return failure();
      axes = *a;
    }
    if (node.getInput(4)) {
      auto st = getConstantInts(node, 4, "the steps input");
      if (!st)
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (int64_t d = 0, e = starts.size(); d < e; ++d)
      axes.push_back(d);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return node.emitError() << "starts, ends, axes and steps differ in length";
  SmallVector<int64_t> allStarts(rank, 0), allEnds(type.getShape()),
      allSteps(rank, 1);
  for (auto [start, end, axis, step] : llvm::zip(starts, ends, axes, steps)) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    int64_t size = type.getDimSize(*d);
    if (ShapedType::isDynamic(size)) {
      // All of it (x[:, 0:]), which keeps the symbol.
      if (step == 1 && (start == 0 || start <= INT32_MIN) && end >= INT32_MAX)
        continue;
      return node.emitError() << "cannot slice the dynamic dimension " << *d;
    }
    if (step == 0)
      return node.emitError() << "step of axis " << axis << " is 0";
    // ONNX: negative indices count from the end, then clamp.
    if (start < 0)
      start += size;
    if (end < 0)
      end += size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, size);
      end = std::clamp<int64_t>(end, 0, size);
    } else {
      start = std::clamp<int64_t>(start, 0, std::max<int64_t>(size - 1, 0));
      end = std::clamp<int64_t>(end, -1, size - 1);
    }
    allStarts[*d] = start;
    allEnds[*d] = end;
    allSteps[*d] = step;
  }
  Builder &b = node.getBuilder();
  return node.setResults(node.createFolded<graph::SliceOp>(
      input, b.getDenseI64ArrayAttr(allStarts), b.getDenseI64ArrayAttr(allEnds),
      b.getDenseI64ArrayAttr(allSteps)));
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

template <typename OpTy>
static LogicalResult importGatherWithAxis(NodeImporter &node) {
  Value data = node.getInput(0), indices = node.getInput(1);
  if (!data || !indices)
    return node.emitError() << "needs data and indices";
  auto axis =
      normalizeAxis(node, node.getInt("axis", 0), getType(data).getRank());
  if (!axis)
    return failure();
  return node.setResults(node.createFolded<OpTy>(
      data, indices, node.getBuilder().getI64IntegerAttr(*axis)));
}

static LogicalResult importGatherND(NodeImporter &node) {
  Value data = node.getInput(0), indices = node.getInput(1);
  if (!data || !indices)
    return node.emitError() << "needs data and indices";
  return node.setResults(node.create<graph::GatherNDOp>(
      data, indices,
      node.getBuilder().getI64IntegerAttr(node.getInt("batch_dims", 0))));
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// The `reduction` attribute of a scatter: "none" before opset 16, "add" or
/// "mul" from 16, "max" or "min" from 18.
static std::optional<graph::ScatterReduction>
getScatterReduction(NodeImporter &node) {
  std::string name = node.getString("reduction", "none");
  std::optional<graph::ScatterReduction> reduction =
      graph::symbolizeScatterReduction(name);
  bool known = reduction && (node.getOpset() >= 18 ||
                             (node.getOpset() >= 16 &&
                              *reduction != graph::ScatterReduction::Max &&
                              *reduction != graph::ScatterReduction::Min) ||
                             *reduction == graph::ScatterReduction::None);
  if (!known) {
    node.emitError() << "reduction '" << name << "' is not one of opset "
                     << node.getOpset() << "'s (none"
                     << (node.getOpset() >= 16 ? ", add, mul" : "")
                     << (node.getOpset() >= 18 ? ", max, min" : "") << ")";
    return std::nullopt;
  }
  return reduction;
}

static LogicalResult importScatterElements(NodeImporter &node) {
  Value data = node.getInput(0), indices = node.getInput(1),
        updates = node.getInput(2);
  if (!data || !indices || !updates)
    return node.emitError() << "needs data, indices and updates";
  auto axis =
      normalizeAxis(node, node.getInt("axis", 0), getType(data).getRank());
  std::optional<graph::ScatterReduction> reduction = getScatterReduction(node);
  if (!axis || !reduction)
    return failure();
  return node.setResults(node.create<graph::ScatterElementsOp>(
      data, indices, updates, *axis, *reduction));
}

static LogicalResult importScatterND(NodeImporter &node) {
  Value data = node.getInput(0), indices = node.getInput(1),
        updates = node.getInput(2);
  if (!data || !indices || !updates)
    return node.emitError() << "needs data, indices and updates";
  std::optional<graph::ScatterReduction> reduction = getScatterReduction(node);
  if (!reduction)
    return failure();
  return node.setResults(
      node.create<graph::ScatterNDOp>(data, indices, updates, *reduction));
}

/// TensorScatter (opset 24), a KV cache's update: `update` written into
/// `past_cache` along `axis` from each batch entry's write index (0 when
/// write_indices is absent), modulo the axis' length in "circular" mode. A
/// ScatterElements whose indices are write_indices[b] + i along the axis.
static LogicalResult importTensorScatter(NodeImporter &node) {
  Value past = node.getInput(0), update = node.getInput(1),
        writes = node.getInput(2);
  if (!past || !update)
    return node.emitError() << "needs inputs past_cache and update";
  auto pastType = cast<RankedTensorType>(past.getType());
  auto updateType = cast<RankedTensorType>(update.getType());
  int64_t rank = pastType.getRank();
  auto axis = normalizeAxis(node, node.getInt("axis", -2), rank);
  std::string mode = node.getString("mode", "linear");
  if (!axis || node.hasFailed())
    return failure();
  if (mode != "linear" && mode != "circular")
    return node.emitError()
           << "mode '" << mode << "' is neither linear nor circular";
  if (!pastType.hasStaticShape() || !updateType.hasStaticShape() ||
      updateType.getRank() != rank || rank < 2 || *axis == 0)
    return node.emitError() << "past_cache and update must have one static "
                               "rank of at least 2, the axis not the batch";
  Builder &b = node.getBuilder();
  int64_t length = updateType.getDimSize(*axis);
  // i along the axis, shaped to broadcast: [1, .., length, .., 1].
  SmallVector<int64_t> along(rank, 1);
  along[*axis] = length;
  SmallVector<int64_t> steps;
  for (int64_t i = 0; i < length; ++i)
    steps.push_back(i);
  Value indices = node.create<graph::ConstantOp>(cast<TypedAttr>(
      DenseElementsAttr::get(RankedTensorType::get(along, b.getI64Type()),
                             ArrayRef<int64_t>(steps))));
  if (writes) {
    SmallVector<int64_t> perBatch(rank, 1);
    perBatch[0] = pastType.getDimSize(0);
    Value start = node.create<graph::ReshapeOp>(writes, perBatch,
                                                /*allow_zero=*/true);
    indices = start ? node.create<graph::AddOp>(start, indices) : Value();
  }
  if (indices && mode == "circular") {
    Value size = node.create<graph::ConstantOp>(cast<TypedAttr>(
        DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                               pastType.getDimSize(*axis))));
    indices = node.create<graph::ModOp>(indices, size, b.getBoolAttr(false));
  }
  indices = indices
                ? node.create<graph::ExpandOp>(indices, updateType.getShape())
                : Value();
  if (!indices)
    return failure();
  return node.setResults(node.create<graph::ScatterElementsOp>(
      past, indices, update, *axis, graph::ScatterReduction::None));
}

//===----------------------------------------------------------------------===//
// Shape, Size, ConstantOfShape, Range: constants at compile time
//===----------------------------------------------------------------------===//

static LogicalResult importShape(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  ArrayRef<int64_t> shape = getType(input).getShape();
  int64_t rank = shape.size();
  int64_t start = node.getInt("start", 0);
  int64_t end = node.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  ArrayRef<int64_t> taken = shape.slice(start, end - start);
  if (!llvm::any_of(taken, ShapedType::isDynamic))
    return node.setResults(
        createI64Constant(node, {static_cast<int64_t>(taken.size())}, taken));
  // Sizes of symbolic dimensions: read at run time, and followed by the
  // importer entry by entry (ImportShapeValues.cpp).
  std::optional<SmallVector<ShapeEntry>> symbols =
      traceSymbols(node, input, "the input");
  if (!symbols)
    return failure();
  SmallVector<ShapeEntry> entries(symbols->begin() + start,
                                  symbols->begin() + end);
  Builder &b = node.getBuilder();
  Value sizes = node.create<graph::ShapeOp>(input);
  if (sizes && (start != 0 || end != rank))
    sizes = node.create<graph::SliceOp>(sizes, b.getDenseI64ArrayAttr({start}),
                                        b.getDenseI64ArrayAttr({end}),
                                        b.getDenseI64ArrayAttr({1}));
  if (failed(node.setResults(sizes)))
    return failure();
  node.getState().shapeValues[sizes] = entries;
  return success();
}

static LogicalResult importSize(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  if (!type.hasStaticShape())
    return node.emitError() << "the input shape "
                            << formatShape(type.getShape()) << " is not static";
  return node.setResults(createI64Constant(node, {}, {type.getNumElements()}));
}

static LogicalResult importConstantOfShape(NodeImporter &node) {
  Builder &b = node.getBuilder();
  Attribute value = b.getZeroAttr(b.getF32Type());
  if (node.hasAttr("value")) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(node.getTensor("value"));
    if (!dense || dense.getNumElements() != 1)
      return node.emitError() << "value must be a tensor of one element";
    value = dense.getValues<Attribute>()[0];
  }
  if (isRunTimeShapeOperand(node, 0))
    return importConstantOfShapeAtRunTime(node, value);
  auto shape = getConstantInts(node, 0, "the shape input");
  if (!shape)
    return failure();
  if (llvm::any_of(*shape, [](int64_t s) { return s < 0; }))
    return node.emitError()
           << "the shape " << formatShape(*shape) << " has a negative size";
  auto type = RankedTensorType::get(*shape, cast<TypedAttr>(value).getType());
  return node.setResults(
      createConstant(node, DenseElementsAttr::get(type, value)));
}

/// A size computed in floating point (a Range's count, a Resize's output
/// size), or nullopt when it is not a number or beyond any tensor's size
/// (2^48; converting it to an integer would be undefined).
static std::optional<int64_t> sizeOf(double value) {
  if (!std::isfinite(value) || std::fabs(value) > 0x1p48)
    return std::nullopt;
  return static_cast<int64_t>(value);
}

/// Range(0, n, 1) of a symbolic size n: the first n entries of a constant
/// range as long as n's bound.
static LogicalResult importRangeOfSymbol(NodeImporter &node,
                                         const ShapeEntry &limit) {
  if (limit.isScaled() || !limit.source)
    return node.emitError()
           << "a range up to " << limit.scale << " times the symbolic size '"
           << symbolName(node, limit.symbol)
           << "' is not one Kiln compiles (only up to the size itself)";
  auto start = getShapeEntries(node, 0), delta = getShapeEntries(node, 2);
  if (!start || !delta || start->size() != 1 || delta->size() != 1 ||
      start->front().isSymbolic() || delta->front().isSymbolic() ||
      start->front().value != 0 || delta->front().value != 1)
    return node.emitError()
           << "a range up to the symbolic size '"
           << symbolName(node, limit.symbol)
           << "' must start at 0 with a step of 1 for Kiln to compile it";
  int64_t bound = symbolBound(node, limit.symbol);
  constexpr int64_t kMaxRange = int64_t(1) << 24;
  if (bound > kMaxRange)
    return node.emitError()
           << "a range up to the symbolic size '"
           << symbolName(node, limit.symbol) << "' needs a bound of at most "
           << kMaxRange << " (--dynamic-dims), not " << bound;
  Type elementType = getType(node.getInput(0)).getElementType();
  // (An int16 range holds a length only up to 2^15.)
  if (auto integer = dyn_cast<IntegerType>(elementType);
      integer &&
      (integer.getWidth() > 64 || !llvm::isIntN(integer.getWidth() - 1, bound)))
    return node.emitError()
           << "a range of " << elementType << " cannot hold the symbolic size '"
           << symbolName(node, limit.symbol) << "' up to its bound " << bound;
  auto type = RankedTensorType::get({bound}, elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < bound; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      values.push_back(FloatAttr::get(floatType, double(i)));
    else
      values.push_back(IntegerAttr::get(elementType, i));
  }
  Value range = createConstant(node, DenseElementsAttr::get(type, values));
  return node.setResults(node.create<graph::PrefixOp>(
      range, limit.source, uint64_t(0), uint64_t(limit.dim)));
}

static LogicalResult importRange(NodeImporter &node) {
  if (auto limit = getShapeEntries(node, 1);
      limit && limit->size() == 1 && limit->front().isSymbolic())
    return importRangeOfSymbol(node, limit->front());
  auto start = dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(0));
  auto limit = dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(1));
  auto delta = dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(2));
  if (!start || !limit || !delta)
    return importRangeAtRunTime(node);
  Type elementType = start.getElementType();
  auto scalar = [&](DenseElementsAttr attr) {
    if (isa<FloatType>(attr.getElementType()))
      return (*attr.getValues<APFloat>().begin()).convertToDouble();
    return static_cast<double>(
        (*attr.getValues<APInt>().begin()).getSExtValue());
  };
  double first = scalar(start), last = scalar(limit), step = scalar(delta);
  if (step == 0)
    return node.emitError() << "delta is 0";
  std::optional<int64_t> steps = sizeOf(std::ceil((last - first) / step));
  if (!steps)
    return node.emitError()
           << "start " << first << ", limit " << last << " and delta " << step
           << " make no number of elements";
  int64_t count = std::max<int64_t>(0, *steps);
  auto type = RankedTensorType::get({count}, elementType);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < count; ++i) {
    if (auto floatType = dyn_cast<FloatType>(elementType))
      values.push_back(FloatAttr::get(floatType, first + i * step));
    else
      values.push_back(
          IntegerAttr::get(elementType, static_cast<int64_t>(first) +
                                            i * static_cast<int64_t>(step)));
  }
  return node.setResults(
      createConstant(node, DenseElementsAttr::get(type, values)));
}

//===----------------------------------------------------------------------===//
// Expand, Tile, Pad
//===----------------------------------------------------------------------===//

/// Expand's shape computed from sizes of symbolic dimensions: a symbol
/// where the input has it (aligned from the right) keeps the input's size,
/// as a 1 does; one where the input has a 1 (or no dimension) is left in
/// `broadcasts` (the result's dimension and the entry).
static std::optional<SmallVector<int64_t>>
expandOfSymbols(NodeImporter &node, Value input,
                SmallVectorImpl<std::pair<int64_t, ShapeEntry>> &broadcasts) {
  SmallVector<ShapeEntry> entries =
      node.getState().shapeValues.lookup(node.getInput(1));
  std::optional<SmallVector<ShapeEntry>> symbols =
      traceSymbols(node, input, "the input");
  if (!symbols)
    return std::nullopt;
  RankedTensorType type = getType(input);
  int64_t rank = symbols->size(), count = entries.size();
  int64_t resultRank = std::max(rank, count);
  SmallVector<int64_t> shape;
  for (auto [i, entry] : llvm::enumerate(entries)) {
    int64_t at = int64_t(i) - (count - rank);
    if (!entry.isSymbolic()) {
      shape.push_back(entry.value);
      continue;
    }
    shape.push_back(1);
    if (at >= 0 && (*symbols)[at].sameSize(entry))
      continue;
    if (entry.isScaled() || !entry.source) {
      node.emitError() << "the shape, computed from the sizes of symbolic "
                          "dimensions, expands to "
                       << entry.scale << " times the symbolic size '"
                       << symbolName(node, entry.symbol) << "'";
      return std::nullopt;
    }
    if (at >= 0 && (type.isDynamicDim(at) || type.getDimSize(at) != 1)) {
      node.emitError() << "the shape, computed from the sizes of symbolic "
                          "dimensions, broadcasts dimension "
                       << at << " of the input " << formatShape(type.getShape())
                       << " to the symbolic size '"
                       << symbolName(node, entry.symbol) << "'";
      return std::nullopt;
    }
    broadcasts.push_back({int64_t(i) + resultRank - count, entry});
  }
  return shape;
}

/// `value` broadcast along `dim` to the symbolic size of `entry`: plus a
/// row of zeros as long as the symbol (graph.prefix of a constant row as
/// long as its bound).
static Value broadcastToSymbol(NodeImporter &node, Value value, int64_t dim,
                               const ShapeEntry &entry) {
  RankedTensorType type = getType(value);
  int64_t bound = symbolBound(node, entry.symbol);
  constexpr int64_t kMaxRow = int64_t(1) << 24;
  if (type.getElementType().isInteger(1) || bound > kMaxRow) {
    node.emitError() << "cannot expand a "
                     << (type.getElementType().isInteger(1) ? "bool tensor"
                                                            : "tensor")
                     << " to the symbolic size '"
                     << symbolName(node, entry.symbol) << "'"
                     << (bound > kMaxRow ? " without a bound of at most 2^24"
                                         : "");
    return {};
  }
  Builder &b = node.getBuilder();
  auto rowType = RankedTensorType::get({bound}, type.getElementType());
  Value row = createConstant(
      node,
      DenseElementsAttr::get(rowType, b.getZeroAttr(type.getElementType())));
  row = node.create<graph::PrefixOp>(row, entry.source, uint64_t(0),
                                     uint64_t(entry.dim));
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[dim] = -1;
  row = node.create<graph::ReshapeOp>(row, b.getDenseI64ArrayAttr(shape),
                                      b.getBoolAttr(true));
  return row ? node.create<graph::AddOp>(value, row) : Value();
}

static LogicalResult importExpand(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (isRunTimeShapeOperand(node, 1))
    return importExpandAtRunTime(node, input);
  SmallVector<std::pair<int64_t, ShapeEntry>> broadcasts;
  auto shape = !node.getConstantInput(1) &&
                       node.getState().shapeValues.count(node.getInput(1))
                   ? expandOfSymbols(node, input, broadcasts)
                   : getConstantInts(node, 1, "the shape input");
  if (!shape)
    return failure();
  Value result = node.createFolded<graph::ExpandOp>(
      input, node.getBuilder().getDenseI64ArrayAttr(*shape));
  for (auto [dim, entry] : broadcasts)
    if (result)
      result = broadcastToSymbol(node, result, dim, entry);
  return node.setResults(result);
}

static LogicalResult importTile(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (isRunTimeShapeOperand(node, 1))
    return importTileAtRunTime(node, input);
  auto repeats = getConstantInts(node, 1, "the repeats input");
  if (!repeats)
    return failure();
  return node.setResults(node.create<graph::TileOp>(
      input, node.getBuilder().getDenseI64ArrayAttr(*repeats)));
}

/// Pad's `wrap` mode (opset 19): along each axis, the input's last `begin`
/// elements before it and its first `end` elements after it.
static Value wrapPad(NodeImporter &node, Value input, ArrayRef<int64_t> pads) {
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    node.emitError() << "expected " << 2 * rank << " pads, got " << pads.size();
    return {};
  }
  Value result = input;
  for (int64_t d = 0; d < rank && result; ++d) {
    int64_t begin = pads[d], end = pads[d + rank];
    if (begin == 0 && end == 0)
      continue;
    int64_t dim = getType(result).getDimSize(d);
    if (ShapedType::isDynamic(dim) || begin < 0 || end < 0 || begin > dim ||
        end > dim) {
      node.emitError() << "wrap padding needs a static axis and pads between "
                          "0 and its size, got "
                       << begin << " and " << end << " on axis " << d
                       << " of size " << formatShape(ArrayRef<int64_t>(dim));
      return {};
    }
    SmallVector<Value> parts;
    auto part = [&](int64_t from, int64_t to) {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      SmallVector<int64_t> ends(getType(result).getShape());
      starts[d] = from;
      ends[d] = to;
      return node.create<graph::SliceOp>(result, starts, ends, steps);
    };
    if (begin)
      parts.push_back(part(dim - begin, dim));
    parts.push_back(result);
    if (end)
      parts.push_back(part(0, end));
    if (llvm::any_of(parts, [](Value v) { return !v; }))
      return {};
    result = node.create<graph::ConcatOp>(ValueRange(parts), uint64_t(d));
  }
  return result;
}

static LogicalResult importPad(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  int64_t rank = getType(input).getRank();
  std::string mode = node.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && node.getOpset() >= 19))
    return node.emitError() << "mode '" << mode << "' is not supported";
  if (node.getOpset() >= 11 &&
      (isRunTimeShapeOperand(node, 1) || isRunTimeShapeOperand(node, 3)))
    return importPadAtRunTime(node, input, mode);
  SmallVector<int64_t> pads;
  double value = 0.0;
  Value runtimeValue; // a constant_value known only at run time
  if (node.getOpset() < 11) {
    pads = node.getInts(node.getOpset() < 2 ? "paddings" : "pads");
    value = node.getFloat("value", 0.0f);
  } else {
    auto p = getConstantInts(node, 1, "the pads input");
    if (!p)
      return failure();
    pads = *p;
    if (node.getInput(2) && !node.getConstantInput(2) && mode == "constant") {
      runtimeValue = node.getInput(2);
      if (getType(runtimeValue).getNumElements() != 1 ||
          getType(runtimeValue).getElementType() !=
              getType(input).getElementType())
        return node.emitError()
               << "constant_value must be one element of the input's type, got "
               << runtimeValue.getType();
    } else if (node.getInput(2)) {
      auto v = getConstantDoubles(node, 2, "the constant_value input");
      if (!v)
        return failure();
      if (v->size() != 1)
        return node.emitError() << "constant_value must have one element";
      value = v->front();
    }
    if (node.getInput(3)) {
      auto axes = getConstantInts(node, 3, "the axes input");
      if (!axes)
        return failure();
      if (pads.size() != 2 * axes->size())
        return node.emitError() << "expected " << 2 * axes->size()
                                << " pads for " << axes->size() << " axes";
      SmallVector<int64_t> all(2 * rank, 0);
      for (auto [i, axis] : llvm::enumerate(*axes)) {
        auto d = normalizeAxis(node, axis, rank);
        if (!d)
          return failure();
        all[*d] = pads[i];
        all[*d + rank] = pads[i + axes->size()];
      }
      pads = all;
    }
  }
  if (mode == "wrap")
    return node.setResults(wrapPad(node, input, pads));
  Builder &b = node.getBuilder();
  Value padded = node.create<graph::PadOp>(input, b.getDenseI64ArrayAttr(pads),
                                           b.getStringAttr(mode),
                                           b.getF64FloatAttr(value));
  if (!padded || !runtimeValue)
    return node.setResults(padded);
  // Padded with 0, then the value put where a padding mask (the input's
  // shape of true, padded with false) says so.
  RankedTensorType inputType = getType(input);
  if (!inputType.hasStaticShape())
    return node.emitError()
           << "a run-time constant_value needs a static input shape, got "
           << inputType;
  auto maskType = inputType.clone(b.getI1Type());
  Value inside = node.create<graph::ConstantOp>(
      cast<TypedAttr>(DenseElementsAttr::get(maskType, true)));
  inside = inside
               ? node.create<graph::PadOp>(inside, b.getDenseI64ArrayAttr(pads),
                                           b.getStringAttr("constant"),
                                           b.getF64FloatAttr(0.0))
               : Value();
  Value scalar = node.create<graph::ReshapeOp>(
      runtimeValue, b.getDenseI64ArrayAttr({}), b.getBoolAttr(false));
  if (!inside || !scalar)
    return failure();
  return node.setResults(node.create<graph::WhereOp>(inside, padded, scalar));
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth: reshape, transpose, reshape
//===----------------------------------------------------------------------===//

static LogicalResult importDepthToSpace(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  int64_t bs = node.getInt("blocksize", 0);
  if (type.getRank() != 4 || !type.hasStaticShape() || bs <= 0 ||
      type.getDimSize(1) % (bs * bs) != 0)
    return node.emitError() << "needs a static NCHW input whose channels "
                               "divide by blocksize^2, got "
                            << type << " and blocksize " << bs;
  int64_t n = type.getDimSize(0), c = type.getDimSize(1),
          h = type.getDimSize(2), w = type.getDimSize(3);
  bool crd = node.getString("mode", "DCR") == "CRD";
  Value x = crd ? reshapeTo(node, input, {n, c / (bs * bs), bs, bs, h, w})
                : reshapeTo(node, input, {n, bs, bs, c / (bs * bs), h, w});
  if (!x)
    return failure();
  x = crd ? transpose(node, x, {0, 1, 4, 2, 5, 3})
          : transpose(node, x, {0, 3, 4, 1, 5, 2});
  if (!x)
    return failure();
  return node.setResults(
      reshapeTo(node, x, {n, c / (bs * bs), h * bs, w * bs}));
}

static LogicalResult importSpaceToDepth(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  int64_t bs = node.getInt("blocksize", 0);
  if (type.getRank() != 4 || !type.hasStaticShape() || bs <= 0 ||
      type.getDimSize(2) % bs != 0 || type.getDimSize(3) % bs != 0)
    return node.emitError() << "needs a static NCHW input whose height and "
                               "width divide by blocksize, got "
                            << type << " and blocksize " << bs;
  int64_t n = type.getDimSize(0), c = type.getDimSize(1),
          h = type.getDimSize(2), w = type.getDimSize(3);
  // DCR (the default) puts the block offsets before the channels, CRD after.
  bool crd = node.getString("mode", "DCR") == "CRD";
  Value x = reshapeTo(node, input, {n, c, h / bs, bs, w / bs, bs});
  if (!x)
    return failure();
  x = crd ? transpose(node, x, {0, 1, 3, 5, 2, 4})
          : transpose(node, x, {0, 3, 5, 1, 2, 4});
  if (!x)
    return failure();
  return node.setResults(reshapeTo(node, x, {n, c * bs * bs, h / bs, w / bs}));
}

//===----------------------------------------------------------------------===//
// Trilu, OneHot
//===----------------------------------------------------------------------===//

static LogicalResult importTrilu(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  // k: a constant, or a one-element input read at run time.
  int64_t k = 0;
  Value dynamicK;
  if (Value kInput = node.getInput(1)) {
    if (getType(kInput).getNumElements() != 1 ||
        !getType(kInput).getElementType().isInteger(64))
      return node.emitError()
             << "k must have one int64 element, not " << getType(kInput);
    if (node.getConstantInput(1)) {
      auto values = getConstantInts(node, 1, "the k input");
      if (!values)
        return failure();
      k = values->front();
    } else {
      dynamicK = kInput;
      if (getType(kInput).getRank() != 0)
        dynamicK = node.create<graph::ReshapeOp>(kInput, SmallVector<int64_t>{},
                                                 /*allow_zero=*/false);
      if (!dynamicK)
        return failure();
    }
  }
  if (getType(input).getRank() < 2)
    return node.emitError() << "the input must have rank >= 2";
  OpBuilder &b = node.getBuilder();
  return node.setResults(
      graph::TriluOp::create(b, node.getLoc(), input.getType(), input, dynamicK,
                             b.getBoolAttr(node.getInt("upper", 1) != 0),
                             b.getI64IntegerAttr(k))
          .getResult());
}

static LogicalResult importOneHot(NodeImporter &node) {
  Value indices = node.getInput(0), values = node.getInput(2);
  if (!indices || !values || !node.getInput(1))
    return node.emitError() << "needs indices, depth and values";
  if (isa<FloatType>(getType(indices).getElementType())) {
    // ONNX: non-integer indices are cast to int64 first.
    indices = graph::CastOp::create(
        node.getBuilder(), node.getLoc(),
        getType(indices).clone(node.getBuilder().getI64Type()), indices);
  }
  auto axis = normalizeAxis(node, node.getInt("axis", -1),
                            getType(indices).getRank() + 1);
  if (!axis)
    return failure();
  if (isRunTimeShapeOperand(node, 1))
    return importOneHotAtRunTime(node, indices, values, *axis);
  auto depth = getConstantDoubles(node, 1, "the depth input");
  if (!depth)
    return failure();
  if (depth->size() != 1 || depth->front() < 1)
    return node.emitError() << "depth must be one positive value";
  Builder &b = node.getBuilder();
  return node.setResults(node.create<graph::OneHotOp>(
      indices, values,
      b.getI64IntegerAttr(static_cast<int64_t>(depth->front())),
      b.getI64IntegerAttr(*axis)));
}

//===----------------------------------------------------------------------===//
// Resize, Upsample
//===----------------------------------------------------------------------===//

/// Builds graph.resize from scales or sizes (one of them non-empty).
static LogicalResult
buildResize(NodeImporter &node, Value input, SmallVector<double> scales,
            SmallVector<int64_t> sizes, StringRef mode, StringRef transform,
            StringRef nearestMode, double cubicCoeffA = -0.75,
            bool excludeOutside = false, ArrayRef<double> roi = {},
            double extrapolationValue = 0.0, bool antialias = false) {
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  if (!type.hasStaticShape())
    return node.emitError() << "needs a static input shape, got " << type;
  if (mode != "nearest" && mode != "linear" && mode != "bilinear" &&
      mode != "cubic")
    return node.emitError() << "mode '" << mode << "' is not supported";
  if (!sizes.empty() && !scales.empty()) {
    // Both given (keep_aspect_ratio_policy): taken as they are.
    if (static_cast<int64_t>(sizes.size()) != rank ||
        static_cast<int64_t>(scales.size()) != rank)
      return node.emitError() << "expected " << rank << " sizes and scales";
  } else if (!sizes.empty()) {
    if (static_cast<int64_t>(sizes.size()) != rank)
      return node.emitError() << "expected " << rank << " sizes";
    scales.clear();
    for (auto [size, in] : llvm::zip(sizes, type.getShape()))
      scales.push_back(in == 0 ? 1.0 : static_cast<double>(size) / in);
  } else {
    if (static_cast<int64_t>(scales.size()) != rank)
      return node.emitError()
             << "expected " << rank << " scales, got " << scales.size();
    for (auto [scale, in] : llvm::zip(scales, type.getShape())) {
      std::optional<int64_t> size = sizeOf(std::floor(in * scale));
      if (!size || scale <= 0)
        return node.emitError() << "scale " << scale
                                << " is not a positive number that makes a "
                                   "dimension of a tensor";
      sizes.push_back(*size);
    }
  }
  Builder &b = node.getBuilder();
  return node.setResults(node.create<graph::ResizeOp>(
      input, b.getDenseI64ArrayAttr(sizes), b.getDenseF64ArrayAttr(scales),
      b.getStringAttr(mode == "bilinear" ? "linear" : mode),
      b.getStringAttr(transform), b.getStringAttr(nearestMode),
      b.getF64FloatAttr(cubicCoeffA), b.getBoolAttr(excludeOutside),
      roi.empty() ? DenseF64ArrayAttr() : b.getDenseF64ArrayAttr(roi),
      b.getF64FloatAttr(extrapolationValue),
      b.getBoolAttr(antialias && mode != "nearest")));
}

/// Resize and Upsample before opset 11: scales only, asymmetric
/// coordinates, and nearest rounding down when enlarging (up when
/// shrinking), as onnxruntime computes them.
static LogicalResult importResizeScalesOnly(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  SmallVector<double> scales;
  if (node.getOpType() == "Upsample" && node.getOpset() < 9) {
    for (float s : node.getFloats("scales"))
      scales.push_back(s);
  } else if (isRunTimeShapeOperand(node, 1)) {
    RunTimeResize resize;
    resize.operand = 1;
    resize.axes =
        llvm::to_vector(llvm::seq<int64_t>(0, getType(input).getRank()));
    resize.mode = node.getString("mode", "nearest");
    if (resize.mode == "bilinear")
      resize.mode = "linear";
    resize.transform = "asymmetric";
    resize.nearestByShrink = true;
    return importResizeAtRunTime(node, input, resize);
  } else {
    auto values = getConstantDoubles(node, 1, "the scales input");
    if (!values)
      return failure();
    scales = *values;
  }
  bool shrinks = llvm::any_of(scales, [](double s) { return s < 1.0; });
  return buildResize(node, input, scales, {}, node.getString("mode", "nearest"),
                     "asymmetric", shrinks ? "ceil" : "floor");
}

/// Whether a Resize's scales, sizes or roi are read at run time; if so,
/// fills `resize` from the node.
static bool runTimeResize(NodeImporter &node, RunTimeResize &resize) {
  std::string transform =
      node.getString("coordinate_transformation_mode", "half_pixel");
  bool bySizes = node.getInput(3) != nullptr;
  if (!isRunTimeShapeOperand(node, bySizes ? 3 : 2) &&
      !(transform == "tf_crop_and_resize" && isRunTimeShapeOperand(node, 1)))
    return false;
  resize.operand = bySizes ? 3 : 2;
  resize.bySizes = bySizes;
  int64_t rank = getType(node.getInput(0)).getRank();
  for (int64_t axis : node.getInts("axes"))
    resize.axes.push_back(axis < 0 ? axis + rank : axis);
  if (resize.axes.empty())
    resize.axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  resize.mode = node.getString("mode", "nearest");
  if (resize.mode == "bilinear")
    resize.mode = "linear";
  resize.transform = transform;
  resize.nearestMode = node.getString("nearest_mode", "round_prefer_floor");
  resize.policy = node.getString("keep_aspect_ratio_policy", "stretch");
  resize.cubicCoeffA = node.getFloat("cubic_coeff_a", -0.75);
  resize.extrapolationValue = node.getFloat("extrapolation_value", 0.0f);
  resize.excludeOutside = node.getInt("exclude_outside", 0) != 0;
  resize.antialias = node.getInt("antialias", 0) != 0;
  return true;
}

static LogicalResult importResize(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  std::string policy = node.getString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return node.emitError()
           << "keep_aspect_ratio_policy '" << policy << "' is not supported";
  if (RunTimeResize resize; runTimeResize(node, resize))
    return importResizeAtRunTime(node, input, resize);
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  if (node.getInput(3)) {
    auto values = getConstantInts(node, 3, "the sizes input");
    if (!values)
      return failure();
    sizes = *values;
  } else if (node.getInput(2)) {
    auto values = getConstantDoubles(node, 2, "the scales input");
    if (!values)
      return failure();
    scales = *values;
  }
  if (sizes.empty() && scales.empty())
    return node.emitError() << "needs scales or sizes";
  // `axes` (opset 18) names the dimensions the scales or sizes are for; the
  // others keep their size.
  ArrayRef<int64_t> shape = getType(input).getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  SmallVector<int64_t> axes;
  for (int64_t axis : node.getInts("axes")) {
    if (axis < -rank || axis >= rank)
      return node.emitError()
             << "axis " << axis << " is out of range for rank " << rank;
    axes.push_back(axis < 0 ? axis + rank : axis);
  }
  bool allAxes = axes.empty();
  if (allAxes)
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  size_t given = sizes.empty() ? scales.size() : sizes.size();
  if (given != axes.size())
    return node.emitError()
           << "expected " << axes.size()
           << (sizes.empty() ? " scales" : " sizes") << ", got " << given;
  if (!allAxes) {
    SmallVector<double> fullScales(rank, 1.0);
    SmallVector<int64_t> fullSizes(shape);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      if (!scales.empty())
        fullScales[axis] = scales[i];
      if (!sizes.empty())
        fullSizes[axis] = sizes[i];
    }
    if (!scales.empty())
      scales = fullScales;
    if (!sizes.empty())
      sizes = fullSizes;
  }
  if (!sizes.empty() && policy != "stretch") {
    // One scale for all of `axes`, the smallest (not_larger) or the largest
    // (not_smaller) of size / input; sizes rounded half up, as in ONNX's
    // reference.
    double scale = policy == "not_larger"
                       ? std::numeric_limits<double>::infinity()
                       : -std::numeric_limits<double>::infinity();
    for (int64_t axis : axes) {
      if (shape[axis] == 0)
        return node.emitError() << "keep_aspect_ratio_policy needs non-empty "
                                   "resized dimensions";
      double ratio = static_cast<double>(sizes[axis]) / shape[axis];
      scale = policy == "not_larger" ? std::min(scale, ratio)
                                     : std::max(scale, ratio);
    }
    scales.assign(rank, 1.0);
    for (int64_t axis : axes) {
      std::optional<int64_t> size = sizeOf(scale * shape[axis] + 0.5);
      if (!size)
        return node.emitError() << "sizes make a scale of " << scale;
      scales[axis] = scale;
      sizes[axis] = *size;
    }
  }
  std::string transform =
      node.getString("coordinate_transformation_mode", "half_pixel");
  // tf_crop_and_resize's region of interest: starts then ends, for `axes`;
  // the other dimensions whole.
  SmallVector<double> roi;
  if (transform == "tf_crop_and_resize") {
    auto values = node.getInput(1)
                      ? getConstantDoubles(node, 1, "the roi input")
                      : std::nullopt;
    if (!values)
      return node.emitError() << "tf_crop_and_resize needs a constant roi";
    size_t n = axes.size();
    if (values->size() != 2 * n)
      return node.emitError()
             << "roi must hold " << 2 * n << " values, got " << values->size();
    roi.assign(rank, 0.0);
    roi.append(rank, 1.0);
    for (auto [i, axis] : llvm::enumerate(axes)) {
      roi[axis] = (*values)[i];
      roi[rank + axis] = (*values)[n + i];
    }
  }
  return buildResize(node, input, scales, sizes,
                     node.getString("mode", "nearest"), transform,
                     node.getString("nearest_mode", "round_prefer_floor"),
                     node.getFloat("cubic_coeff_a", -0.75),
                     node.getInt("exclude_outside", 0) != 0, roi,
                     node.getFloat("extrapolation_value", 0.0f),
                     node.getInt("antialias", 0) != 0);
}

//===----------------------------------------------------------------------===//
// EyeLike, HannWindow, HammingWindow, BlackmanWindow: constants
//===----------------------------------------------------------------------===//

/// A constant of `type` (float or integer elements) from doubles.
static Value createConstantFromDoubles(NodeImporter &node,
                                       RankedTensorType type,
                                       ArrayRef<double> values) {
  Type element = type.getElementType();
  if (element.isF32()) {
    SmallVector<float> floats(values.begin(), values.end());
    return createConstant(node, DenseElementsAttr::get(type, ArrayRef(floats)));
  }
  SmallVector<Attribute> attrs;
  attrs.reserve(values.size());
  for (double v : values) {
    if (auto floatType = dyn_cast<FloatType>(element))
      attrs.push_back(FloatAttr::get(floatType, v));
    else if (element.isInteger(1))
      attrs.push_back(BoolAttr::get(node.getContext(), v != 0.0));
    else
      attrs.push_back(IntegerAttr::get(element, static_cast<int64_t>(v)));
  }
  return createConstant(node, DenseElementsAttr::get(type, attrs));
}

/// The element type an `dtype`-like attribute names, or `fallback` when it
/// is absent; null after an error.
static Type attrElementType(NodeImporter &node, StringRef name, Type fallback) {
  if (!node.hasAttr(name))
    return fallback;
  int64_t dtype = node.getInt(name, 0);
  Type element = convertElementType(node.getContext(), dtype);
  if (!element || !(isa<FloatType>(element) || element.isIntOrIndex())) {
    node.emitError() << name << " " << getONNXTypeName(dtype)
                     << " is not supported";
    return {};
  }
  return element;
}

/// EyeLike (opset 9): ones on the k-th diagonal of a 2-D tensor shaped like
/// the input, of `dtype` (else the input's type).
static LogicalResult importEyeLike(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  if (type.getRank() != 2 || !type.hasStaticShape())
    return node.emitError() << "needs a static 2-D input, got " << type;
  int64_t k = node.getInt("k", 0);
  Type element = attrElementType(node, "dtype", type.getElementType());
  if (!element || node.hasFailed())
    return failure();
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  std::vector<double> values(rows * cols, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols)
      values[i * cols + i + k] = 1.0;
  return node.setResults(
      createConstantFromDoubles(node, type.clone(element), values));
}

/// HannWindow, HammingWindow, BlackmanWindow (opset 17): a window of `size`
/// (a constant) as a constant, a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
/// with N = size (periodic) or size - 1, of `output_datatype` (float).
template <int Kind> static LogicalResult importWindow(NodeImporter &node) {
  bool periodic = node.getInt("periodic", 1) != 0;
  Type element =
      attrElementType(node, "output_datatype", node.getBuilder().getF32Type());
  if (!element || node.hasFailed())
    return failure();
  // Kind 0: Hann, 1: Hamming, 2: Blackman.
  const double a0[] = {0.5, 25.0 / 46.0, 0.42};
  const double a2[] = {0.0, 0.0, 0.08};
  if (isRunTimeShapeOperand(node, 0))
    return importWindowAtRunTime(
        node, {a0[Kind], -(1.0 - a0[Kind] - a2[Kind]), a2[Kind]}, periodic,
        element);
  auto size = getConstantInts(node, 0, "the size input");
  if (!size)
    return failure();
  if (size->size() != 1 || size->front() < 0)
    return node.emitError() << "size must be one non-negative integer";
  int64_t n = size->front();
  double denominator = static_cast<double>(periodic ? n : n - 1);
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) {
    double t = 2.0 * M_PI * static_cast<double>(i) / denominator;
    values[i] = a0[Kind] - (1.0 - a0[Kind] - a2[Kind]) * std::cos(t) +
                a2[Kind] * std::cos(2.0 * t);
  }
  return node.setResults(createConstantFromDoubles(
      node, RankedTensorType::get({n}, element), values));
}

/// MelWeightMatrix (opset 17): the [dft_length / 2 + 1, num_mel_bins]
/// matrix of triangular filters that maps a spectrogram onto the mel scale,
/// computed from its five inputs, which must be constants, as ONNX's
/// reference computes it (edges num_mel_bins + 2 equal mel steps apart,
/// rounded down to spectrogram bins).
static LogicalResult importMelWeightMatrix(NodeImporter &node) {
  auto bins = getConstantInts(node, 0, "num_mel_bins");
  auto dft = bins ? getConstantInts(node, 1, "dft_length") : std::nullopt;
  auto rate = dft ? getConstantInts(node, 2, "sample_rate") : std::nullopt;
  auto low =
      rate ? getConstantDoubles(node, 3, "lower_edge_hertz") : std::nullopt;
  auto high =
      low ? getConstantDoubles(node, 4, "upper_edge_hertz") : std::nullopt;
  if (!high)
    return failure();
  if (bins->size() != 1 || dft->size() != 1 || rate->size() != 1 ||
      low->size() != 1 || high->size() != 1)
    return node.emitError() << "needs five scalar inputs";
  int64_t melBins = bins->front(), length = dft->front(),
          sampleRate = rate->front();
  double lowHz = low->front(), highHz = high->front();
  if (melBins <= 0 || melBins > (1 << 16) || length <= 0 ||
      length > (1 << 24) || sampleRate <= 0)
    return node.emitError()
           << "num_mel_bins (" << melBins << "), dft_length (" << length
           << ") and sample_rate (" << sampleRate
           << ") must be positive (and at most 65536 bins, 2^24 samples)";
  if (!(lowHz >= 0.0) || !(highHz > lowHz) || !std::isfinite(highHz))
    return node.emitError() << "the edges must satisfy 0 <= lower (" << lowHz
                            << ") < upper (" << highHz << ")";
  Type element =
      attrElementType(node, "output_datatype", node.getBuilder().getF32Type());
  if (!element || node.hasFailed())
    return failure();
  int64_t spectrumBins = length / 2 + 1;
  auto toMel = [](double hz) {
    return 2595.0 * std::log1p(hz / 700.0) / std::log(10.0);
  };
  double lowMel = toMel(lowHz), highMel = toMel(highHz);
  double step = (highMel - lowMel) / static_cast<double>(melBins + 2);
  std::vector<int64_t> edges(melBins + 2);
  for (int64_t i = 0; i < melBins + 2; ++i) {
    double mel = static_cast<double>(i) * step + lowMel;
    double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
    edges[i] =
        static_cast<int64_t>(std::floor(static_cast<double>(length + 1) * hz /
                                        static_cast<double>(sampleRate)));
  }
  if (edges.back() >= spectrumBins)
    return node.emitError()
           << "upper_edge_hertz " << highHz << " lies beyond the spectrum's "
           << spectrumBins << " bins at sample_rate " << sampleRate;
  std::vector<double> values(spectrumBins * melBins, 0.0);
  for (int64_t i = 0; i < melBins; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) {
      values[center * melBins + i] = 1.0;
    } else {
      for (int64_t j = left; j <= center; ++j)
        values[j * melBins + i] = double(j - left) / double(center - left);
    }
    for (int64_t j = center; j < right; ++j)
      values[j * melBins + i] = double(right - j) / double(right - center);
  }
  return node.setResults(createConstantFromDoubles(
      node, RankedTensorType::get({spectrumBins, melBins}, element), values));
}

//===----------------------------------------------------------------------===//
// CenterCropPad, ReverseSequence
//===----------------------------------------------------------------------===//

/// CenterCropPad (opset 18): each listed axis cropped or zero-padded to the
/// given size, centred (the odd element at the end).
static LogicalResult importCenterCropPad(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  if (!type.hasStaticShape())
    return node.emitError() << "needs a static input shape, got " << type;
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes = node.getInts("axes");
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (node.hasFailed())
    return failure();
  if (isRunTimeShapeOperand(node, 1)) {
    SmallVector<int64_t> dims;
    for (int64_t axis : axes) {
      auto d = normalizeAxis(node, axis, rank);
      if (!d)
        return failure();
      if (llvm::is_contained(dims, *d))
        return node.emitError() << "axis " << axis << " is repeated";
      dims.push_back(*d);
    }
    return importCenterCropPadAtRunTime(node, input, dims);
  }
  auto sizes = getConstantInts(node, 1, "the shape input");
  if (!sizes)
    return failure();
  if (axes.size() != sizes->size())
    return node.emitError() << "the shape input has " << sizes->size()
                            << " sizes for " << axes.size() << " axes";
  SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1),
      pads(2 * rank, 0);
  for (auto [axis, size] : llvm::zip(axes, *sizes)) {
    auto d = normalizeAxis(node, axis, rank);
    if (!d)
      return failure();
    if (size < 0)
      return node.emitError() << "sizes must not be negative, got " << size;
    int64_t dim = type.getDimSize(*d);
    if (size < dim) {
      starts[*d] = (dim - size) / 2;
      ends[*d] = starts[*d] + size;
    } else {
      pads[*d] = (size - dim) / 2;
      pads[*d + rank] = size - dim - pads[*d];
    }
  }
  Builder &b = node.getBuilder();
  Value cropped = node.create<graph::SliceOp>(input, starts, ends, steps);
  if (!cropped)
    return failure();
  return node.setResults(node.create<graph::PadOp>(
      cropped, b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"),
      b.getF64FloatAttr(0.0)));
}

/// ReverseSequence (opset 10): along time_axis, the first sequence_lens[b]
/// elements of each batch entry b reversed; a gather by the index
/// t < len ? len - 1 - t : t.
static LogicalResult importReverseSequence(NodeImporter &node) {
  Value input = node.getInput(0), lens = node.getInput(1);
  if (!input || !lens)
    return node.emitError() << "needs inputs input and sequence_lens";
  RankedTensorType type = getType(input);
  int64_t timeAxis = node.getInt("time_axis", 0);
  int64_t batchAxis = node.getInt("batch_axis", 1);
  if (node.hasFailed())
    return failure();
  if (type.getRank() < 2 || !type.hasStaticShape())
    return node.emitError()
           << "needs a static input of rank >= 2, got " << type;
  if (!((timeAxis == 0 && batchAxis == 1) || (timeAxis == 1 && batchAxis == 0)))
    return node.emitError() << "time_axis and batch_axis must be 0 and 1 in "
                               "some order, got "
                            << timeAxis << " and " << batchAxis;
  int64_t steps = type.getDimSize(timeAxis), batch = type.getDimSize(batchAxis);
  RankedTensorType lensType = getType(lens);
  if (lensType.getRank() != 1 || lensType.getDimSize(0) != batch ||
      !lensType.getElementType().isInteger(64))
    return node.emitError() << "sequence_lens must be " << batch
                            << " int64 values, got " << lensType;
  Type i64 = node.getBuilder().getI64Type();
  // len, clamped to [0, steps], along the batch axis; t along the time axis.
  SmallVector<int64_t> lensShape = {1, 1}, timeShape = {1, 1};
  lensShape[batchAxis] = batch;
  timeShape[timeAxis] = steps;
  std::vector<double> times(steps);
  for (int64_t t = 0; t < steps; ++t)
    times[t] = static_cast<double>(t);
  Value t = createConstantFromDoubles(
      node, RankedTensorType::get(timeShape, i64), times);
  Value zero = createI64Constant(node, {}, {0});
  Value limit = createI64Constant(node, {}, {steps});
  Value one = createI64Constant(node, {}, {1});
  Value len = node.create<graph::ReshapeOp>(
      lens, node.getBuilder().getDenseI64ArrayAttr(lensShape),
      node.getBuilder().getBoolAttr(false));
  if (!len)
    return failure();
  len = node.create<graph::MaxOp>(ValueRange{len, zero});
  len = len ? node.create<graph::MinOp>(ValueRange{len, limit}) : Value();
  Value inside = len ? node.create<graph::LessOp>(t, len) : Value();
  Value last = len ? node.create<graph::SubOp>(len, one) : Value();
  Value reversed = last ? node.create<graph::SubOp>(last, t) : Value();
  Value index = inside && reversed
                    ? node.create<graph::WhereOp>(inside, reversed, t)
                    : Value();
  if (!index)
    return failure();
  // [steps, batch] (or [batch, steps]) -> the input's shape.
  SmallVector<int64_t> indexShape(type.getRank(), 1);
  indexShape[0] = type.getDimSize(0);
  indexShape[1] = type.getDimSize(1);
  index = node.create<graph::ReshapeOp>(
      index, node.getBuilder().getDenseI64ArrayAttr(indexShape),
      node.getBuilder().getBoolAttr(false));
  index =
      index ? node.create<graph::ExpandOp>(index, type.getShape()) : Value();
  if (!index)
    return failure();
  return node.setResults(
      node.create<graph::GatherElementsOp>(input, index, uint64_t(timeAxis)));
}

//===----------------------------------------------------------------------===//
// GridSample: gathers at computed indices
//===----------------------------------------------------------------------===//

using kiln::import::NullSafe;

/// GridSample (opset 16; opset 20 adds N-D and renames the modes): Y[n, c,
/// o...] samples X[n, c] at the point grid[n, o...] gives (x, y, z...,
/// normalised to [-1, 1], x along the last axis), by nearest, (bi)linear or
/// bicubic interpolation; points and neighbours outside X read zeros, the
/// border, or X reflected. As ONNX's reference computes it: each neighbour
/// is a GatherElements at a computed flat index, weighted and summed.
static LogicalResult importGridSample(NodeImporter &node) {
  Value input = node.getInput(0), grid = node.getInput(1);
  if (!input || !grid)
    return node.emitError() << "needs inputs X and grid";
  std::string mode = node.getString("mode", "linear");
  std::string padding = node.getString("padding_mode", "zeros");
  bool alignCorners = node.getInt("align_corners", 0) != 0;
  if (node.hasFailed())
    return failure();
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return node.emitError() << "mode '" << mode << "' is not supported";
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return node.emitError() << "padding_mode '" << padding
                            << "' is not zeros, border or reflection";
  RankedTensorType xType = getType(input), gType = getType(grid);
  int64_t rank = xType.getRank(), spatial = rank - 2;
  if (rank < 3 || !xType.hasStaticShape() || !gType.hasStaticShape() ||
      !isa<FloatType>(xType.getElementType()) ||
      !gType.getElementType().isF32())
    return node.emitError() << "needs a static float X [N, C, D...] and a "
                               "static f32 grid, got "
                            << xType << " and " << gType;
  if (gType.getRank() != rank || gType.getShape().back() != spatial ||
      gType.getDimSize(0) != xType.getDimSize(0))
    return node.emitError() << "grid must be [N, D_out..., " << spatial
                            << "] for X " << xType << ", got " << gType;
  if (mode == "cubic" && spatial != 2)
    return node.emitError() << "cubic mode samples 2-D inputs only";

  NullSafe b{node};
  Type f32 = gType.getElementType();
  Type i64 = node.getBuilder().getI64Type();
  ArrayRef<int64_t> dims = xType.getShape().drop_front(2);
  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
  SmallVector<int64_t> pointShape(gType.getShape().drop_back());
  int64_t points = 1;
  for (int64_t d : ArrayRef<int64_t>(pointShape).drop_front())
    points *= d;

  // Per spatial dimension: the continuous coordinate, moved inside the
  // bounds by the padding mode, and the bounds used for reflection.
  auto reflect = [&](Value v, double lo, double hi) {
    Value range = b.scalar(hi - lo, f32);
    Value low = b.scalar(lo, f32), high = b.scalar(hi, f32);
    auto fold = [&](Value distance, Value from, Value to) {
      // n = floor(distance / range), r = distance - n * range; even n:
      // from + r (towards `to`), odd n: to - r.
      Value n = b.floor(b.div(distance, range));
      Value r = b.sub(distance, b.mul(n, range));
      Value half = b.floor(b.div(n, b.scalar(2.0, f32)));
      Value odd = b.greater(b.sub(n, b.mul(half, b.scalar(2.0, f32))),
                            b.scalar(0.5, f32));
      Value towards = b.where(b.less(from, to), b.add(from, r), b.sub(from, r));
      Value back = b.where(b.less(from, to), b.sub(to, r), b.add(to, r));
      return b.where(odd, back, towards);
    };
    Value below = fold(b.sub(low, v), low, high);
    Value above = fold(b.sub(v, high), high, low);
    return b.where(b.less(v, low), below,
                   b.where(b.greater(v, high), above, v));
  };
  SmallVector<Value> coords;
  SmallVector<std::pair<double, double>> bounds;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t size = dims[i];
    // grid's last axis lists x (the last spatial axis) first.
    int64_t component = spatial - 1 - i;
    SmallVector<int64_t> starts(rank, 0), ends(gType.getShape()),
        steps(rank, 1);
    starts[rank - 1] = component;
    ends[rank - 1] = component + 1;
    Value g = node.create<graph::SliceOp>(grid, starts, ends, steps);
    g = g ? reshapeTo(node, g, pointShape) : Value();
    Value x = alignCorners ? b.mul(b.add(g, b.scalar(1.0, f32)),
                                   b.scalar((size - 1) / 2.0, f32))
                           : b.div(b.sub(b.mul(b.add(g, b.scalar(1.0, f32)),
                                               b.scalar(double(size), f32)),
                                         b.scalar(1.0, f32)),
                                   b.scalar(2.0, f32));
    if (mode == "nearest")
      x = b.unary<graph::RoundOp>(x);
    double lo = alignCorners ? 0.0 : -0.5;
    double hi = alignCorners ? size - 1.0 : size - 0.5;
    bounds.push_back({lo, hi});
    Value outside = b.logicalOr(b.less(x, b.scalar(lo, f32)),
                                b.greater(x, b.scalar(hi, f32)));
    if (padding == "border")
      x = b.where(
          outside,
          b.min(b.max(x, b.scalar(0.0, f32)), b.scalar(size - 1.0, f32)), x);
    else if (padding == "reflection")
      x = reflect(x, lo, hi);
    coords.push_back(x);
  }

  // The neighbours along each dimension: (index, weight) pairs.
  auto cubicWeights = [&](Value t) {
    const double a = -0.75;
    auto poly = [&](Value u, double c3, double c2, double c1, double c0) {
      // ((c3 u + c2) u + c1) u + c0
      Value v = b.add(b.mul(u, b.scalar(c3, f32)), b.scalar(c2, f32));
      v = b.add(b.mul(v, u), b.scalar(c1, f32));
      return b.add(b.mul(v, u), b.scalar(c0, f32));
    };
    Value one = b.scalar(1.0, f32), two = b.scalar(2.0, f32);
    // Keys' kernel: |u| <= 1: (a+2)|u|^3 - (a+3)|u|^2 + 1;
    // 1 < |u| < 2: a|u|^3 - 5a|u|^2 + 8a|u| - 4a.
    return SmallVector<Value>{poly(b.add(t, one), a, -5 * a, 8 * a, -4 * a),
                              poly(t, a + 2, -(a + 3), 0, 1),
                              poly(b.sub(one, t), a + 2, -(a + 3), 0, 1),
                              poly(b.sub(two, t), a, -5 * a, 8 * a, -4 * a)};
  };
  SmallVector<SmallVector<std::pair<Value, Value>>> neighbours(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    Value x = coords[i];
    if (mode == "nearest") {
      neighbours[i].push_back({x, Value()});
      continue;
    }
    Value base = b.floor(x);
    Value t = b.sub(x, base);
    if (mode == "linear") {
      neighbours[i].push_back({base, b.sub(b.scalar(1.0, f32), t)});
      neighbours[i].push_back({b.add(base, b.scalar(1.0, f32)), t});
      continue;
    }
    SmallVector<Value> weights = cubicWeights(t);
    for (int k = 0; k < 4; ++k)
      neighbours[i].push_back(
          {b.add(base, b.scalar(k - 1.0, f32)), weights[k]});
  }

  // Each combination of neighbours: a gather from X as [N, C, prod(D)],
  // weighted (and masked, for zeros padding), summed.
  int64_t flatSize = 1;
  for (int64_t d : dims)
    flatSize *= d;
  Value flatX = reshapeTo(node, input, {batch, channels, flatSize});
  Type element = xType.getElementType();
  Value sum;
  SmallVector<size_t> pick(spatial, 0);
  while (true) {
    Value flatIndex, weight, outside;
    int64_t stride = flatSize;
    for (int64_t i = 0; i < spatial; ++i) {
      auto [index, w] = neighbours[i][pick[i]];
      int64_t size = dims[i];
      stride /= size;
      if (padding == "zeros") {
        Value out = b.logicalOr(b.less(index, b.scalar(0.0, f32)),
                                b.greater(index, b.scalar(size - 1.0, f32)));
        outside = outside ? b.logicalOr(outside, out) : out;
        index =
            b.min(b.max(index, b.scalar(0.0, f32)), b.scalar(size - 1.0, f32));
      } else if (padding == "border") {
        index =
            b.min(b.max(index, b.scalar(0.0, f32)), b.scalar(size - 1.0, f32));
      } else {
        index = reflect(index, bounds[i].first, bounds[i].second);
      }
      Value integer = b.cast(index, i64);
      Value term = b.mul(integer, createI64Constant(node, {}, {stride}));
      flatIndex = flatIndex ? b.add(flatIndex, term) : term;
      if (w)
        weight = weight ? b.mul(weight, w) : w;
    }
    if (outside) // a neighbour outside X reads 0
      weight = b.where(outside, b.scalar(0.0, f32),
                       weight ? weight : b.scalar(1.0, f32));
    // [N, points] -> [N, 1, points] -> [N, C, points]
    Value index = reshapeTo(node, flatIndex, {batch, 1, points});
    index = index ? node.create<graph::ExpandOp>(
                        index, ArrayRef<int64_t>{batch, channels, points})
                  : Value();
    Value gathered =
        index && flatX
            ? node.create<graph::GatherElementsOp>(flatX, index, uint64_t(2))
            : Value();
    if (weight) {
      Value w = reshapeTo(node, b.cast(weight, element), {batch, 1, points});
      gathered = b.mul(gathered, w);
    }
    sum = sum ? b.add(sum, gathered) : gathered;
    if (!sum)
      return failure();
    // The next combination (odometer order).
    int64_t i = spatial - 1;
    while (i >= 0 && ++pick[i] == neighbours[i].size())
      pick[i--] = 0;
    if (i < 0)
      break;
  }
  SmallVector<int64_t> outShape = {batch, channels};
  outShape.append(pointShape.begin() + 1, pointShape.end());
  return node.setResults(reshapeTo(node, sum, outShape));
}

/// X as [N, C, H * W] sampled bilinearly at the points (y, x) ([N, P] f32,
/// in pixels), a point's neighbours outside X reading 0: [N, C, P].
static Value sampleBilinear(NodeImporter &node, Value flatX, Value y, Value x,
                            int64_t height, int64_t width) {
  NullSafe b{node};
  Type f32 = node.getBuilder().getF32Type();
  Type i64 = node.getBuilder().getI64Type();
  RankedTensorType type = getType(flatX);
  int64_t batch = type.getDimSize(0), channels = type.getDimSize(1);
  int64_t points = getType(y).getDimSize(1);
  Value y0 = b.floor(y), x0 = b.floor(x);
  Value ty = b.sub(y, y0), tx = b.sub(x, x0);
  Value one = b.scalar(1.0, f32), zero = b.scalar(0.0, f32);
  Value sum;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      Value yi = dy ? b.add(y0, one) : y0, xi = dx ? b.add(x0, one) : x0;
      Value weight = b.mul(dy ? ty : b.sub(one, ty), dx ? tx : b.sub(one, tx));
      Value outside =
          b.logicalOr(b.logicalOr(b.less(yi, zero),
                                  b.greater(yi, b.scalar(height - 1.0, f32))),
                      b.logicalOr(b.less(xi, zero),
                                  b.greater(xi, b.scalar(width - 1.0, f32))));
      weight = b.where(outside, zero, weight);
      Value cy = b.min(b.max(yi, zero), b.scalar(height - 1.0, f32));
      Value cx = b.min(b.max(xi, zero), b.scalar(width - 1.0, f32));
      Value flat =
          b.add(b.mul(b.cast(cy, i64), createI64Constant(node, {}, {width})),
                b.cast(cx, i64));
      Value index = flat ? reshapeTo(node, flat, {batch, 1, points}) : Value();
      index = index ? node.create<graph::ExpandOp>(
                          index, ArrayRef<int64_t>{batch, channels, points})
                    : Value();
      Value gathered =
          index
              ? node.create<graph::GatherElementsOp>(flatX, index, uint64_t(2))
              : Value();
      Value w = weight ? reshapeTo(node, b.cast(weight, type.getElementType()),
                                   {batch, 1, points})
                       : Value();
      Value term = b.mul(gathered, w);
      sum = sum ? b.add(sum, term) : term;
      if (!sum)
        return {};
    }
  return sum;
}

/// DeformConv (opset 19), 2-D: each kernel tap reads X at its position
/// moved by the offset (bilinear, zeros outside), scaled by the mask; the
/// taps' samples of each output position form the columns of a grouped
/// matrix product with the weights, as ONNX's reference computes it.
static LogicalResult importDeformConv(NodeImporter &node) {
  Value input = node.getInput(0), weight = node.getInput(1),
        offset = node.getInput(2), bias = node.getInput(3),
        mask = node.getInput(4);
  if (!input || !weight || !offset)
    return node.emitError() << "needs X, W and offset";
  RankedTensorType xType = getType(input), wType = getType(weight),
                   oType = getType(offset);
  if (xType.getRank() != 4 || wType.getRank() != 4 || oType.getRank() != 4 ||
      !xType.hasStaticShape() || !wType.hasStaticShape() ||
      !oType.hasStaticShape() || !xType.getElementType().isF32())
    return node.emitError() << "Kiln supports 2-D DeformConv on static f32 "
                               "tensors, got "
                            << xType << ", " << wType << ", " << oType;
  int64_t group = node.getInt("group", 1);
  int64_t offsetGroups = node.getInt("offset_group", 1);
  SmallVector<int64_t> kernel =
      node.getInts("kernel_shape", wType.getShape().drop_front(2));
  SmallVector<int64_t> strides = node.getInts("strides", {1, 1});
  SmallVector<int64_t> dilations = node.getInts("dilations", {1, 1});
  SmallVector<int64_t> pads = node.getInts("pads", {0, 0, 0, 0});
  if (node.hasFailed())
    return failure();
  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
  int64_t height = xType.getDimSize(2), width = xType.getDimSize(3);
  int64_t filters = wType.getDimSize(0);
  int64_t kh = kernel[0], kw = kernel[1], taps = kh * kw;
  int64_t outH = oType.getDimSize(2), outW = oType.getDimSize(3);
  int64_t points = outH * outW;
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 ||
      pads.size() != 4 || group <= 0 || offsetGroups <= 0 ||
      channels != wType.getDimSize(1) * group || filters % group != 0 ||
      channels % offsetGroups != 0 ||
      oType.getDimSize(1) != offsetGroups * taps * 2 ||
      oType.getDimSize(0) != batch ||
      outH != (height + pads[0] + pads[2] - ((kh - 1) * dilations[0] + 1)) /
                      strides[0] +
                  1 ||
      outW != (width + pads[1] + pads[3] - ((kw - 1) * dilations[1] + 1)) /
                      strides[1] +
                  1)
    return node.emitError()
           << "the shapes of X " << xType << ", W " << wType << " and offset "
           << oType << " do not fit the attributes";
  if (mask && getType(mask).getShape() !=
                  ArrayRef<int64_t>{batch, offsetGroups * taps, outH, outW})
    return node.emitError() << "the mask must be [N, offset_group * kH * kW, "
                               "oH, oW], got "
                            << mask.getType();
  NullSafe b{node};
  Type f32 = xType.getElementType();
  // The output positions' top-left corners, [1, oH * oW] each.
  std::vector<double> rows(points), cols(points);
  for (int64_t i = 0; i < outH; ++i)
    for (int64_t j = 0; j < outW; ++j) {
      rows[i * outW + j] = double(i * strides[0] - pads[0]);
      cols[i * outW + j] = double(j * strides[1] - pads[1]);
    }
  auto pointsType = RankedTensorType::get({1, points}, f32);
  Value baseY = createConstantFromDoubles(node, pointsType, rows);
  Value baseX = createConstantFromDoubles(node, pointsType, cols);
  Value flatOffset =
      reshapeTo(node, offset, {batch, offsetGroups * taps * 2, points});
  Value flatMask =
      mask ? reshapeTo(node, mask, {batch, offsetGroups * taps, points})
           : Value();
  int64_t groupChannels = channels / offsetGroups;
  // Row `at` of a [N, R, P] tensor, as [N, P].
  auto row = [&](Value v, int64_t at) -> Value {
    Value slice = node.create<graph::SliceOp>(
        v, ArrayRef<int64_t>{0, at, 0},
        ArrayRef<int64_t>{batch, at + 1, points}, ArrayRef<int64_t>{1, 1, 1});
    return slice ? reshapeTo(node, slice, {batch, points}) : Value();
  };
  // Per tap: the samples of every channel, [N, C, P] (the offset groups'
  // channels concatenated).
  SmallVector<Value> perTap(taps);
  for (int64_t o = 0; o < offsetGroups; ++o) {
    Value xs = node.create<graph::SliceOp>(
        input, ArrayRef<int64_t>{0, o * groupChannels, 0, 0},
        ArrayRef<int64_t>{batch, (o + 1) * groupChannels, height, width},
        ArrayRef<int64_t>{1, 1, 1, 1});
    Value flatX =
        xs ? reshapeTo(node, xs, {batch, groupChannels, height * width})
           : Value();
    for (int64_t a = 0; a < kh; ++a)
      for (int64_t c = 0; c < kw; ++c) {
        int64_t k = a * kw + c;
        Value dy = row(flatOffset, (o * taps + k) * 2);
        Value dx = row(flatOffset, (o * taps + k) * 2 + 1);
        Value y =
            b.add(b.add(baseY, b.scalar(double(a * dilations[0]), f32)), dy);
        Value x =
            b.add(b.add(baseX, b.scalar(double(c * dilations[1]), f32)), dx);
        Value sampled = flatX && y && x
                            ? sampleBilinear(node, flatX, y, x, height, width)
                            : Value();
        if (sampled && flatMask) {
          Value m = row(flatMask, o * taps + k);
          m = m ? reshapeTo(node, m, {batch, 1, points}) : Value();
          sampled = b.mul(sampled, m);
        }
        if (!sampled)
          return failure();
        perTap[k] = perTap[k] ? node.create<graph::ConcatOp>(
                                    ValueRange{perTap[k], sampled}, uint64_t(1))
                              : sampled;
      }
  }
  // Columns [N, C, K, P] -> [N, C * K, P]: channel-major, as W's [M, C/g, kH,
  // kW] flattens.
  SmallVector<Value> stacked;
  for (Value tap : perTap) {
    Value v =
        tap ? reshapeTo(node, tap, {batch, channels, 1, points}) : Value();
    if (!v)
      return failure();
    stacked.push_back(v);
  }
  Value columns =
      stacked.size() == 1
          ? stacked.front()
          : node.create<graph::ConcatOp>(ValueRange(stacked), uint64_t(2));
  columns = columns ? reshapeTo(node, columns, {batch, channels * taps, points})
                    : Value();
  int64_t perGroupIn = channels / group * taps, perGroupOut = filters / group;
  Value matrix = reshapeTo(node, weight, {filters, perGroupIn});
  SmallVector<Value> outputs;
  for (int64_t g = 0; g < group && columns && matrix; ++g) {
    Value wg = node.create<graph::SliceOp>(
        matrix, ArrayRef<int64_t>{g * perGroupOut, 0},
        ArrayRef<int64_t>{(g + 1) * perGroupOut, perGroupIn},
        ArrayRef<int64_t>{1, 1});
    Value cg = node.create<graph::SliceOp>(
        columns, ArrayRef<int64_t>{0, g * perGroupIn, 0},
        ArrayRef<int64_t>{batch, (g + 1) * perGroupIn, points},
        ArrayRef<int64_t>{1, 1, 1});
    Value product = wg && cg ? node.create<graph::MatMulOp>(wg, cg) : Value();
    if (!product)
      return failure();
    outputs.push_back(product);
  }
  Value result =
      outputs.size() == 1
          ? outputs.front()
          : node.create<graph::ConcatOp>(ValueRange(outputs), uint64_t(1));
  if (result && bias)
    result = b.add(result, reshapeTo(node, bias, {1, filters, 1}));
  if (!result)
    return failure();
  return node.setResults(reshapeTo(node, result, {batch, filters, outH, outW}));
}

/// Marks the gather or scatter that made `value` as one whose indices count
/// from zero only (kiln.indices_from_zero): a negative one fails the run or
/// the compile, as in onnxruntime, instead of counting from the end.
static Value indicesFromZero(Value value) {
  Operation *op = value ? value.getDefiningOp() : nullptr;
  if (op && isa<graph::GatherOp, graph::ScatterElementsOp>(op))
    op->setAttr(attr::kIndicesFromZero, UnitAttr::get(op->getContext()));
  return value;
}

/// RoiAlign (opset 16): for each region of interest, an output_height x
/// output_width grid of bins, each the average (or maximum) of
/// sampling_ratio^2 bilinear samples of its batch entry of X, with the
/// reference's rules at the border (a sample beyond one pixel outside
/// reads 0, one just outside reads the edge). The regions and batch indices
/// are run-time inputs; sampling_ratio must be given (an adaptive one
/// depends on each region's size).
static LogicalResult importRoiAlign(NodeImporter &node) {
  Value input = node.getInput(0), rois = node.getInput(1),
        batchIndices = node.getInput(2);
  if (!input || !rois || !batchIndices)
    return node.emitError() << "needs X, rois and batch_indices";
  std::string transform =
      node.getString("coordinate_transformation_mode", "half_pixel");
  std::string mode = node.getString("mode", "avg");
  int64_t outH = node.getInt("output_height", 1);
  int64_t outW = node.getInt("output_width", 1);
  int64_t ratio = node.getInt("sampling_ratio", 0);
  float scale = node.getFloat("spatial_scale", 1.0f);
  if (node.hasFailed())
    return failure();
  RankedTensorType xType = getType(input), rType = getType(rois);
  if (xType.getRank() != 4 || !xType.hasStaticShape() ||
      !xType.getElementType().isF32() || rType.getRank() != 2 ||
      !rType.hasStaticShape() || rType.getDimSize(1) != 4 ||
      getType(batchIndices).getShape() !=
          ArrayRef<int64_t>{rType.getDimSize(0)})
    return node.emitError()
           << "needs a static f32 X [N, C, H, W], rois [R, "
              "4] and batch_indices [R], got "
           << xType << ", " << rType << " and " << batchIndices.getType();
  if (mode != "avg" && mode != "max")
    return node.emitError() << "mode '" << mode << "' is not avg or max";
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return node.emitError() << "coordinate_transformation_mode '" << transform
                            << "' is not half_pixel or output_half_pixel";
  if (ratio <= 0)
    return node.emitError() << "sampling_ratio must be given (an adaptive one "
                               "depends on each region's size, known only at "
                               "run time)";
  if (outH <= 0 || outW <= 0)
    return node.emitError()
           << "output_height and output_width must be positive";
  bool halfPixel = transform == "half_pixel";
  int64_t regions = rType.getDimSize(0), channels = xType.getDimSize(1);
  int64_t height = xType.getDimSize(2), width = xType.getDimSize(3);
  int64_t samples = ratio * ratio, points = outH * outW * samples;
  NullSafe b{node};
  Type f32 = xType.getElementType();
  Type i64 = node.getBuilder().getI64Type();
  // Region corners, [R, 1] each: x1, y1, x2, y2.
  auto corner = [&](int64_t k) {
    Value v = node.create<graph::SliceOp>(rois, ArrayRef<int64_t>{0, k},
                                          ArrayRef<int64_t>{regions, k + 1},
                                          ArrayRef<int64_t>{1, 1});
    v = b.mul(v, b.scalar(scale, f32));
    return halfPixel ? b.sub(v, b.scalar(0.5, f32)) : v;
  };
  Value x1 = corner(0), y1 = corner(1), x2 = corner(2), y2 = corner(3);
  Value roiW = b.sub(x2, x1), roiH = b.sub(y2, y1);
  if (!halfPixel) {
    roiW = b.max(roiW, b.scalar(1.0, f32));
    roiH = b.max(roiH, b.scalar(1.0, f32));
  }
  Value binH = b.div(roiH, b.scalar(double(outH), f32));
  Value binW = b.div(roiW, b.scalar(double(outW), f32));
  // Each sample's position in bins, in (ph, pw, iy, ix) order: [1, P].
  std::vector<double> fy(points), fx(points);
  for (int64_t ph = 0, p = 0; ph < outH; ++ph)
    for (int64_t pw = 0; pw < outW; ++pw)
      for (int64_t iy = 0; iy < ratio; ++iy)
        for (int64_t ix = 0; ix < ratio; ++ix, ++p) {
          fy[p] = double(ph) + (double(iy) + 0.5) / double(ratio);
          fx[p] = double(pw) + (double(ix) + 0.5) / double(ratio);
        }
  auto pointsType = RankedTensorType::get({1, points}, f32);
  Value y =
      b.add(y1, b.mul(binH, createConstantFromDoubles(node, pointsType, fy)));
  Value x =
      b.add(x1, b.mul(binW, createConstantFromDoubles(node, pointsType, fx)));
  Value zero = b.scalar(0.0, f32), one = b.scalar(1.0, f32);
  Value outside =
      b.logicalOr(b.logicalOr(b.less(y, b.scalar(-1.0, f32)),
                              b.greater(y, b.scalar(double(height), f32))),
                  b.logicalOr(b.less(x, b.scalar(-1.0, f32)),
                              b.greater(x, b.scalar(double(width), f32))));
  // The low and high neighbours along one axis, and the position's weight.
  auto axis = [&](Value v, int64_t size) {
    v = b.max(v, zero);
    Value low = b.floor(v);
    Value last = b.scalar(size - 1.0, f32);
    // From the last pixel on, both neighbours are the last pixel.
    Value inside = b.less(low, last);
    Value lowFixed = b.where(inside, low, last);
    Value high = b.where(inside, b.add(low, one), last);
    Value pos = b.where(inside, v, last);
    return std::make_tuple(lowFixed, high, b.sub(pos, lowFixed));
  };
  auto [yLow, yHigh, ly] = axis(y, height);
  auto [xLow, xHigh, lx] = axis(x, width);
  Value hy = b.sub(one, ly), hx = b.sub(one, lx);
  // The regions' batch entries: [R, C, H * W].
  Value entries = indicesFromZero(
      node.create<graph::GatherOp>(input, batchIndices, uint64_t(0)));
  Value flatX =
      entries ? reshapeTo(node, entries, {regions, channels, height * width})
              : Value();
  Value result;
  Value corners[4][2] = {
      {yLow, xLow}, {yLow, xHigh}, {yHigh, xLow}, {yHigh, xHigh}};
  Value weights[4] = {b.mul(hy, hx), b.mul(hy, lx), b.mul(ly, hx),
                      b.mul(ly, lx)};
  for (int k = 0; k < 4; ++k) {
    Value flat = b.add(
        b.mul(b.cast(corners[k][0], i64), createI64Constant(node, {}, {width})),
        b.cast(corners[k][1], i64));
    Value index = flat ? reshapeTo(node, flat, {regions, 1, points}) : Value();
    index = index ? node.create<graph::ExpandOp>(
                        index, ArrayRef<int64_t>{regions, channels, points})
                  : Value();
    Value gathered =
        index && flatX
            ? node.create<graph::GatherElementsOp>(flatX, index, uint64_t(2))
            : Value();
    Value w = b.where(outside, zero, weights[k]);
    w = w ? reshapeTo(node, w, {regions, 1, points}) : Value();
    Value term = b.mul(gathered, w);
    result = !result         ? term
             : mode == "avg" ? b.add(result, term)
                             : b.max(result, term);
    if (!result)
      return failure();
  }
  Value grouped =
      reshapeTo(node, result, {regions, channels, outH, outW, samples});
  Value pooled = !grouped        ? Value()
                 : mode == "avg" ? node.create<graph::ReduceMeanOp>(
                                       grouped, ArrayRef<int64_t>{4}, false)
                                 : node.create<graph::ReduceMaxOp>(
                                       grouped, ArrayRef<int64_t>{4}, false);
  return node.setResults(pooled);
}

/// AffineGrid (opset 20): the sampling grid [N, D..., r] of the affine maps
/// theta [N, r, r + 1] over the points of an output of `size` ([N, C, D...],
/// a constant), normalised to [-1, 1]: the constant grid of points (x, y,
/// (z), 1) times theta's transpose, one matmul.
static LogicalResult importAffineGrid(NodeImporter &node) {
  Value theta = node.getInput(0);
  if (!theta)
    return node.emitError() << "needs inputs theta and size";
  bool alignCorners = node.getInt("align_corners", 0) != 0;
  if (node.hasFailed())
    return failure();
  if (isRunTimeShapeOperand(node, 1))
    return importAffineGridAtRunTime(node, alignCorners);
  auto size = getConstantInts(node, 1, "the size input");
  if (!size)
    return failure();
  RankedTensorType type = getType(theta);
  int64_t spatial = static_cast<int64_t>(size->size()) - 2;
  if ((spatial != 2 && spatial != 3) || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()) || type.getRank() != 3 ||
      type.getDimSize(1) != spatial || type.getDimSize(2) != spatial + 1 ||
      type.getDimSize(0) != (*size)[0])
    return node.emitError() << "needs theta [N, r, r + 1] and a size [N, C, "
                               "D...] of r = 2 or 3 spatial dimensions, got "
                            << type << " and " << size->size() << " sizes";
  SmallVector<int64_t> dims(size->begin() + 2, size->end());
  if (llvm::any_of(dims, [](int64_t d) { return d <= 0; }))
    return node.emitError() << "sizes must be positive";
  int64_t points = 1;
  for (int64_t d : dims)
    points *= d;
  // Row p: the point's normalised coordinates, x (the last axis) first,
  // then 1.
  std::vector<double> base(points * (spatial + 1));
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (int64_t i = spatial - 1; i >= 0; --i) {
      int64_t at = rest % dims[i];
      rest /= dims[i];
      double d = static_cast<double>(dims[i]);
      double c = alignCorners
                     ? (dims[i] == 1 ? -1.0 : -1.0 + 2.0 * at / (d - 1))
                     : -1.0 + (2.0 * at + 1.0) / d;
      base[p * (spatial + 1) + (spatial - 1 - i)] = c;
    }
    base[p * (spatial + 1) + spatial] = 1.0;
  }
  Type element = type.getElementType();
  Value grid = createConstantFromDoubles(
      node, RankedTensorType::get({points, spatial + 1}, element), base);
  Value transposed = transpose(node, theta, {0, 2, 1});
  Value product =
      transposed ? node.create<graph::MatMulOp>(grid, transposed) : Value();
  if (!product)
    return failure();
  SmallVector<int64_t> shape = {(*size)[0]};
  shape.append(dims);
  shape.push_back(spatial);
  return node.setResults(reshapeTo(node, product, shape));
}

/// MaxUnpool (opset 9; opset 11 adds output_shape): X's values scattered to
/// the flat positions `indices` gives (MaxPool's Indices) in zeros of the
/// pooled input's shape, padded with zeros to output_shape when it is given
/// (a constant).
static LogicalResult importMaxUnpool(NodeImporter &node) {
  Value input = node.getInput(0), indices = node.getInput(1);
  if (!input || !indices)
    return node.emitError() << "needs inputs X and I";
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank(), spatial = rank - 2;
  SmallVector<int64_t> kernel = node.getInts("kernel_shape");
  SmallVector<int64_t> strides =
      node.getInts("strides", SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      node.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
  if (node.hasFailed())
    return failure();
  if (rank < 3 || !type.hasStaticShape() ||
      getType(indices).getShape() != type.getShape() ||
      !getType(indices).getElementType().isInteger(64))
    return node.emitError() << "needs a static X and int64 indices of its "
                               "shape, got "
                            << type << " and " << indices.getType();
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return node.emitError() << "kernel_shape and strides need " << spatial
                            << " values, pads " << 2 * spatial;
  SmallVector<int64_t> inferred = {type.getDimSize(0), type.getDimSize(1)};
  for (int64_t i = 0; i < spatial; ++i)
    inferred.push_back((type.getDimSize(2 + i) - 1) * strides[i] -
                       (pads[i] + pads[spatial + i]) + kernel[i]);
  SmallVector<int64_t> shape(inferred);
  if (node.getInput(2)) {
    auto given = getConstantInts(node, 2, "output_shape");
    if (!given)
      return failure();
    if (static_cast<int64_t>(given->size()) != rank)
      return node.emitError() << "output_shape needs " << rank << " sizes";
    shape.assign(given->begin(), given->end());
  }
  int64_t total = 1;
  for (auto [size, wanted] : llvm::zip(inferred, shape)) {
    if (size <= 0 || wanted < size)
      return node.emitError()
             << "output_shape " << formatShape(shape)
             << " must hold the unpooled shape " << formatShape(inferred);
    total *= size;
  }
  Type element = type.getElementType();
  Value zeros = createConstant(
      node, DenseElementsAttr::get(RankedTensorType::get({total}, element),
                                   node.getBuilder().getZeroAttr(element)));
  Value flatIndices = reshapeTo(node, indices, {type.getNumElements()});
  Value flatValues = reshapeTo(node, input, {type.getNumElements()});
  Value scattered = flatIndices && flatValues
                        ? indicesFromZero(node.create<graph::ScatterElementsOp>(
                              zeros, flatIndices, flatValues, int64_t(0),
                              graph::ScatterReduction::None))
                        : Value();
  Value result = scattered ? reshapeTo(node, scattered, inferred) : Value();
  if (!result || shape == inferred)
    return node.setResults(result);
  SmallVector<int64_t> padding(2 * rank, 0);
  for (int64_t i = 0; i < rank; ++i)
    padding[rank + i] = shape[i] - inferred[i];
  Builder &b = node.getBuilder();
  return node.setResults(node.create<graph::PadOp>(
      result, b.getDenseI64ArrayAttr(padding), b.getStringAttr("constant"),
      b.getF64FloatAttr(0.0)));
}

//===----------------------------------------------------------------------===//
// Col2Im and DFT: linear maps, as a ConvTranspose and as matmuls with
// constant matrices
//===----------------------------------------------------------------------===//

/// Col2Im (opset 18): the column blocks [N, C * prod(block), L] summed back
/// into an image [N, C, image...]. That is a grouped ConvTranspose of the
/// blocks laid out on their grid, with one-hot kernels: channel c * K + j
/// of group c puts its value at kernel position j.
static LogicalResult importCol2Im(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  auto image = getConstantInts(node, 1, "image_shape");
  auto block = image ? getConstantInts(node, 2, "block_shape") : std::nullopt;
  if (!block)
    return failure();
  size_t spatial = image->size();
  SmallVector<int64_t> ones(spatial, 1);
  SmallVector<int64_t> dilations = node.getInts("dilations", ones);
  SmallVector<int64_t> strides = node.getInts("strides", ones);
  SmallVector<int64_t> pads =
      node.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
  if (node.hasFailed())
    return failure();
  if (type.getRank() != 3 || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()))
    return node.emitError() << "needs a static float input [N, C * "
                               "prod(block_shape), L], got "
                            << type;
  if (spatial == 0 || block->size() != spatial || dilations.size() != spatial ||
      strides.size() != spatial || pads.size() != 2 * spatial)
    return node.emitError()
           << "image_shape, block_shape, dilations, strides and pads need "
              "one value per spatial dimension (pads two)";
  int64_t kernel = 1, blocks = 1;
  SmallVector<int64_t> grid, outputPadding;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t k = (*block)[i], s = strides[i], d = dilations[i];
    if (k <= 0 || s <= 0 || d <= 0 || (*image)[i] <= 0 || pads[i] < 0 ||
        pads[i + spatial] < 0)
      return node.emitError() << "sizes, strides and dilations must be "
                                 "positive and pads non-negative";
    int64_t extent = (*image)[i] + pads[i] + pads[i + spatial];
    int64_t span = d * (k - 1) + 1;
    if (extent < span)
      return node.emitError() << "the block does not fit the padded image";
    int64_t count = (extent - span) / s + 1;
    grid.push_back(count);
    outputPadding.push_back(extent - ((count - 1) * s + span));
    kernel *= k;
    blocks *= count;
  }
  int64_t batch = type.getDimSize(0), rows = type.getDimSize(1);
  if (rows % kernel != 0 || type.getDimSize(2) != blocks)
    return node.emitError() << "the input " << formatShape(type.getShape())
                            << " must be [N, C * " << kernel << ", " << blocks
                            << "] for these block and image shapes";
  int64_t channels = rows / kernel;
  SmallVector<int64_t> gridShape = {batch, rows};
  gridShape.append(grid);
  Value laid = reshapeTo(node, input, gridShape);
  // Weight [C * K, 1, block...]: one-hot kernels.
  SmallVector<int64_t> weightShape = {rows, 1};
  weightShape.append(block->begin(), block->end());
  std::vector<double> weights(rows * kernel, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    weights[r * kernel + r % kernel] = 1.0;
  Value weight = createConstantFromDoubles(
      node, RankedTensorType::get(weightShape, type.getElementType()), weights);
  if (!laid || !weight)
    return failure();
  return node.setResults(node.create<graph::ConvTransposeOp>(
      laid, weight, Value(), ArrayRef<int64_t>(strides),
      ArrayRef<int64_t>(pads), ArrayRef<int64_t>(dilations),
      ArrayRef<int64_t>(outputPadding), static_cast<uint64_t>(channels)));
}

/// `x` along `axis` cut or zero-padded at the end to `length`.
static Value fitAxis(NodeImporter &node, Value x, int64_t axis,
                     int64_t length) {
  RankedTensorType type = getType(x);
  int64_t rank = type.getRank(), dim = type.getDimSize(axis);
  if (dim == length)
    return x;
  if (dim > length) {
    SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1);
    ends[axis] = length;
    return node.create<graph::SliceOp>(x, starts, ends, steps);
  }
  SmallVector<int64_t> pads(2 * rank, 0);
  pads[rank + axis] = length - dim;
  Builder &b = node.getBuilder();
  return node.create<graph::PadOp>(x, b.getDenseI64ArrayAttr(pads),
                                   b.getStringAttr("constant"),
                                   b.getF64FloatAttr(0.0));
}

/// DFT (opset 17; opset 20 takes the axis as an input): a discrete Fourier
/// transform along `axis` of a real ([..., 1]) or complex ([..., 2]) signal,
/// as matmuls with constant cos and sin matrices: forward, inverse (scaled
/// by 1/length), one-sided, and the inverse of a one-sided spectrum (a real
/// signal, as numpy's irfft).
static Value dft(NodeImporter &node, Value input, int64_t axis, int64_t length,
                 bool inverse, bool onesided);

static LogicalResult importDFT(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  if (rank < 2 || !type.hasStaticShape() || !type.getElementType().isF32() ||
      (type.getShape().back() != 1 && type.getShape().back() != 2))
    return node.emitError() << "needs a static f32 signal [..., 1] (real) or "
                               "[..., 2] (complex), got "
                            << type;
  bool inverse = node.getInt("inverse", 0) != 0;
  bool onesided = node.getInt("onesided", 0) != 0;
  std::optional<int64_t> given;
  if (node.getInput(1) && !(given = getConstantInt(node, 1, "dft_length")))
    return failure();
  if (node.hasFailed())
    return failure();
  // The transform's length along an axis of n points.
  auto lengthOf = [&](int64_t n) {
    return given ? *given : inverse && onesided ? 2 * (n - 1) : n;
  };
  int64_t axisValue = node.getOpset() >= 20 ? -2 : node.getInt("axis", 1);
  if (node.getOpset() >= 20 && isRunTimeShapeOperand(node, 2)) {
    // The axis read at run time: the transform along every axis it may
    // name, the run choosing one.
    if (getType(node.getInput(2)).getNumElements() != 1)
      return node.emitError() << "axis must be one integer";
    // An axis too short for the transform (an inverse one-sided one of a
    // single point) fails the run; its place holds another candidate.
    SmallVector<Value> candidates;
    SmallVector<int64_t> excluded;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      int64_t length = lengthOf(type.getDimSize(d));
      if (length <= 0)
        excluded.push_back(d);
      candidates.push_back(length > 0
                               ? dft(node, input, d, length, inverse, onesided)
                               : Value());
    }
    Value placeholder = *llvm::find_if(candidates, [](Value v) { return v; });
    if (!placeholder)
      return node.emitError()
             << "no axis of " << type << " is long enough for the transform";
    for (Value &candidate : candidates)
      candidate = candidate ? candidate : placeholder;
    Value axis = runTimeAxis(node, 2, rank, rank - 2, excluded);
    if (!axis)
      return failure();
    return selectAtRunTime(node, axis, candidates);
  }
  if (node.getOpset() >= 20 && node.getInput(2)) {
    std::optional<int64_t> axis = getConstantInt(node, 2, "axis");
    if (!axis)
      return failure();
    axisValue = *axis;
  }
  auto axis = normalizeAxis(node, axisValue, rank);
  if (!axis)
    return failure();
  if (*axis == rank - 1)
    return node.emitError() << "the axis must not be the last (the real and "
                               "imaginary parts)";
  int64_t length = lengthOf(type.getDimSize(*axis));
  if (length <= 0)
    return node.emitError()
           << "the transform length must be positive, got " << length;
  return node.setResults(dft(node, input, *axis, length, inverse, onesided));
}

/// The DFT of `input` (a static f32 signal [..., 1] or [..., 2]) along
/// `axis`, of `length` points, as DFT defines it.
static Value dft(NodeImporter &node, Value input, int64_t axis, int64_t length,
                 bool inverse, bool onesided) {
  RankedTensorType type = getType(input);
  int64_t rank = type.getRank();
  bool irfft = inverse && onesided;
  int64_t inLen = irfft ? length / 2 + 1 : length;
  int64_t outLen = irfft ? length : (onesided ? length / 2 + 1 : length);

  // The matrices [inLen, outLen]: out = re @ A + im @ B (real part) and
  // re @ C + im @ D (imaginary part).
  std::vector<double> a(inLen * outLen), b(inLen * outLen), c(inLen * outLen),
      d(inLen * outLen);
  double scale = inverse ? 1.0 / static_cast<double>(length) : 1.0;
  for (int64_t j = 0; j < inLen; ++j) {
    double weight = 1.0;
    bool realOnly = false;
    if (irfft) {
      realOnly = j == 0 || (length % 2 == 0 && j == length / 2);
      weight = realOnly ? 1.0 : 2.0;
    }
    for (int64_t k = 0; k < outLen; ++k) {
      double theta = 2.0 * M_PI * static_cast<double>((j * k) % length) /
                     static_cast<double>(length);
      double cosine = std::cos(theta) * scale * weight;
      double sine = realOnly ? 0.0 : std::sin(theta) * scale * weight;
      int64_t at = j * outLen + k;
      // Forward: (re + i im)(cos - i sin); inverse: (re + i im)(cos + i sin).
      a[at] = cosine;
      b[at] = inverse ? -sine : sine;
      c[at] = inverse ? sine : -sine;
      d[at] = cosine;
    }
  }
  Type f32 = type.getElementType();
  auto matrixType = RankedTensorType::get({inLen, outLen}, f32);

  // The parts as [..., inLen] with the axis moved last.
  SmallVector<int64_t> perm, inversePerm(rank - 1);
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis)
      perm.push_back(i);
  perm.push_back(axis);
  for (int64_t i = 0; i < rank - 1; ++i)
    inversePerm[perm[i]] = i;
  SmallVector<int64_t> partShape(type.getShape().drop_back());
  auto part = [&](int64_t index) -> Value {
    SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1);
    starts[rank - 1] = index;
    ends[rank - 1] = index + 1;
    Value v = node.create<graph::SliceOp>(input, starts, ends, steps);
    v = v ? reshapeTo(node, v, partShape) : Value();
    v = v ? fitAxis(node, v, axis, inLen) : Value();
    return v ? transpose(node, v, perm) : Value();
  };
  bool complexInput = type.getShape().back() == 2;
  Value re = part(0), im = complexInput ? part(1) : Value();
  if (!re || (complexInput && !im))
    return {};
  auto product = [&](ArrayRef<double> reMatrix,
                     ArrayRef<double> imMatrix) -> Value {
    Value result = node.create<graph::MatMulOp>(
        re, createConstantFromDoubles(node, matrixType, reMatrix));
    if (result && im)
      result = node.create<graph::AddOp>(
          result,
          node.create<graph::MatMulOp>(
              im, createConstantFromDoubles(node, matrixType, imMatrix)));
    if (!result)
      return {};
    result = transpose(node, result, inversePerm);
    if (!result)
      return {};
    SmallVector<int64_t> shape(getType(result).getShape());
    shape.push_back(1);
    return reshapeTo(node, result, shape);
  };
  Value real = product(a, b);
  if (irfft || !real)
    return real;
  Value imag = product(c, d);
  if (!imag)
    return {};
  return node.create<graph::ConcatOp>(ValueRange{real, imag},
                                      static_cast<uint64_t>(rank - 1));
}

/// STFT (opset 17): the signal [B, L, 1 or 2] cut into frames of the
/// window's length every frame_step samples (constants), each weighted by
/// the window and transformed (DFT of frame_length points, one-sided by
/// default): [B, frames, bins, 2].
static LogicalResult importSTFT(NodeImporter &node) {
  Value signal = node.getInput(0), window = node.getInput(2);
  if (!signal)
    return node.emitError() << "needs a signal";
  RankedTensorType type = getType(signal);
  if (type.getRank() != 3 || !type.hasStaticShape() ||
      !type.getElementType().isF32() ||
      (type.getDimSize(2) != 1 && type.getDimSize(2) != 2))
    return node.emitError()
           << "needs a static f32 signal [B, L, 1 or 2], got " << type;
  auto step = getConstantInts(node, 1, "frame_step");
  if (!step)
    return failure();
  bool onesided = node.getInt("onesided", 1) != 0;
  if (node.hasFailed())
    return failure();
  int64_t batch = type.getDimSize(0), samples = type.getDimSize(1),
          parts = type.getDimSize(2);
  int64_t windowLength = -1, frameLength = -1;
  if (window) {
    if (getType(window).getRank() != 1 || !getType(window).hasStaticShape())
      return node.emitError()
             << "the window must be 1-D, got " << window.getType();
    windowLength = getType(window).getDimSize(0);
  }
  if (node.getInput(3)) {
    std::optional<int64_t> given = getConstantInt(node, 3, "frame_length");
    if (!given)
      return failure();
    frameLength = *given;
  }
  if (frameLength < 0)
    frameLength = windowLength >= 0 ? windowLength : samples;
  if (windowLength < 0)
    windowLength = frameLength;
  if (step->size() != 1 || step->front() <= 0 || frameLength <= 0 ||
      frameLength > samples)
    return node.emitError() << "frame_step must be positive and frame_length "
                               "between 1 and the signal's "
                            << samples << " samples";
  int64_t hop = step->front();
  int64_t frames = 1 + (samples - frameLength) / hop;
  SmallVector<Value> cut;
  for (int64_t f = 0; f < frames; ++f) {
    int64_t begin = f * hop, end = std::min(begin + windowLength, samples);
    Value frame = node.create<graph::SliceOp>(
        signal, ArrayRef<int64_t>{0, begin, 0},
        ArrayRef<int64_t>{batch, end, parts}, ArrayRef<int64_t>{1, 1, 1});
    if (frame && end - begin < windowLength) {
      Builder &b = node.getBuilder();
      frame = node.create<graph::PadOp>(
          frame,
          b.getDenseI64ArrayAttr({0, 0, 0, 0, windowLength - (end - begin), 0}),
          b.getStringAttr("constant"), b.getF64FloatAttr(0.0));
    }
    frame = frame ? reshapeTo(node, frame, {batch, 1, windowLength, parts})
                  : Value();
    if (!frame)
      return failure();
    cut.push_back(frame);
  }
  Value framed = cut.size() == 1 ? cut.front()
                                 : node.create<graph::ConcatOp>(ValueRange(cut),
                                                                uint64_t(1));
  if (framed && window) {
    Value weights = reshapeTo(node, window, {1, 1, windowLength, 1});
    framed = weights ? node.create<graph::MulOp>(framed, weights) : Value();
  }
  if (!framed)
    return failure();
  return node.setResults(
      dft(node, framed, 2, frameLength, /*inverse=*/false, onesided));
}

void kiln::registerShapeImporters(NodeImporterRegistry &registry) {
  registry.add("AffineGrid", /*minOpset=*/20, importAffineGrid);
  registry.add("BlackmanWindow", /*minOpset=*/17, importWindow<2>);
  registry.add("CenterCropPad", /*minOpset=*/18, importCenterCropPad);
  registry.add("Col2Im", /*minOpset=*/18, importCol2Im);
  registry.add("Concat", /*minOpset=*/1, importConcat);
  registry.add("ConstantOfShape", /*minOpset=*/9, importConstantOfShape);
  registry.add("DeformConv", /*minOpset=*/19, importDeformConv);
  registry.add("DepthToSpace", /*minOpset=*/1, importDepthToSpace);
  registry.add("DFT", /*minOpset=*/17, importDFT);
  registry.add("Expand", /*minOpset=*/8, importExpand);
  registry.add("EyeLike", /*minOpset=*/9, importEyeLike);
  registry.add("Flatten", /*minOpset=*/1, importFlatten);
  registry.add("Gather", /*minOpset=*/1, importGatherWithAxis<graph::GatherOp>);
  registry.add("GatherElements", /*minOpset=*/11,
               importGatherWithAxis<graph::GatherElementsOp>);
  // Scatter (opsets 9 and 10) is ScatterElements under its old name.
  registry.add("Scatter", /*minOpset=*/9, importScatterElements,
               /*maxOpset=*/10);
  registry.add("ScatterElements", /*minOpset=*/11, importScatterElements);
  registry.add("ScatterND", /*minOpset=*/11, importScatterND);
  registry.add("TensorScatter", /*minOpset=*/24, importTensorScatter);
  registry.add("GatherND", /*minOpset=*/11, importGatherND);
  registry.add("GridSample", /*minOpset=*/16, importGridSample);
  registry.add("HammingWindow", /*minOpset=*/17, importWindow<1>);
  registry.add("HannWindow", /*minOpset=*/17, importWindow<0>);
  registry.add("MelWeightMatrix", /*minOpset=*/17, importMelWeightMatrix);
  registry.add("MaxUnpool", /*minOpset=*/9, importMaxUnpool);
  registry.add("OneHot", /*minOpset=*/9, importOneHot);
  registry.add("Pad", /*minOpset=*/1, importPad);
  registry.add("Range", /*minOpset=*/11, importRange);
  registry.add("Reshape", /*minOpset=*/1, importReshape);
  registry.add("Resize", /*minOpset=*/10, importResizeScalesOnly,
               /*maxOpset=*/10);
  registry.add("Resize", /*minOpset=*/11, importResize);
  registry.add("ReverseSequence", /*minOpset=*/10, importReverseSequence);
  registry.add("RoiAlign", /*minOpset=*/16, importRoiAlign);
  registry.add("Shape", /*minOpset=*/1, importShape);
  registry.add("Size", /*minOpset=*/1, importSize);
  registry.add("Slice", /*minOpset=*/1, importSlice);
  registry.add("SpaceToDepth", /*minOpset=*/1, importSpaceToDepth);
  registry.add("Split", /*minOpset=*/1, importSplit);
  registry.add("Squeeze", /*minOpset=*/1, importSqueeze);
  registry.add("STFT", /*minOpset=*/17, importSTFT);
  registry.add("Tile", /*minOpset=*/6, importTile);
  registry.add("Transpose", /*minOpset=*/1, importTranspose);
  registry.add("Trilu", /*minOpset=*/14, importTrilu);
  registry.add("Unsqueeze", /*minOpset=*/1, importUnsqueeze);
  registry.add("Upsample", /*minOpset=*/7, importResizeScalesOnly,
               /*maxOpset=*/9);
}
