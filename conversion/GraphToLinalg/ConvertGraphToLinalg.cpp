//===- ConvertGraphToLinalg.cpp - The graph to linalg pass ----------------===//

#include "conversion/GraphToLinalg/GraphToLinalg.h"

#include "dialects/Graph/GraphDialect.h"
#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTGRAPHTOLINALG
#include "conversion/GraphToLinalg/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

GraphTypeConverter::GraphTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](IntegerType type) -> Type {
    if (type.isSignless())
      return type;
    return IntegerType::get(type.getContext(), type.getWidth());
  });
  addConversion([this](RankedTensorType type) -> Type {
    return RankedTensorType::get(type.getShape(),
                                 convertType(type.getElementType()));
  });
}

void populateGraphToLinalgPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns) {
  populateCoreToLinalgPatterns(converter, patterns);
  populateElementwiseToLinalgPatterns(converter, patterns);
  populateLayoutToLinalgPatterns(converter, patterns);
  populateNNToLinalgPatterns(converter, patterns);
  populateShapeToLinalgPatterns(converter, patterns);
  populateReductionToLinalgPatterns(converter, patterns);
  populateSelectionToLinalgPatterns(converter, patterns);
  populateRecurrentToLinalgPatterns(converter, patterns);
}

namespace {

struct ConvertGraphToLinalgPass
    : impl::ConvertGraphToLinalgBase<ConvertGraphToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    GraphTypeConverter converter;

    ConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    target.addIllegalDialect<graph::GraphDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.addLegalOp<CheckIndexOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateGraphToLinalgPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);

    if (failed(
            applyFullConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
} // namespace kiln
