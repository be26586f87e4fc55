//===- OutlineKernels.cpp - One function per top-level loop nest ----------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUOUTLINEKERNELS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// Whether `value` is best recreated inside a kernel rather than passed:
/// constants, global lookups and views of something that is itself passed
/// or recreated (a strided view cannot cross the bare-pointer convention).
bool shouldRecreate(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || def->getNumResults() != 1)
    return false;
  if (def->hasTrait<OpTrait::ConstantLike>() || isa<memref::GetGlobalOp>(def))
    return true;
  return isa<ViewLikeOpInterface>(def) && isMemoryEffectFree(def);
}

/// Whether `value` can be a kernel argument: a scalar, or a buffer with a
/// static shape and identity layout.
bool canPass(Value value) {
  if (value.getType().isIntOrIndexOrFloat())
    return true;
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

/// Collects, in dependency order, the ops to recreate in the kernel and the
/// values to pass for one outlined op; false if some value can be neither.
bool collectCaptures(Operation *op, SetVector<Operation *> &recreate,
                     SetVector<Value> &arguments) {
  SetVector<Value> used;
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, used);
  for (Value operand : op->getOperands())
    used.insert(operand);
  SmallVector<Value> worklist(used.begin(), used.end());
  SetVector<Operation *> visited;
  std::function<bool(Value)> visit = [&](Value value) -> bool {
    if (shouldRecreate(value)) {
      Operation *def = value.getDefiningOp();
      if (visited.contains(def))
        return true;
      for (Value operand : def->getOperands())
        if (!visit(operand))
          return false;
      visited.insert(def);
      return true;
    }
    if (!canPass(value))
      return false;
    arguments.insert(value);
    return true;
  };
  for (Value value : worklist)
    if (!visit(value))
      return false;
  recreate = visited;
  return true;
}

struct CPUOutlineKernelsPass
    : impl::CPUOutlineKernelsBase<CPUOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      unsigned count = 0;
      SmallVector<Operation *> candidates;
      for (Operation &op : func.getBody().front())
        if (op.getNumRegions() > 0 && op.getNumResults() == 0)
          candidates.push_back(&op);
      for (Operation *op : candidates)
        outline(func, op, count);
    }
  }

  void outline(func::FuncOp parent, Operation *op, unsigned &count) {
    SetVector<Operation *> recreate;
    SetVector<Value> arguments;
    if (!collectCaptures(op, recreate, arguments))
      return;
    MLIRContext *ctx = &getContext();
    SmallVector<Type> types;
    for (Value value : arguments)
      types.push_back(value.getType());
    OpBuilder builder(ctx);
    // At the end of the module: kernels keep the order of the loop nests.
    builder.setInsertionPointToEnd(getOperation().getBody());
    std::string name = (parent.getSymName() + "_kernel" + Twine(count++)).str();
    auto kernel = func::FuncOp::create(builder, op->getLoc(), name,
                                       FunctionType::get(ctx, types, {}));
    kernel.setPrivate();
    // LLVM would inline a function called once straight back.
    kernel->setAttr("passthrough",
                    builder.getArrayAttr({builder.getStringAttr("noinline")}));
    Block *body = kernel.addEntryBlock();
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip_equal(arguments, body->getArguments()))
      mapping.map(value, arg);
    builder.setInsertionPointToStart(body);
    for (Operation *def : recreate)
      builder.clone(*def, mapping);
    builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc());

    builder.setInsertionPoint(op);
    func::CallOp::create(
        builder, op->getLoc(), kernel,
        SmallVector<Value>(arguments.begin(), arguments.end()));
    op->erase();
  }
};

} // namespace
} // namespace kiln::cpu
