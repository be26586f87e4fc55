//===- BlockedConv.cpp - Blocked convolutions in codegen ------------------===//

#include "codegen/Common/BlockedConv.h"
#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::codegen {

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
  if (!inputType || !weightType || !outputType || inputType.getRank() != 5 ||
      weightType.getRank() != 6 || outputType.getRank() != 5 ||
      !inputType.hasStaticShape() || !weightType.hasStaticShape() ||
      !outputType.hasStaticShape() || !inputType.getElementType().isF32() ||
      !weightType.getElementType().isF32() ||
      !outputType.getElementType().isF32())
    return std::nullopt;
  conv.inputShape.assign(inputType.getShape().begin(),
                         inputType.getShape().end());
  conv.weightShape.assign(weightType.getShape().begin(),
                          weightType.getShape().end());
  conv.outputShape.assign(outputType.getShape().begin(),
                          outputType.getShape().end());
  for (int i = 0; i < 2; ++i) {
    conv.strides[i] = strides[i];
    conv.dilations[i] = dilations[i];
  }

  // The maps and iterators the tag promises.
  MLIRContext *ctx = op->getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = {
      AffineMap::get(9, 0,
                     {d(0), d(5),
                      d(2) * conv.strides[0] + d(6) * conv.dilations[0],
                      d(3) * conv.strides[1] + d(7) * conv.dilations[1], d(8)},
                     ctx),
      AffineMap::get(9, 0, {d(1), d(5), d(6), d(7), d(8), d(4)}, ctx),
      AffineMap::get(9, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx)};
  if (generic.getIndexingMapsArray() != ArrayRef<AffineMap>(maps))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (auto [index, iterator] : llvm::enumerate(iterators))
    if (iterator != (index < 5 ? utils::IteratorType::parallel
                               : utils::IteratorType::reduction))
      return std::nullopt;
  if (!linalg::detail::isContractionBody(
          *generic.getBlock(), [](Operation *first, Operation *second) {
            return isa<arith::MulFOp>(first) && isa<arith::AddFOp>(second);
          }))
    return std::nullopt;
  // The channel blocks and the block sizes agree.
  if (conv.weightShape[1] != conv.inputShape[1] ||
      conv.weightShape[4] != conv.inputShape[4] ||
      conv.weightShape[0] != conv.outputShape[1] ||
      conv.weightShape[5] != conv.outputShape[4] ||
      conv.inputShape[0] != conv.outputShape[0])
    return std::nullopt;
  return conv;
}

bool isWinogradCandidate(const BlockedConv &conv) {
  if (conv.kernelHeight() != 3 || conv.kernelWidth() != 3)
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
