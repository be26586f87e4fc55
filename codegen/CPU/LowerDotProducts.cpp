//===- LowerDotProducts.cpp - kiln.dot_i8 for the target ------------------===//
//
// The integer convolutions' steps are kiln.dot_i8 ops (four u8 x s8
// products summed into each i32 lane), made pure so that bufferization
// takes them. Here, after bufferization, each becomes x86's vpdpbusd where
// the target has it, or the same sums in 32-bit vector arithmetic.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <string>

namespace kiln::cpu {
#define GEN_PASS_DEF_CPULOWERDOTPRODUCTS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

struct LowerDotI8 : OpRewritePattern<DotI8Op> {
  LowerDotI8(MLIRContext *ctx, int64_t dotLanes)
      : OpRewritePattern(ctx), dotLanes(dotLanes) {}

  LogicalResult matchAndRewrite(DotI8Op op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<VectorType>(op.getType());
    int64_t lanes = type.getDimSize(0);
    Location loc = op.getLoc();
    Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
    auto bytesType = VectorType::get({lanes * 4}, i8);
    if (lanes == dotLanes) {
      // LLVM 22's signature: the i32 accumulators and two byte vectors.
      std::string name =
          "llvm.x86.avx512.vpdpbusd." + std::to_string(lanes * 32);
      Value lhs =
          vector::BitCastOp::create(rewriter, loc, bytesType, op.getLhs());
      Value rhs =
          vector::BitCastOp::create(rewriter, loc, bytesType, op.getRhs());
      rewriter.replaceOp(
          op, LLVM::CallIntrinsicOp::create(rewriter, loc, type,
                                            rewriter.getStringAttr(name),
                                            ValueRange{op.getAcc(), lhs, rhs})
                  .getResult(0));
      return success();
    }
    // lanes x 4 bytes each, extended to i32 and multiplied; byte j of every
    // lane gathered by a shuffle (all in one dimension: this runs after
    // the vector ops' lowering) and summed onto the accumulators.
    auto wideType = VectorType::get({lanes * 4}, i32);
    Value lhs = arith::ExtUIOp::create(
        rewriter, loc, wideType,
        vector::BitCastOp::create(rewriter, loc, bytesType, op.getLhs()));
    Value rhs = arith::ExtSIOp::create(
        rewriter, loc, wideType,
        vector::BitCastOp::create(rewriter, loc, bytesType, op.getRhs()));
    Value products = arith::MulIOp::create(rewriter, loc, lhs, rhs);
    Value sum = op.getAcc();
    for (int64_t j = 0; j < 4; ++j) {
      SmallVector<int64_t> mask;
      for (int64_t lane = 0; lane < lanes; ++lane)
        mask.push_back(lane * 4 + j);
      Value bytes =
          vector::ShuffleOp::create(rewriter, loc, products, products, mask);
      sum = arith::AddIOp::create(rewriter, loc, sum, bytes);
    }
    rewriter.replaceOp(op, sum);
    return success();
  }

  int64_t dotLanes;
};

struct CPULowerDotProductsPass
    : impl::CPULowerDotProductsBase<CPULowerDotProductsPass> {
  using CPULowerDotProductsBase::CPULowerDotProductsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerDotI8>(&getContext(), int8DotLanes);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
