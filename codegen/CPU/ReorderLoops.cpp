//===- ReorderLoops.cpp - Unit-stride innermost loops for contractions ----===//
//
// The loop order chosen here lets LLVM's loop vectorizer do the work on
// contractions that are lowered to plain loops: the innermost loop runs over
// the output's last dimension with unit stride in the output and in at least
// one input. Tiled and register-blocked kernels replace this for the hot ops;
// this keeps every other contraction reasonable. Fills, copies and
// elementwise ops get one loop over the trailing dimensions that all their
// buffers hold contiguously. Two more jobs on the same loops: a reduction
// whose combiner runs in the innermost loop is marked reassociable, so that
// LLVM sums in vector lanes; and a transpose that moves the innermost
// dimension goes through square register blocks of the target's size
// (transpose-block; none on AArch64).
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"
#include "codegen/Common/KernelConfig.h"
#include "codegen/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUREORDERLOOPS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether `expr` is `dim` plus something else, with coefficient 1 on `dim`:
/// the access moves by one element when loop `dim` moves by one.
bool isUnitStrideIn(AffineExpr expr, unsigned dim) {
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return d.getPosition() == dim;
  if (auto add = dyn_cast<AffineBinaryOpExpr>(expr);
      add && add.getKind() == AffineExprKind::Add)
    return (isUnitStrideIn(add.getLHS(), dim) &&
            !add.getRHS().isFunctionOfDim(dim)) ||
           (isUnitStrideIn(add.getRHS(), dim) &&
            !add.getLHS().isFunctionOfDim(dim));
  return false;
}

/// The loop order that puts the unit-stride output loop innermost, or an
/// empty vector when the current order should stay.
SmallVector<unsigned> chooseOrder(linalg::LinalgOp op) {
  if (op.getNumReductionLoops() == 0 || op.getNumDpsInits() != 1)
    return {};
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outputMap.getNumResults() == 0)
    return {};
  auto last = dyn_cast<AffineDimExpr>(outputMap.getResults().back());
  if (!last)
    return {};
  unsigned inner = last.getPosition();
  // An input read anew at every reduction step, contiguous along `inner`:
  // a contraction's operand. One that no reduction loop moves (the mean a
  // variance subtracts, one value per output) stays in a register, and
  // moving `inner` innermost for it would read the others with a stride.
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto reducedOver = [&](AffineMap map) {
    for (auto [i, iterator] : llvm::enumerate(iterators))
      if (iterator == utils::IteratorType::reduction && map.isFunctionOfDim(i))
        return true;
    return false;
  };
  bool contiguousInput =
      llvm::any_of(op.getDpsInputOperands(), [&](OpOperand *in) {
        AffineMap map = op.getMatchingIndexingMap(in);
        return map.getNumResults() > 0 && reducedOver(map) &&
               isUnitStrideIn(map.getResults().back(), inner);
      });
  if (!contiguousInput)
    return {};
  unsigned numLoops = op.getNumLoops();
  if (inner == numLoops - 1)
    return {};
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < numLoops; ++i)
    if (i != inner && iterators[i] == utils::IteratorType::parallel)
      order.push_back(i);
  for (unsigned i = 0; i < numLoops; ++i)
    if (iterators[i] == utils::IteratorType::reduction)
      order.push_back(i);
  order.push_back(inner);
  return order;
}

struct ReorderContractionLoops : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    SmallVector<unsigned> order = chooseOrder(op);
    if (order.empty())
      return rewriter.notifyMatchFailure(op, "the order is already right");
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized =
          linalg::generalizeNamedOp(rewriter, op);
      if (failed(generalized))
        return rewriter.notifyMatchFailure(op, "cannot generalize");
      generic = *generalized;
    }
    if (failed(linalg::interchangeGenericOp(rewriter, generic, order)))
      return rewriter.notifyMatchFailure(op, "cannot interchange");
    return success();
  }
};

/// The trailing dimensions that every shaped operand of `op` holds
/// contiguously, as the reassociation that collapses them into one (the
/// other dimensions alone), or nothing when fewer than two are.
std::optional<SmallVector<ReassociationIndices>>
contiguousTrailingDims(linalg::LinalgOp op) {
  int64_t rank = op.getNumLoops();
  // Dimensions start to rank - 1 as one group, the others alone.
  auto trailingGroups = [&](int64_t start) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < start; ++i)
      groups.push_back({i});
    groups.push_back(llvm::to_vector(llvm::seq<int64_t>(start, rank)));
    return groups;
  };
  std::optional<SmallVector<ReassociationIndices>> widest;
  for (int64_t start = rank - 2; start >= 0; --start) {
    SmallVector<ReassociationIndices> groups = trailingGroups(start);
    bool collapsible = llvm::all_of(op->getOperands(), [&](Value operand) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      return !type ||
             (type.getRank() == rank && type.hasStaticShape() &&
              memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups));
    });
    if (!collapsible)
      break;
    widest = std::move(groups);
  }
  return widest;
}

/// A fill, copy or elementwise op on buffers whose trailing dimensions are
/// contiguous in every operand becomes one loop over them: a blocked
/// tensor's innermost 16 elements alone were a loop that LLVM unrolled
/// whole, and it then vectorized the next loop out with scatters (the
/// padding fill of a pool, 1122 scatters in ResNet-50).
struct CollapseContiguousDims : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() ||
        op.getNumLoops() != op.getNumParallelLoops() ||
        !isa<linalg::FillOp, linalg::CopyOp, linalg::GenericOp>(op) ||
        !llvm::all_of(op.getIndexingMapsArray(), [&](AffineMap map) {
          return map.isIdentity() ||
                 (map.getNumResults() == 0 && isa<linalg::FillOp>(op));
        }))
      return rewriter.notifyMatchFailure(op, "not elementwise");
    if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
        generic && !generic.getBody()->getOps<linalg::IndexOp>().empty())
      return rewriter.notifyMatchFailure(op, "uses its indices");
    std::optional<SmallVector<ReassociationIndices>> groups =
        contiguousTrailingDims(op);
    if (!groups)
      return rewriter.notifyMatchFailure(op, "nothing to collapse");
    if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation())) {
      Value output = memref::CollapseShapeOp::create(
          rewriter, fill.getLoc(), fill.getOutputs()[0], *groups);
      rewriter.replaceOpWithNewOp<linalg::FillOp>(fill, fill.getInputs()[0],
                                                  output);
      return success();
    }
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(op, *groups, rewriter);
    if (failed(collapsed))
      return rewriter.notifyMatchFailure(op, "cannot collapse");
    rewriter.replaceOp(op, collapsed->results);
    return success();
  }
};

/// Whether `value`, a memref, moves by one element along its innermost
/// dimension.
bool hasUnitInnerStride(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// Whether `op` is an elementwise op on buffers with an input that
/// broadcasts (CollapseContiguousDims takes those with identity maps only)
/// and an innermost dimension that is a multiple of `lanes` and contiguous
/// in every buffer that moves along it: one that vectorizeBroadcasts runs
/// as whole vectors.
bool isBroadcastElementwise(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumLoops() == 0 || op.getNumLoops() != op.getNumParallelLoops() ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  // Arithmetic on integers and floats only (a vector of index values, which
  // an index_cast makes, does not reach LLVM).
  auto isNumber = [](Type type) { return type.isIntOrFloat(); };
  for (Operation &inner : op.getBody()->without_terminator())
    if (!OpTrait::hasElementwiseMappableTraits(&inner) ||
        inner.getNumRegions() != 0 ||
        !llvm::all_of(inner.getOperandTypes(), isNumber) ||
        !llvm::all_of(inner.getResultTypes(), isNumber))
      return false;
  if (hasSubByteElements(op) ||
      !llvm::all_of(op->getOperandTypes(), [](Type type) {
        return getElementTypeOrSelf(type).isIntOrFloat();
      }))
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic) || ranges.back() % lanes != 0)
    return false;
  unsigned last = op.getNumLoops() - 1;
  OpOperand *init = op.getDpsInitOperand(0);
  if (!op.getMatchingIndexingMap(init).isIdentity() ||
      !hasUnitInnerStride(init->get()))
    return false;
  bool broadcasts = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isIdentity())
      broadcasts = true;
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return false;
    if (map.isFunctionOfDim(last) &&
        (map.getResults().back() != getAffineDimExpr(last, op.getContext()) ||
         !hasUnitInnerStride(input->get())))
      return false;
  }
  return broadcasts;
}

/// How many positions of the next-to-innermost dimension (of size `size`)
/// one step of vectorizeBroadcasts takes: the largest divisor from 8 down
/// to 2, or 1. Positions of one step are independent chains of the body's
/// arithmetic (a depthwise convolution's 9 or 25 multiply-adds into one
/// accumulator are latency-bound one at a time), and the reads they share
/// (the overlapping windows of neighbouring pixels) are loaded once.
int64_t stepPositions(int64_t size) {
  for (int64_t positions = 8; positions > 1; --positions)
    if (size % positions == 0)
      return positions;
  return 1;
}

/// Runs each isBroadcastElementwise op as loops over its outer dimensions
/// and steps of `lanes` along its innermost one times stepPositions along
/// the one before, each step one vector op of 1 x ... x positions x lanes
/// per operation of its body (upstream's tiling and vectorizer). Returns
/// the outermost loop of each.
SmallVector<Operation *> vectorizeBroadcasts(func::FuncOp func, int64_t lanes) {
  SmallVector<linalg::GenericOp> ops;
  func.walk([&](linalg::GenericOp op) {
    if (isBroadcastElementwise(op, lanes))
      ops.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  SmallVector<Operation *> loops;
  for (linalg::GenericOp op : ops) {
    SmallVector<int64_t> sizes(op.getNumLoops(), 1);
    sizes.back() = lanes;
    if (sizes.size() > 1) {
      // A kernel configuration's rows (kiln.tune's knob of a window op), if
      // they divide the dimension, else the default.
      int64_t size = op.getStaticLoopRanges()[sizes.size() - 2];
      std::optional<int64_t> rows = KernelConfigAttr::of(op).getRows();
      sizes[sizes.size() - 2] =
          rows && size % *rows == 0 ? *rows : stepPositions(size);
    }
    linalg::LinalgTilingOptions options;
    options.setTileSizes(sizes);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::TiledLinalgOp> tiled =
        linalg::tileLinalgOp(rewriter, op, options);
    if (failed(tiled))
      continue;
    rewriter.eraseOp(op);
    rewriter.setInsertionPoint(tiled->op);
    FailureOr<linalg::VectorizationResult> vectorized =
        linalg::vectorize(rewriter, tiled->op);
    if (succeeded(vectorized))
      rewriter.eraseOp(tiled->op);
    if (!tiled->loops.empty())
      loops.push_back(tiled->loops.front());
  }
  return loops;
}

/// The ops inside `loops` but the loops themselves.
SmallVector<Operation *> collectSteps(ArrayRef<Operation *> loops) {
  SmallVector<Operation *> steps;
  for (Operation *loop : loops)
    loop->walk([&](Operation *inner) {
      if (!isa<scf::ForOp, scf::YieldOp>(inner))
        steps.push_back(inner);
    });
  return steps;
}

/// A 0-D read of a buffer (a scalar that a tile of vectorizeBroadcasts
/// broadcasts) as a load: upstream lowers those only from buffers whose
/// innermost stride is 1, and nothing later lowers what is left.
struct ScalarReadAsLoad : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getVectorType().getRank() != 0 ||
        !isa<MemRefType>(op.getBase().getType()) || op.getMask())
      return rewriter.notifyMatchFailure(op, "not a 0-D read of a buffer");
    Value scalar = memref::LoadOp::create(rewriter, op.getLoc(), op.getBase(),
                                          op.getIndices());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, op.getVectorType(),
                                                     scalar);
    return success();
  }
};

/// A transpose that moves its input's innermost dimension (the key of an
/// attention head, [S, H, D] -> [H, D, S]) reads that dimension with a
/// stride when lowered to loops: LLVM gathers one element at a time. It
/// becomes a loop over 16x16 blocks instead, each read as 16 contiguous
/// rows of the input, transposed in registers with shuffles and written as
/// 16 contiguous rows of the output. Where one of the two dimensions is not
/// a multiple of the block (a blocked layout's conversion from or to NCHW
/// at 56 x 56 pixels), the blocks that cross its end are read and written
/// with masks, row by row; where one is less than half a block, or the
/// element type is not f32, the op stays. The block is the target's
/// (TargetInfo::transposeBlock): 16 f32 rows of 16, transposed with
/// upstream's 16x16 shuffle sequence, on x86-64.
struct VectorizeTranspose : OpRewritePattern<linalg::TransposeOp> {
  VectorizeTranspose(MLIRContext *context, int64_t block)
      : OpRewritePattern(context), kTransposeBlock(block) {}
  const int64_t kTransposeBlock;

  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "not on buffers");
    auto input = cast<MemRefType>(op.getInput().getType());
    auto output = cast<MemRefType>(op.getInit().getType());
    int64_t rank = input.getRank();
    ArrayRef<int64_t> perm = op.getPermutation();
    if (rank < 2 || !input.hasStaticShape() || !output.hasStaticShape() ||
        !input.getElementType().isF32() || perm.back() == rank - 1)
      return rewriter.notifyMatchFailure(op, "keeps its innermost dimension");
    // Output dimension `along` is the input's innermost one; the output's
    // innermost is the input's dimension `across`.
    int64_t along = llvm::find(perm, rank - 1) - perm.begin();
    int64_t across = perm.back();
    int64_t alongSize = output.getDimSize(along);
    int64_t innerSize = output.getDimSize(rank - 1);
    if (!hasUnitInnerStride(op.getInput()) ||
        !hasUnitInnerStride(op.getInit()) || 2 * alongSize < kTransposeBlock ||
        2 * innerSize < kTransposeBlock)
      return rewriter.notifyMatchFailure(op, "not blocks");
    bool ragged =
        alongSize % kTransposeBlock != 0 || innerSize % kTransposeBlock != 0;

    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    SmallVector<Value> lowerBounds, upperBounds, steps;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t step = (d == along || d == rank - 1) ? kTransposeBlock : 1;
      lowerBounds.push_back(arith::ConstantIndexOp::create(rewriter, loc, 0));
      upperBounds.push_back(
          arith::ConstantIndexOp::create(rewriter, loc, output.getDimSize(d)));
      steps.push_back(arith::ConstantIndexOp::create(rewriter, loc, step));
    }
    auto blockType = VectorType::get({kTransposeBlock, kTransposeBlock},
                                     rewriter.getF32Type());
    Value zero = arith::ConstantOp::create(rewriter, loc,
                                           rewriter.getF32FloatAttr(0.0f));
    ArrayAttr inBounds = rewriter.getBoolArrayAttr({true, true});
    ArrayAttr maybeOut = rewriter.getBoolArrayAttr({false, false});
    // Rows along the input's dimension `across`, each 16 contiguous floats,
    // written as rows along the output's dimension `along`.
    auto readMap = AffineMap::get(
        rank, 0,
        {getAffineDimExpr(across, ctx), getAffineDimExpr(rank - 1, ctx)}, ctx);
    auto writeMap = AffineMap::get(
        rank, 0,
        {getAffineDimExpr(along, ctx), getAffineDimExpr(rank - 1, ctx)}, ctx);
    scf::buildLoopNest(
        rewriter, loc, lowerBounds, upperBounds, steps,
        [&](OpBuilder &b, Location loc, ValueRange outIndex) {
          SmallVector<Value> inIndex(rank);
          for (int64_t d = 0; d < rank; ++d)
            inIndex[perm[d]] = outIndex[d];
          auto moveBlock = [&](OpBuilder &b, Location loc, ArrayAttr bounds) {
            Value rows = vector::TransferReadOp::create(
                b, loc, blockType, op.getInput(), inIndex,
                AffineMapAttr::get(readMap), zero, /*mask=*/Value(), bounds);
            Value columns = vector::TransposeOp::create(
                b, loc, rows, ArrayRef<int64_t>{1, 0});
            vector::TransferWriteOp::create(b, loc, columns, op.getInit(),
                                            outIndex,
                                            AffineMapAttr::get(writeMap),
                                            /*mask=*/Value(), bounds);
          };
          if (!ragged) {
            moveBlock(b, loc, inBounds);
            return;
          }
          // A whole block as above; one that crosses the end of either
          // dimension with masks (convert-vector-to-scf's row guards and
          // masked loads and stores).
          auto fits = [&](int64_t d, int64_t size) {
            Value end = arith::AddIOp::create(
                b, loc, outIndex[d],
                arith::ConstantIndexOp::create(b, loc, kTransposeBlock));
            return arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::sle, end,
                arith::ConstantIndexOp::create(b, loc, size));
          };
          Value whole = arith::AndIOp::create(b, loc, fits(along, alongSize),
                                              fits(rank - 1, innerSize));
          scf::IfOp::create(
              b, loc, whole,
              [&](OpBuilder &b, Location loc) {
                moveBlock(b, loc, inBounds);
                scf::YieldOp::create(b, loc);
              },
              [&](OpBuilder &b, Location loc) {
                moveBlock(b, loc, maybeOut);
                scf::YieldOp::create(b, loc);
              });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Lets LLVM reassociate the float combiner of every reduction that a
/// linalg op runs in its innermost loop (a row sum, max or product: a
/// LayerNormalization's mean and variance, a Softmax's maximum and sum).
/// Without it the loop is one chain of scalar additions, each waiting for
/// the last (768 of them per row of BERT-base); with it LLVM's vectorizer
/// keeps partial results in vector lanes and adds them at the end, as every
/// inference engine's reductions do. The sum then differs from the serial
/// one by rounding only.
void reassociateInnermostReductions(func::FuncOp func) {
  func.walk([](linalg::LinalgOp op) {
    Block *body = op.getBlock();
    if (!body || op.getNumLoops() == 0 ||
        op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
      return;
    auto yield = dyn_cast<linalg::YieldOp>(body->getTerminator());
    if (!yield || yield.getNumOperands() != op.getNumDpsInits())
      return;
    for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      BlockArgument accumulator = op.getMatchingBlockArgument(&init);
      Operation *combiner = yield.getOperand(i).getDefiningOp();
      if (!combiner || combiner->getBlock() != body ||
          !llvm::is_contained(combiner->getOperands(), accumulator))
        continue;
      auto flags = dyn_cast<arith::ArithFastMathInterface>(combiner);
      if (!flags ||
          !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp,
               arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(combiner))
        continue;
      arith::FastMathFlagsAttr present = flags.getFastMathFlagsAttr();
      auto attr = arith::FastMathFlagsAttr::get(
          op.getContext(),
          (present ? present.getValue() : arith::FastMathFlags::none) |
              arith::FastMathFlags::reassoc);
      combiner->setAttr(flags.getFastMathAttrName(), attr);
    }
  });
}

struct CPUReorderLoopsPass : impl::CPUReorderLoopsBase<CPUReorderLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateReorderLoopsPatterns(patterns, transposeBlock);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    reassociateInnermostReductions(getOperation());
    if (vectorWidth > 0) {
      SmallVector<Operation *> loops =
          vectorizeBroadcasts(getOperation(), vectorWidth);
      SmallVector<Operation *> steps = collectSteps(loops);
      // The vectors of a tile (1 x ... x 1 x lanes) as 1-D ones, read and
      // written with loads and stores (a broadcast scalar as a 0-D read,
      // which nothing later lowers, as a load). Only these: the tiles of
      // contractions have transfers of their own (a column of a matrix as
      // vector<16x1xf32>), which these patterns would turn round and round.
      // First each step's vectors of several positions as one vector per
      // position (1 x ... x 1 x lanes).
      RewritePatternSet unroll(&getContext());
      vector::populateVectorUnrollPatterns(
          unroll,
          vector::UnrollVectorOptions().setNativeShapeFn(
              [&](Operation *op) -> std::optional<SmallVector<int64_t>> {
                auto type = dyn_cast<VectorType>(
                    op->getNumResults() == 1 ? op->getResult(0).getType()
                    : isa<vector::TransferWriteOp>(op)
                        ? op->getOperand(0).getType()
                        : Type());
                if (!type || type.getRank() < 2)
                  return std::nullopt;
                SmallVector<int64_t> shape(type.getRank(), 1);
                shape.back() = type.getShape().back();
                return shape;
              }));
      if (!steps.empty() &&
          failed(applyOpPatternsGreedily(
              steps, std::move(unroll),
              GreedyRewriteConfig().setStrictness(
                  GreedyRewriteStrictness::ExistingAndNewOps))))
        return signalPassFailure();
      steps = collectSteps(loops);
      RewritePatternSet vectors(&getContext());
      vector::populateCastAwayVectorLeadingOneDimPatterns(vectors);
      vector::populateVectorTransferPermutationMapLoweringPatterns(vectors);
      vector::populateVectorTransferLoweringPatterns(vectors,
                                                     /*maxTransferRank=*/1);
      vectors.add<ScalarReadAsLoad>(&getContext());
      if (!steps.empty() &&
          failed(applyOpPatternsGreedily(
              steps, std::move(vectors),
              GreedyRewriteConfig().setStrictness(
                  GreedyRewriteStrictness::ExistingAndNewOps))))
        return signalPassFailure();
    }
    // The blocks' transposes as shuffles of whole rows (LLVM's own lowering
    // of a 2-D transpose moves one element at a time).
    RewritePatternSet transposes(&getContext());
    vector::populateVectorTransposeLoweringPatterns(
        transposes, vector::VectorTransposeLowering::Shuffle16x16);
    if (failed(applyPatternsGreedily(getOperation(), std::move(transposes))))
      return signalPassFailure();
  }
};

} // namespace

void populateReorderLoopsPatterns(RewritePatternSet &patterns,
                                  int64_t transposeBlock) {
  patterns.add<ReorderContractionLoops, CollapseContiguousDims>(
      patterns.getContext());
  if (transposeBlock > 0)
    patterns.add<VectorizeTranspose>(patterns.getContext(), transposeBlock);
}

} // namespace kiln::cpu
