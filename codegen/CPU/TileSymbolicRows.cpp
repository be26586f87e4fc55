//===- TileSymbolicRows.cpp - Static blocks of run-time loops -------------===//
//
// kiln-cpu-tile-symbolic-rows (Passes.td): a contraction's run-time loop
// (its parallel ones first, then a reduction) runs in blocks of static
// size, each block a static op that the register blocks and vector code
// after this pass take; the iterations left after the last whole block run
// in smaller blocks, down to single ones or, where single ones would be
// matrix-vector products of strided views, one op of a run-time size. A
// block with another run-time loop (attention's scores, its context) is
// tiled again in the next round; a product's elementwise reader (bias,
// GELU, residual) is tiled with it. Each block is the op's TilingInterface
// tile at static sizes; the loops' bounds are computed up front
// (upstream's tiling and then loop peeling left the second level's blocks
// of run-time size: peeling proves the outer loop's iterations full, not
// those of a loop inside its last one).
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
#include "llvm/ADT/ScopeExit.h"

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

/// The elementwise op that is the only user of `contraction`'s result
/// (its bias, activation, residual: what kiln-codegen-fuse-elementwise
/// made one generic), reading it at the same indices over the same run-time
/// rows, directly or through an expand_shape that only adds unit
/// dimensions (`expand`: a projection's rows back in [1, seq, N]); null
/// otherwise. (tensor.dim users, which read sizes only, fold away after
/// the pass.)
linalg::GenericOp elementwiseConsumer(linalg::LinalgOp contraction,
                                      unsigned loop,
                                      tensor::ExpandShapeOp &expand) {
  auto onlyUser = [](Value value) -> Operation * {
    Operation *user = nullptr;
    for (Operation *op : value.getUsers()) {
      if (isa<tensor::DimOp>(op))
        continue;
      if (user)
        return nullptr;
      user = op;
    }
    return user;
  };
  Value result = contraction->getResult(0);
  if (contraction->getNumResults() != 1 || !onlyUser(result))
    return {};
  AffineMap resultMap =
      contraction.getIndexingMapMatchingResult(cast<OpResult>(result));
  std::optional<unsigned> row = resultMap.getResultPosition(
      getAffineDimExpr(loop, contraction.getContext()));
  if (!row)
    return {};
  Value read = result;
  expand = dyn_cast<tensor::ExpandShapeOp>(onlyUser(result));
  if (expand) {
    // Each group one dimension and unit ones.
    RankedTensorType type = expand.getResultType();
    std::optional<unsigned> expandedRow;
    for (auto [i, group] : llvm::enumerate(expand.getReassociationIndices())) {
      int64_t kept = -1;
      for (int64_t d : group)
        if (type.getDimSize(d) != 1) {
          if (kept >= 0)
            return {};
          kept = d;
        }
      if (i == *row)
        expandedRow = kept;
    }
    if (!expandedRow || !onlyUser(expand.getResult()))
      return {};
    row = expandedRow;
    read = expand.getResult();
  }
  auto consumer = dyn_cast_or_null<linalg::GenericOp>(onlyUser(read));
  if (!consumer || !consumer.hasPureTensorSemantics() ||
      consumer.getNumParallelLoops() != consumer.getNumLoops() ||
      consumer->getNumResults() != 1)
    return {};
  SmallVector<unsigned> consumerLoops = symbolicLoops(consumer);
  if (consumerLoops.size() != 1 || consumerLoops.front() != *row)
    return {};
  for (OpOperand &operand : consumer->getOpOperands())
    if ((operand.get() == read || consumer.isDpsInit(&operand)) &&
        !consumer.getMatchingIndexingMap(&operand).isIdentity())
      return {};
  return consumer;
}

/// The block of `producer`'s result (a contraction's [rows, N]) that
/// `extract` takes of it, or of its expansion `expand` (then expanded the
/// same way), computed in place of the slice; its accumulators filled in
/// the block where the product's are a fill.
LogicalResult fuseProducerBlock(RewriterBase &rewriter, OpBuilder &b,
                                linalg::LinalgOp producer,
                                tensor::ExpandShapeOp expand,
                                tensor::ExtractSliceOp extract) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(extract);
  SmallVector<OpFoldResult> offsets = extract.getMixedOffsets(),
                            sizes = extract.getMixedSizes();
  if (expand) {
    // Back to the product's dimensions: each group's one non-unit entry.
    RankedTensorType type = expand.getResultType();
    SmallVector<OpFoldResult> groupOffsets, groupSizes;
    for (ReassociationIndices group : expand.getReassociationIndices()) {
      int64_t at = group.front();
      for (int64_t d : group)
        if (type.getDimSize(d) != 1)
          at = d;
      groupOffsets.push_back(offsets[at]);
      groupSizes.push_back(sizes[at]);
    }
    offsets = groupOffsets;
    sizes = groupSizes;
  }
  FailureOr<TilingResult> block =
      cast<TilingInterface>(producer.getOperation())
          .generateResultTileValue(b, 0, offsets, sizes);
  if (failed(block))
    return failure();
  for (Operation *tiledOp : block->tiledOps)
    for (OpOperand &init :
         cast<DestinationStyleOpInterface>(tiledOp).getDpsInitsMutable()) {
      auto slice = init.get().getDefiningOp<tensor::ExtractSliceOp>();
      auto fill = slice ? slice.getSource().getDefiningOp<linalg::FillOp>()
                        : linalg::FillOp();
      if (!fill || !slice.getType().hasStaticShape())
        continue;
      // The same block of the fill's own (empty) destination, filled: a
      // view of one buffer outside the loops, not an allocation per block.
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(tiledOp);
      Value block = tensor::ExtractSliceOp::create(
          b, slice.getLoc(), slice.getType(), fill.getOutputs()[0],
          slice.getMixedOffsets(), slice.getMixedSizes(),
          slice.getMixedStrides());
      init.set(
          linalg::FillOp::create(b, fill.getLoc(), fill.getInputs()[0], block)
              .getResult(0));
    }
  Value value = block->tiledValues[0];
  auto blockType = dyn_cast<RankedTensorType>(value.getType());
  if (!blockType || !blockType.hasStaticShape())
    return failure();
  if (expand)
    value =
        tensor::ExpandShapeOp::create(b, extract.getLoc(), extract.getType(),
                                      value, expand.getReassociationIndices());
  if (value.getType() != extract.getType())
    return failure();
  rewriter.replaceOp(extract, value);
  return success();
}

/// `op` on `destinations`, tiled at `offsets` and `sizes`
/// (TilingInterface), its results inserted into them; where `producer` is
/// given, the block of its result that the tile reads is computed in the
/// tile (fuseProducerBlock). Returns the destinations with the tile's
/// results in them, and the tile's ops in `tiledOps`.
FailureOr<SmallVector<Value>>
tileInto(RewriterBase &rewriter, OpBuilder &b, Location loc,
         linalg::LinalgOp op, ValueRange destinations,
         ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
         linalg::LinalgOp producer, tensor::ExpandShapeOp expand,
         SmallVectorImpl<Operation *> *tiledOps = nullptr) {
  // The op on the destinations, tiled, then dropped.
  IRMapping mapping;
  for (auto [init, dest] : llvm::zip_equal(op.getDpsInits(), destinations))
    mapping.map(init, dest);
  auto clone = cast<TilingInterface>(b.clone(*op, mapping));
  auto dropClone = llvm::make_scope_exit([&] { rewriter.eraseOp(clone); });
  FailureOr<TilingResult> tiled =
      clone.getTiledImplementation(b, offsets, sizes);
  if (failed(tiled))
    return failure();
  if (producer) {
    Value read = expand ? Value(expand.getResult()) : producer->getResult(0);
    for (Operation *slice : tiled->generatedSlices) {
      auto extract = dyn_cast<tensor::ExtractSliceOp>(slice);
      if (extract && extract.getSource() == read &&
          failed(fuseProducerBlock(rewriter, b, producer, expand, extract)))
        return failure();
    }
  }
  SmallVector<Value> results;
  for (auto [i, value] : llvm::enumerate(tiled->tiledValues)) {
    SmallVector<OpFoldResult> resultOffsets, resultSizes;
    if (failed(clone.getResultTilePosition(b, i, offsets, sizes, resultOffsets,
                                           resultSizes)))
      return failure();
    SmallVector<OpFoldResult> strides(resultOffsets.size(), b.getIndexAttr(1));
    results.push_back(tensor::InsertSliceOp::create(
        b, loc, value, destinations[i], resultOffsets, resultSizes, strides));
  }
  if (tiledOps)
    llvm::append_range(*tiledOps, tiled->tiledOps);
  return results;
}

/// Iterations [lower, upper) of `op`'s loop `loop`, `size` at a time
/// (upper - lower is a multiple of `size`), each block an op whose loop is
/// static: an scf.for whose iteration computes one block (tileInto) into
/// the destinations it carries; `domain` is `op`'s loop sizes (the other
/// run-time loops stay whole). Returns the loop's results.
FailureOr<SmallVector<Value>>
tileRange(RewriterBase &rewriter, linalg::LinalgOp op, unsigned loop,
          Value lower, Value upper, int64_t size, ValueRange destinations,
          ArrayRef<Range> domain, linalg::LinalgOp producer,
          tensor::ExpandShapeOp expand) {
  Location loc = op.getLoc();
  Value step = arith::ConstantIndexOp::create(rewriter, loc, size);
  bool failedTile = false;
  auto forOp = scf::ForOp::create(
      rewriter, loc, lower, upper, step, destinations,
      [&](OpBuilder &b, Location nloc, Value row, ValueRange carried) {
        SmallVector<OpFoldResult> offsets, sizes;
        for (auto [i, range] : llvm::enumerate(domain)) {
          offsets.push_back(i == loop ? OpFoldResult(row) : b.getIndexAttr(0));
          sizes.push_back(i == loop ? b.getIndexAttr(size) : range.size);
        }
        FailureOr<SmallVector<Value>> yielded = tileInto(
            rewriter, b, nloc, op, carried, offsets, sizes, producer, expand);
        failedTile |= failed(yielded);
        scf::YieldOp::create(b, nloc,
                             succeeded(yielded) ? ValueRange(*yielded)
                                                : ValueRange(carried));
      });
  if (failedTile) {
    rewriter.eraseOp(forOp);
    return failure();
  }
  return SmallVector<Value>(forOp.getResults());
}

/// Marks the remainder of a second run-time loop (tileLoop), which the
/// next round leaves as it is.
constexpr llvm::StringLiteral kRemainder = "kiln.symbolic_remainder";

/// `op` over its run-time parallel loop `loop` as loops of static blocks:
/// as many blocks of blocks[0] iterations as fit, then of blocks[1] in what
/// is left, and so on, the last size 1 (the bounds computed up front, so
/// that every block's loop is static); with `remainderWhole`, the
/// iterations after the last whole block of blocks' last size above 1 are
/// one op of a run-time size instead. Returns `op`'s replacement, or
/// failure, leaving `op` as it was.

FailureOr<SmallVector<Value>> tileLoop(RewriterBase &rewriter,
                                       linalg::LinalgOp op, unsigned loop,
                                       ArrayRef<int64_t> blocks,
                                       bool remainderWhole) {
  linalg::LinalgOp producer;
  tensor::ExpandShapeOp expand;
  if (!remainderWhole)
    if (linalg::GenericOp consumer = elementwiseConsumer(op, loop, expand)) {
      producer = op;
      op = consumer;
      loop = symbolicLoops(consumer).front();
    }
  Location loc = op.getLoc();
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
        tileRange(rewriter, op, loop, lower, upper, size, destinations, domain,
                  producer, expand);
    if (failed(results))
      return failure(); // the loops made so far compute nothing used
    destinations = *results;
    lower = upper;
  }
  if (remainderWhole) {
    // The rest, [lower, rows), as one tile.
    SmallVector<OpFoldResult> offsets, sizes;
    for (auto [i, range] : llvm::enumerate(domain)) {
      offsets.push_back(i == loop ? OpFoldResult(lower)
                                  : rewriter.getIndexAttr(0));
      sizes.push_back(i == loop ? OpFoldResult(arith::SubIOp::create(
                                                   rewriter, loc, rows, lower)
                                                   .getResult())
                                : range.size);
    }
    SmallVector<Operation *> tiledOps;
    FailureOr<SmallVector<Value>> results =
        tileInto(rewriter, rewriter, loc, op, destinations, offsets, sizes,
                 producer, expand, &tiledOps);
    if (failed(results))
      return failure();
    for (Operation *tiledOp : tiledOps)
      tiledOp->setAttr(kRemainder, rewriter.getUnitAttr());
    destinations = *results;
  }
  rewriter.replaceOp(op, destinations);
  if (producer) {
    // What still reads the product's whole result reads only its sizes
    // (tensor.dim): they are its destination's, and the product goes (the
    // next round would tile it again, computed for nothing).
    Value init = producer.getDpsInits()[0];
    if (expand) {
      if (expand->use_empty())
        rewriter.eraseOp(expand);
      else
        rewriter.modifyOpInPlace(expand,
                                 [&] { expand.getSrcMutable().assign(init); });
    }
    rewriter.replaceAllUsesWith(producer->getResult(0), init);
    rewriter.eraseOp(producer);
  }
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
      // The op, its loop, and whether its last iterations stay one op of a
      // run-time size (where another run-time loop is left, or it is a
      // reduction: single rows or columns of attention's scores, single
      // terms of its context, became matrix-vector products of a strided
      // view, which bufferization copied into buffers allocated in the
      // loop).
      SmallVector<std::tuple<linalg::LinalgOp, unsigned, bool>> work;
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
        // (A run-time reduction, the context of attention, comes after the
        // parallel loops: its blocks accumulate into the same result.)
        SmallVector<unsigned> loops = symbolicLoops(op);
        if (!loops.empty() && !op->hasAttr(kRemainder))
          work.emplace_back(op, loops.front(),
                            round > 0 || loops.size() > 1 ||
                                op.getIteratorTypesArray()[loops.front()] ==
                                    utils::IteratorType::reduction);
      });
      if (work.empty())
        break;
      IRRewriter rewriter(&getContext());
      for (auto [op, loop, remainderWhole] : work)
        (void)tileLoop(rewriter, op, loop, sizes, remainderWhole);
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
