//===- MapToLaunch.cpp - Each top-level loop nest as a gpu.launch ---------===//
//
// The GPU target's general mapping (docs/gpu.md): one thread per iteration
// of a parallel loop, in a one-dimensional grid, which is correct for every
// op the CPU path lowers to loops. Faster mappings replace it op by op: the
// contractions arrive here as launches of their own
// (kiln-gpu-tile-contractions), which this pass names and completes.
//
//===----------------------------------------------------------------------===//

#include "codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kiln::gpu {
#define GEN_PASS_DEF_GPUMAPTOLAUNCH
#include "codegen/GPU/Passes.h.inc"
} // namespace kiln::gpu

using namespace mlir;

namespace kiln::gpu {
namespace {

/// Whether a top-level op stays on the host: it computes addresses or
/// constants only, and a launch that uses it recomputes it inside.
bool staysOnHost(Operation *op) {
  return isa<func::ReturnOp, memref::AllocOp, memref::DeallocOp>(op) ||
         (op->getNumRegions() == 0 && isMemoryEffectFree(op));
}

/// The buffer a view is of: the value at the end of its chain of views.
Value rootOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// The arguments of `func` that nothing in it writes (the inputs and the
/// constants segment), or none when an op writes an unknown buffer.
llvm::SmallPtrSet<Value, 8> readOnlyArguments(func::FuncOp func) {
  llvm::SmallPtrSet<Value, 8> written;
  bool unknown = false;
  func.walk([&](Operation *op) {
    if (op == func.getOperation())
      return;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
          !isMemoryEffectFree(op))
        unknown = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> list;
    effects.getEffects(list);
    for (const MemoryEffects::EffectInstance &effect : list)
      if (isa<MemoryEffects::Write>(effect.getEffect())) {
        if (Value value = effect.getValue())
          written.insert(rootOf(value));
        else
          unknown = true;
      }
  });
  llvm::SmallPtrSet<Value, 8> readOnly;
  if (unknown)
    return readOnly;
  for (BlockArgument arg : func.getArguments())
    if (isa<BaseMemRefType>(arg.getType()) && !written.contains(arg))
      readOnly.insert(arg);
  return readOnly;
}

/// Whether `op` may be recomputed inside a kernel: constants, views and
/// index arithmetic, which read no memory, and loads from buffers that
/// nothing writes.
bool sinkable(Operation *op, const llvm::SmallPtrSet<Value, 8> &readOnly) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return readOnly.contains(rootOf(load.getMemRef()));
  return op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
         op->getNumResults() == 1;
}

/// Clones into the start of `launch` each op that the launch uses from above
/// and that can be recomputed there, transitively; fails on a value from
/// above that is neither that nor an argument of the function.
LogicalResult sinkIntoLaunch(mlir::gpu::LaunchOp launch,
                             const llvm::SmallPtrSet<Value, 8> &readOnly) {
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(launch.getBody(), captured);
  // The ops to clone, operands before users.
  SetVector<Operation *> toClone;
  std::function<LogicalResult(Value)> visit = [&](Value value) {
    if (isa<BlockArgument>(value))
      return success(isa<BaseMemRefType>(value.getType()) ||
                     value.getType().isIntOrIndexOrFloat());
    Operation *def = value.getDefiningOp();
    if (toClone.contains(def))
      return success();
    if (!sinkable(def, readOnly))
      return failure();
    for (Value operand : def->getOperands())
      if (failed(visit(operand)))
        return failure();
    toClone.insert(def);
    return success();
  };
  for (Value value : captured)
    if (failed(visit(value)))
      return launch.emitError()
             << "a kernel would read a value the host computes: " << value;
  OpBuilder b(launch.getBody());
  IRMapping mapping;
  for (Operation *op : toClone)
    b.clone(*op, mapping);
  for (auto [from, to] : mapping.getValueMap())
    replaceAllUsesInRegionWith(from, to, launch.getBody());
  return success();
}

/// Whether `op` is or holds a parallel loop.
bool holdsParallelLoop(Operation *op) {
  return op->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// Whether `op` (or an op it holds) may write memory.
bool writesMemory(Operation *op) {
  return op
      ->walk([](Operation *o) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(o);
        bool writes = effects
                          ? effects.hasEffect<MemoryEffects::Write>()
                          : !o->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
        return writes ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The ops of `block` but its terminator.
SmallVector<Operation *> bodyOf(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  return ops;
}

struct GPUMapToLaunchPass : impl::GPUMapToLaunchBase<GPUMapToLaunchPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32) {
      func.emitError() << "block size " << blockSize
                       << " is not a multiple of 32 from 32 to 1024";
      return signalPassFailure();
    }
    // A load from a buffer nothing writes (an input's scalar, hoisted out of
    // a loop) is repeated in each kernel that uses it, not read by the host.
    llvm::SmallPtrSet<Value, 8> readOnly = readOnlyArguments(func);
    auto hostSide = [&](Operation *op) {
      return staysOnHost(op) ||
             (isa<memref::LoadOp>(op) && sinkable(op, readOnly));
    };
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    unsigned count = 0;
    auto nextName = [&] {
      return (func.getSymName() + "_kernel" + Twine(count++)).str();
    };
    for (size_t i = 0; i < ops.size();) {
      // A launch an earlier pass built (kiln-gpu-tile-contractions): named
      // in turn, and its views and constants recomputed inside.
      if (auto launch = dyn_cast<mlir::gpu::LaunchOp>(ops[i])) {
        launch.setModuleAttr(
            FlatSymbolRefAttr::get(&getContext(), kKernelModule));
        launch.setFunctionAttr(
            FlatSymbolRefAttr::get(&getContext(), nextName()));
        if (failed(sinkIntoLaunch(launch, readOnly)))
          return signalPassFailure();
        ++i;
        continue;
      }
      if (auto loop = dyn_cast<scf::ParallelOp>(ops[i])) {
        FailureOr<mlir::gpu::LaunchOp> launch = mapParallel(loop, nextName());
        if (failed(launch) ||
            (*launch && failed(sinkIntoLaunch(*launch, readOnly))))
          return signalPassFailure();
        ++i;
        continue;
      }
      if (hostSide(ops[i])) {
        ++i;
        continue;
      }
      // A serial stretch up to the next parallel loop: the ops that touch
      // memory, and the arithmetic on what they read. Where a later op
      // uses a value the stretch computes (a count that a loop runs to),
      // the stretch goes on to that op, parallel loops included (run by
      // its one thread): the host cannot read the GPU's memory.
      SmallVector<Operation *> group;
      llvm::SmallPtrSet<Operation *, 16> inGroup;
      size_t j = i;
      auto take = [&](size_t k) {
        bool dependent = llvm::any_of(ops[k]->getOperands(), [&](Value v) {
          return inGroup.contains(v.getDefiningOp());
        });
        if (!hostSide(ops[k]) || dependent) {
          group.push_back(ops[k]);
          inGroup.insert(ops[k]);
        }
      };
      for (; j < ops.size() &&
             !isa<scf::ParallelOp, mlir::gpu::LaunchOp, func::ReturnOp,
                  memref::AllocOp, memref::DeallocOp>(ops[j]);
           ++j)
        take(j);
      while (true) {
        size_t last = j;
        for (Operation *op : group)
          for (Operation *user : op->getUsers()) {
            Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
            auto at = llvm::find(ops, top);
            if (at != ops.end() && size_t(at - ops.begin()) >= j)
              last = std::max(last, size_t(at - ops.begin()) + 1);
          }
        if (last == j ||
            llvm::any_of(ArrayRef(ops).slice(j, last - j), [](Operation *op) {
              return isa<mlir::gpu::LaunchOp, func::ReturnOp, memref::AllocOp,
                         memref::DeallocOp>(op);
            }))
          break;
        for (; j < last; ++j)
          take(j);
      }
      FailureOr<mlir::gpu::LaunchOp> launch = mapSerial(group, nextName());
      if (failed(launch) || failed(sinkIntoLaunch(*launch, readOnly)))
        return signalPassFailure();
      i = j;
    }
    // The loads now repeated inside the kernels.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
      if (isa<memref::LoadOp>(op) && op.use_empty())
        op.erase();
  }

  /// A launch of `grid` blocks of `block` threads before `ops` (what it
  /// will run), with their kernel attribute (flops and ONNX nodes summed
  /// over them), its body's builder set before the terminator.
  mlir::gpu::LaunchOp createLaunch(OpBuilder &b, ArrayRef<Operation *> ops,
                                   StringRef name, int64_t grid,
                                   int64_t block) {
    Location loc = ops.front()->getLoc();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value gridX = arith::ConstantIndexOp::create(b, loc, grid);
    Value blockX = arith::ConstantIndexOp::create(b, loc, block);
    auto launch = mlir::gpu::LaunchOp::create(
        b, loc, gridX, one, one, blockX, one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, /*workgroupAttributions=*/{},
        /*privateAttributions=*/{}, nullptr, nullptr, nullptr,
        FlatSymbolRefAttr::get(b.getContext(), kKernelModule),
        FlatSymbolRefAttr::get(b.getContext(), name));
    uint64_t flops = 0;
    SmallVector<Location> locs;
    for (Operation *op : ops) {
      flops += countFlops(op).value_or(0);
      locs.push_back(op->getLoc());
    }
    launch->setAttr(kKernelAttr,
                    KernelAttr::get(b.getContext(), int64_t(flops),
                                    sourceNodes(b.getFusedLoc(locs))));
    b.setInsertionPointToStart(&launch.getBody().front());
    mlir::gpu::TerminatorOp::create(b, loc);
    b.setInsertionPointToStart(&launch.getBody().front());
    return launch;
  }

  /// Whether the threads of one block can run `ops` (a serial stretch, or
  /// the body of a loop or branch in it) together (see cooperate): each
  /// op is a parallel loop without results, holds one in a loop or branch
  /// whose ops can in turn, has no memory effects, only reads, or writes
  /// without results; nothing allocates.
  static bool cooperative(ArrayRef<Operation *> ops) {
    for (Operation *op : ops) {
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        if (loop.getNumResults() != 0)
          return false;
        continue;
      }
      if (holdsParallelLoop(op)) {
        if (!isa<scf::ForOp, scf::IfOp>(op))
          return false;
        for (Region &region : op->getRegions())
          for (Block &block : region)
            if (!cooperative(bodyOf(block)))
              return false;
        continue;
      }
      bool allocates =
          op->walk([](Operation *o) {
              return isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(
                         o)
                         ? WalkResult::interrupt()
                         : WalkResult::advance();
            }).wasInterrupted();
      if (allocates || (writesMemory(op) && op->getNumResults() != 0))
        return false;
    }
    return true;
  }

  /// Makes `ops` (see cooperative) run by all `threads` threads of the
  /// block, `tid` each: a parallel loop's iterations are shared out, each
  /// thread taking every `threads`-th; an op that writes memory is run by
  /// thread 0; the rest (arithmetic, reads, the loops and branches around
  /// parallel loops) by every thread alike, so that their values agree.
  /// Each parallel loop and each write has a barrier before and after it,
  /// so that every thread reads what was written before.
  static void cooperate(ArrayRef<Operation *> ops, Value tid, int64_t threads) {
    for (Operation *op : ops) {
      Location loc = op->getLoc();
      OpBuilder b(op);
      auto c = [&](int64_t v) {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
        mlir::gpu::BarrierOp::create(b, loc);
        // The iterations, row-major, shared out.
        SmallVector<Value> trips;
        Value total = c(1);
        for (auto [lb, ub, step] : llvm::zip_equal(
                 loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
          Value span = arith::SubIOp::create(
              b, loc, arith::MaxSIOp::create(b, loc, ub, lb), lb);
          Value n = arith::DivUIOp::create(
              b, loc,
              arith::AddIOp::create(b, loc, span,
                                    arith::SubIOp::create(b, loc, step, c(1))),
              step);
          trips.push_back(n);
          total = arith::MulIOp::create(b, loc, total, n);
        }
        auto shared = scf::ForOp::create(b, loc, tid, total, c(threads));
        OpBuilder in = OpBuilder::atBlockBegin(shared.getBody());
        IRMapping mapping;
        Value rest = shared.getInductionVar();
        for (int64_t d = int64_t(trips.size()) - 1; d >= 0; --d) {
          Value index =
              d == 0 ? rest : arith::RemUIOp::create(in, loc, rest, trips[d]);
          if (d > 0)
            rest = arith::DivUIOp::create(in, loc, rest, trips[d]);
          mapping.map(
              loop.getInductionVars()[d],
              arith::AddIOp::create(
                  in, loc, loop.getLowerBound()[d],
                  arith::MulIOp::create(in, loc, index, loop.getStep()[d])));
        }
        for (Operation &inner : loop.getBody()->without_terminator())
          in.clone(inner, mapping);
        b.setInsertionPointAfter(shared);
        mlir::gpu::BarrierOp::create(b, loc);
        loop.erase();
        continue;
      }
      if (isa<scf::ForOp, scf::IfOp>(op) && holdsParallelLoop(op)) {
        for (Region &region : op->getRegions())
          for (Block &block : region)
            cooperate(bodyOf(block), tid, threads);
        continue;
      }
      if (!writesMemory(op))
        continue;
      mlir::gpu::BarrierOp::create(b, loc);
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, c(0));
      auto guard = scf::IfOp::create(b, loc, first, /*withElse=*/false);
      op->moveBefore(guard.thenBlock()->getTerminator());
      b.setInsertionPointAfter(guard);
      mlir::gpu::BarrierOp::create(b, loc);
    }
  }

  /// One thread runs `group` (top-level ops, in order), whose results are
  /// used by the group only; or, where the group holds parallel loops and
  /// all of it can (see cooperative), one block of threads.
  FailureOr<mlir::gpu::LaunchOp> mapSerial(ArrayRef<Operation *> group,
                                           StringRef name) {
    llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
    for (Operation *op : group)
      for (Operation *user : op->getUsers())
        if (!members.contains(op->getBlock()->findAncestorOpInBlock(*user))) {
          op->emitError() << "a value that the host would read from the "
                             "GPU's memory: not supported yet";
          return failure();
        }
    int64_t threads =
        llvm::any_of(group, holdsParallelLoop) && cooperative(group) ? blockSize
                                                                     : 1;
    OpBuilder b(group.front());
    mlir::gpu::LaunchOp launch = createLaunch(b, group, name, 1, threads);
    Operation *terminator = &launch.getBody().front().back();
    for (Operation *op : group)
      op->moveBefore(terminator);
    if (threads > 1) {
      cooperate(group, launch.getThreadIds().x, threads);
      // Two barriers in a row are one; none is needed at the kernel's end.
      launch.walk([](mlir::gpu::BarrierOp barrier) {
        if (isa_and_nonnull<mlir::gpu::BarrierOp>(barrier->getPrevNode()) ||
            isa<mlir::gpu::TerminatorOp>(barrier->getNextNode()))
          barrier.erase();
      });
    }
    return launch;
  }

  FailureOr<mlir::gpu::LaunchOp> mapParallel(scf::ParallelOp loop,
                                             StringRef name) {
    // Constant bounds: the grid is fixed when the model is compiled.
    SmallVector<int64_t> lbs, steps, trips;
    int64_t total = 1;
    for (auto [lb, ub, step] : llvm::zip_equal(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb),
                             u = getConstantIntValue(ub),
                             s = getConstantIntValue(step);
      if (!l || !u || !s || *s <= 0)
        return loop.emitError("a parallel loop without constant bounds "
                              "cannot be mapped to the GPU yet");
      int64_t n = *u > *l ? (*u - *l + *s - 1) / *s : 0;
      lbs.push_back(*l);
      steps.push_back(*s);
      trips.push_back(n);
      total *= n;
    }
    if (total == 0) { // nothing to run
      loop.erase();
      return mlir::gpu::LaunchOp();
    }
    int64_t block = std::min<int64_t>(blockSize, llvm::alignTo(total, 32));
    int64_t grid = llvm::divideCeil(total, block);
    if (grid > std::numeric_limits<int32_t>::max())
      return loop.emitError() << "a loop of " << total
                              << " iterations is too large for one grid";
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    mlir::gpu::LaunchOp launch =
        createLaunch(b, {loop.getOperation()}, name, grid, block);
    Value blockId = launch.getBlockIds().x, threadId = launch.getThreadIds().x;
    Value blockSizeValue = arith::ConstantIndexOp::create(b, loc, block);
    Value id = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, blockId, blockSizeValue),
        threadId);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                              arith::ConstantIndexOp::create(b, loc, total));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    // Row-major: the last loop index varies fastest between threads.
    IRMapping mapping;
    Value rest = id;
    for (int64_t d = int64_t(trips.size()) - 1; d >= 0; --d) {
      Value n = arith::ConstantIndexOp::create(b, loc, trips[d]);
      Value index = d == 0 ? rest : arith::RemUIOp::create(b, loc, rest, n);
      if (d > 0)
        rest = arith::DivUIOp::create(b, loc, rest, n);
      Value iv = arith::AddIOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, lbs[d]),
          arith::MulIOp::create(
              b, loc, index, arith::ConstantIndexOp::create(b, loc, steps[d])));
      mapping.map(loop.getInductionVars()[d], iv);
    }
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, mapping);
    loop.erase();
    return launch;
  }
};

} // namespace
} // namespace kiln::gpu
