//===- HalfStorage.cpp - f32 weights stored as f16 ------------------------===//

#include "lib/Target/HalfStorage.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <cstring>

using namespace llvm;

namespace kiln {

namespace {

/// Constants below this many elements are left alone: biases and per-channel
/// scales, whose bytes do not matter.
constexpr uint64_t kMinElements = 4096;

/// The f16 bits of the f32 `bits` when f16 holds the value exactly (zeros,
/// normal and subnormal f16 values; not infinities or NaNs, which weights do
/// not hold and whose payloads f16 may not keep).
std::optional<uint16_t> exactHalf(uint32_t bits) {
  uint16_t sign = (bits >> 16) & 0x8000;
  int exponent = int((bits >> 23) & 0xff);
  uint32_t mantissa = bits & 0x7fffff;
  if (exponent == 0)
    return mantissa == 0 ? std::optional<uint16_t>(sign) : std::nullopt;
  if (exponent == 0xff)
    return std::nullopt;
  int e = exponent - 127;
  if (e > 15)
    return std::nullopt;
  if (e >= -14) {
    if (mantissa & 0x1fff)
      return std::nullopt;
    return uint16_t(sign | ((e + 15) << 10) | (mantissa >> 13));
  }
  // A subnormal f16: m * 2^-24 with m < 2^10.
  if (e < -24)
    return std::nullopt;
  uint32_t significand = mantissa | 0x800000;
  int shift = 13 + (-14 - e);
  if (significand & ((uint32_t(1) << shift) - 1))
    return std::nullopt;
  return uint16_t(sign | (significand >> shift));
}

/// The f32 bits of the f16 `bits` (zero-extended to i32), by integer
/// operations only: no F16C, no library call, and subnormal f16 values
/// normalised without f32 subnormal arithmetic (which a caller's
/// denormals-are-zero mode would flush). Infinities and NaNs never occur
/// (exactHalf refuses them).
Value *widenHalfBits(IRBuilder<> &builder, Value *bits) {
  Type *i32 = builder.getInt32Ty();
  auto c = [&](uint32_t v) { return ConstantInt::get(i32, v); };
  Value *sign = builder.CreateShl(builder.CreateAnd(bits, c(0x8000)), 16);
  Value *exponent = builder.CreateAnd(builder.CreateLShr(bits, 10), c(0x1f));
  Value *mantissa = builder.CreateAnd(bits, c(0x3ff));
  // Normal: (1.m) 2^(e - 15), f32's biased exponent e + 112.
  Value *normal = builder.CreateOr(
      builder.CreateShl(builder.CreateAdd(exponent, c(112)), 23),
      builder.CreateShl(mantissa, 13));
  // Subnormal: m 2^-24 = (m << s) 2^(-24 - s), with s = ctlz(m) - 21 so
  // that bit 10 of m << s is set: biased exponent 113 - s.
  Value *shift =
      builder.CreateSub(builder.CreateBinaryIntrinsic(Intrinsic::ctlz, mantissa,
                                                      builder.getTrue()),
                        c(21));
  Value *subnormal = builder.CreateOr(
      builder.CreateShl(builder.CreateSub(c(113), shift), 23),
      builder.CreateShl(
          builder.CreateAnd(builder.CreateShl(mantissa, shift), c(0x3ff)), 13));
  Value *isZeroExponent = builder.CreateICmpEQ(exponent, c(0));
  Value *magnitude = builder.CreateSelect(
      isZeroExponent,
      builder.CreateSelect(builder.CreateICmpEQ(mantissa, c(0)), c(0),
                           subnormal),
      normal);
  return builder.CreateOr(sign, magnitude);
}

} // namespace

uint64_t storeConstantsAsHalf(Module &module, const TargetMachine &machine) {
  LLVMContext &context = module.getContext();
  struct Narrowed {
    GlobalVariable *wide;
    GlobalVariable *half;
    uint64_t count;
  };
  SmallVector<Narrowed> narrowed;
  for (GlobalVariable &global : module.globals()) {
    if (!global.isConstant() || !global.hasLocalLinkage() ||
        !global.hasInitializer())
      continue;
    auto *data = dyn_cast<ConstantDataArray>(global.getInitializer());
    if (!data || !data->getElementType()->isFloatTy() ||
        data->getNumElements() < kMinElements)
      continue;
    uint64_t count = data->getNumElements();
    StringRef raw = data->getRawDataValues();
    SmallVector<uint16_t> halves(count);
    bool exact = true;
    for (uint64_t i = 0; i < count && exact; ++i) {
      uint32_t bits;
      std::memcpy(&bits, raw.data() + i * sizeof(bits), sizeof(bits));
      std::optional<uint16_t> half = exactHalf(bits);
      exact = half.has_value();
      if (exact)
        halves[i] = *half;
    }
    if (!exact)
      continue;
    // The f16 copy is "externally initialized", so that LLVM's evaluation
    // of constructors at compile time cannot read it and fold the f32
    // values back into the module.
    auto *half = new GlobalVariable(
        module, ArrayType::get(Type::getInt16Ty(context), count),
        /*isConstant=*/false, GlobalValue::PrivateLinkage,
        ConstantDataArray::get(context, ArrayRef<uint16_t>(halves)),
        global.getName() + ".f16");
    half->setExternallyInitialized(true);
    half->setAlignment(Align(64));
    global.setConstant(false);
    global.setInitializer(ConstantAggregateZero::get(global.getValueType()));
    narrowed.push_back({&global, half, count});
  }
  if (narrowed.empty())
    return 0;

  // One constructor converts them all when the model is loaded, before the
  // runtime has checked that this CPU has the model's features: so it is
  // code for the architecture's baseline (O3 vectorizes its integer loops
  // with SSE2 or NEON), which any CPU of it runs.
  auto *function = Function::Create(
      FunctionType::get(Type::getVoidTy(context), false),
      GlobalValue::InternalLinkage, "kiln_widen_constants", module);
  function->addFnAttr(Attribute::NoUnwind);
  const Triple &triple = machine.getTargetTriple();
  function->addFnAttr("target-cpu", triple.isX86() ? "x86-64" : "generic");
  function->addFnAttr("target-features", "");
  IRBuilder<> builder(BasicBlock::Create(context, "entry", function));
  Type *i64 = builder.getInt64Ty();
  uint64_t saved = 0;
  for (const Narrowed &each : narrowed) {
    BasicBlock *before = builder.GetInsertBlock();
    BasicBlock *loop = BasicBlock::Create(context, "widen", function);
    BasicBlock *after = BasicBlock::Create(context, "widened", function);
    builder.CreateBr(loop);
    builder.SetInsertPoint(loop);
    PHINode *index = builder.CreatePHI(i64, 2);
    index->addIncoming(builder.getInt64(0), before);
    Value *bits = builder.CreateLoad(
        builder.getInt16Ty(),
        builder.CreateGEP(builder.getInt16Ty(), each.half, index));
    Value *value =
        widenHalfBits(builder, builder.CreateZExt(bits, builder.getInt32Ty()));
    builder.CreateStore(
        value, builder.CreateGEP(builder.getInt32Ty(), each.wide, index));
    Value *next = builder.CreateAdd(index, builder.getInt64(1), "", true, true);
    index->addIncoming(next, loop);
    builder.CreateCondBr(
        builder.CreateICmpEQ(next, builder.getInt64(each.count)), after, loop);
    builder.SetInsertPoint(after);
    saved += each.count * 2;
  }
  builder.CreateRetVoid();
  appendToGlobalCtors(module, function, /*Priority=*/65535);
  return saved;
}

} // namespace kiln
