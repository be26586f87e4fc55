//===- ExternalizeConstants.cpp - Constants as one segment ----------------===//
//
// Every constant memref.global becomes a slice of one byte segment that the
// entry function takes as an argument: the runtime uploads it to the device
// once, and no kernel refers to a global (which the NVPTX back end would
// write into the PTX as initializers).
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/MathExtras.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUEXTERNALIZECONSTANTS
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

/// Where each global starts in the segment: the device's allocation
/// granularity for coalesced, vector-aligned reads.
constexpr int64_t kAlignment = 256;

/// Bytes of one element in memory, as the LLVM lowering stores it: whole
/// bytes, one per element for i1 and the sub-byte types.
int64_t storageBytes(Type element) {
  return std::max<int64_t>(
      1, llvm::divideCeil(element.getIntOrFloatBitWidth(), 8));
}

/// Appends the bytes of `value` (of `count` elements of `element`) to
/// `out`, as the host would hold them; false for a value it cannot read.
bool appendBytes(ElementsAttr value, Type element, int64_t count,
                 std::vector<char> &out) {
  int64_t width = element.getIntOrFloatBitWidth();
  int64_t bytes = storageBytes(element);
  // Whole-byte types held densely: their raw data, repeated for a splat.
  if (width % 8 == 0) {
    ArrayRef<char> raw;
    if (auto dense = dyn_cast<DenseElementsAttr>(value))
      raw = dense.getRawData();
    else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return false;
      raw = blob->getData();
    } else {
      return false;
    }
    if (int64_t(raw.size()) == count * bytes) {
      out.insert(out.end(), raw.begin(), raw.end());
      return true;
    }
    if (int64_t(raw.size()) == bytes) { // a splat
      for (int64_t i = 0; i < count; ++i)
        out.insert(out.end(), raw.begin(), raw.end());
      return true;
    }
    return false;
  }
  // i1 and the narrow types: one element per byte, the code in its low bits.
  auto appendInt = [&](const APInt &v) {
    uint64_t word = v.getZExtValue();
    for (int64_t b = 0; b < bytes; ++b)
      out.push_back(char((word >> (8 * b)) & 0xff));
  };
  if (isa<IntegerType>(element)) {
    for (APInt v : value.getValues<APInt>())
      appendInt(v);
    return true;
  }
  if (isa<FloatType>(element)) {
    for (APFloat v : value.getValues<APFloat>())
      appendInt(v.bitcastToAPInt());
    return true;
  }
  return false;
}

struct GPUExternalizeConstantsPass
    : impl::GPUExternalizeConstantsBase<GPUExternalizeConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal()) {
      module.emitError() << "no entry function '" << entry << "'";
      return signalPassFailure();
    }
    // Each constant global's offset in the segment.
    std::vector<char> segment;
    llvm::StringMap<int64_t> offsets;
    SmallVector<memref::GlobalOp> globals;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      auto value = dyn_cast_or_null<ElementsAttr>(global.getInitialValueAttr());
      MemRefType type = global.getType();
      if (!global.getConstant() || !value)
        continue;
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat()) {
        global.emitError() << "a constant of type " << type
                           << " cannot be placed in device memory";
        return signalPassFailure();
      }
      segment.resize(llvm::alignTo(segment.size(), kAlignment), 0);
      offsets[global.getSymName()] = segment.size();
      if (!appendBytes(value, type.getElementType(), type.getNumElements(),
                       segment)) {
        global.emitError() << "cannot read the value of this constant";
        return signalPassFailure();
      }
      globals.push_back(global);
    }
    if (globals.empty())
      return;
    // At least one unit, so that empty constants have a segment to view.
    segment.resize(
        std::max<size_t>(kAlignment, llvm::alignTo(segment.size(), kAlignment)),
        0);
    auto segmentType = MemRefType::get({int64_t(segment.size())},
                                       IntegerType::get(&getContext(), 8));

    // The entry's new argument, and a view of it for each lookup.
    Block &body = func.getBody().front();
    if (failed(func.insertArgument(func.getNumArguments(), segmentType, {},
                                   func.getLoc()))) {
      func.emitError() << "cannot add the constants segment's argument";
      return signalPassFailure();
    }
    Value constants = body.getArguments().back();
    WalkResult walk = module.walk([&](memref::GetGlobalOp get) {
      auto it = offsets.find(get.getName());
      if (it == offsets.end())
        return WalkResult::advance();
      if (get->getParentOfType<func::FuncOp>() != func) {
        get.emitError() << "a constant read outside the entry function";
        return WalkResult::interrupt();
      }
      OpBuilder b(get);
      Value offset =
          arith::ConstantIndexOp::create(b, get.getLoc(), it->second);
      Value view = memref::ViewOp::create(b, get.getLoc(), get.getType(),
                                          constants, offset, ValueRange());
      get.getResult().replaceAllUsesWith(view);
      get.erase();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (memref::GlobalOp global : globals)
      global.erase();

    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(module.getBody());
    auto tensorType = RankedTensorType::get(segmentType.getShape(),
                                            segmentType.getElementType());
    auto value = DenseElementsAttr::getFromRawBuffer(tensorType, segment);
    memref::GlobalOp::create(b, module.getLoc(), kConstantsGlobal,
                             b.getStringAttr("private"), segmentType, value,
                             /*constant=*/true,
                             b.getI64IntegerAttr(kAlignment));
    func->setAttr(kConstantsSizeAttr, b.getI64IntegerAttr(segment.size()));
  }
};

} // namespace
} // namespace kiln::gpu
