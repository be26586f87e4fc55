//===- ReduceRows.cpp - One block per row of a long reduction -------------===//
//
// The general mapping gives each output element of a reduction one thread,
// which reduces serially: a classifier's Softmax over 1000 classes at batch
// 1 is one thread summing 1000 values, a global average pool one thread per
// channel. This pass makes such a reduction a launch of one block of 256
// threads per output element (long rows, few of them) or one warp per
// output element (rows of 32 or more): each thread combines a strided share
// of the row, each warp combines its lanes' shares with shuffles, and a
// block combines its eight warps' values through shared memory after one
// barrier.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Buffers.h"
#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUREDUCEROWS
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

constexpr int64_t kThreads = 256;
constexpr int32_t kWarp = 32;

/// One output of a reduction: the op of the body that combines its
/// accumulator with the value of one element.
struct Combiner {
  Operation *op = nullptr;
  unsigned accOperand = 0; // which operand of `op` is the accumulator
};

/// A reduction this pass maps: its loops by kind, and each output's
/// combiner.
struct Reduction {
  SmallVector<unsigned> parallel, reduced;
  SmallVector<int64_t> ranges;
  int64_t rows = 1, length = 1; // output elements, elements reduced into each
  SmallVector<Combiner> combiners; // one per output
  bool wholeBlock = true;          // a block per output element, else a warp
};

/// The identity of `combiner`'s operation on `type` (f32, or an integer of
/// at most 64 bits), or null when it has none here.
TypedAttr identityOf(Operation *combiner, Type type) {
  if (auto floatType = dyn_cast<FloatType>(type)) {
    if (!floatType.isF32())
      return {};
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    if (isa<arith::AddFOp>(combiner))
      return FloatAttr::get(type, APFloat::getZero(sem));
    if (isa<arith::MulFOp>(combiner))
      return FloatAttr::get(type, APFloat::getOne(sem));
    if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      return FloatAttr::get(type, APFloat::getInf(sem, /*Negative=*/true));
    if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      return FloatAttr::get(type, APFloat::getInf(sem, /*Negative=*/false));
    return {};
  }
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType || intType.getWidth() > 64)
    return {};
  unsigned width = intType.getWidth();
  if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>(combiner))
    return IntegerAttr::get(type, APInt::getZero(width));
  if (isa<arith::MulIOp>(combiner))
    return IntegerAttr::get(type, APInt(width, 1));
  if (isa<arith::AndIOp, arith::MinUIOp>(combiner))
    return IntegerAttr::get(type, APInt::getAllOnes(width));
  if (isa<arith::MaxSIOp>(combiner))
    return IntegerAttr::get(type, APInt::getSignedMinValue(width));
  if (isa<arith::MinSIOp>(combiner))
    return IntegerAttr::get(type, APInt::getSignedMaxValue(width));
  return {};
}

/// Whether `value` depends on `arg` within the body.
bool dependsOn(Value value, Value arg) {
  if (value == arg)
    return true;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value operand) { return dependsOn(operand, arg); });
}

struct Builder {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  void delinearize(Value linear, ArrayRef<unsigned> dims,
                   ArrayRef<int64_t> ranges, SmallVectorImpl<Value> &values) {
    kiln::gpu::delinearize(b, loc, linear, dims, ranges, values);
  }
};

struct GPUReduceRowsPass : impl::GPUReduceRowsBase<GPUReduceRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    // A rewrite erases the fills just before its op, which this list holds
    // earlier on (and which match nothing).
    llvm::SmallPtrSet<Operation *, 8> erased;
    for (linalg::LinalgOp op : topLevelLinalgOps(getOperation()))
      if (!erased.contains(op))
        if (std::optional<Reduction> reduction = match(op))
          rewrite(op, *reduction, erased);
  }

  /// For each output of `op`, the linalg.fill that gives its buffer the
  /// combiner's identity just before `op` (with only ops that touch no
  /// memory, views and constants, or other such fills in between), or
  /// null: the reduction's result is then the output, not combined with
  /// what the buffer held.
  SmallVector<Operation *> identityFills(linalg::LinalgOp op,
                                         const Reduction &r) {
    SmallVector<Operation *> fills(r.combiners.size(), nullptr);
    // Only the nearest fill of a buffer decides what it holds.
    SmallVector<bool> seen(r.combiners.size(), false);
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      auto fill = dyn_cast<linalg::FillOp>(prev);
      if (!fill) {
        if (isMemoryEffectFree(prev) && prev->getNumRegions() == 0)
          continue;
        break;
      }
      if (!fill.hasPureBufferSemantics())
        break;
      Value buffer = fill.getDpsInitOperand(0)->get();
      if (llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *input) {
            return input->get() == buffer;
          }))
        break;
      auto constant = fill.value().getDefiningOp<arith::ConstantOp>();
      bool found = false;
      for (auto [k, c] : llvm::enumerate(r.combiners)) {
        if (op.getDpsInitOperand(k)->get() != buffer)
          continue;
        found = true;
        if (constant && !seen[k] &&
            constant.getValue() == identityOf(c.op, constant.getType()))
          fills[k] = fill;
        seen[k] = true;
      }
      // A fill of another buffer that the op reads would be read after.
      if (!found)
        break;
    }
    return fills;
  }

  std::optional<Reduction> match(linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() == 0 ||
        op.getNumReductionLoops() == 0 || op->getNumRegions() != 1)
      return std::nullopt;
    Reduction r;
    r.ranges = op.getStaticLoopRanges();
    if (llvm::any_of(r.ranges,
                     [](int64_t n) { return ShapedType::isDynamic(n); }))
      return std::nullopt;
    for (auto [i, kind] : llvm::enumerate(op.getIteratorTypesArray()))
      (kind == utils::IteratorType::reduction ? r.reduced : r.parallel)
          .push_back(i);
    for (unsigned d : r.parallel)
      r.rows *= r.ranges[d];
    for (unsigned d : r.reduced)
      r.length *= r.ranges[d];
    int64_t rows = r.rows, length = r.length;
    if (length < minWarpLength)
      return std::nullopt;
    // The outputs are indexed by parallel loops only.
    for (OpOperand &init : op.getDpsInitsMutable())
      for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        if (!dim || llvm::is_contained(r.reduced, dim.getPosition()))
          return std::nullopt;
      }
    // Whether consecutive elements of a row lie next to one another in some
    // input (its innermost dimension is the innermost reduced loop) and in
    // no input apart.
    bool alongRows = false, acrossRows = false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()))
        return std::nullopt;
      ArrayRef<AffineExpr> results =
          op.getMatchingIndexingMap(input).getResults();
      for (AffineExpr e : results)
        if (!isa<AffineDimExpr, AffineConstantExpr>(e))
          return std::nullopt;
      if (auto last = dyn_cast_if_present<AffineDimExpr>(
              results.empty() ? AffineExpr() : results.back())) {
        alongRows |= last.getPosition() == r.reduced.back();
        acrossRows |= last.getPosition() != r.reduced.back() &&
                      llvm::is_contained(r.reduced, last.getPosition());
      }
    }
    // A block per output element for long rows, while there are few enough
    // of them; else a warp per element where that reads along the rows (a
    // thread per element reads across them, neighbouring threads on
    // neighbouring elements, which is as coalesced).
    r.wholeBlock = length >= minLength && rows <= maxRows;
    if (!r.wholeBlock && (!alongRows || acrossRows))
      return std::nullopt;
    // The body: yield(combine_k(acc_k, h_k(inputs)), ...), each
    // accumulator used by its combiner alone, and no element's value
    // depending on an accumulator.
    Block *body = op.getBlock();
    for (OpOperand &init : op.getDpsInitsMutable()) {
      BlockArgument acc = op.getMatchingBlockArgument(&init);
      Value yielded = body->getTerminator()->getOperand(
          init.getOperandNumber() - op.getNumDpsInputs());
      Operation *combiner = yielded.getDefiningOp();
      if (!combiner || combiner->getBlock() != body ||
          combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
          !identityOf(combiner, acc.getType()))
        return std::nullopt;
      unsigned accOperand = combiner->getOperand(0) == acc ? 0 : 1;
      if (combiner->getOperand(accOperand) != acc)
        return std::nullopt;
      r.combiners.push_back({combiner, accOperand});
    }
    for (const Combiner &c : r.combiners)
      for (OpOperand &init : op.getDpsInitsMutable())
        if (dependsOn(c.op->getOperand(1 - c.accOperand),
                      op.getMatchingBlockArgument(&init)))
          return std::nullopt;
    return r;
  }

  /// `combiner` applied to `x` and `y`.
  Value combine(OpBuilder &b, Location loc, Operation *combiner, Value x,
                Value y) {
    OperationState state(loc, combiner->getName());
    state.addOperands({x, y});
    state.addTypes(x.getType());
    state.addAttributes(combiner->getAttrs());
    return b.create(state)->getResult(0);
  }

  /// The value of lane `lane ^ offset` for each lane: a 32-bit shuffle, or
  /// two for a 64-bit integer (its halves), one for a narrower one
  /// (extended), which both the NVVM lowering and the emulator take.
  Value shuffleXor(OpBuilder &b, Location loc, Value value, int32_t offset) {
    auto shuffle = [&](Value v) {
      return mlir::gpu::ShuffleOp::create(b, loc, v, offset, kWarp,
                                          mlir::gpu::ShuffleMode::XOR)
          .getShuffleResult();
    };
    Type type = value.getType();
    auto intType = dyn_cast<IntegerType>(type);
    if (!intType || intType.getWidth() == 32)
      return shuffle(value);
    Type i32 = b.getI32Type();
    if (intType.getWidth() < 32)
      return arith::TruncIOp::create(
          b, loc, type, shuffle(arith::ExtUIOp::create(b, loc, i32, value)));
    Value shift = arith::ConstantIntOp::create(b, loc, type, 32);
    Value low = shuffle(arith::TruncIOp::create(b, loc, i32, value));
    Value high = shuffle(arith::TruncIOp::create(
        b, loc, i32, arith::ShRUIOp::create(b, loc, value, shift)));
    return arith::OrIOp::create(
        b, loc,
        arith::ShLIOp::create(
            b, loc, arith::ExtUIOp::create(b, loc, type, high), shift),
        arith::ExtUIOp::create(b, loc, type, low));
  }

  /// `value` combined across the 32 lanes of each warp: a butterfly of
  /// five shuffles, after which every lane holds the warp's result. Every
  /// thread of the block runs it (the emulator requires so).
  Value combineWarp(OpBuilder &b, Location loc, Operation *combiner,
                    Value value) {
    for (int32_t offset = kWarp / 2; offset >= 1; offset /= 2)
      value =
          combine(b, loc, combiner, value, shuffleXor(b, loc, value, offset));
    return value;
  }

  void rewrite(linalg::LinalgOp op, const Reduction &r,
               llvm::SmallPtrSetImpl<Operation *> &erased) {
    SmallVector<Operation *> fills = identityFills(op, r);
    OpBuilder b(op);
    Location loc = op.getLoc();
    Builder ib{b, loc};
    int64_t rows = r.rows, length = r.length;
    // The threads that reduce one output element: a block, or a warp (the
    // block's eight warps on eight consecutive elements).
    bool wholeBlock = r.wholeBlock;
    int64_t group = wholeBlock ? kThreads : kWarp;
    int64_t perBlock = kThreads / group;
    // The outputs' element types, and a slot per warp for each in shared
    // memory.
    SmallVector<Type> types;
    for (OpOperand &init : op.getDpsInitsMutable())
      types.push_back(getElementTypeOrSelf(init.get().getType()));
    SmallVector<Type> sharedTypes;
    if (wholeBlock)
      for (Type type : types)
        sharedTypes.push_back(MemRefType::get(
            {kThreads / kWarp}, type, MemRefLayoutAttrInterface(),
            mlir::gpu::AddressSpaceAttr::get(
                b.getContext(), mlir::gpu::AddressSpace::Workgroup)));
    Value one = ib.c(1);
    auto launch = mlir::gpu::LaunchOp::create(
        b, loc, ib.c(llvm::divideCeil(rows, perBlock)), one, one,
        ib.c(kThreads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, sharedTypes);
    launch->setAttr(
        kKernelAttr,
        KernelAttr::get(b.getContext(),
                        int64_t(countFlops(op).value_or(rows * length)),
                        sourceNodes(op.getLoc())));
    Block &block = launch.getBody().front();
    b.setInsertionPointToStart(&block);
    mlir::gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&block);

    Value tid = launch.getThreadIds().x;
    Value bid = launch.getBlockIds().x;
    Value row = bid, lane = tid;
    if (!wholeBlock) {
      row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, bid, ib.c(perBlock)),
          arith::DivUIOp::create(b, loc, tid, ib.c(kWarp)));
      lane = arith::RemUIOp::create(b, loc, tid, ib.c(kWarp));
    }
    // A warp past the last row reduces nothing but still takes part in the
    // shuffles.
    Value valid, upper = ib.c(length);
    if (rows % perBlock != 0) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                    ib.c(rows));
      upper = arith::SelectOp::create(b, loc, valid, upper, ib.c(0));
    }
    SmallVector<Value> ivs(r.ranges.size());
    if (!r.parallel.empty())
      ib.delinearize(row, r.parallel, r.ranges, ivs);
    SmallVector<Value> identities;
    for (auto [c, type] : llvm::zip_equal(r.combiners, types))
      identities.push_back(
          arith::ConstantOp::create(b, loc, identityOf(c.op, type)));

    // This thread's share: elements lane, lane + group, ...
    auto loop =
        scf::ForOp::create(b, loc, lane, upper, ib.c(group), identities);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> at(ivs);
      ib.delinearize(loop.getInductionVar(), r.reduced, r.ranges, at);
      IRMapping mapping;
      for (OpOperand *input : op.getDpsInputOperands()) {
        SmallVector<Value> indices;
        for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
          indices.push_back(isa<AffineDimExpr>(e)
                                ? at[cast<AffineDimExpr>(e).getPosition()]
                                : ib.c(cast<AffineConstantExpr>(e).getValue()));
        mapping.map(op.getMatchingBlockArgument(input),
                    memref::LoadOp::create(b, loc, input->get(), indices));
      }
      // linalg.index, where the body asks for a loop index.
      for (Operation &nested : op.getBlock()->without_terminator()) {
        if (llvm::any_of(r.combiners,
                         [&](const Combiner &c) { return c.op == &nested; }))
          continue;
        if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
          mapping.map(index.getResult(), at[index.getDim()]);
          continue;
        }
        b.clone(nested, mapping);
      }
      SmallVector<Value> next;
      for (auto [k, c] : llvm::enumerate(r.combiners)) {
        Value element =
            mapping.lookupOrDefault(c.op->getOperand(1 - c.accOperand));
        next.push_back(
            combine(b, loc, c.op, loop.getRegionIterArgs()[k], element));
      }
      scf::YieldOp::create(b, loc, next);
    }
    SmallVector<Value> totals;
    for (auto [k, c] : llvm::enumerate(r.combiners))
      totals.push_back(combineWarp(b, loc, c.op, loop.getResult(k)));
    Value writer = lane;
    if (wholeBlock) {
      // Each warp's results through shared memory, then every warp combines
      // the eight (only thread 0's result is written).
      Value warpLane = arith::RemUIOp::create(b, loc, tid, ib.c(kWarp));
      auto first = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warpLane,
                                ib.c(0)),
          /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&first.getThenRegion().front());
        Value warp = arith::DivUIOp::create(b, loc, tid, ib.c(kWarp));
        for (auto [k, total] : llvm::enumerate(totals))
          memref::StoreOp::create(b, loc, total,
                                  launch.getWorkgroupAttributions()[k], warp);
      }
      mlir::gpu::BarrierOp::create(b, loc);
      int64_t warps = kThreads / kWarp;
      Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            warpLane, ib.c(warps));
      Value slot = arith::RemUIOp::create(b, loc, warpLane, ib.c(warps));
      for (auto [k, c] : llvm::enumerate(r.combiners)) {
        Value mine = memref::LoadOp::create(
            b, loc, launch.getWorkgroupAttributions()[k], slot);
        totals[k] = combineWarp(
            b, loc, c.op,
            arith::SelectOp::create(b, loc, inRange, mine, identities[k]));
      }
      writer = tid;
    }
    Value isWriter = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           writer, ib.c(0));
    if (valid)
      isWriter = arith::AndIOp::create(b, loc, isWriter, valid);
    auto write = scf::IfOp::create(b, loc, isWriter, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&write.getThenRegion().front());
    for (auto [k, c] : llvm::enumerate(r.combiners)) {
      OpOperand *init = op.getDpsInitOperand(k);
      SmallVector<Value> indices;
      for (AffineExpr e : op.getMatchingIndexingMap(init).getResults())
        indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
      Value result = totals[k];
      if (!fills[k]) {
        Value old = memref::LoadOp::create(b, loc, init->get(), indices);
        result = c.accOperand == 0 ? combine(b, loc, c.op, old, totals[k])
                                   : combine(b, loc, c.op, totals[k], old);
      }
      memref::StoreOp::create(b, loc, result, init->get(), indices);
    }
    for (Operation *fill : fills)
      if (fill && erased.insert(fill).second)
        fill->erase();
    op->erase();
  }
};

} // namespace
} // namespace kiln::gpu
