//===- LowerLaunches.cpp - Kernels outlined, launches as stub calls -------===//

#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPULOWERLAUNCHES
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

/// Marks a function that has its launcher argument (within this pass).
constexpr llvm::StringLiteral kLauncherArgAttr = "kiln.gpu_launcher";

struct GPULowerLaunchesPass : impl::GPULowerLaunchesBase<GPULowerLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<mlir::gpu::LaunchOp> launches;
    module.walk(
        [&](mlir::gpu::LaunchOp launch) { launches.push_back(launch); });
    if (launches.empty())
      return;
    OpBuilder b(module.getBodyRegion());
    module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    auto kernels = module.lookupSymbol<mlir::gpu::GPUModuleOp>(kKernelModule);
    if (!kernels) {
      b.setInsertionPointToEnd(module.getBody());
      kernels =
          mlir::gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModule);
    }
    SymbolTable symbols(module), kernelSymbols(kernels);
    for (mlir::gpu::LaunchOp launch : launches)
      if (failed(lower(launch, symbols, kernelSymbols)))
        return signalPassFailure();
    module.walk([](func::FuncOp func) { func->removeAttr(kLauncherArgAttr); });
  }

  LogicalResult lower(mlir::gpu::LaunchOp launch, SymbolTable &symbols,
                      SymbolTable &kernelSymbols) {
    Location loc = launch.getLoc();
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.hasClusterSize() || launch.getDynamicSharedMemorySize() ||
        launch.getNumResults() != 0)
      return launch.emitError("an asynchronous, clustered or "
                              "dynamic-shared-memory launch is not supported "
                              "yet");
    SmallVector<int64_t> geometry;
    for (Value size : {launch.getGridSizeX(), launch.getGridSizeY(),
                       launch.getGridSizeZ(), launch.getBlockSizeX(),
                       launch.getBlockSizeY(), launch.getBlockSizeZ()}) {
      std::optional<int64_t> value = getConstantIntValue(size);
      if (!value)
        return launch.emitError("a launch of a size known only at run time "
                                "is not supported yet");
      geometry.push_back(*value);
    }
    std::optional<StringRef> name = launch.getFunction();
    if (!name)
      return launch.emitError("a launch without a kernel name "
                              "(kiln-gpu-map-to-launch names them)");
    if (symbols.lookup(*name) || kernelSymbols.lookup(*name))
      return launch.emitError() << "kernel '" << *name << "' is defined twice";
    SmallVector<Value> operands;
    mlir::gpu::GPUFuncOp kernel = outlineKernelFunc(launch, *name, operands);
    kernelSymbols.insert(kernel);
    // Shared buffers start on 16-byte boundaries, for vector accesses.
    for (unsigned i = 0; i < kernel.getNumWorkgroupAttributions(); ++i)
      kernel.setWorkgroupAttributionAttr(
          i, LLVM::LLVMDialect::getAlignAttrName(),
          IntegerAttr::get(IntegerType::get(kernel.getContext(), 64), 16));
    for (Value operand : operands)
      if (!isa<BaseMemRefType>(operand.getType()) ||
          !cast<MemRefType>(operand.getType()).getLayout().isIdentity())
        return launch.emitError() << "a kernel parameter that is not a whole "
                                     "buffer: "
                                  << operand;

    OpBuilder b(launch->getParentOfType<ModuleOp>().getBodyRegion());
    b.setInsertionPointToEnd(launch->getParentOfType<ModuleOp>().getBody());
    // The launcher comes first: the function's last argument, added once.
    auto func = launch->getParentOfType<func::FuncOp>();
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
    if (!func->hasAttr(kLauncherArgAttr)) {
      if (failed(func.insertArgument(func.getNumArguments(), ptrType, {}, loc)))
        return func.emitError() << "cannot add the launcher's argument";
      func->setAttr(kLauncherArgAttr, b.getUnitAttr());
    }
    Value launcher = func.getArguments().back();
    SmallVector<Type> types = {ptrType};
    llvm::append_range(types, ValueRange(operands).getTypes());
    auto stub =
        func::FuncOp::create(b, loc, *name, b.getFunctionType(types, {}));
    stub.setPrivate();
    stub->setAttr(kLaunchAttr, b.getDenseI64ArrayAttr(geometry));
    if (Attribute info = launch->getAttr(kKernelAttr))
      stub->setAttr(kKernelAttr, info);
    symbols.insert(stub);
    b.setInsertionPoint(launch);
    SmallVector<Value> arguments = {launcher};
    llvm::append_range(arguments, operands);
    func::CallOp::create(b, loc, stub, arguments);
    launch.erase();
    return success();
  }
};

} // namespace
} // namespace kiln::gpu
