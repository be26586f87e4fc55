//===- PackWeights.cpp - Constant matmul weights in panels ----------------===//
//
// A matmul C[M, N] = A[M, K] * B[K, N] reads, for each output block of nb
// columns, the rows B[k, n0 : n0 + nb] one after the other: nb floats every
// N floats. With N a multiple of 1024, every row of a panel falls in the same
// L1 set, and the panel is re-read from L2 for every block of rows of A.
// When B is a constant (a layer's weight), this pass lays it out at compile
// time as panels Bp[N / nb, K, nb], each a contiguous K x nb block, and
// computes
//
//   C3[m, n1, j] += A[m, k] * Bp[n1, k, j]       C = collapse(C3)
//
// a contraction whose vector dimension j reads Bp contiguously. A transposed
// weight (Gemm's transB, B given as [N, K]) is packed the same way, which
// also removes its strided reads. An expand_shape after the matmul (batch
// dimensions) expands the packed result instead, so that the elementwise op
// after it reads through reshapes only.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"
#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/KernelConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUPACKWEIGHTS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// `init`, the accumulators' start of a product of [rows, N], as
/// `type` ([rows, N / nb, nb]). A fill, or a broadcast of one value per
/// column (a bias), is made again in that shape, so that the product's
/// tiles fuse it as they fused it before; anything else is expanded.
Value panelInit(PatternRewriter &rewriter, Location loc, Value init,
                RankedTensorType type) {
  auto empty = [&]() -> Value {
    return tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                   type.getElementType());
  };
  if (auto fill = init.getDefiningOp<linalg::FillOp>())
    return linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], empty())
        .getResult(0);
  // The column values: a linalg.broadcast's along rows, or a generic that
  // copies them to every row.
  Value columns;
  if (auto broadcast = init.getDefiningOp<linalg::BroadcastOp>();
      broadcast && broadcast.getDimensions() == ArrayRef<int64_t>{0})
    columns = broadcast.getInput();
  if (auto generic = init.getDefiningOp<linalg::GenericOp>();
      generic && generic.getNumDpsInputs() == 1 &&
      codegen::isBroadcastCopy(generic) &&
      generic.getIndexingMapsArray()[0] ==
          AffineMap::get(2, 0, {getAffineDimExpr(1, rewriter.getContext())},
                         rewriter.getContext()))
    columns = generic.getDpsInputs()[0];
  if (columns) {
    auto columnsType = RankedTensorType::get(
        {type.getDimSize(1), type.getDimSize(2)}, type.getElementType());
    Value panels = tensor::ExpandShapeOp::create(
        rewriter, loc, columnsType, columns,
        SmallVector<ReassociationIndices>{{0, 1}});
    return linalg::BroadcastOp::create(rewriter, loc, panels, empty(),
                                       ArrayRef<int64_t>{0})
        .getResult()[0];
  }
  return tensor::ExpandShapeOp::create(
      rewriter, loc, type, init,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// Replaces `op`, a product whose result is [rows, N], by `result3`, the
/// same product in panels ([rows, N / nb, nb]) collapsed back. An
/// expand_shape that gives the result its batch dimensions (keeping N
/// whole) expands the packed result instead, and collapses after: the
/// elementwise op after it then reads the panels through reshapes only.
void replaceByPanels(PatternRewriter &rewriter, Operation *op, Value result3,
                     int64_t nb) {
  Location loc = op->getLoc();
  auto cType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t panels = cType.getDimSize(1) / nb;
  Value result = op->getResult(0);
  if (result.hasOneUse()) {
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(*result.user_begin());
        expand && expand.getReassociationIndices().back().size() == 1) {
      SmallVector<ReassociationIndices> groups =
          expand.getReassociationIndices();
      RankedTensorType expandedType = expand.getResultType();
      SmallVector<int64_t> shape(expandedType.getShape().drop_back());
      shape.append({panels, nb});
      int64_t last = static_cast<int64_t>(shape.size()) - 2;
      groups.back() = {last};
      groups.push_back({last + 1});
      Value expanded = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(shape, cType.getElementType()),
          result3, groups);
      SmallVector<ReassociationIndices> join;
      for (int64_t i = 0; i < last; ++i)
        join.push_back({i});
      join.push_back({last, last + 1});
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(expand, expandedType,
                                                           expanded, join);
      rewriter.eraseOp(op);
      return;
    }
  }
  rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
      op, cType, result3, SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

/// Whether `value` is a multiple of `factor`: a constant, or the induction
/// variable of a loop from a multiple by a multiple (a loop over panels).
bool isMultipleOf(OpFoldResult value, int64_t factor) {
  if (std::optional<int64_t> constant = getConstantIntValue(value))
    return *constant % factor == 0;
  auto arg = dyn_cast<BlockArgument>(cast<Value>(value));
  if (!arg)
    return false;
  auto multiple = [&](OpFoldResult bound) {
    std::optional<int64_t> constant = getConstantIntValue(bound);
    return constant && *constant % factor == 0;
  };
  Operation *loop = arg.getOwner()->getParentOp();
  if (auto forall = dyn_cast<scf::ForallOp>(loop)) {
    unsigned i = arg.getArgNumber();
    return i < forall.getRank() && multiple(forall.getMixedLowerBound()[i]) &&
           multiple(forall.getMixedStep()[i]);
  }
  if (auto forOp = dyn_cast<scf::ForOp>(loop))
    return arg == forOp.getInductionVar() && multiple(forOp.getLowerBound()) &&
           multiple(forOp.getStep());
  return false;
}

/// The panels made of one weight, by the weight's constant and the panel
/// width: the products of one weight in blocks of rows
/// (kiln-cpu-tile-symbolic-rows: 64, 8 and 1 rows of a sequence) share
/// them, rather than each holding a copy.
using PackedWeights = llvm::DenseMap<std::pair<Operation *, int64_t>, Value>;

struct PackConstantWeight : OpInterfaceRewritePattern<linalg::LinalgOp> {
  PackConstantWeight(MLIRContext *ctx, int64_t vectorWidth,
                     PackedWeights &packedWeights)
      : OpInterfaceRewritePattern(ctx), vectorWidth(vectorWidth),
        packedWeights(packedWeights) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || op.getNumLoops() != 3 ||
        op.getNumReductionLoops() != 1 ||
        !linalg::isaContractionOpInterface(op))
      return rewriter.notifyMatchFailure(op, "not a 2-D contraction");
    // A contraction inside a loop (a recurrence's step, the state times its
    // weight) is packed too: it reads the whole weight at every step, and a
    // panel read in one stream comes from memory 1.3x faster than rows of a
    // panel strided across pages (an LSTM's 1 MB weight). With one row (a
    // batch of one), kiln-cpu-tile-and-vectorize keeps the row dimension
    // (isPackedMatvec) and steps through each panel with FMAs.
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value init = op.getDpsInits()[0];
    auto aType = dyn_cast<RankedTensorType>(a.getType());
    auto bType = dyn_cast<RankedTensorType>(b.getType());
    auto cType = dyn_cast<RankedTensorType>(init.getType());
    if (!aType || !bType || !cType || !aType.hasStaticShape() ||
        !bType.hasStaticShape() || !cType.hasStaticShape() ||
        !aType.getElementType().isF32() || !bType.getElementType().isF32() ||
        !cType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not static f32");
    if (!linalg::detail::isContractionBody(
            *op.getBlock(), [](Operation *first, Operation *second) {
              return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
            }))
      return rewriter.notifyMatchFailure(op, "not a multiply-add");
    // Loops (m, n, k) as the maps name them: C (m, n), A (m, k), B (k, n)
    // or (n, k).
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto dim = [&](AffineMap map, unsigned i) -> int {
      auto expr = dyn_cast<AffineDimExpr>(map.getResult(i));
      return expr ? static_cast<int>(expr.getPosition()) : -1;
    };
    for (AffineMap map : maps)
      if (map.getNumResults() != 2 || !map.isProjectedPermutation())
        return rewriter.notifyMatchFailure(op, "not a 2-D matmul");
    int m = dim(maps[2], 0), n = dim(maps[2], 1);
    if (dim(maps[0], 0) != m || dim(maps[0], 1) == n)
      return rewriter.notifyMatchFailure(op, "A is not [M, K]");
    int k = dim(maps[0], 1);
    bool transposed;
    if (dim(maps[1], 0) == k && dim(maps[1], 1) == n)
      transposed = false;
    else if (dim(maps[1], 0) == n && dim(maps[1], 1) == k)
      transposed = true;
    else
      return rewriter.notifyMatchFailure(op, "B is not [K, N] or [N, K]");

    // The panel width: the register block's (two vectors, or one where two
    // do not divide N), as kiln-cpu-tile-and-vectorize will choose it.
    KernelConfigAttr config = KernelConfigAttr::of(op);
    int64_t width = config.getVectorWidth().value_or(vectorWidth);
    int64_t rows = cType.getDimSize(0), cols = cType.getDimSize(1);
    int64_t depth = aType.getDimSize(1);
    int64_t nb = width * config.getVectors().value_or(2);
    if (cols % nb != 0 && cols % width == 0)
      nb = width;
    // One panel of a larger constant weight, at a column that a loop over
    // the weight's panels chooses (kiln-cpu-tile-symbolic-rows): B becomes
    // that panel of the whole weight's packing, one contiguous stream.
    if (auto slice = b.getDefiningOp<tensor::ExtractSliceOp>();
        slice && !transposed && cols == nb)
      return packPanelSlice(rewriter, op, slice, nb);
    if (cols <= nb)
      return rewriter.notifyMatchFailure(op, "N is one panel");
    // A ragged N (a classifier's 1000 classes) is padded with zero columns
    // to whole panels; the padded columns of C are computed and dropped.
    int64_t panels = llvm::divideCeil(cols, nb);
    int64_t paddedCols = panels * nb;
    Location loc = op.getLoc();
    Value packed = packedWeight(rewriter, op, b, transposed, nb, depth, cols);
    if (!packed)
      return rewriter.notifyMatchFailure(op, "B is not a constant");

    auto resultType =
        RankedTensorType::get({rows, panels, nb}, rewriter.getF32Type());
    SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
    auto paddedType =
        RankedTensorType::get({rows, paddedCols}, rewriter.getF32Type());
    if (paddedCols != cols) {
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getF32FloatAttr(0.0f));
      init = tensor::PadOp::create(
          rewriter, loc, paddedType, init,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                 rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                 rewriter.getIndexAttr(paddedCols - cols)},
          zero);
    }
    Value init3 = paddedCols != cols
                      ? tensor::ExpandShapeOp::create(rewriter, loc, resultType,
                                                      init, split)
                            .getResult()
                      : panelInit(rewriter, loc, init, resultType);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr em, ep, ej, ek;
    bindDims(ctx, em, ep, ej, ek);
    SmallVector<AffineMap> packedMaps = {
        AffineMap::get(4, 0, {em, ek}, ctx),
        AffineMap::get(4, 0, {ep, ek, ej}, ctx),
        AffineMap::get(4, 0, {em, ep, ej}, ctx)};
    SmallVector<utils::IteratorType> iterators(3,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    auto contraction = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, ValueRange{a, packed}, init3,
        packedMaps, iterators,
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          Value product = arith::MulFOp::create(nb, nloc, args[0], args[1]);
          linalg::YieldOp::create(
              nb, nloc,
              ValueRange{arith::AddFOp::create(nb, nloc, args[2], product)});
        });
    copyKernelConfig(op, contraction);
    Value result3 = contraction.getResult(0);

    // Padded columns are computed and dropped.
    if (paddedCols != cols) {
      Value padded = tensor::CollapseShapeOp::create(rewriter, loc, paddedType,
                                                     result3, split);
      SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(rows),
                                         rewriter.getIndexAttr(cols)};
      SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, cType, padded, offsets, sizes, strides);
      return success();
    }
    replaceByPanels(rewriter, op, result3, nb);
    return success();
  }

  /// `weight` ([depth, cols], or [cols, depth] where `transposed`) laid
  /// out as panels of nb columns, [ceil(cols / nb), depth, nb] (ragged
  /// columns zero), for the product `op`: one constant per weight and
  /// width, shared by the products it dominates; null where the weight is
  /// not a constant.
  Value packedWeight(PatternRewriter &rewriter, Operation *op, Value weight,
                     bool transposed, int64_t nb, int64_t depth,
                     int64_t cols) const {
    int64_t panels = llvm::divideCeil(cols, nb);
    Operation *weightOp = weight.getDefiningOp();
    Value &packed = packedWeights[{weightOp, transposed ? -nb : nb}];
    // Shared where it is defined before the product.
    auto dominates = [&](Operation *def) {
      Operation *ancestor = def->getBlock()->findAncestorOpInBlock(*op);
      return ancestor && def->isBeforeInBlock(ancestor);
    };
    if (!weightOp || (packed && !dominates(packed.getDefiningOp())))
      packed = Value();
    if (packed)
      return packed;
    std::optional<SmallVector<double>> weights = constantValues(weight);
    if (!weights)
      return {};
    auto packedType =
        RankedTensorType::get({panels, depth, nb}, rewriter.getF32Type());
    AsmResourceBlob blob = HeapAsmResourceBlob::allocate(
        panels * depth * nb * sizeof(float), alignof(float));
    auto *data = reinterpret_cast<float *>(blob.getMutableData().data());
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t kk = 0; kk < depth; ++kk)
        for (int64_t j = 0; j < nb; ++j) {
          int64_t col = p * nb + j;
          data[(p * depth + kk) * nb + j] =
              col >= cols ? 0.0f
                          : static_cast<float>(
                                (*weights)[transposed ? col * depth + kk
                                                      : kk * cols + col]);
        }
    // A product in a loop (a block of rows) has it beside the weight,
    // where it dominates the other blocks' products.
    OpBuilder::InsertionGuard guard(rewriter);
    if (weightOp && weightOp->getBlock() != op->getBlock())
      rewriter.setInsertionPointAfter(weightOp);
    packed = arith::ConstantOp::create(
        rewriter, op->getLoc(),
        DenseResourceElementsAttr::get(packedType, "packed", std::move(blob)));
    return packed;
  }

  /// `op` reading its B as `slice`, nb columns of a constant [K, N] weight
  /// at a multiple of nb: B becomes the same panel of the weight's packing
  /// ([K, nb], contiguous), the product unchanged otherwise.
  LogicalResult packPanelSlice(PatternRewriter &rewriter, linalg::LinalgOp op,
                               tensor::ExtractSliceOp slice, int64_t nb) const {
    auto type = dyn_cast<RankedTensorType>(slice.getSourceType());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
        !slice.hasUnitStride() || slice.getType().getRank() != 2)
      return rewriter.notifyMatchFailure(op, "B is not a 2-D slice");
    int64_t depth = type.getDimSize(0), cols = type.getDimSize(1);
    SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
    if (slice.getType().getDimSize(0) != depth ||
        !isConstantIntValue(offsets[0], 0) || cols % nb != 0 ||
        !isMultipleOf(offsets[1], nb))
      return rewriter.notifyMatchFailure(op, "B is not a panel of a weight");
    Value packed = packedWeight(rewriter, op, slice.getSource(),
                                /*transposed=*/false, nb, depth, cols);
    if (!packed)
      return rewriter.notifyMatchFailure(op, "B is not a constant");
    Location loc = slice.getLoc();
    OpFoldResult panel;
    if (std::optional<int64_t> column = getConstantIntValue(offsets[1]))
      panel = rewriter.getIndexAttr(*column / nb);
    else
      panel = arith::DivUIOp::create(
                  rewriter, loc, cast<Value>(offsets[1]),
                  arith::ConstantIndexOp::create(rewriter, loc, nb))
                  .getResult();
    Value view = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get({depth, nb}, type.getElementType()), packed,
        ArrayRef<OpFoldResult>{panel, rewriter.getIndexAttr(0),
                               rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(depth),
                               rewriter.getIndexAttr(nb)},
        SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(1)));
    rewriter.modifyOpInPlace(op, [&] { op.getDpsInputOperand(1)->set(view); });
    return success();
  }

  int64_t vectorWidth;
  PackedWeights &packedWeights;
};

/// A packed matrix product in rows (matchPackedMatmul: acc[r, n] +=
/// ext(x[r, q, j]) * ext(w[q, n, j]), groups of four int8 or two bf16)
/// whose weight is a constant: the weight laid out as panels
/// wp[N / nb, Q, nb, j], nb the register block's columns, and the product
/// in panels, acc3[r, p, c] += ext(x[r, q, j]) * ext(wp[p, q, c, j]). In
/// rows, each step of a tile read its nb x j weights from a row of N x j
/// (12 KB apart for BERT-base's 3072 columns of int8, a page each), and a
/// panel's first pass missed the caches on every step; a panel is one
/// stream (128x768 by 768x3072 u8 x s8 in a chain of such products:
/// 1.34 against 1.12 ms, a C model of the kernel on the Xeon).
struct PackDotProductWeight : OpRewritePattern<linalg::GenericOp> {
  PackDotProductWeight(MLIRContext *ctx, int64_t vectorWidth)
      : OpRewritePattern(ctx), vectorWidth(vectorWidth) {}

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<codegen::PackedMatmul> packed =
        codegen::matchPackedMatmul(op);
    if (!packed || packed->panels)
      return rewriter.notifyMatchFailure(op, "not a packed product in rows");
    Value weight = op.getDpsInputs()[1];
    DenseElementsAttr weights;
    if (!matchPattern(weight, m_Constant(&weights)))
      return rewriter.notifyMatchFailure(op, "the weight is not a constant");
    auto weightType = cast<RankedTensorType>(weight.getType());
    int64_t groups = weightType.getDimSize(0), cols = weightType.getDimSize(1),
            group = weightType.getDimSize(2);
    // The panel width: the tile's (choosePackedMatmulTileSizes in
    // kiln-cpu-tile-and-vectorize), two vectors or one.
    KernelConfigAttr config = KernelConfigAttr::of(op);
    int64_t width = config.getVectorWidth().value_or(vectorWidth);
    int64_t nb = cols % (2 * width) == 0 ? 2 * width
                 : cols % width == 0     ? width
                                         : 0;
    if (nb == 0 || cols <= nb)
      return rewriter.notifyMatchFailure(op, "N is one panel, or ragged");
    int64_t panels = cols / nb;
    auto packedType = RankedTensorType::get({panels, groups, nb, group},
                                            weightType.getElementType());
    DenseElementsAttr packedWeights;
    if (weights.isSplat()) {
      packedWeights = DenseElementsAttr::get(
          packedType, weights.getSplatValue<Attribute>());
    } else {
      // Each lane's group of j elements moves as one piece.
      ArrayRef<char> raw = weights.getRawData();
      int64_t piece = static_cast<int64_t>(raw.size()) / (groups * cols);
      SmallVector<char> data(raw.size());
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t q = 0; q < groups; ++q)
          std::memcpy(&data[((p * groups + q) * nb) * piece],
                      &raw[(q * cols + p * nb) * piece], nb * piece);
      packedWeights = DenseElementsAttr::getFromRawBuffer(packedType, data);
    }
    Location loc = op.getLoc();
    Value packedWeight =
        arith::ConstantOp::create(rewriter, loc, packedWeights);
    auto cType = cast<RankedTensorType>(op.getResult(0).getType());
    int64_t rows = cType.getDimSize(0);
    auto resultType =
        RankedTensorType::get({rows, panels, nb}, cType.getElementType());
    Value init3 = panelInit(rewriter, loc, op.getDpsInits()[0], resultType);
    MLIRContext *ctx = rewriter.getContext();
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // d0 r, d1 p, d2 c | d3 q, d4 j.
    SmallVector<AffineMap> maps = {
        AffineMap::get(5, 0, {d(0), d(3), d(4)}, ctx),
        AffineMap::get(5, 0, {d(1), d(3), d(2), d(4)}, ctx),
        AffineMap::get(5, 0, {d(0), d(1), d(2)}, ctx)};
    SmallVector<utils::IteratorType> iterators(3,
                                               utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    auto product = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType},
        ValueRange{op.getDpsInputs()[0], packedWeight}, init3, maps, iterators);
    // The body as it was: the same arguments, in the same order.
    rewriter.cloneRegionBefore(op.getRegion(), product.getRegion(),
                               product.getRegion().end());
    copyKernelConfig(op, product);
    replaceByPanels(rewriter, op, product.getResult(0), nb);
    return success();
  }

  int64_t vectorWidth;
};

struct CPUPackWeightsPass : impl::CPUPackWeightsBase<CPUPackWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // (The packed constants always have a product using them: none is
    // erased while the patterns run.)
    PackedWeights packedWeights;
    patterns.add<PackConstantWeight>(ctx, vectorWidth, packedWeights);
    patterns.add<PackDotProductWeight>(ctx, vectorWidth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
