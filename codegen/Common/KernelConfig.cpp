//===- KernelConfig.cpp - Tunable kernels and their configurations --------===//

#include "codegen/Common/KernelConfig.h"
#include "codegen/Common/BlockedConv.h"
#include "codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

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
  json::Array rows;
  for (int64_t r = 1; r <= std::min<int64_t>(sizes.m, 16); ++r)
    if (sizes.m % r == 0)
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
/// and the module stays small whatever the weights.
std::string standaloneModule(linalg::LinalgOp op) {
  OpBuilder b(op.getContext());
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Value> arguments;
  SmallVector<Type> inputTypes;
  for (Value input : op.getDpsInputs())
    if (!isConstantWeight(input)) {
      arguments.push_back(input);
      inputTypes.push_back(input.getType());
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
  for (Value input : op.getDpsInputs())
    if (isConstantWeight(input)) {
      auto type = cast<RankedTensorType>(input.getType());
      mapping.map(
          input, arith::ConstantOp::create(
                     b, loc, type,
                     DenseElementsAttr::get(
                         type, b.getFloatAttr(type.getElementType(), 0.0625))));
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
      integer(kReductionTile), config.getBoolean(kParallel));
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
  kernel.signature = kernelSignature(op);
  kernel.flops = 2;
  for (int64_t range : op.getStaticLoopRanges())
    kernel.flops *= static_cast<double>(range);
  return kernel;
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
                                 std::vector<TuningRecord> *applied) {
  bool ok = true;
  module.walk([&](linalg::LinalgOp op) {
    std::optional<TunableKernel> kernel = describeKernel(op, target);
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

json::Value listKernels(ModuleOp module, const KernelTarget &target) {
  json::Array kernels;
  llvm::StringMap<size_t> index;
  module.walk([&](linalg::LinalgOp op) {
    std::optional<TunableKernel> kernel = describeKernel(op, target);
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
          {"module", standaloneModule(op)},
      });
    }
    json::Object &entry = *kernels[it->second].getAsObject();
    entry["count"] = *entry.getInteger("count") + 1;
    entry.getArray("nodes")->push_back(describeLocation(op->getLoc()));
  });
  return json::Object{{"target", target.key},
                      {"vector_width", target.vectorWidth},
                      {"parallel", target.parallel},
                      {"kernels", std::move(kernels)}};
}

} // namespace kiln::codegen
