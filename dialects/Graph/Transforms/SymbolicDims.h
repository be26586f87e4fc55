//===- SymbolicDims.h - Which symbol each `?` dimension is ------*- C++ -*-===//
//
// A symbolic dimension that the code reads at run time (kiln.dim_symbols: a
// sequence length) is `?` in the types. The model ABI must still say which
// symbol each output dimension is, and the runtime sizes the outputs from
// the run's sizes: so the symbols are traced from the inputs' names
// (kiln.dims) through every op, by each op's rule. An op without a rule
// that meets a symbolic dimension is refused, named with the others of its
// type, rather than computed at a size that nobody checked.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_GRAPH_TRANSFORMS_SYMBOLICDIMS_H
#define KILN_DIALECTS_GRAPH_TRANSFORMS_SYMBOLICDIMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace kiln::graph {

/// For each tensor value of a function, which of kiln.dim_symbols each
/// dimension is: -1 for a static one.
class SymbolicDims {
public:
  /// Traces `func`'s kiln.dim_symbols from its arguments' kiln.dims. Fails,
  /// with an error on `func`, where an argument's `?` names no such symbol
  /// or an op without a rule meets one.
  static mlir::FailureOr<SymbolicDims> trace(mlir::func::FuncOp func);

  /// The same on a function being built (the importer): reports nothing,
  /// and leaves what no rule traces unknown (`symbolOf` says so).
  static SymbolicDims traceSoFar(mlir::func::FuncOp func);

  /// Which symbol dimension `dim` of `value` is: -1 for a static size,
  /// nullopt for a `?` size that was not traced.
  std::optional<int64_t> symbolOf(mlir::Value value, int64_t dim) const;

  /// The factor of dimension `dim` of `value` on its symbol: 1 but where a
  /// reshape merged a symbol with static sizes (a sequence with the batch
  /// that kiln-graph-split-batch makes 1); 1 for a static size.
  int64_t scaleOf(mlir::Value value, int64_t dim) const;

  /// `value`'s symbols, one per dimension (all -1 for a static tensor),
  /// without their factors (scaleOf).
  llvm::SmallVector<int64_t> of(mlir::Value value) const;

  /// The names of the symbols, in kiln.dim_symbols' order.
  llvm::ArrayRef<std::string> names() const { return symbolNames; }

private:
  static mlir::FailureOr<SymbolicDims> trace(mlir::func::FuncOp func,
                                             bool report);

  llvm::DenseMap<mlir::Value, llvm::SmallVector<int64_t>> dims;
  std::vector<std::string> symbolNames;
};

} // namespace kiln::graph

#endif // KILN_DIALECTS_GRAPH_TRANSFORMS_SYMBOLICDIMS_H
