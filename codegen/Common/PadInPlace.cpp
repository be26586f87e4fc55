//===- PadInPlace.cpp - Padded tensors written in place -------------------===//
//
// A tensor.pad (a convolution's or a pool's padded input) bufferizes to a
// buffer filled with the padding value and a copy of the source into its
// interior: two sequential passes, the fill unvectorized (LLVM unrolled its
// 16-wide inner loop and stored the rest with scatters). Here it becomes a
// linalg.fill of the padded tensor and the source inserted into it; when the
// source is the result of a linalg op that only writes its output (an
// epilogue, a pool, an elementwise op), that op writes into the interior
// directly and there is no copy at all. The fill is a linalg op that
// kiln-cpu-parallelize puts on threads.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Passes.h"
#include "codegen/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENPADINPLACE
#define GEN_PASS_DEF_CODEGENFILLBORDERS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// The op whose result `value` is, when it can write that result into any
/// tensor of its type: a linalg op whose payload never reads the output
/// operand. Other readers of `value` (a fire module's 1x1 expand beside
/// its padded 3x3) then read it where it lies, in the padded tensor's
/// interior.
linalg::LinalgOp writerOf(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return nullptr;
  auto op = dyn_cast<linalg::LinalgOp>(result.getOwner());
  if (!op || !op.hasPureTensorSemantics() ||
      op.getNumLoops() != op.getNumParallelLoops())
    return nullptr;
  OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
  if (op.payloadUsesValueFromOperand(init))
    return nullptr;
  return op;
}

/// The constant a static pad pads with, or null.
Attribute constantPadding(tensor::PadOp pad) {
  Value value = pad.getConstantPaddingValue();
  Attribute attr;
  if (!value || !matchPattern(value, m_Constant(&attr)))
    return nullptr;
  return attr;
}

/// pad(pad(x, v), v) -> pad(x, v), the low and high amounts added, when the
/// inner pad has no other use.
struct FoldPadOfPad : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp outer,
                                PatternRewriter &rewriter) const override {
    auto inner = outer.getSource().getDefiningOp<tensor::PadOp>();
    if (!inner || !inner->hasOneUse() || outer.getNofold() || inner.getNofold())
      return rewriter.notifyMatchFailure(outer, "not a pad of a pad");
    Attribute value = constantPadding(outer);
    if (!value || value != constantPadding(inner))
      return rewriter.notifyMatchFailure(outer, "padding values differ");
    auto add = [&](ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b)
        -> std::optional<SmallVector<OpFoldResult>> {
      SmallVector<OpFoldResult> sum;
      for (auto [x, y] : llvm::zip_equal(a, b)) {
        std::optional<int64_t> cx = getConstantIntValue(x);
        std::optional<int64_t> cy = getConstantIntValue(y);
        if (!cx || !cy)
          return std::nullopt;
        sum.push_back(rewriter.getIndexAttr(*cx + *cy));
      }
      return sum;
    };
    std::optional<SmallVector<OpFoldResult>> low =
        add(inner.getMixedLowPad(), outer.getMixedLowPad());
    std::optional<SmallVector<OpFoldResult>> high =
        add(inner.getMixedHighPad(), outer.getMixedHighPad());
    if (!low || !high)
      return rewriter.notifyMatchFailure(outer, "dynamic padding");
    Value padValue = arith::ConstantOp::create(rewriter, outer.getLoc(),
                                               cast<TypedAttr>(value));
    rewriter.replaceOpWithNewOp<tensor::PadOp>(
        outer, outer.getResultType(), inner.getSource(), *low, *high, padValue);
    rewriter.eraseOp(inner);
    return success();
  }
};

struct PadInPlace : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp pad,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = pad.getResultType();
    Value padValue = pad.getConstantPaddingValue();
    if (!padValue || !type.hasStaticShape() ||
        !pad.getSourceType().hasStaticShape() || pad.getNofold())
      return rewriter.notifyMatchFailure(pad, "not a static constant pad");
    SmallVector<OpFoldResult> offsets = pad.getMixedLowPad();
    if (llvm::any_of(offsets, [](OpFoldResult offset) {
          return !getConstantIntValue(offset);
        }))
      return rewriter.notifyMatchFailure(pad, "dynamic padding");

    Location loc = pad.getLoc();
    // The padding value may be defined in the pad's region; a constant can
    // be made again outside it.
    if (pad.getRegion().isAncestor(padValue.getParentRegion())) {
      Attribute attr;
      if (!matchPattern(padValue, m_Constant(&attr)))
        return rewriter.notifyMatchFailure(pad, "padding value not constant");
      padValue =
          arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(attr));
    }
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                          type.getElementType());
    Value filled =
        linalg::FillOp::create(rewriter, loc, padValue, empty).getResult(0);
    ArrayRef<int64_t> shape = pad.getSourceType().getShape();
    // The source overwrites the interior before anything reads the pad:
    // only the border needs the padding value (kiln-codegen-fill-borders).
    SmallVector<int64_t> interior;
    for (OpFoldResult offset : offsets)
      interior.push_back(*getConstantIntValue(offset));
    llvm::append_range(interior, shape);
    filled.getDefiningOp()->setAttr(attr::kPadInterior,
                                    rewriter.getDenseI64ArrayAttr(interior));
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(rewriter.getContext(), shape);
    SmallVector<OpFoldResult> strides(shape.size(), rewriter.getIndexAttr(1));
    Value source = pad.getSource();
    if (linalg::LinalgOp writer = writerOf(source)) {
      auto result = cast<OpResult>(source);
      rewriter.setInsertionPoint(writer);
      // The fill and the interior ahead of the writer, which writes into it.
      Operation *fillOp = filled.getDefiningOp();
      rewriter.moveOpBefore(empty.getDefiningOp(), writer);
      if (Operation *def = padValue.getDefiningOp();
          def && !def->isBeforeInBlock(writer) &&
          def->getBlock() == writer->getBlock())
        rewriter.moveOpBefore(def, writer);
      rewriter.moveOpBefore(fillOp, writer);
      Value interior = tensor::ExtractSliceOp::create(rewriter, loc, filled,
                                                      offsets, sizes, strides);
      rewriter.modifyOpInPlace(writer, [&] {
        writer.getDpsInitOperand(result.getResultNumber())->set(interior);
      });
      rewriter.setInsertionPoint(pad);
    }
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(pad, source, filled,
                                                       offsets, sizes, strides);
    return success();
  }
};

struct CodegenPadInPlacePass
    : impl::CodegenPadInPlaceBase<CodegenPadInPlacePass> {
  void runOnOperation() override {
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    // Nested pads fold before either becomes a fill and a copy.
    RewritePatternSet fold(&getContext());
    fold.add<FoldPadOfPad>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(fold), config)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<PadInPlace>(&getContext());
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

/// Whether `op` takes (or puts back) exactly the box `interior`.
template <typename SliceOp>
bool atInterior(SliceOp op, ArrayRef<int64_t> interior) {
  int64_t rank = interior.size() / 2;
  return op.getStaticOffsets() == interior.take_front(rank) &&
         op.getStaticSizes() == interior.drop_front(rank) &&
         llvm::all_of(op.getStaticStrides(), [](int64_t s) { return s == 1; });
}

struct CodegenFillBordersPass
    : impl::CodegenFillBordersBase<CodegenFillBordersPass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill->hasAttr(attr::kPadInterior))
        fills.push_back(fill);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::FillOp fill : fills) {
      ArrayRef<int64_t> interior =
          fill->getAttrOfType<DenseI64ArrayAttr>(attr::kPadInterior)
              .asArrayRef();
      fill->removeAttr(attr::kPadInterior);
      // Only the padded source's writes may see the interior: its slice
      // (the writer's destination) and its insertion.
      Value filled = fill.getResult(0);
      bool onlyInterior =
          fill.hasPureTensorSemantics() &&
          llvm::all_of(filled.getUses(), [&](OpOperand &use) {
            Operation *user = use.getOwner();
            if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
              return atInterior(slice, interior);
            if (auto insert = dyn_cast<tensor::InsertSliceOp>(user))
              return use.get() == insert.getDest() &&
                     atInterior(insert, interior);
            return false;
          });
      if (!onlyInterior)
        continue;
      auto type = cast<RankedTensorType>(filled.getType());
      rewriter.setInsertionPoint(fill);
      Location loc = fill.getLoc();
      Value tensor = fill.getOutputs()[0];
      for (auto &[offsets, sizes] : bordersOf(type.getShape(), interior)) {
        SmallVector<OpFoldResult> offsetsAttr =
            getAsIndexOpFoldResult(&getContext(), offsets);
        SmallVector<OpFoldResult> sizesAttr =
            getAsIndexOpFoldResult(&getContext(), sizes);
        SmallVector<OpFoldResult> strides(offsets.size(),
                                          rewriter.getIndexAttr(1));
        Value slab = tensor::ExtractSliceOp::create(
            rewriter, loc, tensor, offsetsAttr, sizesAttr, strides);
        Value filledSlab =
            linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], slab)
                .getResult(0);
        tensor = tensor::InsertSliceOp::create(
            rewriter, loc, filledSlab, tensor, offsetsAttr, sizesAttr, strides);
      }
      rewriter.replaceOp(fill, tensor);
    }
  }
};

} // namespace
} // namespace kiln::codegen
