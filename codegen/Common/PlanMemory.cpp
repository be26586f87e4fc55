//===- PlanMemory.cpp - One workspace for all buffers, reused -------------===//
//
// Greedy-by-size offset assignment over live ranges, the arena planning of
// TensorFlow Lite's "greedy by size" strategy (Y. Pisarchyk, J. Lee,
// "Efficient Memory Management for Deep Neural Net Inference", 2020): place
// the largest buffers first, each at the lowest offset where it overlaps no
// buffer alive at the same time.
//
// A buffer whose contents are copied whole into a contiguous slice of
// another (the parts of one tensor written by one op, each into a buffer of
// its own, which One-Shot Bufferize cannot place in the whole) is placed in
// that slice instead, and the copy is dropped. A buffer copied whole into an
// output argument through reshapes only (what buffer-results-to-out-params
// leaves where a result is a reshape of an allocation, as a contraction
// with packed weights returns) becomes a view of that argument.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENPLANMEMORY
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

constexpr int64_t kAlignment = 64;

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes = 0;
  unsigned begin = 0, end = 0; // top-level op positions, inclusive
  int64_t offset = 0;
};

/// The position of the top-level op of `block` that holds `op`.
std::optional<unsigned> topLevelPosition(Operation *op, Block &block,
                                         DenseMap<Operation *, unsigned> &pos) {
  Operation *ancestor = block.findAncestorOpInBlock(*op);
  if (!ancestor)
    return std::nullopt;
  return pos.lookup(ancestor);
}

/// The last top-level position where `value` or a view of it is used; false
/// when a use escapes what the analysis follows (then the buffer is left).
bool lastUse(Value value, Block &block, DenseMap<Operation *, unsigned> &pos,
             unsigned &end) {
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    if (isa<func::ReturnOp>(user))
      return false;
    std::optional<unsigned> at = topLevelPosition(user, block, pos);
    if (!at)
      return false;
    end = std::max(end, *at);
    // Any buffer an op returns may alias this one (a view, or a loop that
    // carries the buffer in its iter_args): its uses keep the buffer alive.
    for (Value result : user->getResults())
      if (isa<BaseMemRefType>(result.getType()) &&
          !lastUse(result, block, pos, end))
        return false;
  }
  return true;
}

/// A buffer placed inside another: `alloc` at `offset` bytes into `whole`,
/// where `copy` put its contents.
struct Part {
  memref::AllocOp alloc;
  memref::AllocOp whole;
  int64_t offset = 0;
  memref::CopyOp copy;
};

/// Whether a memref of `shape` with `strides` is one contiguous run.
bool isContiguous(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

/// The static [begin, end) element box of a subview, per source dimension.
std::optional<SmallVector<std::pair<int64_t, int64_t>>>
subviewBox(memref::SubViewOp view) {
  SmallVector<std::pair<int64_t, int64_t>> box;
  for (auto [offset, size, stride] :
       llvm::zip_equal(view.getStaticOffsets(), view.getStaticSizes(),
                       view.getStaticStrides())) {
    if (ShapedType::isDynamic(offset) || ShapedType::isDynamic(size) ||
        stride != 1)
      return std::nullopt;
    box.emplace_back(offset, offset + size);
  }
  return box;
}

bool disjoint(ArrayRef<std::pair<int64_t, int64_t>> a,
              ArrayRef<std::pair<int64_t, int64_t>> b) {
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (x.second <= y.first || y.second <= x.first)
      return true;
  return false;
}

/// `alloc` as a part of the buffer its contents are copied into, when the
/// copy is its last use, the target is a static contiguous slice of a
/// function-level allocation, and between the first use of `alloc` and the
/// copy nothing touches that allocation but copies into disjoint slices of
/// it.
std::optional<Part> matchPart(memref::AllocOp alloc, Block &block,
                              DenseMap<Operation *, unsigned> &pos) {
  memref::CopyOp copy;
  for (Operation *user : alloc->getUsers())
    if (auto c = dyn_cast<memref::CopyOp>(user);
        c && c.getSource() == alloc.getResult()) {
      if (copy)
        return std::nullopt;
      copy = c;
    }
  if (!copy || copy->getBlock() != &block)
    return std::nullopt;
  auto slice = copy.getTarget().getDefiningOp<memref::SubViewOp>();
  auto whole =
      slice ? slice.getSource().getDefiningOp<memref::AllocOp>() : nullptr;
  if (!whole || whole->getBlock() != &block || whole == alloc)
    return std::nullopt;
  MemRefType sliceType = slice.getType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (sliceType.getShape() != alloc.getType().getShape() ||
      sliceType.getElementType() != alloc.getType().getElementType() ||
      failed(sliceType.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      !isContiguous(sliceType.getShape(), strides))
    return std::nullopt;
  std::optional<SmallVector<std::pair<int64_t, int64_t>>> box =
      subviewBox(slice);
  if (!box)
    return std::nullopt;

  // The copy is the last use; the first one opens the window in which the
  // part would be written early.
  unsigned first = pos[copy], last = 0;
  for (Operation *user : alloc->getUsers()) {
    std::optional<unsigned> at = topLevelPosition(user, block, pos);
    if (!at)
      return std::nullopt;
    first = std::min(first, *at);
  }
  if (!lastUse(alloc, block, pos, last) || last != pos[copy])
    return std::nullopt;

  // Every view of the whole buffer.
  llvm::SmallPtrSet<Value, 8> aliases;
  SmallVector<Value> worklist = {whole.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!aliases.insert(value).second)
      continue;
    for (Operation *user : value.getUsers())
      if (isa<ViewLikeOpInterface>(user))
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            worklist.push_back(result);
  }
  // The slice of the whole buffer a view of it lies in, through further
  // views; none for the whole buffer itself.
  auto sliceOf = [&](Value value)
      -> std::optional<SmallVector<std::pair<int64_t, int64_t>>> {
    while (Operation *def = value.getDefiningOp()) {
      if (auto view = dyn_cast<memref::SubViewOp>(def);
          view && view.getSource() == whole.getResult())
        return subviewBox(view);
      auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
      if (!viewLike)
        return std::nullopt;
      value = viewLike.getViewSource();
    }
    return std::nullopt;
  };
  for (Operation &op : block) {
    unsigned at = pos[&op];
    if (at < first || at > pos[copy] || &op == copy.getOperation() ||
        isa<ViewLikeOpInterface>(op))
      continue;
    // Whatever the op reaches of the whole buffer must be disjoint from the
    // part's slice.
    WalkResult clash = op.walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        if (!aliases.contains(operand))
          continue;
        std::optional<SmallVector<std::pair<int64_t, int64_t>>> other =
            sliceOf(operand);
        if (!other || !disjoint(*box, *other))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (clash.wasInterrupted())
      return std::nullopt;
  }
  int64_t elementBytes =
      (alloc.getType().getElementType().getIntOrFloatBitWidth() + 7) / 8;
  return Part{alloc, whole, offset * elementBytes, copy};
}

/// Makes every static allocation whose contents are copied whole into an
/// argument of the function, through reshapes only, as the allocation's last
/// use, a view of that argument, and drops the copy. The argument must have no
/// other use: an output the function only writes, once (outputs do not
/// overlap other buffers, kiln_model_run checks). The parts and wholes of
/// `parts` stay in the workspace, where the parts are placed.
void writeIntoArguments(Block &block, DenseMap<Operation *, unsigned> &pos,
                        const DenseMap<Operation *, Part> &parts) {
  llvm::SmallPtrSet<Operation *, 8> wholes;
  for (const auto &entry : parts)
    wholes.insert(entry.second.whole);
  SmallVector<memref::CopyOp> copies;
  for (Operation &op : block)
    if (auto copy = dyn_cast<memref::CopyOp>(&op))
      copies.push_back(copy);
  for (memref::CopyOp copy : copies) {
    auto target = dyn_cast<BlockArgument>(copy.getTarget());
    if (!target || target.getOwner() != &block || !target.hasOneUse())
      continue;
    Value source = copy.getSource();
    while (Operation *def = source.getDefiningOp()) {
      if (!isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
        break;
      source = def->getOperand(0);
    }
    auto alloc = source.getDefiningOp<memref::AllocOp>();
    auto targetType = cast<MemRefType>(target.getType());
    if (!alloc || alloc->getBlock() != &block || parts.count(alloc) ||
        wholes.contains(alloc) || !alloc.getType().hasStaticShape() ||
        !alloc.getType().getLayout().isIdentity() ||
        !targetType.hasStaticShape() || !targetType.getLayout().isIdentity() ||
        alloc.getType().getElementType() != targetType.getElementType() ||
        alloc.getType().getMemorySpace() != targetType.getMemorySpace() ||
        alloc.getType().getNumElements() != targetType.getNumElements())
      continue;
    unsigned last = 0;
    if (!lastUse(alloc, block, pos, last) || last != pos[copy])
      continue;
    OpBuilder builder(alloc);
    MemRefType type = alloc.getType();
    // An identity layout: row-major strides, offset 0.
    auto [strides, offset] = type.getStridesAndOffset();
    Value view = memref::ReinterpretCastOp::create(builder, alloc.getLoc(),
                                                   type, target, /*offset=*/0,
                                                   type.getShape(), strides);
    copy.erase();
    alloc.replaceAllUsesWith(view);
    alloc.erase();
  }
}

std::optional<int64_t> upperBound(func::FuncOp func, Value size);

/// The largest size of dimension `d` of `memref`: static, a symbol of
/// kiln.dim_symbols at an argument (by its kiln.dims), or through the
/// allocation, reshape, subview, cast or loop that made it.
std::optional<int64_t> dimBound(func::FuncOp func, Value memref, int64_t d) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type || d < 0 || d >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(d))
    return type.getDimSize(d);
  if (auto arg = dyn_cast<BlockArgument>(memref)) {
    auto symbols = func->getAttrOfType<ArrayAttr>(attr::kDimSymbols);
    if (arg.getOwner()->getParentOp() != func || !symbols)
      return std::nullopt;
    auto names =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), attr::kDims);
    if (!names || int64_t(names.size()) <= d)
      return std::nullopt;
    for (Attribute item : symbols) {
      auto fields = cast<DictionaryAttr>(item);
      if (fields.get("name") == names[d])
        return fields.getAs<IntegerAttr>("max").getInt();
    }
    return std::nullopt;
  }
  Operation *op = memref.getDefiningOp();
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(op))
    return upperBound(func,
                      alloc.getDynamicSizes()[type.getDynamicDimIndex(d)]);
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(op)) {
    int64_t product = 1;
    for (int64_t j : collapse.getReassociationIndices()[d]) {
      std::optional<int64_t> bound = dimBound(func, collapse.getSrc(), j);
      if (!bound || llvm::MulOverflow(product, *bound, product))
        return std::nullopt;
    }
    return product;
  }
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(op)) {
    OpFoldResult size = expand.getMixedOutputShape()[d];
    if (auto value = dyn_cast<Value>(size))
      return upperBound(func, value);
    return getConstantIntValue(size);
  }
  if (auto subview = dyn_cast_or_null<memref::SubViewOp>(op)) {
    OpFoldResult size = subview.getMixedSizes()[d];
    if (auto value = dyn_cast<Value>(size))
      return upperBound(func, value);
    return getConstantIntValue(size);
  }
  if (auto cast = dyn_cast_or_null<memref::CastOp>(op))
    return dimBound(func, cast.getSource(), d);
  // A loop's result has the shape of the buffer it carries.
  if (auto loop = dyn_cast_or_null<scf::ForOp>(op))
    return dimBound(
        func, loop.getInitArgs()[cast<OpResult>(memref).getResultNumber()], d);
  return std::nullopt;
}

/// The largest value `size` takes: a constant, a dimension's size
/// (dimBound), or a product or sum of such.
std::optional<int64_t> upperBound(func::FuncOp func, Value size) {
  if (std::optional<int64_t> constant = getConstantIntValue(size))
    return constant;
  Operation *op = size.getDefiningOp();
  if (auto dim = dyn_cast_or_null<memref::DimOp>(op)) {
    std::optional<int64_t> d = dim.getConstantIndex();
    if (!d)
      return std::nullopt;
    return dimBound(func, dim.getSource(), *d);
  }
  // A quotient is at most the dividend's bound (sizes are at least 1).
  if (isa_and_nonnull<arith::DivUIOp, arith::DivSIOp>(op)) {
    std::optional<int64_t> a = upperBound(func, op->getOperand(0));
    std::optional<int64_t> b = getConstantIntValue(op->getOperand(1));
    if (!a || *a < 0)
      return std::nullopt;
    return b && *b > 0 ? *a / *b : *a;
  }
  if (isa_and_nonnull<arith::MulIOp, arith::AddIOp>(op)) {
    std::optional<int64_t> a = upperBound(func, op->getOperand(0));
    std::optional<int64_t> b = upperBound(func, op->getOperand(1));
    int64_t result;
    if (!a || !b || *a < 0 || *b < 0 ||
        (isa<arith::MulIOp>(op) ? llvm::MulOverflow(*a, *b, result)
                                : llvm::AddOverflow(*a, *b, result)))
      return std::nullopt;
    return result;
  }
  return std::nullopt;
}

struct CodegenPlanMemoryPass
    : impl::CodegenPlanMemoryBase<CodegenPlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    DenseMap<Operation *, unsigned> pos;
    for (auto [i, op] : llvm::enumerate(block))
      pos[&op] = i;

    // A buffer the workspace can hold: identity layout, host memory,
    // integers or floats.
    auto placeable = [](memref::AllocOp alloc) {
      MemRefType type = alloc.getType();
      return type.getLayout().isIdentity() && !type.getMemorySpace() &&
             type.getElementType().isIntOrFloat();
    };
    auto plannable = [&](memref::AllocOp alloc) {
      return placeable(alloc) && alloc.getType().hasStaticShape();
    };
    // Its elements; one whose sizes the run chooses (kiln.dim_symbols)
    // takes its largest sizes.
    auto largestElements =
        [&](memref::AllocOp alloc) -> std::optional<int64_t> {
      MemRefType type = alloc.getType();
      if (!placeable(alloc))
        return std::nullopt;
      int64_t elements = 1;
      unsigned next = 0;
      for (int64_t size : type.getShape()) {
        if (ShapedType::isDynamic(size)) {
          std::optional<int64_t> bound =
              upperBound(func, alloc.getDynamicSizes()[next++]);
          if (!bound)
            return std::nullopt;
          size = *bound;
        }
        if (llvm::MulOverflow(elements, size, elements))
          return std::nullopt;
      }
      return elements;
    };
    // Parts first: each is then a range of its whole buffer's bytes, and its
    // live range extends the whole's.
    DenseMap<Operation *, Part> parts;
    for (Operation &op : block)
      if (auto alloc = dyn_cast<memref::AllocOp>(&op);
          alloc && plannable(alloc))
        if (std::optional<Part> part = matchPart(alloc, block, pos);
            part && plannable(part->whole))
          parts[alloc] = *part;
    // No part of a part: the inner one would be written before the window
    // that its whole's own check covers.
    SmallVector<Operation *> chained;
    for (auto &[op, part] : parts)
      if (parts.count(part.whole))
        chained.push_back(op);
    for (Operation *op : chained)
      parts.erase(op);
    writeIntoArguments(block, pos, parts);

    SmallVector<Buffer> buffers;
    DenseMap<Operation *, unsigned> bufferIndex;
    for (Operation &op : block) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc || parts.count(alloc))
        continue;
      std::optional<int64_t> elements = largestElements(alloc);
      if (!elements)
        continue;
      MemRefType type = alloc.getType();
      Buffer buffer;
      buffer.alloc = alloc;
      // Each element takes whole bytes in memory: an i1 is stored in one.
      int64_t elementBytes =
          (type.getElementType().getIntOrFloatBitWidth() + 7) / 8;
      buffer.bytes = llvm::alignTo(*elements * elementBytes, kAlignment);
      buffer.begin = buffer.end = pos[&op];
      if (!lastUse(alloc, block, pos, buffer.end))
        continue;
      bufferIndex[alloc] = buffers.size();
      buffers.push_back(buffer);
    }
    // A part whose whole buffer is planned lives as long as it, from its own
    // allocation on; the others are left as they are.
    SmallVector<Part> placedParts;
    for (auto &[op, part] : parts) {
      auto it = bufferIndex.find(part.whole);
      if (it == bufferIndex.end())
        continue;
      Buffer &buffer = buffers[it->second];
      buffer.begin = std::min(buffer.begin, pos[part.alloc]);
      placedParts.push_back(part);
    }
    if (buffers.empty())
      return;

    // Largest first, each at the lowest offset clear of live neighbours.
    SmallVector<Buffer *> order;
    for (Buffer &buffer : buffers)
      order.push_back(&buffer);
    // Largest first; among equals, the earlier allocation first.
    llvm::sort(order, [](Buffer *a, Buffer *b) {
      return std::make_pair(-a->bytes, a->begin) <
             std::make_pair(-b->bytes, b->begin);
    });
    SmallVector<Buffer *> placed;
    int64_t total = 0;
    for (Buffer *buffer : order) {
      SmallVector<std::pair<int64_t, int64_t>> busy;
      for (Buffer *other : placed)
        if (other->begin <= buffer->end && buffer->begin <= other->end)
          busy.emplace_back(other->offset, other->offset + other->bytes);
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [from, to] : busy) {
        if (offset + buffer->bytes <= from)
          break;
        offset = std::max(offset, to);
      }
      buffer->offset = offset;
      total = std::max(total, offset + buffer->bytes);
      placed.push_back(buffer);
    }

    // The workspace argument and the views into it.
    MLIRContext *ctx = &getContext();
    auto workspaceType = MemRefType::get({total}, IntegerType::get(ctx, 8));
    unsigned index = func.getNumArguments();
    if (failed(func.insertArgument(index, workspaceType, {}, func.getLoc())))
      return signalPassFailure();
    Value workspace = func.getArgument(index);
    OpBuilder builder(ctx);
    for (Part &part : placedParts) {
      const Buffer &buffer = buffers[bufferIndex.lookup(part.whole)];
      builder.setInsertionPoint(part.alloc);
      Location loc = part.alloc.getLoc();
      Value shift = arith::ConstantIndexOp::create(builder, loc,
                                                   buffer.offset + part.offset);
      Value view = memref::ViewOp::create(builder, loc, part.alloc.getType(),
                                          workspace, shift, ValueRange{});
      part.copy.erase();
      part.alloc.replaceAllUsesWith(view);
      part.alloc.erase();
    }
    for (Buffer &buffer : buffers) {
      builder.setInsertionPoint(buffer.alloc);
      Location loc = buffer.alloc.getLoc();
      Value shift = arith::ConstantIndexOp::create(builder, loc, buffer.offset);
      Value view = memref::ViewOp::create(builder, loc, buffer.alloc.getType(),
                                          workspace, shift,
                                          buffer.alloc.getDynamicSizes());
      buffer.alloc.replaceAllUsesWith(view);
      buffer.alloc.erase();
    }
    func->setAttr(kWorkspaceSizeAttr,
                  IntegerAttr::get(IntegerType::get(ctx, 64), total));
  }
};

} // namespace
} // namespace kiln::codegen
