//===- ReduceRows.cpp - One block per row of a long reduction -------------===//
//
// The general mapping gives each output element of a reduction one thread,
// which reduces serially: a classifier's Softmax over 1000 classes at batch
// 1 is one thread summing 1000 values. This pass makes such a reduction a
// launch of one block of 256 threads per output element: each thread
// combines a strided share of the reduced elements, then the block combines
// the 256 partial values through shared memory in a tree (eight steps, a
// barrier after each), and thread 0 combines the result with the output's
// initial value.
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

/// A reduction this pass maps: its loops by kind, and the op of its body
/// that combines the accumulator with the value of one element.
struct Reduction {
  SmallVector<unsigned> parallel, reduced;
  SmallVector<int64_t> ranges;
  Operation *combiner = nullptr;
  unsigned accOperand = 0; // which operand of the combiner is the accumulator
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
    int64_t rows = 1, length = 1;
    for (unsigned d : r.parallel)
      rows *= r.ranges[d];
    for (unsigned d : r.reduced)
      length *= r.ranges[d];
    if (length < minLength || rows > maxRows)
      return std::nullopt;
    // The output is indexed by parallel loops only.
    for (AffineExpr e : op.getMatchingIndexingMap(init).getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim || llvm::is_contained(r.reduced, dim.getPosition()))
        return std::nullopt;
    }
    for (OpOperand *input : op.getDpsInputOperands()) {
      if (!isa<MemRefType>(input->get().getType()))
        return std::nullopt;
      for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
        if (!isa<AffineDimExpr, AffineConstantExpr>(e))
          return std::nullopt;
    }
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

  void rewrite(linalg::LinalgOp op, const Reduction &r) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Builder ib{b, loc};
    int64_t rows = 1, length = 1;
    for (unsigned d : r.parallel)
      rows *= r.ranges[d];
    for (unsigned d : r.reduced)
      length *= r.ranges[d];
    Type f32 = b.getF32Type();
    auto shared = MemRefType::get(
        {kThreads}, f32, MemRefLayoutAttrInterface(),
        mlir::gpu::AddressSpaceAttr::get(b.getContext(),
                                         mlir::gpu::AddressSpace::Workgroup));
    Value one = ib.c(1);
    auto launch = mlir::gpu::LaunchOp::create(
        b, loc, ib.c(rows), one, one, ib.c(kThreads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, TypeRange{shared});
    launch->setAttr(
        kKernelAttr,
        KernelAttr::get(b.getContext(),
                        int64_t(countFlops(op).value_or(rows * length)),
                        sourceNodes(op.getLoc())));
    Value partials = launch.getWorkgroupAttributions()[0];
    Block &block = launch.getBody().front();
    b.setInsertionPointToStart(&block);
    mlir::gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&block);

    Value tid = launch.getThreadIds().x;
    SmallVector<Value> ivs(r.ranges.size());
    if (!r.parallel.empty())
      ib.delinearize(launch.getBlockIds().x, r.parallel, r.ranges, ivs);
    Value identity = arith::ConstantOp::create(
        b, loc, identityOf(r.combiner, cast<FloatType>(f32)));

    // This thread's share: elements tid, tid + 256, ...
    auto loop = scf::ForOp::create(b, loc, tid, ib.c(length), ib.c(kThreads),
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
    memref::StoreOp::create(b, loc, loop.getResult(0), partials, tid);
    mlir::gpu::BarrierOp::create(b, loc);
    // The tree: half the threads combine two partial values, then half of
    // those, down to one.
    for (int64_t stride = kThreads / 2; stride >= 1; stride /= 2) {
      auto active = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                ib.c(stride)),
          /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&active.getThenRegion().front());
        Value mine = memref::LoadOp::create(b, loc, partials, tid);
        Value other = memref::LoadOp::create(
            b, loc, partials,
            arith::AddIOp::create(b, loc, tid, ib.c(stride)).getResult());
        memref::StoreOp::create(
            b, loc, combine(b, loc, r.combiner, mine, other), partials, tid);
      }
      mlir::gpu::BarrierOp::create(b, loc);
    }
    auto first = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, ib.c(0)),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(&first.getThenRegion().front());
    OpOperand *init = op.getDpsInitOperand(0);
    SmallVector<Value> indices;
    for (AffineExpr e : op.getMatchingIndexingMap(init).getResults())
      indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    Value old = memref::LoadOp::create(b, loc, init->get(), indices);
    Value total = memref::LoadOp::create(b, loc, partials, ib.c(0));
    Value result = r.accOperand == 0 ? combine(b, loc, r.combiner, old, total)
                                     : combine(b, loc, r.combiner, total, old);
    memref::StoreOp::create(b, loc, result, init->get(), indices);
    op->erase();
  }
};

} // namespace
} // namespace kiln::gpu
