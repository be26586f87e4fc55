//===- LoweringUtils.h - Helpers shared by graph lowerings ------*- C++ -*-===//

#ifndef KILN_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H
#define KILN_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {

/// Computes one result element from one element of each operand.
using ScalarBodyBuilder = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// Builds a linalg.generic producing `resultType` from `operands` elementwise
/// with numpy broadcasting: each operand is aligned to the right of the
/// result, and a size-1 dimension against a larger one is read at index 0.
/// `operands` are tensors of any element types (signless); `body` receives
/// one scalar per operand and returns the result scalar. The generic writes
/// into `init` when given (a tensor of `resultType`: a loop's carried state
/// stays in one buffer), into a fresh tensor otherwise.
mlir::Value buildBroadcastElementwise(mlir::OpBuilder &b, mlir::Location loc,
                                      mlir::RankedTensorType resultType,
                                      mlir::ValueRange operands,
                                      ScalarBodyBuilder body,
                                      mlir::Value init = nullptr);

/// The sizes of `resultType` as OpFoldResults, taking dynamic dimensions from
/// the broadcast of `operands` (tensor.dim of the first operand that holds
/// the dimension at full size).
llvm::SmallVector<mlir::OpFoldResult>
getBroadcastSizes(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::RankedTensorType resultType, mlir::ValueRange operands);

/// tensor.empty of `type`, with the dynamic sizes taken from `sizes`.
mlir::Value createEmptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::RankedTensorType type,
                              llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// The ranked tensor type of `value`, which must have one.
mlir::RankedTensorType getTensorType(mlir::Value value);

/// An arith.constant of index type.
mlir::Value indexConstant(mlir::OpBuilder &b, mlir::Location loc,
                          int64_t value);

/// Whether every one of `types` (ranked tensors) has a static shape.
bool allStatic(mlir::TypeRange types);
/// Whether every operand and result of `op` (ranked tensors) has one: what
/// the lowerings that need static shapes check first.
bool allStatic(mlir::Operation *op);

/// A tensor of `type` filled with `value`.
mlir::Value createFilled(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);
mlir::Value createFilled(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, double value);

/// Pads `value` with `padValue`, `low` and `high` elements per dimension
/// (static); `value` itself when there is no padding.
mlir::Value padTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> low, llvm::ArrayRef<int64_t> high,
                      mlir::Value padValue);

/// Iterator types: `parallel` parallel loops then `reduction` reductions.
llvm::SmallVector<mlir::utils::IteratorType> getIterators(int64_t parallel,
                                                          int64_t reduction);

/// A scalar constant of `type` (a float, integer or index type).
mlir::Value createScalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Type type, double value);

/// Whether a graph-level element type is an unsigned integer (ui8 ... ui64),
/// whose lowering must use the unsigned arith ops.
bool isUnsignedInteger(mlir::Type graphElementType);

/// The activation of a fused op applied to the float scalar `x`, with its
/// parameters (see graph.fused_conv); `x` itself for `none`.
mlir::Value buildActivation(mlir::OpBuilder &b, mlir::Location loc,
                            graph::Activation activation,
                            llvm::ArrayRef<float> params, mlir::Value x);

/// log(1 + exp(x)) of the float scalar `x`, without overflow:
/// max(x, 0) + log1p(exp(-|x|)).
mlir::Value buildSoftplus(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value x);

/// x / (1 + |x|) of the float scalar `x`.
mlir::Value buildSoftsign(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value x);

/// Number of window elements of each output position along one dimension
/// (`outSize` positions of a pool window of `kernel` elements) that lie in
/// [begin, end) of the unpadded input's coordinates.
llvm::SmallVector<int64_t> countWindowElements(int64_t outSize, int64_t kernel,
                                               int64_t stride, int64_t dilation,
                                               int64_t padBegin, int64_t begin,
                                               int64_t end);

} // namespace kiln

#endif // KILN_CONVERSION_GRAPHTOLINALG_LOWERINGUTILS_H
