//===- TileContractions.cpp - Matmuls through shared memory ---------------===//
//
// Stage 2 of the GPU target (docs/gpu.md) for contractions: a matmul, a
// batch matmul, Gemm, or a convolution that kiln-codegen-conv-to-im2col made
// one, becomes a gpu.launch of its own in which each block of 256 threads
// computes a TM x TN tile of the output. The operands' tiles go through
// shared memory TK steps of the reduction at a time; each thread keeps an
// R x R block of accumulators in registers, reads R values of each operand
// per step from shared memory (four at a time: its rows and columns come in
// runs of four) and does R*R fused multiply-adds. Global loads take four
// neighbouring elements at a time where the operand allows. The next
// step's tiles are loaded from global memory into registers while the
// current one is computed (double buffering through registers). When the
// output has too few tiles to fill the GPU, the reduction is split across
// blocks, which add their partial sums into the output atomically. With
// implicit-gemm, a convolution's im2col matrix (and its padding) is not
// materialised: the tile loads read the convolution's input where the
// copies would have.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Buffers.h"
#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUTILECONTRACTIONS
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

constexpr int64_t kThreads = 256; // a 16 x 16 grid of threads per block
constexpr int64_t kSide = 16;
constexpr int64_t kRun = 4; // elements of one 16-byte vector load

/// The shape of one kernel: R x R accumulators per thread, so a block
/// computes a (16 R) x (16 R) tile, TK reduction steps per shared tile, and
/// the reduction split over `splits` blocks of `chunk` steps each.
struct Config {
  int64_t r, tm, tn, tk;
  int64_t splits = 1, chunk = 0;
};

/// A contraction's loops by role, each role's loops with their sizes
/// (several loops of one role are linearised, the last fastest).
struct Roles {
  SmallVector<unsigned> batch, m, n, k;
  SmallVector<int64_t> ranges;

  int64_t size(ArrayRef<unsigned> dims) const {
    int64_t product = 1;
    for (unsigned d : dims)
      product *= ranges[d];
    return product;
  }
};

struct Builder {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, c(y));
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }

  void delinearize(Value linear, ArrayRef<unsigned> dims,
                   ArrayRef<int64_t> ranges, SmallVectorImpl<Value> &values) {
    kiln::gpu::delinearize(b, loc, linear, dims, ranges, values);
  }

  /// The row-major position of `indices` in a buffer of `shape`.
  Value linearize(ArrayRef<int64_t> shape, ArrayRef<Value> indices) {
    Value linear = indices.front();
    for (size_t d = 1; d < indices.size(); ++d)
      linear = add(mul(linear, c(shape[d])), indices[d]);
    return linear;
  }

  /// The indices of row-major position `linear` in a buffer of `shape`.
  SmallVector<Value> delinearize(ArrayRef<int64_t> shape, Value linear) {
    auto all = llvm::to_vector(llvm::seq<unsigned>(0, shape.size()));
    SmallVector<Value> values(shape.size());
    delinearize(linear, all, shape, values);
    return values;
  }

  /// The value the elementwise `op` computes for the element at row-major
  /// position `linear` of its output, `given` standing for the operand
  /// `operand` (null: all read from memory); `ivs` gets its loop indices.
  Value evaluate(linalg::LinalgOp op, Value linear, OpOperand *operand,
                 Value given, SmallVectorImpl<Value> &ivs) {
    SmallVector<Value> loops = delinearize(op.getStaticLoopRanges(), linear);
    ivs.assign(loops.begin(), loops.end());
    IRMapping mapping;
    Block *body = op.getBlock();
    for (OpOperand *input : op.getDpsInputOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(input);
      if (input == operand) {
        mapping.map(arg, given);
        continue;
      }
      if (!isa<MemRefType>(input->get().getType())) {
        mapping.map(arg, input->get());
        continue;
      }
      SmallVector<Value> indices;
      for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
        indices.push_back(isa<AffineDimExpr>(e)
                              ? ivs[cast<AffineDimExpr>(e).getPosition()]
                              : c(cast<AffineConstantExpr>(e).getValue()));
      mapping.map(arg, memref::LoadOp::create(b, loc, input->get(), indices));
    }
    for (Operation &nested : body->without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(nested))
        mapping.map(index.getResult(), ivs[index.getDim()]);
      else
        b.clone(nested, mapping);
    }
    return mapping.lookupOrDefault(body->getTerminator()->getOperand(0));
  }
};

/// The tile shape and split for a contraction of `tiles`-many R=8 tiles.
Config chooseConfig(int64_t batch, int64_t m, int64_t n, int64_t k,
                    int64_t processors) {
  auto tilesOf = [&](int64_t tm, int64_t tn) -> int64_t {
    return batch * int64_t(llvm::divideCeil(m, tm) * llvm::divideCeil(n, tn));
  };
  // Large outputs take 8 x 8 per thread (half the shared-memory reads per
  // multiply-add) when that still gives every processor a block.
  Config config = tilesOf(128, 128) >= processors ? Config{8, 128, 128, 8}
                                                  : Config{4, 64, 64, 16};
  int64_t tiles = tilesOf(config.tm, config.tn);
  config.chunk = llvm::alignTo(k, config.tk);
  if (tiles < processors && k >= 512) {
    int64_t splits =
        std::min<int64_t>(llvm::divideCeil(2 * processors, tiles), k / 256);
    config.chunk = llvm::alignTo(llvm::divideCeil(k, splits), config.tk);
  }
  config.splits = llvm::divideCeil(k, config.chunk);
  return config;
}

/// The buffer that `value` reshapes (through collapse and expand), whose
/// elements it shares in the same row-major order.
Value reshapeBase(Value value) {
  while (true) {
    if (auto c = value.getDefiningOp<memref::CollapseShapeOp>())
      value = c.getSrc();
    else if (auto e = value.getDefiningOp<memref::ExpandShapeOp>())
      value = e.getSrc();
    else
      return value;
  }
}

bool rowMajor(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

/// Whether an operand's tile may be read in runs of four neighbours along
/// the loop `last` of its contiguous dimension, the fastest of the loops
/// `role` linearises: each run then starts at a multiple of 4 of that
/// loop's index and lies within it, wholly inside the operand or wholly
/// outside (its size, and so the role's, is a multiple of 4), and the
/// run's four elements are neighbours at an offset a multiple of 4 from
/// the buffer's start (every other stride a multiple of 4).
bool runsOf(Value operand, unsigned last, ArrayRef<unsigned> role,
            ArrayRef<int64_t> ranges) {
  auto type = dyn_cast<MemRefType>(operand.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type || role.empty() || role.back() != last ||
      ranges[last] % kRun != 0 ||
      failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return false;
  return llvm::all_of(ArrayRef(strides).drop_back(), [](int64_t s) {
    return !ShapedType::isDynamic(s) && s % kRun == 0;
  });
}

/// Whether `buffer`'s first element lies on a 16-byte boundary, at run
/// time.
Value alignedTo16(Builder &ib, Value buffer) {
  auto meta = memref::ExtractStridedMetadataOp::create(ib.b, ib.loc, buffer);
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(ib.b, ib.loc, buffer);
  Value bytes = ib.add(base, ib.mul(meta.getOffset(), ib.c(4)));
  return arith::CmpIOp::create(ib.b, ib.loc, arith::CmpIPredicate::eq,
                               ib.rem(bytes, 16), ib.c(0));
}

/// The run of four f32 elements of `buffer` from `indices` along its last
/// dimension: one 16-byte load where `aligned`, else four.
Value loadRun(Builder &ib, VectorType run, Value buffer,
              ArrayRef<Value> indices, Value aligned) {
  OpBuilder &b = ib.b;
  auto choice = scf::IfOp::create(b, ib.loc, TypeRange{run}, aligned, true);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(&choice.getThenRegion().front());
  scf::YieldOp::create(
      b, ib.loc,
      Value(vector::LoadOp::create(b, ib.loc, run, buffer, indices,
                                   /*nontemporal=*/false, llvm::Align(16))));
  b.setInsertionPointToStart(&choice.getElseRegion().front());
  SmallVector<Value> elements;
  SmallVector<Value> at(indices);
  for (int64_t q = 0; q < kRun; ++q) {
    at.back() = ib.add(indices.back(), ib.c(q));
    elements.push_back(memref::LoadOp::create(b, ib.loc, buffer, at));
  }
  scf::YieldOp::create(
      b, ib.loc,
      Value(vector::FromElementsOp::create(b, ib.loc, run, elements)));
  return choice.getResult(0);
}

bool anyOverlaps(ArrayRef<Value> values, const Extent &extent) {
  return llvm::any_of(values,
                      [&](Value v) { return extentOf(v).overlaps(extent); });
}

/// An elementwise op that can be evaluated one element at a time inside
/// the contraction's kernel: all loops parallel, its output row-major under
/// the identity map, static, and its output's old value unused.
bool isElementwise(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 || op->getNumRegions() != 1)
    return false;
  OpOperand *init = op.getDpsInitOperand(0);
  if (!rowMajor(init->get()) || !op.getMatchingIndexingMap(init).isIdentity() ||
      !op.getMatchingBlockArgument(init).use_empty())
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    if (!isa<MemRefType>(input->get().getType()))
      continue;
    for (AffineExpr e : op.getMatchingIndexingMap(input).getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(e))
        return false;
  }
  return llvm::none_of(op.getStaticLoopRanges(),
                       [](int64_t r) { return ShapedType::isDynamic(r); });
}

/// The number of elements of a memref.
int64_t elementsOf(Value value) {
  return cast<MemRefType>(value.getType()).getNumElements();
}

/// Whether [begin, end) lies within the union of `intervals`.
bool covered(SmallVector<std::pair<int64_t, int64_t>> intervals, int64_t begin,
             int64_t end) {
  llvm::sort(intervals);
  for (auto [b, e] : intervals) {
    if (b > begin)
      return false;
    begin = std::max(begin, e);
    if (begin >= end)
      return true;
  }
  return begin >= end;
}

/// Whether an op after `op` may read what `buffer` holds then: a read of
/// its bytes before later ops have written all of those bytes (each write
/// counted only where a linalg op writes a whole view, every element), or
/// the end, where the workspace (the entry's unnamed argument) and
/// allocations die and a model output lives on.
bool readLater(Operation *op, Value buffer) {
  Extent extent = extentOf(buffer);
  SmallVector<std::pair<int64_t, int64_t>> written;
  for (Operation *later = op->getNextNode(); later;
       later = later->getNextNode()) {
    SmallVector<Value> reads, writes;
    if (!effectsOf(later, reads, writes))
      return true;
    for (Value read : reads) {
      Extent e = extentOf(read);
      if (e.overlaps(extent) &&
          !covered(written, std::max(e.begin, extent.begin),
                   std::min(e.end, extent.end)))
        return true;
    }
    if (auto writer = dyn_cast<linalg::LinalgOp>(later))
      for (OpOperand &init : writer.getDpsInitsMutable()) {
        Value value = init.get();
        Extent e = extentOf(value);
        if (e.root != extent.root || !rowMajor(value) ||
            value.getDefiningOp<memref::SubViewOp>() ||
            !writer.getMatchingIndexingMap(&init).isProjectedPermutation() ||
            e.end - e.begin !=
                elementsOf(value) *
                    llvm::divideCeil(
                        getElementTypeOrSelf(value).getIntOrFloatBitWidth(), 8))
          continue;
        written.emplace_back(e.begin, e.end);
      }
    if (covered(written, extent.begin, extent.end))
      return false;
  }
  auto arg = dyn_cast<BlockArgument>(extent.root);
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
  return arg &&
         (!func || func.getArgAttr(arg.getArgNumber(), "kiln.name") != nullptr);
}

/// Whether `block` only yields its first argument (a copy's body).
bool copiesFirstArgument(Block *block) {
  auto yield = block->getTerminator();
  return &block->front() == yield && yield->getNumOperands() == 1 &&
         yield->getOperand(0) == block->getArgument(0);
}

/// An operand of a contraction that a copy fills just before it, as
/// kiln-codegen-conv-to-im2col fills the matrix a convolution reads: the
/// kernel reads each element where the copy would have, and the copy goes.
/// Where the buffer the copy reads is made just before it for the copy
/// alone (the convolution's padding), the kernel computes the element
/// instead, and what made the buffer goes too: either a fill with one value
/// and then a copy of the convolution's input into it at an offset, or one
/// elementwise op (a Pad with its own value).
struct Gather {
  linalg::GenericOp copy;
  Value padded; // what `copy` reads
  Value base;   // the buffer `padded` reshapes, where it is made
  // A fill of `base` with `padValue`, then `input` copied in at `offsets`.
  Operation *fill = nullptr, *insert = nullptr;
  Value input, padValue;
  SmallVector<int64_t> offsets;
  // Or one elementwise op writing `base`.
  linalg::LinalgOp producer;

  SmallVector<Operation *> made() {
    SmallVector<Operation *> ops{copy};
    for (Operation *op : {fill, insert, producer.getOperation()})
      if (op)
        ops.push_back(op);
    return ops;
  }
};

struct GPUTileContractionsPass
    : impl::GPUTileContractionsBase<GPUTileContractionsPass> {
  using Base::Base;

  /// The ops of the list that rewrites erased (a fused producer or
  /// consumer is one of them): not to be visited.
  llvm::SmallPtrSet<Operation *, 8> erased;

  void runOnOperation() override {
    erased.clear();
    for (linalg::LinalgOp op : topLevelLinalgOps(getOperation())) {
      if (erased.contains(op))
        continue;
      std::optional<Roles> roles = match(op);
      if (!roles)
        continue;
      rewrite(op, *roles);
    }
  }

  /// The roles of the loops of a contraction this pass tiles: f32 buffers
  /// of static shape, a multiply-add body, one output, and enough work.
  std::optional<Roles> match(linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
      return std::nullopt;
    for (OpOperand &operand : op->getOpOperands()) {
      auto type = dyn_cast<MemRefType>(operand.get().getType());
      if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
        return std::nullopt;
    }
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      return std::nullopt;
    Roles roles;
    roles.batch.assign(dims->batch.begin(), dims->batch.end());
    roles.m.assign(dims->m.begin(), dims->m.end());
    roles.n.assign(dims->n.begin(), dims->n.end());
    roles.k.assign(dims->k.begin(), dims->k.end());
    roles.ranges = op.getStaticLoopRanges();
    if (llvm::any_of(roles.ranges,
                     [](int64_t r) { return ShapedType::isDynamic(r); }))
      return std::nullopt;
    int64_t work = roles.size(roles.batch) * roles.size(roles.m) *
                   roles.size(roles.n) * roles.size(roles.k);
    if (work < minWork || roles.size(roles.k) < 16)
      return std::nullopt;
    return roles;
  }

  /// The op that fills the contraction's output just before it (a bias
  /// broadcast, a fill), which the kernel's epilogue can compute in its
  /// place: elementwise over the same buffer, nothing in between touching
  /// that buffer or writing what the op reads.
  linalg::LinalgOp fusableProducer(linalg::LinalgOp op) {
    Value output = op.getDpsInitOperand(0)->get();
    Extent extent = extentOf(output);
    SmallVector<Value> writtenBetween;
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      SmallVector<Value> reads, writes;
      if (!effectsOf(prev, reads, writes))
        return {};
      if (reads.empty() && writes.empty())
        continue;
      auto candidate = dyn_cast<linalg::LinalgOp>(prev);
      if (candidate && isElementwise(candidate) &&
          reshapeBase(candidate.getDpsInitOperand(0)->get()) ==
              reshapeBase(output) &&
          elementsOf(candidate.getDpsInitOperand(0)->get()) ==
              elementsOf(output) &&
          !anyOverlaps(reads, extent)) {
        for (Value read : reads)
          if (anyOverlaps(writtenBetween, extentOf(read)))
            return {};
        return candidate;
      }
      if (anyOverlaps(reads, extent) || anyOverlaps(writes, extent))
        return {};
      writtenBetween.append(writes);
    }
    return {};
  }

  /// The elementwise op that reads the contraction's output next (an
  /// activation, a residual sum), which the epilogue can apply: the next op
  /// that touches memory, reading the output once, element for element,
  /// and writing nothing the contraction reads. `outputLive` says whether a
  /// later op (or the model's caller) reads the output too.
  linalg::LinalgOp fusableConsumer(linalg::LinalgOp op, OpOperand *&consumed,
                                   bool &outputLive) {
    Value output = op.getDpsInitOperand(0)->get();
    Extent extent = extentOf(output);
    Operation *next = op->getNextNode();
    SmallVector<Value> reads, writes;
    for (; next; next = next->getNextNode()) {
      reads.clear();
      writes.clear();
      if (!effectsOf(next, reads, writes))
        return {};
      if (!reads.empty() || !writes.empty())
        break;
    }
    auto consumer = dyn_cast_or_null<linalg::LinalgOp>(next);
    if (!consumer || !isElementwise(consumer))
      return {};
    consumed = nullptr;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      Value value = input->get();
      if (!isa<MemRefType>(value.getType()))
        continue;
      if (reshapeBase(value) == reshapeBase(output) && rowMajor(value) &&
          elementsOf(value) == elementsOf(output) &&
          consumer.getMatchingIndexingMap(input).isIdentity() && !consumed) {
        consumed = input;
        continue;
      }
      if (extentOf(value).overlaps(extent))
        return {};
    }
    Value result = consumer.getDpsInitOperand(0)->get();
    SmallVector<Value> contractionReads;
    for (OpOperand *input : op.getDpsInputOperands())
      contractionReads.push_back(input->get());
    if (!consumed || anyOverlaps(contractionReads, extentOf(result)))
      return {};
    outputLive = readLater(consumer, output);
    return consumer;
  }

  /// The op before `op` that last writes bytes of `extent`, or null when an
  /// op in between reads them, or may touch anything.
  Operation *lastWriter(Operation *op, const Extent &extent) {
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      SmallVector<Value> reads, writes;
      if (!effectsOf(prev, reads, writes) || anyOverlaps(reads, extent))
        return nullptr;
      if (anyOverlaps(writes, extent))
        return prev;
    }
    return nullptr;
  }

  /// The gather of `operand` (see Gather): a copy writes its whole buffer
  /// last before `op`, reading one row-major buffer through an affine map,
  /// and nothing after `op` reads what it wrote; what the kernel would read
  /// instead holds the same values until `launchPoint` and is not among
  /// `kernelWrites`.
  std::optional<Gather> gatherFor(linalg::LinalgOp op, OpOperand *operand,
                                  Operation *launchPoint,
                                  ArrayRef<Value> kernelWrites) {
    Value buffer = reshapeBase(operand->get());
    if (!rowMajor(buffer) || !rowMajor(operand->get()))
      return std::nullopt;
    auto copy =
        dyn_cast_or_null<linalg::GenericOp>(lastWriter(op, extentOf(buffer)));
    if (!copy || copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
        copy.getNumReductionLoops() != 0 ||
        !copiesFirstArgument(copy.getBody()))
      return std::nullopt;
    OpOperand *init = copy.getDpsInitOperand(0);
    OpOperand *input = copy.getDpsInputOperand(0);
    if (init->get() != buffer ||
        !copy.getMatchingIndexingMap(init).isIdentity() ||
        !rowMajor(input->get()) || readLater(op, buffer))
      return std::nullopt;
    Gather gather;
    gather.copy = copy;
    gather.padded = input->get();
    matchPadding(gather);
    // What the kernel reads keeps its values up to the launch.
    SmallVector<Value> reads, writes;
    Operation *from = copy;
    if (gather.producer) {
      if (!effectsOf(gather.producer, reads, writes))
        return std::nullopt;
      from = gather.producer;
    } else if (gather.insert) {
      reads.push_back(gather.input);
      from = gather.insert;
    } else {
      reads.push_back(gather.padded);
    }
    // (The copy and the contraction become the kernel: what they wrote is
    // not written.)
    for (Operation *o = from->getNextNode(); o && o != launchPoint;
         o = o->getNextNode()) {
      if (o == copy || o == op)
        continue;
      SmallVector<Value> laterReads, laterWrites;
      if (!effectsOf(o, laterReads, laterWrites))
        return std::nullopt;
      for (Value read : reads)
        if (anyOverlaps(laterWrites, extentOf(read)))
          return std::nullopt;
    }
    for (Value read : reads)
      if (anyOverlaps(kernelWrites, extentOf(read)))
        return std::nullopt;
    return gather;
  }

  /// Completes `gather` with what made the buffer its copy reads (see
  /// Gather), when only that copy reads it.
  void matchPadding(Gather &gather) {
    Value base = reshapeBase(gather.padded);
    if (!rowMajor(base) || elementsOf(base) != elementsOf(gather.padded) ||
        readLater(gather.copy, base))
      return;
    Extent extent = extentOf(base);
    Operation *writer = lastWriter(gather.copy, extent);
    if (auto producer = dyn_cast_or_null<linalg::LinalgOp>(writer);
        producer && isElementwise(producer) &&
        producer.getDpsInitOperand(0)->get() == base) {
      gather.producer = producer;
      gather.base = base;
      return;
    }
    Value input, target;
    if (auto copy = dyn_cast_or_null<linalg::CopyOp>(writer)) {
      input = copy.getInputs()[0];
      target = copy.getOutputs()[0];
    } else if (auto generic = dyn_cast_or_null<linalg::GenericOp>(writer);
               generic && generic.getNumDpsInputs() == 1 &&
               generic.getNumDpsInits() == 1 &&
               generic.getNumReductionLoops() == 0 &&
               llvm::all_of(generic.getIndexingMapsArray(),
                            [](AffineMap m) { return m.isIdentity(); }) &&
               copiesFirstArgument(generic.getBody())) {
      input = generic.getDpsInputOperand(0)->get();
      target = generic.getDpsInitOperand(0)->get();
    } else {
      return;
    }
    auto part = target.getDefiningOp<memref::SubViewOp>();
    if (!part || part.getSource() != base || !rowMajor(input) ||
        !part.hasUnitStride() ||
        part.getType().getRank() != part.getSourceType().getRank() ||
        ShapedType::isDynamicShape(part.getStaticOffsets()))
      return;
    Operation *fill = lastWriter(writer, extent);
    Value value;
    if (auto f = dyn_cast_or_null<linalg::FillOp>(fill);
        f && f.getOutputs()[0] == base)
      value = f.getInputs()[0];
    else if (auto map = dyn_cast_or_null<linalg::MapOp>(fill);
             map && map.getInputs().empty() && map.getInit() == base)
      value = map.getMapper().front().getTerminator()->getOperand(0);
    if (!value || !value.getDefiningOp<arith::ConstantOp>())
      return;
    gather.base = base;
    gather.fill = fill;
    gather.insert = writer;
    gather.input = input;
    gather.padValue = value;
    gather.offsets.assign(part.getStaticOffsets().begin(),
                          part.getStaticOffsets().end());
  }

  /// The element of a gathered operand at `indices` (of `operandValue`,
  /// which reshapes the copy's output): read where the copy reads it, or
  /// computed as what made that buffer would have.
  Value gatherLoad(Builder &ib, Gather &gather, Value operandValue,
                   ArrayRef<Value> indices) {
    OpBuilder &b = ib.b;
    Location loc = ib.loc;
    auto shapeOf = [](Value value) {
      return cast<MemRefType>(value.getType()).getShape();
    };
    auto linearize = [&](Value value, ArrayRef<Value> at) {
      return ib.linearize(shapeOf(value), at);
    };
    auto delinearize = [&](Value value, Value linear) {
      return ib.delinearize(shapeOf(value), linear);
    };
    // The copy's loop indices. Where the operand collapses the copy's
    // output, each of its indices splits over its own group of loops, so
    // that the part from the output's columns is the same at every
    // reduction step (and leaves the loop); else through the linear index.
    Value copied = gather.copy.getDpsInitOperand(0)->get();
    SmallVector<Value> ivs;
    auto collapse = operandValue.getDefiningOp<memref::CollapseShapeOp>();
    if (operandValue == copied) {
      ivs.assign(indices.begin(), indices.end());
    } else if (collapse && collapse.getSrc() == copied) {
      ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
      for (auto [index, group] :
           llvm::zip_equal(indices, collapse.getReassociationIndices())) {
        SmallVector<int64_t> sizes;
        for (int64_t d : group)
          sizes.push_back(shape[d]);
        ivs.append(ib.delinearize(sizes, index));
      }
    } else {
      ivs = delinearize(copied, linearize(operandValue, indices));
    }
    AffineMap map =
        gather.copy.getMatchingIndexingMap(gather.copy.getDpsInputOperand(0));
    SmallVector<Value> at = *affine::expandAffineMap(b, loc, map, ivs);
    if (!gather.base)
      return memref::LoadOp::create(b, loc, gather.padded, at);
    if (gather.producer) {
      SmallVector<Value> producerIvs;
      return ib.evaluate(gather.producer, linearize(gather.padded, at), nullptr,
                         {}, producerIvs);
    }
    if (gather.padded != gather.base)
      at = delinearize(gather.base, linearize(gather.padded, at));
    ArrayRef<int64_t> sizes =
        cast<MemRefType>(gather.input.getType()).getShape();
    ArrayRef<int64_t> padded =
        cast<MemRefType>(gather.base.getType()).getShape();
    Value inside;
    for (size_t d = 0; d < at.size(); ++d) {
      // A dimension the padding leaves alone needs no test.
      if (gather.offsets[d] == 0 && sizes[d] == padded[d])
        continue;
      at[d] = arith::SubIOp::create(b, loc, at[d], ib.c(gather.offsets[d]));
      Value within =
          ib.both(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                        at[d], ib.c(0)),
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        at[d], ib.c(sizes[d])));
      inside = inside ? ib.both(inside, within) : within;
    }
    if (!inside)
      return memref::LoadOp::create(b, loc, gather.input, at);
    Type type = getElementTypeOrSelf(gather.input.getType());
    auto guard = scf::IfOp::create(b, loc, TypeRange{type}, inside, true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    scf::YieldOp::create(
        b, loc, Value(memref::LoadOp::create(b, loc, gather.input, at)));
    b.setInsertionPointToStart(&guard.getElseRegion().front());
    scf::YieldOp::create(
        b, loc, b.clone(*gather.padValue.getDefiningOp())->getResult(0));
    return guard.getResult(0);
  }

  void rewrite(linalg::LinalgOp op, const Roles &roles) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Builder ib{b, loc};
    int64_t batch = roles.size(roles.batch), m = roles.size(roles.m),
            n = roles.size(roles.n), k = roles.size(roles.k);
    Config cfg = chooseConfig(batch, m, n, k, processors);
    Value output = op.getDpsInitOperand(0)->get();
    linalg::LinalgOp producer, consumer;
    OpOperand *consumed = nullptr;
    bool outputLive = true;
    if (cfg.splits == 1 && rowMajor(output)) {
      producer = fusableProducer(op);
      consumer = fusableConsumer(op, consumed, outputLive);
    }
    // With implicit-gemm, operands that a convolution's im2col copy fills:
    // read where the copy reads.
    SmallVector<Value> kernelWrites{output};
    if (consumer)
      kernelWrites.push_back(consumer.getDpsInitOperand(0)->get());
    llvm::SmallDenseMap<OpOperand *, Gather> gathers;
    Operation *launchPoint = consumer ? consumer.getOperation() : op;
    for (OpOperand *operand : op.getDpsInputOperands())
      if (implicitGemm)
        if (std::optional<Gather> gather =
                gatherFor(op, operand, launchPoint, kernelWrites))
          gathers[operand] = *gather;
    // With a consumer, the launch goes where the consumer is: only ops
    // without memory effects lie between them (its views, say), and the
    // launch uses what they define.
    if (consumer)
      b.setInsertionPoint(consumer);
    int64_t mTiles = llvm::divideCeil(m, cfg.tm),
            nTiles = llvm::divideCeil(n, cfg.tn);

    // Shared tiles, reduction step major, each row padded by four columns:
    // against bank conflicts when a thread column stores along the
    // reduction, while rows stay 16-byte aligned for vector reads.
    Type f32 = b.getF32Type();
    auto run = VectorType::get({kRun}, f32);
    auto space = mlir::gpu::AddressSpaceAttr::get(
        b.getContext(), mlir::gpu::AddressSpace::Workgroup);
    auto tileType = [&](int64_t width) -> Type {
      return MemRefType::get({cfg.tk, width + kRun}, f32,
                             MemRefLayoutAttrInterface(), space);
    };
    Value one = ib.c(1);
    auto launch = mlir::gpu::LaunchOp::create(
        b, loc, ib.c(nTiles), ib.c(mTiles), ib.c(batch * cfg.splits),
        ib.c(kThreads), one, one, /*dynamicSharedMemorySize=*/nullptr,
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
        TypeRange{tileType(cfg.tm), tileType(cfg.tn)});
    SmallVector<Location> locs{op.getLoc()};
    int64_t flops = 2 * batch * m * n * k;
    for (linalg::LinalgOp fused : {producer, consumer})
      if (fused) {
        locs.push_back(fused.getLoc());
        flops += int64_t(countFlops(fused).value_or(0));
      }
    for (auto &[operand, gather] : gathers)
      locs.push_back(gather.copy.getLoc());
    launch->setAttr(kKernelAttr,
                    KernelAttr::get(b.getContext(), flops,
                                    sourceNodes(b.getFusedLoc(locs))));
    Value sharedA = launch.getWorkgroupAttributions()[0];
    Value sharedB = launch.getWorkgroupAttributions()[1];

    Block &body = launch.getBody().front();
    b.setInsertionPointToStart(&body);
    mlir::gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&body);

    Value tid = launch.getThreadIds().x;
    Value tx = ib.rem(tid, kSide), ty = ib.div(tid, kSide);
    Value z = launch.getBlockIds().z;
    Value batchIndex = ib.div(z, cfg.splits), split = ib.rem(z, cfg.splits);
    Value m0 = ib.mul(launch.getBlockIds().y, ib.c(cfg.tm));
    Value n0 = ib.mul(launch.getBlockIds().x, ib.c(cfg.tn));
    Value kBegin = ib.mul(split, ib.c(cfg.chunk));
    Value kEnd = arith::MinUIOp::create(b, loc, ib.add(kBegin, ib.c(cfg.chunk)),
                                        ib.c(k));
    Value mSize = ib.c(m), nSize = ib.c(n);

    // The i-th of the R rows (of A's tile, by ty) or columns (of B's, by
    // tx) that thread `t` of 16 computes: runs of four, one per 64 (thread
    // t takes 4t .. 4t+3 of each), so that it reads each run from shared
    // memory with one vector load.
    auto owned = [&](Value t, int64_t i) {
      return ib.add(ib.mul(t, ib.c(kRun)),
                    ib.c(i / kRun * kSide * kRun + i % kRun));
    };

    SmallVector<Value> loopValues(roles.ranges.size());
    if (!roles.batch.empty())
      ib.delinearize(batchIndex, roles.batch, roles.ranges, loopValues);

    // Operand `which` (0: the one with the m loops, 1: the n loops).
    OpOperand *operands[2] = {op.getDpsInputOperand(0),
                              op.getDpsInputOperand(1)};
    auto hasDim = [&](OpOperand *operand, ArrayRef<unsigned> dims) {
      AffineMap map = op.getMatchingIndexingMap(operand);
      return llvm::any_of(dims, [&](unsigned d) {
        return map.getResultPosition(b.getAffineDimExpr(d)).has_value();
      });
    };
    if (!hasDim(operands[0], roles.m))
      std::swap(operands[0], operands[1]);

    // How each operand's tile is read: along the reduction when that is the
    // operand's contiguous dimension, else along the output's, so that
    // neighbouring threads read neighbouring elements; and in runs of four
    // neighbours where the operand allows (see `runsOf`), each run one
    // 16-byte load when its address is aligned (`aligned`, known only at
    // run time: a device pointer from the caller may not be).
    struct Access {
      bool alongK = false, runs = false;
      Value aligned;
    };
    Access access[2];
    for (int which : {0, 1}) {
      OpOperand *operand = operands[which];
      AffineMap map = op.getMatchingIndexingMap(operand);
      unsigned last =
          cast<AffineDimExpr>(map.getResults().back()).getPosition();
      access[which].alongK = llvm::is_contained(roles.k, last);
      int64_t width = which == 0 ? cfg.tm : cfg.tn;
      access[which].runs = !gathers.contains(operand) &&
                           runsOf(operand->get(), last,
                                  access[which].alongK ? roles.k
                                  : which == 0         ? roles.m
                                                       : roles.n,
                                  roles.ranges) &&
                           cfg.tk * width % (kThreads * kRun) == 0;
      if (access[which].runs)
        access[which].aligned = alignedTo16(ib, operand->get());
    }

    // Where the `l`-th element (or run) of an operand's tile that this
    // thread loads lies in the tile: its reduction step and its place
    // along the output's dimension.
    auto placeOf = [&](int which, int64_t l) -> std::pair<Value, Value> {
      const Access &a = access[which];
      int64_t width = which == 0 ? cfg.tm : cfg.tn;
      int64_t step = a.runs ? kRun : 1;
      Value e = ib.add(tid, ib.c(l * kThreads));
      int64_t line = (a.alongK ? cfg.tk : width) / step;
      Value along = ib.mul(ib.rem(e, line), ib.c(step));
      Value across = ib.div(e, line);
      return a.alongK ? std::pair{along, across} : std::pair{across, along};
    };

    // The elements (or runs) of one operand's tile that this thread loads
    // at step `kt`: each 0 outside the operand.
    auto loadTile = [&](int which, Value kt) {
      const Access &a = access[which];
      OpOperand *operand = operands[which];
      ArrayRef<unsigned> outer = which == 0 ? roles.m : roles.n;
      int64_t width = which == 0 ? cfg.tm : cfg.tn;
      Value origin = which == 0 ? m0 : n0, bound = which == 0 ? mSize : nSize;
      AffineMap map = op.getMatchingIndexingMap(operand);
      Type type = a.runs ? Type(run) : f32;
      SmallVector<Value> values;
      int64_t count = cfg.tk * width / kThreads / (a.runs ? kRun : 1);
      for (int64_t l = 0; l < count; ++l) {
        auto [kk, ww] = placeOf(which, l);
        Value kIndex = ib.add(ib.add(kBegin, ib.mul(kt, ib.c(cfg.tk))), kk);
        Value wIndex = ib.add(origin, ww);
        // (A run lies wholly inside or wholly outside: see runsOf.)
        Value valid = ib.both(ib.lt(kIndex, kEnd), ib.lt(wIndex, bound));
        auto guard = scf::IfOp::create(b, loc, TypeRange{type}, valid, true);
        {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(&guard.getThenRegion().front());
          SmallVector<Value> at(loopValues);
          ib.delinearize(kIndex, roles.k, roles.ranges, at);
          ib.delinearize(wIndex, outer, roles.ranges, at);
          SmallVector<Value> indices;
          for (AffineExpr result : map.getResults())
            indices.push_back(at[cast<AffineDimExpr>(result).getPosition()]);
          Value v;
          if (a.runs) {
            v = loadRun(ib, run, operand->get(), indices, a.aligned);
          } else if (auto gather = gathers.find(operand);
                     gather != gathers.end()) {
            v = gatherLoad(ib, gather->second, operand->get(), indices);
          } else {
            v = memref::LoadOp::create(b, loc, operand->get(), indices);
          }
          scf::YieldOp::create(b, loc, v);
          b.setInsertionPointToStart(&guard.getElseRegion().front());
          scf::YieldOp::create(
              b, loc,
              Value(arith::ConstantOp::create(b, loc, b.getZeroAttr(type))));
        }
        values.push_back(guard.getResult(0));
      }
      return values;
    };
    auto storeTile = [&](int which, ValueRange values) {
      const Access &a = access[which];
      Value shared = which == 0 ? sharedA : sharedB;
      for (auto [l, value] : llvm::enumerate(values)) {
        auto [kk, ww] = placeOf(which, int64_t(l));
        if (!a.runs) {
          memref::StoreOp::create(b, loc, value, shared, ValueRange{kk, ww});
        } else if (!a.alongK) {
          vector::StoreOp::create(b, loc, value, shared, ValueRange{kk, ww},
                                  /*nontemporal=*/false, llvm::Align(16));
        } else {
          for (int64_t q = 0; q < kRun; ++q)
            memref::StoreOp::create(
                b, loc, vector::ExtractOp::create(b, loc, value, q), shared,
                ValueRange{ib.add(kk, ib.c(q)), ww});
        }
      }
    };

    // The reduction: tiles in shared memory, the next tile's elements
    // loaded into registers meanwhile, R x R accumulators.
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    int64_t numAcc = cfg.r * cfg.r;
    SmallVector<Value> inits(numAcc, zero);
    SmallVector<Value> firstA = loadTile(0, ib.c(0));
    SmallVector<Value> firstB = loadTile(1, ib.c(0));
    inits.append(firstA);
    inits.append(firstB);
    int64_t numA = firstA.size();
    Value steps = ib.c(llvm::divideCeil(cfg.chunk, cfg.tk));
    auto outerLoop = scf::ForOp::create(b, loc, ib.c(0), steps, one, inits);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(outerLoop.getBody());
      Value kt = outerLoop.getInductionVar();
      ValueRange carried = outerLoop.getRegionIterArgs();
      storeTile(0, carried.slice(numAcc, numA));
      storeTile(1, carried.drop_front(numAcc + numA));
      mlir::gpu::BarrierOp::create(b, loc);
      Value next = ib.add(kt, one);
      SmallVector<Value> nextA = loadTile(0, next);
      SmallVector<Value> nextB = loadTile(1, next);
      int64_t unroll = std::max<int64_t>(1, kSide / cfg.r);
      auto inner = scf::ForOp::create(b, loc, ib.c(0), ib.c(cfg.tk),
                                      ib.c(unroll), carried.take_front(numAcc));
      // The steps are unrolled here, `unroll` a time, and not again: ptxas
      // would unroll all of them and load every step's shared values
      // ahead (137 registers instead of 64 for a 4 x 4 block).
      auto noUnroll = LLVM::LoopAnnotationAttr::get(
          b.getContext(), {}, {}, {},
          LLVM::LoopUnrollAttr::get(b.getContext(), b.getBoolAttr(true), {}, {},
                                    {}, {}, {}, {}),
          {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
      inner->setAttr("loop_annotation", noUnroll);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(inner.getBody());
        SmallVector<Value> sums(inner.getRegionIterArgs());
        for (int64_t u = 0; u < unroll; ++u) {
          Value kk = ib.add(inner.getInductionVar(), ib.c(u));
          SmallVector<Value> as, bs;
          for (int64_t i = 0; i < cfg.r; i += kRun) {
            Value runA = vector::LoadOp::create(
                b, loc, run, sharedA, ValueRange{kk, owned(ty, i)},
                /*nontemporal=*/false, llvm::Align(16));
            Value runB = vector::LoadOp::create(
                b, loc, run, sharedB, ValueRange{kk, owned(tx, i)},
                /*nontemporal=*/false, llvm::Align(16));
            for (int64_t q = 0; q < kRun; ++q) {
              as.push_back(vector::ExtractOp::create(b, loc, runA, q));
              bs.push_back(vector::ExtractOp::create(b, loc, runB, q));
            }
          }
          for (int64_t i = 0; i < cfg.r; ++i)
            for (int64_t j = 0; j < cfg.r; ++j)
              sums[i * cfg.r + j] = math::FmaOp::create(b, loc, as[i], bs[j],
                                                        sums[i * cfg.r + j]);
        }
        scf::YieldOp::create(b, loc, sums);
      }
      mlir::gpu::BarrierOp::create(b, loc);
      SmallVector<Value> yielded(inner.getResults());
      yielded.append(nextA);
      yielded.append(nextB);
      scf::YieldOp::create(b, loc, yielded);
    }

    // Each accumulator into its output element: added to what the output
    // holds (its initial value), atomically when the reduction is split.
    // A thread's four neighbouring columns are stored with one 16-byte
    // store where they are neighbours in memory (see runsOf) and aligned.
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    ArrayRef<int64_t> outShape = cast<MemRefType>(output.getType()).getShape();
    Value result = consumer ? consumer.getDpsInitOperand(0)->get() : Value();
    bool runStores =
        cfg.splits == 1 &&
        runsOf(output,
               cast<AffineDimExpr>(outMap.getResults().back()).getPosition(),
               roles.n, roles.ranges) &&
        (!result ||
         (getElementTypeOrSelf(result).isF32() &&
          cast<MemRefType>(result.getType()).getShape().back() % kRun == 0));
    Value outputAligned, resultAligned;
    if (runStores && outputLive)
      outputAligned = alignedTo16(ib, output);
    if (runStores && result)
      resultAligned = alignedTo16(ib, result);
    // Stores the run of `values` at `indices` (one list per element).
    auto storeRun = [&](Value buffer, ArrayRef<SmallVector<Value>> indices,
                        ArrayRef<Value> values, Value aligned) {
      auto choice = scf::IfOp::create(b, loc, aligned, true);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      vector::StoreOp::create(
          b, loc, vector::FromElementsOp::create(b, loc, run, values), buffer,
          indices.front(), /*nontemporal=*/false, llvm::Align(16));
      b.setInsertionPointToStart(&choice.getElseRegion().front());
      for (auto [value, at] : llvm::zip_equal(values, indices))
        memref::StoreOp::create(b, loc, value, buffer, at);
    };
    int64_t perGuard = runStores ? kRun : 1;
    for (int64_t i = 0; i < cfg.r; ++i)
      for (int64_t j0 = 0; j0 < cfg.r; j0 += perGuard) {
        // (A run of columns lies wholly inside or wholly outside.)
        Value mIndex = ib.add(m0, owned(ty, i));
        Value nFirst = ib.add(n0, owned(tx, j0));
        auto guard = scf::IfOp::create(
            b, loc, ib.both(ib.lt(mIndex, mSize), ib.lt(nFirst, nSize)), false);
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&guard.getThenRegion().front());
        SmallVector<SmallVector<Value>> outputAt, resultAt;
        SmallVector<Value> values, results;
        // The first element's indices; a run's others differ from them in
        // the last index only (see runsOf).
        SmallVector<Value> at(loopValues);
        ib.delinearize(mIndex, roles.m, roles.ranges, at);
        ib.delinearize(nFirst, roles.n, roles.ranges, at);
        SmallVector<Value> first;
        for (AffineExpr e : outMap.getResults())
          first.push_back(at[cast<AffineDimExpr>(e).getPosition()]);
        for (int64_t j = j0; j < j0 + perGuard; ++j) {
          SmallVector<Value> indices(first);
          if (j != j0)
            indices.back() = ib.add(first.back(), ib.c(j - j0));
          Value acc = outerLoop.getResult(i * cfg.r + j);
          if (cfg.splits > 1) {
            memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, acc,
                                        output, indices);
            continue;
          }
          // The element's place in the output buffer, for the fused ops,
          // which see that buffer in shapes of their own.
          Value linear;
          if (producer || consumer)
            linear = ib.linearize(outShape, indices);
          SmallVector<Value> ivs;
          Value old = producer
                          ? ib.evaluate(producer, linear, nullptr, {}, ivs)
                          : memref::LoadOp::create(b, loc, output, indices);
          values.push_back(arith::AddFOp::create(b, loc, old, acc));
          outputAt.push_back(indices);
          if (consumer) {
            results.push_back(
                ib.evaluate(consumer, linear, consumed, values.back(), ivs));
            resultAt.push_back(ivs);
          }
        }
        if (values.empty())
          continue;
        if (outputLive && runStores)
          storeRun(output, outputAt, values, outputAligned);
        else if (outputLive)
          memref::StoreOp::create(b, loc, values.front(), output,
                                  outputAt.front());
        if (consumer && runStores)
          storeRun(result, resultAt, results, resultAligned);
        else if (consumer)
          memref::StoreOp::create(b, loc, results.front(), result,
                                  resultAt.front());
      }
    for (linalg::LinalgOp fused : {producer, consumer})
      if (fused) {
        erased.insert(fused);
        fused->erase();
      }
    op->erase();
    for (auto &[operand, gather] : gathers)
      for (Operation *gone : gather.made())
        gone->erase();
  }
};

} // namespace
} // namespace kiln::gpu
