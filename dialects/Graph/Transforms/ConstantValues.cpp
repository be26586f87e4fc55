//===- ConstantValues.cpp - Reading and making float constants ------------===//

#include "dialects/Graph/Transforms/ConstantValues.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace kiln::graph {

/// Constants above this many elements are held as resource blobs, as the
/// importer holds large initializers.
static constexpr int64_t kMaxInlineElements = 1024;

template <typename BlobAttr>
static std::optional<SmallVector<double>>
readBlob(DenseResourceElementsAttr attr) {
  auto typed = dyn_cast<BlobAttr>(attr);
  if (!typed)
    return std::nullopt;
  auto data = typed.tryGetAsArrayRef();
  if (!data)
    return std::nullopt;
  return SmallVector<double>(data->begin(), data->end());
}

std::optional<SmallVector<double>> getFloatElements(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  Attribute attr = constant.getValue();
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr)) {
    SmallVector<double> values;
    values.reserve(type.getNumElements());
    for (const APFloat &element : dense.getValues<APFloat>())
      values.push_back(element.convertToDouble());
    return values;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    if (type.getElementType().isF32())
      return readBlob<DenseF32ResourceElementsAttr>(resource);
    if (type.getElementType().isF64())
      return readBlob<DenseF64ResourceElementsAttr>(resource);
  }
  return std::nullopt;
}

Value createFloatConstant(OpBuilder &builder, Location loc,
                          RankedTensorType type, ArrayRef<double> values) {
  auto elementType = cast<FloatType>(type.getElementType());
  Attribute attr;
  if (elementType.isF32() &&
      static_cast<int64_t>(values.size()) > kMaxInlineElements) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocate(values.size() * sizeof(float), 64);
    auto *data = reinterpret_cast<float *>(blob.getMutableData().data());
    for (auto [i, v] : llvm::enumerate(values))
      data[i] = static_cast<float>(v);
    attr = DenseResourceElementsAttr::get(type, "folded", std::move(blob));
  } else {
    SmallVector<APFloat> elements;
    elements.reserve(values.size());
    for (double v : values) {
      APFloat element(v);
      bool lostInfo;
      element.convert(elementType.getFloatSemantics(),
                      APFloat::rmNearestTiesToEven, &lostInfo);
      elements.push_back(element);
    }
    attr = DenseElementsAttr::get(type, elements);
  }
  return ConstantOp::create(builder, loc, cast<TypedAttr>(attr));
}

std::optional<SmallVector<double>> getPerChannelValues(Value value,
                                                       int64_t resultRank,
                                                       int64_t channelDim,
                                                       int64_t channels) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() > resultRank)
    return std::nullopt;
  // Dimension i of `value` lines up with dimension i + offset of the result.
  int64_t offset = resultRank - type.getRank();
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i + offset != channelDim && type.getDimSize(i) != 1)
      return std::nullopt;
  std::optional<SmallVector<double>> values = getFloatElements(value);
  if (!values)
    return std::nullopt;
  if (values->size() == 1)
    return SmallVector<double>(channels, values->front());
  if (static_cast<int64_t>(values->size()) != channels)
    return std::nullopt;
  return values;
}

} // namespace kiln::graph
