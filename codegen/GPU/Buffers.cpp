//===- Buffers.cpp - What the GPU passes know of buffers and indices ------===//

#include "codegen/GPU/Buffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln::gpu {

Extent extentOf(Value value) {
  auto view = value.getDefiningOp<ViewLikeOpInterface>();
  if (!view)
    return {value};
  Extent source = extentOf(view.getViewSource());
  auto byteView = dyn_cast<memref::ViewOp>(view.getOperation());
  if (!byteView || source.begin != 0)
    return source;
  std::optional<int64_t> shift = getConstantIntValue(byteView.getByteShift());
  MemRefType type = byteView.getType();
  if (!shift || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat())
    return source;
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  return {source.root, *shift, *shift + bytes};
}

/// The memrefs `op` (and what it nests) reads and writes; false when some
/// effect has no value (it may touch anything).
bool effectsOf(Operation *op, SmallVectorImpl<Value> &reads,
               SmallVectorImpl<Value> &writes) {
  WalkResult result = op->walk([&](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
          isMemoryEffectFree(nested))
        return WalkResult::advance();
      return WalkResult::interrupt();
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list) {
      Value value = effect.getValue();
      if (!value)
        return WalkResult::interrupt();
      if (isa<MemoryEffects::Read>(effect.getEffect()))
        reads.push_back(value);
      else if (isa<MemoryEffects::Write>(effect.getEffect()))
        writes.push_back(value);
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

SmallVector<linalg::LinalgOp> topLevelLinalgOps(func::FuncOp func) {
  SmallVector<linalg::LinalgOp> ops;
  for (Operation &op : func.getBody().getOps())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      ops.push_back(linalgOp);
  return ops;
}

void delinearize(OpBuilder &b, Location loc, Value linear,
                 ArrayRef<unsigned> dims, ArrayRef<int64_t> ranges,
                 SmallVectorImpl<Value> &values) {
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    Value size = arith::ConstantIndexOp::create(b, loc, ranges[dims[i]]);
    values[dims[i]] =
        i == 0 ? linear : arith::RemUIOp::create(b, loc, linear, size);
    if (i > 0)
      linear = arith::DivUIOp::create(b, loc, linear, size);
  }
}

} // namespace kiln::gpu
