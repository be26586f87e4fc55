//===- Utils.h - Helpers of every code generator ----------------*- C++ -*-===//
//
// Small functions that passes of codegen/Common and of each target share:
// reading constants, tile sizes, and the names of convolution layers and
// algorithms.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_UTILS_UTILS_H
#define KILN_CODEGEN_UTILS_UTILS_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {
enum class ConvAlgorithm : uint32_t;
} // namespace kiln

namespace kiln::codegen {

/// Every convolution algorithm (the ConvAlgorithm enum of the kiln dialect):
/// im2col, direct, winograd-2x3, winograd-4x3, winograd-6x3. The compiler's
/// options, the passes and the tuner spell them from it.
llvm::ArrayRef<llvm::StringRef> convAlgorithmNames();

/// Whether `name` is one of convAlgorithmNames().
bool isConvAlgorithmName(llvm::StringRef name);

/// M for "winograd-Mx3", nothing for another algorithm name.
std::optional<int> winogradTileOf(llvm::StringRef algorithm);
std::optional<int> winogradTileOf(ConvAlgorithm algorithm);

/// The algorithm chosen for a convolution (its kiln.conv_algorithm), if any.
std::optional<ConvAlgorithm> chosenConvAlgorithm(mlir::Operation *op);

/// The ONNX node name of a convolution, from its location, or "conv#INDEX".
std::string convLayerName(mlir::Operation *op, unsigned index);

/// The values of a constant f32 tensor, held inline or as a resource blob,
/// or of a reshape or linalg.transpose of one.
std::optional<llvm::SmallVector<double>> constantValues(mlir::Value value);

/// The largest divisor of `size` that is at most `limit` (at least 1): a
/// tile size that leaves no remainder.
int64_t largestDivisor(int64_t size, int64_t limit);

/// The rows of `size` that whole blocks of `rows` cover, when a product of
/// `size` rows is split into those blocks and a remainder of fewer rows:
/// when `rows` neither divides `size` nor comes near a divisor of it (the
/// largest divisor not above it is less than half of it; 197 tokens, a
/// prime, run as 192 + 5 in blocks of 8). Nothing otherwise, where the
/// block is largestDivisor(size, rows).
std::optional<int64_t> wholeRowBlocks(int64_t size, int64_t rows);

/// The boxes of a tensor of `shape` outside the box `interior` (offsets
/// then sizes): along each dimension d, the part before the interior and
/// the part after it, within the interior along the dimensions before d and
/// whole along those after it. Together they cover the border once.
llvm::SmallVector<
    std::pair<llvm::SmallVector<int64_t>, llvm::SmallVector<int64_t>>>
bordersOf(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> interior);

/// Whether `op` reads or writes a tensor or buffer of booleans (or other
/// elements narrower than a byte). A vector of them in memory is a bitmask
/// in LLVM (`store <16 x i1>` writes two bytes), where Kiln keeps one byte
/// per element (or packs sub-byte floats): such ops stay scalar loops.
bool hasSubByteElements(mlir::Operation *op);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_UTILS_UTILS_H
