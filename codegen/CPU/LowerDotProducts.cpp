//===- LowerDotProducts.cpp - kiln.dot_i8 for the target ------------------===//
//
// The integer convolutions' and matrix products' steps are kiln.dot_i8 ops
// (four u8 x s8 products summed into each i32 lane), made pure so that
// bufferization takes them. Here, after bufferization, each becomes the
// target's dot-product instruction (x86 vpdpbusd, AArch64 usdot or sdot),
// or the same sums in 32-bit vector arithmetic.
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

/// `acc` plus, in each of its lanes, the sum of that lane's `group`
/// consecutive elements of `products` (lanes x group): position j of every
/// lane gathered by one shuffle, all in one dimension (this runs after the
/// vector ops' lowering).
Value addGroups(PatternRewriter &rewriter, Location loc, Value acc,
                Value products, int64_t group) {
  int64_t lanes = cast<VectorType>(acc.getType()).getDimSize(0);
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(acc.getType()));
  for (int64_t j = 0; j < group; ++j) {
    SmallVector<int64_t> mask;
    for (int64_t lane = 0; lane < lanes; ++lane)
      mask.push_back(lane * group + j);
    Value part =
        vector::ShuffleOp::create(rewriter, loc, products, products, mask);
    acc = isFloat ? arith::AddFOp::create(rewriter, loc, acc, part).getResult()
                  : arith::AddIOp::create(rewriter, loc, acc, part).getResult();
  }
  return acc;
}

/// A dot op's lowering: the target's instruction for it and its lanes.
template <typename DotOp> struct DotLowering : OpRewritePattern<DotOp> {
  DotLowering(MLIRContext *ctx, StringRef instruction, int64_t lanes)
      : OpRewritePattern<DotOp>(ctx), instruction(instruction.str()),
        lanes(lanes) {}

  std::string instruction;
  int64_t lanes;
};

struct LowerDotI8 : DotLowering<DotI8Op> {
  using DotLowering::DotLowering;

  LogicalResult matchAndRewrite(DotI8Op op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<VectorType>(op.getType());
    int64_t count = type.getDimSize(0);
    Location loc = op.getLoc();
    Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
    auto bytesType = VectorType::get({count * 4}, i8);
    auto bytes = [&](Value value) -> Value {
      return vector::BitCastOp::create(rewriter, loc, bytesType, value);
    };
    auto call = [&](StringRef name, Value acc, Value a, Value b) -> Value {
      return LLVM::CallIntrinsicOp::create(rewriter, loc, type,
                                           rewriter.getStringAttr(name),
                                           ValueRange{acc, a, b})
          .getResult(0);
    };
    if (count == lanes && instruction == "vpdpbusd") {
      // LLVM 22's signature: the i32 accumulators and two byte vectors.
      std::string name =
          "llvm.x86.avx512.vpdpbusd." + std::to_string(count * 32);
      rewriter.replaceOp(
          op, call(name, op.getAcc(), bytes(op.getLhs()), bytes(op.getRhs())));
      return success();
    }
    if (count == lanes && lanes == 4 && instruction == "usdot") {
      rewriter.replaceOp(op, call("llvm.aarch64.neon.usdot.v4i32.v16i8",
                                  op.getAcc(), bytes(op.getLhs()),
                                  bytes(op.getRhs())));
      return success();
    }
    if (count == lanes && lanes == 4 && instruction == "sdot") {
      // (u - 128) . w + 128 * sum(w): the first with the bytes' top bits
      // flipped, the second as -sdot(0, splat(-128), w).
      StringRef name = "llvm.aarch64.neon.sdot.v4i32.v16i8";
      Value flip = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(bytesType, APInt(8, 0x80)));
      Value lhs =
          arith::XOrIOp::create(rewriter, loc, bytes(op.getLhs()), flip);
      Value rhs = bytes(op.getRhs());
      Value zeros = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(type, APInt(32, 0)));
      Value shifted = call(name, op.getAcc(), lhs, rhs);
      Value correction = call(name, zeros, flip, rhs);
      rewriter.replaceOpWithNewOp<arith::SubIOp>(op, shifted, correction);
      return success();
    }
    // lanes x 4 bytes each, extended to i32, multiplied and summed by lane.
    auto wideType = VectorType::get({count * 4}, i32);
    Value lhs = arith::ExtUIOp::create(
        rewriter, loc, wideType,
        vector::BitCastOp::create(rewriter, loc, bytesType, op.getLhs()));
    Value rhs = arith::ExtSIOp::create(
        rewriter, loc, wideType,
        vector::BitCastOp::create(rewriter, loc, bytesType, op.getRhs()));
    Value products = arith::MulIOp::create(rewriter, loc, lhs, rhs);
    rewriter.replaceOp(op, addGroups(rewriter, loc, op.getAcc(), products, 4));
    return success();
  }
};

struct LowerDotBF16 : DotLowering<DotBF16Op> {
  using DotLowering::DotLowering;

  LogicalResult matchAndRewrite(DotBF16Op op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<VectorType>(op.getType());
    int64_t count = type.getDimSize(0);
    Location loc = op.getLoc();
    auto halvesType = VectorType::get({count * 2}, rewriter.getBF16Type());
    Value lhs =
        vector::BitCastOp::create(rewriter, loc, halvesType, op.getLhs());
    Value rhs =
        vector::BitCastOp::create(rewriter, loc, halvesType, op.getRhs());
    std::string name;
    if (count == lanes && instruction == "vdpbf16ps")
      name = "llvm.x86.avx512bf16.dpbf16ps." + std::to_string(count * 32);
    else if (count == lanes && lanes == 4 && instruction == "bfdot")
      name = "llvm.aarch64.neon.bfdot.v4f32.v8bf16";
    if (!name.empty()) {
      rewriter.replaceOp(
          op, LLVM::CallIntrinsicOp::create(rewriter, loc, type,
                                            rewriter.getStringAttr(name),
                                            ValueRange{op.getAcc(), lhs, rhs})
                  .getResult(0));
      return success();
    }
    // Both halves of each lane in f32, multiplied, the even and odd
    // products gathered by shuffles and summed onto the accumulators.
    auto wideType = VectorType::get({count * 2}, rewriter.getF32Type());
    Value products = arith::MulFOp::create(
        rewriter, loc, arith::ExtFOp::create(rewriter, loc, wideType, lhs),
        arith::ExtFOp::create(rewriter, loc, wideType, rhs));
    rewriter.replaceOp(op, addGroups(rewriter, loc, op.getAcc(), products, 2));
    return success();
  }
};

struct CPULowerDotProductsPass
    : impl::CPULowerDotProductsBase<CPULowerDotProductsPass> {
  using CPULowerDotProductsBase::CPULowerDotProductsBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerDotI8>(&getContext(), instruction, lanes);
    patterns.add<LowerDotBF16>(&getContext(), bf16Instruction, bf16Lanes);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
} // namespace kiln::cpu
