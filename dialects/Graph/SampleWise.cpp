//===- SampleWise.cpp - Which ops treat the samples of a batch apart ------===//
//
// SampleWiseOpInterface (GraphInterfaces.td): the elementwise rule that is
// the interface's default, and the ops with a rule of their own. "Carries"
// means an operand depends on the batch of the model's inputs, in its first
// dimension; kiln-graph-split-batch runs the ops that say yes once per
// sample.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"

using namespace mlir;

namespace kiln::graph {
namespace {

using Carries = llvm::function_ref<bool(Value)>;

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

bool leadsWithOne(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getRank() > 0 && type.getDimSize(0) == 1;
}

/// An operand added to `op`'s result (a bias, a residual, an elementwise
/// operand): the batch at the result's rank, or broadcast along it (a lower
/// rank or a first dimension of 1). A missing optional operand is fine.
bool added(Operation *op, Value value, Carries carries) {
  if (!value)
    return true;
  int64_t resultRank = rankOf(op->getResult(0));
  return carries(value) ? rankOf(value) == resultRank
                        : rankOf(value) < resultRank || leadsWithOne(value);
}

bool none(ValueRange values, Carries carries) {
  return llvm::none_of(values, carries);
}

/// The first operand carries the batch and no other does: convolutions and
/// normalisations with their parameters.
bool onlyFirstCarries(Operation *op, Carries carries) {
  return carries(op->getOperand(0)) &&
         none(op->getOperands().drop_front(), carries);
}

/// A convolution with its epilogue: the input carries the batch, the weight
/// and bias do not, and the residual is added.
bool convWithEpilogue(Operation *op, Value input, Value weight, Value bias,
                      Value residual, Carries carries) {
  return carries(input) && !carries(weight) && (!bias || !carries(bias)) &&
         added(op, residual, carries);
}

/// A matmul with the batch in the rows of the left-hand side, or in batch
/// dimensions that both sides have or one side broadcasts.
bool matmulRule(Value lhs, Value rhs, Carries carries) {
  auto shared = [&](Value side, Value other) {
    return rankOf(side) <= 2 || rankOf(side) < rankOf(other) ||
           leadsWithOne(side);
  };
  if (carries(lhs) && carries(rhs))
    return rankOf(lhs) >= 3 && rankOf(lhs) == rankOf(rhs);
  if (carries(lhs))
    return rankOf(lhs) >= 2 && shared(rhs, lhs);
  return rankOf(rhs) >= 3 && shared(lhs, rhs);
}

bool excludesBatch(ArrayRef<int64_t> axes) {
  return !llvm::is_contained(axes, 0);
}

} // namespace

bool isElementwiseSampleWise(Operation *op, Carries carries) {
  return op->getNumResults() > 0 &&
         llvm::all_of(op->getOperands(),
                      [&](Value value) { return added(op, value, carries); });
}

// Ops of one operand whose samples stay apart whatever they do within one:
// pools, layout conversions, LRN across channels.
#define KILN_ONE_OPERAND_RULE(OP)                                              \
  bool OP::treatsSamplesApart(Carries) {                                       \
    return (*this)->getNumOperands() == 1;                                     \
  }
KILN_ONE_OPERAND_RULE(MaxPoolOp)
KILN_ONE_OPERAND_RULE(AveragePoolOp)
KILN_ONE_OPERAND_RULE(GlobalAveragePoolOp)
KILN_ONE_OPERAND_RULE(GlobalMaxPoolOp)
KILN_ONE_OPERAND_RULE(LRNOp)
KILN_ONE_OPERAND_RULE(ToBlockedOp)
KILN_ONE_OPERAND_RULE(FromBlockedOp)
KILN_ONE_OPERAND_RULE(BlockedMaxPoolOp)
KILN_ONE_OPERAND_RULE(BlockedAveragePoolOp)
#undef KILN_ONE_OPERAND_RULE

bool ConvOp::treatsSamplesApart(Carries carries) {
  return onlyFirstCarries(*this, carries);
}
bool BatchNormOp::treatsSamplesApart(Carries carries) {
  return onlyFirstCarries(*this, carries);
}
bool InstanceNormOp::treatsSamplesApart(Carries carries) {
  return onlyFirstCarries(*this, carries);
}
bool BlockedDepthwiseConvOp::treatsSamplesApart(Carries carries) {
  return onlyFirstCarries(*this, carries);
}

bool LayerNormOp::treatsSamplesApart(Carries carries) {
  return getAxis() > 0 && onlyFirstCarries(*this, carries);
}

bool BlockedConvOp::treatsSamplesApart(Carries carries) {
  return convWithEpilogue(*this, getInput(), getWeight(), getBias(),
                          getResidual(), carries);
}
bool FusedConvOp::treatsSamplesApart(Carries carries) {
  return convWithEpilogue(*this, getInput(), getWeight(), getBias(),
                          getResidual(), carries);
}

bool MatMulOp::treatsSamplesApart(Carries carries) {
  return matmulRule(getOperand(0), getOperand(1), carries);
}
bool FusedMatMulOp::treatsSamplesApart(Carries carries) {
  return matmulRule(getLhs(), getRhs(), carries) &&
         added(*this, getBias(), carries) &&
         added(*this, getResidual(), carries);
}

bool GemmOp::treatsSamplesApart(Carries carries) {
  Value c = getC();
  return carries(getA()) && !getTransA() && !carries(getB()) &&
         (!c || (!carries(c) && (rankOf(c) < 2 || leadsWithOne(c))));
}

bool ConcatOp::treatsSamplesApart(Carries carries) {
  return getAxis() != 0 && llvm::all_of(getOperands(), carries);
}

bool TransposeOp::treatsSamplesApart(Carries) { return getPerm()[0] == 0; }

/// A reshape's target that names the batch is made to name one sample by
/// kiln-graph-split-batch; 0, a copy of the input's size, and -1 follow on
/// their own.
bool ReshapeOp::treatsSamplesApart(Carries) { return !getShape().empty(); }

/// A slice that keeps the whole batch (kiln-graph-split-batch makes its
/// end one sample's; the operand may already be one sample's then, its
/// producer retyped first).
bool SliceOp::treatsSamplesApart(Carries) {
  auto type = cast<RankedTensorType>(getInput().getType());
  return type.getRank() > 0 && !type.isDynamicDim(0) && getStarts()[0] == 0 &&
         getSteps()[0] == 1 && getEnds()[0] >= type.getDimSize(0);
}

// Reductions over other dimensions than the batch (an empty list reduces
// nothing).
#define KILN_REDUCE_RULE(OP)                                                   \
  bool OP::treatsSamplesApart(Carries) { return excludesBatch(getAxes()); }
KILN_REDUCE_RULE(ReduceSumOp)
KILN_REDUCE_RULE(ReduceMeanOp)
KILN_REDUCE_RULE(ReduceMaxOp)
KILN_REDUCE_RULE(ReduceMinOp)
KILN_REDUCE_RULE(ReduceProdOp)
KILN_REDUCE_RULE(ReduceL1Op)
KILN_REDUCE_RULE(ReduceL2Op)
KILN_REDUCE_RULE(ReduceLogSumOp)
KILN_REDUCE_RULE(ReduceLogSumExpOp)
KILN_REDUCE_RULE(ReduceSumSquareOp)
#undef KILN_REDUCE_RULE

/// A resize that keeps the batch's size (kiln-graph-split-batch makes its
/// target one sample's).
bool ResizeOp::treatsSamplesApart(Carries) {
  return !getScales().empty() && getScales()[0] == 1.0;
}

/// Padding along other dimensions than the batch.
bool PadOp::treatsSamplesApart(Carries) {
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  return rank > 0 && getPads()[0] == 0 && getPads()[rank] == 0;
}

bool GatherOp::treatsSamplesApart(Carries carries) {
  return carries(getIndices()) ? !carries(getData()) && getAxis() == 0
                               : getAxis() != 0;
}

bool SoftmaxOp::treatsSamplesApart(Carries) { return excludesBatch(getAxes()); }
bool LogSoftmaxOp::treatsSamplesApart(Carries) {
  return excludesBatch(getAxes());
}
bool HardmaxOp::treatsSamplesApart(Carries) { return excludesBatch(getAxes()); }

// The ops above have rules of their own, not the elementwise one.
#define KILN_OWN_RULE(OP)                                                      \
  bool OP::hasElementwiseSampleRule() { return false; }
KILN_OWN_RULE(MaxPoolOp)
KILN_OWN_RULE(AveragePoolOp)
KILN_OWN_RULE(GlobalAveragePoolOp)
KILN_OWN_RULE(GlobalMaxPoolOp)
KILN_OWN_RULE(LRNOp)
KILN_OWN_RULE(ToBlockedOp)
KILN_OWN_RULE(FromBlockedOp)
KILN_OWN_RULE(BlockedMaxPoolOp)
KILN_OWN_RULE(BlockedAveragePoolOp)
KILN_OWN_RULE(ConvOp)
KILN_OWN_RULE(BatchNormOp)
KILN_OWN_RULE(InstanceNormOp)
KILN_OWN_RULE(BlockedDepthwiseConvOp)
KILN_OWN_RULE(LayerNormOp)
KILN_OWN_RULE(BlockedConvOp)
KILN_OWN_RULE(FusedConvOp)
KILN_OWN_RULE(MatMulOp)
KILN_OWN_RULE(FusedMatMulOp)
KILN_OWN_RULE(GemmOp)
KILN_OWN_RULE(ConcatOp)
KILN_OWN_RULE(TransposeOp)
KILN_OWN_RULE(ReshapeOp)
KILN_OWN_RULE(SliceOp)
KILN_OWN_RULE(GatherOp)
KILN_OWN_RULE(PadOp)
KILN_OWN_RULE(ReduceSumOp)
KILN_OWN_RULE(ReduceMeanOp)
KILN_OWN_RULE(ReduceMaxOp)
KILN_OWN_RULE(ReduceMinOp)
KILN_OWN_RULE(ReduceProdOp)
KILN_OWN_RULE(ReduceL1Op)
KILN_OWN_RULE(ReduceL2Op)
KILN_OWN_RULE(ReduceLogSumOp)
KILN_OWN_RULE(ReduceLogSumExpOp)
KILN_OWN_RULE(ReduceSumSquareOp)
KILN_OWN_RULE(ResizeOp)
KILN_OWN_RULE(SoftmaxOp)
KILN_OWN_RULE(LogSoftmaxOp)
KILN_OWN_RULE(HardmaxOp)
#undef KILN_OWN_RULE

} // namespace kiln::graph

#include "dialects/Graph/GraphInterfaces.cpp.inc"
