//===- TileSymbolicRows.cpp - Static blocks of run-time loops -------------===//
//
// kiln-cpu-tile-symbolic-rows (Passes.td): a contraction's run-time parallel
// loop runs in blocks of static size, each block a static op that the
// register blocks and vector code after this pass take; the iterations left
// after the last whole block run in smaller blocks, down to single ones. A
// block with a second run-time parallel loop (attention's scores) is tiled
// again in the next round. Each block is the op's TilingInterface tile at
// static sizes; the loops' bounds are computed up front (upstream's tiling
// and then loop peeling left the second level's blocks of run-time size:
// peeling proves the outer loop's iterations full, not those of a loop
// inside its last one).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUTILESYMBOLICROWS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The loops of `op` whose sizes are known at run time only, parallel ones
/// first, where every `?` of the operands is indexed by one of them alone;
/// empty otherwise.
SmallVector<unsigned> symbolicLoops(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> loops;
  for (bool parallel : {true, false})
    for (auto [i, size] : llvm::enumerate(ranges))
      if (ShapedType::isDynamic(size) &&
          (iterators[i] == utils::IteratorType::parallel) == parallel)
        loops.push_back(i);
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      auto dim = dyn_cast<AffineDimExpr>(map.getResult(d));
      if (!dim || !llvm::is_contained(loops, dim.getPosition()))
        return {};
    }
  }
  return loops;
}

/// Iterations [lower, upper) of `op`'s loop `loop`, `size` at a time
/// (upper - lower is a multiple of `size`), each block an op whose loop is
/// static: an scf.for whose iteration computes one block (TilingInterface)
/// into the destinations it carries; `domain` is `op`'s loop sizes (the
/// other run-time loops stay whole). Returns the loop's results.
FailureOr<SmallVector<Value>> tileRange(RewriterBase &rewriter,
                                        linalg::LinalgOp op, unsigned loop,
                                        Value lower, Value upper, int64_t size,
                                        ValueRange destinations,
                                        ArrayRef<Range> domain) {
  Location loc = op.getLoc();
  Value step = arith::ConstantIndexOp::create(rewriter, loc, size);
  bool failedTile = false;
  auto forOp = scf::ForOp::create(
      rewriter, loc, lower, upper, step, destinations,
      [&](OpBuilder &b, Location nloc, Value row, ValueRange carried) {
        // The op on the carried destinations, tiled, then dropped.
        IRMapping mapping;
        for (auto [init, dest] : llvm::zip_equal(op.getDpsInits(), carried))
          mapping.map(init, dest);
        auto clone = cast<TilingInterface>(b.clone(*op, mapping));
        SmallVector<OpFoldResult> offsets, sizes;
        for (auto [i, range] : llvm::enumerate(domain)) {
          offsets.push_back(i == loop ? OpFoldResult(row) : b.getIndexAttr(0));
          sizes.push_back(i == loop ? b.getIndexAttr(size) : range.size);
        }
        FailureOr<TilingResult> tiled =
            clone.getTiledImplementation(b, offsets, sizes);
        SmallVector<Value> yielded;
        if (failed(tiled)) {
          failedTile = true;
          yielded.assign(carried.begin(), carried.end());
        } else {
          for (auto [i, value] : llvm::enumerate(tiled->tiledValues)) {
            SmallVector<OpFoldResult> resultOffsets, resultSizes;
            if (failed(clone.getResultTilePosition(
                    b, i, offsets, sizes, resultOffsets, resultSizes))) {
              failedTile = true;
              yielded.push_back(carried[i]);
              continue;
            }
            SmallVector<OpFoldResult> strides(resultOffsets.size(),
                                              b.getIndexAttr(1));
            yielded.push_back(tensor::InsertSliceOp::create(
                b, nloc, value, carried[i], resultOffsets, resultSizes,
                strides));
          }
        }
        rewriter.eraseOp(clone);
        scf::YieldOp::create(b, nloc, yielded);
      });
  if (failedTile) {
    rewriter.eraseOp(forOp);
    return failure();
  }
  return SmallVector<Value>(forOp.getResults());
}

/// `op` over its run-time loop `loop` as loops of static blocks: as many
/// blocks of blocks[0] iterations as fit, then of blocks[1] in what is
/// left, and so on, the last size 1 (the bounds computed up front, so that
/// every block's loop is static); a reduction's blocks accumulate into the
/// same result. Returns `op`'s replacement, or failure, leaving `op` as it
/// was.
/// Marks the remainder of a second run-time loop (tileLoop), which the
/// next round leaves as it is.
constexpr llvm::StringLiteral kRemainder = "kiln.symbolic_remainder";

FailureOr<SmallVector<Value>> tileLoop(RewriterBase &rewriter,
                                       linalg::LinalgOp op, unsigned loop,
                                       ArrayRef<int64_t> blocks,
                                       bool remainderWhole) {
  Location loc = op.getLoc();
  // A second run-time loop's last iterations (fewer than the smallest block
  // but 1) stay one op of a run-time size, on the loop path: single
  // columns became matrix-vector products whose column operand is a
  // strided view, copied to a buffer allocated in the loop.
  SmallVector<int64_t> levels(blocks);
  if (remainderWhole && levels.size() > 1 && levels.back() == 1)
    levels.pop_back();
  else
    remainderWhole = false;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(op);
  SmallVector<Range> domain =
      cast<TilingInterface>(op.getOperation()).getIterationDomain(rewriter);
  Value rows =
      getValueOrCreateConstantIndexOp(rewriter, loc, domain[loop].size);
  Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> destinations(op.getDpsInits());
  for (auto [level, size] : llvm::enumerate(levels)) {
    Value upper = rows;
    if (level + 1 < levels.size() || remainderWhole) {
      // lower + ((rows - lower) floordiv size) * size
      AffineExpr l, r;
      bindSymbols(rewriter.getContext(), l, r);
      upper = affine::AffineApplyOp::create(
          rewriter, loc,
          AffineMap::get(0, 2, l + (r - l).floorDiv(size) * size),
          ValueRange{lower, rows});
    }
    FailureOr<SmallVector<Value>> results =
        tileRange(rewriter, op, loop, lower, upper, size, destinations, domain);
    if (failed(results))
      return failure(); // the loops made so far compute nothing used
    destinations = *results;
    lower = upper;
  }
  if (remainderWhole) {
    // The rest, [lower, rows), as one tile.
    IRMapping mapping;
    for (auto [init, dest] : llvm::zip_equal(op.getDpsInits(), destinations))
      mapping.map(init, dest);
    auto clone = cast<TilingInterface>(rewriter.clone(*op, mapping));
    SmallVector<OpFoldResult> offsets, sizes;
    for (auto [i, range] : llvm::enumerate(domain)) {
      offsets.push_back(i == loop ? OpFoldResult(lower)
                                  : rewriter.getIndexAttr(0));
      sizes.push_back(i == loop ? OpFoldResult(arith::SubIOp::create(
                                                   rewriter, loc, rows, lower)
                                                   .getResult())
                                : range.size);
    }
    FailureOr<TilingResult> tiled =
        clone.getTiledImplementation(rewriter, offsets, sizes);
    SmallVector<Value> results;
    for (auto [i, value] : llvm::enumerate(
             succeeded(tiled) ? tiled->tiledValues : SmallVector<Value>())) {
      SmallVector<OpFoldResult> resultOffsets, resultSizes;
      if (failed(clone.getResultTilePosition(rewriter, i, offsets, sizes,
                                             resultOffsets, resultSizes)))
        break;
      SmallVector<OpFoldResult> strides(resultOffsets.size(),
                                        rewriter.getIndexAttr(1));
      results.push_back(
          tensor::InsertSliceOp::create(rewriter, loc, value, destinations[i],
                                        resultOffsets, resultSizes, strides));
    }
    rewriter.eraseOp(clone);
    if (results.size() != destinations.size())
      return failure();
    for (Operation *tiledOp : tiled->tiledOps)
      tiledOp->setAttr(kRemainder, rewriter.getUnitAttr());
    destinations = results;
  }
  rewriter.replaceOp(op, destinations);
  return destinations;
}

struct CPUTileSymbolicRowsPass
    : impl::CPUTileSymbolicRowsBase<CPUTileSymbolicRowsPass> {
  using CPUTileSymbolicRowsBase::CPUTileSymbolicRowsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<int64_t> sizes(blocks.begin(), blocks.end());
    if (sizes.empty() || llvm::any_of(sizes, [](int64_t s) { return s < 1; }))
      return;
    // The last level takes whatever is left: single rows.
    if (sizes.back() != 1)
      sizes.push_back(1);
    // One run-time loop per round, the outermost first: the blocks of a
    // product with two (attention's scores: rows and columns; its context:
    // rows and the reduction) are tiled again in the next round.
    for (int round = 0; round < 3; ++round) {
      SmallVector<std::pair<linalg::LinalgOp, unsigned>> work;
      func.walk([&](linalg::LinalgOp op) {
        // Contractions only: the loop path runs elementwise ops and row
        // reductions in loops whose inner, static bounds LLVM vectorises,
        // and each tiled op costs the bufferization's analysis dearly (a
        // loop of blocks and one of rows per op; every op of a small
        // two-layer encoder so took 35 s to bufferize).
        if (!op.hasPureTensorSemantics() ||
            !isa<TilingInterface>(op.getOperation()) ||
            !linalg::isaContractionOpInterface(op))
          return;
        SmallVector<unsigned> loops = symbolicLoops(op);
        if (!loops.empty() && !op->hasAttr(kRemainder) &&
            op.getIteratorTypesArray()[loops.front()] ==
                utils::IteratorType::parallel)
          work.emplace_back(op, loops.front());
      });
      if (work.empty())
        break;
      IRRewriter rewriter(&getContext());
      for (auto [op, loop] : work)
        (void)tileLoop(rewriter, op, loop, sizes, /*remainderWhole=*/round > 0);
      // Folds what the loops left (index arithmetic, slices of slices).
      RewritePatternSet patterns(&getContext());
      for (Dialect *dialect : getContext().getLoadedDialects())
        dialect->getCanonicalizationPatterns(patterns);
      for (RegisteredOperationName name :
           getContext().getRegisteredOperations())
        name.getCanonicalizationPatterns(patterns, &getContext());
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    func.walk([](Operation *op) { op->removeAttr(kRemainder); });
  }
};

} // namespace
} // namespace kiln::cpu
