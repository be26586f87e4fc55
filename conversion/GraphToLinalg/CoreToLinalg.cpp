//===- CoreToLinalg.cpp - Lowering of constants ---------------------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace kiln {
namespace {

/// graph.constant -> arith.constant, retyped to signless when unsigned.
struct ConstantLowering : OpConversionPattern<graph::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(graph::ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    TypedAttr value = op.getValue();
    if (value.getType() != type) {
      if (auto dense = dyn_cast<DenseElementsAttr>(value))
        value = dense.bitcast(type.getElementType());
      else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
        value = DenseResourceElementsAttr::get(type, resource.getRawHandle());
      else
        return rewriter.notifyMatchFailure(op, "cannot retype this constant");
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, value);
    return success();
  }
};

} // namespace

void populateCoreToLinalgPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns) {
  patterns.add<ConstantLowering>(converter, patterns.getContext());
}

} // namespace kiln
