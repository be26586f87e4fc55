//===- TileSymbolicRows.cpp - Static blocks of a run-time row count -------===//
//
// kiln-cpu-tile-symbolic-rows (Passes.td): an op whose one run-time loop is
// parallel runs in blocks of static rows, each block a static op that the
// register blocks and vector code after this pass take; the rows left after
// the last whole block run in smaller blocks, down to single rows. Tiling
// is upstream's (TilingInterface); the whole blocks become static through
// loop peeling, which proves each iteration of the peeled loop full.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
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

/// Tiles `loop` of `op` by blocks[0] in an scf.for, peels the whole blocks
/// from the rest, and tiles the rest by the next sizes. Fails, leaving `op`
/// as it was, where upstream's tiling does; a rest that cannot be tiled
/// further keeps the loop path, which is correct all the same.
LogicalResult tileRows(RewriterBase &rewriter, linalg::LinalgOp op,
                       unsigned loop, ArrayRef<int64_t> blocks) {
  if (blocks.empty())
    return success();
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  sizes[loop] = blocks.front();
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op.getContext(), sizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->loops.size() != 1)
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  if (blocks.size() == 1)
    return success();
  auto forOp = cast<scf::ForOp>(tiled->loops.front().getOperation());
  scf::ForOp rest;
  if (failed(scf::peelForLoopAndSimplifyBounds(rewriter, forOp, rest)) || !rest)
    return success();
  linalg::LinalgOp partial;
  rest.getBody()->walk([&](linalg::LinalgOp inner) { partial = inner; });
  if (partial)
    (void)tileRows(rewriter, partial, loop, blocks.drop_front());
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
    // The whole blocks' slices and ops take their static sizes.
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
