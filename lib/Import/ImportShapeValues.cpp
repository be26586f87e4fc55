//===- ImportShapeValues.cpp - Sizes of symbolic dimensions at import -----===//
//
// A model exported with a symbolic sequence length computes its reshapes
// from the sizes it reads: Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape, Range(0, Shape(ids)[1]) for the positions, a Slice of a table up
// to that length. Kiln's ops take such shapes as attributes, so the importer
// follows the arithmetic entry by entry (a number, or the size of a `?`
// dimension, named by its symbol) and gives each consumer a static form: a
// Reshape's `0` (the input's size) or `-1`, a graph.prefix as long as the
// symbol. What it cannot follow keeps the graph.shape op, read at run time.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/SymbolicDims.h"
#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MathExtras.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

/// The most entries a tensor of sizes has for the rules below to follow it
/// (a shape has one per dimension).
constexpr int64_t kMaxEntries = 64;

/// The largest factor on a symbol that the rules follow (a batch's bound
/// times heads, say).
constexpr int64_t kMaxScale = int64_t(1) << 20;

ShapeEntry number(int64_t value) { return ShapeEntry{value, -1, {}, 0}; }

bool allNumbers(ArrayRef<ShapeEntry> entries) {
  return llvm::none_of(entries,
                       [](const ShapeEntry &e) { return e.isSymbolic(); });
}

/// Entry `i` of `entries` broadcast to `count` (a scalar or one entry
/// repeats).
const ShapeEntry &at(ArrayRef<ShapeEntry> entries, size_t i) {
  return entries.size() == 1 ? entries.front() : entries[i];
}

/// An elementwise op on two entries; nullopt where a symbol would leave a
/// size that no symbol names (seq + 1).
std::optional<ShapeEntry> combine(StringRef op, const ShapeEntry &l,
                                  const ShapeEntry &r) {
  if (!l.isSymbolic() && !r.isSymbolic()) {
    int64_t a = l.value, b = r.value, result;
    if (op == "Add" && !llvm::AddOverflow(a, b, result))
      return number(result);
    if (op == "Sub" && !llvm::SubOverflow(a, b, result))
      return number(result);
    if (op == "Mul" && !llvm::MulOverflow(a, b, result))
      return number(result);
    if (op == "Max")
      return number(std::max(a, b));
    if (op == "Min")
      return number(std::min(a, b));
    // (Integer Div truncates; a negative operand is left to the op.)
    if (op == "Div" && a >= 0 && b > 0)
      return number(a / b);
    return std::nullopt;
  }
  auto is = [](const ShapeEntry &e, int64_t v) {
    return !e.isSymbolic() && e.value == v;
  };
  if ((op == "Add" && is(r, 0)) || (op == "Sub" && is(r, 0)) ||
      (op == "Mul" && is(r, 1)) || (op == "Div" && is(r, 1)))
    return l;
  if ((op == "Add" && is(l, 0)) || (op == "Mul" && is(l, 1)))
    return r;
  if (op == "Mul" && (is(l, 0) || is(r, 0)))
    return number(0);
  if ((op == "Max" || op == "Min") && l.sameSize(r))
    return l;
  // A symbol times a static size (the sequence times the batch, which the
  // split makes 1), and back.
  auto scale = [](const ShapeEntry &e,
                  int64_t by) -> std::optional<ShapeEntry> {
    int64_t product;
    if (by < 1 || llvm::MulOverflow(e.scale, by, product) ||
        product > kMaxScale)
      return std::nullopt;
    ShapeEntry result = e;
    result.scale = product;
    return result;
  };
  if (op == "Mul" && l.isSymbolic() && !r.isSymbolic())
    return scale(l, r.value);
  if (op == "Mul" && r.isSymbolic() && !l.isSymbolic())
    return scale(r, l.value);
  if (op == "Div" && l.isSymbolic() && !r.isSymbolic() && r.value > 0 &&
      l.scale % r.value == 0) {
    ShapeEntry result = l;
    result.scale /= r.value;
    return result;
  }
  return std::nullopt;
}

} // namespace

std::optional<SmallVector<ShapeEntry>> getShapeEntries(NodeImporter &node,
                                                       unsigned i) {
  Value value = node.getInput(i);
  if (!value)
    return std::nullopt;
  auto it = node.getState().shapeValues.find(value);
  if (it != node.getState().shapeValues.end())
    return it->second;
  auto dense = dyn_cast_or_null<DenseElementsAttr>(node.getConstantInput(i));
  if (!dense || dense.getType().getRank() > 1 ||
      dense.getNumElements() > kMaxEntries)
    return std::nullopt;
  SmallVector<ShapeEntry> entries;
  if (isa<IntegerType>(dense.getElementType())) {
    for (const APInt &v : dense.getValues<APInt>())
      entries.push_back(number(dense.getElementType().isUnsignedInteger()
                                   ? int64_t(v.getZExtValue())
                                   : v.getSExtValue()));
  } else if (isa<FloatType>(dense.getElementType())) {
    // A size cast to float and back (Range's limit, a scale's product).
    for (const APFloat &v : dense.getValues<APFloat>()) {
      double d = v.convertToDouble();
      if (d != std::trunc(d) || std::fabs(d) > 0x1p48)
        return std::nullopt;
      entries.push_back(number(int64_t(d)));
    }
  } else {
    return std::nullopt;
  }
  return entries;
}

std::optional<SmallVector<ShapeEntry>>
evaluateShapeArithmetic(NodeImporter &node) {
  GraphImportState &state = node.getState();
  if (state.shapeValues.empty() || !node.getNode().domain().empty())
    return std::nullopt;
  StringRef op = node.getOpType();
  auto known = [&](unsigned i) {
    Value v = node.getInput(i);
    return v && state.shapeValues.count(v);
  };
  auto inputs = [&](unsigned count)
      -> std::optional<SmallVector<SmallVector<ShapeEntry>>> {
    SmallVector<SmallVector<ShapeEntry>> all;
    for (unsigned i = 0; i < count; ++i) {
      std::optional<SmallVector<ShapeEntry>> entries = getShapeEntries(node, i);
      if (!entries)
        return std::nullopt;
      all.push_back(std::move(*entries));
    }
    return all;
  };
  // A cast keeps the sizes only to a type that holds them (ONNX's FLOAT,
  // INT32, INT64, DOUBLE, UINT32, UINT64: a sequence length is far below
  // 2^24).
  if (op == "Cast" &&
      !llvm::is_contained({1, 6, 7, 11, 12, 13}, node.getInt("to", 0)))
    return std::nullopt;
  if (op == "Identity" || op == "Cast" || op == "Unsqueeze" ||
      op == "Squeeze" || op == "Reshape" || op == "Flatten") {
    // The same entries in the same order.
    if (!known(0))
      return std::nullopt;
    return state.shapeValues.lookup(node.getInput(0));
  }
  if (op == "Gather") {
    if (!known(0) || node.getInt("axis", 0) != 0)
      return std::nullopt;
    auto all = inputs(2);
    if (!all)
      return std::nullopt;
    SmallVector<ShapeEntry> &data = (*all)[0], &indices = (*all)[1];
    SmallVector<ShapeEntry> result;
    int64_t size = data.size();
    for (const ShapeEntry &index : indices) {
      if (index.isSymbolic())
        return std::nullopt;
      int64_t i = index.value < 0 ? index.value + size : index.value;
      if (i < 0 || i >= size)
        return std::nullopt;
      result.push_back(data[i]);
    }
    return result;
  }
  if (op == "Concat") {
    if (llvm::none_of(llvm::seq<unsigned>(0, node.getNumInputs()), known))
      return std::nullopt;
    auto all = inputs(node.getNumInputs());
    if (!all)
      return std::nullopt;
    SmallVector<ShapeEntry> result;
    for (auto &entries : *all)
      llvm::append_range(result, entries);
    if (int64_t(result.size()) > kMaxEntries)
      return std::nullopt;
    return result;
  }
  if (op == "Slice" && node.getOpset() >= 10) {
    if (!known(0))
      return std::nullopt;
    SmallVector<ShapeEntry> data = state.shapeValues.lookup(node.getInput(0));
    auto scalar = [&](unsigned i, int64_t fallback) -> std::optional<int64_t> {
      if (!node.getInput(i))
        return fallback;
      std::optional<SmallVector<ShapeEntry>> e = getShapeEntries(node, i);
      if (!e || e->size() != 1 || e->front().isSymbolic())
        return std::nullopt;
      return e->front().value;
    };
    std::optional<int64_t> start = scalar(1, 0), end = scalar(2, 0),
                           axis = scalar(3, 0), step = scalar(4, 1);
    int64_t size = data.size();
    if (!start || !end || !axis || !step || (*axis != 0 && *axis != -1) ||
        *step != 1)
      return std::nullopt;
    int64_t from =
        std::clamp<int64_t>(*start < 0 ? *start + size : *start, 0, size);
    int64_t to = std::clamp<int64_t>(*end < 0 ? *end + size : *end, from, size);
    return SmallVector<ShapeEntry>(data.begin() + from, data.begin() + to);
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" ||
      op == "Min") {
    // Also on two integer constants: the importer does not fold Add and
    // the like, and a size computed from a symbolic shape's static entry
    // (a third of the projection's width) must stay a constant.
    auto integer = [&](unsigned i) {
      Value v = node.getInput(i);
      return v && isa<IntegerType>(getElementTypeOrSelf(v.getType()));
    };
    if (node.getNumInputs() != 2 ||
        (!known(0) && !known(1) && !(integer(0) && integer(1))))
      return std::nullopt;
    auto all = inputs(2);
    if (!all)
      return std::nullopt;
    SmallVector<ShapeEntry> &l = (*all)[0], &r = (*all)[1];
    if (l.size() != r.size() && l.size() != 1 && r.size() != 1)
      return std::nullopt;
    SmallVector<ShapeEntry> result;
    for (size_t i = 0, e = std::max(l.size(), r.size()); i < e; ++i) {
      std::optional<ShapeEntry> entry = combine(op, at(l, i), at(r, i));
      if (!entry)
        return std::nullopt;
      result.push_back(*entry);
    }
    return result;
  }
  return std::nullopt;
}

void recordShapeValue(NodeImporter &node, ArrayRef<ShapeEntry> entries) {
  GraphImportState &state = node.getState();
  const std::string &name = node.getNode().output(0);
  Value output = state.values.lookup(name);
  auto type = output ? dyn_cast<RankedTensorType>(output.getType())
                     : RankedTensorType();
  if (!type || type.getRank() > 1 || !type.hasStaticShape() ||
      type.getNumElements() != int64_t(entries.size()) ||
      output.getDefiningOp<graph::ConstantOp>())
    return;
  if (!allNumbers(entries)) {
    state.shapeValues[output] = SmallVector<ShapeEntry>(entries);
    return;
  }
  // Every size is known: a constant, so that the importers that need
  // constants (Slice's starts, Split's sizes...) take it.
  Type element = type.getElementType();
  SmallVector<Attribute> values;
  for (const ShapeEntry &entry : entries) {
    auto integer = dyn_cast<IntegerType>(element);
    if (auto floatType = dyn_cast<FloatType>(element))
      values.push_back(FloatAttr::get(floatType, double(entry.value)));
    else if (integer && integer.getWidth() <= 64 &&
             (integer.isUnsigned()
                  ? entry.value >= 0 &&
                        llvm::isUIntN(integer.getWidth(), entry.value)
                  : llvm::isIntN(integer.getWidth(), entry.value)))
      values.push_back(IntegerAttr::get(element, entry.value));
    else
      return; // (a size that the type cannot hold: left to the ops)
  }
  state.values[name] = graph::ConstantOp::create(
      node.getBuilder(), node.getLoc(),
      cast<TypedAttr>(DenseElementsAttr::get(type, values)));
}

std::optional<SmallVector<ShapeEntry>>
traceSymbols(NodeImporter &node, Value value, StringRef what) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<ShapeEntry> symbols;
  for (int64_t d = 0; d < type.getRank(); ++d)
    symbols.push_back(ShapeEntry{type.isDynamicDim(d) ? 0 : type.getDimSize(d),
                                 -1, value, d});
  if (type.hasStaticShape())
    return symbols;
  auto func = node.getBuilder()
                  .getInsertionBlock()
                  ->getParentOp()
                  ->getParentOfType<func::FuncOp>();
  if (!func)
    func = dyn_cast<func::FuncOp>(
        node.getBuilder().getInsertionBlock()->getParentOp());
  std::optional<graph::SymbolicDims> traced;
  if (func)
    traced = graph::SymbolicDims::traceSoFar(func);
  for (int64_t d = 0; d < type.getRank(); ++d) {
    std::optional<int64_t> symbol =
        traced ? traced->symbolOf(value, d) : std::nullopt;
    if (!symbol) {
      node.emitError() << what << " has the size "
                       << graph::formatShape(type.getShape())
                       << ", whose dimension " << d
                       << " Kiln cannot tell as one of the symbolic "
                          "dimensions given bounds (an op before it has no "
                          "rule for them)";
      return std::nullopt;
    }
    symbols[d].symbol = *symbol;
    if (*symbol >= 0)
      symbols[d].scale = traced->scaleOf(value, d);
    if (symbols[d].isScaled())
      symbols[d].source = {};
  }
  return symbols;
}

/// kiln.dim_symbols of the function being built.
static DictionaryAttr symbolInfo(NodeImporter &node, int64_t symbol) {
  Operation *parent = node.getBuilder().getInsertionBlock()->getParentOp();
  auto func = isa<func::FuncOp>(parent)
                  ? cast<func::FuncOp>(parent)
                  : parent->getParentOfType<func::FuncOp>();
  auto list =
      func ? func->getAttrOfType<ArrayAttr>(attr::kDimSymbols) : ArrayAttr();
  if (!list || symbol < 0 || symbol >= int64_t(list.size()))
    return {};
  return dyn_cast<DictionaryAttr>(list[symbol]);
}

int64_t symbolBound(NodeImporter &node, int64_t symbol) {
  DictionaryAttr info = symbolInfo(node, symbol);
  auto max = info ? info.getAs<IntegerAttr>("max") : IntegerAttr();
  return max ? max.getInt() : INT64_MAX;
}

std::string symbolName(NodeImporter &node, int64_t symbol) {
  DictionaryAttr info = symbolInfo(node, symbol);
  auto name = info ? info.getAs<StringAttr>("name") : StringAttr();
  return name ? name.str() : "?";
}

} // namespace kiln
