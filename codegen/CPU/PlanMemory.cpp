//===- PlanMemory.cpp - One workspace for all buffers, reused -------------===//
//
// Greedy-by-size offset assignment over live ranges, the arena planning of
// TensorFlow Lite's "greedy by size" strategy (Y. Pisarchyk, J. Lee,
// "Efficient Memory Management for Deep Neural Net Inference", 2020): place
// the largest buffers first, each at the lowest offset where it overlaps no
// buffer alive at the same time.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUPLANMEMORY
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
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

struct CPUPlanMemoryPass : impl::CPUPlanMemoryBase<CPUPlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    DenseMap<Operation *, unsigned> pos;
    for (auto [i, op] : llvm::enumerate(block))
      pos[&op] = i;

    SmallVector<Buffer> buffers;
    for (Operation &op : block) {
      auto alloc = dyn_cast<memref::AllocOp>(&op);
      if (!alloc)
        continue;
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          type.getMemorySpace() || !type.getElementType().isIntOrFloat())
        continue;
      Buffer buffer;
      buffer.alloc = alloc;
      // Each element takes whole bytes in memory: an i1 is stored in one.
      int64_t elementBytes =
          (type.getElementType().getIntOrFloatBitWidth() + 7) / 8;
      buffer.bytes =
          llvm::alignTo(type.getNumElements() * elementBytes, kAlignment);
      buffer.begin = buffer.end = pos[&op];
      if (!lastUse(alloc, block, pos, buffer.end))
        continue;
      buffers.push_back(buffer);
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
    for (Buffer &buffer : buffers) {
      builder.setInsertionPoint(buffer.alloc);
      Location loc = buffer.alloc.getLoc();
      Value shift = arith::ConstantIndexOp::create(builder, loc, buffer.offset);
      Value view = memref::ViewOp::create(builder, loc, buffer.alloc.getType(),
                                          workspace, shift, ValueRange{});
      buffer.alloc.replaceAllUsesWith(view);
      buffer.alloc.erase();
    }
    func->setAttr("kiln.workspace_size",
                  IntegerAttr::get(IntegerType::get(ctx, 64), total));
  }
};

} // namespace
} // namespace kiln::cpu
