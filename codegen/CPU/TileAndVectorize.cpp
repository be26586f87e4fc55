//===- TileAndVectorize.cpp - Register-blocked vector contractions --------===//
//
// The register blocking of Goto and van de Geijn ("Anatomy of
// High-Performance Matrix Multiplication", ACM TOMS 2008), built from
// upstream MLIR pieces: a contraction is tiled so that one tile of the output
// (rows x 2 vectors) fits in registers, each tile is vectorized to a
// vector.contract, the output tile's transfers are hoisted out of the
// reduction loop, and the contraction is lowered to outer products, that is,
// broadcasts and vector FMAs.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUTILEANDVECTORIZE
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The largest divisor of `size` that is at most `limit`.
int64_t largestDivisor(int64_t size, int64_t limit) {
  for (int64_t d = std::min(size, limit); d > 1; --d)
    if (size % d == 0)
      return d;
  return 1;
}

/// Tile sizes for one contraction, or an empty vector when it should take the
/// loop path: one row block of the innermost M dimension, two vectors (or
/// one) of the innermost N dimension, one step of the innermost reduction,
/// and 1 everywhere else.
SmallVector<int64_t> chooseTileSizes(linalg::LinalgOp op, int64_t vectorWidth,
                                     int64_t rows) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op) || op.hasDynamicShape())
    return {};
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned n = dims->n.back(), m = dims->m.back();
  // The output's innermost dimension must be N, so that a vector of the
  // output is contiguous in memory.
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outputMap.getNumResults() == 0 ||
      outputMap.getResults().back() != getAffineDimExpr(n, op.getContext()))
    return {};
  // A remainder narrower than two vectors (split off by splitRemainders) is
  // one tile as wide as it is.
  int64_t nTile = ranges[n] < 2 * vectorWidth          ? ranges[n]
                  : ranges[n] % (2 * vectorWidth) == 0 ? 2 * vectorWidth
                  : ranges[n] % vectorWidth == 0       ? vectorWidth
                                                       : 0;
  if (nTile == 0)
    return {};
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes[n] = nTile;
  sizes[m] = largestDivisor(
      ranges[m], rows * std::max<int64_t>(1, 2 * vectorWidth / nTile));
  return sizes;
}

/// The loop order with the innermost N dimension just outside the innermost M
/// dimension, or nothing when the op is not a plain contraction.
std::optional<SmallVector<int64_t>> nOuterOrder(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return std::nullopt;
  unsigned m = dims->m.back(), n = dims->n.back();
  SmallVector<int64_t> order;
  for (unsigned i = 0; i < op.getNumLoops(); ++i) {
    if (i == m)
      order.push_back(n);
    else if (i == n)
      order.push_back(m);
    else
      order.push_back(i);
  }
  if (m > n)
    return std::nullopt; // N is already outside M.
  return order;
}

/// Vectorizes one tile (a vector.contract where it is a named contraction);
/// leaves it as it is on failure.
void vectorizeTile(RewriterBase &rewriter, Operation *tile) {
  rewriter.setInsertionPoint(tile);
  FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
      rewriter, tile, /*inputVectorSizes=*/{},
      /*inputScalableVecDims=*/{}, /*vectorizeNDExtract=*/false,
      /*flatten1DDepthwiseConv=*/false,
      /*assumeDynamicDimsMatchVecSizes=*/false,
      /*createNamedContraction=*/true);
  if (succeeded(vectorized))
    rewriter.replaceOp(tile, vectorized->replacements);
}

/// Tiles and vectorizes one contraction; leaves it alone on failure. With
/// `parallel`, the output tiles are an scf.forall (each tile owns its part of
/// the output), and only the reduction runs as a sequential scf.for inside.
void tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                      ArrayRef<int64_t> tileSizes, bool parallel) {
  MLIRContext *ctx = op.getContext();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // Output tiles: every parallel dimension at its tile size, reductions whole.
  // Sequential code tiles every dimension in one loop nest; parallel code
  // tiles the output into an scf.forall first and the reduction inside it.
  SmallVector<int64_t> outerSizes(tileSizes), innerSizes(tileSizes.size(), 0);
  if (parallel) {
    for (auto [i, iterator] : llvm::enumerate(iterators)) {
      if (iterator == utils::IteratorType::reduction) {
        outerSizes[i] = 0;
        innerSizes[i] = tileSizes[i];
      }
    }
  }
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions outer;
  outer.setTileSizes(getAsIndexOpFoldResult(ctx, outerSizes));
  if (parallel)
    outer.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  // N tiles outside M tiles: the strip of the right-hand operand that one N
  // tile reads (K x 2 vectors) stays in cache while every row block of the
  // left-hand operand passes over it.
  if (std::optional<SmallVector<int64_t>> order = nOuterOrder(op))
    outer.setInterchange(*order);
  FailureOr<scf::SCFTilingResult> outerTiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), outer);
  if (failed(outerTiled))
    return;
  rewriter.replaceOp(op, outerTiled->replacements);

  for (Operation *tile : outerTiled->tiledOps) {
    if (!parallel) {
      vectorizeTile(rewriter, tile);
      continue;
    }
    // The reduction, one step at a time.
    rewriter.setInsertionPoint(tile);
    scf::SCFTilingOptions inner;
    inner.setTileSizes(getAsIndexOpFoldResult(ctx, innerSizes));
    FailureOr<scf::SCFTilingResult> innerTiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(tile), inner);
    if (failed(innerTiled))
      continue;
    rewriter.replaceOp(tile, innerTiled->replacements);
    for (Operation *step : innerTiled->tiledOps)
      vectorizeTile(rewriter, step);
  }
}

/// Splits every contraction whose innermost N dimension is not a multiple of
/// two vectors into a part that is and a narrower remainder, so that both
/// get register-blocked code (the remainder as one tile as wide as it is)
/// instead of leaving the whole op to the loop path.
void splitRemainders(func::FuncOp func, int64_t vectorWidth) {
  SmallVector<linalg::LinalgOp> candidates;
  func.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
        linalg::isaContractionOpInterface(op) && !op.hasDynamicShape())
      candidates.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::LinalgOp op : candidates) {
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->n.empty())
      continue;
    unsigned n = dims->n.back();
    int64_t size = op.getStaticLoopRanges()[n];
    int64_t main = size / (2 * vectorWidth) * (2 * vectorWidth);
    if (main == 0 || main == size)
      continue;
    rewriter.setInsertionPoint(op);
    linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), n,
                    rewriter.getIndexAttr(main));
  }
}

/// Turns what the vectorizer made of a tile that is not a named contraction
/// (elementwise products and a multi-reduction) into one vector.contract
/// whose operands are read straight from the tensors.
LogicalResult formContractions(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  vector::populateVectorReductionToContractPatterns(patterns);
  tensor::populateFoldTensorSubsetIntoVectorTransferPatterns(patterns);
  vector::TransferReadOp::getCanonicalizationPatterns(patterns,
                                                      func.getContext());
  vector::TransferWriteOp::getCanonicalizationPatterns(patterns,
                                                       func.getContext());
  return applyPatternsGreedily(func, std::move(patterns));
}

/// Keeps each output tile in registers across its reduction loop: the
/// read before the loop, the write after it, the vector carried in between.
void hoistAccumulators(func::FuncOp func) {
  SmallVector<scf::ForOp> loops;
  func.walk([&](scf::ForOp loop) { loops.push_back(loop); });
  IRRewriter rewriter(func.getContext());
  // Innermost loops first: the walk is post-order.
  for (scf::ForOp loop : loops)
    hoistLoopInvariantSubsets(rewriter, loop);
}

/// Extends the operands of a contraction whose inputs are narrower floats
/// than its accumulator (f16 or bf16 into f32) to the accumulator's type:
/// linalg's own meaning (inputs are converted before they are multiplied),
/// and upstream lowers only contractions of one element type, except the
/// plain matmul form; a batch dimension left a mixed contraction standing
/// until LLVM translation.
struct WidenMixedContraction : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    auto accElement =
        dyn_cast<FloatType>(getElementTypeOrSelf(op.getAccType()));
    if (!accElement)
      return rewriter.notifyMatchFailure(op, "not a float contraction");
    auto widen = [&](Value operand) -> Value {
      auto type = cast<VectorType>(operand.getType());
      auto element = dyn_cast<FloatType>(type.getElementType());
      if (!element || element == accElement ||
          element.getWidth() >= accElement.getWidth())
        return operand;
      return arith::ExtFOp::create(rewriter, op.getLoc(),
                                   type.clone(accElement), operand);
    };
    Value lhs = widen(op.getLhs()), rhs = widen(op.getRhs());
    if (lhs == op.getLhs() && rhs == op.getRhs())
      return rewriter.notifyMatchFailure(op, "inputs are not narrower floats");
    rewriter.modifyOpInPlace(op, [&] {
      op.getLhsMutable().assign(lhs);
      op.getRhsMutable().assign(rhs);
    });
    return success();
  }
};

/// Lowers what vectorization produced to FMAs, loads and stores, in stages
/// so that a later stage's patterns do not take apart what an earlier one
/// still has to match.
LogicalResult lowerVectorOps(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  // 1. Contractions to outer products (rows of broadcast x vector).
  {
    RewritePatternSet patterns(ctx);
    patterns.add<WidenMixedContraction>(ctx);
    vector::populateVectorContractLoweringPatterns(
        patterns, vector::VectorContractLowering::OuterProduct);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return failure();
  }
  // 2. Outer products to vector FMAs; the rest to plain vector ops.
  RewritePatternSet patterns(ctx);
  vector::populateVectorOuterProductLoweringPatterns(patterns);
  vector::populateVectorTransferLoweringPatterns(patterns,
                                                 /*maxTransferRank=*/1);
  vector::populateVectorBroadcastLoweringPatterns(patterns);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::EltWise);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerParallel);
  return applyPatternsGreedily(func, std::move(patterns));
}

struct CPUTileAndVectorizePass
    : impl::CPUTileAndVectorizeBase<CPUTileAndVectorizePass> {
  using CPUTileAndVectorizeBase::CPUTileAndVectorizeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Unit dimensions (a batch of one) would reach the vector code as
    // vector<1x...> and hide the matmul shape from the contraction patterns.
    {
      RewritePatternSet patterns(&getContext());
      linalg::ControlDropUnitDims control;
      control.controlFn = [](Operation *op) -> SmallVector<unsigned> {
        auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
        if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp))
          return {};
        SmallVector<unsigned> unitDims;
        for (auto [i, size] : llvm::enumerate(linalgOp.getStaticLoopRanges()))
          if (size == 1)
            unitDims.push_back(i);
        return unitDims;
      };
      linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    // A generic that is a matmul (the contraction of an im2col convolution)
    // becomes linalg.matmul, which vectorizes straight to vector.contract.
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) {
      if (linalg::isaContractionOpInterface(op))
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics) {
      rewriter.setInsertionPoint(op);
      (void)linalg::specializeGenericOp(rewriter, op);
    }
    splitRemainders(func, vectorWidth);
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<int64_t>>> work;
    func.walk([&](linalg::LinalgOp op) {
      SmallVector<int64_t> sizes = chooseTileSizes(op, vectorWidth, rows);
      if (!sizes.empty())
        work.emplace_back(op, std::move(sizes));
    });
    if (work.empty())
      return;
    for (auto &[op, sizes] : work)
      tileAndVectorize(rewriter, op, sizes, parallel);
    if (failed(formContractions(func)))
      return signalPassFailure();
    hoistAccumulators(func);
    if (failed(lowerVectorOps(func)))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
