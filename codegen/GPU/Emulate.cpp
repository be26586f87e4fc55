//===- Emulate.cpp - Host twins of GPU kernels, one thread per call -------===//
//
// The emulation build of docs/gpu.md: each kernel's gpu.func, after thread
// mapping, copied into a host function that runs one thread of one block
// (a coroutine that calls the emulator at each barrier).
// The emulated driver (runtime/cuda/EmulatedDriver.cpp) calls it for every
// thread of a launch, in an order it chooses, so that the whole GPU path of
// the runtime (images, constants, workspace, launches) runs on a machine
// without a GPU, on the IR that the NVPTX back end compiles.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Passes.h"

#include "kiln/model_abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

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
    if (!kernel.getPrivateAttributions().empty())
      return kernel.emitError("a kernel with private memory cannot be "
                              "emulated yet");
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
    auto sharedType =
        MemRefType::get({KILN_ABI_EMULATED_SHARED_SIZE}, b.getI8Type());
    types.push_back(sharedType);
    types.push_back(b.getI64Type());
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
    Value shared = entry.addArgument(sharedType, loc);
    Value barrier = entry.addArgument(b.getI64Type(), loc);

    // Each workgroup buffer: a view of the block's shared memory.
    unsigned numArgs = kernel.getNumArguments();
    unsigned numShared = kernel.getNumWorkgroupAttributions();
    OpBuilder at = OpBuilder::atBlockBegin(&entry);
    int64_t offset = 0;
    for (unsigned i = 0; i < numShared; ++i) {
      BlockArgument buffer = entry.getArgument(numArgs + i);
      auto type = cast<MemRefType>(buffer.getType());
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        return kernel.emitError("a shared buffer of type ")
               << type << " cannot be emulated";
      offset = llvm::alignTo(offset, 16);
      int64_t bytes = type.getNumElements() *
                      llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      if (offset + bytes > KILN_ABI_EMULATED_SHARED_SIZE)
        return kernel.emitError("the kernel's shared buffers exceed ")
               << KILN_ABI_EMULATED_SHARED_SIZE << " bytes";
      Value view = memref::ViewOp::create(
          at, loc, MemRefType::get(type.getShape(), type.getElementType()),
          shared, arith::ConstantIndexOp::create(at, loc, offset),
          ValueRange());
      buffer.replaceAllUsesWith(view);
      offset += bytes;
    }
    entry.eraseArguments(numArgs, numShared);

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
      else if (isa<mlir::gpu::BarrierOp>(op)) {
        Value callee = LLVM::IntToPtrOp::create(
            at, op->getLoc(), LLVM::LLVMPointerType::get(op->getContext()),
            barrier);
        LLVM::CallOp::create(at, op->getLoc(),
                             LLVM::LLVMFunctionType::get(
                                 LLVM::LLVMVoidType::get(op->getContext()), {}),
                             ValueRange{callee});
        replaced.push_back(op);
        return WalkResult::advance();
      } else if (isa<mlir::gpu::ReturnOp>(op)) {
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
    // The host has one memory space: the workgroup space goes from every
    // type (the views above are in the default space already).
    auto strip = [](Value value) {
      if (auto type = dyn_cast<MemRefType>(value.getType()))
        if (type.getMemorySpace())
          value.setType(MemRefType::get(type.getShape(), type.getElementType(),
                                        type.getLayout()));
    };
    twin.walk([&](Operation *op) {
      for (Value result : op->getResults())
        strip(result);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            strip(arg);
    });
    return success();
  }
};

} // namespace
} // namespace kiln::gpu
