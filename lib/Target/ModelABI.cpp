//===- ModelABI.cpp - Emit the model ABI of include/kiln/model_abi.h ------===//
//
// The structures built here mirror kiln_abi_tensor, kiln_abi_model and
// kiln_abi_run_args field by field; natural LLVM struct layout equals the C
// layout on every Kiln target. A change to model_abi.h changes this file.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/ModelABI.h"

#include "kiln/model_abi.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"

using namespace llvm;

namespace kiln {

namespace {

class ABIEmitter {
public:
  ABIEmitter(Module &module)
      : module(module), ctx(module.getContext()),
        ptrTy(PointerType::getUnqual(ctx)), i32Ty(Type::getInt32Ty(ctx)),
        i64Ty(Type::getInt64Ty(ctx)) {
    tensorTy = StructType::create(ctx, {ptrTy, i32Ty, i32Ty, ptrTy},
                                  "kiln_abi_tensor");
    modelTy = StructType::create(ctx,
                                 {i32Ty, i32Ty, ptrTy, ptrTy, ptrTy, ptrTy,
                                  i64Ty, ptrTy, i64Ty, ptrTy, i64Ty, i64Ty},
                                 "kiln_abi_model");
    runArgsTy = StructType::create(ctx, {i32Ty, i32Ty, ptrTy, ptrTy, ptrTy},
                                   "kiln_abi_run_args");
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

  Error emit(const std::string &entryName, const ModelSignature &signature,
             const TargetInfo &target) {
    Function *entry = module.getFunction(entryName);
    if (!entry)
      return createStringError("the model has no entry function '" + entryName +
                               "'");
    auto countPassed = [](const std::vector<TensorSignature> &list) {
      return llvm::count_if(list,
                            [](const TensorSignature &t) { return t.passed; });
    };
    size_t numArgs = countPassed(signature.inputs) +
                     countPassed(signature.outputs) +
                     (signature.workspaceSize > 0 ? 1 : 0);
    if (entry->arg_size() != numArgs)
      return createStringError("entry function takes " +
                               Twine(entry->arg_size()).str() +
                               " arguments, expected one per input and "
                               "output and the workspace (" +
                               Twine(numArgs).str() + ")");

    // Everything the compiler made is internal; only the ABI is exported.
    for (Function &function : module.functions())
      if (!function.isDeclaration())
        function.setLinkage(GlobalValue::InternalLinkage);
    for (GlobalVariable &global : module.globals())
      if (!global.isDeclaration())
        global.setLinkage(GlobalValue::InternalLinkage);

    // The descriptor.
    Constant *desc = ConstantStruct::get(
        modelTy,
        {ConstantInt::get(i32Ty, KILN_ABI_VERSION), ConstantInt::get(i32Ty, 0),
         string(target.triple, "kiln.triple"), string(target.cpu, "kiln.cpu"),
         string(target.requiredFeatures, "kiln.features"),
         string("kiln 0.1.0", "kiln.producer"),
         ConstantInt::get(i64Ty, signature.inputs.size()),
         tensors(signature.inputs, "kiln.inputs"),
         ConstantInt::get(i64Ty, signature.outputs.size()),
         tensors(signature.outputs, "kiln.outputs"),
         ConstantInt::get(i64Ty, signature.workspaceSize),
         ConstantInt::get(i64Ty, signature.workspaceAlign)});
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
    for (size_t i = 0; i < signature.inputs.size(); ++i)
      if (signature.inputs[i].passed)
        callArgs.push_back(b.CreateLoad(
            ptrTy, b.CreateConstInBoundsGEP1_64(ptrTy, inputs, i)));
    for (size_t i = 0; i < signature.outputs.size(); ++i)
      if (signature.outputs[i].passed)
        callArgs.push_back(b.CreateLoad(
            ptrTy, b.CreateConstInBoundsGEP1_64(ptrTy, outputs, i)));
    // The workspace comes last (see kiln-cpu-plan-memory).
    if (signature.workspaceSize > 0)
      callArgs.push_back(
          b.CreateLoad(ptrTy, b.CreateStructGEP(runArgsTy, args, 4)));
    b.CreateCall(entry, callArgs);
    b.CreateRet(ConstantInt::get(i32Ty, KILN_ABI_RUN_OK));
    return Error::success();
  }

private:
  Module &module;
  LLVMContext &ctx;
  PointerType *ptrTy;
  IntegerType *i32Ty, *i64Ty;
  StructType *tensorTy, *modelTy, *runArgsTy;
};

} // namespace

Error emitModelABI(Module &module, const std::string &entryName,
                   const ModelSignature &signature, const TargetInfo &target) {
  return ABIEmitter(module).emit(entryName, signature, target);
}

} // namespace kiln
