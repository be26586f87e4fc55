//===- ConvToWinograd.cpp - 3x3 convolutions by Winograd's algorithm ------===//
//
// A 3x3 stride-1 convolution computes each m x m block of its output from an
// (m+2) x (m+2) tile of its input. Winograd's F(m x m, 3 x 3) (see
// Winograd.h) does it with (m+2)^2 multiplications per tile and channel pair
// instead of 9 m^2: 2.25x fewer for F(2,3), 4x for F(4,3), 5.06x for F(6,3).
// For a whole layer the multiplications become (m+2)^2 independent matrix
// products, one per position in the transformed tile,
//
//   M[b, k, p] = sum_c U[b, k, c] * V[b, c, p]
//
// with U the transformed filters (computed here, at compile time, from the
// constant weights) and V the transformed input tiles. These are ordinary
// contractions, so they get the register-blocked vector code of
// kiln-cpu-tile-and-vectorize. In the NCHW layout the input and output
// transforms are two small separable contractions each (rows, then
// columns), linalg.generic ops that run as loops. In the blocked layout each
// transform is one elementwise op over the channel block and the tiles that
// reads all of a tile's values and writes all of its transformed ones, with
// the matrices' constants folded into the arithmetic: every value is loaded
// once, and a zero coefficient costs nothing.
//
// Kiln's own rather than upstream's linalg.winograd_* ops: those take NHWC
// and FHWC and stop at F(4,3); Kiln's convolutions are NCHW, and F(6,3) is
// the variant with the fewest multiplications.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/KernelConfig.h"
#include "codegen/Common/Passes.h"
#include "codegen/Common/Winograd.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENCONVTOWINOGRAD
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {

bool isWinogradCandidate(linalg::Conv2DNchwFchwOp conv) {
  if (!conv.hasPureTensorSemantics())
    return false;
  auto input = dyn_cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto filter = dyn_cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto output = dyn_cast<RankedTensorType>(conv.getOutputs()[0].getType());
  if (!input || !filter || !output || !input.hasStaticShape() ||
      !filter.hasStaticShape() || !output.hasStaticShape())
    return false;
  if (!output.getElementType().isF32() ||
      input.getElementType() != output.getElementType() ||
      filter.getElementType() != output.getElementType())
    return false;
  if (filter.getDimSize(2) != 3 || filter.getDimSize(3) != 3)
    return false;
  if (!llvm::all_of(conv.getStrides().getValues<int64_t>(),
                    [](int64_t s) { return s == 1; }) ||
      !llvm::all_of(conv.getDilations().getValues<int64_t>(),
                    [](int64_t d) { return d == 1; }))
    return false;
  // The filter transform happens at compile time.
  Attribute weights;
  if (!matchPattern(conv.getInputs()[1], m_Constant(&weights)))
    return false;
  return isa<DenseElementsAttr>(weights) ||
         isa<DenseF32ResourceElementsAttr>(weights);
}

namespace {

/// A constant f32 tensor of `shape` from row-major doubles.
Value constantTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                     ArrayRef<double> values) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  if (values.size() <= 64) {
    SmallVector<float> data(values.begin(), values.end());
    return arith::ConstantOp::create(
        b, loc, type, DenseElementsAttr::get(type, ArrayRef<float>(data)));
  }
  // A transformed filter: a resource blob, which is neither hashed nor
  // uniqued in the context (a 512-channel layer's is 9.4 M floats).
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(values.size() * sizeof(float), 64);
  auto *data = reinterpret_cast<float *>(blob.getMutableData().data());
  for (auto [i, v] : llvm::enumerate(values))
    data[i] = static_cast<float>(v);
  return arith::ConstantOp::create(
      b, loc,
      DenseResourceElementsAttr::get(type, "winograd", std::move(blob)));
}

/// A zero-filled tensor of `shape`.
Value zeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// out[...] += a[...] * b[...] over `dims` loops, the last `reductions` of
/// which are reductions.
Value multiplyAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         Value init, unsigned dims, unsigned reductions,
                         AffineMap lhsMap, AffineMap rhsMap, AffineMap outMap) {
  SmallVector<utils::IteratorType> iterators(dims,
                                             utils::IteratorType::parallel);
  for (unsigned i = dims - reductions; i < dims; ++i)
    iterators[i] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{lhs, rhs}, ValueRange{init},
             SmallVector<AffineMap>{lhsMap, rhsMap, outMap}, iterators,
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               Value mul = arith::MulFOp::create(nb, nloc, args[0], args[1]);
               Value add = arith::AddFOp::create(nb, nloc, mul, args[2]);
               linalg::YieldOp::create(nb, nloc, add);
             })
      .getResult(0);
}

/// sum_k coefs[k] * values[k] (+ init), with the coefficients as constants:
/// a zero one drops its term, one and minus one make an addition or a
/// subtraction, the others a fused multiply-add.
Value linearCombination(OpBuilder &b, Location loc, ArrayRef<double> coefs,
                        ArrayRef<Value> values, Value init) {
  Value sum = init;
  // Positive terms first, so that a -1 subtracts rather than negates.
  SmallVector<std::pair<double, Value>> terms;
  for (auto [coef, value] : llvm::zip_equal(coefs, values))
    if (coef > 0.0)
      terms.emplace_back(coef, value);
  for (auto [coef, value] : llvm::zip_equal(coefs, values))
    if (coef < 0.0)
      terms.emplace_back(coef, value);
  for (auto [coef, value] : terms) {
    if (coef == 1.0 || coef == -1.0) {
      if (!sum)
        sum = coef == 1.0 ? value : arith::NegFOp::create(b, loc, value);
      else if (coef == 1.0)
        sum = arith::AddFOp::create(b, loc, sum, value);
      else
        sum = arith::SubFOp::create(b, loc, sum, value);
      continue;
    }
    Value factor = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(coef)));
    sum = sum ? math::FmaOp::create(b, loc, factor, value, sum).getResult()
              : arith::MulFOp::create(b, loc, factor, value).getResult();
  }
  return sum ? sum
             : arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f))
                   .getResult();
}

/// left * tile * right^T for one tile of rows x cols values (row-major), left
/// being outRows x rows and right outCols x cols: outRows x outCols values,
/// each added to its `inits` entry when there are inits.
SmallVector<Value> transformTile(OpBuilder &b, Location loc,
                                 ArrayRef<double> left, int64_t outRows,
                                 ArrayRef<double> right, int64_t outCols,
                                 ArrayRef<Value> tile, int64_t rows,
                                 int64_t cols, ArrayRef<Value> inits) {
  // The rows' combinations first: half[X][j] = sum_s left[X][s] tile[s][j].
  SmallVector<Value> half;
  for (int64_t x = 0; x < outRows; ++x)
    for (int64_t j = 0; j < cols; ++j) {
      SmallVector<Value> column;
      for (int64_t s = 0; s < rows; ++s)
        column.push_back(tile[s * cols + j]);
      half.push_back(linearCombination(b, loc, left.slice(x * rows, rows),
                                       column, Value()));
    }
  SmallVector<Value> result;
  for (int64_t x = 0; x < outRows; ++x)
    for (int64_t y = 0; y < outCols; ++y)
      result.push_back(
          linearCombination(b, loc, right.slice(y * cols, cols),
                            ArrayRef<Value>(half).slice(x * cols, cols),
                            inits.empty() ? Value() : inits[x * outCols + y]));
  return result;
}

/// The slice [x, y, 0, ...] of `tensor`, its two leading dimensions dropped.
Value tileSlice(OpBuilder &b, Location loc, Value tensor, int64_t x,
                int64_t y) {
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = b.getIndexAttr(x);
  offsets[1] = b.getIndexAttr(y);
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(b.getContext(), type.getShape());
  sizes[0] = sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  auto sliceType = RankedTensorType::get(type.getShape().drop_front(2),
                                         type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, tensor, offsets,
                                        sizes, strides);
}

/// `parts[x * count + y]` inserted into `tensor` at [x, y, 0, ...].
Value insertTiles(OpBuilder &b, Location loc, ValueRange parts, Value tensor,
                  int64_t count) {
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(b.getContext(), type.getShape());
  sizes[0] = sizes[1] = b.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  for (auto [index, part] : llvm::enumerate(parts)) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[0] = b.getIndexAttr(static_cast<int64_t>(index) / count);
    offsets[1] = b.getIndexAttr(static_cast<int64_t>(index) % count);
    tensor = tensor::InsertSliceOp::create(b, loc, part, tensor, offsets, sizes,
                                           strides);
  }
  return tensor;
}

/// The bias a blocked convolution's init broadcasts ([kBlocks, c] along
/// dimensions 1 and 4 of [n, kBlocks, h, w, c]), or null when the init is
/// anything else.
Value broadcastBias(Value init) {
  auto generic = init.getDefiningOp<linalg::GenericOp>();
  if (!generic || !isBroadcastCopy(generic) || generic.getNumLoops() != 5)
    return nullptr;
  MLIRContext *ctx = generic.getContext();
  AffineMap bias = AffineMap::get(
      5, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(4, ctx)}, ctx);
  if (generic.getMatchingIndexingMap(generic.getDpsInputOperand(0)) != bias ||
      generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)) !=
          AffineMap::getMultiDimIdentityMap(5, ctx))
    return nullptr;
  return generic.getDpsInputOperand(0)->get();
}

/// Winograd's output in whole tiles, `full`, cut to `outputType` (its
/// leading corner) where the tiles overhang the convolution's output.
Value crop(OpBuilder &b, Location loc, Value full,
           RankedTensorType outputType) {
  if (full.getType() == outputType)
    return full;
  int64_t rank = outputType.getRank();
  return tensor::ExtractSliceOp::create(
      b, loc, outputType, full,
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
      getAsIndexOpFoldResult(b.getContext(), outputType.getShape()),
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
}

/// Winograd's output in whole tiles, `full`, cut to the convolution's output
/// and added to what the convolution accumulated into (`init`: its bias, or
/// zeros).
Value cropAndAdd(OpBuilder &b, Location loc, Value full, Value init) {
  auto outputType = cast<RankedTensorType>(init.getType());
  int64_t rank = outputType.getRank();
  Value cropped = crop(b, loc, full, outputType);
  AffineMap id = b.getMultiDimIdentityMap(rank);
  // The init is read as an input, so that elementwise fusion can take its
  // producer (a bias broadcast) in.
  Value empty = tensor::EmptyOp::create(b, loc, outputType.getShape(),
                                        outputType.getElementType());
  return linalg::GenericOp::create(
             b, loc, outputType, ValueRange{cropped, init}, ValueRange{empty},
             SmallVector<AffineMap>{id, id, id},
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               Value add = arith::AddFOp::create(nb, nloc, args[0], args[1]);
               linalg::YieldOp::create(nb, nloc, add);
             })
      .getResult(0);
}

struct Conv2DNchwFchwToWinograd : OpRewritePattern<linalg::Conv2DNchwFchwOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::Conv2DNchwFchwOp conv,
                                PatternRewriter &rewriter) const override {
    std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(conv);
    std::optional<int> tile =
        algorithm ? winogradTileOf(*algorithm) : std::nullopt;
    if (!tile)
      return rewriter.notifyMatchFailure(conv, "not marked for Winograd");
    if (!isWinogradCandidate(conv))
      return rewriter.notifyMatchFailure(conv, "not a Winograd candidate");

    MLIRContext *ctx = rewriter.getContext();
    Location loc = conv.getLoc();
    const int64_t m = *tile;
    WinogradTransform t = winogradTransform(static_cast<int>(m), 3);
    const int64_t a = t.alpha;

    Value input = conv.getInputs()[0];
    auto inputType = cast<RankedTensorType>(input.getType());
    auto outputType = cast<RankedTensorType>(conv.getOutputs()[0].getType());
    int64_t n = inputType.getDimSize(0), c = inputType.getDimSize(1);
    int64_t k = outputType.getDimSize(1);
    int64_t h = outputType.getDimSize(2), w = outputType.getDimSize(3);
    int64_t th = llvm::divideCeil(h, m), tw = llvm::divideCeil(w, m);
    int64_t p = n * th * tw;

    // U[x, y, k, c] = (G g[k, c] G^T)[x, y], at compile time.
    std::optional<SmallVector<double>> weights =
        constantValues(conv.getInputs()[1]);
    if (!weights)
      return rewriter.notifyMatchFailure(conv, "weights not readable");
    const SmallVector<double> &g = *weights;
    SmallVector<double> u(a * a * k * c, 0.0);
    SmallVector<double> gg(a * 3);
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t cc = 0; cc < c; ++cc) {
        const double *f = &g[(kk * c + cc) * 9];
        for (int64_t x = 0; x < a; ++x) // G g: a x 3
          for (int64_t j = 0; j < 3; ++j) {
            double sum = 0;
            for (int64_t i = 0; i < 3; ++i)
              sum += t.g[x * 3 + i] * f[i * 3 + j];
            gg[x * 3 + j] = sum;
          }
        for (int64_t x = 0; x < a; ++x) // (G g) G^T: a x a
          for (int64_t y = 0; y < a; ++y) {
            double sum = 0;
            for (int64_t j = 0; j < 3; ++j)
              sum += gg[x * 3 + j] * t.g[y * 3 + j];
            u[((x * a + y) * k + kk) * c + cc] = sum;
          }
      }
    Value filter = constantTensor(rewriter, loc, {a * a, k, c}, u);
    Value bt = constantTensor(rewriter, loc, {a, a}, t.bt);
    Value at = constantTensor(rewriter, loc, {m, a}, t.at);

    // The input, padded with zeros to whole tiles.
    // (The input has h + 2 rows and w + 2 columns: never more than needed.)
    int64_t needH = th * m + 2, needW = tw * m + 2;
    int64_t padH = needH - inputType.getDimSize(2);
    int64_t padW = needW - inputType.getDimSize(3);
    if (padH > 0 || padW > 0) {
      SmallVector<OpFoldResult> low(4, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> high = {
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
          rewriter.getIndexAttr(padH), rewriter.getIndexAttr(padW)};
      auto paddedType =
          RankedTensorType::get({n, c, needH, needW}, rewriter.getF32Type());
      Value zero = arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getF32FloatAttr(0.0f));
      input = tensor::PadOp::create(rewriter, loc, paddedType, input, low, high,
                                    zero);
    }

    // Input transform, rows: T[x, j, c, n, i, l] = sum_s BT[x, s] *
    // in[n, c, i*m + s, l*m + j].
    AffineExpr d0, d1, d2, d3, d4, d5, d6;
    bindDims(ctx, d0, d1, d2, d3, d4, d5, d6);
    auto map = [&](ArrayRef<AffineExpr> results) {
      return AffineMap::get(7, 0, results, ctx);
    };
    Value rows = multiplyAccumulate(
        rewriter, loc, bt, input, zeros(rewriter, loc, {a, a, c, n, th, tw}), 7,
        1, map({d0, d6}), map({d3, d2, d4 * m + d6, d5 * m + d1}),
        map({d0, d1, d2, d3, d4, d5}));
    // Columns: V[x, y, c, n, i, l] = sum_j T[x, j, c, n, i, l] * BT[y, j].
    Value tiles = multiplyAccumulate(
        rewriter, loc, rows, bt, zeros(rewriter, loc, {a, a, c, n, th, tw}), 7,
        1, map({d0, d6, d2, d3, d4, d5}), map({d1, d6}),
        map({d0, d1, d2, d3, d4, d5}));
    Value v = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({a * a, c, p}, rewriter.getF32Type()), tiles,
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3, 4, 5}});

    // The (m+2)^2 matrix products: M[b, k, p] = sum_c U[b, k, c] * V[b, c, p].
    AffineExpr eb, ek, ep, ec;
    bindDims(ctx, eb, ek, ep, ec);
    Value products = multiplyAccumulate(
        rewriter, loc, filter, v, zeros(rewriter, loc, {a * a, k, p}), 4, 1,
        AffineMap::get(4, 0, {eb, ek, ec}, ctx),
        AffineMap::get(4, 0, {eb, ec, ep}, ctx),
        AffineMap::get(4, 0, {eb, ek, ep}, ctx));
    Value mm = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({a, a, k, n, th, tw}, rewriter.getF32Type()),
        products, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3, 4, 5}});

    // Output transform, rows: S[r, y, k, n, i, l] = sum_x AT[r, x] *
    // M[x, y, k, n, i, l].
    Value outRows = multiplyAccumulate(
        rewriter, loc, at, mm, zeros(rewriter, loc, {m, a, k, n, th, tw}), 7, 1,
        map({d0, d6}), map({d6, d1, d2, d3, d4, d5}),
        map({d0, d1, d2, d3, d4, d5}));
    // Columns, into the output's blocks: Y[n, k, i, r, l, s] = sum_y
    // S[r, y, k, n, i, l] * AT[s, y]. Dimensions (n, k, i, r, l, s, y).
    bool exact = h == th * m && w == tw * m;
    Value init = conv.getOutputs()[0];
    Value blockedInit =
        exact ? tensor::ExpandShapeOp::create(
                    rewriter, loc,
                    RankedTensorType::get({n, k, th, m, tw, m},
                                          rewriter.getF32Type()),
                    init,
                    SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}})
                    .getResult()
              : zeros(rewriter, loc, {n, k, th, m, tw, m});
    Value blocks =
        multiplyAccumulate(rewriter, loc, outRows, at, blockedInit, 7, 1,
                           map({d3, d6, d1, d0, d2, d4}), map({d5, d6}),
                           map({d0, d1, d2, d3, d4, d5}));
    Value result = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({n, k, th * m, tw * m}, rewriter.getF32Type()),
        blocks, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}});
    if (!exact)
      result = cropAndAdd(rewriter, loc, result, init);
    rewriter.replaceOp(conv, result);
    return success();
  }
};

/// Winograd on a blocked convolution (BlockedConv.h). The channel blocks
/// stay innermost throughout, so that the products are contractions whose
/// vector dimension is the output's block c (whole vectors) and whose rows
/// are the tiles:
///
///   M[b, ko, p, o] = sum_{cb, i} V[b, cb, p, i] * U[b, ko, cb, i, o]
///
/// and the output transform writes the blocked output directly.
struct BlockedConvToWinograd : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<BlockedConv> conv = matchBlockedConv(op);
    if (!conv)
      return rewriter.notifyMatchFailure(op, "not a blocked convolution");
    std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(op);
    std::optional<int> tile =
        algorithm ? winogradTileOf(*algorithm) : std::nullopt;
    if (!tile)
      return rewriter.notifyMatchFailure(op, "not marked for Winograd");
    if (!isWinogradCandidate(*conv))
      return rewriter.notifyMatchFailure(op, "not a Winograd candidate");
    std::optional<SmallVector<double>> weights = constantValues(conv->weight);
    if (!weights)
      return rewriter.notifyMatchFailure(op, "weights not readable");

    MLIRContext *ctx = rewriter.getContext();
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    const int64_t m = *tile;
    WinogradTransform t = winogradTransform(static_cast<int>(m), 3);
    const int64_t a = t.alpha;
    ArrayRef<int64_t> in = conv->inputShape;
    ArrayRef<int64_t> out = conv->outputShape;
    int64_t n = in[0], cBlocks = in[1], ci = in[4];
    int64_t kBlocks = out[1], c = out[4];
    int64_t h = out[2], w = out[3];
    int64_t th = llvm::divideCeil(h, m), tw = llvm::divideCeil(w, m);
    int64_t p = n * th * tw;

    // U[X, Y, ko, cb, i, o] = sum_{y, x} G[X, y] w[ko, cb, y, x, i, o]
    // G[Y, x], at compile time.
    const SmallVector<double> &g = *weights;
    int64_t lanes = ci * c; // (i, o) pairs of one (ko, cb, y, x)
    SmallVector<double> u(a * a * kBlocks * cBlocks * lanes, 0.0);
    SmallVector<double> gg(a * 3 * lanes);
    for (int64_t kb = 0; kb < kBlocks; ++kb)
      for (int64_t cb = 0; cb < cBlocks; ++cb) {
        const double *f = &g[(kb * cBlocks + cb) * 9 * lanes];
        // G g: [X, x, lane]
        for (int64_t x = 0; x < a; ++x)
          for (int64_t j = 0; j < 3; ++j)
            for (int64_t l = 0; l < lanes; ++l) {
              double sum = 0;
              for (int64_t i = 0; i < 3; ++i)
                sum += t.g[x * 3 + i] * f[(i * 3 + j) * lanes + l];
              gg[(x * 3 + j) * lanes + l] = sum;
            }
        // (G g) G^T: [X, Y, lane]
        for (int64_t x = 0; x < a; ++x)
          for (int64_t y = 0; y < a; ++y)
            for (int64_t l = 0; l < lanes; ++l) {
              double sum = 0;
              for (int64_t j = 0; j < 3; ++j)
                sum += gg[(x * 3 + j) * lanes + l] * t.g[y * 3 + j];
              u[(((x * a + y) * kBlocks + kb) * cBlocks + cb) * lanes + l] =
                  sum;
            }
      }
    Value filter =
        constantTensor(rewriter, loc, {a * a, kBlocks, cBlocks, ci, c}, u);

    // The input (padded by the convolution already) padded with zeros to
    // whole tiles.
    Value input = conv->input;
    int64_t needH = th * m + 2, needW = tw * m + 2;
    int64_t padH = std::max<int64_t>(needH - in[2], 0);
    int64_t padW = std::max<int64_t>(needW - in[3], 0);
    if (padH > 0 || padW > 0) {
      SmallVector<OpFoldResult> low(5, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> high = {
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
          rewriter.getIndexAttr(padH), rewriter.getIndexAttr(padW),
          rewriter.getIndexAttr(0)};
      auto paddedType = RankedTensorType::get(
          {n, cBlocks, in[2] + padH, in[3] + padW, ci}, f32);
      Value zero =
          arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
      input = tensor::PadOp::create(rewriter, loc, paddedType, input, low, high,
                                    zero);
    }

    // Input transform: V[X, Y, cb, n, ti, tj, i] = sum_{s, j} BT[X, s] *
    // in[n, cb, ti*m + s, tj*m + j, i] * BT[Y, j], one elementwise op over
    // (cb, n, ti, tj, i) that reads the a x a values of a tile, one operand
    // each, and writes the a x a transformed ones, one result each (a slice
    // of V): every input value is read once, along the contiguous channel
    // block, and the transform's constants are folded into its arithmetic.
    AffineExpr e0, e1, e2, e3, e4;
    bindDims(ctx, e0, e1, e2, e3, e4);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(5, ctx);
    SmallVector<utils::IteratorType> parallel(5, utils::IteratorType::parallel);
    SmallVector<Value> tileValues;
    SmallVector<AffineMap> maps;
    for (int64_t s = 0; s < a; ++s)
      for (int64_t j = 0; j < a; ++j) {
        tileValues.push_back(input);
        maps.push_back(
            AffineMap::get(5, 0, {e1, e0, e2 * m + s, e3 * m + j, e4}, ctx));
      }
    Value vEmpty = tensor::EmptyOp::create(
        rewriter, loc, ArrayRef<int64_t>{a, a, cBlocks, n, th, tw, ci}, f32);
    // Each part a tensor of its own: One-Shot Bufferize cannot write one op's
    // results into disjoint slices of one tensor in place, and copies them;
    // kiln-codegen-plan-memory then places each part inside the whole.
    SmallVector<Value> vParts;
    for (int64_t x = 0; x < a; ++x)
      for (int64_t y = 0; y < a; ++y) {
        vParts.push_back(tensor::EmptyOp::create(
            rewriter, loc, ArrayRef<int64_t>{cBlocks, n, th, tw, ci}, f32));
        maps.push_back(identity);
      }
    auto inputTransform = linalg::GenericOp::create(
        rewriter, loc, TypeRange(ValueRange(vParts)), tileValues, vParts, maps,
        parallel, [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> v =
              transformTile(b, l, t.bt, a, t.bt, a,
                            SmallVector<Value>(args.take_front(a * a)), a, a,
                            /*inits=*/{});
          linalg::YieldOp::create(b, l, v);
        });
    Value tiles =
        insertTiles(rewriter, loc, inputTransform.getResults(), vEmpty, a);
    Value v = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({a * a, cBlocks, p, ci}, f32),
        tiles, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3, 4, 5}, {6}});

    // The products: M[b, ko, p, o] = sum_{cb, i} V[b, cb, p, i] *
    // U[b, ko, cb, i, o].
    AffineExpr eb, ek, ep, eo, ec, ei;
    bindDims(ctx, eb, ek, ep, eo, ec, ei);
    auto products = cast<linalg::GenericOp>(
        multiplyAccumulate(rewriter, loc, v, filter,
                           zeros(rewriter, loc, {a * a, kBlocks, p, c}), 6, 2,
                           AffineMap::get(6, 0, {eb, ec, ep, ei}, ctx),
                           AffineMap::get(6, 0, {eb, ek, ec, ei, eo}, ctx),
                           AffineMap::get(6, 0, {eb, ek, ep, eo}, ctx))
            .getDefiningOp());
    copyKernelConfig(op, products);
    Value mm = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({a, a, kBlocks, n, th, tw, c}, f32),
        products.getResult(0),
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3, 4, 5}, {6}});

    // Output transform, into the output's blocks: Y[n, ko, ti, r, tj, s, o]
    // = sum_{X, Y} AT[r, X] * M[X, Y, ko, n, ti, tj, o] * AT[s, Y]. One
    // elementwise op over (ko, n, ti, tj, o), as the input transform: a x a
    // operands (slices of M), m x m results, each a tensor of its own that
    // becomes a slice of the blocked output ([r, s] with the output's
    // dimensions ordered (r, s, n, ko, ti, tj, o)).
    SmallVector<Value> mParts, outParts;
    SmallVector<AffineMap> outMaps;
    for (int64_t x = 0; x < a; ++x)
      for (int64_t y = 0; y < a; ++y) {
        mParts.push_back(tileSlice(rewriter, loc, mm, x, y));
        outMaps.push_back(identity);
      }
    // A bias broadcast into the init is added here, read as [ko, o].
    Value bias = broadcastBias(conv->init);
    if (bias) {
      mParts.push_back(bias);
      outMaps.push_back(AffineMap::get(5, 0, {e0, e4}, ctx));
    }
    for (int64_t r = 0; r < m * m; ++r) {
      outParts.push_back(tensor::EmptyOp::create(
          rewriter, loc, ArrayRef<int64_t>{n, kBlocks, th, tw, c}, f32));
      // (ko, n, ti, tj, o) -> [n, ko, ti, tj, o]
      outMaps.push_back(AffineMap::get(5, 0, {e1, e0, e2, e3, e4}, ctx));
    }
    auto outputTransform = linalg::GenericOp::create(
        rewriter, loc, TypeRange(ValueRange(outParts)), mParts, outParts,
        outMaps, parallel, [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> inits;
          if (bias)
            inits.assign(m * m, args[a * a]);
          SmallVector<Value> y = transformTile(
              b, l, t.at, m, t.at, m,
              SmallVector<Value>(args.take_front(a * a)), a, a, inits);
          linalg::YieldOp::create(b, l, y);
        });
    Value parts = insertTiles(
        rewriter, loc, outputTransform.getResults(),
        tensor::EmptyOp::create(
            rewriter, loc, ArrayRef<int64_t>{m, m, n, kBlocks, th, tw, c}, f32),
        m);
    // Into the output's blocks, (r, s, n, ko, ti, tj, o) -> (n, ko, ti, r, tj,
    // s, o), a transpose that LLVM vectorizes along o; then cropped to the
    // output where the tiles overhang it. Where the init is not a bias the
    // transform took in, the crop is added to it in an elementwise op,
    // which kiln-codegen-fuse-elementwise fuses with the epilogue after it.
    auto blockedType =
        RankedTensorType::get({n, kBlocks, th, m, tw, m, c}, f32);
    SmallVector<ReassociationIndices> blockDims = {
        {0}, {1}, {2, 3}, {4, 5}, {6}};
    Value blocks =
        linalg::TransposeOp::create(
            rewriter, loc, parts,
            tensor::EmptyOp::create(rewriter, loc, blockedType.getShape(), f32),
            ArrayRef<int64_t>{2, 3, 4, 0, 5, 1, 6})
            .getResult()[0];
    Value full = tensor::CollapseShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({n, kBlocks, th * m, tw * m, c}, f32), blocks,
        blockDims);
    Value result = bias ? crop(rewriter, loc, full,
                               cast<RankedTensorType>(conv->init.getType()))
                        : cropAndAdd(rewriter, loc, full, conv->init);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CodegenConvToWinogradPass
    : impl::CodegenConvToWinogradBase<CodegenConvToWinogradPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<Conv2DNchwFchwToWinograd, BlockedConvToWinograd>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A convolution still marked for Winograd could not be rewritten.
    WalkResult left = getOperation().walk([](linalg::LinalgOp conv) {
      if (!isa<linalg::Conv2DNchwFchwOp>(conv.getOperation()) &&
          !matchBlockedConv(conv))
        return WalkResult::advance();
      std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(conv);
      if (!algorithm || !winogradTileOf(*algorithm))
        return WalkResult::advance();
      conv.emitOpError("cannot use ")
          << stringifyConvAlgorithm(*algorithm)
          << ": it needs a 3x3, stride-1, undilated f32 convolution with "
             "static shapes and constant weights";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln::codegen
