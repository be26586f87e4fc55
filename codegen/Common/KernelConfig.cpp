//===- KernelConfig.cpp - Tunable kernels and their configurations --------===//

#include "codegen/Common/KernelConfig.h"
#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/Passes.h"
#include "codegen/Utils/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace json = llvm::json;

namespace kiln::codegen {
namespace {

constexpr llvm::StringLiteral kAlgorithm = attr::kKnobAlgorithm;
constexpr llvm::StringLiteral kVectorWidth = attr::kKnobVectorWidth;
constexpr llvm::StringLiteral kVectors = attr::kKnobVectors;
constexpr llvm::StringLiteral kRows = attr::kKnobRows;
constexpr llvm::StringLiteral kReductionTile = attr::kKnobReductionTile;
constexpr llvm::StringLiteral kParallel = attr::kKnobParallel;
constexpr llvm::StringLiteral kTiles = attr::kKnobTiles;

/// Loop nests of fewer iterations are not listed: on threads they would
/// cost more than they gain (kiln-cpu-parallelize's default threshold is
/// four times this), and a model has many of them.
constexpr int64_t kMinLoopNestIterations = 4096;

/// The sizes a contraction's register blocking works with: the innermost M,
/// N and K loops of the op (or of the contraction an im2col convolution
/// becomes).
struct ContractionSizes {
  int64_t m, n, k;
};

/// The contraction sizes of an op that kiln-cpu-tile-and-vectorize blocks,
/// under the same conditions it checks: static tensors, one output whose
/// innermost dimension is N.
std::optional<ContractionSizes> contractionSizes(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(op) || op.hasDynamicShape())
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  AffineMap outputMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (outputMap.getNumResults() == 0 ||
      outputMap.getResults().back() !=
          getAffineDimExpr(dims->n.back(), op.getContext()))
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  return ContractionSizes{ranges[dims->m.back()], ranges[dims->n.back()],
                          ranges[dims->k.back()]};
}

/// The contraction an NCHW convolution becomes under im2col: M is the
/// filters, N the output pixels, K the taps of one filter.
std::optional<ContractionSizes> im2colSizes(linalg::Conv2DNchwFchwOp conv) {
  if (!conv.hasPureTensorSemantics())
    return std::nullopt;
  auto input = dyn_cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto filter = dyn_cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto output = dyn_cast<RankedTensorType>(conv.getOutputs()[0].getType());
  if (!input || !filter || !output || !input.hasStaticShape() ||
      !filter.hasStaticShape() || !output.hasStaticShape())
    return std::nullopt;
  return ContractionSizes{
      filter.getDimSize(0), output.getDimSize(2) * output.getDimSize(3),
      filter.getDimSize(1) * filter.getDimSize(2) * filter.getDimSize(3)};
}

/// The register-blocking knobs of a contraction of these sizes. Values that
/// would make the same code as a smaller one are left out.
void addContractionKnobs(json::Object &space, ContractionSizes sizes,
                         const KernelTarget &target) {
  json::Array widths{target.vectorWidth};
  if (target.vectorWidth >= 8)
    widths.push_back(target.vectorWidth / 2);
  int64_t narrowest =
      target.vectorWidth >= 8 ? target.vectorWidth / 2 : target.vectorWidth;
  json::Array vectors;
  for (int64_t v : {1, 2, 4})
    if (v == 1 || v * narrowest <= sizes.n)
      vectors.push_back(v);
  // A row block that divides M, or that M is split for (its whole blocks,
  // then a remainder); any other runs as its largest divisor of M, which is
  // listed already.
  json::Array rows;
  for (int64_t r = 1; r <= std::min<int64_t>(sizes.m, 16); ++r)
    if (sizes.m % r == 0 || wholeRowBlocks(sizes.m, r))
      rows.push_back(r);
  json::Array steps;
  for (int64_t s : {1, 2, 4, 8})
    if (sizes.k % s == 0)
      steps.push_back(s);
  space[kVectorWidth] = std::move(widths);
  space[kVectors] = std::move(vectors);
  space[kRows] = std::move(rows);
  space[kReductionTile] = std::move(steps);
  if (target.parallel)
    space[kParallel] = json::Array{false, true};
}

/// Whether `value` is used only as the accumulator of another linalg op (a
/// bias broadcast into a convolution's output): such an op runs inside that
/// op's tiles, where its own knobs would change nothing.
bool onlyInitialises(Value value) {
  if (value.use_empty())
    return false;
  for (OpOperand &use : value.getUses()) {
    auto user = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
    if (!user || !user.isDpsInit(&use))
      return false;
  }
  return true;
}

/// Whether an elementwise `op` becomes a contraction's or convolution's
/// epilogue (kiln-cpu-tile-and-vectorize computes it in the producer's
/// tiles): it reads the result of one, its only use.
bool isEpilogue(linalg::LinalgOp op, const KernelTarget &target) {
  if (op.getNumLoops() != op.getNumParallelLoops())
    return false;
  return llvm::any_of(op.getDpsInputs(), [&](Value input) {
    auto producer = input.getDefiningOp<linalg::LinalgOp>();
    return producer && input.hasOneUse() &&
           describeKernel(producer, target).has_value();
  });
}

/// Whether `op` is a window op as the blocked layout lowers depthwise
/// convolutions and pools: an elementwise op over its window's taps, two or
/// more slices of one (padded) input (each times its per-channel weights,
/// for a convolution).
bool isWindowTaps(linalg::LinalgOp op) {
  llvm::SmallDenseMap<Value, int> slicesOf;
  for (Value input : op.getDpsInputs())
    if (auto slice = input.getDefiningOp<tensor::ExtractSliceOp>())
      if (++slicesOf[slice.getSource()] >= 2)
        return true;
  return false;
}

/// The knobs of a loop nest that kiln-cpu-parallelize puts on threads:
/// whether it does, and into how many tiles it cuts the leading parallel
/// loops (values beyond their iterations would cut the same tiles).
void addLoopNestKnobs(json::Object &space, linalg::LinalgOp op) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t parallelIterations = 1;
  for (auto [range, iterator] : llvm::zip(ranges, iterators)) {
    if (iterator != utils::IteratorType::parallel)
      break;
    parallelIterations *= range;
  }
  json::Array tiles;
  for (int64_t t : {2, 4, 8, 16, 32, 64, 128})
    if (t <= parallelIterations)
      tiles.push_back(t);
  if (tiles.empty())
    return;
  space[kParallel] = json::Array{false, true};
  space[kTiles] = std::move(tiles);
}

std::string joinInts(ArrayRef<int64_t> values) {
  return llvm::join(
      llvm::map_range(values, [](int64_t v) { return std::to_string(v); }),
      "x");
}

/// "op input-types -> output-type [attributes]", e.g.
/// "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>".
std::string kernelSignature(linalg::LinalgOp op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " ";
  llvm::interleaveComma(op.getDpsInputs(), os,
                        [&](Value v) { os << v.getType(); });
  os << " -> ";
  llvm::interleaveComma(op->getResultTypes(), os);
  if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation())) {
    SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
    SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
    os << " strides " << joinInts(strides) << " dilations "
       << joinInts(dilations);
  } else if (isa<linalg::GenericOp>(op.getOperation()) ||
             op.hasUserDefinedMaps()) {
    os << " maps ";
    llvm::interleaveComma(op.getIndexingMapsArray(), os);
  }
  return text;
}

/// Where an op came from: the ONNX node ("name (OpType)") when there is one.
std::string describeLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    return describeLocation(fused.getLocations().front());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

/// Whether `value` is a constant float tensor (a weight).
bool isConstantWeight(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && isa<FloatType>(type.getElementType()) &&
         matchPattern(value, m_Constant());
}

/// A module holding `op` alone: `func.func @main` takes its inputs and
/// returns its result, accumulated from zero. Constant inputs (weights) stay
/// constants, as splats of 1/16, so that what needs them constant (the
/// compile-time filter transform of Winograd) applies to the kernel alone,
/// and the module stays small whatever the weights; with `distinctWeights`
/// (a loop nest's, a few values per channel) they vary instead.
std::string standaloneModule(linalg::LinalgOp op, bool distinctWeights) {
  OpBuilder b(op.getContext());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  // An input sliced from another tensor with static offsets (a depthwise
  // convolution's taps, windows of one padded input, and their weights) is
  // sliced in the module too, from the whole tensor: the kernel then reads
  // the windows where they overlap, as in the model, and is recognised as
  // the same kind.
  auto wholeOf = [](Value input) -> Value {
    auto slice = input.getDefiningOp<tensor::ExtractSliceOp>();
    if (slice && slice.getOffsets().empty() && slice.getSizes().empty() &&
        slice.getStrides().empty())
      return slice.getSource();
    return input;
  };
  SmallVector<Value> arguments;
  SmallVector<Type> inputTypes;
  for (Value input : op.getDpsInputs())
    if (Value whole = wholeOf(input);
        !isConstantWeight(whole) && !llvm::is_contained(arguments, whole)) {
      arguments.push_back(whole);
      inputTypes.push_back(whole.getType());
    }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto func = func::FuncOp::create(b, loc, "main",
                                   b.getFunctionType(inputTypes, {resultType}));
  for (unsigned i = 0; i < inputTypes.size(); ++i)
    func.setArgAttr(i, attr::kName, b.getStringAttr("in" + std::to_string(i)));
  func.setResultAttr(0, attr::kName, b.getStringAttr("out"));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Type elementType = resultType.getElementType();
  Value empty =
      tensor::EmptyOp::create(b, loc, resultType.getShape(), elementType);
  Value zero = arith::ConstantOp::create(
      b, loc, cast<TypedAttr>(b.getZeroAttr(elementType)));
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  IRMapping mapping;
  for (auto [input, arg] : llvm::zip(arguments, entry->getArguments()))
    mapping.map(input, arg);
  for (Value input : op.getDpsInputs()) {
    Value whole = wholeOf(input);
    if (isConstantWeight(whole) && !mapping.contains(whole)) {
      auto type = cast<RankedTensorType>(whole.getType());
      // A loop nest's weights vary (1/16 to 13/16): elementwise fusion
      // folds a splat into the op's body, which would change the kernel.
      SmallVector<Attribute> values;
      int64_t count = distinctWeights ? type.getNumElements() : 1;
      for (int64_t i = 0; i < count; ++i)
        values.push_back(
            b.getFloatAttr(type.getElementType(), (i % 13 + 1) / 16.0));
      mapping.map(whole, arith::ConstantOp::create(
                             b, loc, type,
                             distinctWeights
                                 ? DenseElementsAttr::get(type, values)
                                 : DenseElementsAttr::get(type, values[0])));
    }
    if (whole != input && !mapping.contains(input))
      b.clone(*input.getDefiningOp(), mapping);
  }
  // Constants that the op's body reads from outside it: a ReLU's zero, a
  // table that a gather indexes (as a splat: its values change no code, and
  // an embedding's would make the module as large as the weights).
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value value : captured) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (type && type.hasStaticShape() && type.getNumElements() > 1)
      mapping.map(value, arith::ConstantOp::create(
                             b, loc, type,
                             DenseElementsAttr::get(
                                 type, cast<Attribute>(b.getZeroAttr(
                                           type.getElementType())))));
    else if (Operation *definition = value.getDefiningOp())
      b.clone(*definition, mapping);
  }
  mapping.map(op.getDpsInits()[0], init);
  Operation *clone = b.clone(*op.getOperation(), mapping);
  clone->removeAttr(kKernelConfigAttrName);
  func::ReturnOp::create(b, loc, clone->getResult(0));
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

/// Checks `config` against `space`: every knob must be one of the kernel's,
/// with one of its values.
bool validateConfig(const json::Object &config, const json::Object &space,
                    std::string &why) {
  for (const auto &[key, value] : config) {
    const json::Array *values = space.getArray(key);
    if (!values) {
      SmallVector<std::string> knobs;
      for (const auto &entry : space)
        knobs.push_back(entry.first.str());
      llvm::sort(knobs);
      why = "the kernel has no knob '" + key.str() +
            "' (its knobs: " + llvm::join(knobs, ", ") + ")";
      return false;
    }
    if (!llvm::is_contained(*values, value)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "value " << value << " of knob '" << key
         << "' is not in the kernel's search space "
         << json::Value(json::Array(*values));
      why = text;
      return false;
    }
  }
  return true;
}

/// The attribute form of a configuration that validateConfig admitted (its
/// knobs and values are the search space's).
KernelConfigAttr toAttribute(MLIRContext *ctx, const json::Object &config) {
  auto integer = [&](StringRef knob) -> std::optional<int64_t> {
    if (const json::Value *value = config.get(knob))
      return value->getAsInteger();
    return std::nullopt;
  };
  std::optional<ConvAlgorithm> algorithm;
  if (std::optional<StringRef> name = config.getString(kAlgorithm))
    algorithm = symbolizeConvAlgorithm(*name);
  return KernelConfigAttr::get(
      ctx, algorithm, integer(kVectorWidth), integer(kVectors), integer(kRows),
      integer(kReductionTile), config.getBoolean(kParallel), integer(kTiles));
}

/// `kernel` with `op`'s signature and flops (two per iteration of its
/// loops: a multiply-add's).
TunableKernel named(TunableKernel kernel, linalg::LinalgOp op) {
  kernel.signature = kernelSignature(op);
  kernel.flops = 2;
  for (int64_t range : op.getStaticLoopRanges())
    kernel.flops *= static_cast<double>(range);
  return kernel;
}

} // namespace

std::optional<TunableKernel> describeKernel(linalg::LinalgOp op,
                                            const KernelTarget &target) {
  TunableKernel kernel;
  if (auto conv = dyn_cast<linalg::Conv2DNchwFchwOp>(op.getOperation())) {
    std::optional<ContractionSizes> sizes = im2colSizes(conv);
    if (!sizes)
      return std::nullopt;
    kernel.kind = "conv2d";
    json::Array algorithms;
    bool winograd = isWinogradCandidate(conv);
    for (StringRef name : convAlgorithmNames())
      if (winograd || !winogradTileOf(name))
        algorithms.push_back(name);
    kernel.space[kAlgorithm] = std::move(algorithms);
    addContractionKnobs(kernel.space, *sizes, target);
  } else if (std::optional<BlockedConv> blocked = matchBlockedConv(op)) {
    // Direct (register-blocked output tiles: M the output columns, N the
    // output block, K the input block, stepped through for every window
    // position) or Winograd.
    kernel.kind = "conv2d";
    json::Array algorithms;
    bool winograd = isWinogradCandidate(*blocked);
    for (StringRef name : convAlgorithmNames())
      if (name == "direct" || (winograd && winogradTileOf(name)))
        algorithms.push_back(name);
    kernel.space[kAlgorithm] = std::move(algorithms);
    addContractionKnobs(kernel.space,
                        ContractionSizes{blocked->outputShape[3],
                                         blocked->outputShape[4],
                                         blocked->inputShape[4]},
                        target);
  } else if (std::optional<ContractionSizes> sizes = contractionSizes(op)) {
    kernel.kind = "contraction";
    addContractionKnobs(kernel.space, *sizes, target);
  } else {
    return std::nullopt;
  }
  return named(std::move(kernel), op);
}

/// A loop nest that kiln-cpu-parallelize runs on threads, as a kernel:
/// "window" (a depthwise convolution or pool; its knobs also the positions
/// per vector step,
/// kiln-cpu-reorder-loops), "elementwise" (every loop parallel) or
/// "reduction" (pools, a softmax's sums).
std::optional<TunableKernel> describeLoopNest(linalg::LinalgOp op,
                                              const KernelTarget &target) {
  if (!op.hasPureTensorSemantics() || op.hasDynamicShape() ||
      op.getNumDpsInits() != 1 || op.getNumLoops() == 0 ||
      isa<linalg::FillOp, linalg::CopyOp>(op.getOperation()) ||
      describeKernel(op, target) || onlyInitialises(op->getResult(0)) ||
      isEpilogue(op, target))
    return std::nullopt;
  int64_t iterations = 1;
  for (int64_t range : op.getStaticLoopRanges())
    iterations *= range;
  if (iterations < kMinLoopNestIterations)
    return std::nullopt;
  // An op of constants only (a weight's transpose) is the compiler's to
  // fold, not the tuner's.
  if (llvm::all_of(op.getDpsInputs(), [](Value input) {
        return matchPattern(input, m_Constant());
      }))
    return std::nullopt;
  // Its module (standaloneModule) can hold the op alone only if what its
  // body reads from outside it is constant.
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  if (!llvm::all_of(captured, [](Value value) {
        return matchPattern(value, m_Constant());
      }))
    return std::nullopt;
  TunableKernel kernel;
  bool elementwise = op.getNumLoops() == op.getNumParallelLoops();
  if (isa<linalg::DepthwiseConv1DNwcWcOp, linalg::DepthwiseConv2DNchwChwOp,
          linalg::DepthwiseConv2DNhwcHwcOp, linalg::DepthwiseConv3DNdhwcDhwcOp>(
          op.getOperation())) {
    kernel.kind = "window"; // the loop nest of an unblocked layout
  } else if (elementwise && op.getNumLoops() >= 2 && isWindowTaps(op)) {
    kernel.kind = "window";
    int64_t positions = op.getStaticLoopRanges()[op.getNumLoops() - 2];
    json::Array rows;
    for (int64_t r = 1; r <= std::min<int64_t>(positions, 8); ++r)
      if (positions % r == 0)
        rows.push_back(r);
    if (rows.size() > 1)
      kernel.space[kRows] = std::move(rows);
  } else {
    kernel.kind = elementwise ? "elementwise" : "reduction";
  }
  if (target.parallel)
    addLoopNestKnobs(kernel.space, op);
  if (kernel.space.empty())
    return std::nullopt;
  return named(std::move(kernel), op);
}

void copyKernelConfig(Operation *from, Operation *to) {
  if (Attribute config = from->getAttr(kKernelConfigAttrName))
    to->setAttr(kKernelConfigAttrName, config);
}

llvm::Expected<TuningDatabase> TuningDatabase::load(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return llvm::createStringError("cannot read the tuning database " +
                                   path.str() + ": " +
                                   file.getError().message());
  TuningDatabase database;
  database.filePath = path.str();
  SmallVector<StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (auto [index, line] : llvm::enumerate(lines)) {
    unsigned number = index + 1;
    auto fail = [&](const Twine &why) {
      return llvm::createStringError(path + ":" + Twine(number) + ": " + why);
    };
    if (line.trim().empty())
      continue;
    llvm::Expected<json::Value> value = json::parse(line);
    if (!value)
      return fail("not a JSON value (" + llvm::toString(value.takeError()) +
                  "); a tuning database holds one JSON object per line");
    const json::Object *object = value->getAsObject();
    if (!object)
      return fail("expected a JSON object");
    std::optional<StringRef> kernel = object->getString("kernel");
    std::optional<StringRef> target = object->getString("target");
    const json::Object *config = object->getObject("config");
    if (!kernel || !target)
      return fail("a record needs \"kernel\" and \"target\" strings");
    if (!config)
      return fail("a record needs a \"config\" object");
    TuningRecord record;
    record.kernel = kernel->str();
    record.target = target->str();
    record.config = *config;
    record.line = number;
    if (const json::Value *ms = object->get("ms")) {
      std::optional<double> time = ms->getAsNumber();
      if (!time || *time < 0)
        return fail("\"ms\" must be a non-negative number");
      record.ms = time;
    }
    // A candidate that failed to compile or run is recorded, never chosen.
    if (object->get("error"))
      continue;
    auto key = std::make_pair(record.kernel, record.target);
    auto it = database.best.find(key);
    auto better = [](const TuningRecord &a, const TuningRecord &b) {
      if (!a.ms || !b.ms)
        return !a.ms && b.ms; // pinned first; the first pinned stays
      return *a.ms < *b.ms;
    };
    if (it == database.best.end())
      database.best.emplace(key, std::move(record));
    else if (better(record, it->second))
      it->second = std::move(record);
  }
  return database;
}

const TuningRecord *TuningDatabase::lookup(llvm::StringRef kernel,
                                           llvm::StringRef target) const {
  auto it = best.find(std::make_pair(kernel.str(), target.str()));
  return it == best.end() ? nullptr : &it->second;
}

LogicalResult applyKernelConfigs(ModuleOp module,
                                 const TuningDatabase &database,
                                 const KernelTarget &target,
                                 std::vector<TuningRecord> *applied,
                                 KernelStage stage) {
  bool ok = true;
  module.walk([&](linalg::LinalgOp op) {
    std::optional<TunableKernel> kernel = stage == KernelStage::Kernels
                                              ? describeKernel(op, target)
                                              : describeLoopNest(op, target);
    if (!kernel)
      return;
    const TuningRecord *record = database.lookup(kernel->signature, target.key);
    if (!record)
      return;
    std::string why;
    if (!validateConfig(record->config, kernel->space, why)) {
      op->emitError() << "tuning database " << database.path() << ":"
                      << record->line << ": " << why << "; kernel '"
                      << kernel->signature << "'";
      ok = false;
      return;
    }
    op->setAttr(kKernelConfigAttrName,
                toAttribute(op->getContext(), record->config));
    if (applied)
      applied->push_back(*record);
  });
  return success(ok);
}

LogicalResult fuseElementwise(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  populateFuseElementwisePatterns(patterns, /*broadcasts=*/true);
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (auto func : module.getOps<func::FuncOp>())
    if (failed(applyPatternsGreedily(func, frozen)))
      return failure();
  return success();
}

json::Value listKernels(ModuleOp module, const KernelTarget &target) {
  json::Array kernels;
  llvm::StringMap<size_t> index;
  // The loop nests as kiln-cpu-parallelize meets them: after elementwise
  // fusion (a depthwise convolution with its activation).
  OwningOpRef<ModuleOp> fused(module.clone());
  if (failed(fuseElementwise(*fused)))
    fused = nullptr;
  auto list = [&](linalg::LinalgOp op, KernelStage stage) {
    std::optional<TunableKernel> kernel = stage == KernelStage::Kernels
                                              ? describeKernel(op, target)
                                              : describeLoopNest(op, target);
    if (!kernel)
      return;
    auto [it, inserted] = index.try_emplace(kernel->signature, kernels.size());
    if (inserted) {
      kernels.push_back(json::Object{
          {"signature", kernel->signature},
          {"kind", kernel->kind},
          {"flops", kernel->flops},
          {"count", 0},
          {"nodes", json::Array{}},
          {"space", std::move(kernel->space)},
          {"module", standaloneModule(op, /*distinctWeights=*/stage ==
                                              KernelStage::LoopNests)},
      });
    }
    json::Object &entry = *kernels[it->second].getAsObject();
    entry["count"] = *entry.getInteger("count") + 1;
    entry.getArray("nodes")->push_back(describeLocation(op->getLoc()));
  };
  module.walk([&](linalg::LinalgOp op) { list(op, KernelStage::Kernels); });
  if (fused)
    fused->walk([&](linalg::LinalgOp op) { list(op, KernelStage::LoopNests); });
  return json::Object{{"target", target.key},
                      {"vector_width", target.vectorWidth},
                      {"parallel", target.parallel},
                      {"kernels", std::move(kernels)}};
}

} // namespace kiln::codegen
