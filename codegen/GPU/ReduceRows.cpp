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

/// A reduction this pass maps: its loops by kind, and the op of its body
/// that combines the accumulator with the value of one element.
struct Reduction {
  SmallVector<unsigned> parallel, reduced;
  SmallVector<int64_t> ranges;
  int64_t rows = 1, length = 1; // output elements, elements reduced into each
  Operation *combiner = nullptr;
  unsigned accOperand = 0; // which operand of the combiner is the accumulator
  bool wholeBlock = true;  // a block per output element, else a warp
};

/// The identity of `combiner`'s operation, or null when it has none here.
TypedAttr identityOf(Operation *combiner, FloatType type) {
  const llvm::fltSemantics &sem = type.getFloatSemantics();
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
    for (linalg::LinalgOp op : topLevelLinalgOps(getOperation()))
      if (std::optional<Reduction> reduction = match(op))
        rewrite(op, *reduction);
  }

  std::optional<Reduction> match(linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
        op.getNumReductionLoops() == 0 || op->getNumRegions() != 1)
      return std::nullopt;
    OpOperand *init = op.getDpsInitOperand(0);
    auto initType = dyn_cast<MemRefType>(init->get().getType());
    if (!initType || !initType.getElementType().isF32())
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
    // The output is indexed by parallel loops only.
    for (AffineExpr e : op.getMatchingIndexingMap(init).getResults()) {
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
    // The body: yield(combine(acc, h(inputs))), the accumulator used by the
    // combiner alone.
    Block *body = op.getBlock();
    BlockArgument acc = op.getMatchingBlockArgument(init);
    Value yielded = body->getTerminator()->getOperand(0);
    Operation *combiner = yielded.getDefiningOp();
    if (!combiner || combiner->getBlock() != body ||
        combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
        !identityOf(combiner, cast<FloatType>(acc.getType())))
      return std::nullopt;
    for (unsigned i = 0; i < 2; ++i)
      if (combiner->getOperand(i) == acc &&
          !dependsOn(combiner->getOperand(1 - i), acc)) {
        r.combiner = combiner;
        r.accOperand = i;
        return r;
      }
    return std::nullopt;
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

  /// `value` combined across the 32 lanes of each warp: a butterfly of
  /// five shuffles, after which every lane holds the warp's result. Every
  /// thread of the block runs it (the emulator requires so).
  Value combineWarp(OpBuilder &b, Location loc, Operation *combiner,
                    Value value) {
    for (int32_t offset = kWarp / 2; offset >= 1; offset /= 2) {
      Value other = mlir::gpu::ShuffleOp::create(b, loc, value, offset, kWarp,
                                                 mlir::gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      value = combine(b, loc, combiner, value, other);
    }
    return value;
  }

  void rewrite(linalg::LinalgOp op, const Reduction &r) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Builder ib{b, loc};
    int64_t rows = r.rows, length = r.length;
    // The threads that reduce one output element: a block, or a warp (the
    // block's eight warps on eight consecutive elements).
    bool wholeBlock = r.wholeBlock;
    int64_t group = wholeBlock ? kThreads : kWarp;
    int64_t perBlock = kThreads / group;
    Type f32 = b.getF32Type();
    SmallVector<Type> sharedTypes;
    if (wholeBlock)
      sharedTypes.push_back(MemRefType::get(
          {kThreads / kWarp}, f32, MemRefLayoutAttrInterface(),
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
    Value identity = arith::ConstantOp::create(
        b, loc, identityOf(r.combiner, cast<FloatType>(f32)));

    // This thread's share: elements lane, lane + group, ...
    auto loop = scf::ForOp::create(b, loc, lane, upper, ib.c(group),
                                   ValueRange{identity});
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
        if (&nested == r.combiner)
          continue;
        if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
          mapping.map(index.getResult(), at[index.getDim()]);
          continue;
        }
        b.clone(nested, mapping);
      }
      Value element =
          mapping.lookupOrDefault(r.combiner->getOperand(1 - r.accOperand));
      scf::YieldOp::create(
          b, loc,
          combine(b, loc, r.combiner, loop.getRegionIterArgs()[0], element));
    }
    Value total = combineWarp(b, loc, r.combiner, loop.getResult(0));
    Value writer = lane;
    if (wholeBlock) {
      // Each warp's result through shared memory, then every warp combines
      // the eight (only thread 0's result is written).
      Value partials = launch.getWorkgroupAttributions()[0];
      Value warpLane = arith::RemUIOp::create(b, loc, tid, ib.c(kWarp));
      auto first = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warpLane,
                                ib.c(0)),
          /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&first.getThenRegion().front());
        memref::StoreOp::create(
            b, loc, total, partials,
            arith::DivUIOp::create(b, loc, tid, ib.c(kWarp)).getResult());
      }
      mlir::gpu::BarrierOp::create(b, loc);
      int64_t warps = kThreads / kWarp;
      Value mine = memref::LoadOp::create(
          b, loc, partials,
          arith::RemUIOp::create(b, loc, warpLane, ib.c(warps)).getResult());
      Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            warpLane, ib.c(warps));
      total =
          combineWarp(b, loc, r.combiner,
                      arith::SelectOp::create(b, loc, inRange, mine, identity));
      writer = tid;
    }
    Value isWriter = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           writer, ib.c(0));
    if (valid)
      isWriter = arith::AndIOp::create(b, loc, isWriter, valid);
    auto write = scf::IfOp::create(b, loc, isWriter, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&write.getThenRegion().front());
    OpOperand *init = op.getDpsInitOperand(0);
    SmallVector<Value> indices;
    for (AffineExpr e : op.getMatchingIndexingMap(init).getResults())
      indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    Value old = memref::LoadOp::create(b, loc, init->get(), indices);
    Value result = r.accOperand == 0 ? combine(b, loc, r.combiner, old, total)
                                     : combine(b, loc, r.combiner, total, old);
    memref::StoreOp::create(b, loc, result, init->get(), indices);
    op->erase();
  }
};

} // namespace
} // namespace kiln::gpu
