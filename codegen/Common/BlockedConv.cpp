//===- BlockedConv.cpp - Blocked convolutions in codegen ------------------===//

#include "codegen/Common/BlockedConv.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::codegen {

/// Whether `block` is a contraction body of `multiply` and `add`, with the
/// packed forms' extensions: zext of the input and sext of the weight in
/// groups of 4 (int8), extf of both in groups of 2 (bf16).
static bool isConvBody(Block &block, int64_t group) {
  if (group == 4)
    return isIntegerDotBody(block);
  if (group == 2)
    return isBF16DotBody(block);
  return linalg::detail::isContractionBody(
      block, [](Operation *first, Operation *second) {
        return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
      });
}

/// Whether `block` yields acc + ExtX(x) * ExtW(w) with its three
/// arguments (x, w, acc) and nothing else.
template <typename Add, typename Mul, typename ExtX, typename ExtW>
static bool isExtendedProductBody(Block &block) {
  auto yield = cast<linalg::YieldOp>(block.getTerminator());
  if (yield.getNumOperands() != 1 || block.getNumArguments() != 3 ||
      block.getOperations().size() != 5)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<Add>();
  if (!add)
    return false;
  Value acc = add.getLhs(), product = add.getRhs();
  if (acc != block.getArgument(2))
    std::swap(acc, product);
  auto mul = product.getDefiningOp<Mul>();
  if (acc != block.getArgument(2) || !mul)
    return false;
  auto x = mul.getLhs().template getDefiningOp<ExtX>();
  auto w = mul.getRhs().template getDefiningOp<ExtW>();
  return x && w && x.getIn() == block.getArgument(0) &&
         w.getIn() == block.getArgument(1);
}

bool isBF16DotBody(Block &block) {
  return isExtendedProductBody<arith::AddFOp, arith::MulFOp, arith::ExtFOp,
                               arith::ExtFOp>(block) &&
         block.getArgument(0).getType().isBF16() &&
         block.getArgument(1).getType().isBF16();
}

bool isIntegerDotBody(Block &block) {
  return isExtendedProductBody<arith::AddIOp, arith::MulIOp, arith::ExtUIOp,
                               arith::ExtSIOp>(block);
}

std::optional<PackedMatmul> matchPackedMatmul(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      generic.hasDynamicShape() || generic->hasAttr(kBlockedConvAttr))
    return std::nullopt;
  unsigned loops = generic.getNumLoops();
  if (loops != 4 && loops != 5)
    return std::nullopt;
  bool panels = loops == 5;
  MLIRContext *ctx = op->getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  // rows: d0 r, d1 n | d2 q, d3 j; panels: d0 r, d1 p, d2 c | d3 q, d4 j.
  SmallVector<AffineMap> maps =
      panels ? SmallVector<AffineMap>{AffineMap::get(5, 0, {d(0), d(3), d(4)},
                                                     ctx),
                                      AffineMap::get(
                                          5, 0, {d(1), d(3), d(2), d(4)}, ctx),
                                      AffineMap::get(5, 0, {d(0), d(1), d(2)},
                                                     ctx)}
             : SmallVector<AffineMap>{
                   AffineMap::get(4, 0, {d(0), d(2), d(3)}, ctx),
                   AffineMap::get(4, 0, {d(2), d(1), d(3)}, ctx),
                   AffineMap::get(4, 0, {d(0), d(1)}, ctx)};
  if (generic.getIndexingMapsArray() != ArrayRef<AffineMap>(maps))
    return std::nullopt;
  unsigned parallel = loops - 2;
  for (auto [i, type] : llvm::enumerate(generic.getIteratorTypesArray()))
    if ((type == utils::IteratorType::parallel) != (i < parallel))
      return std::nullopt;
  Type x = getElementTypeOrSelf(generic.getDpsInputs()[0].getType());
  Type w = getElementTypeOrSelf(generic.getDpsInputs()[1].getType());
  Type acc = getElementTypeOrSelf(generic.getDpsInits()[0].getType());
  int64_t group = generic.getStaticLoopRanges()[loops - 1];
  if (group == 4 && x.isInteger(8) && w.isInteger(8) && acc.isInteger(32) &&
      isIntegerDotBody(*generic.getBlock()))
    return PackedMatmul{4, panels};
  if (group == 2 && x.isBF16() && w.isBF16() && acc.isF32() &&
      isBF16DotBody(*generic.getBlock()))
    return PackedMatmul{2, panels};
  return std::nullopt;
}

std::optional<BlockedConv> matchBlockedConv(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return std::nullopt;
  // The tag's verifier holds it to two strides and two dilations.
  auto tag = generic->getAttrOfType<BlockedConvAttr>(kBlockedConvAttr);
  if (!tag || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1)
    return std::nullopt;
  ArrayRef<int64_t> strides = tag.getStrides(), dilations = tag.getDilations();

  BlockedConv conv;
  conv.op = generic;
  conv.input = generic.getDpsInputs()[0];
  conv.weight = generic.getDpsInputs()[1];
  conv.init = generic.getDpsInits()[0];
  auto inputType = dyn_cast<RankedTensorType>(conv.input.getType());
  auto weightType = dyn_cast<RankedTensorType>(conv.weight.getType());
  auto outputType = dyn_cast<RankedTensorType>(conv.init.getType());
  if (!inputType || !weightType || !outputType || !inputType.hasStaticShape() ||
      !weightType.hasStaticShape() || !outputType.hasStaticShape() ||
      outputType.getRank() != 5)
    return std::nullopt;
  conv.group = inputType.getRank() == 6 ? inputType.getDimSize(5) : 0;
  Type f32 = Float32Type::get(op->getContext());
  Type bf16 = BFloat16Type::get(op->getContext());
  Type i8 = IntegerType::get(op->getContext(), 8);
  Type i32 = IntegerType::get(op->getContext(), 32);
  if (conv.group) {
    Type element = conv.group == 4 ? i8 : bf16;
    Type acc = conv.group == 4 ? i32 : f32;
    if ((conv.group != 4 && conv.group != 2) || weightType.getRank() != 7 ||
        inputType.getElementType() != element ||
        weightType.getElementType() != element ||
        outputType.getElementType() != acc ||
        weightType.getDimSize(6) != conv.group)
      return std::nullopt;
  } else if (inputType.getRank() != 5 || weightType.getRank() != 6 ||
             inputType.getElementType() != f32 ||
             weightType.getElementType() != f32 ||
             outputType.getElementType() != f32) {
    return std::nullopt;
  }
  ArrayRef<int64_t> in = inputType.getShape(), w = weightType.getShape();
  conv.inputShape.assign(in.begin(), in.begin() + 5);
  conv.weightShape.assign(w.begin(), w.begin() + 6);
  if (conv.group) {
    conv.inputShape[4] *= conv.group;
    conv.weightShape[4] *= conv.group;
    conv.weightShape[5] = w[5];
  }
  conv.outputShape.assign(outputType.getShape().begin(),
                          outputType.getShape().end());
  for (int i = 0; i < 2; ++i) {
    conv.strides[i] = strides[i];
    conv.dilations[i] = dilations[i];
  }

  // The maps and iterators the tag promises.
  MLIRContext *ctx = op->getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  unsigned loops = conv.group ? 10 : 9;
  // The channel blocks and the block sizes agree; the input's channel
  // blocks are groups of the weight's, each group as many filter blocks.
  if (conv.weightShape[1] <= 0 ||
      conv.inputShape[1] % conv.weightShape[1] != 0 ||
      conv.weightShape[4] != conv.inputShape[4] ||
      conv.weightShape[0] != conv.outputShape[1] ||
      conv.weightShape[5] != conv.outputShape[4] ||
      conv.inputShape[0] != conv.outputShape[0])
    return std::nullopt;
  conv.groups = conv.inputShape[1] / conv.weightShape[1];
  if (conv.outputShape[1] % conv.groups != 0)
    return std::nullopt;
  AffineExpr inputBlock = blockedConvInputBlock(
      d(1), d(5), conv.inputShape[1], conv.weightShape[1], conv.outputShape[1]);
  SmallVector<AffineExpr> inputExprs = {
      d(0), inputBlock, d(2) * conv.strides[0] + d(6) * conv.dilations[0],
      d(3) * conv.strides[1] + d(7) * conv.dilations[1], d(8)};
  SmallVector<AffineExpr> weightExprs = {d(1), d(5), d(6), d(7), d(8), d(4)};
  if (conv.group) {
    inputExprs.push_back(d(9));
    weightExprs.push_back(d(9));
  }
  SmallVector<AffineMap> maps = {
      AffineMap::get(loops, 0, inputExprs, ctx),
      AffineMap::get(loops, 0, weightExprs, ctx),
      AffineMap::get(loops, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  if (generic.getIndexingMapsArray() != ArrayRef<AffineMap>(maps))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (auto [index, iterator] : llvm::enumerate(iterators))
    if (iterator != (index < 5 ? utils::IteratorType::parallel
                               : utils::IteratorType::reduction))
      return std::nullopt;
  if (!isConvBody(*generic.getBlock(), conv.group))
    return std::nullopt;
  return conv;
}

bool isWinogradCandidate(const BlockedConv &conv) {
  if (conv.group || conv.groups != 1 || conv.kernelHeight() != 3 ||
      conv.kernelWidth() != 3)
    return false;
  if (conv.strides[0] != 1 || conv.strides[1] != 1 || conv.dilations[0] != 1 ||
      conv.dilations[1] != 1)
    return false;
  // The filter transform happens at compile time.
  Attribute weights;
  if (!matchPattern(conv.weight, m_Constant(&weights)))
    return false;
  return isa<DenseElementsAttr>(weights) ||
         isa<DenseF32ResourceElementsAttr>(weights);
}

bool isBroadcastCopy(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  AffineMap map = generic.getMatchingIndexingMap(generic.getDpsInputOperand(0));
  auto yield = cast<linalg::YieldOp>(generic.getBody()->getTerminator());
  return map.isProjectedPermutation() &&
         map.getNumResults() < generic.getNumLoops() &&
         yield.getNumOperands() == 1 &&
         yield.getOperand(0) == generic.getBody()->getArgument(0);
}

} // namespace kiln::codegen
