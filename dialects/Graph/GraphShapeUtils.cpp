//===- GraphShapeUtils.cpp - Shape helpers for graph ops ------------------===//

#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln::graph {

bool hasAtMostElements(ArrayRef<int64_t> shape, int64_t limit) {
  if (llvm::is_contained(shape, 0))
    return true;
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || llvm::MulOverflow(count, size, count) || count > limit)
      return false;
  return true;
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      ",");
  os << ']';
  return text;
}

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                    ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == 1) {
      result[i] = b;
    } else if (b == 1) {
      result[i] = a;
    } else if (ShapedType::isDynamic(a)) {
      result[i] = b;
    } else if (ShapedType::isDynamic(b) || a == b) {
      result[i] = a;
    } else {
      return std::nullopt;
    }
  }
  return result;
}

int64_t convOutputSize(int64_t inputSize, int64_t kernelSize, int64_t stride,
                       int64_t padBegin, int64_t padEnd, int64_t dilation,
                       bool ceilMode) {
  if (ShapedType::isDynamic(inputSize) || ShapedType::isDynamic(kernelSize))
    return ShapedType::kDynamic;
  // In 128 bits: the pads, strides and dilations are a model's attributes,
  // any 64-bit values. A size beyond int64_t is clamped to its largest, a
  // tensor that the compiler's size limit refuses.
  __int128 effectiveKernel = __int128(dilation) * (kernelSize - 1) + 1;
  __int128 span = __int128(inputSize) + padBegin + padEnd - effectiveKernel;
  if (span < 0)
    return 0;
  __int128 size = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil mode, a window may not start inside the end padding.
  if (ceilMode && (size - 1) * stride >= __int128(inputSize) + padBegin)
    --size;
  return size > INT64_MAX ? INT64_MAX : int64_t(size);
}

bool areCompatibleResultTypes(TypeRange inferred, TypeRange declared) {
  if (inferred.size() != declared.size())
    return false;
  for (auto [a, b] : llvm::zip_equal(inferred, declared)) {
    auto lhs = dyn_cast<RankedTensorType>(a);
    auto rhs = dyn_cast<RankedTensorType>(b);
    if (!lhs || !rhs) {
      if (a != b)
        return false;
      continue;
    }
    if (lhs.getElementType() != rhs.getElementType() ||
        lhs.getEncoding() != rhs.getEncoding() ||
        failed(verifyCompatibleShape(lhs.getShape(), rhs.getShape())))
      return false;
  }
  return true;
}

} // namespace kiln::graph
