//===- DuplicateDestinations.cpp - A destination for every writer ---------===//
//
// CSE merges equal tensor.empty ops, and equal fills of them: the zeros two
// Winograd stages accumulate into, the zero-padded inputs of two layers of
// one shape. Two ops then write into one tensor; One-Shot Bufferize can
// give only one of them the buffer and copies it, whole and on one thread,
// for the other. Making the producer again for each further use costs an
// empty tensor nothing and a fill no more than the copy's writes, on every
// thread. A reshape or a slice of such a producer is made again with it.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENDUPLICATEDESTINATIONS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// A linalg.fill on tensors whose destination is a tensor.empty.
bool isFillOfEmpty(Operation *op) {
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureTensorSemantics() &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// An scf.forall (a fill that kiln-cpu-parallelize put on threads) whose
/// destinations are tensor.empty ops and whose body only fills slices of
/// them.
bool isParallelFill(Operation *op) {
  auto forall = dyn_cast<scf::ForallOp>(op);
  if (!forall || !llvm::all_of(forall.getOutputs(), [](Value out) {
        return out.getDefiningOp<tensor::EmptyOp>();
      }))
    return false;
  bool fills = false;
  WalkResult result =
      forall.getBody()->walk<WalkOrder::PreOrder>([&](Operation *inner) {
        if (isa<linalg::FillOp>(inner)) {
          fills = true;
          return WalkResult::skip();
        }
        if (isa<tensor::ExtractSliceOp, tensor::ParallelInsertSliceOp,
                scf::InParallelOp, arith::ConstantOp, affine::AffineApplyOp,
                affine::AffineMinOp, affine::AffineMaxOp>(inner))
          return WalkResult::advance();
        return WalkResult::interrupt();
      });
  return fills && !result.wasInterrupted();
}

/// An op that makes a destination anew (an empty tensor or a fill of one),
/// or a view of one (a reshape or a slice, which CSE merges as well).
bool isDuplicable(Operation *op) {
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
          tensor::ExtractSliceOp>(op)) {
    Operation *source = op->getOperand(0).getDefiningOp();
    return source && source->getNumResults() == 1 && isDuplicable(source);
  }
  return isa<tensor::EmptyOp>(op) || isFillOfEmpty(op) || isParallelFill(op);
}

/// The subset a slice takes out of, or inserts into, its tensor.
struct Subset {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  bool operator==(const Subset &other) const {
    return offsets == other.offsets && sizes == other.sizes &&
           strides == other.strides;
  }
  bool operator!=(const Subset &other) const { return !(*this == other); }
};

template <typename SliceOp> Subset subsetOf(SliceOp op) {
  return {op.getMixedOffsets(), op.getMixedSizes(), op.getMixedStrides()};
}

/// Gives each group of uses of `op`'s single result after the first a clone
/// of `op`, made just before the group's first user (its ancestor in `op`'s
/// block) so that the clone's buffer lives no longer than the original's
/// would have. Slices taken out of the result (where ops write) and tensors
/// inserted into it form one group as long as their subsets differ: the
/// parts of one tensor, each written by its own op. A subset taken again
/// starts a new group (a second layer writing the same padded interior),
/// and an insertion joins the group whose slice of that subset it puts
/// back, since both must see one buffer for the write to be in place. Every
/// other use is a group of its own.
void duplicate(Operation *op) {
  Value result = op->getResult(0);
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : result.getUses())
    uses.push_back(&use);
  if (uses.size() < 2)
    return;
  Block *block = op->getBlock();
  auto ancestor = [&](OpOperand *use) {
    return block->findAncestorOpInBlock(*use->getOwner());
  };
  // Uses in program order: the first group keeps the original.
  llvm::sort(uses, [&](OpOperand *a, OpOperand *b) {
    Operation *x = ancestor(a), *y = ancestor(b);
    if (x != y)
      return x->isBeforeInBlock(y);
    return a->getOwner() == b->getOwner()
               ? a->getOperandNumber() < b->getOperandNumber()
               : a->getOwner()->isBeforeInBlock(b->getOwner());
  });
  SmallVector<SmallVector<OpOperand *>> groups;
  // The group of slices being gathered: its index and the subsets it has
  // taken or filled; and the slices taken and not yet put back.
  std::optional<size_t> sliceGroup;
  SmallVector<Subset> used;
  SmallVector<std::pair<Subset, size_t>> open;
  auto joinSliceGroup = [&](OpOperand *use, const Subset &subset) {
    if (!sliceGroup || llvm::is_contained(used, subset)) {
      sliceGroup = groups.size();
      groups.emplace_back();
      used.clear();
    }
    groups[*sliceGroup].push_back(use);
    used.push_back(subset);
  };
  for (OpOperand *use : uses) {
    if (auto extract = dyn_cast<tensor::ExtractSliceOp>(use->getOwner())) {
      Subset subset = subsetOf(extract);
      joinSliceGroup(use, subset);
      open.emplace_back(subset, *sliceGroup);
      continue;
    }
    auto insert = dyn_cast<tensor::InsertSliceOp>(use->getOwner());
    if (insert && use == &insert.getDestMutable()) {
      Subset subset = subsetOf(insert);
      auto match = llvm::find_if(llvm::reverse(open), [&](auto &entry) {
        return entry.first == subset;
      });
      if (match != open.rend()) {
        groups[match->second].push_back(use);
        open.erase(std::next(match).base());
      } else {
        joinSliceGroup(use, subset);
      }
      continue;
    }
    groups.push_back({use});
  }
  OpBuilder builder(op->getContext());
  for (ArrayRef<OpOperand *> group : llvm::drop_begin(groups)) {
    builder.setInsertionPoint(ancestor(group.front()));
    Value clone = builder.clone(*op)->getResult(0);
    for (OpOperand *use : group)
      use->set(clone);
  }
}

/// The op that made the tensor `value` was written into in place: the
/// first along the destinations of insertions, of destination-style ops and
/// of scf.forall that is none of them (a tensor.empty, an extract_slice),
/// or null.
Operation *originOf(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    if (auto forall = dyn_cast<scf::ForallOp>(result.getOwner()))
      value = forall.getTiedOpOperand(result)->get();
    else if (auto dps =
                 dyn_cast<DestinationStyleOpInterface>(result.getOwner()))
      value = dps.getTiedOpOperand(result)->get();
    else
      return result.getOwner();
  }
  return nullptr;
}

/// The empty tensor that `value` was written into, or null.
tensor::EmptyOp writtenInto(Value value) {
  return dyn_cast_or_null<tensor::EmptyOp>(originOf(value));
}

/// A value written in place into a slice of a tensor and inserted back into
/// it (a padded tensor's interior, kiln-codegen-pad-in-place) that ops read
/// after the insertion: canonicalization folds a slice of the inserted
/// tensor at that subset (a depthwise convolution's centre window) to the
/// value itself, and bufferization then copies the value out of the
/// interior, since the insertion writes where it lies. Those readers read
/// the slice of the inserted tensor again. The value may have been written
/// in parts (a convolution split at its last channel block: insertions
/// into the slice).
void readWhereInserted(func::FuncOp func) {
  func.walk([](tensor::InsertSliceOp insert) {
    auto result = dyn_cast<OpResult>(insert.getSource());
    auto slice =
        result ? dyn_cast_or_null<tensor::ExtractSliceOp>(originOf(result))
               : nullptr;
    if (!slice || slice.getSource() != insert.getDest() ||
        subsetOf(slice) != subsetOf(insert))
      return;
    Block *block = insert->getBlock();
    SmallVector<OpOperand *> later;
    for (OpOperand &use : result.getUses()) {
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      if (user && user != insert && insert->isBeforeInBlock(user))
        later.push_back(&use);
    }
    if (later.empty())
      return;
    OpBuilder builder(insert->getContext());
    builder.setInsertionPointAfter(insert);
    Value view = tensor::ExtractSliceOp::create(
        builder, insert.getLoc(), cast<RankedTensorType>(result.getType()),
        insert.getResult(), insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    for (OpOperand *use : later)
      use->set(view);
  });
}

/// The first op of `block` that uses `op`'s results (or holds a use), null
/// when there is none.
Operation *firstUserIn(Block &block, Operation *op) {
  Operation *first = nullptr;
  for (Operation *user : op->getUsers()) {
    Operation *at = block.findAncestorOpInBlock(*user);
    if (at && (!first || at->isBeforeInBlock(first)))
      first = at;
  }
  return first;
}

/// Whether two static subsets of one tensor share no element: along some
/// dimension, the ranges they span do not overlap.
bool disjoint(tensor::InsertSliceOp a, tensor::InsertSliceOp b) {
  for (auto [offsetA, sizeA, strideA, offsetB, sizeB, strideB] : llvm::zip(
           a.getStaticOffsets(), a.getStaticSizes(), a.getStaticStrides(),
           b.getStaticOffsets(), b.getStaticSizes(), b.getStaticStrides())) {
    int64_t endA = offsetA + (sizeA - 1) * strideA;
    int64_t endB = offsetB + (sizeB - 1) * strideB;
    if (sizeA == 0 || sizeB == 0 || endA < offsetB || endB < offsetA)
      return true;
  }
  return false;
}

/// A value inserted into a larger tensor, and the empty tensor it was
/// written into; `first` and `last` bound the ops that write it (their
/// ancestors in the function's block).
struct Part {
  tensor::InsertSliceOp insert;
  tensor::EmptyOp empty;
  Operation *first = nullptr, *last = nullptr;
};

/// The parts inserted one after another into the empty tensor `head`
/// inserts into (a concatenation), if each was written into an empty
/// tensor of its own, at a static subset disjoint from the others', and no
/// two parts' writers interleave; sorted by where their writers start.
/// `chain` gets the insertions in the order they are made.
std::optional<SmallVector<Part>>
partsOf(tensor::InsertSliceOp head, Block &entry,
        SmallVectorImpl<tensor::InsertSliceOp> &chain) {
  SmallVector<Part> parts;
  for (tensor::InsertSliceOp insert = head; insert;) {
    if (!insert.hasPureTensorSemantics() || !insert.getOffsets().empty() ||
        !insert.getSizes().empty() || !insert.getStrides().empty() ||
        insert->getBlock() != &entry)
      return std::nullopt;
    Part part{insert, writtenInto(insert.getSource())};
    Operation *writer = insert.getSource().getDefiningOp();
    if (!part.empty || part.empty->getBlock() != &entry ||
        part.empty->getNumOperands() != 0 || !writer ||
        writer->getBlock() != &entry)
      return std::nullopt;
    part.last = writer;
    part.first = firstUserIn(entry, part.empty);
    for (const Part &other : parts)
      if (other.empty == part.empty || !disjoint(other.insert, insert))
        return std::nullopt;
    parts.push_back(part);
    chain.push_back(insert);
    Value result = insert.getResult();
    insert = result.hasOneUse()
                 ? dyn_cast<tensor::InsertSliceOp>(*result.user_begin())
                 : nullptr;
    if (insert && insert.getDest() != result)
      insert = nullptr;
  }
  llvm::sort(parts, [](const Part &a, const Part &b) {
    return a.first->isBeforeInBlock(b.first);
  });
  for (auto [before, after] : llvm::zip(parts, llvm::drop_begin(parts)))
    if (!before.last->isBeforeInBlock(after.first))
      return std::nullopt;
  return parts;
}

/// Makes the empty tensors of the parts inserted into a larger one (the
/// inputs of a concatenation) slices of it, so that the parts' writers
/// write in place. Upstream's empty-tensor elimination does so only where
/// the larger tensor is made before the parts (a concatenation's
/// destination comes after its inputs), and only for the use on a part's
/// chain of destinations (not for a split layer's slices of its empty
/// tensor); and it takes every part's slice of the tensor the parts are
/// inserted into, which One-Shot Bufferize reads as a conflict with the
/// insertions before (a slice read after the tensor was written, though
/// elsewhere). The parts were then computed apart and copied in: a strided
/// copy, on one thread, where the batch is above 1. Here the larger
/// tensor's empty tensor moves before the first part's first writer (it
/// has no operands and allocates nothing before bufferization, and
/// bufferization allocates where it stands), and each part, in the order
/// its writers run, takes its slice of what the parts before it made and is
/// inserted right after its last writer. Parts that do not qualify are
/// left alone; an empty tensor's contents are undefined, so any tensor of
/// its type may stand in for it.
void placeInDestinations(func::FuncOp func) {
  if (func.isExternal())
    return;
  Block &entry = func.getBody().front();
  // Inner concatenations first: their results are parts of outer ones.
  SmallVector<tensor::InsertSliceOp> heads;
  for (auto insert : entry.getOps<tensor::InsertSliceOp>()) {
    auto whole = insert.getDest().getDefiningOp<tensor::EmptyOp>();
    if (whole && whole->getBlock() == &entry && whole->hasOneUse() &&
        whole->getNumOperands() == 0)
      heads.push_back(insert);
  }
  OpBuilder builder(func.getContext());
  for (tensor::InsertSliceOp head : heads) {
    SmallVector<tensor::InsertSliceOp> chain;
    std::optional<SmallVector<Part>> parts = partsOf(head, entry, chain);
    if (!parts)
      continue;
    Value whole = head.getDest();
    whole.getDefiningOp()->moveBefore(parts->front().first);
    for (Part &part : *parts) {
      builder.setInsertionPoint(part.first);
      Value slice = tensor::ExtractSliceOp::create(
          builder, part.empty.getLoc(), part.empty.getType(), whole,
          part.insert.getMixedOffsets(), part.insert.getMixedSizes(),
          part.insert.getMixedStrides());
      part.empty.replaceAllUsesWith(slice);
      part.empty.erase();
      builder.setInsertionPointAfter(part.last);
      whole = tensor::InsertSliceOp::create(
          builder, part.insert.getLoc(), part.insert.getSource(), whole,
          part.insert.getMixedOffsets(), part.insert.getMixedSizes(),
          part.insert.getMixedStrides());
    }
    chain.back().getResult().replaceAllUsesWith(whole);
    for (tensor::InsertSliceOp insert : llvm::reverse(chain))
      insert.erase();
  }
}

struct CodegenDuplicateDestinationsPass
    : impl::CodegenDuplicateDestinationsBase<CodegenDuplicateDestinationsPass> {
  void runOnOperation() override {
    readWhereInserted(getOperation());
    // Users before producers: a fill made again is one more use of its
    // empty tensor (a reshape made again, of its source), which comes
    // earlier in the block.
    getOperation().walk([](Block *block) {
      SmallVector<Operation *> ops = llvm::map_to_vector(
          llvm::reverse(*block), [](Operation &op) { return &op; });
      for (Operation *op : ops)
        if (op->getNumResults() == 1 && isDuplicable(op))
          duplicate(op);
    });
    placeInDestinations(getOperation());
  }
};

} // namespace
} // namespace kiln::codegen
