//===- Parallelize.cpp - Loop nests other than contractions on threads ----===//
//
// Contractions get their scf.forall from kiln-cpu-tile-and-vectorize; every
// other linalg op at the top of a function (elementwise ops, pools,
// depthwise convolutions, Winograd's transforms, layout conversions) gets
// one here, over its leading parallel loops. Before it, those ran on one
// thread whatever the model's thread count: with two threads, ResNet-50's
// Winograd transforms and pools took as long as with one.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"
#include "codegen/Common/KernelConfig.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUPARALLELIZE
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether `expr` grows with loop `dim` or does not depend on it: a sum of
/// the loop and other terms, each with a positive factor.
bool growsWith(AffineExpr expr, unsigned dim) {
  if (!expr.isFunctionOfDim(dim) || isa<AffineDimExpr>(expr))
    return true;
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (binary.getKind() == AffineExprKind::Add)
    return growsWith(binary.getLHS(), dim) && growsWith(binary.getRHS(), dim);
  if (binary.getKind() == AffineExprKind::Mul) {
    auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS());
    return factor && factor.getValue() > 0 && growsWith(binary.getLHS(), dim);
  }
  return false;
}

/// Whether every operand of `op` reads each loop through an index that
/// grows with it. Only then does linalg's tiling compute the slices right:
/// it takes a slice's size from the index at the tile's last iteration,
/// for every loop, tiled or not, so a reversed read (the flipped kernel of
/// a ConvTranspose, `k - 1 - d`) would get a slice of one element.
bool readsForward(linalg::LinalgOp op) {
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr expr : map.getResults())
      for (unsigned dim = 0; dim < map.getNumDims(); ++dim)
        if (!growsWith(expr, dim))
          return false;
  return true;
}

/// What a loop of a run-time size (a sequence length) counts for in an
/// op's iterations, against `min-iterations`: a short sequence's.
constexpr int64_t kRunTimeRange = 64;

/// Tile sizes that cut the leading parallel loops of `op` into at least
/// `minTiles` tiles where they can (0: a loop left whole), or an empty vector
/// when `op` should stay sequential. A loop of a run-time size is cut into
/// `parts[i]` tiles of a size computed at run time (sizes[i] is then
/// ShapedType::kDynamic): an attention's softmax over `[1, 12, ?, ?]` or a
/// layer norm over `[1, ?, 768]` ran on one thread. A kernel configuration
/// (kiln.tune) overrides both thresholds: `parallel = false` keeps the op
/// sequential, `parallel = true` puts it on threads whatever its size,
/// `tiles` sets `minTiles`.
SmallVector<int64_t> chooseTileSizes(linalg::LinalgOp op, int64_t minTiles,
                                     int64_t minIterations,
                                     SmallVectorImpl<int64_t> &parts) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.empty())
    return {};
  KernelConfigAttr config = KernelConfigAttr::of(op);
  if (std::optional<bool> parallel = config.getParallel()) {
    if (!*parallel)
      return {};
    minIterations = 0;
  }
  minTiles = config.getTiles().value_or(minTiles);
  // The work of an iteration grows with the values it writes (a Winograd
  // transform writes a whole tile's).
  int64_t iterations = op.getNumDpsInits();
  for (int64_t range : ranges)
    iterations *= ShapedType::isDynamic(range) ? kRunTimeRange : range;
  if (iterations < minIterations || !readsForward(op))
    return {};
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> sizes(ranges.size(), 0);
  parts.assign(ranges.size(), 0);
  int64_t tiles = 1;
  for (auto [i, range] : llvm::enumerate(ranges)) {
    if (iterators[i] != utils::IteratorType::parallel || tiles >= minTiles)
      break;
    if (range == 1)
      continue;
    int64_t wanted = llvm::divideCeil(minTiles, tiles);
    if (ShapedType::isDynamic(range)) {
      sizes[i] = ShapedType::kDynamic;
      parts[i] = wanted;
      tiles *= wanted;
      continue;
    }
    sizes[i] = range <= wanted ? 1 : largestDivisor(range, range / wanted);
    tiles *= range / sizes[i];
  }
  if (tiles < 2)
    return {};
  return sizes;
}

struct CPUParallelizePass : impl::CPUParallelizeBase<CPUParallelizePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Only ops at the top of the function: those inside a loop already are
    // a contraction's tiles, in their own scf.forall.
    struct Work {
      linalg::LinalgOp op;
      SmallVector<int64_t> sizes, parts;
    };
    SmallVector<Work> work;
    for (Block &block : func.getBody())
      for (Operation &op : block)
        // A padded tensor's fill keeps its form for the passes that know a
        // padded tensor by it; kiln-codegen-fill-borders then fills only
        // the border, a few percent of it, which stays on one thread.
        if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
            linalgOp && linalgOp.hasPureTensorSemantics() &&
            !op.hasAttr(attr::kPadInterior))
          if (SmallVector<int64_t> parts,
              sizes = chooseTileSizes(linalgOp, minTiles, minIterations, parts);
              !sizes.empty())
            work.push_back({linalgOp, std::move(sizes), std::move(parts)});

    // A fill that only initialises another op's accumulator (a Winograd
    // transform's zeros) is fused into that op's tiles rather than run as a
    // loop nest of its own: a forall that fills a tensor and another that
    // accumulates into it made bufferization copy the filled tensor.
    llvm::SmallPtrSet<Operation *, 8> fusedFills;
    for (Work &item : work)
      for (Value init : item.op.getDpsInits())
        if (auto fill = init.getDefiningOp<linalg::FillOp>();
            fill && init.hasOneUse())
          fusedFills.insert(fill);

    IRRewriter rewriter(&getContext());
    for (auto &[op, sizes, parts] : work) {
      if (fusedFills.contains(op.getOperation()))
        continue;
      rewriter.setInsertionPoint(op);
      SmallVector<OpFoldResult> tileSizes =
          getAsIndexOpFoldResult(&getContext(), sizes);
      SmallVector<Range> domain;
      for (auto [i, size] : llvm::enumerate(sizes)) {
        if (!ShapedType::isDynamic(size))
          continue;
        // ceil(range / parts), at least 1 (an empty range's loop still
        // divides by its step).
        if (domain.empty())
          domain = cast<TilingInterface>(op.getOperation())
                       .getIterationDomain(rewriter);
        AffineExpr range;
        bindSymbols(&getContext(), range);
        tileSizes[i] = affine::makeComposedFoldedAffineMax(
            rewriter, op.getLoc(),
            AffineMap::get(0, 1,
                           {range.ceilDiv(parts[i]),
                            getAffineConstantExpr(1, &getContext())},
                           &getContext()),
            {domain[i].size});
      }
      scf::SCFTilingOptions tiling;
      tiling.setTileSizes(tileSizes);
      tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      options.setFusionControlFn(
          [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
              -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
            if (isDestination && fusedFills.contains(producer.getOwner()))
              return scf::SCFTileAndFuseOptions::ControlFnResult{};
            return std::nullopt;
          });
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTileAndFuseResult> tiled =
          scf::tileConsumerAndFuseProducersUsingSCF(
              rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue; // it stays one sequential loop nest
      for (OpResult result : op->getResults())
        rewriter.replaceAllUsesWith(result, tiled->replacements.lookup(result));
      rewriter.eraseOp(op);
    }
    // The fills that were fused are dead now; one whose consumer could not
    // be tiled is still used and stays.
    for (Operation *fill : fusedFills)
      if (fill->use_empty())
        rewriter.eraseOp(fill);
  }
};

} // namespace
} // namespace kiln::cpu
