//===- OutlineKernels.cpp - One function per top-level loop nest ----------===//

#include "codegen/Common/Passes.h"
#include "dialects/Kiln/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENOUTLINEKERNELS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// Whether `value` is best recreated inside a kernel rather than passed:
/// constants, global lookups and views of something that is itself passed
/// or recreated (a strided view cannot cross the bare-pointer convention).
/// A buffer of the workspace (the memref.view kiln-codegen-plan-memory makes)
/// is passed: it is a buffer of its own, disjoint from every other buffer the
/// kernel uses, which the kernel's noalias arguments tell LLVM.
bool shouldRecreate(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || def->getNumResults() != 1)
    return false;
  if (def->hasTrait<OpTrait::ConstantLike>() || isa<memref::GetGlobalOp>(def))
    return true;
  if (isa<memref::ViewOp>(def) &&
      cast<MemRefType>(value.getType()).getLayout().isIdentity())
    return false;
  return isa<ViewLikeOpInterface>(def) && isMemoryEffectFree(def);
}

/// Whether `value` can be a kernel argument: a scalar, or a buffer with
/// identity layout (passed as its pointer, and its sizes where they are
/// known at run time only: see passedTypes).
bool canPass(Value value) {
  if (value.getType().isIntOrIndexOrFloat())
    return true;
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.getLayout().isIdentity();
}

/// A buffer whose sizes the run chooses (a sequence length): the
/// bare-pointer convention takes static memrefs only, so a kernel takes
/// its pointer as a memref<1xT> and each run-time size as an index, and
/// views the pointer at those sizes again.
bool passedBySizes(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && !type.hasStaticShape();
}

/// The kernel's argument types for `arguments`.
SmallVector<Type> passedTypes(const SetVector<Value> &arguments) {
  SmallVector<Type> types;
  for (Value value : arguments) {
    if (!passedBySizes(value)) {
      types.push_back(value.getType());
      continue;
    }
    auto type = cast<MemRefType>(value.getType());
    types.push_back(MemRefType::get({1}, type.getElementType()));
    types.append(type.getNumDynamicDims(), IndexType::get(value.getContext()));
  }
  return types;
}

/// The call's operands for `arguments`, made before the call.
SmallVector<Value> passedValues(OpBuilder &builder, Location loc,
                                const SetVector<Value> &arguments) {
  SmallVector<Value> operands;
  for (Value value : arguments) {
    if (!passedBySizes(value)) {
      operands.push_back(value);
      continue;
    }
    auto type = cast<MemRefType>(value.getType());
    operands.push_back(memref::ReinterpretCastOp::create(
        builder, loc, MemRefType::get({1}, type.getElementType()), value,
        /*offset=*/0, /*sizes=*/{1}, /*strides=*/{1}));
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        operands.push_back(memref::DimOp::create(builder, loc, value, d));
  }
  return operands;
}

/// The buffer of `type` that a kernel's pointer argument `pointer` and
/// size arguments `sizes` (its `?` dimensions in order) stand for.
Value viewPassed(OpBuilder &builder, Location loc, MemRefType type,
                 Value pointer, ValueRange sizes) {
  SmallVector<OpFoldResult> mixed;
  unsigned next = 0;
  for (int64_t size : type.getShape())
    mixed.push_back(ShapedType::isDynamic(size)
                        ? OpFoldResult(sizes[next++])
                        : OpFoldResult(builder.getIndexAttr(size)));
  // Row-major strides, static as far as the static sizes go.
  SmallVector<OpFoldResult> strides(type.getRank());
  OpFoldResult stride = builder.getIndexAttr(1);
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d == 0)
      break;
    std::optional<int64_t> known = getConstantIntValue(stride);
    std::optional<int64_t> size = getConstantIntValue(mixed[d]);
    if (known && size)
      stride = builder.getIndexAttr(*known * *size);
    else
      stride = arith::MulIOp::create(
                   builder, loc,
                   getValueOrCreateConstantIndexOp(builder, loc, stride),
                   getValueOrCreateConstantIndexOp(builder, loc, mixed[d]))
                   .getResult();
  }
  // The identity layout is these strides: the view has the buffer's own
  // type, without a cast that canonicalization would fold into its users.
  return memref::ReinterpretCastOp::create(
      builder, loc, type, pointer, builder.getIndexAttr(0), mixed, strides);
}

/// Collects, in dependency order, the ops to recreate in a function and the
/// values to pass to it, for code that uses `used` from outside; false if
/// some value can be neither.
bool collectCaptures(const SetVector<Value> &used,
                     SetVector<Operation *> &recreate,
                     SetVector<Value> &arguments) {
  SmallVector<Value> worklist(used.begin(), used.end());
  SetVector<Operation *> visited;
  std::function<bool(Value)> visit = [&](Value value) -> bool {
    if (shouldRecreate(value)) {
      Operation *def = value.getDefiningOp();
      if (visited.contains(def))
        return true;
      for (Value operand : def->getOperands())
        if (!visit(operand))
          return false;
      visited.insert(def);
      return true;
    }
    if (!canPass(value))
      return false;
    arguments.insert(value);
    return true;
  };
  for (Value value : worklist)
    if (!visit(value))
      return false;
  recreate = visited;
  return true;
}

/// The values an outlined `op` uses from outside it.
SetVector<Value> usedValues(Operation *op) {
  SetVector<Value> used;
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, used);
  for (Value operand : op->getOperands())
    used.insert(operand);
  return used;
}

/// A private function `name` of `types`, at the builder's insertion point,
/// with its entry block: never inlined (LLVM would inline a function called
/// once straight back), every buffer argument noalias. That is valid for
/// the arguments collectCaptures chooses: every one is a buffer of its own,
/// a model input or output, an allocation, or a buffer of the workspace,
/// which kiln-codegen-plan-memory places clear of every buffer alive at the
/// same time (and so of every other buffer one loop nest uses); other views are
/// recreated inside, never passed. No two arguments overlap, and LLVM
/// vectorizes without the runtime checks it cannot always build (buffers at
/// unknown distances in one workspace defeated them).
func::FuncOp createOutlinedFunction(OpBuilder &builder, Location loc,
                                    StringRef name, TypeRange types) {
  auto function = func::FuncOp::create(builder, loc, name,
                                       builder.getFunctionType(types, {}));
  function.setPrivate();
  function->setAttr("passthrough",
                    builder.getArrayAttr({builder.getStringAttr("noinline")}));
  for (auto [index, type] : llvm::enumerate(types))
    if (isa<MemRefType>(type))
      function.setArgAttr(index, "llvm.noalias", builder.getUnitAttr());
  function.addEntryBlock();
  return function;
}

/// Starts the body of an outlined `function` whose arguments are `leading`
/// (values mapped to its first arguments, as a loop's indices) then
/// `arguments`: maps both, recreates the ops in `recreate` at the start of
/// the entry block and leaves the builder after them. Returns the mapping
/// for cloning the outlined code.
IRMapping startOutlinedBody(OpBuilder &builder, func::FuncOp function,
                            ValueRange leading,
                            const SetVector<Value> &arguments,
                            const SetVector<Operation *> &recreate) {
  Block *body = &function.front();
  IRMapping mapping;
  for (auto [value, arg] : llvm::zip_equal(
           leading, body->getArguments().take_front(leading.size())))
    mapping.map(value, arg);
  builder.setInsertionPointToStart(body);
  ValueRange args = body->getArguments().drop_front(leading.size());
  unsigned next = 0;
  for (Value value : arguments) {
    if (!passedBySizes(value)) {
      mapping.map(value, args[next++]);
      continue;
    }
    auto type = cast<MemRefType>(value.getType());
    unsigned dynamic = type.getNumDynamicDims();
    mapping.map(value, viewPassed(builder, function.getLoc(), type, args[next],
                                  args.slice(next + 1, dynamic)));
    next += 1 + dynamic;
  }
  for (Operation *def : recreate)
    builder.clone(*def, mapping);
  return mapping;
}

/// Elements of `type`: its vector size, or 1 for a scalar.
uint64_t elementCount(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getNumElements();
  return 1;
}

/// Floating-point operations of one execution of `op` alone (not of its
/// regions): one per element of an arithmetic or math result, two for a
/// fused multiply-add, 2 x the iteration space of a vector contraction; and
/// the multiply-adds of an integer convolution's dot products (eight per
/// lane), so that its rate reads like a float one's.
uint64_t ownFlops(Operation *op) {
  if (auto dot = dyn_cast<DotI8Op>(op))
    return 8 * elementCount(dot.getType());
  if (auto contract = dyn_cast<vector::ContractionOp>(op)) {
    SmallVector<int64_t> bounds;
    contract.getIterationBounds(bounds);
    uint64_t size = 1;
    for (int64_t bound : bounds)
      size *= bound;
    return 2 * size;
  }
  if (auto outer = dyn_cast<vector::OuterProductOp>(op))
    return (outer.getAcc() ? 2 : 1) * elementCount(outer.getResult().getType());
  if (auto reduction = dyn_cast<vector::ReductionOp>(op))
    return isa<FloatType>(reduction.getType())
               ? elementCount(reduction.getVector().getType())
               : 0;
  if (op->getNumResults() != 1 ||
      !isa<FloatType>(getElementTypeOrSelf(op->getResult(0).getType())))
    return 0;
  uint64_t elements = elementCount(op->getResult(0).getType());
  if (isa<vector::FMAOp, math::FmaOp>(op))
    return 2 * elements;
  if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::RemFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
          arith::MinNumFOp, arith::NegFOp>(op) ||
      isa<math::MathDialect>(op->getDialect()))
    return elements;
  return 0;
}

/// A constant bound of an index value: a constant; for an upper bound, the
/// smallest constant result of an affine.min (the bound of a remainder
/// loop); for a lower bound, the largest constant result of an affine.max
/// (the first tap of a convolution's tile that skips the taps reading
/// padding, TileAndVectorize's liveTaps).
std::optional<int64_t> constantBound(Value value, bool upper) {
  if (std::optional<int64_t> constant = getConstantIntValue(value))
    return constant;
  AffineMap map;
  if (auto min = value.getDefiningOp<affine::AffineMinOp>(); min && upper)
    map = min.getMap();
  else if (auto max = value.getDefiningOp<affine::AffineMaxOp>(); max && !upper)
    map = max.getMap();
  else
    return std::nullopt;
  std::optional<int64_t> bound;
  for (AffineExpr result : map.getResults())
    if (auto constant = dyn_cast<AffineConstantExpr>(result)) {
      int64_t c = constant.getValue();
      bound = !bound ? c : upper ? std::min(*bound, c) : std::max(*bound, c);
    }
  return bound;
}

/// Iterations of one loop from constant bounds (at most that many where a
/// bound is an affine.min or max); nullopt when unknown.
std::optional<uint64_t> tripCount(Value lower, Value upper, Value step) {
  std::optional<int64_t> lb = constantBound(lower, /*upper=*/false);
  std::optional<int64_t> ub = constantBound(upper, /*upper=*/true);
  std::optional<int64_t> st = getConstantIntValue(step);
  if (!lb || !ub || !st || *st <= 0)
    return std::nullopt;
  return *ub > *lb ? uint64_t((*ub - *lb + *st - 1) / *st) : 0;
}

/// How many times the regions of `op` run per execution of `op`.
std::optional<uint64_t> regionTrips(Operation *op) {
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return tripCount(loop.getLowerBound(), loop.getUpperBound(),
                     loop.getStep());
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    uint64_t trips = 1;
    for (auto [lb, ub, step] : llvm::zip_equal(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      std::optional<uint64_t> n = tripCount(lb, ub, step);
      if (!n)
        return std::nullopt;
      trips *= *n;
    }
    return trips;
  }
  if (auto loop = dyn_cast<affine::AffineForOp>(op)) {
    if (!loop.hasConstantBounds())
      return std::nullopt;
    int64_t lb = loop.getConstantLowerBound(),
            ub = loop.getConstantUpperBound();
    int64_t step = loop.getStepAsInt();
    return ub > lb ? uint64_t((ub - lb + step - 1) / step) : 0;
  }
  if (isa<scf::WhileOp>(op))
    return std::nullopt;
  // Anything else (scf.if, omp and memref scopes) runs its regions at most
  // once: an upper bound.
  return 1;
}

} // namespace

std::optional<uint64_t> countFlops(Operation *op) {
  uint64_t inside = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &nested : block) {
        std::optional<uint64_t> flops = countFlops(&nested);
        if (!flops)
          return std::nullopt;
        inside += *flops;
      }
  if (inside == 0)
    return ownFlops(op);
  std::optional<uint64_t> trips = regionTrips(op);
  if (!trips)
    return std::nullopt;
  return ownFlops(op) + *trips * inside;
}

std::string sourceNodes(Location loc) {
  SmallVector<StringRef> names;
  loc->walk([&](Location nested) {
    if (auto name = dyn_cast<NameLoc>(nested))
      if (!llvm::is_contained(names, name.getName().getValue()))
        names.push_back(name.getName().getValue());
    return WalkResult::advance();
  });
  std::string text;
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i == 3) {
      text += ", ...";
      break;
    }
    text += (i ? ", " : "") + name.str();
  }
  return text;
}

namespace {

struct CodegenOutlineKernelsPass
    : impl::CodegenOutlineKernelsBase<CodegenOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      unsigned count = 0;
      SmallVector<Operation *> candidates;
      for (Operation &op : func.getBody().front())
        if (op.getNumRegions() > 0 && op.getNumResults() == 0)
          candidates.push_back(&op);
      for (Operation *op : candidates)
        outline(func, op, count);
    }
  }

  void outline(func::FuncOp parent, Operation *op, unsigned &count) {
    SetVector<Operation *> recreate;
    SetVector<Value> arguments;
    if (!collectCaptures(usedValues(op), recreate, arguments))
      return;
    MLIRContext *ctx = &getContext();
    SmallVector<Type> types = passedTypes(arguments);
    OpBuilder builder(ctx);
    // At the end of the module: kernels keep the order of the loop nests.
    builder.setInsertionPointToEnd(getOperation().getBody());
    std::string name = (parent.getSymName() + "_kernel" + Twine(count++)).str();
    func::FuncOp kernel =
        createOutlinedFunction(builder, op->getLoc(), name, types);
    // What the model's kernel table says about it (lib/Target/ModelABI.cpp).
    std::optional<uint64_t> flops = countFlops(op);
    kernel->setAttr(kKernelAttr,
                    KernelAttr::get(ctx, int64_t(flops.value_or(0)),
                                    sourceNodes(op->getLoc())));
    IRMapping mapping =
        startOutlinedBody(builder, kernel, {}, arguments, recreate);
    Operation *nest = builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc());

    builder.setInsertionPoint(op);
    func::CallOp::create(builder, op->getLoc(), kernel,
                         passedValues(builder, op->getLoc(), arguments));
    op->erase();
    if (auto loop = dyn_cast<scf::ParallelOp>(nest))
      outlineTile(kernel, loop);
  }

  /// Moves the body of a kernel's parallel loop into a function of its own
  /// (`<kernel>_tile`, taking the loop's indices and the buffers), called
  /// once per iteration. The OpenMP lowering puts a parallel loop's body in
  /// a function that reaches the buffers through a context struct, where
  /// LLVM sees neither that they are disjoint nor their shapes, and left the
  /// scalar loops inside (an elementwise op, a pool, a Winograd transform)
  /// unvectorized: 2x slower on one thread. The tile function's arguments
  /// are the kernel's own buffers, noalias as the kernel's are. A
  /// contraction's tiles are vector code already and gain nothing from it,
  /// but lose nothing either: one call per register block row of work.
  void outlineTile(func::FuncOp kernel, scf::ParallelOp loop) {
    SetVector<Value> used;
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    SetVector<Operation *> recreate;
    SetVector<Value> arguments;
    if (!collectCaptures(used, recreate, arguments))
      return;
    MLIRContext *ctx = &getContext();
    Block *loopBody = loop.getBody();
    SmallVector<Type> types(loopBody->getArgumentTypes());
    llvm::append_range(types, passedTypes(arguments));
    OpBuilder builder(ctx);
    builder.setInsertionPointAfter(kernel);
    func::FuncOp tile = createOutlinedFunction(
        builder, loop.getLoc(), (kernel.getSymName() + "_tile").str(), types);
    IRMapping mapping = startOutlinedBody(
        builder, tile, loopBody->getArguments(), arguments, recreate);
    for (Operation &op : loopBody->without_terminator())
      builder.clone(op, mapping);
    func::ReturnOp::create(builder, loop.getLoc());

    // The loop's body becomes the call.
    SmallVector<Operation *> moved;
    for (Operation &op : loopBody->without_terminator())
      moved.push_back(&op);
    for (Operation *op : llvm::reverse(moved))
      op->erase();
    builder.setInsertionPointToStart(loopBody);
    SmallVector<Value> operands(loopBody->getArguments());
    llvm::append_range(operands,
                       passedValues(builder, loop.getLoc(), arguments));
    func::CallOp::create(builder, loop.getLoc(), tile, operands);
  }
};

} // namespace
} // namespace kiln::codegen
