//===- BlockedConv.h - Blocked convolutions in codegen ----------*- C++ -*-===//
//
// A graph.blocked_conv lowers to one linalg.generic tagged
// `kiln.blocked_conv` (conversion/GraphToLinalg/LayoutToLinalg.cpp):
//
//   out[n, ko, oh, ow, o] += in[n, ci, oh * s + y * d, ow * s + x * d, i]
//                            * w[ko, ci, y, x, i, o]
//
// on an input already padded, with the bias in `out`. A grouped one reads
// input block (ko floordiv K1g) * C1g + ci instead of ci
// (blockedConvInputBlock). Its packed forms
// (see buildPackedBlockedConv in LayoutToLinalg.cpp) split the input block
// i into groups, j innermost in both operands: of four 8-bit integers
// accumulated in i32 (int8),
//
//   out[n, ko, oh, ow, o] += zext(in[n, ci, oh*s + y*d, ow*s + x*d, ig, j])
//                            * sext(w[ko, ci, y, x, ig, o, j])
//
// or of two bf16 accumulated in f32 (extf for the extensions): the shapes of
// the dot-product instructions.
//
// The CPU passes that
// choose and apply a convolution algorithm recognise it through
// matchBlockedConv, which checks the tag against the op's maps, so that a
// tag that does not describe the op is never trusted.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_BLOCKEDCONV_H
#define KILN_CODEGEN_COMMON_BLOCKEDCONV_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace kiln::codegen {

/// A blocked convolution's operands and parameters.
struct BlockedConv {
  mlir::linalg::GenericOp op;
  mlir::Value input;  ///< N x C1 x H x W x ci, padded (packed: ci/g x g)
  mlir::Value weight; ///< K1 x C1 x kh x kw x ci x c (packed: ci/g x c x g)
  mlir::Value init;   ///< N x K1 x OH x OW x c, the bias or zeros
  /// The shapes as the f32 form has them, whatever the form.
  llvm::SmallVector<int64_t, 5> inputShape;
  llvm::SmallVector<int64_t, 6> weightShape;
  llvm::SmallVector<int64_t, 5> outputShape;
  /// The packed forms' group g, and ten loops: 4 (u8 input, s8 weight, i32
  /// accumulators) or 2 (bf16 operands, f32 accumulators); 0 for f32.
  int64_t group = 0;
  /// The convolution's groups of whole channel blocks (graph.blocked_conv):
  /// output block ko reads input blocks (ko / (K1 / groups)) * C1g + ci,
  /// C1g = weightShape[1]. 1 where every output block reads every input
  /// block.
  int64_t groups = 1;
  int64_t strides[2] = {1, 1};
  int64_t dilations[2] = {1, 1};

  /// Output channel blocks per group.
  int64_t outputBlocksPerGroup() const { return outputShape[1] / groups; }
  int64_t kernelHeight() const { return weightShape[2]; }
  int64_t kernelWidth() const { return weightShape[3]; }
};

/// `op` as a blocked convolution: a linalg.generic on static tensors (f32,
/// or a packed form's) tagged `kiln.blocked_conv` whose maps, iterators
/// and body are the convolution's.
std::optional<BlockedConv> matchBlockedConv(mlir::Operation *op);

/// Whether `block` (of a linalg.generic) is acc + zext(x) * sext(w) on
/// i8 x, i8 w and i32 acc: the body of the integer forms of a blocked
/// convolution and of a matrix product.
bool isIntegerDotBody(mlir::Block &block);

/// Whether `block` is acc + extf(x) * extf(w) on bf16 x and w and f32 acc:
/// the body of the bf16 forms.
bool isBF16DotBody(mlir::Block &block);

/// A matrix product in a packed form (buildPackedMatMul in NNToLinalg.cpp):
/// the reduction in groups of `group` (four int8 into i32, two bf16 into
/// f32), innermost in both operands, in one of two layouts:
///   rows:   loops (r, n | q, j) over x[r, q, j], w[q, n, j], acc[r, n];
///   panels: loops (r, p, c | q, j) over x[r, q, j], w[p, q, c, j],
///           acc[r, p, c], column n = p * C + c: the weight laid out by
///           kiln-cpu-pack-weights so that a tile's columns are one
///           contiguous panel.
struct PackedMatmul {
  int64_t group;
  bool panels;
};

/// `op` as a packed matrix product: a linalg.generic on static tensors with
/// the maps, iterators, element types and body of one of the two layouts.
std::optional<PackedMatmul> matchPackedMatmul(mlir::Operation *op);

/// Whether Winograd F(m, 3) applies: 3x3, stride 1, undilated, constant
/// f32 weights.
bool isWinogradCandidate(const BlockedConv &conv);

/// Whether `op` is a linalg.generic that copies one smaller tensor into
/// every element of its result (a bias broadcast over a convolution's
/// output): all loops parallel, a body that yields its input, the input read
/// through a projected permutation.
bool isBroadcastCopy(mlir::Operation *op);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_COMMON_BLOCKEDCONV_H
