//===- Utils.cpp - Helpers of every code generator ------------------------===//

#include "codegen/Utils/Utils.h"

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Operation.h"

using namespace mlir;

namespace kiln::codegen {

std::string convLayerName(Operation *op, unsigned index) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      // The importer names nodes "NAME (OpType)".
      name = named.getName().getValue().split(" (").first.str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name.empty() ? "conv#" + std::to_string(index) : name;
}

ArrayRef<StringRef> convAlgorithmNames() { return attr::convAlgorithmNames(); }

bool isConvAlgorithmName(StringRef name) {
  return llvm::is_contained(convAlgorithmNames(), name);
}

std::optional<int> winogradTileOf(StringRef algorithm) {
  std::optional<ConvAlgorithm> known = symbolizeConvAlgorithm(algorithm);
  return known ? winogradTileOf(*known) : std::nullopt;
}

std::optional<ConvAlgorithm> chosenConvAlgorithm(Operation *op) {
  if (auto chosen = op->getAttrOfType<ConvAlgorithmAttr>(attr::kConvAlgorithm))
    return chosen.getValue();
  return std::nullopt;
}

std::optional<int> winogradTileOf(ConvAlgorithm algorithm) {
  switch (algorithm) {
  case ConvAlgorithm::Winograd2x3:
    return 2;
  case ConvAlgorithm::Winograd4x3:
    return 4;
  case ConvAlgorithm::Winograd6x3:
    return 6;
  case ConvAlgorithm::Im2Col:
  case ConvAlgorithm::Direct:
    return std::nullopt;
  }
  llvm_unreachable("every algorithm is handled");
}

/// The values of a constant f32 tensor, held inline or as a resource blob,
/// or of a reshape, linalg.transpose or static slice of one (Gemm's
/// transposed weights, reshaped first by Inception v1's Reshape node; a
/// GRU's state weight, whose columns its step splits in two products).
std::optional<SmallVector<double>> constantValues(Value value) {
  // A reshape keeps the elements in their order.
  if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>())
    return constantValues(collapse.getSrc());
  if (auto expand = value.getDefiningOp<tensor::ExpandShapeOp>())
    return constantValues(expand.getSrc());
  if (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>()) {
    RankedTensorType source = slice.getSourceType();
    if (!source.hasStaticShape() ||
        slice.getResultType().getRank() != source.getRank() ||
        ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
        ShapedType::isDynamicShape(slice.getStaticSizes()) ||
        !llvm::all_of(slice.getStaticStrides(),
                      [](int64_t s) { return s == 1; }))
      return std::nullopt;
    std::optional<SmallVector<double>> input =
        constantValues(slice.getSource());
    if (!input)
      return std::nullopt;
    ArrayRef<int64_t> shape = source.getShape(),
                      offsets = slice.getStaticOffsets(),
                      sizes = slice.getStaticSizes();
    int64_t rank = source.getRank(), count = 1;
    for (int64_t size : sizes)
      count *= size;
    SmallVector<double> values;
    values.reserve(count);
    SmallVector<int64_t> index(rank, 0);
    for (int64_t n = 0; n < count; ++n) {
      int64_t offset = 0;
      for (int64_t i = 0; i < rank; ++i)
        offset = offset * shape[i] + offsets[i] + index[i];
      values.push_back((*input)[offset]);
      for (int64_t i = rank - 1; i >= 0 && ++index[i] == sizes[i]; --i)
        index[i] = 0;
    }
    return values;
  }
  if (auto transpose = value.getDefiningOp<linalg::TransposeOp>();
      transpose && transpose.hasPureTensorSemantics()) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    std::optional<SmallVector<double>> input =
        constantValues(transpose.getInput());
    if (!type || !type.hasStaticShape() || !input)
      return std::nullopt;
    // Result dimension i is input dimension perm[i].
    ArrayRef<int64_t> perm = transpose.getPermutation();
    ArrayRef<int64_t> shape = type.getShape();
    int64_t rank = type.getRank();
    SmallVector<int64_t> inputStrides(rank, 1);
    for (int64_t i = rank - 2; i >= 0; --i) {
      // The input's dimension i + 1 has the size of result dimension
      // inverse(perm)[i + 1].
      int64_t size = 0;
      for (int64_t j = 0; j < rank; ++j)
        if (perm[j] == i + 1)
          size = shape[j];
      inputStrides[i] = inputStrides[i + 1] * size;
    }
    SmallVector<double> values(input->size());
    SmallVector<int64_t> index(rank, 0);
    for (double &v : values) {
      int64_t offset = 0;
      for (int64_t i = 0; i < rank; ++i)
        offset += index[i] * inputStrides[perm[i]];
      v = (*input)[offset];
      for (int64_t i = rank - 1; i >= 0 && ++index[i] == shape[i]; --i)
        index[i] = 0;
    }
    return values;
  }
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    SmallVector<double> values;
    values.reserve(dense.getNumElements());
    for (APFloat v : dense.getValues<APFloat>())
      values.push_back(v.convertToDouble());
    return values;
  }
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(attr))
    if (std::optional<ArrayRef<float>> data = resource.tryGetAsArrayRef())
      return SmallVector<double>(data->begin(), data->end());
  return std::nullopt;
}

int64_t largestDivisor(int64_t size, int64_t limit) {
  for (int64_t d = std::min(size, limit); d > 1; --d)
    if (size % d == 0)
      return d;
  return 1;
}

std::optional<int64_t> wholeRowBlocks(int64_t size, int64_t rows) {
  int64_t main = size / rows * rows;
  if (size <= rows || main == size || 2 * largestDivisor(size, rows) > rows)
    return std::nullopt;
  return main;
}

SmallVector<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
bordersOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> interior) {
  int64_t rank = shape.size();
  ArrayRef<int64_t> offsets = interior.take_front(rank),
                    sizes = interior.drop_front(rank);
  SmallVector<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>> borders;
  for (int64_t d = 0; d < rank; ++d) {
    auto slab = [&](int64_t begin, int64_t end) {
      if (begin >= end)
        return;
      SmallVector<int64_t> boxOffsets, boxSizes;
      for (int64_t i = 0; i < rank; ++i) {
        boxOffsets.push_back(i < d ? offsets[i] : i == d ? begin : 0);
        boxSizes.push_back(i < d ? sizes[i] : i == d ? end - begin : shape[i]);
      }
      borders.emplace_back(boxOffsets, boxSizes);
    };
    slab(0, offsets[d]);
    slab(offsets[d] + sizes[d], shape[d]);
  }
  return borders;
}

bool hasSubByteElements(Operation *op) {
  auto subByte = [](Type type) {
    auto shaped = dyn_cast<ShapedType>(type);
    return shaped && shaped.getElementType().isIntOrFloat() &&
           shaped.getElementTypeBitWidth() < 8;
  };
  return llvm::any_of(op->getOperandTypes(), subByte) ||
         llvm::any_of(op->getResultTypes(), subByte);
}

} // namespace kiln::codegen
