//===- ModelABI.cpp - Emit the model ABI of include/kiln/model_abi.h ------===//
//
// The structures built here mirror kiln_abi_tensor, kiln_abi_model and
// kiln_abi_run_args field by field; natural LLVM struct layout equals the C
// layout on every Kiln target. A change to model_abi.h changes this file.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/ModelABI.h"

#include "kiln/model_abi.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;

namespace kiln {

namespace {

/// `bytes` rounded up to the alignment of the workspace's sample slots.
uint64_t alignedSlot(uint64_t bytes, const ModelSignature &signature) {
  return alignTo(bytes, std::max<uint64_t>(signature.workspaceAlign, 64));
}

/// Whether the entry reads sizes at run time: a symbol of kind
/// KILN_ABI_SYMBOL_DIM, which takes memref descriptors.
bool readsSizes(const ModelSignature &signature) {
  return llvm::any_of(signature.symbols, [](const SymbolSignature &symbol) {
    return symbol.kind == KILN_ABI_SYMBOL_DIM;
  });
}

class ABIEmitter {
public:
  ABIEmitter(Module &module)
      : module(module), ctx(module.getContext()),
        ptrTy(PointerType::getUnqual(ctx)), i32Ty(Type::getInt32Ty(ctx)),
        i64Ty(Type::getInt64Ty(ctx)) {
    tensorTy = StructType::create(ctx, {ptrTy, i32Ty, i32Ty, ptrTy},
                                  "kiln_abi_tensor");
    kernelTy =
        StructType::create(ctx, {ptrTy, ptrTy, i64Ty}, "kiln_abi_kernel");
    modelTy =
        StructType::create(ctx,
                           {i32Ty, i32Ty, ptrTy, ptrTy, ptrTy, ptrTy, i64Ty,
                            ptrTy, i64Ty, ptrTy, i64Ty, i64Ty, i64Ty, ptrTy,
                            // version 3
                            i32Ty, i32Ty, ptrTy, ptrTy, ptrTy, i64Ty,
                            // version 4
                            i32Ty, i32Ty, ptrTy,
                            // version 5
                            i32Ty, i32Ty, ptrTy},
                           "kiln_abi_model");
    symbolTy = StructType::create(ctx, {ptrTy, i64Ty, i64Ty, i32Ty, i32Ty},
                                  "kiln_abi_symbol");
    checkTy =
        StructType::create(ctx, {ptrTy, ptrTy, i64Ty, i64Ty}, "kiln_abi_check");
    runErrorTy = StructType::create(ctx, {i64Ty, i64Ty}, "kiln_abi_run_error");
    profilerTy =
        StructType::create(ctx, {ptrTy, ptrTy, ptrTy}, "kiln_abi_profiler");
    runArgsTy = StructType::create(
        ctx,
        {i32Ty, i32Ty, ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, ptrTy, ptrTy},
        "kiln_abi_run_args");
    imageTy = StructType::create(ctx, {ptrTy, i32Ty, i32Ty, ptrTy, i64Ty},
                                 "kiln_abi_device_image");
    auto *u32x3 = ArrayType::get(i32Ty, 3);
    gpuKernelTy = StructType::create(ctx, {u32x3, u32x3, i32Ty, i32Ty},
                                     "kiln_abi_gpu_kernel");
    emulatedTy =
        StructType::create(ctx, {ptrTy, ptrTy}, "kiln_abi_emulated_kernel");
    gpuTy = StructType::create(ctx, {ptrTy, ptrTy, ptrTy}, "kiln_abi_gpu");
  }

  /// A private constant NUL-terminated string.
  Constant *string(StringRef text, const Twine &name) {
    Constant *data = ConstantDataArray::getString(ctx, text);
    auto *global = new GlobalVariable(module, data->getType(), true,
                                      GlobalValue::PrivateLinkage, data, name);
    global->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    return global;
  }

  /// A private constant array of tensor descriptors.
  Constant *tensors(const std::vector<TensorSignature> &list,
                    const Twine &name) {
    SmallVector<Constant *> entries;
    for (auto [i, tensor] : llvm::enumerate(list)) {
      SmallVector<Constant *> dims;
      for (int64_t d : tensor.shape)
        dims.push_back(ConstantInt::get(i64Ty, d));
      Constant *shape = ConstantPointerNull::get(ptrTy);
      if (!dims.empty()) {
        auto *arrayTy = ArrayType::get(i64Ty, dims.size());
        shape = new GlobalVariable(
            module, arrayTy, true, GlobalValue::PrivateLinkage,
            ConstantArray::get(arrayTy, dims), name + ".shape." + Twine(i));
      }
      entries.push_back(ConstantStruct::get(
          tensorTy, {string(tensor.name, name + ".name." + Twine(i)),
                     ConstantInt::get(i32Ty, tensor.dtype),
                     ConstantInt::get(i32Ty, tensor.shape.size()), shape}));
    }
    if (entries.empty())
      return ConstantPointerNull::get(ptrTy);
    auto *arrayTy = ArrayType::get(tensorTy, entries.size());
    return new GlobalVariable(module, arrayTy, true,
                              GlobalValue::PrivateLinkage,
                              ConstantArray::get(arrayTy, entries), name);
  }

  /// The symbolic dimensions: a private constant array of kiln_abi_symbol.
  Constant *symbols(const std::vector<SymbolSignature> &list) {
    if (list.empty())
      return ConstantPointerNull::get(ptrTy);
    SmallVector<Constant *> entries;
    for (auto [i, symbol] : llvm::enumerate(list))
      entries.push_back(ConstantStruct::get(
          symbolTy,
          {string(symbol.name, "kiln.symbol.name." + Twine(i)),
           ConstantInt::get(i64Ty, symbol.min),
           ConstantInt::get(i64Ty, symbol.max),
           ConstantInt::get(i32Ty, symbol.kind), ConstantInt::get(i32Ty, 0)}));
    auto *arrayTy = ArrayType::get(symbolTy, entries.size());
    return new GlobalVariable(
        module, arrayTy, true, GlobalValue::PrivateLinkage,
        ConstantArray::get(arrayTy, entries), "kiln.symbols");
  }

  /// The run-time index checks: a private constant array of kiln_abi_check.
  Constant *checks(const std::vector<CheckSignature> &list) {
    if (list.empty())
      return ConstantPointerNull::get(ptrTy);
    SmallVector<Constant *> entries;
    for (auto [i, check] : llvm::enumerate(list))
      entries.push_back(ConstantStruct::get(
          checkTy, {string(check.source, "kiln.check.source." + Twine(i)),
                    string(check.what, "kiln.check.what." + Twine(i)),
                    ConstantInt::get(i64Ty, check.low),
                    ConstantInt::get(i64Ty, check.high)}));
    auto *arrayTy = ArrayType::get(checkTy, entries.size());
    return new GlobalVariable(
        module, arrayTy, true, GlobalValue::PrivateLinkage,
        ConstantArray::get(arrayTy, entries), "kiln.checks");
  }

  /// The kernel table: a private constant array of kiln_abi_kernel.
  Constant *kernels(const std::vector<KernelSignature> &list) {
    if (list.empty())
      return ConstantPointerNull::get(ptrTy);
    SmallVector<Constant *> entries;
    for (auto [i, kernel] : llvm::enumerate(list))
      entries.push_back(ConstantStruct::get(
          kernelTy, {string(kernel.name, "kiln.kernel.name." + Twine(i)),
                     string(kernel.source, "kiln.kernel.source." + Twine(i)),
                     ConstantInt::get(i64Ty, kernel.flops)}));
    auto *arrayTy = ArrayType::get(kernelTy, entries.size());
    return new GlobalVariable(
        module, arrayTy, true, GlobalValue::PrivateLinkage,
        ConstantArray::get(arrayTy, entries), "kiln.kernels");
  }

  /// Replaces `entry` by a function that takes one more argument, a
  /// `const kiln_abi_profiler *` (NULL: no profiling), and calls its hooks
  /// around every call of a kernel of `list`. Costs at most a compare and
  /// a branch per kernel call when the pointer is NULL (LLVM usually
  /// unswitches the entry into one test per run).
  Function *addProfilerHooks(Function *entry,
                             const std::vector<KernelSignature> &list) {
    SmallVector<Type *> params(entry->getFunctionType()->params());
    params.push_back(ptrTy);
    Function *fn = Function::Create(
        FunctionType::get(entry->getReturnType(), params, false),
        entry->getLinkage(), entry->getAddressSpace(), "", &module);
    fn->copyAttributesFrom(entry);
    fn->splice(fn->begin(), entry);
    for (auto [from, to] : llvm::zip(entry->args(), fn->args())) {
      from.replaceAllUsesWith(&to);
      to.takeName(&from);
    }
    fn->takeName(entry);
    entry->eraseFromParent();
    Argument *profiler = fn->getArg(params.size() - 1);
    profiler->setName("profiler");

    StringMap<int64_t> index;
    for (auto [i, kernel] : llvm::enumerate(list))
      index[kernel.name] = i;
    SmallVector<std::pair<CallInst *, int64_t>> calls;
    for (Instruction &inst : instructions(fn))
      if (auto *call = dyn_cast<CallInst>(&inst))
        if (Function *callee = call->getCalledFunction())
          if (auto it = index.find(callee->getName()); it != index.end())
            calls.push_back({call, it->second});
    auto *hookTy =
        FunctionType::get(Type::getVoidTy(ctx), {ptrTy, i64Ty}, false);
    // if (profiler) profiler->field(profiler->context, kernel), before `at`.
    auto callHook = [&](Instruction *at, unsigned field, int64_t kernel) {
      IRBuilder<> b(at);
      Instruction *then = SplitBlockAndInsertIfThen(b.CreateIsNotNull(profiler),
                                                    at->getIterator(), false);
      b.SetInsertPoint(then);
      Value *context =
          b.CreateLoad(ptrTy, b.CreateStructGEP(profilerTy, profiler, 0));
      Value *hook =
          b.CreateLoad(ptrTy, b.CreateStructGEP(profilerTy, profiler, field));
      b.CreateCall(hookTy, hook, {context, ConstantInt::get(i64Ty, kernel)});
    };
    for (auto [call, kernel] : calls) {
      callHook(call, 1, kernel);
      callHook(call->getNextNode(), 2, kernel);
    }
    return fn;
  }

  /// The producer string, in a section of its own, `.kiln.sealed`, which
  /// says to a person reading the file (readelf -S) that kiln-compile sealed
  /// it (lib/Target/Linker.cpp); the runtime requires the seal of every
  /// model.
  Constant *producer() {
    auto *global = cast<GlobalVariable>(string("kiln 0.1.0", "kiln.producer"));
    global->setSection(".kiln.sealed");
    return global;
  }

  /// A private constant byte array holding `data`, aligned to `align`.
  Constant *bytes(StringRef data, const Twine &name, unsigned align) {
    Constant *init =
        ConstantDataArray::getRaw(data, data.size(), Type::getInt8Ty(ctx));
    auto *global = new GlobalVariable(module, init->getType(), true,
                                      GlobalValue::PrivateLinkage, init, name);
    global->setAlignment(Align(align));
    return global;
  }

  /// Defines each GPU kernel's host stub (declared by kiln-gpu-lower-launches):
  /// it passes the kernel's index and parameters to the launch callback of
  /// the thread's kiln_abi_gpu.
  Error defineKernelStubs(const ModelSignature &signature) {
    auto *launchTy =
        FunctionType::get(Type::getVoidTy(ctx), {ptrTy, i64Ty, ptrTy}, false);
    for (auto [k, kernel] : llvm::enumerate(signature.kernels)) {
      Function *stub = module.getFunction(kernel.name);
      if (!stub || !stub->isDeclaration())
        return createStringError("GPU kernel '" + kernel.name +
                                 "' has no host stub declaration");
      unsigned n = stub->arg_size() - 1;
      if (stub->arg_size() == 0 || n != signature.gpuKernels[k].numParams)
        return createStringError("GPU kernel '" + kernel.name +
                                 "' takes another number of parameters");
      IRBuilder<> b(BasicBlock::Create(ctx, "entry", stub));
      auto *arrayTy = ArrayType::get(ptrTy, std::max(n, 1u));
      Value *params = b.CreateAlloca(arrayTy);
      for (unsigned i = 0; i < n; ++i)
        b.CreateStore(stub->getArg(i + 1),
                      b.CreateConstInBoundsGEP2_64(arrayTy, params, 0, i));
      Value *gpu = stub->getArg(0);
      Value *context = b.CreateLoad(ptrTy, b.CreateStructGEP(gpuTy, gpu, 0));
      Value *launch = b.CreateLoad(ptrTy, b.CreateStructGEP(gpuTy, gpu, 1));
      b.CreateCall(launchTy, launch,
                   {context, ConstantInt::get(i64Ty, k), params});
      b.CreateRetVoid();
      stub->setLinkage(GlobalValue::InternalLinkage);
    }
    return Error::success();
  }

  /// The emulation image: for each kernel, a function that unpacks the
  /// launch's parameters and runs one thread of `<kernel>_emu` (its block's
  /// shared memory and the barrier function after the indices).
  Error emulationImage(const ModelSignature &signature,
                       SmallVectorImpl<Constant *> &images) {
    auto *runTy =
        FunctionType::get(Type::getVoidTy(ctx), {ptrTy, ptrTy}, false);
    SmallVector<Constant *> entries;
    for (auto [k, kernel] : llvm::enumerate(signature.kernels)) {
      Function *twin = module.getFunction(kernel.name + "_emu");
      if (!twin)
        return createStringError("GPU kernel '" + kernel.name +
                                 "' has no emulated twin");
      Function *run = Function::Create(runTy, GlobalValue::InternalLinkage,
                                       kernel.name + "_emu_run", module);
      IRBuilder<> b(BasicBlock::Create(ctx, "entry", run));
      unsigned numParams = signature.gpuKernels[k].numParams;
      if (twin->arg_size() != numParams + 8)
        return createStringError("the emulated twin of '" + kernel.name +
                                 "' takes another number of arguments");
      SmallVector<Value *> args;
      for (unsigned i = 0; i < numParams; ++i) {
        Value *slot = b.CreateLoad(
            ptrTy, b.CreateConstInBoundsGEP1_64(ptrTy, run->getArg(0), i));
        args.push_back(b.CreateLoad(ptrTy, slot));
      }
      for (unsigned i = 0; i < 8; ++i) {
        Value *id = b.CreateLoad(
            i64Ty, b.CreateConstInBoundsGEP1_64(i64Ty, run->getArg(1), i));
        // ids[6], the block's shared memory, is the twin's memref argument.
        args.push_back(i == 6 ? b.CreateIntToPtr(id, ptrTy) : id);
      }
      b.CreateCall(twin, args);
      b.CreateRetVoid();
      entries.push_back(ConstantStruct::get(
          emulatedTy,
          {string(kernel.name, "kiln.emulated.name." + Twine(k)), run}));
    }
    auto *arrayTy = ArrayType::get(emulatedTy, entries.size());
    auto *table = new GlobalVariable(
        module, arrayTy, true, GlobalValue::PrivateLinkage,
        ConstantArray::get(arrayTy, entries), "kiln.emulated");
    uint64_t size = module.getDataLayout().getTypeAllocSize(arrayTy);
    images.push_back(ConstantStruct::get(
        imageTy,
        {string("host", "kiln.image.arch.emulation"),
         ConstantInt::get(i32Ty, KILN_ABI_IMAGE_EMULATION),
         ConstantInt::get(i32Ty, 0), table, ConstantInt::get(i64Ty, size)}));
    return Error::success();
  }

  /// The version 3 fields of the descriptor: device, images, GPU kernels
  /// and constants (all zero for a CPU model).
  Expected<SmallVector<Constant *>>
  deviceFields(const ModelSignature &signature) {
    Constant *null = ConstantPointerNull::get(ptrTy);
    if (signature.device == KILN_ABI_DEVICE_CPU)
      return SmallVector<Constant *>{
          ConstantInt::get(i32Ty, KILN_ABI_DEVICE_CPU),
          ConstantInt::get(i32Ty, 0),
          null,
          null,
          null,
          ConstantInt::get(i64Ty, 0)};
    if (signature.gpuKernels.size() != signature.kernels.size())
      return createStringError("a GPU model's kernel tables disagree");
    if (Error error = defineKernelStubs(signature))
      return std::move(error);
    SmallVector<Constant *> images;
    for (auto [i, image] : llvm::enumerate(signature.deviceImages))
      images.push_back(ConstantStruct::get(
          imageTy,
          {string(image.arch, "kiln.image.arch." + Twine(i)),
           ConstantInt::get(i32Ty, image.format), ConstantInt::get(i32Ty, 0),
           bytes(image.data, "kiln.image." + Twine(i), 16),
           ConstantInt::get(i64Ty, image.data.size())}));
    if (signature.emulation && !signature.kernels.empty())
      if (Error error = emulationImage(signature, images))
        return std::move(error);
    auto *imagesTy = ArrayType::get(imageTy, images.size());
    Constant *imageTable =
        new GlobalVariable(module, imagesTy, true, GlobalValue::PrivateLinkage,
                           ConstantArray::get(imagesTy, images), "kiln.images");
    SmallVector<Constant *> launches;
    for (const GPUKernelSignature &kernel : signature.gpuKernels) {
      auto triple = [&](const uint32_t *v) {
        return ConstantArray::get(ArrayType::get(i32Ty, 3),
                                  {ConstantInt::get(i32Ty, v[0]),
                                   ConstantInt::get(i32Ty, v[1]),
                                   ConstantInt::get(i32Ty, v[2])});
      };
      launches.push_back(ConstantStruct::get(
          gpuKernelTy, {triple(kernel.grid), triple(kernel.block),
                        ConstantInt::get(i32Ty, 0),
                        ConstantInt::get(i32Ty, kernel.numParams)}));
    }
    Constant *launchTable = null;
    if (!launches.empty()) {
      auto *launchesTy = ArrayType::get(gpuKernelTy, launches.size());
      launchTable = new GlobalVariable(
          module, launchesTy, true, GlobalValue::PrivateLinkage,
          ConstantArray::get(launchesTy, launches), "kiln.gpu_kernels");
    }
    Constant *constants = null;
    if (signature.constantsSize > 0) {
      constants = module.getGlobalVariable(signature.constantsGlobal, true);
      if (!constants)
        return createStringError("the constants segment '" +
                                 signature.constantsGlobal + "' is missing");
    }
    return SmallVector<Constant *>{
        ConstantInt::get(i32Ty, signature.device),
        ConstantInt::get(i32Ty, images.size()),
        imageTable,
        launchTable,
        constants,
        ConstantInt::get(i64Ty, signature.constantsSize)};
  }

  Error emit(const std::string &entryName, const ModelSignature &signature,
             const TargetInfo &target) {
    Function *entry = module.getFunction(entryName);
    if (!entry)
      return createStringError("the model has no entry function '" + entryName +
                               "'");
    // A passed tensor is one pointer, or where the entry reads sizes at run
    // time, a memref descriptor: the bare-pointer calling convention takes
    // static memrefs only, and converts a function with any other to
    // descriptors whole (the workspace's too).
    bool descriptors = readsSizes(signature);
    bool repeats = signature.repeat > 1 || signature.repeatSymbol >= 0;
    if (descriptors &&
        (!signature.resultArgs.empty() ||
         signature.device == KILN_ABI_DEVICE_CUDA || signature.sampleSlots > 1))
      return createStringError(
          "sizes that the code reads, in a model that returns sizes that the "
          "data decides, runs on a GPU or runs samples side by side");
    auto countPassed = [&](const std::vector<TensorSignature> &list) {
      size_t count = 0;
      for (const TensorSignature &t : list)
        if (t.passed)
          count += descriptors ? 3 + 2 * t.shape.size() : 1;
      return count;
    };
    size_t numArgs =
        countPassed(signature.inputs) + countPassed(signature.outputs) +
        signature.resultArgs.size() +
        (signature.workspaceSize > 0 ? (descriptors ? 5 : 1) : 0) +
        (signature.runErrorArgument ? 1 : 0) +
        (signature.constantsSize > 0 ? 1 : 0) +
        (signature.device == KILN_ABI_DEVICE_CUDA && !signature.kernels.empty()
             ? 1
             : 0);
    if (entry->arg_size() != numArgs)
      return createStringError("entry function takes " +
                               Twine(entry->arg_size()).str() +
                               " arguments, expected one per input and "
                               "output, the workspace, and a GPU model's "
                               "error slot, constants and launcher (" +
                               Twine(numArgs).str() + ")");

    entry = addProfilerHooks(entry, signature.kernels);
    Expected<SmallVector<Constant *>> device = deviceFields(signature);
    if (!device)
      return device.takeError();

    // Everything the compiler made is internal; only the ABI is exported.
    for (Function &function : module.functions())
      if (!function.isDeclaration())
        function.setLinkage(GlobalValue::InternalLinkage);
    for (GlobalVariable &global : module.globals())
      if (!global.isDeclaration())
        global.setLinkage(GlobalValue::InternalLinkage);

    // The descriptor.
    Constant *desc = ConstantStruct::get(
        modelTy, {ConstantInt::get(i32Ty, KILN_ABI_VERSION),
                  ConstantInt::get(i32Ty, 0),
                  string(target.triple, "kiln.triple"),
                  string(target.cpu, "kiln.cpu"),
                  string(target.requiredFeatures, "kiln.features"),
                  producer(),
                  ConstantInt::get(i64Ty, signature.inputs.size()),
                  tensors(signature.inputs, "kiln.inputs"),
                  ConstantInt::get(i64Ty, signature.outputs.size()),
                  tensors(signature.outputs, "kiln.outputs"),
                  ConstantInt::get(i64Ty, slotBytes(signature) *
                                              uint64_t(signature.sampleSlots)),
                  ConstantInt::get(i64Ty, signature.workspaceAlign),
                  ConstantInt::get(i64Ty, signature.kernels.size()),
                  kernels(signature.kernels),
                  (*device)[0],
                  (*device)[1],
                  (*device)[2],
                  (*device)[3],
                  (*device)[4],
                  (*device)[5],
                  ConstantInt::get(i32Ty, signature.symbols.size()),
                  ConstantInt::get(i32Ty, 0),
                  symbols(signature.symbols),
                  ConstantInt::get(i32Ty, signature.checks.size()),
                  ConstantInt::get(i32Ty, 0),
                  checks(signature.checks)});
    auto *descGlobal = new GlobalVariable(
        module, modelTy, true, GlobalValue::PrivateLinkage, desc, "kiln.model");

    auto makeExported = [&](FunctionType *type, StringRef name) {
      Function *fn =
          Function::Create(type, GlobalValue::ExternalLinkage, name, module);
      fn->setVisibility(GlobalValue::DefaultVisibility);
      fn->addFnAttr(Attribute::NoUnwind);
      return fn;
    };

    // const kiln_abi_model *kiln_abi_describe(void)
    Function *describe =
        makeExported(FunctionType::get(ptrTy, false), "kiln_abi_describe");
    IRBuilder<> b(BasicBlock::Create(ctx, "entry", describe));
    b.CreateRet(descGlobal);

    // int32_t kiln_abi_run(const kiln_abi_run_args *args)
    Function *run =
        makeExported(FunctionType::get(i32Ty, {ptrTy}, false), "kiln_abi_run");
    Argument *args = run->getArg(0);
    BasicBlock *check = BasicBlock::Create(ctx, "check", run);
    BasicBlock *call = BasicBlock::Create(ctx, "call", run);
    BasicBlock *bad = BasicBlock::Create(ctx, "bad", run);
    b.SetInsertPoint(check);
    Value *isNull = b.CreateIsNull(args);
    BasicBlock *version = BasicBlock::Create(ctx, "version", run, call);
    b.CreateCondBr(isNull, bad, version);
    b.SetInsertPoint(version);
    Value *abi = b.CreateLoad(i32Ty, b.CreateStructGEP(runArgsTy, args, 0));
    b.CreateCondBr(
        b.CreateICmpEQ(abi, ConstantInt::get(i32Ty, KILN_ABI_VERSION)), call,
        bad);
    b.SetInsertPoint(bad);
    b.CreateRet(ConstantInt::get(i32Ty, KILN_ABI_RUN_BAD_ARGS));

    b.SetInsertPoint(call);
    // The index checks record a run's first failure in a thread-local slot
    // (kiln-codegen-lower-index-checks): cleared here, read at the end.
    Value *runError = nullptr;
    if (!signature.checks.empty() && !signature.runErrorArgument) {
      GlobalVariable *slot =
          module.getGlobalVariable(signature.runErrorGlobal, true);
      if (!slot || !slot->isThreadLocal())
        return createStringError("the model has index checks but no "
                                 "thread-local slot '" +
                                 signature.runErrorGlobal + "'");
      runError = b.CreateThreadLocalAddress(slot);
      b.CreateStore(ConstantAggregateZero::get(runErrorTy), runError);
    }
    // Returns KILN_ABI_RUN_OK, or KILN_ABI_RUN_INDEX_ERROR with the failed
    // check in *args->error when one failed.
    auto finish = [&]() {
      if (!runError) {
        b.CreateRet(ConstantInt::get(i32Ty, KILN_ABI_RUN_OK));
        return;
      }
      Value *failed =
          b.CreateLoad(i64Ty, b.CreateStructGEP(runErrorTy, runError, 0));
      BasicBlock *ok = BasicBlock::Create(ctx, "ok", run);
      BasicBlock *fail = BasicBlock::Create(ctx, "index_error", run);
      BasicBlock *report = BasicBlock::Create(ctx, "report", run);
      BasicBlock *refuse = BasicBlock::Create(ctx, "refuse", run);
      b.CreateCondBr(b.CreateICmpEQ(failed, ConstantInt::get(i64Ty, 0)), ok,
                     fail);
      b.SetInsertPoint(ok);
      b.CreateRet(ConstantInt::get(i32Ty, KILN_ABI_RUN_OK));
      b.SetInsertPoint(fail);
      Value *out = b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 8));
      b.CreateCondBr(b.CreateIsNull(out), refuse, report);
      b.SetInsertPoint(report);
      b.CreateStore(b.CreateSub(failed, ConstantInt::get(i64Ty, 1)),
                    b.CreateStructGEP(runErrorTy, out, 0));
      b.CreateStore(
          b.CreateLoad(i64Ty, b.CreateStructGEP(runErrorTy, runError, 1)),
          b.CreateStructGEP(runErrorTy, out, 1));
      b.CreateBr(refuse);
      b.SetInsertPoint(refuse);
      b.CreateRet(ConstantInt::get(i32Ty, KILN_ABI_RUN_INDEX_ERROR));
    };
    if (signature.usesOpenMP) {
      // Parallel regions started by this thread use the caller's count.
      FunctionCallee setThreads = module.getOrInsertFunction(
          "omp_set_num_threads",
          FunctionType::get(Type::getVoidTy(ctx), {i32Ty}, false));
      Value *threads =
          b.CreateLoad(i32Ty, b.CreateStructGEP(runArgsTy, args, 1));
      b.CreateCall(setThreads, {threads});
    }
    Value *inputs = b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 2));
    Value *outputs = b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 3));
    SmallVector<Value *> callArgs;
    // A split batch's: each passed tensor's bytes per sample, and the
    // arguments that the next sample advances by them (its pointer, or a
    // descriptor's two).
    SmallVector<uint64_t> strides;
    SmallVector<std::pair<size_t, Value *>> advanced;
    // The run's sizes of the symbols that the code reads (the runtime
    // checked them against the bounds; one out of them is refused all the
    // same, since the workspace holds the largest).
    SmallVector<Value *> sizes(signature.symbols.size(), nullptr);
    if (descriptors) {
      Value *values =
          b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 7));
      BasicBlock *given = BasicBlock::Create(ctx, "sizes_given", run);
      b.CreateCondBr(b.CreateIsNull(values), bad, given);
      b.SetInsertPoint(given);
      for (auto [k, symbol] : llvm::enumerate(signature.symbols)) {
        if (symbol.kind != KILN_ABI_SYMBOL_DIM)
          continue;
        sizes[k] =
            b.CreateLoad(i64Ty, b.CreateConstInBoundsGEP1_64(i64Ty, values, k));
        BasicBlock *within = BasicBlock::Create(ctx, "within", run);
        b.CreateCondBr(
            b.CreateOr(
                b.CreateICmpSLT(sizes[k], ConstantInt::get(i64Ty, symbol.min)),
                b.CreateICmpSGT(sizes[k], ConstantInt::get(i64Ty, symbol.max))),
            bad, within);
        b.SetInsertPoint(within);
      }
    }
    // One pointer, or a memref descriptor: the pointer twice (allocated,
    // aligned), offset 0, the sizes (the run's, for a symbol) and the
    // row-major strides.
    auto passMemRef = [&](Value *pointer, ArrayRef<Value *> dims) {
      callArgs.push_back(pointer);
      if (!descriptors)
        return;
      callArgs.push_back(pointer);
      callArgs.push_back(ConstantInt::get(i64Ty, 0));
      callArgs.append(dims.begin(), dims.end());
      SmallVector<Value *> steps(dims.size());
      Value *step = ConstantInt::get(i64Ty, 1);
      for (size_t d = dims.size(); d-- > 0;) {
        steps[d] = step;
        step = b.CreateMul(step, dims[d]);
      }
      callArgs.append(steps.begin(), steps.end());
    };
    auto pass = [&](const TensorSignature &tensor, Value *pointer) {
      // The entry takes one sample of a split batch, whose bytes are the
      // static ones times the run's sizes of its other symbols.
      strides.push_back(tensor.sampleBytes);
      SmallVector<Value *> dims;
      Value *stride = ConstantInt::get(i64Ty, tensor.sampleBytes);
      for (auto [d, size] : llvm::enumerate(tensor.shape)) {
        if (repeats && d == 0) {
          dims.push_back(ConstantInt::get(i64Ty, 1));
          continue;
        }
        dims.push_back(size >= 0 ? ConstantInt::get(i64Ty, size)
                                 : sizes[-1 - size]);
        // (Only the sizes the entry reads are loaded: a size the data
        // decides is not, and is never in a repeated model's tensors.)
        if (repeats && dims.back() && size < 0)
          stride = b.CreateMul(stride, dims.back());
      }
      advanced.push_back({callArgs.size(), stride});
      if (descriptors)
        advanced.push_back({callArgs.size() + 1, stride});
      passMemRef(pointer, dims);
    };
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      if (signature.inputs[i].passed)
        pass(signature.inputs[i],
             b.CreateLoad(ptrTy,
                          b.CreateConstInBoundsGEP1_64(ptrTy, inputs, i)));
    for (size_t i = 0; i < signature.outputs.size(); ++i)
      if (signature.outputs[i].passed)
        pass(signature.outputs[i],
             b.CreateLoad(ptrTy,
                          b.CreateConstInBoundsGEP1_64(ptrTy, outputs, i)));
    // Where the entry writes the sizes that the data decides: the run's
    // symbol_results (a model with them needs the array).
    if (!signature.resultArgs.empty()) {
      Value *results =
          b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 9));
      BasicBlock *given = BasicBlock::Create(ctx, "results_given", run);
      b.CreateCondBr(b.CreateIsNull(results), bad, given);
      b.SetInsertPoint(given);
      for (size_t k : signature.resultArgs)
        callArgs.push_back(b.CreateConstInBoundsGEP1_64(i64Ty, results, k));
    }
    // The workspace comes last (see kiln-codegen-plan-memory).
    if (signature.workspaceSize > 0)
      passMemRef(b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 4)),
                 {ConstantInt::get(i64Ty, signature.workspaceSize)});
    // Where the checks record a failure themselves (a GPU model's kernels):
    // the run's `error`, which the caller reads after the run.
    if (signature.runErrorArgument) {
      Value *error = b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 8));
      BasicBlock *given = BasicBlock::Create(ctx, "error_given", run);
      b.CreateCondBr(b.CreateIsNull(error), bad, given);
      b.SetInsertPoint(given);
      callArgs.push_back(error);
    }
    if (signature.device == KILN_ABI_DEVICE_CUDA) {
      // The constants segment's device address after the workspace, then
      // the launcher, which the entry passes to the kernel stubs.
      Value *gpu = b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 6));
      if (signature.constantsSize > 0)
        callArgs.push_back(
            b.CreateLoad(ptrTy, b.CreateStructGEP(gpuTy, gpu, 2)));
      if (!signature.kernels.empty())
        callArgs.push_back(gpu);
    }
    callArgs.push_back(
        b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 5)));
    if (signature.repeat <= 1 && signature.repeatSymbol < 0) {
      b.CreateCall(entry, callArgs);
      finish();
      return Error::success();
    }
    // A split batch: the entry once per sample, each input and output
    // pointer advanced by one sample's bytes, one workspace for all. A
    // symbolic batch takes its count from the run's arguments (the runtime
    // checked it against the bounds; a count below 1 is refused all the
    // same).
    Value *count = ConstantInt::get(i64Ty, signature.repeat);
    if (signature.repeatSymbol >= 0) {
      Value *values =
          b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 7));
      BasicBlock *given = BasicBlock::Create(ctx, "given", run);
      b.CreateCondBr(b.CreateIsNull(values), bad, given);
      b.SetInsertPoint(given);
      count = b.CreateLoad(i64Ty, b.CreateConstInBoundsGEP1_64(
                                      i64Ty, values, signature.repeatSymbol));
      BasicBlock *counted = BasicBlock::Create(ctx, "counted", run);
      b.CreateCondBr(b.CreateICmpSLT(count, ConstantInt::get(i64Ty, 1)), bad,
                     counted);
      b.SetInsertPoint(counted);
    }
    // The samples from `first` on run one after the other, each on all the
    // run's threads; before them, where the model has sample slots, as many
    // as make whole rounds run side by side.
    Value *first = ConstantInt::get(i64Ty, 0);
    if (signature.sampleSlots > 1)
      first = emitSamplesSideBySide(b, run, args, entry, callArgs, strides,
                                    count, signature);
    BasicBlock *before = b.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(ctx, "sample", run);
    BasicBlock *done = BasicBlock::Create(ctx, "done", run);
    b.CreateCondBr(b.CreateICmpULT(first, count), loop, done);
    b.SetInsertPoint(loop);
    PHINode *sample = b.CreatePHI(i64Ty, 2, "sample");
    sample->addIncoming(first, before);
    SmallVector<Value *> sampleArgs(callArgs);
    for (auto [i, stride] : advanced)
      sampleArgs[i] = b.CreateInBoundsGEP(b.getInt8Ty(), callArgs[i],
                                          b.CreateMul(sample, stride));
    b.CreateCall(entry, sampleArgs);
    Value *next = b.CreateAdd(sample, ConstantInt::get(i64Ty, 1));
    sample->addIncoming(next, loop);
    b.CreateCondBr(b.CreateICmpULT(next, count), loop, done);
    b.SetInsertPoint(done);
    finish();
    return Error::success();
  }

  /// One sample's workspace, rounded up so that the next slot is aligned.
  static uint64_t slotBytes(const ModelSignature &signature) {
    if (signature.sampleSlots <= 1)
      return signature.workspaceSize;
    return alignedSlot(signature.workspaceSize, signature);
  }

  /// Where the run has P = num_threads threads, 1 < P <= the model's sample
  /// slots, at least P samples and no profiler: runs the first
  /// count - count % P samples in one OpenMP parallel region of P threads,
  /// each thread taking the next sample from a shared counter (so that a
  /// thread slowed by another process takes fewer) and running it alone in
  /// its own workspace slot. Returns the first sample left for the
  /// one-after-the-other loop (0 where the condition fails).
  Value *emitSamplesSideBySide(IRBuilder<> &b, Function *run, Value *args,
                               Function *entry, ArrayRef<Value *> callArgs,
                               ArrayRef<uint64_t> strides, Value *count,
                               const ModelSignature &signature) {
    Type *voidTy = Type::getVoidTy(ctx);
    FunctionCallee setThreads = module.getOrInsertFunction(
        "omp_set_num_threads", FunctionType::get(voidTy, {i32Ty}, false));
    FunctionCallee threadNum = module.getOrInsertFunction(
        "__kmpc_global_thread_num", FunctionType::get(i32Ty, {ptrTy}, false));
    FunctionCallee pushThreads = module.getOrInsertFunction(
        "__kmpc_push_num_threads",
        FunctionType::get(voidTy, {ptrTy, i32Ty, i32Ty}, false));
    FunctionCallee fork = module.getOrInsertFunction(
        "__kmpc_fork_call",
        FunctionType::get(voidTy, {ptrTy, i32Ty, ptrTy}, true));
    // The source location that libomp's entry points take (ident_t:
    // reserved, flags = KMP_IDENT_KMPC, reserved, reserved, psource).
    auto *identTy = StructType::get(ctx, {i32Ty, i32Ty, i32Ty, i32Ty, ptrTy});
    auto *ident = new GlobalVariable(
        module, identTy, true, GlobalValue::PrivateLinkage,
        ConstantStruct::get(
            identTy,
            {ConstantInt::get(i32Ty, 0), ConstantInt::get(i32Ty, 2),
             ConstantInt::get(i32Ty, 0), ConstantInt::get(i32Ty, 0),
             string(";kiln_abi_run;samples;0;0;;", "kiln.samples.loc")}),
        "kiln.samples.ident");

    // The entry's arguments that change with the sample: the strided
    // inputs and outputs, then the workspace (after any result slots).
    size_t workspaceArg = strides.size() + signature.resultArgs.size();
    bool hasWorkspace = signature.workspaceSize > 0;
    uint64_t slot = slotBytes(signature);

    // void samples(i32 *gtid, i32 *tid, ptr *callArgs, i64 *next, i64 *end)
    auto *taskTy =
        FunctionType::get(voidTy, {ptrTy, ptrTy, ptrTy, ptrTy, ptrTy}, false);
    Function *task = Function::Create(taskTy, GlobalValue::InternalLinkage,
                                      "kiln_abi_run_samples", module);
    task->addFnAttr(Attribute::NoUnwind);
    {
      IRBuilder<> t(BasicBlock::Create(ctx, "entry", task));
      Value *tid = t.CreateZExt(t.CreateLoad(i32Ty, task->getArg(1)), i64Ty);
      Value *argArray = task->getArg(2);
      Value *next = task->getArg(3);
      Value *end = t.CreateLoad(i64Ty, task->getArg(4));
      // The kernels' own parallel regions run on this thread alone.
      t.CreateCall(setThreads, {ConstantInt::get(i32Ty, 1)});
      BasicBlock *take = BasicBlock::Create(ctx, "take", task);
      BasicBlock *body = BasicBlock::Create(ctx, "sample", task);
      BasicBlock *exit = BasicBlock::Create(ctx, "exit", task);
      t.CreateBr(take);
      t.SetInsertPoint(take);
      Value *sample = t.CreateAtomicRMW(
          AtomicRMWInst::Add, next, ConstantInt::get(i64Ty, 1), MaybeAlign(8),
          AtomicOrdering::Monotonic);
      t.CreateCondBr(t.CreateICmpULT(sample, end), body, exit);
      t.SetInsertPoint(body);
      SmallVector<Value *> sampleArgs;
      for (size_t i = 0; i < callArgs.size(); ++i) {
        Value *arg = t.CreateLoad(
            ptrTy, t.CreateConstInBoundsGEP1_64(ptrTy, argArray, i));
        if (i < strides.size())
          arg = t.CreateInBoundsGEP(
              t.getInt8Ty(), arg,
              t.CreateMul(sample, ConstantInt::get(i64Ty, strides[i])));
        else if (hasWorkspace && i == workspaceArg)
          arg = t.CreateInBoundsGEP(
              t.getInt8Ty(), arg,
              t.CreateMul(tid, ConstantInt::get(i64Ty, slot)));
        sampleArgs.push_back(arg);
      }
      t.CreateCall(entry, sampleArgs);
      t.CreateBr(take);
      t.SetInsertPoint(exit);
      t.CreateRetVoid();
    }

    Value *threads = b.CreateLoad(i32Ty, b.CreateStructGEP(runArgsTy, args, 1));
    Value *threads64 = b.CreateSExt(threads, i64Ty);
    Value *profiler = callArgs.back();
    Value *sideBySide = b.CreateAnd(
        b.CreateAnd(
            b.CreateICmpSGT(threads, ConstantInt::get(i32Ty, 1)),
            b.CreateICmpSLE(threads64,
                            ConstantInt::get(i64Ty, signature.sampleSlots))),
        b.CreateAnd(b.CreateICmpSGE(count, threads64),
                    b.CreateIsNull(profiler)));
    BasicBlock *before = b.GetInsertBlock();
    BasicBlock *parallel = BasicBlock::Create(ctx, "side_by_side", run);
    BasicBlock *after = BasicBlock::Create(ctx, "after_side_by_side", run);
    b.CreateCondBr(sideBySide, parallel, after);
    b.SetInsertPoint(parallel);
    Value *rounds = b.CreateMul(b.CreateUDiv(count, threads64), threads64);
    Value *argArray = b.CreateAlloca(ptrTy, b.getInt64(callArgs.size()));
    for (auto [i, arg] : llvm::enumerate(callArgs))
      b.CreateStore(arg, b.CreateConstInBoundsGEP1_64(ptrTy, argArray, i));
    Value *next = b.CreateAlloca(i64Ty);
    b.CreateStore(ConstantInt::get(i64Ty, 0), next);
    Value *end = b.CreateAlloca(i64Ty);
    b.CreateStore(rounds, end);
    Value *gtid = b.CreateCall(threadNum, {ident});
    b.CreateCall(pushThreads, {ident, gtid, threads});
    b.CreateCall(
        fork, {ident, ConstantInt::get(i32Ty, 3), task, argArray, next, end});
    // This thread's later regions use the run's count again.
    b.CreateCall(setThreads, {threads});
    b.CreateBr(after);
    b.SetInsertPoint(after);
    PHINode *first = b.CreatePHI(i64Ty, 2, "first");
    first->addIncoming(ConstantInt::get(i64Ty, 0), before);
    first->addIncoming(rounds, parallel);
    return first;
  }

private:
  Module &module;
  LLVMContext &ctx;
  PointerType *ptrTy;
  IntegerType *i32Ty, *i64Ty;
  StructType *tensorTy, *kernelTy, *modelTy, *profilerTy, *runArgsTy;
  StructType *symbolTy, *checkTy, *runErrorTy;
  StructType *imageTy, *gpuKernelTy, *emulatedTy, *gpuTy;
};

} // namespace

int64_t chooseSampleSlots(const ModelSignature &signature,
                          const Module &module) {
  int64_t samples = signature.repeatSymbol >= 0
                        ? signature.symbols[signature.repeatSymbol].max
                        : signature.repeat;
  if (samples <= 1 || !signature.usesOpenMP ||
      signature.device != KILN_ABI_DEVICE_CPU || !signature.checks.empty() ||
      readsSizes(signature))
    return 1;
  for (const GlobalVariable &global : module.globals())
    if (!global.isConstant())
      return 1;
  uint64_t slot =
      alignedSlot(std::max<uint64_t>(signature.workspaceSize, 1), signature);
  int64_t fit = int64_t(std::max<uint64_t>(kMaxSampleWorkspaceBytes / slot, 1));
  return std::min({samples, kMaxSampleSlots, fit});
}

Error emitModelABI(Module &module, const std::string &entryName,
                   const ModelSignature &signature, const TargetInfo &target) {
  return ABIEmitter(module).emit(entryName, signature, target);
}

} // namespace kiln
