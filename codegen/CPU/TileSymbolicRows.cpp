//===- TileSymbolicRows.cpp - Static blocks of a run-time row count -------===//
//
// kiln-cpu-tile-symbolic-rows (Passes.td): an op whose one run-time loop is
// parallel runs in blocks of static rows, each block a static op that the
// register blocks and vector code after this pass take; the rows left after
// the last whole block run in smaller blocks, down to single rows. Each
// block is the op's TilingInterface tile at static sizes; the loops' bounds
// are computed up front (upstream's tiling and then loop peeling left the
// second level's blocks of run-time size: peeling proves the outer loop's
// iterations full, not those of a loop inside its last one).
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

/// The one loop of `op` whose size is known at run time only, where it is
/// parallel and every `?` of the operands is indexed by it alone; nullopt
/// otherwise.
std::optional<unsigned> symbolicRowLoop(linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  std::optional<unsigned> loop;
  for (auto [i, size] : llvm::enumerate(ranges)) {
    if (!ShapedType::isDynamic(size))
      continue;
    if (loop)
      return std::nullopt;
    loop = i;
  }
  if (!loop ||
      op.getIteratorTypesArray()[*loop] != utils::IteratorType::parallel)
    return std::nullopt;
  AffineExpr row = getAffineDimExpr(*loop, op.getContext());
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d) && map.getResult(d) != row)
        return std::nullopt;
  }
  return loop;
}

/// Rows [lower, upper) of `op`'s results, `size` at a time (upper - lower
/// is a multiple of `size`), each block a static op: an scf.for whose
/// iteration computes one block (TilingInterface) into the destinations it
/// carries. Returns the loop's results.
FailureOr<SmallVector<Value>> tileRange(RewriterBase &rewriter,
                                        linalg::LinalgOp op, unsigned loop,
                                        Value lower, Value upper, int64_t size,
                                        ValueRange destinations) {
  Location loc = op.getLoc();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
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
        for (auto [i, range] : llvm::enumerate(ranges)) {
          offsets.push_back(i == loop ? OpFoldResult(row) : b.getIndexAttr(0));
          sizes.push_back(b.getIndexAttr(i == loop ? size : range));
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

/// `op` over its run-time rows as loops of static blocks: as many blocks of
/// blocks[0] rows as fit, then of blocks[1] in what is left, and so on, the
/// last size 1 (the bounds computed up front, so that every block is
/// static). Leaves `op` as it was where tiling fails.
LogicalResult tileRows(RewriterBase &rewriter, linalg::LinalgOp op,
                       unsigned loop, ArrayRef<int64_t> blocks) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Range> domain =
      cast<TilingInterface>(op.getOperation()).getIterationDomain(rewriter);
  Value rows =
      getValueOrCreateConstantIndexOp(rewriter, loc, domain[loop].size);
  Value lower = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> destinations(op.getDpsInits());
  for (auto [level, size] : llvm::enumerate(blocks)) {
    Value upper = rows;
    if (level + 1 < blocks.size()) {
      // lower + ((rows - lower) floordiv size) * size
      AffineExpr l, r;
      bindSymbols(rewriter.getContext(), l, r);
      upper = affine::AffineApplyOp::create(
          rewriter, loc,
          AffineMap::get(0, 2, l + (r - l).floorDiv(size) * size),
          ValueRange{lower, rows});
    }
    FailureOr<SmallVector<Value>> results =
        tileRange(rewriter, op, loop, lower, upper, size, destinations);
    if (failed(results))
      return failure(); // the loops made so far compute nothing used
    destinations = *results;
    lower = upper;
  }
  rewriter.replaceOp(op, destinations);
  return success();
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
    SmallVector<std::pair<linalg::LinalgOp, unsigned>> work;
    func.walk([&](linalg::LinalgOp op) {
      // Contractions only: the loop path runs elementwise ops and row
      // reductions in loops whose inner, static bounds LLVM vectorises, and
      // each tiled op costs the bufferization's analysis dearly (a loop of
      // blocks and one of rows per op; every op of a small two-layer
      // encoder so took 35 s to bufferize).
      if (!op.hasPureTensorSemantics() ||
          !isa<TilingInterface>(op.getOperation()) ||
          !linalg::isaContractionOpInterface(op))
        return;
      if (std::optional<unsigned> loop = symbolicRowLoop(op))
        work.emplace_back(op, *loop);
    });
    if (work.empty())
      return;
    IRRewriter rewriter(&getContext());
    for (auto [op, loop] : work)
      (void)tileRows(rewriter, op, loop, sizes);
    // Folds what the loops left (index arithmetic, slices of slices).
    RewritePatternSet patterns(&getContext());
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName name : getContext().getRegisteredOperations())
      name.getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
