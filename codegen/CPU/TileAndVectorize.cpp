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
#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/KernelConfig.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

/// The width of a register block along N (`size` elements): the
/// configuration's, or two vectors, unless two vectors leave a ragged
/// remainder wider than one vector (17 of 49 with 16-lane vectors), which
/// runs several times slower than one-vector blocks with a narrow remainder
/// (1 of 49).
int64_t blockWidth(KernelConfigAttr config, int64_t size, int64_t vectorWidth) {
  int64_t width = config.getVectorWidth().value_or(vectorWidth);
  if (config.getVectors())
    return *config.getVectors() * width;
  return size % (2 * width) > width ? width : 2 * width;
}

bool isPackedMatvec(Operation *op);
bool isProductInPanels(Operation *op);

/// Steps of a packed matrix-vector product's reduction per iteration: its
/// products are summed in pairs before they reach the accumulators, so
/// that one addition, not four dependent FMAs, is the accumulators' chain.
constexpr int64_t kMatvecReductionStep = 4;

/// Tile sizes for one contraction, or an empty vector when it should take the
/// loop path: one row block of the innermost M dimension, two vectors (or
/// one) of the innermost N dimension, one step of the innermost reduction,
/// and 1 everywhere else. The op's kernel configuration, if any, overrides
/// the vector width, the vectors and rows of a block and the reduction step.
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
  KernelConfigAttr config = KernelConfigAttr::of(op);
  int64_t block = blockWidth(config, ranges[n], vectorWidth);
  vectorWidth = config.getVectorWidth().value_or(vectorWidth);
  // A remainder narrower than a block (split off by splitRemainders) is one
  // tile as wide as it is.
  int64_t nTile = ranges[n] < block              ? ranges[n]
                  : ranges[n] % block == 0       ? block
                  : ranges[n] % vectorWidth == 0 ? vectorWidth
                                                 : 0;
  if (nTile == 0)
    return {};
  // Few rows (a matrix-vector product, as a recurrence's step or a batch of
  // one makes) leave most accumulator registers unused and chain each
  // accumulator's FMAs: a wider block along N, up to 8 vectors, keeps the
  // register count (rows x 2 vectors) and reads longer runs of B's rows.
  // Four or eight vectors only: LLVM moves a row of three (vector<48xf32>)
  // element by element through the stack, and the 5-row remainder of a
  // 197-token attention product in 5x48 tiles ran at 3 GFLOP/s (0.49 ms;
  // 0.02 ms in 5x32 tiles).
  if (!config.getVectors() && !config.getRows() && nTile == 2 * vectorWidth &&
      ranges[m] < rows) {
    int64_t most = std::min<int64_t>(8, 2 * rows / ranges[m]);
    for (int64_t vectors = most; vectors > 2; --vectors)
      if (llvm::isPowerOf2_64(vectors) &&
          ranges[n] % (vectors * vectorWidth) == 0) {
        nTile = vectors * vectorWidth;
        break;
      }
  }
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes[n] = nTile;
  // A narrow tile takes more rows, up to three times as many (each
  // accumulator is then one register, or part of one).
  sizes[m] = config.getRows()
                 ? largestDivisor(ranges[m], *config.getRows())
                 : largestDivisor(
                       ranges[m],
                       std::min<int64_t>(
                           rows * std::max<int64_t>(1, 2 * vectorWidth / nTile),
                           3 * rows));
  // A product in panels with more than one reduction step per tile is
  // vectorized into dot products (vector.reduce.fadd of 4 lanes), not FMAs:
  // a 197x768x768 product took 20.6 ms instead of 0.9 with k_tile = 4. Its
  // configured step is ignored there (the tuner times a kernel alone with
  // its weights unpacked, where the step works); a matrix-vector product in
  // panels takes it (packedMatvecStep sums its steps in pairs).
  bool panels = isProductInPanels(op);
  if (config.getReductionTile() && (!panels || isPackedMatvec(op)))
    sizes[dims->k.back()] =
        largestDivisor(ranges[dims->k.back()], *config.getReductionTile());
  else if (isPackedMatvec(op))
    sizes[dims->k.back()] =
        largestDivisor(ranges[dims->k.back()], kMatvecReductionStep);
  return sizes;
}

/// Whether `op` is a blocked convolution left to the direct algorithm.
std::optional<BlockedConv> matchDirectBlockedConv(linalg::LinalgOp op) {
  std::optional<BlockedConv> conv = matchBlockedConv(op);
  if (!conv)
    return std::nullopt;
  if (std::optional<ConvAlgorithm> algorithm = chosenConvAlgorithm(op);
      algorithm && *algorithm != ConvAlgorithm::Direct)
    return std::nullopt;
  return conv;
}

/// The most rows of a tile of two output channel blocks: with 32 vector
/// registers (rows 8) up to 10, 20 accumulators; with 16 (rows 6) at most
/// `rows`, 12 of them, or they spill. Tiles of 11 and 12 rows (22 and 24
/// accumulators) ran 30-40% slower on an Emerald Rapids Xeon than tiles of
/// 6 to 10: a 1x1 convolution of 768 to 192 channels on 12x12 took 0.39
/// ms in 12-row tiles and 0.28 ms in 6-row ones, on Inception-v3's 17x17
/// (12 + 5 rows, now 10 + 7) 0.80 and 0.59 ms.
int64_t pairRowLimit(int64_t rows) {
  return rows >= 8 ? rows + rows / 4 : rows;
}

/// A pair tile needs at least this many rows: fewer, and the loads of the
/// two weight vectors and the broadcasts outnumber the FMAs.
constexpr int64_t kMinPairRows = 4;

/// Tile sizes for a blocked convolution left to the direct algorithm, or an
/// empty vector when `op` is not one. The loops are (n, ko, oh, ow, o | ci,
/// y, x, i): an output tile is a block of rows of ow by the whole output
/// channel block o (one vector where the block is the vector width), and its
/// reduction runs one input channel block, one window position and one
/// input channel (or the configuration's k_tile of them) at a time, so that
/// the tile stays in registers for the whole window; each step is a small
/// matmul per output channel block, see convTileAsMatmuls.
SmallVector<int64_t> chooseBlockedConvTileSizes(linalg::LinalgOp op,
                                                int64_t vectorWidth,
                                                int64_t rows) {
  std::optional<BlockedConv> conv = matchDirectBlockedConv(op);
  if (!conv)
    return {};
  KernelConfigAttr config = KernelConfigAttr::of(op);
  int64_t width = config.getVectorWidth().value_or(vectorWidth);
  int64_t block = conv->outputShape[4], columns = conv->outputShape[3];
  // A tile's output blocks stay within one group (blockedConvInputBlock).
  int64_t outputBlocks = conv->outputBlocksPerGroup();
  int64_t rowLimit = config.getRows().value_or(std::min<int64_t>(
      rows * std::max<int64_t>(1, 2 * width / block), 3 * rows));
  int64_t rowTile = largestDivisor(columns, rowLimit);
  // Two output channel blocks per tile where the block is one vector: each
  // input element broadcast then feeds two FMAs, as in a matmul's block of
  // two vectors. Not where the columns have no divisor of four rows or more
  // (splitBlockedConvs cuts such columns where it can).
  int64_t blocks = 1;
  if (config.getVectors()) {
    if (outputBlocks % *config.getVectors() == 0)
      blocks = *config.getVectors();
  } else if (block == width && outputBlocks % 2 == 0) {
    int64_t pairRows =
        largestDivisor(columns, config.getRows().value_or(pairRowLimit(rows)));
    if (pairRows >= kMinPairRows) {
      blocks = 2;
      rowTile = pairRows;
    }
  }
  int64_t depth = conv->inputShape[4];
  // A packed form steps through the input block a group (of four int8 or
  // two bf16 channels) at a time, each group one dot product per row.
  if (conv->group)
    return {1, blocks, 1, rowTile, 0, 1, 1, 1, 1, conv->group};
  int64_t depthTile = config.getReductionTile()
                          ? largestDivisor(depth, *config.getReductionTile())
                          : 1;
  return {1, blocks, 1, rowTile, 0, 1, 1, 1, depthTile};
}

/// The pieces of one reduction step of a packed form (a blocked
/// convolution's or a matrix product's; groups of four int8 or two bf16) as
/// dot products, on tensors: each output row's group of input elements (32
/// bits) as one i32 broadcast to every lane; each output block's weights
/// (block x group elements, one lane's group in a row) as a vector of i32
/// lanes; and each block's accumulators (rows x block, i32 or f32), read as
/// one vector, updated row by row with kiln.dot_i8 or kiln.dot_bf16 (which
/// kiln-cpu-lower-dot-products lowers for the target) and written back, so
/// that hoistAccumulators keeps them in registers across the reduction.
struct DotProductStep {
  RewriterBase &rewriter;
  Location loc;
  Type element; ///< i8 or bf16
  int64_t group;
  Value zero;

  DotProductStep(RewriterBase &rewriter, Location loc, Type element)
      : rewriter(rewriter), loc(loc), element(element),
        group(32 / element.getIntOrFloatBitWidth()) {
    zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  }

  Value zeroOf(Type type) {
    return arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(type));
  }

  /// The slice of `source` at `offsets` of `sizes`, rank-reduced to `shape`.
  Value slice(Value source, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
              ArrayRef<int64_t> shape, Type type) {
    MLIRContext *ctx = rewriter.getContext();
    return tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get(shape, type), source,
        getAsIndexOpFoldResult(ctx, offsets),
        getAsIndexOpFoldResult(ctx, sizes),
        getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(offsets.size(), 1)));
  }

  /// The group of elements of `source` at `offsets` (its last dimension's)
  /// as one i32 in each of `lanes` lanes.
  Value rowWord(Value source, ArrayRef<int64_t> offsets, int64_t lanes) {
    SmallVector<int64_t> sizes(offsets.size(), 1);
    sizes.back() = group;
    Value quad = slice(source, offsets, sizes, {group}, element);
    Value elements = vector::TransferReadOp::create(
        rewriter, loc, VectorType::get({group}, element), quad,
        ValueRange{zero}, zeroOf(element), ArrayRef<bool>{true});
    Value word = vector::BitCastOp::create(
        rewriter, loc, VectorType::get({1}, rewriter.getI32Type()), elements);
    return vector::BroadcastOp::create(
        rewriter, loc, VectorType::get({lanes}, rewriter.getI32Type()), word);
  }

  /// The `lanes` x group weights of `source` at `offsets` (its last two
  /// dimensions, contiguous) as i32 lanes.
  Value weightLanes(Value source, ArrayRef<int64_t> offsets, int64_t lanes) {
    SmallVector<int64_t> sizes(offsets.size(), 1);
    sizes[sizes.size() - 2] = lanes;
    sizes.back() = group;
    Value filter = slice(source, offsets, sizes, {lanes, group}, element);
    Value flat = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({lanes * group}, element), filter,
        SmallVector<ReassociationIndices>{{0, 1}});
    Value elements = vector::TransferReadOp::create(
        rewriter, loc, VectorType::get({lanes * group}, element), flat,
        ValueRange{zero}, zeroOf(element), ArrayRef<bool>{true});
    return vector::BitCastOp::create(
        rewriter, loc, VectorType::get({lanes}, rewriter.getI32Type()),
        elements);
  }

  /// `result` with its accumulators at `offsets` of `sizes` (rows x lanes
  /// once rank-reduced) advanced by one dot product per row.
  Value accumulate(Value result, ArrayRef<int64_t> offsets,
                   ArrayRef<int64_t> sizes, ArrayRef<Value> rowWords,
                   Value weights) {
    MLIRContext *ctx = rewriter.getContext();
    Type accElement = getElementTypeOrSelf(result.getType());
    int64_t rows = rowWords.size();
    int64_t lanes = cast<VectorType>(weights.getType()).getDimSize(0);
    auto lanesType = VectorType::get({lanes}, accElement);
    Value accTile = slice(result, offsets, sizes, {rows, lanes}, accElement);
    Value acc = vector::TransferReadOp::create(
        rewriter, loc, VectorType::get({rows, lanes}, accElement), accTile,
        ValueRange{zero, zero}, zeroOf(accElement), ArrayRef<bool>{true, true});
    for (int64_t r = 0; r < rows; ++r) {
      Value row =
          vector::ExtractOp::create(rewriter, loc, acc, ArrayRef<int64_t>{r});
      if (group == 4)
        row = DotI8Op::create(rewriter, loc, lanesType, row, rowWords[r],
                              weights);
      else
        row = DotBF16Op::create(rewriter, loc, lanesType, row, rowWords[r],
                                weights);
      acc = vector::InsertOp::create(rewriter, loc, row, acc,
                                     ArrayRef<int64_t>{r});
    }
    Value written = vector::TransferWriteOp::create(rewriter, loc, acc, accTile,
                                                    ValueRange{zero, zero},
                                                    ArrayRef<bool>{true, true})
                        .getResult();
    return tensor::InsertSliceOp::create(
        rewriter, loc, written, result, getAsIndexOpFoldResult(ctx, offsets),
        getAsIndexOpFoldResult(ctx, sizes),
        getAsIndexOpFoldResult(ctx, SmallVector<int64_t>(offsets.size(), 1)));
  }
};

/// The ranked tensor type of `value`, which must have one.
RankedTensorType tensorTypeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// A tile of a blocked convolution (a `kiln.blocked_conv` generic) on static
/// tensors: its tag, input, weight and output.
struct ConvTile {
  BlockedConvAttr tag;
  Value input, weight, output;
};

/// `generic` as a ConvTile whose input and weight have the given ranks (5
/// and 6 for the f32 form, 6 and 7 for a packed one) and output rank 5.
std::optional<ConvTile> matchConvTile(linalg::GenericOp generic,
                                      int64_t inputRank, int64_t weightRank) {
  auto tag = generic->getAttrOfType<BlockedConvAttr>(kBlockedConvAttr);
  if (!tag || generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      !generic.hasPureTensorSemantics())
    return std::nullopt;
  ConvTile tile{tag, generic.getDpsInputs()[0], generic.getDpsInputs()[1],
                generic.getDpsInits()[0]};
  for (auto [value, rank] : {std::pair{tile.input, inputRank},
                             {tile.weight, weightRank},
                             {tile.output, 5}}) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape() || type.getRank() != rank)
      return std::nullopt;
  }
  return tile;
}

/// Rewrites one reduction step of a packed blocked convolution's output
/// tile (see chooseBlockedConvTileSizes: one input channel block, one
/// window position and one group of input channels) as dot products
/// (DotProductStep), the input rows read at the stride.
LogicalResult convTileAsDotProducts(RewriterBase &rewriter,
                                    linalg::GenericOp generic) {
  std::optional<ConvTile> tile = matchConvTile(generic, 6, 7);
  if (!tile)
    return failure();
  auto [tag, input, weight, output] = *tile;
  RankedTensorType inputType = tensorTypeOf(input);
  ArrayRef<int64_t> in = inputType.getShape(),
                    w = tensorTypeOf(weight).getShape(),
                    out = tensorTypeOf(output).getShape();
  int64_t blocks = out[1], rowCount = out[3], block = out[4];
  int64_t stride = tag.getStrides()[1];
  int64_t group = in[5];
  if (in[0] != 1 || in[1] != 1 || in[2] != 1 || in[4] != 1 || out[0] != 1 ||
      out[2] != 1 || w[0] != blocks || w[1] != 1 || w[2] != 1 || w[3] != 1 ||
      w[4] != 1 || w[5] != block || w[6] != group ||
      group * inputType.getElementTypeBitWidth() != 32 ||
      in[3] != (rowCount - 1) * stride + 1)
    return failure();

  rewriter.setInsertionPoint(generic);
  DotProductStep step(rewriter, generic.getLoc(), inputType.getElementType());
  SmallVector<Value> rows;
  for (int64_t r = 0; r < rowCount; ++r)
    rows.push_back(step.rowWord(input, {0, 0, 0, r * stride, 0, 0}, block));
  Value result = output;
  for (int64_t k = 0; k < blocks; ++k)
    result = step.accumulate(
        result, {0, k, 0, 0, 0}, {1, 1, 1, rowCount, block}, rows,
        step.weightLanes(weight, {k, 0, 0, 0, 0, 0, 0}, block));
  rewriter.replaceOp(generic, result);
  return success();
}

/// `op` as a linalg.generic on static tensors with two inputs, one output
/// and four loops, not a blocked convolution: the shape of a packed
/// matrix-vector product (isPackedMatvec); null otherwise.
linalg::GenericOp fourLoopProduct(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != 4 || generic.hasDynamicShape() ||
      generic->hasAttr(kBlockedConvAttr))
    return nullptr;
  return generic;
}

/// Whether `op` is a packed matrix product, in rows or in panels
/// (matchPackedMatmul).
bool isPackedMatmul(Operation *op) { return matchPackedMatmul(op).has_value(); }

/// Whether `generic` has the maps of kiln-cpu-pack-weights' f32 product in
/// panels: loops (m, p, j | k) over A[m, k], Bp[p, k, j] and C[m, p, j].
bool hasF32PanelMaps(linalg::GenericOp generic) {
  MLIRContext *ctx = generic.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {d(0), d(3)}, ctx),
                                 AffineMap::get(4, 0, {d(1), d(3), d(2)}, ctx),
                                 AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)};
  return generic.getIndexingMapsArray() == ArrayRef<AffineMap>(maps);
}

/// Whether `op` is a matrix product in panels, as kiln-cpu-pack-weights
/// writes it: an f32 contraction C3[m, p, j] += A[m, k] * Bp[p, k, j], or a
/// packed form in panels (matchPackedMatmul).
bool isProductInPanels(Operation *op) {
  if (std::optional<PackedMatmul> packed = matchPackedMatmul(op))
    return packed->panels;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  return generic && generic.getNumLoops() == 4 &&
         generic.getNumDpsInputs() == 2 &&
         linalg::isaContractionOpInterface(generic) && hasF32PanelMaps(generic);
}

/// Whether `op` is kiln-cpu-pack-weights' form of a matrix-vector product:
/// loops (m, p, j | k) over A[m, k], Bp[p, k, j] and C[m, p, j] with m = 1,
/// f32, a multiply-add body. Folding m away (as the unit dimensions of
/// other contractions are) would leave a product that the contraction
/// patterns do not recognise, and the loop path would run it element by
/// element inside a recurrence's step; its tiles are one panel wide
/// instead, each reduction step a few rows of the panel (packedMatvecStep).
bool isPackedMatvec(Operation *op) {
  linalg::GenericOp generic = fourLoopProduct(op);
  if (!generic)
    return false;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  if (!hasF32PanelMaps(generic) ||
      iterators[0] != utils::IteratorType::parallel ||
      iterators[1] != utils::IteratorType::parallel ||
      iterators[2] != utils::IteratorType::parallel ||
      iterators[3] != utils::IteratorType::reduction ||
      generic.getStaticLoopRanges()[0] != 1)
    return false;
  for (Value value : generic->getOperands())
    if (!getElementTypeOrSelf(value.getType()).isF32())
      return false;
  return linalg::detail::isContractionBody(
      *generic.getBlock(), [](Operation *first, Operation *second) {
        return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
      });
}

/// One reduction step of a packed matrix-vector product's tile (1 x 1 x
/// width x steps): per step, the vector's element broadcast and the panel's
/// row read as one vector; the products summed in pairs (an FMA onto the
/// other's product) and their sum added to the accumulators, read and
/// written as a vector so that hoistAccumulators keeps them in registers
/// across the reduction.
LogicalResult packedMatvecStep(RewriterBase &rewriter,
                               linalg::GenericOp generic) {
  if (!isPackedMatvec(generic))
    return failure();
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  if (ranges[1] != 1)
    return failure();
  int64_t width = ranges[2], steps = ranges[3];
  Location loc = generic.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(generic);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value pad =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
  auto vectorType = VectorType::get({width}, rewriter.getF32Type());
  AffineMap last = AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)}, ctx);
  auto read = [&](Value source, ValueRange indices) -> Value {
    return vector::TransferReadOp::create(rewriter, loc, vectorType, source,
                                          indices, pad, last,
                                          ArrayRef<bool>{true});
  };
  SmallVector<Value> products;
  for (int64_t k = 0; k < steps; ++k) {
    Value index = arith::ConstantIndexOp::create(rewriter, loc, k);
    Value a = tensor::ExtractOp::create(
        rewriter, loc, generic.getDpsInputs()[0], ValueRange{zero, index});
    Value broadcast = vector::BroadcastOp::create(rewriter, loc, vectorType, a);
    Value row = read(generic.getDpsInputs()[1], {zero, index, zero});
    // Every other product is an FMA onto the one before it.
    if (k % 2 == 1)
      products.back() =
          vector::FMAOp::create(rewriter, loc, broadcast, row, products.back());
    else
      products.push_back(
          arith::MulFOp::create(rewriter, loc, broadcast, row).getResult());
  }
  while (products.size() > 1) {
    SmallVector<Value> sums;
    for (size_t i = 0; i + 1 < products.size(); i += 2)
      sums.push_back(
          arith::AddFOp::create(rewriter, loc, products[i], products[i + 1]));
    if (products.size() % 2)
      sums.push_back(products.back());
    products = std::move(sums);
  }
  Value acc = generic.getDpsInits()[0];
  Value sum = arith::AddFOp::create(rewriter, loc,
                                    read(acc, {zero, zero, zero}), products[0]);
  Value written = vector::TransferWriteOp::create(rewriter, loc, sum, acc,
                                                  ValueRange{zero, zero, zero},
                                                  last, ArrayRef<bool>{true})
                      .getResult();
  rewriter.replaceOp(generic, written);
  return success();
}

/// Tile sizes of a packed matrix product: `rows` rows (at most 1.5x where
/// the columns make one vector a block) by two vectors of columns (one, or
/// all of them where fewer), one group at a time. In panels, a tile is one
/// panel wide (kiln-cpu-pack-weights made panels of that width).
SmallVector<int64_t> choosePackedMatmulTileSizes(linalg::LinalgOp op,
                                                 int64_t lanes, int64_t rows) {
  std::optional<PackedMatmul> packed = matchPackedMatmul(op);
  if (!packed)
    return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t columns = ranges[packed->panels ? 2 : 1];
  int64_t nTile = columns % (2 * lanes) == 0 ? 2 * lanes
                  : columns % lanes == 0     ? lanes
                  : columns < lanes          ? columns
                                             : 0;
  if (nTile == 0 || (packed->panels && nTile != columns))
    return {};
  int64_t rowLimit = nTile == 2 * lanes ? rows : rows + rows / 2;
  int64_t rowTile = largestDivisor(ranges[0], rowLimit);
  if (packed->panels)
    return {rowTile, 1, nTile, 1, packed->group};
  return {rowTile, nTile, 1, packed->group};
}

/// Rewrites one reduction step of a packed matrix product's output tile
/// (rows x columns, one group; in panels rows x 1 x columns) as dot
/// products (DotProductStep), the columns in blocks of `lanes`.
LogicalResult matmulTileAsDotProducts(RewriterBase &rewriter,
                                      linalg::GenericOp tile, int64_t lanes) {
  Value input = tile.getDpsInputs()[0], weight = tile.getDpsInputs()[1];
  Value output = tile.getDpsInits()[0];
  auto inputType = cast<RankedTensorType>(input.getType());
  auto outputType = cast<RankedTensorType>(output.getType());
  bool panels = outputType.getRank() == 3;
  int64_t rowCount = outputType.getDimSize(0),
          columns = outputType.getDimSize(panels ? 2 : 1);
  int64_t block = std::min(lanes, columns);
  if (inputType.getDimSize(1) != 1 || columns % block != 0 ||
      (panels && outputType.getDimSize(1) != 1))
    return failure();
  rewriter.setInsertionPoint(tile);
  DotProductStep step(rewriter, tile.getLoc(), inputType.getElementType());
  SmallVector<Value> rows;
  for (int64_t r = 0; r < rowCount; ++r)
    rows.push_back(step.rowWord(input, {r, 0, 0}, block));
  Value result = output;
  // In panels, the output and the weight have a unit panel dimension
  // before the columns.
  SmallVector<int64_t> at(panels ? 3 : 2, 0), sizes(panels ? 3 : 2, 1);
  SmallVector<int64_t> weightAt(panels ? 4 : 3, 0);
  sizes.front() = rowCount;
  sizes.back() = block;
  for (int64_t column = 0; column < columns; column += block) {
    at.back() = column;
    weightAt[weightAt.size() - 2] = column;
    result = step.accumulate(result, at, sizes, rows,
                             step.weightLanes(weight, weightAt, block));
  }
  rewriter.replaceOp(tile, result);
  return success();
}

/// Rewrites one reduction step of a blocked convolution's output tile (see
/// chooseBlockedConvTileSizes) as the matmuls it is, one per output channel
/// block k of the tile: out[k, ow, o] += in[ow * s, i] * w[k, i, o], with the
/// input read through a strided slice that all of them share. Returns the
/// matmuls, or failure when `tile` does not have that shape.
FailureOr<SmallVector<linalg::MatmulOp>>
convTileAsMatmuls(RewriterBase &rewriter, linalg::GenericOp generic) {
  std::optional<ConvTile> convTile = matchConvTile(generic, 5, 6);
  if (!convTile)
    return failure();
  auto [tag, input, weight, output] = *convTile;
  linalg::GenericOp tile = generic;
  RankedTensorType outputType = tensorTypeOf(output);
  ArrayRef<int64_t> in = tensorTypeOf(input).getShape(),
                    w = tensorTypeOf(weight).getShape(),
                    out = outputType.getShape();
  int64_t blocks = out[1], rowCount = out[3], depth = in[4], block = out[4];
  int64_t stride = tag.getStrides()[1];
  if (in[0] != 1 || in[1] != 1 || in[2] != 1 || out[0] != 1 || out[2] != 1 ||
      w[0] != blocks || w[1] != 1 || w[2] != 1 || w[3] != 1 || w[4] != depth ||
      w[5] != block || in[3] != (rowCount - 1) * stride + 1)
    return failure();
  // The strided row of an input whose channel block is 1 (a one-channel
  // image) is a rank-reducing slice to [rows, 1] whose width stride equals
  // its channel stride: MLIR 22's subview expansion cannot tell which unit
  // dimensions it dropped, and crashes. The loop path takes that tile.
  int64_t inputBlock = depth;
  if (auto whole = input.getDefiningOp<tensor::ExtractSliceOp>())
    inputBlock = whole.getSourceType().getShape().back();
  if (inputBlock == 1 && stride > 1)
    return failure();

  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type element = outputType.getElementType();
  auto slice = [&](Value source, ArrayRef<int64_t> offsets,
                   ArrayRef<int64_t> sizes, ArrayRef<int64_t> steps,
                   ArrayRef<int64_t> shape) {
    return tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get(shape, element), source,
        getAsIndexOpFoldResult(ctx, offsets),
        getAsIndexOpFoldResult(ctx, sizes), getAsIndexOpFoldResult(ctx, steps));
  };
  rewriter.setInsertionPoint(tile);
  Value lhs = slice(input, {0, 0, 0, 0, 0}, {1, 1, 1, rowCount, depth},
                    {1, 1, 1, stride, 1}, {rowCount, depth});
  SmallVector<linalg::MatmulOp> matmuls;
  Value result = output;
  for (int64_t k = 0; k < blocks; ++k) {
    Value rhs = slice(weight, {k, 0, 0, 0, 0, 0}, {1, 1, 1, 1, depth, block},
                      {1, 1, 1, 1, 1, 1}, {depth, block});
    SmallVector<int64_t> offsets = {0, k, 0, 0, 0};
    SmallVector<int64_t> sizes = {1, 1, 1, rowCount, block};
    Value acc =
        slice(result, offsets, sizes, {1, 1, 1, 1, 1}, {rowCount, block});
    auto matmul =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{acc.getType()},
                                 ValueRange{lhs, rhs}, ValueRange{acc});
    matmuls.push_back(matmul);
    SmallVector<OpFoldResult> steps(5, rewriter.getIndexAttr(1));
    result = tensor::InsertSliceOp::create(
        rewriter, loc, matmul.getResult(0), result,
        getAsIndexOpFoldResult(ctx, offsets),
        getAsIndexOpFoldResult(ctx, sizes), steps);
  }
  rewriter.replaceOp(tile, result);
  return matmuls;
}

/// The product of `ranges` over `loops`.
int64_t loopsProduct(ArrayRef<int64_t> ranges, ArrayRef<unsigned> loops) {
  int64_t size = 1;
  for (unsigned loop : loops)
    size *= ranges[loop];
  return size;
}

/// The order of a contraction's loops for its output tiles: batch loops,
/// then the M and N loops, the larger operand's outside, then the
/// reductions; nothing when the op is not a plain contraction. With the N
/// tiles outside, one strip of the right-hand operand (K x N tile) stays in
/// cache while the whole left-hand operand passes over it, which is read
/// once per strip: right where it is the smaller operand (a layer's
/// activations against a large weight, as in BERT-base). Where it is the
/// larger one (a 1x1 convolution over a batch of eight, 6.4 MB of
/// activations against 64 KB of weights), the M tiles go outside, and the
/// weights are what is read again, from cache.
std::optional<SmallVector<int64_t>> contractionLoopOrder(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty())
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  auto product = [&](ArrayRef<unsigned> loops) {
    return loopsProduct(ranges, loops);
  };
  bool nOutside = product(dims->m) <= product(dims->n);
  SmallVector<int64_t> order(dims->batch.begin(), dims->batch.end());
  ArrayRef<unsigned> outer = nOutside ? dims->n : dims->m;
  ArrayRef<unsigned> inner = nOutside ? dims->m : dims->n;
  order.append(outer.begin(), outer.end());
  order.append(inner.begin(), inner.end());
  order.append(dims->k.begin(), dims->k.end());
  if (order.size() != op.getNumLoops())
    return std::nullopt;
  return order;
}

/// The order of a direct blocked convolution's loops for its output tiles:
/// the output channel blocks inside the pixels where the weights stay in
/// cache and the input is more than twice the output (a 1x1 convolution
/// that narrows the channels). With the channel blocks outside (the loops'
/// own order), the whole input is read once per tile of output blocks,
/// from beyond L2: ResNet-50's first 1x1 convolution of a stage reads its
/// 3.2 MB input twice for 64 KB of weights. Inside, each input tile is
/// read from L1 for every block. The weights stay in cache up to
/// `cachedWeightBytes` (the target's, TargetInfo::cachedWeightBytes).
std::optional<SmallVector<int64_t>>
blockedConvLoopOrder(linalg::LinalgOp op, int64_t cachedWeightBytes) {
  std::optional<BlockedConv> conv = matchDirectBlockedConv(op);
  if (!conv)
    return std::nullopt;
  auto bytes = [](ArrayRef<int64_t> shape) {
    int64_t size = 4;
    for (int64_t dim : shape)
      size *= dim;
    return size;
  };
  // A packed form's weights are bytes (int8) or halves (bf16).
  int64_t weights =
      bytes(conv->weightShape) / std::max<int64_t>(1, conv->group);
  if (weights > cachedWeightBytes ||
      bytes(conv->inputShape) <= 2 * bytes(conv->outputShape) ||
      conv->weightShape[0] == 1)
    return std::nullopt;
  // n, K1, OH, OW, c, then the reductions: K1 after OW.
  SmallVector<int64_t> order = {0, 2, 3, 1, 4, 5, 6, 7, 8};
  if (conv->group)
    order.push_back(9);
  return order;
}

/// The order of the output tiles of a contraction or a direct blocked
/// convolution, where one is chosen.
std::optional<SmallVector<int64_t>> tileLoopOrder(linalg::LinalgOp op,
                                                  int64_t cachedWeightBytes) {
  if (std::optional<SmallVector<int64_t>> order =
          blockedConvLoopOrder(op, cachedWeightBytes))
    return order;
  return contractionLoopOrder(op);
}

/// Vectorizes one tile (a vector.contract where it is a named contraction);
/// leaves it as it is on failure.
void vectorizeTile(RewriterBase &rewriter, Operation *tile, int64_t lanes) {
  if (hasSubByteElements(tile))
    return;
  if (isPackedMatmul(tile)) {
    (void)matmulTileAsDotProducts(rewriter, cast<linalg::GenericOp>(tile),
                                  lanes);
    return;
  }
  if (isPackedMatvec(tile)) {
    (void)packedMatvecStep(rewriter, cast<linalg::GenericOp>(tile));
    return;
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(tile);
      generic && generic->hasAttr(kBlockedConvAttr)) {
    if (generic.getNumLoops() == 10) {
      (void)convTileAsDotProducts(rewriter, generic);
      return;
    }
    FailureOr<SmallVector<linalg::MatmulOp>> matmuls =
        convTileAsMatmuls(rewriter, generic);
    if (failed(matmuls))
      return;
    for (linalg::MatmulOp matmul : *matmuls)
      vectorizeTile(rewriter, matmul, lanes);
    return;
  }
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

/// The part of a blocked convolution's padded input that holds data along
/// its rows and columns (dimensions 2 and 3): [begin, end) each, when the
/// rest of the tensor is zeros, as the padding of a tensor.pad of zero or a
/// tensor written into a zero fill (what kiln-codegen-pad-in-place makes of
/// it) leaves it.
struct DataWindow {
  int64_t begin[2], end[2];
};

bool isZeroConstant(Value value) {
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

std::optional<DataWindow> zeroPaddedWindow(Value padded) {
  auto type = dyn_cast<RankedTensorType>(padded.getType());
  if (!type || !type.hasStaticShape() || type.getRank() < 4)
    return std::nullopt;
  ArrayRef<int64_t> offsets, sizes;
  if (auto pad = padded.getDefiningOp<tensor::PadOp>()) {
    Value value = pad.getConstantPaddingValue();
    if (!value || !isZeroConstant(value) ||
        ShapedType::isDynamicShape(pad.getStaticLow()) ||
        !pad.getSourceType().hasStaticShape())
      return std::nullopt;
    offsets = pad.getStaticLow();
    sizes = pad.getSourceType().getShape();
  } else if (auto insert = padded.getDefiningOp<tensor::InsertSliceOp>()) {
    auto fill = insert.getDest().getDefiningOp<linalg::FillOp>();
    if (!fill || !isZeroConstant(fill.getInputs()[0]) ||
        insert.getSourceType().getRank() != type.getRank() ||
        !llvm::all_of(insert.getStaticStrides(),
                      [](int64_t s) { return s == 1; }) ||
        ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
        ShapedType::isDynamicShape(insert.getStaticSizes()))
      return std::nullopt;
    offsets = insert.getStaticOffsets();
    sizes = insert.getStaticSizes();
  } else {
    return std::nullopt;
  }
  DataWindow window;
  for (int k = 0; k < 2; ++k) {
    window.begin[k] = offsets[2 + k];
    window.end[k] = offsets[2 + k] + sizes[2 + k];
  }
  return window;
}

/// The share of the (output tile, tap) pairs along window dimension `k`
/// whose tap reads only padding, for tiles of `outputs` positions from the
/// first: the work that liveTaps can skip there.
double deadTapShare(const DataWindow &window, int k, int64_t paddedSize,
                    int64_t outputs, int64_t stride, int64_t dilation,
                    int64_t kernel) {
  int64_t total = (paddedSize - (kernel - 1) * dilation - 1) / stride + 1;
  int64_t pairs = 0, dead = 0;
  for (int64_t start = 0; start < total; start += outputs) {
    int64_t count = std::min(outputs, total - start);
    for (int64_t tap = 0; tap < kernel; ++tap) {
      int64_t first = start * stride + tap * dilation;
      int64_t last = first + (count - 1) * stride;
      ++pairs;
      if (last < window.begin[k] || first >= window.end[k])
        ++dead;
    }
  }
  return pairs ? double(dead) / double(pairs) : 0.0;
}

/// Below this share of taps that read only padding, a convolution's tap
/// loops keep their constant bounds. Skipping taps breaks the sequential
/// stream of the weights that the first output tile reads, which the
/// hardware prefetcher follows: with weights from memory (ResNet-18's
/// 3x3 convolutions on a 7x7 map, one tap row in ten skipped), the skipping
/// tiles' reads came 30% slower than the saved work.
constexpr double kMinDeadTapShare = 0.25;

/// The taps of a blocked convolution's output tile that can read data,
/// per window dimension (y, x): [begin, end), computed where the tile
/// begins. Null entries where every tap can.
struct LiveTaps {
  Value begin[2], end[2];
};

/// The window positions of output tile `tile` (a `kiln.blocked_conv`
/// generic on slices) that read only the zero padding of its input, for
/// every output row or column the tile holds: a dilated convolution over a
/// map not much larger than its dilation (DeepLabV3's ASPP: dilation 12 on
/// 14x14, where only a fifth of the products read data) and the border
/// rows of any padded convolution. Zero padding contributes nothing to the
/// sum, so the tap loops can skip them (as kiln-graph-prune-conv-taps
/// drops taps that read padding for every output, at graph level).
std::optional<LiveTaps> liveTaps(OpBuilder &builder, Operation *tile) {
  auto generic = dyn_cast<linalg::GenericOp>(tile);
  if (!generic)
    return std::nullopt;
  auto tag = generic->getAttrOfType<BlockedConvAttr>(kBlockedConvAttr);
  if (!tag || generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() < 9 || !generic.hasPureTensorSemantics())
    return std::nullopt;
  Value input = generic.getDpsInputs()[0];
  auto weightType =
      dyn_cast<RankedTensorType>(generic.getDpsInputs()[1].getType());
  auto outputType =
      dyn_cast<RankedTensorType>(generic.getDpsInits()[0].getType());
  if (!weightType || !outputType || !weightType.hasStaticShape() ||
      !outputType.hasStaticShape() || outputType.getRank() != 5)
    return std::nullopt;
  // The tile's first input row and column in the padded input: the sum of
  // the offsets of the slices between them.
  Location loc = tile->getLoc();
  MLIRContext *ctx = builder.getContext();
  SmallVector<OpFoldResult> offsets[2];
  while (auto slice = input.getDefiningOp<tensor::ExtractSliceOp>()) {
    if (slice.getSourceType().getRank() != slice.getResultType().getRank() ||
        !llvm::all_of(slice.getStaticStrides(),
                      [](int64_t s) { return s == 1; }))
      return std::nullopt;
    for (int k = 0; k < 2; ++k)
      offsets[k].push_back(slice.getMixedOffsets()[2 + k]);
    input = slice.getSource();
  }
  std::optional<DataWindow> window = zeroPaddedWindow(input);
  if (!window)
    return std::nullopt;
  ArrayRef<int64_t> paddedShape =
      cast<RankedTensorType>(input.getType()).getShape();
  LiveTaps taps;
  bool any = false;
  for (int k = 0; k < 2; ++k) {
    int64_t stride = tag.getStrides()[k], dilation = tag.getDilations()[k];
    int64_t kernel = weightType.getShape()[2 + k];
    int64_t outputs = outputType.getShape()[2 + k];
    if (kernel == 1 ||
        (window->begin[k] == 0 && window->end[k] == paddedShape[2 + k]) ||
        deadTapShare(*window, k, paddedShape[2 + k], outputs, stride, dilation,
                     kernel) < kMinDeadTapShare)
      continue;
    // The first input position the tile reads, as one symbol per slice.
    AffineExpr first = getAffineConstantExpr(0, ctx);
    for (unsigned i = 0; i < offsets[k].size(); ++i)
      first = first + getAffineSymbolExpr(i, ctx);
    unsigned symbols = offsets[k].size();
    // Tap t reads first + j * stride + t * dilation for the tile's outputs
    // j: some of them lie in [begin, end) when
    // ceil((begin - first - (outputs - 1) * stride) / dilation) <= t <=
    // floor((end - 1 - first) / dilation).
    AffineExpr lowest =
        (window->begin[k] - first - (outputs - 1) * stride).ceilDiv(dilation);
    AffineExpr highest = (window->end[k] - 1 - first).floorDiv(dilation) + 1;
    OpFoldResult begin = affine::makeComposedFoldedAffineMax(
        builder, loc,
        AffineMap::get(0, symbols, {lowest, getAffineConstantExpr(0, ctx)},
                       ctx),
        offsets[k]);
    OpFoldResult end = affine::makeComposedFoldedAffineMin(
        builder, loc,
        AffineMap::get(0, symbols,
                       {highest, getAffineConstantExpr(kernel, ctx)}, ctx),
        offsets[k]);
    taps.begin[k] = getValueOrCreateConstantIndexOp(builder, loc, begin);
    taps.end[k] = getValueOrCreateConstantIndexOp(builder, loc, end);
    any = true;
  }
  if (!any)
    return std::nullopt;
  return taps;
}

/// Narrows the tap loops of a tiled reduction (`loops`, one per non-zero
/// entry of `innerSizes`, in loop order) to `taps`.
void narrowTapLoops(ArrayRef<LoopLikeOpInterface> loops,
                    ArrayRef<int64_t> innerSizes, const LiveTaps &taps) {
  SmallVector<unsigned> dims;
  for (auto [dim, size] : llvm::enumerate(innerSizes))
    if (size != 0)
      dims.push_back(dim);
  if (dims.size() != loops.size())
    return;
  for (auto [dim, loop] : llvm::zip(dims, loops)) {
    auto forOp = dyn_cast<scf::ForOp>(*loop);
    if (!forOp || (dim != 6 && dim != 7) || innerSizes[dim] != 1 ||
        !taps.begin[dim - 6])
      continue;
    forOp.setLowerBound(taps.begin[dim - 6]);
    forOp.setUpperBound(taps.end[dim - 6]);
  }
}

/// Tiles the reduction of an output tile `tile` by `innerSizes` (one step
/// at a time) and vectorizes each step; a tile that cannot be tiled is left
/// as it is.
void tileReductionAndVectorize(RewriterBase &rewriter, Operation *tile,
                               ArrayRef<int64_t> innerSizes, int64_t lanes) {
  rewriter.setInsertionPoint(tile);
  std::optional<LiveTaps> taps = liveTaps(rewriter, tile);
  scf::SCFTilingOptions inner;
  inner.setTileSizes(getAsIndexOpFoldResult(tile->getContext(), innerSizes));
  FailureOr<scf::SCFTilingResult> innerTiled =
      scf::tileUsingSCF(rewriter, cast<TilingInterface>(tile), inner);
  if (failed(innerTiled))
    return;
  if (taps)
    narrowTapLoops(innerTiled->loops, innerSizes, *taps);
  rewriter.replaceOp(tile, innerTiled->replacements);
  for (Operation *step : innerTiled->tiledOps)
    vectorizeTile(rewriter, step, lanes);
}

/// Tiles and vectorizes one contraction; leaves it alone on failure. With
/// `parallel`, the output tiles are an scf.forall (each tile owns its part of
/// the output), and only the reduction runs as a sequential scf.for inside.
void tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                      ArrayRef<int64_t> tileSizes, bool parallel,
                      int64_t cachedWeightBytes, int64_t lanes) {
  MLIRContext *ctx = op.getContext();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  // Output tiles: every parallel dimension at its tile size, reductions whole
  // (an scf.forall with `parallel`, scf.for loops otherwise); the reduction
  // is tiled inside each output tile.
  SmallVector<int64_t> outerSizes(tileSizes), innerSizes(tileSizes.size(), 0);
  for (auto [i, iterator] : llvm::enumerate(iterators)) {
    if (iterator == utils::IteratorType::reduction) {
      outerSizes[i] = 0;
      innerSizes[i] = tileSizes[i];
    }
  }
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions outer;
  outer.setTileSizes(getAsIndexOpFoldResult(ctx, outerSizes));
  if (parallel)
    outer.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  // The larger operand's tiles outside (see contractionLoopOrder and
  // blockedConvLoopOrder).
  if (std::optional<SmallVector<int64_t>> order =
          tileLoopOrder(op, cachedWeightBytes))
    outer.setInterchange(*order);
  // A fill of the accumulators (a Winograd layer's products start from
  // zeros) is fused into each output tile: they then start in registers,
  // and no loop nest fills the whole output first. (Fused into a nest that
  // also tiled the reduction, it would run again at every reduction step:
  // hence the output tiles first, the reduction inside them.)
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(outer);
  Operation *init = op.getDpsInits()[0].getDefiningOp();
  bool fuseInit = isa_and_nonnull<linalg::FillOp>(init) && init->hasOneUse();
  options.setFusionControlFn(
      [init, fuseInit](tensor::ExtractSliceOp, OpResult producer,
                       bool isDestination)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (fuseInit && isDestination && producer.getOwner() == init)
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        return std::nullopt;
      });
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return;
  for (OpResult result : op->getResults())
    rewriter.replaceAllUsesWith(result, tiled->replacements.lookup(result));
  rewriter.eraseOp(op);
  if (fuseInit && init->use_empty())
    rewriter.eraseOp(init);

  for (Operation *tile : tiled->tiledAndFusedOps) {
    if (isa<linalg::FillOp>(tile)) {
      vectorizeTile(rewriter, tile, lanes);
      continue;
    }
    tileReductionAndVectorize(rewriter, tile, innerSizes, lanes);
  }
}

/// Chunks pay where the whole input would be read again by many columns
/// of output tiles: with two (Inception-v3's 1x1 layers of 64 filters over
/// 288 channels at 35x35), the accumulators read again per chunk and the
/// epilogue left unfused cost more (80 -> 90 us a layer at two threads).
constexpr int64_t kMinChunkedColumns = 4;

/// The input channel blocks of each reduction chunk of a direct blocked
/// convolution (f32, one group) whose whole reduction does not stay in
/// cache for one column of output tiles (`tileBlocks` output blocks over
/// every pixel), or nothing. Without chunks each column streams its weights
/// and the whole input once: FCN-ResNet50's 1x1 layers over 2048 channels
/// re-read their 6.4 MB input from L3 once per column (173-208 GFLOP/s;
/// 256-262 in chunks). With chunks of
/// `cachedWeightBytes`, each column's share of weights and input stays in
/// L2 across its tiles; the accumulators, read again per chunk, must be
/// small (half of that) and the columns many (kMinChunkedColumns) for it
/// to pay.
std::optional<int64_t> reductionChunk(linalg::LinalgOp op,
                                      ArrayRef<int64_t> tileSizes,
                                      int64_t cachedWeightBytes) {
  std::optional<BlockedConv> conv = matchDirectBlockedConv(op);
  if (!conv || conv->group || conv->groups != 1 || tileSizes.size() != 9 ||
      KernelConfigAttr::of(op).getReductionTile())
    return std::nullopt;
  ArrayRef<int64_t> in = conv->inputShape, out = conv->outputShape;
  int64_t channelBlocks = in[1];
  int64_t column = tileSizes[1] * out[4];
  int64_t weightPerBlock = column * in[4] * conv->kernelHeight() *
                           conv->kernelWidth() * int64_t(sizeof(float));
  int64_t outputPerColumn =
      out[0] * out[2] * out[3] * column * int64_t(sizeof(float));
  int64_t outputColumns = out[1] / std::max<int64_t>(1, tileSizes[1]);
  if (outputColumns < kMinChunkedColumns ||
      outputPerColumn > cachedWeightBytes / 2)
    return std::nullopt;
  // Chunks of the channel blocks whose weights and input, `rows` x
  // `columns` of it, stay in cache; none where they all do, or not two.
  auto chunkFor = [&](int64_t rows, int64_t columns) -> std::optional<int64_t> {
    int64_t perBlock = weightPerBlock +
                       in[0] * rows * columns * in[4] * int64_t(sizeof(float));
    if (channelBlocks * perBlock <= 2 * cachedWeightBytes)
      return std::nullopt;
    int64_t chunk = largestDivisor(
        channelBlocks, std::max<int64_t>(1, cachedWeightBytes / perBlock));
    if (chunk < 2 || chunk == channelBlocks)
      return std::nullopt;
    return chunk;
  };
  if (std::optional<int64_t> chunk = chunkFor(in[2], in[3]))
    return chunk;
  // Where the padded input leaves no chunk and the tap loops skip most taps
  // as reading only padding (liveTaps: a convolution dilated beyond its
  // map's size, DeepLabV3-ResNet50's ASPP dilated by 24 on 28x28 over 2048
  // channels), the tiles read the part that holds data: chunks sized by it
  // (there 12.5 -> 9.2-10.2 ms). Only there: where the padded size gives
  // chunks, larger ones from the data's were slower (DeepLabV3-MobileNetV3's
  // ASPP dilated by 12 on 14x14: 1.16 ms in chunks of 4, 1.33 in 15).
  std::optional<DataWindow> window = zeroPaddedWindow(conv->input);
  if (!window)
    return std::nullopt;
  bool skips = false;
  for (int k = 0; k < 2; ++k)
    skips |=
        conv->weightShape[2 + k] > 1 &&
        deadTapShare(*window, k, in[2 + k], tileSizes[2 + k], conv->strides[k],
                     conv->dilations[k], conv->weightShape[2 + k]) >= 0.5;
  if (!skips)
    return std::nullopt;
  return chunkFor(window->end[0] - window->begin[0],
                  window->end[1] - window->begin[1]);
}

/// `op` with its loop `loop` tiled by `size` in an scf.for; returns the op
/// of one iteration.
FailureOr<linalg::LinalgOp> tileOneLoop(RewriterBase &rewriter,
                                        linalg::LinalgOp op, unsigned loop,
                                        int64_t size) {
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  sizes[loop] = size;
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(op.getContext(), sizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  auto inner = dyn_cast<linalg::LinalgOp>(tiled->tiledOps.front());
  if (!inner)
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  return inner;
}

/// `op` computed `chunk` input channel blocks (loop 5) at a time in an
/// scf.for that accumulates into its output; returns the op of one chunk.
FailureOr<linalg::LinalgOp> chunkReduction(RewriterBase &rewriter,
                                           linalg::LinalgOp op, int64_t chunk) {
  return tileOneLoop(rewriter, op, 5, chunk);
}

/// The elementwise op that is the only user of `op`'s result, reads it
/// element for element (identity map) and writes a result of the same shape:
/// the epilogue that can be applied to each output tile of `op` while the
/// tile is in registers. Null when there is none.
linalg::GenericOp getEpilogue(linalg::LinalgOp op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  OpOperand &use = *op->getResult(0).getUses().begin();
  auto epilogue = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!epilogue || !epilogue.hasPureTensorSemantics() ||
      epilogue.getNumDpsInits() != 1 ||
      epilogue.getNumLoops() != epilogue.getNumParallelLoops() ||
      epilogue.isDpsInit(&use) ||
      !epilogue.getMatchingIndexingMap(&use).isIdentity() ||
      !epilogue.getMatchingIndexingMap(epilogue.getDpsInitOperand(0))
           .isIdentity() ||
      cast<ShapedType>(epilogue.getResult(0).getType()).getShape() !=
          cast<ShapedType>(op->getResult(0).getType()).getShape() ||
      hasSubByteElements(epilogue))
    return nullptr;
  // The epilogue becomes vector code on a whole register block: only ops
  // that lower to vector instructions are taken, not a scalar libm call per
  // element. kiln-cpu-approximate-math makes erf, tanh, exp and the
  // logarithms vector arithmetic (polynomials), on vectors as on scalars:
  // GELU's erf then runs on the product's accumulators in registers.
  bool vectorizable =
      llvm::all_of(epilogue.getBody()->getOperations(), [](Operation &bodyOp) {
        return isa<arith::ArithDialect>(bodyOp.getDialect()) ||
               isa<linalg::YieldOp, math::ExpOp, math::ErfOp, math::TanhOp,
                   math::ExpM1Op, math::LogOp, math::Log1pOp, math::Log2Op,
                   math::AbsFOp, math::SqrtOp, math::FmaOp, math::RoundEvenOp,
                   math::RoundOp, math::FloorOp, math::CeilOp>(bodyOp);
      });
  return vectorizable ? epilogue : nullptr;
}

/// Brings each epilogue next to its contraction: an elementwise op that reads
/// a contraction through a tensor.expand_shape (the NCHW view of an im2col
/// convolution, the batch dimensions of a matmul) is collapsed to the
/// contraction's shape instead, and one that reads a product in panels
/// through its tensor.collapse_shape runs on the panels' shape, so that
/// getEpilogue finds it.
void collapseEpilogues(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  linalg::populateFoldReshapeOpsByCollapsingPatterns(
      patterns, [](OpOperand *operand) {
        auto expand = operand->get().getDefiningOp<tensor::ExpandShapeOp>();
        auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
        if (!expand || !consumer ||
            consumer.getNumLoops() != consumer.getNumParallelLoops())
          return false;
        auto producer = expand.getSrc().getDefiningOp<linalg::LinalgOp>();
        return producer &&
               (linalg::isaContractionOpInterface(producer) ||
                isPackedMatmul(producer)) &&
               expand.getSrc().hasOneUse() && expand->hasOneUse();
      });
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
  // First the panels: an elementwise op that reads a product in panels
  // (kiln-cpu-pack-weights: [rows, N / nb, nb]) through the collapse_shape
  // back to [rows, N] is expanded to the panels' shape (its other operands
  // expanded alike); then the patterns above. (In one set, the two did not
  // reach a fixed point on BERT-base.)
  RewritePatternSet expansion(ctx);
  linalg::populateFoldReshapeOpsByExpansionPatterns(
      expansion, [](OpOperand *operand) {
        auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
        auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
        if (!collapse || !consumer ||
            consumer.getNumLoops() != consumer.getNumParallelLoops() ||
            !collapse->hasOneUse())
          return false;
        Value source = collapse.getSrc();
        if (auto expand = source.getDefiningOp<tensor::ExpandShapeOp>();
            expand && expand->hasOneUse())
          source = expand.getSrc();
        Operation *producer = source.getDefiningOp();
        return producer && source.hasOneUse() && isProductInPanels(producer);
      });
  // Both only bring epilogues next to their products: where either stops
  // short of a fixed point, the IR is still whole, and the epilogues it did
  // not reach run as loop nests of their own.
  (void)applyPatternsGreedily(func, std::move(expansion));
  (void)applyPatternsGreedily(func, std::move(patterns));
}

/// Tiles `epilogue` into output tiles and computes the tile of its producer
/// `op` inside each, so that the epilogue reads the contraction's
/// accumulators (after vectorization, hoisting forwards them in registers)
/// and only its own result is stored. The tile sizes and order are those
/// `op` would have on its own; the reduction is then one step at a time.
/// What an epilogue's tiles fuse: the contraction and what fills its
/// accumulators (zeros, a broadcast bias: the accumulators then start in
/// registers), never what feeds its operands (an im2col copy would be
/// recomputed for every tile).
scf::SCFTileAndFuseOptions::ControlFnTy
fuseContractionAndInit(linalg::LinalgOp op) {
  Operation *contraction = op.getOperation();
  Operation *init = op.getDpsInits()[0].getDefiningOp();
  return [contraction, init](tensor::ExtractSliceOp, OpResult producer, bool)
             -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
    Operation *owner = producer.getOwner();
    if (owner == contraction ||
        isa<linalg::FillOp, linalg::BroadcastOp>(owner) ||
        (owner == init && isBroadcastCopy(owner)))
      return scf::SCFTileAndFuseOptions::ControlFnResult{};
    return std::nullopt;
  };
}

LogicalResult tileAndFuseEpilogue(RewriterBase &rewriter, linalg::LinalgOp op,
                                  linalg::GenericOp epilogue,
                                  ArrayRef<int64_t> tileSizes, bool parallel,
                                  int64_t cachedWeightBytes, int64_t lanes) {
  MLIRContext *ctx = op.getContext();
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // Loop i of the epilogue is output dimension i of `op`.
  SmallVector<int64_t> epilogueSizes;
  for (AffineExpr result : outputMap.getResults())
    epilogueSizes.push_back(
        tileSizes[cast<AffineDimExpr>(result).getPosition()]);
  SmallVector<int64_t> innerSizes(tileSizes);
  for (auto [i, iterator] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iterator != utils::IteratorType::reduction)
      innerSizes[i] = 0;

  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(ctx, epilogueSizes));
  if (parallel)
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  // The contraction's tile order (see tileLoopOrder), as the epilogue's
  // loops, which are the contraction's output dimensions.
  if (std::optional<SmallVector<int64_t>> order =
          tileLoopOrder(op, cachedWeightBytes)) {
    SmallVector<int64_t> epilogueOrder;
    for (int64_t loop : *order)
      if (std::optional<unsigned> position =
              outputMap.getResultPosition(getAffineDimExpr(loop, ctx)))
        epilogueOrder.push_back(*position);
    if (epilogueOrder.size() == outputMap.getNumResults())
      tiling.setInterchange(epilogueOrder);
  }
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  Operation *contraction = op.getOperation();
  options.setFusionControlFn(fuseContractionAndInit(op));
  rewriter.setInsertionPoint(epilogue);
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(epilogue.getOperation()), options);
  if (failed(fused) || !fused->fusedProducers.contains(contraction))
    return failure();
  Value result = epilogue.getResult(0);
  rewriter.replaceAllUsesWith(result, fused->replacements.lookup(result));
  // The contraction is dead once the slices that fusion left behind are
  // cleaned up (by the pattern driver below).
  rewriter.eraseOp(epilogue);

  for (Operation *tile : fused->tiledAndFusedOps) {
    auto tiled = dyn_cast<linalg::LinalgOp>(tile);
    if (!tiled ||
        (!linalg::isaContractionOpInterface(tiled) &&
         !tiled->hasAttr(kBlockedConvAttr) && !isPackedMatmul(tiled))) {
      vectorizeTile(rewriter, tile, lanes);
      continue;
    }
    tileReductionAndVectorize(rewriter, tile, innerSizes, lanes);
  }
  return success();
}

/// Splits `op` along loop `dim` at `main`; both parts keep its kernel
/// configuration. Returns the parts (null where the split failed).
std::pair<TilingInterface, TilingInterface>
splitKeepingConfig(RewriterBase &rewriter, linalg::LinalgOp op, unsigned dim,
                   int64_t main) {
  rewriter.setInsertionPoint(op);
  Attribute configAttr = op->getAttr(kKernelConfigAttrName);
  auto [head, tail] =
      linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()), dim,
                      rewriter.getIndexAttr(main));
  if (configAttr && head && tail) {
    head->setAttr(kKernelConfigAttrName, configAttr);
    tail->setAttr(kKernelConfigAttrName, configAttr);
  }
  return {head, tail};
}

/// The bytes of an element of `value`'s type, at least one.
int64_t elementBytes(Value value) {
  return std::max<int64_t>(
      1, getElementTypeOrSelf(value.getType()).getIntOrFloatBitWidth() / 8);
}

/// The rows of each block of a contraction whose row tiles go outside its
/// column tiles (contractionLoopOrder: more rows than columns) and whose
/// right-hand side does not stay in cache, or nothing. Each row tile then
/// streams the whole right-hand side from beyond L2: the 2-layer ViT's
/// second feed-forward product at batch 8 (1576 x 3072 by 3072 x 768, 9.4
/// MB of weights) read them 197 times over. In blocks of rows whose
/// left-hand side stays in cache (`cachedWeightBytes`), with the column
/// tiles outside the row tiles inside each block, the right-hand side is
/// read once per block. The block is a multiple of the row tile, at least
/// two row tiles, and there are at least two blocks.
std::optional<int64_t> rowBlock(linalg::LinalgOp op,
                                ArrayRef<int64_t> tileSizes,
                                int64_t cachedWeightBytes) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1 || dims->n.empty() ||
      dims->k.empty() || !dims->batch.empty() || op.getNumDpsInputs() != 2)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned m = dims->m.front();
  int64_t rows = ranges[m], columns = loopsProduct(ranges, dims->n),
          depth = loopsProduct(ranges, dims->k);
  int64_t rowTile = tileSizes[m];
  if (rows <= columns || rowTile <= 0 || rows % rowTile != 0)
    return std::nullopt;
  Value lhs = op.getDpsInputs()[0], rhs = op.getDpsInputs()[1];
  if (depth * columns * elementBytes(rhs) <= cachedWeightBytes)
    return std::nullopt;
  // A divisor of the rows where one comes near what fits; otherwise what
  // fits, and the rows left over make one more block.
  int64_t fit = cachedWeightBytes / (depth * elementBytes(lhs)) / rowTile;
  int64_t tiles = largestDivisor(rows / rowTile, fit);
  if (2 * tiles < fit)
    tiles = fit;
  if (tiles < 2 || 2 * tiles * rowTile > rows)
    return std::nullopt;
  return tiles * rowTile;
}

/// A contraction (and its epilogue, null where none) of one block of rows.
using RowBlock = std::pair<linalg::LinalgOp, linalg::GenericOp>;

/// Tiles `consumer` (`contraction` itself, or an epilogue of it, whole or a
/// part of its rows) by `sizes` in loops of `loopType`, fusing the
/// contraction and what fills its accumulators into each tile, as
/// tileAndFuseEpilogue fuses them into each output tile; returns one tile's.
FailureOr<RowBlock>
tileWithContraction(RewriterBase &rewriter, linalg::LinalgOp contraction,
                    TilingInterface consumer, ArrayRef<int64_t> sizes,
                    scf::SCFTilingOptions::LoopType loopType) {
  MLIRContext *ctx = contraction.getContext();
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(ctx, sizes));
  tiling.setLoopType(loopType);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  Operation *op = contraction.getOperation();
  options.setFusionControlFn(fuseContractionAndInit(contraction));
  // A part of the rows reads a slice of the contraction's result: its
  // tiles' slices of that slice become slices of the result, which fuse.
  RewritePatternSet cleanup(ctx);
  tensor::populateMergeConsecutiveInsertExtractSlicePatterns(cleanup);
  options.cleanupPatterns = FrozenRewritePatternSet(std::move(cleanup));
  rewriter.setInsertionPoint(consumer);
  FailureOr<scf::SCFTileAndFuseResult> fused =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, consumer, options);
  if (failed(fused) ||
      (consumer.getOperation() != op && !fused->fusedProducers.contains(op)))
    return failure();
  linalg::LinalgOp inner;
  for (Operation *tile : fused->tiledAndFusedOps)
    if (auto linalgTile = dyn_cast<linalg::LinalgOp>(tile);
        linalgTile && (linalg::isaContractionOpInterface(linalgTile) ||
                       isPackedMatmul(linalgTile)))
      inner = linalgTile;
  for (OpResult result : consumer->getResults())
    rewriter.replaceAllUsesWith(result, fused->replacements.lookup(result));
  rewriter.eraseOp(consumer);
  if (!inner)
    return failure();
  return RowBlock(inner, getEpilogue(inner));
}

/// Tiles `epilogue` (an epilogue of `contraction`, whole or a part of its
/// rows) along its dimension `row` in an scf.for of `block` rows, with the
/// contraction fused (tileWithContraction); returns one block's.
FailureOr<RowBlock> tileEpilogueRows(RewriterBase &rewriter,
                                     linalg::LinalgOp contraction,
                                     TilingInterface epilogue, unsigned row,
                                     int64_t block) {
  SmallVector<int64_t> sizes(epilogue.getLoopIteratorTypes().size(), 0);
  sizes[row] = block;
  return tileWithContraction(rewriter, contraction, epilogue, sizes,
                             scf::SCFTilingOptions::LoopType::ForOp);
}

/// `op` (see rowBlock), and its epilogue where it has one, in scf.for loops
/// over blocks of `block` rows; rows that make no whole block (as many as
/// the largest multiple of the row tile below `block` leaves) are one more
/// block after them. Returns each loop's block.
FailureOr<SmallVector<RowBlock>> blockRows(RewriterBase &rewriter,
                                           linalg::LinalgOp op, int64_t block) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.size() != 1)
    return failure();
  unsigned m = dims->m.front();
  int64_t rows = op.getStaticLoopRanges()[m];
  int64_t main = rows / block * block;
  MLIRContext *ctx = op.getContext();
  SmallVector<RowBlock> blocks;
  linalg::GenericOp epilogue = getEpilogue(op);
  if (!epilogue) {
    linalg::LinalgOp head = op, tail;
    if (main != rows) {
      auto [first, second] = splitKeepingConfig(rewriter, op, m, main);
      head = dyn_cast_or_null<linalg::LinalgOp>(first.getOperation());
      tail = dyn_cast_or_null<linalg::LinalgOp>(second.getOperation());
      if (!head || !tail)
        return failure();
    }
    FailureOr<linalg::LinalgOp> inner = tileOneLoop(rewriter, head, m, block);
    if (failed(inner))
      return failure();
    blocks.push_back(RowBlock(*inner, nullptr));
    if (tail)
      blocks.push_back(RowBlock(tail, nullptr));
    return blocks;
  }
  // The epilogue's loops are the contraction's output dimensions.
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  std::optional<unsigned> row =
      outputMap.getResultPosition(getAffineDimExpr(m, ctx));
  if (!row)
    return failure();
  TilingInterface head = cast<TilingInterface>(epilogue.getOperation()), tail;
  if (main != rows) {
    rewriter.setInsertionPoint(epilogue);
    std::tie(head, tail) =
        linalg::splitOp(rewriter, head, *row, rewriter.getIndexAttr(main));
    if (!head || !tail)
      return failure();
  }
  FailureOr<RowBlock> inner = tileEpilogueRows(rewriter, op, head, *row, block);
  if (failed(inner))
    return failure();
  blocks.push_back(*inner);
  if (tail) {
    FailureOr<RowBlock> last =
        tileEpilogueRows(rewriter, op, tail, *row, rows - main);
    if (failed(last))
      return failure();
    blocks.push_back(*last);
  }
  return blocks;
}

/// The rows of `op` (its innermost M dimension) that make whole tiles of
/// `rows`, where rows are left over and no divisor of them comes near the
/// tile (a ViT's 197 tokens, prime: 192, and 5 left over), or nothing.
std::optional<int64_t> wholeRowTiles(linalg::LinalgOp op, int64_t rows) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty())
    return std::nullopt;
  return wholeRowBlocks(op.getStaticLoopRanges()[dims->m.back()], rows);
}

/// A loop over columns of output tiles alone needs this many of them to
/// share among the threads.
constexpr int64_t kMinColumnStrips = 16;

/// Whether the rows of `op` left over from whole row tiles (wholeRowTiles)
/// run inside its loop over columns of output tiles, after each column's
/// whole row tiles, rather than as a product of their own (splitRemainders).
/// On its own, a product of a few rows streams the whole right-hand side
/// from beyond the cache again for little work: the 2-layer ViT's 5-row
/// remainders of its 197-token products ran at 24 GFLOP/s, 5 of its 54 ms
/// at one thread. Inside the column loop they read that column's strip of
/// the right-hand side from L2, where its row tiles have just left it.
/// For a contraction whose column tiles go outside its row tiles
/// (contractionLoopOrder), whose right-hand side does not stay in cache,
/// and with kMinColumnStrips columns of tiles or more.
bool rowRemainderInColumns(linalg::LinalgOp op, int64_t vectorWidth,
                           int64_t rows, int64_t cachedWeightBytes) {
  if (isPackedMatmul(op) || KernelConfigAttr::of(op).getRows() ||
      op.getNumDpsInputs() != 2 || !wholeRowTiles(op, rows))
    return false;
  SmallVector<int64_t> sizes = chooseTileSizes(op, vectorWidth, rows);
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (sizes.empty() || failed(dims) || dims->m.size() != 1 ||
      !dims->batch.empty())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t columns = loopsProduct(ranges, dims->n),
          depth = loopsProduct(ranges, dims->k), strips = 1;
  for (unsigned n : dims->n)
    strips *= ranges[n] / sizes[n];
  return ranges[dims->m.front()] <= columns && strips >= kMinColumnStrips &&
         depth * columns * elementBytes(op.getDpsInputs()[1]) >
             cachedWeightBytes;
}

/// `op` (see rowRemainderInColumns), and its epilogue where it has one, in
/// an scf.forall (scf.for without `parallel`) over columns of output tiles
/// of `tileSizes`, each column's rows then split as blockRows splits them:
/// the whole row tiles, and the rows left over. Returns the two parts of a
/// column.
FailureOr<SmallVector<RowBlock>>
tileColumnsWithRowRemainder(RewriterBase &rewriter, linalg::LinalgOp op,
                            ArrayRef<int64_t> tileSizes, int64_t rows,
                            bool parallel) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  std::optional<int64_t> main = wholeRowTiles(op, rows);
  if (failed(dims) || !main)
    return failure();
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  for (unsigned n : dims->n)
    sizes[n] = tileSizes[n];
  TilingInterface consumer = cast<TilingInterface>(op.getOperation());
  if (linalg::GenericOp epilogue = getEpilogue(op)) {
    // The epilogue's loops are the contraction's output dimensions.
    AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    SmallVector<int64_t> epilogueSizes;
    for (AffineExpr result : outputMap.getResults())
      epilogueSizes.push_back(sizes[cast<AffineDimExpr>(result).getPosition()]);
    sizes = epilogueSizes;
    consumer = cast<TilingInterface>(epilogue.getOperation());
  }
  FailureOr<RowBlock> column =
      tileWithContraction(rewriter, op, consumer, sizes,
                          parallel ? scf::SCFTilingOptions::LoopType::ForallOp
                                   : scf::SCFTilingOptions::LoopType::ForOp);
  if (failed(column))
    return failure();
  return blockRows(rewriter, column->first, *main);
}

/// Where `columns` output columns split into a part of whole pair tiles (of
/// at most `limit` rows) and a remainder of at least kMinPairRows, when no
/// divisor of `columns` makes a pair tile: the split point, or nothing. 111
/// columns (SqueezeNet's first layer) with 12 rows at most: 104 in tiles of
/// 8, and 7.
std::optional<int64_t> pairColumnSplit(int64_t columns, int64_t limit) {
  if (largestDivisor(columns, limit) >= kMinPairRows)
    return std::nullopt;
  for (int64_t tile = limit; tile > kMinPairRows; --tile) {
    int64_t remainder = columns % tile;
    if (remainder >= kMinPairRows && columns > tile)
      return columns - remainder;
  }
  return std::nullopt;
}

/// The loop and point at which to split a direct blocked convolution so
/// that its parts take tiles of two output channel blocks: an odd count of
/// blocks (SqueezeNet's last layer, 63) loses its last block, and columns
/// with no divisor of four or more rows (its 13, 111) are cut where whole
/// tiles end. Nothing where a configuration sets the tile, or where the
/// block is not one vector.
std::optional<std::pair<unsigned, int64_t>>
planBlockedConvSplit(linalg::LinalgOp op, int64_t vectorWidth, int64_t rows) {
  std::optional<BlockedConv> conv = matchDirectBlockedConv(op);
  if (!conv)
    return std::nullopt;
  KernelConfigAttr config = KernelConfigAttr::of(op);
  if (config.getRows() || config.getVectors() || config.getVectorWidth() ||
      conv->outputShape[4] != vectorWidth)
    return std::nullopt;
  int64_t outputBlocks = conv->outputShape[1], columns = conv->outputShape[3];
  int64_t limit = pairRowLimit(rows);
  bool pairsFit = largestDivisor(columns, limit) >= kMinPairRows ||
                  pairColumnSplit(columns, limit);
  // A grouped convolution's part would read its input blocks through maps
  // that no longer name its groups (an odd count of output blocks has an
  // odd count per group: its tiles are one block anyway).
  if (outputBlocks % 2 == 1 && outputBlocks > 2 && pairsFit &&
      conv->groups == 1)
    return std::make_pair(1u, outputBlocks - 1);
  if (outputBlocks % 2 == 0)
    if (std::optional<int64_t> point = pairColumnSplit(columns, limit))
      return std::make_pair(3u, *point);
  return std::nullopt;
}

/// Replaces `slice` of the result of a tileable op with that op computing
/// only the slice; returns the new op, or null.
Operation *sliceProducer(RewriterBase &rewriter, tensor::ExtractSliceOp slice) {
  auto result = dyn_cast<OpResult>(slice.getSource());
  if (!result || !isa<TilingInterface>(result.getOwner()))
    return nullptr;
  rewriter.setInsertionPoint(slice);
  FailureOr<TilingResult> tiled =
      tensor::replaceExtractSliceWithTiledProducer(rewriter, slice, result);
  if (failed(tiled) || tiled->tiledOps.empty())
    return nullptr;
  rewriter.replaceOp(slice, tiled->tiledValues[0]);
  return tiled->tiledOps.front();
}

/// Splits the direct blocked convolutions that planBlockedConvSplit names,
/// again and again on their parts, each part with its own part of the
/// epilogue and of the bias that starts its accumulators, so that each is
/// tiled and fused as a convolution of its own; a convolution without an
/// epilogue is split itself.
void splitBlockedConvs(func::FuncOp func, int64_t vectorWidth, int64_t rows) {
  SmallVector<linalg::LinalgOp> worklist;
  func.walk([&](linalg::LinalgOp op) {
    if (matchDirectBlockedConv(op))
      worklist.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  while (!worklist.empty()) {
    linalg::LinalgOp op = worklist.pop_back_val();
    std::optional<std::pair<unsigned, int64_t>> split =
        planBlockedConvSplit(op, vectorWidth, rows);
    linalg::GenericOp epilogue = getEpilogue(op);
    if (!split)
      continue;
    if (!epilogue) {
      // The convolution alone: its loops start with its output dimensions,
      // in order. Each part's accumulators start from the part of its
      // init (the bias, or zeros) that it slices.
      rewriter.setInsertionPoint(op);
      Value whole = op.getDpsInits()[0];
      auto [head, tail] =
          linalg::splitOp(rewriter, cast<TilingInterface>(op.getOperation()),
                          split->first, rewriter.getIndexAttr(split->second));
      for (TilingInterface part : {head, tail}) {
        auto conv = dyn_cast_or_null<linalg::LinalgOp>(part.getOperation());
        if (!conv)
          continue;
        if (auto init =
                conv.getDpsInits()[0].getDefiningOp<tensor::ExtractSliceOp>()) {
          // The tail's init slices the head's result inserted into the
          // init; the parts are disjoint, so it reads the init itself.
          Value base = init.getSource();
          while (base != whole)
            if (auto insert = base.getDefiningOp<tensor::InsertSliceOp>())
              base = insert.getDest();
            else
              break;
          if (base == whole && base != init.getSource()) {
            rewriter.setInsertionPoint(init);
            init = tensor::ExtractSliceOp::create(
                rewriter, init.getLoc(), init.getType(), base,
                init.getMixedOffsets(), init.getMixedSizes(),
                init.getMixedStrides());
            rewriter.modifyOpInPlace(conv, [&] {
              conv.getDpsInitsMutable()[0].assign(init.getResult());
            });
          }
          sliceProducer(rewriter, init);
        }
        worklist.push_back(conv);
      }
      // The parts' results are inserted into the init, which they cover
      // together: an empty tensor will do, and the init's own computation
      // (a bias broadcast over the whole output) goes.
      for (OpOperand &use : llvm::make_early_inc_range(whole.getUses())) {
        auto insert = dyn_cast<tensor::InsertSliceOp>(use.getOwner());
        if (!insert || use.getOperandNumber() != 1)
          continue;
        rewriter.setInsertionPoint(insert);
        Value empty = tensor::EmptyOp::create(
            rewriter, insert.getLoc(), insert.getDestType().getShape(),
            insert.getDestType().getElementType());
        rewriter.modifyOpInPlace(
            insert, [&] { insert.getDestMutable().assign(empty); });
      }
      if (Operation *producer = whole.getDefiningOp();
          producer && isOpTriviallyDead(producer))
        rewriter.eraseOp(producer);
      continue;
    }
    // The epilogue's loops are the convolution's output dimensions, in order.
    rewriter.setInsertionPoint(epilogue);
    auto [head, tail] = linalg::splitOp(
        rewriter, cast<TilingInterface>(epilogue.getOperation()), split->first,
        rewriter.getIndexAttr(split->second));
    for (TilingInterface part : {head, tail}) {
      if (!part)
        continue;
      for (OpOperand &operand : part->getOpOperands()) {
        auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
        if (!slice || slice.getSource() != op->getResult(0))
          continue;
        auto conv =
            dyn_cast_or_null<linalg::LinalgOp>(sliceProducer(rewriter, slice));
        if (!conv)
          continue;
        // The part's accumulators start from its part of the bias.
        if (auto init =
                conv.getDpsInits()[0].getDefiningOp<tensor::ExtractSliceOp>())
          sliceProducer(rewriter, init);
        worklist.push_back(conv);
        break;
      }
    }
    Operation *init = op.getDpsInits()[0].getDefiningOp();
    if (op->use_empty())
      rewriter.eraseOp(op);
    if (init && isOpTriviallyDead(init))
      rewriter.eraseOp(init);
  }
}

/// Splits every contraction whose innermost N dimension is not a multiple of
/// its block (two vectors, or its configuration's) into a part that is and a
/// narrower remainder, so that both get register-blocked code (the remainder
/// as one tile as wide as it is) instead of leaving the whole op to the loop
/// path. Then the same along M, where no divisor of M comes near the row
/// block (`rows`): a ViT's 197 tokens (prime) had tiles of one row, each
/// reloading its strip of B, at 65 GFLOP/s where 192 + 5 rows run at the
/// block's speed (or inside its column loop: rowRemainderInColumns).
/// Returns the contractions left whole for that.
llvm::SmallPtrSet<Operation *, 4> splitRemainders(func::FuncOp func,
                                                  int64_t vectorWidth,
                                                  int64_t rows,
                                                  int64_t cachedWeightBytes) {
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
    int64_t block = blockWidth(KernelConfigAttr::of(op), size, vectorWidth);
    int64_t main = size / block * block;
    if (main == 0 || main == size)
      continue;
    splitKeepingConfig(rewriter, op, n, main);
  }

  SmallVector<linalg::LinalgOp> rowCandidates;
  func.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics() && op.getNumDpsInits() == 1 &&
        linalg::isaContractionOpInterface(op) && !op.hasDynamicShape())
      rowCandidates.push_back(op);
  });
  llvm::SmallPtrSet<Operation *, 4> inColumns;
  for (linalg::LinalgOp op : rowCandidates) {
    // A configured row block (the tuner's `rows`) splits M the same way, by
    // its own size: both parts keep the configuration, and the remainder,
    // narrower than the block, is one tile of all its rows.
    std::optional<int64_t> main =
        wholeRowTiles(op, KernelConfigAttr::of(op).getRows().value_or(rows));
    if (!main)
      continue;
    if (rowRemainderInColumns(op, vectorWidth, rows, cachedWeightBytes)) {
      inColumns.insert(op);
      continue;
    }
    unsigned m = linalg::inferContractionDims(op)->m.back();
    splitKeepingConfig(rewriter, op, m, *main);
  }
  return inColumns;
}

/// The shape to unroll a tile's transfer or elementwise op to: one row
/// block (the two innermost dimensions) at a time, where the vector has more
/// than one along an outer dimension. A blocked convolution's tile of two
/// output channel blocks keeps one accumulator matrix per block; its fill
/// and epilogue, vectorized at the tile's rank, then read and write them one
/// block at a time, and each read folds into the write it reads.
std::optional<SmallVector<int64_t>> rowBlockShape(Operation *op) {
  VectorType type;
  if (auto read = dyn_cast<vector::TransferReadOp>(op))
    type = read.getVectorType();
  else if (auto write = dyn_cast<vector::TransferWriteOp>(op))
    type = write.getVectorType();
  else if (OpTrait::hasElementwiseMappableTraits(op) &&
           op->getNumResults() == 1)
    type = dyn_cast<VectorType>(op->getResult(0).getType());
  if (!type || type.getRank() < 3 || type.isScalable())
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  if (llvm::all_of(shape.drop_back(2), [](int64_t d) { return d == 1; }))
    return std::nullopt;
  SmallVector<int64_t> native(shape.size() - 2, 1);
  native.append(shape.end() - 2, shape.end());
  return native;
}

/// Turns what the vectorizer made of a tile that is not a named contraction
/// (elementwise products and a multi-reduction) into one vector.contract
/// whose operands are read straight from the tensors.
LogicalResult formContractions(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  vector::populateVectorReductionToContractPatterns(patterns);
  vector::populateVectorUnrollPatterns(
      patterns, vector::UnrollVectorOptions().setNativeShapeFn(rowBlockShape));
  // An epilogue or fill on a tile with unit dimensions (a blocked
  // convolution's 1x1x1xRxC) is vectorized at that rank; at the rank of the
  // accumulators instead, a store of the accumulators and the epilogue's
  // load of them fold away, and no tile-sized temporary is left to allocate.
  vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
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

/// Carries the kernel configuration of an op that a pattern replaces to the
/// linalg op computing its replacement, looking through reshapes and slices.
struct KeepKernelConfigs : RewriterBase::Listener {
  void notifyOperationReplaced(Operation *op, ValueRange values) override {
    Attribute config = op->getAttr(kKernelConfigAttrName);
    if (!config)
      return;
    for (Value value : values) {
      Operation *def = value.getDefiningOp();
      while (def && isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
                        tensor::ExtractSliceOp, tensor::InsertSliceOp>(def))
        def = def->getOperand(0).getDefiningOp();
      if (def && isa<linalg::LinalgOp>(def))
        def->setAttr(kKernelConfigAttrName, config);
    }
  }
};

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
        if (!linalgOp || !linalg::isaContractionOpInterface(linalgOp) ||
            isPackedMatmul(op) || isPackedMatvec(op))
          return {};
        SmallVector<unsigned> unitDims;
        for (auto [i, size] : llvm::enumerate(linalgOp.getStaticLoopRanges()))
          if (size == 1)
            unitDims.push_back(i);
        return unitDims;
      };
      linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
      KeepKernelConfigs keepConfigs;
      if (failed(applyPatternsGreedily(
              func, std::move(patterns),
              GreedyRewriteConfig().setListener(&keepConfigs))))
        return signalPassFailure();
    }
    // A generic that is a matmul (the contraction of an im2col convolution)
    // becomes linalg.matmul, which vectorizes straight to vector.contract;
    // one that fills its output with a value (a bias of zeros, folded)
    // becomes linalg.fill, which the tiles fuse as their accumulators'
    // start. Left a generic, it was a loop nest of its own writing a buffer
    // the tiles then copied out of: SqueezeNet's first convolution
    // spent 0.32 ms on that fill and copy, 6% of the model.
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) {
      // Named contractions have at most three dimensions: upstream's
      // specialization took a product with two batch dimensions (a
      // run-time batch and the heads, [b, h, s, d]) for a batch_matmul of
      // rank-4 operands, which does not verify.
      bool namedRanks = llvm::all_of(op->getOperandTypes(), [](Type type) {
        auto shaped = dyn_cast<ShapedType>(type);
        return !shaped || shaped.getRank() <= 3;
      });
      if ((linalg::isaContractionOpInterface(op) && namedRanks) ||
          linalg::isaFillOpInterface(op))
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics) {
      rewriter.setInsertionPoint(op);
      Attribute config = op->getAttr(kKernelConfigAttrName);
      FailureOr<linalg::LinalgOp> named =
          linalg::specializeGenericOp(rewriter, op);
      if (succeeded(named) && config)
        (*named)->setAttr(kKernelConfigAttrName, config);
    }
    if (fuseEpilogues)
      collapseEpilogues(func);
    llvm::SmallPtrSet<Operation *, 4> inColumns =
        splitRemainders(func, vectorWidth, rows, cachedWeightBytes);
    splitBlockedConvs(func, vectorWidth, rows);
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<int64_t>>> work;
    func.walk([&](linalg::LinalgOp op) {
      SmallVector<int64_t> sizes =
          isPackedMatmul(op)
              ? choosePackedMatmulTileSizes(op, vectorWidth, rows)
              : chooseTileSizes(op, vectorWidth, rows);
      if (sizes.empty())
        sizes = chooseBlockedConvTileSizes(op, vectorWidth, rows);
      if (!sizes.empty())
        work.emplace_back(op, std::move(sizes));
    });
    if (work.empty())
      return;
    // A contraction (or a block of one) with its epilogue fused into its
    // tiles where it has one, else alone.
    auto tile = [&](linalg::LinalgOp op, linalg::GenericOp epilogue,
                    ArrayRef<int64_t> sizes, bool parallelTiles) {
      if (!epilogue || failed(tileAndFuseEpilogue(
                           rewriter, op, epilogue, sizes, parallelTiles,
                           cachedWeightBytes, vectorWidth)))
        tileAndVectorize(rewriter, op, sizes, parallelTiles, cachedWeightBytes,
                         vectorWidth);
    };
    for (auto &[op, sizes] : work) {
      bool parallelTiles =
          parallel && KernelConfigAttr::of(op).getParallel().value_or(true);
      // A contraction with its left-over rows in each column of tiles: the
      // two parts of a column, one after the other, each with its own tiles.
      if (inColumns.contains(op)) {
        FailureOr<SmallVector<RowBlock>> parts = tileColumnsWithRowRemainder(
            rewriter, op, sizes, rows, parallelTiles);
        if (succeeded(parts))
          for (auto [partOp, partEpilogue] : *parts)
            if (SmallVector<int64_t> partSizes =
                    chooseTileSizes(partOp, vectorWidth, rows);
                !partSizes.empty())
              tile(partOp, partEpilogue, partSizes, /*parallelTiles=*/false);
        continue;
      }
      // A contraction in blocks of rows tiles each block as below.
      if (std::optional<int64_t> block =
              rowBlock(op, sizes, cachedWeightBytes)) {
        // On failure `op` may be gone: what is left stays untiled, which
        // the loop lowering computes all the same.
        FailureOr<SmallVector<RowBlock>> blocks =
            blockRows(rewriter, op, *block);
        if (succeeded(blocks))
          for (auto [blockOp, blockEpilogue] : *blocks)
            tile(blockOp, blockEpilogue, sizes, parallelTiles);
        continue;
      }
      // A reduction in chunks runs its epilogue after the last chunk.
      if (std::optional<int64_t> chunk =
              reductionChunk(op, sizes, cachedWeightBytes)) {
        FailureOr<linalg::LinalgOp> inner =
            chunkReduction(rewriter, op, *chunk);
        if (succeeded(inner)) {
          tileAndVectorize(rewriter, *inner, sizes, parallelTiles,
                           cachedWeightBytes, vectorWidth);
          continue;
        }
      }
      tile(op, getEpilogue(op), sizes, parallelTiles);
    }
    if (failed(formContractions(func)))
      return signalPassFailure();
    hoistAccumulators(func);
    if (failed(lowerVectorOps(func)))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
