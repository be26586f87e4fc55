//===- SplitBatch.cpp - Run a batch as one sample at a time ---------------===//
//
// kiln-graph-split-batch (Passes.td).
//
// A convolutional network at batch 8 streams activations eight times the
// size of batch 1's through memory at every layer: ResNet-50's first
// stages hold 25 MB tensors, past what the caches keep, where one sample's
// 3 MB stay in them from the op that writes to the op that reads. Kiln's
// batch-1 code ran such models faster eight times over than their batch-8
// code ran once (ResNet-50: 254 against 307 ms on one thread, 139 against
// 160 on two), so the model's entry takes one sample and the model ABI's
// run function calls it once per sample. Weights are then read once per
// sample: where they outweigh the batch's activations (VGG-19's 548 MB of
// weights, 400 MB of them in its classifier, which a batch reads once), or
// the batch's activations fit in the cache anyway (BERT-base's largest
// is 1.5 MB a sample), the batch stays whole.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"
#include "dialects/Graph/Transforms/SymbolicDims.h"
#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHSPLITBATCH
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

enum class BatchSplitMode { Auto, On, Off };

/// What was decided for one function.
struct BatchSplit {
  /// How many times the function runs per call, each on the next sample of
  /// every input and output: the batch where it now takes one sample, else
  /// 1.
  int64_t repeat = 1;
  /// Why, for kiln-compile --report.
  std::string reason;
};

/// The bytes of a tensor, a `?` dimension (a size the code reads at run
/// time) counted as 1.
int64_t byteSize(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t bytes = std::max<int64_t>(1, tensor.getElementTypeBitWidth() / 8);
  for (int64_t size : tensor.getShape())
    if (!ShapedType::isDynamic(size))
      bytes *= size;
  return bytes;
}

/// Whether `type` is ranked and leads with a static size, the batch.
bool leadsWithStatic(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() > 0 && !tensor.isDynamicDim(0);
}

RankedTensorType withBatch(RankedTensorType type, int64_t batch) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = batch;
  return type.clone(shape);
}

/// A size as a number times symbols of kiln.dim_symbols (sorted): what a
/// sample's block of entries is made of where sizes are read at run time.
struct Product {
  int64_t number = 1;
  SmallVector<int64_t, 2> symbols;

  bool operator==(const Product &o) const {
    return number == o.number && symbols == o.symbols;
  }
  bool operator!=(const Product &o) const { return !(*this == o); }
  bool isOne() const { return number == 1 && symbols.empty(); }

  std::optional<Product> times(const Product &o) const {
    Product result = *this;
    if (llvm::MulOverflow(number, o.number, result.number))
      return std::nullopt;
    llvm::append_range(result.symbols, o.symbols);
    llvm::sort(result.symbols);
    return result;
  }
  /// This over `o`, where `o` divides it.
  std::optional<Product> over(const Product &o) const {
    if (o.number <= 0 || number % o.number != 0)
      return std::nullopt;
    Product result{number / o.number, {}};
    SmallVector<int64_t, 2> left(symbols);
    for (int64_t symbol : o.symbols) {
      auto *it = llvm::find(left, symbol);
      if (it == left.end())
        return std::nullopt;
      left.erase(it);
    }
    result.symbols = left;
    return result;
  }
};

/// Where the batch lies in a value that carries it: dimension `axis` holds
/// outer x batch x inner entries, sample b the `inner` consecutive ones at
/// b x inner in each of the outer blocks; one sample's own tensor has
/// outer x inner there. The model's inputs and outputs have it first and
/// alone (axis 0, inner 1, that dimension of the batch's size): what a
/// transpose moves, or a reshape merges with other sizes (an attention that
/// puts the batch beside its heads, `[seq, batch * heads, d]`; rows of
/// batch x seq tokens), is followed op by op to where it comes back.
struct BatchAt {
  int64_t axis = 0;
  Product inner;
  /// Whether the dimension is the batch's size (first and alone).
  bool alone = true;
  bool operator==(const BatchAt &o) const {
    return axis == o.axis && inner == o.inner;
  }
  bool operator!=(const BatchAt &o) const { return !(*this == o); }
};

using Batched = llvm::DenseMap<Value, BatchAt>;

/// One sample's type of a value of type `type` with the batch at `at`.
RankedTensorType oneSample(RankedTensorType type, BatchAt at, int64_t batch) {
  SmallVector<int64_t> shape(type.getShape());
  if (!ShapedType::isDynamic(shape[at.axis]))
    shape[at.axis] /= batch;
  return type.clone(shape);
}

/// Whether `op` computes each sample of its batch from that sample alone,
/// given which of its operands carry the batch, first: the op's own answer
/// (SampleWiseOpInterface); an op without the interface keeps the batch
/// whole.
bool perSample(Operation *op, const Batched &batched) {
  auto sampleWise = dyn_cast<SampleWiseOpInterface>(op);
  return sampleWise && sampleWise.treatsSamplesApart([&](Value value) {
    return batched.contains(value);
  });
}

/// A name for `op` in a reason: its ONNX node and op type where the
/// importer kept them, else the graph op's name.
std::string describe(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return op->getName().getStringRef().str();
}

/// Follows the batch through `op`, where it lies elsewhere than first and
/// alone in an operand, or a result does not have it so: where it lies in
/// each result, or failure where a sample's result would read other
/// samples. Makes the op's sizes one sample's (a reshape's target, a
/// slice's ends) as it goes; the caller checks the types. Sizes are the
/// whole batch's (`types`, taken before any value was retyped), `?` sizes
/// the symbols that `symbols` traced there.
class MovedBatch {
public:
  MovedBatch(const Batched &batched, int64_t batch,
             const llvm::DenseMap<Value, RankedTensorType> &types,
             const SymbolicDims &symbols)
      : batched(batched), batch(batch), types(types), symbols(symbols) {}

  FailureOr<SmallVector<BatchAt>> follow(Operation *op) {
    auto one = [](BatchAt at) { return SmallVector<BatchAt>{at}; };
    FailureOr<BatchAt> at = failure();
    auto sampleWise = dyn_cast<SampleWiseOpInterface>(op);
    if (sampleWise && sampleWise.hasElementwiseSampleRule()) {
      if (op->getNumResults() != 1)
        return failure();
      at = broadcast(op->getResult(0), op->getOperands(), std::nullopt);
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      BatchAt in = batched.lookup(transpose.getInput());
      ArrayRef<int64_t> perm = transpose.getPerm();
      const int64_t *it = llvm::find(perm, in.axis);
      if (it != perm.end())
        at = BatchAt{it - perm.begin(), in.inner};
    } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      at = this->reshape(reshape);
    } else if (isa<MatMulOp, FusedMatMulOp>(op)) {
      at = matmul(op);
    } else if (auto gemm = dyn_cast<GemmOp>(op)) {
      // The rows of A; B and C the same for each sample.
      Value c = gemm.getC();
      auto a = batched.find(gemm.getA());
      if (a != batched.end() && !batched.contains(gemm.getB()) &&
          a->second.axis == (gemm.getTransA() ? 1 : 0) &&
          (!c || (!batched.contains(c) && broadcastsAlong(c, 2, 0))))
        at = BatchAt{0, a->second.inner};
    } else if (isa<SoftmaxOp, LogSoftmaxOp, HardmaxOp>(op)) {
      BatchAt in = batched.lookup(op->getOperand(0));
      ArrayRef<int64_t> axes = TypeSwitch<Operation *, ArrayRef<int64_t>>(op)
                                   .Case<SoftmaxOp, LogSoftmaxOp, HardmaxOp>(
                                       [](auto op) { return op.getAxes(); });
      if (op->getNumOperands() == 1 && !llvm::is_contained(axes, in.axis))
        at = in;
    } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
      BatchAt in = batched.lookup(norm.getInput());
      if (batched.contains(norm.getInput()) &&
          llvm::none_of(op->getOperands().drop_front(),
                        [&](Value v) { return batched.contains(v); }) &&
          static_cast<int64_t>(norm.getAxis()) > in.axis)
        at = in;
    } else if (auto expand = dyn_cast<ExpandOp>(op)) {
      // Broadcast along other dimensions than the batch's (a mask to the
      // heads); the target names one sample's size there.
      BatchAt in = batched.lookup(expand.getInput());
      int64_t rank = expand.getType().getRank();
      int64_t axis = in.axis + rank - whole(expand.getInput()).getRank();
      SmallVector<int64_t> shape(expand.getShape());
      int64_t s = axis - (rank - int64_t(shape.size()));
      std::optional<Product> size = sizeOf(expand.getInput(), in.axis);
      if (size && size == sizeOf(expand.getResult(), axis)) {
        if (s >= 0 && shape[s] > 1)
          shape[s] /= batch;
        expand.setShape(shape);
        at = BatchAt{axis, in.inner};
      }
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      // The batch's dimension taken whole.
      BatchAt in = batched.lookup(slice.getInput());
      int64_t d = in.axis;
      std::optional<Product> size = sizeOf(slice.getInput(), d);
      if (slice.getStarts()[d] == 0 && slice.getSteps()[d] == 1 && size &&
          size == sizeOf(slice.getResult(), d)) {
        SmallVector<int64_t> ends(slice.getEnds());
        if (!ShapedType::isDynamic(ends[d]))
          ends[d] = whole(slice.getResult()).getDimSize(d) / batch;
        slice.setEnds(ends);
        at = in;
      }
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      // From data with the batch, along another dimension, at indices the
      // same for each sample (one of q, k and v).
      auto data = batched.find(gather.getData());
      int64_t axis = gather.getAxis();
      if (data != batched.end() && !batched.contains(gather.getIndices()) &&
          data->second.axis != axis) {
        int64_t indices = whole(gather.getIndices()).getRank();
        at = BatchAt{data->second.axis < axis ? data->second.axis
                                              : data->second.axis - 1 + indices,
                     data->second.inner};
      }
    } else if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
                   ReduceProdOp, ReduceL1Op, ReduceL2Op, ReduceLogSumOp,
                   ReduceLogSumExpOp, ReduceSumSquareOp>(op)) {
      // Over other dimensions: the batch's moves up past the reduced ones
      // that go.
      BatchAt in = batched.lookup(op->getOperand(0));
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
      bool keep = op->getAttrOfType<BoolAttr>("keepdims").getValue();
      if (!llvm::is_contained(axes, in.axis))
        at = BatchAt{
            keep ? in.axis
                 : in.axis - llvm::count_if(
                                 axes, [&](int64_t a) { return a < in.axis; }),
            in.inner};
    } else if (auto pad = dyn_cast<PadOp>(op)) {
      // Along other dimensions.
      BatchAt in = batched.lookup(pad.getInput());
      int64_t rank = whole(pad.getInput()).getRank();
      if (pad.getPads()[in.axis] == 0 && pad.getPads()[in.axis + rank] == 0)
        at = in;
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      // Along another dimension, every operand with the batch in one place.
      FailureOr<BatchAt> common =
          broadcast(concat.getResult(), concat.getOperands(), std::nullopt);
      if (succeeded(common) && common->axis != int64_t(concat.getAxis()) &&
          llvm::all_of(concat.getOperands(),
                       [&](Value v) { return batched.contains(v); }))
        at = common;
    } else if (auto recurrence = dyn_cast<RecurrenceOp>(op)) {
      return this->recurrence(recurrence);
    }
    if (failed(at))
      return failure();
    return one(*at);
  }

private:
  /// `value`'s type for the whole batch.
  RankedTensorType whole(Value value) const {
    auto it = types.find(value);
    return it != types.end() ? it->second
                             : cast<RankedTensorType>(value.getType());
  }

  /// Dimension `d` of `value` for the whole batch, as a product; nullopt
  /// for a `?` size that names no symbol.
  std::optional<Product> sizeOf(Value value, int64_t d) const {
    RankedTensorType type = whole(value);
    if (!type.isDynamicDim(d))
      return Product{type.getDimSize(d), {}};
    std::optional<int64_t> symbol = symbols.symbolOf(value, d);
    if (!symbol || *symbol < 0)
      return std::nullopt;
    return Product{symbols.scaleOf(value, d), {*symbol}};
  }

  /// Whether `value`, broadcast against a result of rank `rank`, is the
  /// same for each sample along the result's dimension `axis` (a size of
  /// 1 there, or no such dimension).
  bool broadcastsAlong(Value value, int64_t rank, int64_t axis) const {
    RankedTensorType type = whole(value);
    int64_t at = axis - (rank - type.getRank());
    return at < 0 || type.getDimSize(at) == 1;
  }

  /// Numpy broadcasting of `operands` to `result`: those that carry the
  /// batch have it at one place and size, the others broadcast along it.
  /// `known` is where it already lies in the result, if anywhere.
  FailureOr<BatchAt> broadcast(Value result, ValueRange operands,
                               std::optional<BatchAt> known) {
    int64_t rank = whole(result).getRank();
    std::optional<BatchAt> common = known;
    for (Value operand : operands) {
      auto it = operand ? batched.find(operand) : batched.end();
      if (it == batched.end())
        continue;
      BatchAt at{it->second.axis + rank - whole(operand).getRank(),
                 it->second.inner};
      std::optional<Product> size = sizeOf(operand, it->second.axis);
      if ((common && *common != at) || !size || size != sizeOf(result, at.axis))
        return failure();
      common = at;
    }
    if (!common)
      return failure();
    for (Value operand : operands)
      if (operand && !batched.contains(operand) &&
          !broadcastsAlong(operand, rank, common->axis))
        return failure();
    return *common;
  }

  /// A product: the batch in dimensions that both sides have or one side
  /// broadcasts, in the left side's rows or in the right side's columns,
  /// never in the sizes it sums over; the bias and residual are added.
  FailureOr<BatchAt> matmul(Operation *op) {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    Value result = op->getResult(0);
    int64_t rank = whole(result).getRank();
    auto rankOf = [&](Value v) { return whole(v).getRank(); };
    if (rankOf(lhs) < 2 || rankOf(rhs) < 2)
      return failure();
    auto l = batched.find(lhs), r = batched.find(rhs);
    bool inL = l != batched.end(), inR = r != batched.end();
    std::optional<BatchAt> at;
    if (inL && l->second.axis == rankOf(lhs) - 2) {
      if (!inR)
        at = BatchAt{rank - 2, l->second.inner};
    } else if (inR && r->second.axis == rankOf(rhs) - 1) {
      if (!inL)
        at = BatchAt{rank - 1, r->second.inner};
    } else if ((!inL || l->second.axis < rankOf(lhs) - 2) &&
               (!inR || r->second.axis < rankOf(rhs) - 2)) {
      FailureOr<BatchAt> common = broadcast(result, {lhs, rhs}, std::nullopt);
      if (succeeded(common))
        at = *common;
    }
    if (!at)
      return failure();
    if (auto fused = dyn_cast<FusedMatMulOp>(op)) {
      SmallVector<Value> addends;
      for (Value v : {fused.getBias(), fused.getResidual()})
        if (v)
          addends.push_back(v);
      if (failed(broadcast(result, addends, at)))
        return failure();
    }
    return *at;
  }

  /// The one value of every entry of `value`, which does not depend on the
  /// batch: a splat constant, through slices, reshapes, transposes and
  /// expands.
  std::optional<Attribute> uniform(Value value) const {
    while (Operation *op = value.getDefiningOp()) {
      if (auto constant = dyn_cast<ConstantOp>(op)) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (dense && dense.isSplat())
          return dense.getSplatValue<Attribute>();
        return std::nullopt;
      }
      if (!isa<SliceOp, ReshapeOp, TransposeOp, ExpandOp>(op) ||
          batched.contains(op->getOperand(0)))
        return std::nullopt;
      value = op->getOperand(0);
    }
    return std::nullopt;
  }

  /// A recurrence runs each sample's steps on its own: the batch in the
  /// projections' second dimension ([seq, batch, gates * hidden]), the
  /// states' and lengths' first, in the same way; the weights the same for
  /// each sample.
  FailureOr<SmallVector<BatchAt>> recurrence(RecurrenceOp op) {
    auto projected = batched.find(op.getProjected());
    if (projected == batched.end() || projected->second.axis != 1)
      return failure();
    BatchAt steps = projected->second, state{0, steps.inner};
    for (Value v : {op.getInitialH(), op.getInitialC(), op.getLengths()}) {
      if (!v)
        continue;
      if (sizeOf(v, 0) != sizeOf(op.getProjected(), 1))
        return failure();
      auto it = batched.find(v);
      if (it != batched.end()) {
        if (it->second != state)
          return failure();
        continue;
      }
      // A state of zeros (or any one value) for the whole batch: the same
      // for one sample.
      std::optional<Attribute> splat = uniform(v);
      if (!splat)
        return failure();
      OpBuilder builder(op);
      Value one =
          ConstantOp::create(builder, v.getLoc(),
                             cast<TypedAttr>(DenseElementsAttr::get(
                                 oneSample(whole(v), state, batch), *splat)));
      for (OpOperand &operand : op->getOpOperands())
        if (operand.get() == v)
          operand.set(one);
    }
    if (batched.contains(op.getRecurrent()) ||
        (op.getStateBias() && batched.contains(op.getStateBias())) ||
        (op.getPeepholes() && batched.contains(op.getPeepholes())))
      return failure();
    SmallVector<BatchAt> results = {steps, state};
    if (op.getLastC())
      results.push_back(state);
    return results;
  }

  /// A reshape keeps each sample's entries together where the block of
  /// one sample's `inner` entries (with the sizes after it) is made of
  /// whole rows of the result's sizes after some dimension, and that
  /// dimension holds whole groups of the batch's blocks: sample b's
  /// entries are then the block / rows consecutive ones at b x that in
  /// each group.
  FailureOr<BatchAt> reshape(ReshapeOp op) {
    BatchAt in = batched.lookup(op.getInput());
    RankedTensorType inType = whole(op.getInput());
    RankedTensorType outType = whole(op.getResult());
    // A sample's block, in entries.
    std::optional<Product> block = in.inner;
    for (int64_t d = in.axis + 1; d < inType.getRank() && block; ++d) {
      std::optional<Product> size = sizeOf(op.getInput(), d);
      block = size ? block->times(*size) : std::nullopt;
    }
    if (!block)
      return failure();
    Product after;
    std::optional<BatchAt> at;
    for (int64_t c = outType.getRank() - 1; c >= 0; --c) {
      std::optional<Product> inner = block->over(after);
      std::optional<Product> size = sizeOf(op.getResult(), c);
      if (!inner || !size)
        return failure();
      std::optional<Product> group = inner->times(Product{batch, {}});
      if (group && size->over(*group)) {
        at = BatchAt{c, *inner};
        break;
      }
      std::optional<Product> next = after.times(*size);
      if (!next)
        return failure();
      after = *next;
    }
    if (!at)
      return failure();
    // The target names one sample's sizes: the batch's dimension divided,
    // a copy (`0`) only of the input's batch at the same place.
    SmallVector<int64_t> shape(op.getShape());
    for (auto [c, size] : llvm::enumerate(shape)) {
      bool copy = size == 0 && !op.getAllowZero();
      if (copy && int64_t(c) == in.axis && int64_t(c) != at->axis)
        return failure();
      if (int64_t(c) != at->axis)
        continue;
      if (copy) {
        if (in.axis != at->axis)
          return failure();
      } else if (size > 0) {
        shape[c] = size / batch;
      }
    }
    op.setShape(shape);
    return *at;
  }

  const Batched &batched;
  int64_t batch;
  const llvm::DenseMap<Value, RankedTensorType> &types;
  const SymbolicDims &symbols;
};

/// Retypes `func` (a copy) to batch 1; fails with the reason. With
/// `probe` (a symbolic batch, typed as the importer's probe size), a splat
/// constant of the batch's size first is taken as one copy per sample (an
/// exporter's buffer of zeros expanded to [batch, seq] and folded).
/// `moved`: the batch left the first dimension of some value.
LogicalResult retype(func::FuncOp func, int64_t batch, bool probe,
                     int64_t &activations, int64_t &largest, bool &moved,
                     std::string &reason) {
  Batched batched;
  Block &entry = func.getBody().front();
  // The whole batch's types and symbols, before any value is retyped.
  llvm::DenseMap<Value, RankedTensorType> types;
  func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(v.getType()))
        types[v] = type;
  });
  for (BlockArgument arg : entry.getArguments())
    types[arg] = cast<RankedTensorType>(arg.getType());
  SymbolicDims symbols = SymbolicDims::traceSoFar(func);
  for (BlockArgument arg : entry.getArguments()) {
    arg.setType(withBatch(cast<RankedTensorType>(arg.getType()), 1));
    batched[arg] = BatchAt{};
  }
  auto leads = [&](Value value) {
    auto it = batched.find(value);
    return it != batched.end() && it->second.alone;
  };
  for (Operation &op : entry) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value value : ret.getOperands()) {
        if (!batched.contains(value)) {
          reason = "an output does not depend on the inputs' batch";
          return failure();
        }
        if (!leads(value)) {
          reason = "an output does not have the batch first";
          return failure();
        }
      }
      break;
    }
    // A value that does not depend on the batch, broadcast to it: each
    // sample gets one copy.
    if (auto expand = dyn_cast<graph::ExpandOp>(op);
        expand && !batched.contains(expand.getInput()) &&
        static_cast<int64_t>(expand.getShape().size()) ==
            cast<RankedTensorType>(expand.getType()).getRank() &&
        expand.getShape()[0] == batch && leadsWithStatic(expand.getType()) &&
        cast<RankedTensorType>(expand.getType()).getDimSize(0) == batch) {
      SmallVector<int64_t> shape(expand.getShape());
      shape[0] = 1;
      expand.setShape(shape);
      auto type = withBatch(cast<RankedTensorType>(expand.getType()), 1);
      expand.getResult().setType(type);
      batched[expand.getResult()] = BatchAt{};
      activations += byteSize(type);
      largest = std::max(largest, byteSize(type));
      continue;
    }
    if (auto constant = dyn_cast<graph::ConstantOp>(op); probe && constant) {
      auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
      auto type = cast<RankedTensorType>(constant.getType());
      if (dense && dense.isSplat() && leadsWithStatic(type) &&
          type.getDimSize(0) == batch) {
        RankedTensorType one = withBatch(type, 1);
        constant.setValueAttr(dense.resizeSplat(one));
        constant.getResult().setType(one);
        batched[constant.getResult()] = BatchAt{};
        continue;
      }
    }
    // The first entries of a value that does not depend on the batch, as
    // many as a sample's size along another axis: the same for each.
    if (auto prefix = dyn_cast<graph::PrefixOp>(op);
        prefix && !batched.contains(prefix.getInput()) &&
        prefix.getLikeAxis() != 0)
      continue;
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return batched.contains(v); }))
      continue;
    if (op.getNumRegions() != 0) {
      reason = describe(&op) + " does not treat the samples apart";
      return failure();
    }
    // The batch in the first dimension of every operand that carries it,
    // grouped alike, and of every result, of the same size: each entry
    // along that dimension is apart from the others (images, rows) by the
    // op's own rule (with the batch alone there, also a reshape's). Else
    // the batch is followed where it lies.
    std::optional<BatchAt> firstAt;
    bool first = true;
    int64_t wholeFirst = 0;
    for (Value v : op.getOperands()) {
      auto it = batched.find(v);
      if (it == batched.end())
        continue;
      RankedTensorType type = types.lookup(v);
      first &= it->second.axis == 0 && (!firstAt || *firstAt == it->second) &&
               type && leadsWithStatic(type);
      if (!first)
        break;
      firstAt = it->second;
      wholeFirst = type.getDimSize(0);
    }
    first = first && firstAt &&
            (firstAt->alone || !isa<graph::ReshapeOp>(op)) &&
            llvm::all_of(op.getResults(),
                         [&](Value v) {
                           auto type = dyn_cast<RankedTensorType>(v.getType());
                           return leadsWithStatic(type) &&
                                  type.getDimSize(0) == wholeFirst;
                         }) &&
            perSample(&op, batched);
    SmallVector<BatchAt> layouts(op.getNumResults(),
                                 firstAt ? *firstAt : BatchAt{});
    if (!first) {
      FailureOr<SmallVector<BatchAt>> followed =
          MovedBatch(batched, batch, types, symbols).follow(&op);
      if (failed(followed)) {
        reason = describe(&op) + " does not treat the samples apart";
        return failure();
      }
      layouts = *followed;
      moved |= llvm::any_of(layouts, [](BatchAt at) { return at.axis != 0; });
    }
    // One sample's types, before a reshape's target takes batch 1.
    SmallVector<RankedTensorType> expected;
    for (auto [result, at] : llvm::zip_equal(op.getResults(), layouts)) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.getRank() <= at.axis) {
        reason = describe(&op) + " has a result without the batch";
        return failure();
      }
      expected.push_back(oneSample(type, at, batch));
    }
    if (first) {
      // A reshape's target that names the batch names one sample instead
      // (0, a copy of the input's size, and -1 follow on their own).
      if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
        SmallVector<int64_t> shape(reshape.getShape());
        if (shape[0] == batch) {
          shape[0] = 1;
          reshape.setShape(shape);
        }
      }
      if (auto slice = dyn_cast<graph::SliceOp>(op)) {
        SmallVector<int64_t> ends(slice.getEnds());
        ends[0] = wholeFirst / batch;
        slice.setEnds(ends);
      }
      if (auto resize = dyn_cast<graph::ResizeOp>(op)) {
        SmallVector<int64_t> sizes(resize.getSizes());
        sizes[0] = wholeFirst / batch;
        resize.setSizes(sizes);
      }
    }
    SmallVector<Type> inferred;
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op.getContext(), op.getLoc(), op.getOperands(),
              op.getAttrDictionary(), op.getPropertiesStorage(),
              op.getRegions(), inferred))) {
        reason = describe(&op) + " cannot take one sample";
        return failure();
      }
    } else {
      // An op that treats the samples apart keeps the rest of its shape
      // (the function is verified below).
      inferred.assign(expected.begin(), expected.end());
    }
    for (auto [result, type, want, at] :
         llvm::zip(op.getResults(), inferred, expected, layouts)) {
      if (failed(verifyCompatibleShape(type, want)) ||
          cast<ShapedType>(type).getElementType() != want.getElementType()) {
        reason = describe(&op) + " does not keep the batch in place";
        return failure();
      }
      auto original = cast<RankedTensorType>(result.getType());
      at.alone = at.axis == 0 && at.inner.isOne() &&
                 leadsWithStatic(original) && original.getDimSize(0) == batch;
      result.setType(want);
      batched[result] = at;
      activations += byteSize(want);
      largest = std::max(largest, byteSize(want));
    }
  }
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  func.setType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                 ret.getOperandTypes()));
  // Verification reports through the context's diagnostics, which the
  // compiler collects as errors: silence them, a failure only keeps the
  // batch whole.
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  if (failed(verify(func))) {
    reason = "the function does not verify with one sample";
    return failure();
  }
  return success();
}

/// Makes `main`, whose inputs and outputs all lead with the same batch N >
/// 1, take one sample instead where each of its ops treats the samples of a
/// batch apart; Auto does so where the activations of the whole batch
/// outgrow `cacheBytes` and outweigh the weights. `main` is left as it was
/// where the result's repeat is 1. `probe`: the batch is symbolic (retype).
BatchSplit splitBatch(func::FuncOp main, BatchSplitMode mode,
                      int64_t cacheBytes, bool probe) {
  BatchSplit split;
  if (mode == BatchSplitMode::Off) {
    split.reason = "whole (--batch-split=off)";
    return split;
  }
  // Every input and output leads with one batch above 1.
  int64_t batch = 0;
  bool leads = main.getNumArguments() > 0;
  for (Type type : llvm::concat<const Type>(main.getArgumentTypes(),
                                            main.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    // Sub-byte elements pack several to a byte: a sample need not start on
    // one. Sizes that the code reads at run time (a sequence beside the
    // batch) may follow the batch where it is symbolic.
    if (!leadsWithStatic(tensor) ||
        (!tensor.hasStaticShape() && mode != BatchSplitMode::On) ||
        (tensor.getElementTypeBitWidth() % 8 != 0 &&
         tensor.getElementTypeBitWidth() != 1)) {
      leads = false;
      break;
    }
    if (batch == 0)
      batch = tensor.getDimSize(0);
    leads &= tensor.getDimSize(0) == batch;
  }
  if (!leads || batch <= 1) {
    split.reason = "whole (no batch above 1 leads every input and output)";
    return split;
  }

  func::FuncOp copy = main.clone();
  int64_t activations = 0, largest = 0;
  bool moved = false;
  std::string reason;
  if (failed(retype(copy, batch, probe, activations, largest, moved, reason))) {
    copy.erase();
    split.reason = "whole (" + reason + ")";
    return split;
  }
  int64_t weights = 0;
  main.walk([&](ConstantOp constant) {
    weights += byteSize(constant.getResult().getType());
  });
  auto megabytes = [](int64_t bytes) {
    return llvm::formatv("{0:f1} MB", double(bytes) / 1e6).str();
  };
  bool dynamic = llvm::any_of(main.getArgumentTypes(), [](Type type) {
    return !cast<RankedTensorType>(type).hasStaticShape();
  });
  std::string sizes = std::string(dynamic ? "at a size of 1 for each size "
                                            "read at run time, "
                                          : "") +
                      "largest activation " + megabytes(largest) +
                      " a sample, activations " + megabytes(activations) +
                      " a sample, weights " + megabytes(weights);
  // Where the batch moves (attention that merges it with the heads, a
  // recurrence), the products' rows are the batch's tokens and reuse the
  // weights across it: whole, the products are larger and faster
  // (gpt_decoder at batch 8: 148 against 157 ms one sample at a time).
  if (mode == BatchSplitMode::Auto && moved) {
    copy.erase();
    split.reason = "whole (the batch moves from the first dimension on the "
                   "way; " +
                   sizes + ")";
    return split;
  }
  if (mode == BatchSplitMode::Auto &&
      (largest * batch <= cacheBytes || activations * batch <= weights)) {
    copy.erase();
    split.reason = "whole (" + sizes + ")";
    return split;
  }
  main.getBody().takeBody(copy.getBody());
  main.setType(copy.getFunctionType());
  copy.erase();
  split.repeat = batch;
  split.reason = std::to_string(batch) + " runs of one sample (" + sizes + ")";
  return split;
}

struct GraphSplitBatchPass : impl::GraphSplitBatchBase<GraphSplitBatchPass> {
  using GraphSplitBatchBase::GraphSplitBatchBase;

  LogicalResult initialize(MLIRContext *context) override {
    if (mode == "auto")
      parsedMode = BatchSplitMode::Auto;
    else if (mode == "on")
      parsedMode = BatchSplitMode::On;
    else if (mode == "off")
      parsedMode = BatchSplitMode::Off;
    else
      return emitError(UnknownLoc::get(context))
             << "kiln-graph-split-batch: unknown mode '" << mode
             << "' (expected auto, on or off)";
    if (cacheBytes <= 0)
      return emitError(UnknownLoc::get(context))
             << "kiln-graph-split-batch: cache-bytes must be positive, got "
             << cacheBytes;
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // A symbolic batch (the importer's kiln.symbols) is split whatever the
    // mode says: the model ABI repeats the entry as many times as the run's
    // batch.
    auto symbols = func->getAttrOfType<ArrayAttr>(kSymbolsAttr);
    bool symbolic = symbols && !symbols.empty();
    BatchSplit split = splitBatch(
        func, symbolic ? BatchSplitMode::On : parsedMode, cacheBytes, symbolic);
    Builder builder(func.getContext());
    if (symbolic) {
      StringRef name =
          cast<DictionaryAttr>(symbols[0]).getAs<StringAttr>("name");
      // Beside sizes that the code reads, the compiler can read the
      // batch's too, from a second import: the pass fails with a remark,
      // the function saying why in its kiln.batch_split, without a repeat.
      auto dims = func->getAttrOfType<ArrayAttr>(attr::kDimSymbols);
      if (split.repeat <= 1 && dims && !dims.empty()) {
        func->setAttr(kBatchSplitAttr, builder.getStringAttr(split.reason));
        func->removeAttr(kBatchRepeatAttr);
        func.emitRemark() << "the batch '" << name
                          << "' is not split: the model is kept "
                          << split.reason
                          << "; its size is to be read at run time";
        return signalPassFailure();
      }
      if (split.repeat <= 1) {
        func.emitError() << "the batch '" << name
                         << "' cannot stay symbolic: the model is kept "
                         << split.reason
                         << "; give it a size with --dynamic-dims " << name
                         << "=SIZE (or --input-shape)";
        return signalPassFailure();
      }
      split.reason = "symbolic '" + name.str() + "', run once per sample (" +
                     split.reason.substr(split.reason.find('(') + 1);
    }
    func->setAttr(kBatchSplitAttr, builder.getStringAttr(split.reason));
    if (split.repeat > 1)
      func->setAttr(kBatchRepeatAttr, builder.getI64IntegerAttr(split.repeat));
    else
      func->removeAttr(kBatchRepeatAttr);
  }

private:
  BatchSplitMode parsedMode = BatchSplitMode::Auto;
};

} // namespace
} // namespace kiln::graph
