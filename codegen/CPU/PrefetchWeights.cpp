//===- PrefetchWeights.cpp - Weights fetched ahead of their reads --------===//
//
// A contraction's tile reads its weights as one stream: a panel (laid out
// by kiln-cpu-pack-weights) or a convolution's filter block, a cache line
// or more a step (128 bytes on AVX-512, for 16 FMAs or dot products: eight
// cycles). The first tile to read a panel finds none of it in cache, and
// the hardware prefetcher, which follows a stream within a page, does not
// run far enough ahead of it: the steps then wait on memory. This pass asks
// for the weights `distance` bytes further along the same stream at every
// such read (past a panel's end, the next panel's start, which the next
// tiles read), clamped to the weight's last element.
//
//===----------------------------------------------------------------------===//

#include "codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::cpu {
#define GEN_PASS_DEF_CPUPREFETCHWEIGHTS
#include "codegen/CPU/Passes.h.inc"
} // namespace kiln::cpu

using namespace mlir;

namespace kiln::cpu {
namespace {

/// The memref that `view` is a view of, through subviews and reshapes: a
/// constant global with the identity layout, or null.
memref::GetGlobalOp constantRoot(Value view) {
  while (Operation *def = view.getDefiningOp()) {
    if (auto global = dyn_cast<memref::GetGlobalOp>(def)) {
      MemRefType type = global.getType();
      return type.hasStaticShape() && type.getLayout().isIdentity() ? global
                                                                    : nullptr;
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike)
      return nullptr;
    view = viewLike.getViewSource();
  }
  return nullptr;
}

struct CPUPrefetchWeightsPass
    : impl::CPUPrefetchWeightsBase<CPUPrefetchWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (distance <= 0)
      return;
    // The reads of a cache line or more, inside a loop, from a constant
    // larger than `minBytes` (weights that stay in L1 and L2 need no help).
    SmallVector<std::pair<vector::TransferReadOp, memref::GetGlobalOp>> reads;
    getOperation().walk([&](vector::TransferReadOp read) {
      VectorType type = read.getVectorType();
      if (!isa<MemRefType>(read.getBase().getType()) ||
          !read->getParentOfType<scf::ForOp>() ||
          type.getNumElements() * type.getElementTypeBitWidth() < 512)
        return;
      memref::GetGlobalOp root = constantRoot(read.getBase());
      if (!root)
        return;
      MemRefType rootType = root.getType();
      if (rootType.getNumElements() *
              llvm::divideCeil(rootType.getElementTypeBitWidth(), 8) >
          minBytes)
        reads.emplace_back(read, root);
    });
    for (auto [read, root] : reads) {
      MemRefType rootType = root.getType();
      int64_t elementBytes =
          llvm::divideCeil(rootType.getElementTypeBitWidth(), 8);
      OpBuilder b(read);
      Location loc = read.getLoc();
      // The read's position in the weight: its view's offset plus its
      // indices along the view's strides, in elements.
      auto metadata =
          memref::ExtractStridedMetadataOp::create(b, loc, read.getBase());
      Value position = metadata.getOffset();
      for (auto [index, stride] :
           llvm::zip(read.getIndices(), metadata.getStrides()))
        position = arith::AddIOp::create(
            b, loc, position, arith::MulIOp::create(b, loc, index, stride));
      Value ahead = arith::AddIOp::create(
          b, loc, position,
          arith::ConstantIndexOp::create(b, loc, distance / elementBytes));
      Value target =
          arith::MinUIOp::create(b, loc, ahead,
                                 arith::ConstantIndexOp::create(
                                     b, loc, rootType.getNumElements() - 1));
      // The weight as one dimension, to index it by position.
      b.setInsertionPointAfter(root);
      Value flat = root.getResult();
      if (rootType.getRank() != 1) {
        ReassociationIndices all;
        for (int64_t i = 0; i < rootType.getRank(); ++i)
          all.push_back(i);
        flat = memref::CollapseShapeOp::create(
            b, loc, flat, SmallVector<ReassociationIndices>{all});
      }
      b.setInsertionPoint(read);
      memref::PrefetchOp::create(b, loc, flat, ValueRange{target},
                                 /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
  }
};

} // namespace
} // namespace kiln::cpu
