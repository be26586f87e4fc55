//===- FuseElementwise.cpp - Elementwise chains as one loop nest ----------===//

#include "codegen/Common/Passes.h"

#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Dominance.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENFUSEELEMENTWISE
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// Whether `producer` reads only tensors smaller than its result (a
/// broadcast of a bias or a scale): computing it again costs no memory
/// traffic.
bool isBroadcast(Operation *producer) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(producer);
  if (!linalgOp || linalgOp->getNumResults() != 1)
    return false;
  auto resultType = dyn_cast<ShapedType>(linalgOp->getResult(0).getType());
  if (!resultType || !resultType.hasStaticShape())
    return false;
  return llvm::all_of(linalgOp.getDpsInputs(), [&](Value input) {
    auto type = dyn_cast<ShapedType>(input.getType());
    return !type || (type.hasStaticShape() &&
                     type.getNumElements() < resultType.getNumElements());
  });
}

/// Fuse only into consumers whose loops are all parallel (each element of
/// the producer is then read once). A producer that other ops read too is
/// fused only when it is a broadcast: upstream fusion keeps such a producer
/// alive for its other users, so its value would be computed twice, and a
/// residual block's output (read by the next convolution and by the next
/// residual sum) was recomputed inside the next block's epilogue, which then
/// no longer fused into the convolution.
bool intoElementwiseConsumer(OpOperand *operand, bool broadcasts) {
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer || consumer.getNumLoops() != consumer.getNumParallelLoops())
    return false;
  Value value = operand->get();
  bool broadcast = isBroadcast(value.getDefiningOp());
  if (broadcast && !broadcasts)
    return false;
  bool onlyHere = llvm::all_of(value.getUsers(), [&](Operation *user) {
    return user == consumer.getOperation();
  });
  return onlyHere || broadcast;
}

/// A tensor that a packed integer product reads as bytes
/// (`kiln.to_bytes`, PackedForm::convertInput) and other ops read as f32
/// (a residual block's output: the next convolution and the next residual
/// sum) is written twice, in f32 and then converted, since its producer
/// cannot fuse with the conversion while the others read it. Its values are
/// the bytes' exactly, so the other readers, where each is a linalg.generic
/// that takes it as an input, read the bytes instead and convert them in
/// their body: the tensor then has one reader, and its producer writes the
/// bytes alone (a quarter of the f32 traffic, for it and for each reader).
void readBytesOnce(func::FuncOp func) {
  DominanceInfo dominance(func);
  SmallVector<linalg::GenericOp> conversions;
  func.walk([&](linalg::GenericOp op) {
    if (op->hasAttr(attr::kToBytes) && op.getNumDpsInputs() == 1 &&
        op->getNumResults() == 1)
      conversions.push_back(op);
  });
  for (linalg::GenericOp conversion : conversions) {
    Value values = conversion.getDpsInputs()[0];
    Value bytes = conversion->getResult(0);
    auto valueType = dyn_cast<RankedTensorType>(values.getType());
    auto byteType = dyn_cast<RankedTensorType>(bytes.getType());
    if (!valueType || !byteType ||
        valueType.getShape() != byteType.getShape() ||
        !valueType.getElementType().isF32() ||
        !byteType.getElementType().isInteger(8) ||
        !llvm::all_of(conversion.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); }))
      continue;
    int64_t low =
        conversion->getAttrOfType<IntegerAttr>(attr::kToBytes).getInt();
    // Every other reader must be a generic that takes it as an input only.
    SmallVector<linalg::GenericOp> readers;
    bool all = true;
    for (Operation *user : values.getUsers()) {
      if (user == conversion.getOperation())
        continue;
      // (A reader before the conversion keeps the f32 value.)
      auto generic = dyn_cast<linalg::GenericOp>(user);
      all = all && generic &&
            dominance.properlyDominates(conversion.getOperation(), generic) &&
            llvm::none_of(generic.getDpsInits(),
                          [&](Value init) { return init == values; });
      if (all && !llvm::is_contained(readers, generic))
        readers.push_back(generic);
    }
    if (!all || readers.empty())
      continue;
    for (linalg::GenericOp reader : readers) {
      Block &body = reader.getRegion().front();
      OpBuilder b = OpBuilder::atBlockBegin(&body);
      for (OpOperand *operand : reader.getDpsInputOperands()) {
        if (operand->get() != values)
          continue;
        operand->set(bytes);
        BlockArgument arg = body.getArgument(operand->getOperandNumber());
        arg.setType(b.getI8Type());
        Location loc = reader.getLoc();
        auto widened = arith::UIToFPOp::create(b, loc, b.getF32Type(), arg);
        Value x = arith::AddFOp::create(
            b, loc, widened,
            arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(low))));
        arg.replaceAllUsesExcept(x, widened);
      }
    }
  }
}

struct CodegenFuseElementwisePass
    : impl::CodegenFuseElementwiseBase<CodegenFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    readBytesOnce(getOperation());
    RewritePatternSet patterns(&getContext());
    populateFuseElementwisePatterns(patterns, broadcasts);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void populateFuseElementwisePatterns(RewritePatternSet &patterns,
                                     bool broadcasts) {
  linalg::populateElementwiseOpsFusionPatterns(
      patterns, [broadcasts](OpOperand *operand) {
        return intoElementwiseConsumer(operand, broadcasts);
      });
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
}

} // namespace kiln::codegen
