//===- Buffers.h - What the GPU passes know of buffers and indices -*- C++
//-*-===//

#ifndef KILN_CODEGEN_GPU_BUFFERS_H
#define KILN_CODEGEN_GPU_BUFFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace kiln::gpu {

/// The bytes of a buffer that a memref may touch: a root buffer (an
/// argument or an allocation) and a byte range of it. Distinct roots never
/// overlap (the runtime gives the inputs, outputs, constants and workspace
/// buffers of their own); within one root, a `memref.view` at a constant
/// offset with a static shape bounds the range, and views of it stay in it.
struct Extent {
  mlir::Value root;
  int64_t begin = 0;
  int64_t end = std::numeric_limits<int64_t>::max();

  bool overlaps(const Extent &other) const {
    return root == other.root && begin < other.end && other.begin < end;
  }
};

/// The extent of `value`, through its chain of views.
Extent extentOf(mlir::Value value);

/// The memrefs `op` (and what it nests) reads and writes; false when some
/// effect has no value (it may touch anything).
bool effectsOf(mlir::Operation *op, llvm::SmallVectorImpl<mlir::Value> &reads,
               llvm::SmallVectorImpl<mlir::Value> &writes);

/// The linalg ops at the top of `func`'s body, the ones a pass may turn
/// into launches of their own (kiln-gpu-map-to-launch maps an op nested in a
/// loop with its loop, and a launch cannot nest in another).
llvm::SmallVector<mlir::linalg::LinalgOp>
topLevelLinalgOps(mlir::func::FuncOp func);

/// Sets `values[d]` for each loop `d` of `dims` from `linear`, their
/// row-major linear index (the last loop fastest), given each loop's size
/// in `ranges`.
void delinearize(mlir::OpBuilder &b, mlir::Location loc, mlir::Value linear,
                 llvm::ArrayRef<unsigned> dims, llvm::ArrayRef<int64_t> ranges,
                 llvm::SmallVectorImpl<mlir::Value> &values);

} // namespace kiln::gpu

#endif // KILN_CODEGEN_GPU_BUFFERS_H
