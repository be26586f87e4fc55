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
// those of a loop inside its last one). A product of a large constant
// weight first runs its large blocks inside a loop over the weight's
// panels, so that the weight is read once whatever the rows.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"
#include "codegen/Common/KernelConfig.h"

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
/// With `runTimeRows`, the block may have a run-time number of rows (a
/// panel's columns over all the rows of its blocks: panelsOutside); its
/// ops are added to `tiledOps` where given.
LogicalResult
fuseProducerBlock(RewriterBase &rewriter, OpBuilder &b,
                  linalg::LinalgOp producer, tensor::ExpandShapeOp expand,
                  tensor::ExtractSliceOp extract, bool runTimeRows = false,
                  SmallVectorImpl<Operation *> *tiledOps = nullptr) {
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
      if (!fill || (!runTimeRows && !slice.getType().hasStaticShape()))
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
  if (!blockType || (!runTimeRows && !blockType.hasStaticShape()))
    return failure();
  if (tiledOps)
    llvm::append_range(*tiledOps, block->tiledOps);
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
/// A tile's results and where each goes in its destination.
struct Tile {
  SmallVector<Value> values;
  SmallVector<SmallVector<OpFoldResult>> offsets, sizes;
  /// The tile's ops, and the producer's block's where it was fused.
  SmallVector<Operation *> ops, producerOps;
};

/// `op` on `destinations`, tiled at `offsets` and `sizes`
/// (TilingInterface); where `producer` is given, the block of its result
/// that the tile reads is computed in the tile (fuseProducerBlock, of a
/// run-time number of rows with `runTimeRows`).
FailureOr<Tile>
tileValues(RewriterBase &rewriter, OpBuilder &b, linalg::LinalgOp op,
           ValueRange destinations, ArrayRef<OpFoldResult> offsets,
           ArrayRef<OpFoldResult> sizes, linalg::LinalgOp producer,
           tensor::ExpandShapeOp expand, bool runTimeRows = false) {
  // The op on the destinations, tiled, then dropped.
  IRMapping mapping;
  for (auto [init, dest] : llvm::zip_equal(op.getDpsInits(), destinations))
    mapping.map(init, dest);
  auto clone = cast<TilingInterface>(b.clone(*op, mapping));
  llvm::scope_exit dropClone([&] { rewriter.eraseOp(clone); });
  FailureOr<TilingResult> tiled =
      clone.getTiledImplementation(b, offsets, sizes);
  if (failed(tiled))
    return failure();
  Tile tile;
  if (producer) {
    Value read = expand ? Value(expand.getResult()) : producer->getResult(0);
    for (Operation *slice : tiled->generatedSlices) {
      auto extract = dyn_cast<tensor::ExtractSliceOp>(slice);
      if (extract && extract.getSource() == read &&
          failed(fuseProducerBlock(rewriter, b, producer, expand, extract,
                                   runTimeRows, &tile.producerOps)))
        return failure();
    }
  }
  for (auto [i, value] : llvm::enumerate(tiled->tiledValues)) {
    SmallVector<OpFoldResult> resultOffsets, resultSizes;
    if (failed(clone.getResultTilePosition(b, i, offsets, sizes, resultOffsets,
                                           resultSizes)))
      return failure();
    tile.values.push_back(value);
    tile.offsets.push_back(resultOffsets);
    tile.sizes.push_back(resultSizes);
  }
  tile.ops = tiled->tiledOps;
  return tile;
}

/// `op` on `destinations`, tiled at `offsets` and `sizes` (tileValues), its
/// results inserted into them. Returns the destinations with the tile's
/// results in them, and the tile's ops in `tiledOps`.
FailureOr<SmallVector<Value>>
tileInto(RewriterBase &rewriter, OpBuilder &b, Location loc,
         linalg::LinalgOp op, ValueRange destinations,
         ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
         linalg::LinalgOp producer, tensor::ExpandShapeOp expand,
         SmallVectorImpl<Operation *> *tiledOps = nullptr) {
  FailureOr<Tile> tile = tileValues(rewriter, b, op, destinations, offsets,
                                    sizes, producer, expand);
  if (failed(tile))
    return failure();
  SmallVector<Value> results;
  for (auto [i, value] : llvm::enumerate(tile->values)) {
    SmallVector<OpFoldResult> strides(tile->offsets[i].size(),
                                      b.getIndexAttr(1));
    results.push_back(tensor::InsertSliceOp::create(
        b, loc, value, destinations[i], tile->offsets[i], tile->sizes[i],
        strides));
  }
  if (tiledOps) {
    llvm::append_range(*tiledOps, tile->ops);
    llvm::append_range(*tiledOps, tile->producerOps);
  }
  return results;
}

/// Whether the last iterations of `op`'s loop, fewer than a block, may be
/// computed as the block that ends at the loop's end (overlapRows): `op`
/// does not read what its destinations held (an epilogue's sum of its
/// inputs does; a product accumulating into its fill does not qualify).
bool overlapsRows(linalg::LinalgOp op) {
  return llvm::none_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
    return op.payloadUsesValueFromOperand(&init);
  });
}

/// Iterations [lower, upper) of `op`'s loop `loop`, `size` at a time
/// (upper - lower is a multiple of `size`), each block an op whose loop is
/// static: an scf.for whose iteration computes one block (tileInto) into
/// the destinations it carries; `domain` is `op`'s loop sizes (the other
/// run-time loops stay whole). Returns the loop's results.
FailureOr<SmallVector<Value>>
tileRange(RewriterBase &rewriter, OpBuilder &builder, linalg::LinalgOp op,
          unsigned loop, Value lower, Value upper, int64_t size,
          ValueRange destinations, ArrayRef<Range> domain,
          linalg::LinalgOp producer, tensor::ExpandShapeOp expand,
          SmallVectorImpl<Operation *> *tiledOps = nullptr) {
  Location loc = op.getLoc();
  Value step = arith::ConstantIndexOp::create(builder, loc, size);
  bool failedTile = false;
  auto forOp = scf::ForOp::create(
      builder, loc, lower, upper, step, destinations,
      [&](OpBuilder &b, Location nloc, Value row, ValueRange carried) {
        SmallVector<OpFoldResult> offsets, sizes;
        for (auto [i, range] : llvm::enumerate(domain)) {
          offsets.push_back(i == loop ? OpFoldResult(row) : range.offset);
          sizes.push_back(i == loop ? b.getIndexAttr(size) : range.size);
        }
        FailureOr<SmallVector<Value>> yielded =
            tileInto(rewriter, b, nloc, op, carried, offsets, sizes, producer,
                     expand, tiledOps);
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

/// The last iterations of `op`'s loop `row` after its whole blocks of
/// `size`, where there are some and at least `size` iterations in all: the
/// block of `size` that ends at `rows` (a static op) computed into
/// `destinations`, before the whole blocks are (which compute the
/// iterations it shares with them again, from the same inputs: `op` does
/// not read its destinations, overlapsRows). A block of eight rows so
/// replaces up to seven single rows, each of which read the whole weight.
/// It is a loop of one iteration or none, as the blocks' loops are (an
/// scf.if of it cost bufferization's analysis a third more on BERT-base).
/// `domain` gives the other loops' ranges; `when`, if given, must hold too.
/// Returns the destinations with the block in them; the block's ops in
/// `tiledOps`.
FailureOr<SmallVector<Value>>
overlapRows(RewriterBase &rewriter, OpBuilder &b, Location loc,
            linalg::LinalgOp op, unsigned row, Value rows, int64_t size,
            ValueRange destinations, ArrayRef<Range> domain,
            linalg::LinalgOp producer, tensor::ExpandShapeOp expand,
            SmallVectorImpl<Operation *> *tiledOps = nullptr,
            Value when = nullptr) {
  Value block = arith::ConstantIndexOp::create(b, loc, size);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value cond = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, rows, block),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            arith::RemUIOp::create(b, loc, rows, block), zero));
  if (when)
    cond = arith::AndIOp::create(b, loc, cond, when);
  Value start = arith::SelectOp::create(
      b, loc, cond, arith::SubIOp::create(b, loc, rows, block), rows);
  return tileRange(rewriter, b, op, row, start, rows, size, destinations,
                   domain, producer, expand, tiledOps);
}

/// Marks the remainder of a second run-time loop (tileLoop), which the
/// next round leaves as it is.
constexpr llvm::StringLiteral kRemainder = "kiln.symbolic_remainder";

/// The blocks of rows an op takes where they are not all of the pass's
/// (panelsOutside: the large ones inside a weight's panels, the small ones
/// after them), largest first.
constexpr llvm::StringLiteral kBlocks = "kiln.symbolic_blocks";

/// What still reads a fused producer's whole result reads only its sizes
/// (tensor.dim): they are its destination's, and the product goes (the
/// next round would tile it again, computed for nothing).
void dropProducer(RewriterBase &rewriter, linalg::LinalgOp producer,
                  tensor::ExpandShapeOp expand) {
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

/// The column loop of `op`, a product [rows, K] x [K, N] over its run-time
/// loop `row` whose right-hand side is a constant f32 weight of more than
/// `minBytes` and N a multiple of `columns`, two panels or more; none
/// otherwise.
std::optional<unsigned> weightColumns(linalg::LinalgOp op, unsigned row,
                                      int64_t columns, int64_t minBytes) {
  if (op.getNumLoops() != 3 || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumReductionLoops() != 1)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  auto dim = [&](AffineMap map, unsigned i) -> int {
    auto expr = dyn_cast<AffineDimExpr>(map.getResult(i));
    return expr ? static_cast<int>(expr.getPosition()) : -1;
  };
  for (AffineMap map : maps)
    if (map.getNumResults() != 2)
      return std::nullopt;
  int m = dim(maps[2], 0), n = dim(maps[2], 1), k = dim(maps[0], 1);
  if (m != static_cast<int>(row) || dim(maps[0], 0) != m || n < 0 || k < 0 ||
      n == k || n == m || dim(maps[1], 0) != k || dim(maps[1], 1) != n ||
      op.getIteratorTypesArray()[k] != utils::IteratorType::reduction)
    return std::nullopt;
  Value weight = op.getDpsInputs()[1];
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isF32() ||
      !isa_and_nonnull<arith::ConstantOp>(weight.getDefiningOp()))
    return std::nullopt;
  int64_t cols = type.getDimSize(1);
  if (cols % columns != 0 || cols / columns < 2 ||
      type.getNumElements() * 4 <= minBytes)
    return std::nullopt;
  return n;
}

/// `op` (weightColumns: a product of a large constant weight, its loop
/// `column` N) over its run-time rows `row`: the rows in whole blocks of
/// blocks' last size run inside a loop over the weight's panels of
/// `columns` columns (an scf.forall with `parallel`, its tiles then
/// sequential), and take `blocks`; with fewer rows than a block, blocks of
/// `rest`'s first size run there too where `rest` goes on to single rows;
/// the rows left after them take all the weight's columns and the rest of
/// `rest`. Each part's product is marked with its
/// blocks (kBlocks), for the rounds of row blocks. The product's
/// elementwise reader (elementwiseConsumer) is tiled with it.
LogicalResult panelsOutside(RewriterBase &rewriter, linalg::LinalgOp op,
                            unsigned row, unsigned column, int64_t columns,
                            ArrayRef<int64_t> blocks, ArrayRef<int64_t> rest,
                            bool parallel) {
  linalg::LinalgOp producer, tiled = op;
  tensor::ExpandShapeOp expand;
  int64_t cols =
      cast<RankedTensorType>(op->getResult(0).getType()).getDimSize(1);
  if (linalg::GenericOp consumer = elementwiseConsumer(op, row, expand)) {
    // Its columns are the last dimension of its result, as the product's
    // are (identity maps, through unit dimensions).
    producer = op;
    tiled = consumer;
    row = symbolicLoops(consumer).front();
    column = consumer.getNumLoops() - 1;
  }
  if (tiled.getStaticLoopRanges()[column] != cols)
    return failure();
  Location loc = op.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(tiled);
  SmallVector<Range> domain =
      cast<TilingInterface>(tiled.getOperation()).getIterationDomain(rewriter);
  Value rows = getValueOrCreateConstantIndexOp(rewriter, loc, domain[row].size);
  AffineExpr r;
  bindSymbols(rewriter.getContext(), r);
  Value whole = affine::AffineApplyOp::create(
      rewriter, loc,
      AffineMap::get(0, 1, r.floorDiv(blocks.back()) * blocks.back()),
      ValueRange{rows});
  // A tile of `tiled`: rows [lower, lower + count), columns [at, at + width).
  auto tileAt = [&](OpBuilder &b, ValueRange destinations, OpFoldResult lower,
                    OpFoldResult count, OpFoldResult at, int64_t width) {
    SmallVector<OpFoldResult> offsets, sizes;
    for (auto [i, range] : llvm::enumerate(domain)) {
      offsets.push_back(i == row      ? lower
                        : i == column ? at
                                      : b.getIndexAttr(0));
      sizes.push_back(i == row      ? count
                      : i == column ? b.getIndexAttr(width)
                                    : range.size);
    }
    return tileValues(rewriter, b, tiled, destinations, offsets, sizes,
                      producer, expand, /*runTimeRows=*/true);
  };
  // The products among a part's ops: their blocks (none: static), and
  // sequential tiles inside a parallel loop over the panels.
  auto mark = [&](ArrayRef<Operation *> ops, ArrayRef<int64_t> sizes,
                  bool serial) {
    for (Operation *tiledOp : ops) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(tiledOp);
      if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp))
        continue;
      if (!sizes.empty())
        tiledOp->setAttr(kBlocks, rewriter.getDenseI64ArrayAttr(sizes));
      if (serial) {
        KernelConfigAttr config = KernelConfigAttr::of(tiledOp);
        tiledOp->setAttr(
            codegen::kKernelConfigAttrName,
            KernelConfigAttr::get(rewriter.getContext(), config.getAlgorithm(),
                                  config.getVectorWidth(), config.getVectors(),
                                  config.getRows(), config.getReductionTile(),
                                  /*parallel=*/false, config.getTiles()));
      }
    }
  };
  auto strides = [&](size_t rank) {
    return SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1));
  };

  // A panel: the rows in whole blocks, then the last block ending at the
  // last row (overlapRows), into `chain` (the destinations, or the panel
  // loop's), rows and columns as in the whole op.
  bool overlap = overlapsRows(tiled);
  bool failedPanel = false;
  // The whole op's loops, the columns one panel's, at `at`.
  auto panelRanges = [&](OpBuilder &b, Value at) {
    SmallVector<Range> ranges(domain);
    ranges[column] = {at, b.getIndexAttr(columns), b.getIndexAttr(1)};
    return ranges;
  };
  // Fewer rows than a block but at least `half` run inside the panels too,
  // in blocks of `half`, the last ending at the last row: seven tokens read
  // each weight once, where against the whole weight they read it twice.
  int64_t half = overlap && rest.size() > 1 ? rest.front() : 0;
  auto panel = [&](OpBuilder &b, ValueRange chain,
                   Value at) -> SmallVector<Value> {
    SmallVector<Value> next(chain);
    if (overlap) {
      SmallVector<Range> ranges = panelRanges(b, at);
      auto last = [&](int64_t size, Value when) {
        SmallVector<Operation *> lastOps;
        FailureOr<SmallVector<Value>> lastRows =
            overlapRows(rewriter, b, loc, tiled, row, rows, size, next, ranges,
                        producer, expand, &lastOps, when);
        if (failed(lastRows)) {
          failedPanel = true;
          return;
        }
        mark(lastOps, {}, parallel);
        next = *lastRows;
      };
      if (half) {
        Value few = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::slt, rows,
            arith::ConstantIndexOp::create(b, loc, blocks.back()));
        last(half, few);
        if (failedPanel)
          return next;
        AffineExpr r;
        bindSymbols(b.getContext(), r);
        Value upper = arith::SelectOp::create(
            b, loc, few,
            affine::AffineApplyOp::create(
                b, loc, AffineMap::get(0, 1, r.floorDiv(half) * half),
                ValueRange{rows}),
            arith::ConstantIndexOp::create(b, loc, 0));
        SmallVector<Operation *> halfOps;
        FailureOr<SmallVector<Value>> halves = tileRange(
            rewriter, b, tiled, row, arith::ConstantIndexOp::create(b, loc, 0),
            upper, half, next, ranges, producer, expand, &halfOps);
        if (failed(halves)) {
          failedPanel = true;
          return next;
        }
        next = *halves;
        mark(halfOps, {}, parallel);
      }
      last(blocks.back(), nullptr);
      if (failedPanel)
        return next;
    }
    FailureOr<Tile> blocked =
        tileAt(b, next, b.getIndexAttr(0), whole, at, columns);
    if (failed(blocked)) {
      failedPanel = true;
      return next;
    }
    mark(blocked->ops, blocks, parallel);
    mark(blocked->producerOps, blocks, parallel);
    for (auto [i, value] : llvm::enumerate(blocked->values))
      next[i] = tensor::InsertSliceOp::create(
          b, loc, value, next[i], blocked->offsets[i], blocked->sizes[i],
          strides(blocked->offsets[i].size()));
    return next;
  };

  // The panels of the whole weight.
  SmallVector<Value> destinations(tiled.getDpsInits());
  Operation *loop;
  if (parallel) {
    auto forall = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(cols)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(columns)}, destinations,
        std::nullopt);
    loop = forall;
    OpBuilder b = OpBuilder::atBlockTerminator(forall.getBody());
    Value at = forall.getInductionVars()[0];
    ValueRange shared = forall.getRegionIterArgs();
    SmallVector<Value> chain = panel(b, shared, at);
    if (!failedPanel) {
      // Each thread's panel: the columns [at, at + columns) of every row.
      SmallVector<OpFoldResult> offsets, sizes;
      for (Range range : panelRanges(b, at)) {
        offsets.push_back(range.offset);
        sizes.push_back(range.size);
      }
      SmallVector<SmallVector<OpFoldResult>> ats, counts;
      for (unsigned i = 0; i < chain.size() && !failedPanel; ++i) {
        SmallVector<OpFoldResult> resultAt, resultCount;
        failedPanel |=
            failed(cast<TilingInterface>(tiled.getOperation())
                       .getResultTilePosition(b, i, offsets, sizes, resultAt,
                                              resultCount));
        ats.push_back(resultAt);
        counts.push_back(resultCount);
      }
      SmallVector<Value> strips;
      if (!failedPanel)
        for (auto [i, value] : llvm::enumerate(chain))
          strips.push_back(tensor::ExtractSliceOp::create(
              b, loc, value, ats[i], counts[i], strides(ats[i].size())));
      b.setInsertionPointToStart(forall.getTerminator().getBody());
      for (auto [i, strip] : llvm::enumerate(strips))
        tensor::ParallelInsertSliceOp::create(b, loc, strip, shared[i], ats[i],
                                              counts[i],
                                              strides(ats[i].size()));
    }
  } else {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    loop = scf::ForOp::create(
        rewriter, loc, zero,
        arith::ConstantIndexOp::create(rewriter, loc, cols),
        arith::ConstantIndexOp::create(rewriter, loc, columns), destinations,
        [&](OpBuilder &b, Location nloc, Value at, ValueRange carried) {
          scf::YieldOp::create(b, nloc, panel(b, carried, at));
        });
  }
  if (failedPanel) {
    rewriter.eraseOp(loop);
    return failure();
  }

  // The rows after the whole blocks where the panels did not take them
  // (fewer rows than a block, or an op that reads its destination): single
  // rows, against the whole weight.
  rewriter.setInsertionPointAfter(loop);
  Value covered = whole;
  if (overlap)
    covered = arith::SelectOp::create(
        rewriter, loc,
        arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, rows,
                              arith::ConstantIndexOp::create(
                                  rewriter, loc, half ? half : blocks.back())),
        rows, whole);
  if (half)
    rest = rest.drop_front();
  Value left = arith::SubIOp::create(rewriter, loc, rows, covered);
  FailureOr<Tile> after = tileAt(rewriter, loop->getResults(), covered, left,
                                 rewriter.getIndexAttr(0), cols);
  if (failed(after))
    return failure(); // the panels compute nothing used
  mark(after->ops, rest, /*serial=*/false);
  mark(after->producerOps, rest, /*serial=*/false);
  SmallVector<Value> results;
  for (auto [i, value] : llvm::enumerate(after->values))
    results.push_back(tensor::InsertSliceOp::create(
        rewriter, loc, value, loop->getResult(i), after->offsets[i],
        after->sizes[i], strides(after->offsets[i].size())));
  rewriter.replaceOp(tiled, results);
  if (producer)
    dropProducer(rewriter, producer, expand);
  return success();
}

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
  // The rows after the last whole block of the size before single rows, as
  // that block ending at the last row, where there are that many rows:
  // single rows only below it.
  int64_t overlap = 0;
  if (!remainderWhole && levels.size() > 1 && levels.back() == 1 &&
      overlapsRows(op)) {
    overlap = levels[levels.size() - 2];
    FailureOr<SmallVector<Value>> results =
        overlapRows(rewriter, rewriter, loc, op, loop, rows, overlap,
                    destinations, domain, producer, expand);
    if (failed(results))
      return failure();
    destinations = *results;
  }
  for (auto [level, size] : llvm::enumerate(levels)) {
    if (overlap && level + 1 == levels.size()) {
      Value enough = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::sge, rows,
          arith::ConstantIndexOp::create(rewriter, loc, overlap));
      lower = arith::SelectOp::create(rewriter, loc, enough, rows, lower);
    }
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
        tileRange(rewriter, rewriter, op, loop, lower, upper, size,
                  destinations, domain, producer, expand);
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
  if (producer)
    dropProducer(rewriter, producer, expand);
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
    // Products of a large constant weight: their large blocks inside the
    // weight's panels (panelsOutside).
    if (panelColumns > 0 && panelRows > 1) {
      // Inside a panel, one level: a panel stays in cache whatever the
      // block, and every level is ops for bufferization to analyse. Fewer
      // rows than that (a sequence of a few tokens) run in blocks of half
      // as many, the last ending at the last row (overlapRows), inside the
      // panels too; fewer than half a block are single rows against the
      // whole weight (the packed matrix-vector product).
      SmallVector<int64_t> inside = {panelRows}, after;
      if (panelRows / 2 > 1)
        after.push_back(panelRows / 2);
      after.push_back(1);
      SmallVector<std::pair<linalg::LinalgOp, std::pair<unsigned, unsigned>>>
          products;
      if (!inside.empty() && !after.empty())
        func.walk([&](linalg::LinalgOp op) {
          if (!op.hasPureTensorSemantics() ||
              !linalg::isaContractionOpInterface(op))
            return;
          SmallVector<unsigned> loops = symbolicLoops(op);
          if (loops.size() != 1)
            return;
          if (std::optional<unsigned> column = weightColumns(
                  op, loops.front(), panelColumns, panelWeightBytes))
            products.push_back({op, {loops.front(), *column}});
        });
      IRRewriter rewriter(&getContext());
      for (auto [op, loops] : products)
        (void)panelsOutside(rewriter, op, loops.first, loops.second,
                            panelColumns, inside, after, parallel);
    }
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
      SmallVector<
          std::tuple<linalg::LinalgOp, unsigned, SmallVector<int64_t>, bool>>
          work;
      auto blocksOf = [&](Operation *op) {
        if (auto marked = op->getAttrOfType<DenseI64ArrayAttr>(kBlocks))
          return SmallVector<int64_t>(marked.asArrayRef());
        return sizes;
      };
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
          work.emplace_back(op, loops.front(), blocksOf(op),
                            round > 0 || loops.size() > 1 ||
                                op.getIteratorTypesArray()[loops.front()] ==
                                    utils::IteratorType::reduction);
      });
      if (work.empty())
        break;
      IRRewriter rewriter(&getContext());
      for (auto [op, loop, blocks, remainderWhole] : work)
        (void)tileLoop(rewriter, op, loop, blocks, remainderWhole);
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
    func.walk([](Operation *op) {
      op->removeAttr(kRemainder);
      op->removeAttr(kBlocks);
    });
  }
};

} // namespace
} // namespace kiln::cpu
