//===- WidenHalf.cpp - Half-precision models computed in f32 --------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/APFloat.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHWIDENHALF
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;
using namespace kiln::graph;

namespace {

/// f16 only: bf16 models keep their per-op rounding, which ONNX's bf16
/// node tests check more tightly than bf16's precision (see Passes.td).
bool isHalf(Type type) { return getElementTypeOrSelf(type).isF16(); }

/// `type` with f32 elements where it is a tensor of f16.
Type widen(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !isHalf(tensor))
    return type;
  return tensor.clone(Float32Type::get(type.getContext()));
}

/// The f32 form of a half-precision constant's value, or null where its
/// elements cannot be read (an elided blob).
TypedAttr widenAttr(Attribute attr, RankedTensorType wide) {
  auto toFloat = [](const APFloat &value) {
    APFloat wider = value;
    bool lostInfo;
    wider.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                  &lostInfo); // exact: f32 holds every f16
    return wider.bitcastToAPInt();
  };
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr))
    return dense.mapValues(wide.getElementType(), toFloat);
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  if (!resource)
    return {};
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return {};
  ArrayRef<char> raw = blob->getData();
  int64_t count = wide.getNumElements();
  if (!wide.hasStaticShape() ||
      raw.size() < static_cast<size_t>(count) * sizeof(uint16_t))
    return {};
  AsmResourceBlob widened =
      HeapAsmResourceBlob::allocate(count * sizeof(float), alignof(float));
  auto *out = reinterpret_cast<float *>(widened.getMutableData().data());
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + i * sizeof(uint16_t), sizeof(bits));
    out[i] = APFloat(APFloat::IEEEhalf(), APInt(16, bits)).convertToFloat();
  }
  return DenseResourceElementsAttr::get(
      wide, resource.getRawHandle().getKey().str() + "_f32",
      std::move(widened));
}

struct GraphWidenHalfPass
    : kiln::graph::impl::GraphWidenHalfBase<GraphWidenHalfPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    bool any = llvm::any_of(func.getArgumentTypes(), isHalf) ||
               llvm::any_of(func.getResultTypes(), isHalf);
    func.walk([&](Operation *op) {
      any = any || llvm::any_of(op->getResultTypes(), isHalf);
      return any ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!any)
      return;

    // The operand types that bitcasts reinterpret, before anything widens.
    SmallVector<std::pair<BitCastOp, Type>> bitcasts;
    func.walk([&](BitCastOp op) {
      bitcasts.push_back({op, op.getInput().getType()});
    });
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op != func)
        ops.push_back(op);
    });

    OpBuilder builder(&getContext());
    Block &entry = func.getBody().front();
    builder.setInsertionPointToStart(&entry);
    for (BlockArgument arg : func.getArguments()) {
      Type wide = widen(arg.getType());
      if (wide == arg.getType() || arg.use_empty())
        continue;
      Value cast = CastOp::create(builder, arg.getLoc(), wide, arg);
      arg.replaceAllUsesExcept(cast, cast.getDefiningOp());
    }

    // Widens `value` in place where its uses may take f32, or through a
    // cast after it where its own type is its meaning.
    auto widenAfter = [&](Value value) {
      Type wide = widen(value.getType());
      if (wide == value.getType())
        return;
      builder.setInsertionPointAfterValue(value);
      Value cast = CastOp::create(builder, value.getLoc(), wide, value);
      value.replaceAllUsesExcept(cast, cast.getDefiningOp());
    };

    for (Operation *op : ops) {
      if (isa<func::ReturnOp>(op))
        continue;
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        auto type = dyn_cast<RankedTensorType>(constant.getType());
        if (!type || !isHalf(type))
          continue;
        auto wide = cast<RankedTensorType>(widen(type));
        if (TypedAttr value = widenAttr(constant.getValue(), wide)) {
          builder.setInsertionPoint(constant);
          constant.replaceAllUsesWith(
              ConstantOp::create(builder, constant.getLoc(), value)
                  .getResult());
          constant.erase();
        } else {
          widenAfter(constant.getResult());
        }
        continue;
      }
      if (isa<CastOp, BitCastOp>(op)) {
        widenAfter(op->getResult(0));
        continue;
      }
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            arg.setType(widen(arg.getType()));
      for (Value result : op->getResults())
        result.setType(widen(result.getType()));
    }

    // A bitcast reads the 16-bit patterns of its operand's original type.
    for (auto [op, type] : bitcasts) {
      if (op.getInput().getType() == type)
        continue;
      builder.setInsertionPoint(op);
      op.getInputMutable().assign(
          CastOp::create(builder, op.getLoc(), type, op.getInput()));
    }

    // The function's results keep their types: round once, at the end.
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    builder.setInsertionPoint(ret);
    for (auto [i, type] : llvm::enumerate(func.getResultTypes()))
      if (ret.getOperand(i).getType() != type)
        ret.setOperand(
            i, CastOp::create(builder, ret.getLoc(), type, ret.getOperand(i)));
  }
};

} // namespace
