//===- Emulate.cpp - Host twins of GPU kernels, one thread per call -------===//
//
// The emulation build of docs/gpu.md: each kernel's gpu.func, after thread
// mapping, copied into a host function that runs one thread of one block
// (a coroutine that calls the emulator at each barrier; a shuffle is an
// exchange through shared memory between two barriers).
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

  /// `shuffle` as every thread of the block runs it: each writes its value
  /// to its slot of `exchange`, all meet at a barrier, each reads the slot
  /// of the lane it asks for (its own where that lane is out of range), and
  /// all meet again before a slot is written anew. A shuffle that only some
  /// threads of the block reach fails the launch, as a barrier does.
  LogicalResult
  emulateShuffle(OpBuilder &b, mlir::gpu::ShuffleOp shuffle, Value exchange,
                 Value linearId, int64_t threads,
                 llvm::function_ref<void(OpBuilder &, Location)> callBarrier) {
    Location loc = shuffle.getLoc();
    Type type = shuffle.getValue().getType();
    if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() != 32)
      return shuffle.emitError("a shuffle of ")
             << type << " cannot be emulated yet (32-bit values only)";
    auto c = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Type i32 = b.getI32Type();
    Value value = shuffle.getValue();
    Value bits =
        type == i32 ? value : arith::BitcastOp::create(b, loc, i32, value);
    memref::StoreOp::create(b, loc, bits, exchange, linearId);
    callBarrier(b, loc);
    Value lane = arith::RemUIOp::create(b, loc, linearId, c(32));
    Value warpBase = arith::SubIOp::create(b, loc, linearId, lane);
    Value offset = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                              shuffle.getOffset());
    Value width = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                             shuffle.getWidth());
    Value source;
    switch (shuffle.getMode()) {
    case mlir::gpu::ShuffleMode::XOR:
      source = arith::XOrIOp::create(b, loc, lane, offset);
      break;
    case mlir::gpu::ShuffleMode::DOWN:
      source = arith::AddIOp::create(b, loc, lane, offset);
      break;
    case mlir::gpu::ShuffleMode::UP:
      source = arith::SubIOp::create(b, loc, lane, offset);
      break;
    case mlir::gpu::ShuffleMode::IDX:
      source = offset;
      break;
    }
    // In range: 0 <= source < width, and a thread of the block.
    Value slot = arith::AddIOp::create(b, loc, warpBase, source);
    Value valid = arith::AndIOp::create(
        b, loc,
        arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, source,
                                  c(0)),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, source,
                                  width)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slot,
                              c(threads)));
    slot = arith::SelectOp::create(b, loc, valid, slot, linearId);
    Value read = memref::LoadOp::create(b, loc, exchange, slot);
    callBarrier(b, loc);
    if (type != i32)
      read = arith::BitcastOp::create(b, loc, type, read);
    shuffle.getShuffleResult().replaceAllUsesWith(read);
    shuffle.getValid().replaceAllUsesWith(valid);
    return success();
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

    // A shuffle exchanges through shared memory after the kernel's own
    // buffers: a 32-bit slot per thread of the block.
    int64_t threads =
        int64_t((*blockSize)[0]) * (*blockSize)[1] * (*blockSize)[2];
    Value exchange, linearId;
    if (twin.walk([](mlir::gpu::ShuffleOp) { return WalkResult::interrupt(); })
            .wasInterrupted()) {
      offset = llvm::alignTo(offset, 16);
      if (offset + 4 * threads > KILN_ABI_EMULATED_SHARED_SIZE)
        return kernel.emitError("the kernel's shared buffers and shuffle "
                                "slots exceed ")
               << KILN_ABI_EMULATED_SHARED_SIZE << " bytes";
      exchange = memref::ViewOp::create(
          at, loc, MemRefType::get({threads}, at.getI32Type()), shared,
          arith::ConstantIndexOp::create(at, loc, offset), ValueRange());
      // The thread's index in the block, x fastest, as warps are formed.
      auto c = [&](int64_t v) {
        return arith::ConstantIndexOp::create(at, loc, v);
      };
      linearId = arith::AddIOp::create(
          at, loc, ids[3],
          arith::MulIOp::create(
              at, loc, c((*blockSize)[0]),
              arith::AddIOp::create(
                  at, loc, ids[4],
                  arith::MulIOp::create(at, loc, c((*blockSize)[1]), ids[5]))));
    }
    auto callBarrier = [&](OpBuilder &at, Location loc) {
      Value callee = LLVM::IntToPtrOp::create(
          at, loc, LLVM::LLVMPointerType::get(at.getContext()), barrier);
      LLVM::CallOp::create(at, loc,
                           LLVM::LLVMFunctionType::get(
                               LLVM::LLVMVoidType::get(at.getContext()), {}),
                           ValueRange{callee});
    };

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
        callBarrier(at, op->getLoc());
        replaced.push_back(op);
        return WalkResult::advance();
      } else if (auto shuffle = dyn_cast<mlir::gpu::ShuffleOp>(op)) {
        if (failed(emulateShuffle(at, shuffle, exchange, linearId, threads,
                                  callBarrier)))
          return WalkResult::interrupt();
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
