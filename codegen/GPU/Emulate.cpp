//===- Emulate.cpp - Host twins of GPU kernels, one thread per call -------===//
//
// The emulation build of docs/gpu.md: each kernel's gpu.func, after thread
// mapping, copied into a host function that runs one thread of one block.
// The emulated driver (runtime/cuda/EmulatedDriver.cpp) calls it for every
// thread of a launch, in an order it chooses, so that the whole GPU path of
// the runtime (images, constants, workspace, launches) runs on a machine
// without a GPU, on the IR that the NVPTX back end compiles.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUEMULATE
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

struct GPUEmulatePass : impl::GPUEmulateBase<GPUEmulatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto kernels = module.lookupSymbol<mlir::gpu::GPUModuleOp>(kKernelModule);
    if (!kernels)
      return;
    for (auto kernel : kernels.getOps<mlir::gpu::GPUFuncOp>())
      if (!kernel.isKernel() || failed(emulate(module, kernel)))
        return signalPassFailure();
  }

  LogicalResult emulate(ModuleOp module, mlir::gpu::GPUFuncOp kernel) {
    if (!kernel.getWorkgroupAttributions().empty() ||
        !kernel.getPrivateAttributions().empty())
      return kernel.emitError("a kernel with shared or private memory "
                              "cannot be emulated yet");
    std::optional<ArrayRef<int32_t>> blockSize = kernel.getKnownBlockSize();
    std::optional<ArrayRef<int32_t>> gridSize = kernel.getKnownGridSize();
    if (!blockSize || !gridSize)
      return kernel.emitError("a kernel without a known grid and block size "
                              "cannot be emulated");
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = kernel.getLoc();
    SmallVector<Type> types(kernel.getArgumentTypes());
    types.append(6, b.getIndexType());
    auto twin =
        func::FuncOp::create(b, loc, (kernel.getName() + kEmulatedSuffix).str(),
                             b.getFunctionType(types, {}));
    twin.setPrivate();
    IRMapping mapping;
    kernel.getBody().cloneInto(&twin.getBody(), mapping);
    Block &entry = twin.getBody().front();
    SmallVector<Value> ids;
    for (int i = 0; i < 6; ++i)
      ids.push_back(entry.addArgument(b.getIndexType(), loc));

    // Ids from the arguments, sizes from the launch; nothing else of the
    // GPU dialect may remain.
    SmallVector<Operation *> replaced;
    WalkResult walk = twin.walk([&](Operation *op) {
      auto dimOf = [](mlir::gpu::Dimension d) { return int(d); };
      OpBuilder at(op);
      Value value;
      if (auto id = dyn_cast<mlir::gpu::BlockIdOp>(op))
        value = ids[dimOf(id.getDimension())];
      else if (auto id = dyn_cast<mlir::gpu::ThreadIdOp>(op))
        value = ids[3 + dimOf(id.getDimension())];
      else if (auto dim = dyn_cast<mlir::gpu::GridDimOp>(op))
        value = arith::ConstantIndexOp::create(
            at, op->getLoc(), (*gridSize)[dimOf(dim.getDimension())]);
      else if (auto dim = dyn_cast<mlir::gpu::BlockDimOp>(op))
        value = arith::ConstantIndexOp::create(
            at, op->getLoc(), (*blockSize)[dimOf(dim.getDimension())]);
      else if (isa<mlir::gpu::ReturnOp>(op)) {
        func::ReturnOp::create(at, op->getLoc());
        replaced.push_back(op);
        return WalkResult::advance();
      } else if (op->getDialect() &&
                 isa<mlir::gpu::GPUDialect>(op->getDialect())) {
        op->emitError() << "'" << op->getName() << "' cannot be emulated yet";
        return WalkResult::interrupt();
      }
      if (value) {
        op->getResult(0).replaceAllUsesWith(value);
        replaced.push_back(op);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    for (Operation *op : replaced)
      op->erase();
    return success();
  }
};

} // namespace
} // namespace kiln::gpu
