//===- Compiler.cpp - From a model file to a shared object ----------------===//
//
// Drives include/kiln/compiler.h: options resolved before anything else,
// import, the one pass pipeline of lib/Pipeline/Pipelines.h run stage by
// stage, then LLVM IR with the model ABI, object code and linking. The
// driver changes nothing in the IR itself: what it reads at the end (the
// model's interface, its batch, its workspace, its kernels) the passes wrote
// as attributes of the entry function.
//
//===----------------------------------------------------------------------===//

#include "kiln/compiler.h"

#include "codegen/CPU/Passes.h"
#include "codegen/Common/KernelConfig.h"
#include "codegen/GPU/Passes.h"
#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"
#include "kiln/model_abi.h"
#include "lib/Import/ONNXImporter.h"
#include "lib/Pipeline/Pipelines.h"
#include "lib/Pipeline/Registration.h"
#include "lib/Target/GPUTarget.h"
#include "lib/Target/HalfStorage.h"
#include "lib/Target/Linker.h"
#include "lib/Target/ModelABI.h"
#include "lib/Target/ObjectEmitter.h"
#include "lib/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>

using namespace mlir;

namespace kiln {

namespace {

/// The name of the model's entry function (kiln-graph-make-entry's
/// default); `main` would mean something else to a linker.
constexpr const char *kEntryName = "kiln_model_main";

/// Collects diagnostics as lines of text instead of printing them.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          std::string line;
          llvm::raw_string_ostream os(line);
          // The importer's messages name their node already.
          std::string message = diag.str();
          if (!StringRef(message).starts_with("node '"))
            os << formatLocation(diag.getLocation());
          os << message;
          // A note's first line only: "see current operation" notes would
          // print a whole module.
          for (Diagnostic &note : diag.getNotes()) {
            std::string text = note.str();
            StringRef first = StringRef(text).split('\n').first;
            // A function's is its signature's line, mostly empty.
            if (!first.rtrim().ends_with(":"))
              os << "\n  note: " << first;
          }
          lines.push_back(line);
          return success();
        }) {}

  std::string text() const { return llvm::join(lines, "\n"); }
  const std::vector<std::string> &messages() const { return lines; }
  void clear() { lines.clear(); }

private:
  /// "node_name (OpType): " for an imported node; "file:line:col: " for text.
  static std::string formatLocation(Location loc) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (auto name = dyn_cast<NameLoc>(loc))
      os << name.getName().getValue() << ": ";
    else if (auto file = dyn_cast<FileLineColLoc>(loc);
             file && file.getLine() == 0)
      os << file.getFilename().getValue() << ": "; // the model as a whole
    else if (file)
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn() << ": ";
    else if (auto fused = dyn_cast<FusedLoc>(loc);
             fused && !fused.getLocations().empty())
      return formatLocation(fused.getLocations().front());
    return text;
  }

  std::vector<std::string> lines;
  ScopedDiagnosticHandler handler;
};

/// A kiln_dtype for a graph-level element type, or 0 if the ABI has none.
int32_t dtypeOf(Type type) {
  if (type.isF32())
    return KILN_DTYPE_F32;
  if (type.isF16())
    return KILN_DTYPE_F16;
  if (type.isBF16())
    return KILN_DTYPE_BF16;
  if (type.isF64())
    return KILN_DTYPE_F64;
  if (isa<Float8E4M3FNType>(type))
    return KILN_DTYPE_F8E4M3FN;
  if (isa<Float8E4M3FNUZType>(type))
    return KILN_DTYPE_F8E4M3FNUZ;
  if (isa<Float8E5M2Type>(type))
    return KILN_DTYPE_F8E5M2;
  if (isa<Float8E5M2FNUZType>(type))
    return KILN_DTYPE_F8E5M2FNUZ;
  if (isa<Float8E8M0FNUType>(type))
    return KILN_DTYPE_F8E8M0;
  if (isa<Float4E2M1FNType>(type))
    return KILN_DTYPE_F4E2M1;
  if (auto integer = dyn_cast<IntegerType>(type)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1:
      return KILN_DTYPE_BOOL;
    case 2:
      return isUnsigned ? KILN_DTYPE_U2 : KILN_DTYPE_I2;
    case 4:
      return isUnsigned ? KILN_DTYPE_U4 : KILN_DTYPE_I4;
    case 8:
      return isUnsigned ? KILN_DTYPE_U8 : KILN_DTYPE_I8;
    case 16:
      return isUnsigned ? KILN_DTYPE_U16 : KILN_DTYPE_I16;
    case 32:
      return isUnsigned ? KILN_DTYPE_U32 : KILN_DTYPE_I32;
    case 64:
      return isUnsigned ? KILN_DTYPE_U64 : KILN_DTYPE_I64;
    default:
      break;
    }
  }
  return KILN_DTYPE_INVALID;
}

/// Checks that every input and output of the imported `@main` has an
/// element type the model ABI can describe, before any pass runs.
LogicalResult checkElementTypes(func::FuncOp main) {
  auto check = [&](Type type, StringAttr name, const char *kind,
                   unsigned index) -> LogicalResult {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || dtypeOf(shaped.getElementType()) != KILN_DTYPE_INVALID)
      return success();
    return main.emitError()
           << kind << " '"
           << (name ? name.str() : std::string(kind) + std::to_string(index))
           << "' has an element type the model ABI does not support: "
           << shaped.getElementType();
  };
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (failed(check(main.getArgument(i).getType(),
                     main.getArgAttrOfType<StringAttr>(i, graph::kNameAttr),
                     "input", i)))
      return failure();
  for (unsigned i = 0; i < main.getNumResults(); ++i)
    if (failed(check(main.getResultTypes()[i],
                     main.getResultAttrOfType<StringAttr>(i, graph::kNameAttr),
                     "output", i)))
      return failure();
  return success();
}

/// The model's signature as the passes left it on the entry function:
/// kiln-graph-make-entry's interface, kiln-graph-split-batch's repeat and
/// kiln-codegen-plan-memory's workspace.
FailureOr<ModelSignature> readModelSignature(Operation *entry) {
  ModelSignature signature;
  if (auto repeat = entry->getAttrOfType<IntegerAttr>(graph::kBatchRepeatAttr))
    signature.repeat = repeat.getInt();
  // A symbolic batch: the entry takes one sample, and the run's batch is
  // the repeat count (kiln-graph-split-batch split it).
  if (auto symbols = entry->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr)) {
    for (Attribute item : symbols) {
      auto fields = cast<DictionaryAttr>(item);
      signature.symbols.push_back({fields.getAs<StringAttr>("name").str(),
                                   fields.getAs<IntegerAttr>("min").getInt(),
                                   fields.getAs<IntegerAttr>("max").getInt(),
                                   KILN_ABI_SYMBOL_REPEAT});
    }
    if (!signature.symbols.empty()) {
      if (signature.repeat <= 1)
        return entry->emitError("a symbolic batch that was not split");
      signature.repeatSymbol = 0;
    }
  }
  // The dimensions that the code reads at run time (a sequence length),
  // after the batch's symbol; the entry takes their memrefs' sizes.
  size_t firstDimSymbol = signature.symbols.size();
  if (auto dims = entry->getAttrOfType<ArrayAttr>(attr::kDimSymbols)) {
    for (Attribute item : dims) {
      auto fields = cast<DictionaryAttr>(item);
      signature.symbols.push_back({fields.getAs<StringAttr>("name").str(),
                                   fields.getAs<IntegerAttr>("min").getInt(),
                                   fields.getAs<IntegerAttr>("max").getInt(),
                                   KILN_ABI_SYMBOL_DIM});
    }
  }
  // The sizes that the data decides: symbols after the others, each
  // returned by the entry through a tensor<i64> output of its own.
  size_t firstResultSymbol = signature.symbols.size();
  if (auto results = entry->getAttrOfType<ArrayAttr>(attr::kResultSymbols)) {
    if (!results.empty() &&
        (signature.repeatSymbol >= 0 || signature.repeat > 1))
      return entry->emitError("outputs whose sizes the data decides, in a "
                              "model that runs one sample at a time");
    if (!results.empty() && firstResultSymbol > firstDimSymbol)
      return entry->emitError()
             << "outputs whose sizes the data decides beside symbolic "
                "dimensions that the code reads, which Kiln does not "
                "combine (yet)";
    for (Attribute item : results) {
      auto fields = cast<DictionaryAttr>(item);
      int64_t max = fields.getAs<IntegerAttr>("max").getInt();
      signature.symbols.push_back({fields.getAs<StringAttr>("name").str(), 0,
                                   max, KILN_ABI_SYMBOL_RESULT});
    }
  }
  auto read = [&](StringRef attr,
                  std::vector<TensorSignature> &list) -> LogicalResult {
    auto entries = entry->getAttrOfType<ArrayAttr>(attr);
    if (!entries)
      return entry->emitError() << "the entry function has no " << attr
                                << " (kiln-graph-make-entry did not run)";
    for (Attribute item : entries) {
      auto fields = dyn_cast<DictionaryAttr>(item);
      auto name = fields ? fields.getAs<StringAttr>("name") : nullptr;
      auto type = fields ? fields.getAs<TypeAttr>("type") : nullptr;
      auto passed = fields ? fields.getAs<BoolAttr>("passed") : nullptr;
      auto ranked = type ? dyn_cast<RankedTensorType>(type.getValue())
                         : RankedTensorType();
      if (!name || !ranked || !passed)
        return entry->emitError() << "malformed " << attr << " entry " << item;
      // A symbol's size, which the entry writes after its outputs.
      if (auto symbol = fields.getAs<IntegerAttr>("symbol")) {
        size_t k = firstResultSymbol + symbol.getInt();
        if (k >= signature.symbols.size() ||
            ranked.getElementType() !=
                IntegerType::get(entry->getContext(), 64) ||
            ranked.getRank() != 0)
          return entry->emitError()
                 << "malformed " << attr << " entry " << item;
        signature.resultArgs.push_back(k);
        continue;
      }
      if (!signature.resultArgs.empty())
        return entry->emitError() << "output '" << name.getValue()
                                  << "' after the sizes that the data decides";
      TensorSignature tensor;
      tensor.name = name.str();
      tensor.dtype = dtypeOf(ranked.getElementType());
      if (tensor.dtype == KILN_DTYPE_INVALID)
        return entry->emitError()
               << "'" << tensor.name
               << "' has an element type the model ABI does not support: "
               << ranked.getElementType();
      tensor.shape.assign(ranked.getShape().begin(), ranked.getShape().end());
      tensor.passed = passed.getValue();
      // The `?` dimensions: which symbol each is.
      if (auto dims = fields.getAs<DenseI64ArrayAttr>("symbol_dims")) {
        if (static_cast<int64_t>(dims.size()) != ranked.getRank())
          return entry->emitError()
                 << "malformed " << attr << " entry " << item;
        for (auto [d, symbol] : llvm::enumerate(dims.asArrayRef())) {
          if (symbol < 0 && ranked.isDynamicDim(d))
            return entry->emitError()
                   << "malformed " << attr << " entry " << item
                   << ": dimension " << d << " is `?` but names no symbol";
          if (symbol < 0)
            continue;
          if (firstDimSymbol + symbol >= firstResultSymbol)
            return entry->emitError()
                   << "malformed " << attr << " entry " << item;
          tensor.shape[d] = -1 - static_cast<int64_t>(firstDimSymbol + symbol);
        }
      } else if (!ranked.hasStaticShape()) {
        return entry->emitError() << "'" << tensor.name
                                  << "' has a `?` dimension that names no "
                                     "symbol";
      }
      if (signature.repeat > 1 && tensor.passed) {
        // The batch is split: the entry takes one sample of each tensor,
        // whose bytes are these times the run's sizes of its `?`
        // dimensions.
        uint64_t bytes =
            std::max<int64_t>(1, ranked.getElementTypeBitWidth() / 8);
        for (int64_t size : ranked.getShape().drop_front())
          if (!ShapedType::isDynamic(size))
            bytes *= size;
        tensor.sampleBytes = bytes;
      }
      // Every tensor leads with the batch where it is symbolic.
      if (signature.repeatSymbol >= 0 && !tensor.shape.empty())
        tensor.shape[0] = -1 - signature.repeatSymbol;
      if (auto dims = fields.getAs<DenseI64ArrayAttr>("dims")) {
        if (static_cast<int64_t>(dims.size()) != ranked.getRank())
          return entry->emitError()
                 << "malformed " << attr << " entry " << item;
        for (auto [d, symbol] : llvm::enumerate(dims.asArrayRef())) {
          if (symbol < 0)
            continue;
          if (firstResultSymbol + symbol >= signature.symbols.size())
            return entry->emitError()
                   << "malformed " << attr << " entry " << item;
          tensor.shape[d] =
              -1 - static_cast<int64_t>(firstResultSymbol + symbol);
        }
      }
      list.push_back(std::move(tensor));
    }
    return success();
  };
  if (failed(read(graph::kModelInputsAttr, signature.inputs)) ||
      failed(read(graph::kModelOutputsAttr, signature.outputs)))
    return failure();
  // The entry runs once per sample of the run's batch: its kernels' flops
  // are one sample's.
  if (signature.repeatSymbol >= 0)
    signature.repeat = 1;
  if (auto size =
          entry->getAttrOfType<IntegerAttr>(codegen::kWorkspaceSizeAttr))
    signature.workspaceSize = size.getInt();
  // The run-time index checks (kiln-codegen-lower-index-checks).
  if (auto module = entry->getParentOfType<ModuleOp>()) {
    signature.runErrorArgument = module->hasAttr(attr::kRunErrorArgument);
    if (auto checks = module->getAttrOfType<ArrayAttr>(attr::kIndexChecks))
      for (Attribute item : checks) {
        auto fields = cast<DictionaryAttr>(item);
        signature.checks.push_back(
            {fields.getAs<StringAttr>("source").str(),
             fields.getAs<StringAttr>("what").str(),
             fields.getAs<IntegerAttr>("low").getInt(),
             fields.getAs<IntegerAttr>("high").getInt()});
      }
  }
  signature.runErrorGlobal = codegen::kRunErrorGlobal.str();
  return signature;
}

/// The largest tensor Kiln compiles: 16 GiB. A larger one (a
/// ConstantOfShape, Expand or Tile to 10^12 elements in a 200-byte model)
/// would be materialized by constant folding or LLVM and take the compiler
/// down with it.
constexpr uint64_t kMaxTensorBytes = uint64_t(16) << 30;

/// Refuses every value of `module` whose static tensor type exceeds
/// kMaxTensorBytes, naming the node that makes it.
LogicalResult checkTensorSizes(ModuleOp module) {
  auto tooLarge = [](Type type) -> std::optional<std::string> {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return std::nullopt;
    uint64_t bytes =
        std::max<uint64_t>(1, (tensor.getElementTypeBitWidth() + 7) / 8);
    bool overflow = false;
    for (int64_t dim : tensor.getShape()) {
      uint64_t next = 0;
      overflow =
          overflow || __builtin_mul_overflow(bytes, uint64_t(dim), &next);
      bytes = next;
    }
    if (!overflow && bytes <= kMaxTensorBytes)
      return std::nullopt;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "a tensor of type " << tensor << " ("
       << (overflow ? std::string("more than 2^64") : std::to_string(bytes))
       << " bytes), above Kiln's limit of 16 GiB per tensor";
    return text;
  };
  WalkResult walk = module.walk([&](Operation *op) {
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      for (Type type : func.getArgumentTypes())
        if (auto why = tooLarge(type)) {
          func.emitError() << "an input is " << *why;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    }
    for (Type type : op->getResultTypes())
      if (auto why = tooLarge(type)) {
        op->emitError() << "makes " << *why;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Refuses a gather or scatter whose constant indices are out of range (an
/// error in ONNX), naming the node; indices computed at run time are
/// checked when the model runs (kiln.check_index).
LogicalResult checkConstantIndices(ModuleOp module) {
  WalkResult walk = module.walk([&](Operation *op) {
    std::optional<graph::IndexedDims> dims = graph::getIndexedDims(op);
    Attribute constant;
    if (!dims || !matchPattern(dims->indices, m_Constant(&constant)))
      return WalkResult::advance();
    auto values = dyn_cast<DenseIntElementsAttr>(constant);
    if (!values)
      return WalkResult::advance();
    bool isUnsigned = values.getElementType().isUnsignedInteger();
    size_t i = 0;
    for (const APInt &raw : values.getValues<APInt>()) {
      size_t position = dims->perPosition ? i++ % dims->sizes.size() : 0;
      int64_t size = dims->sizes[position];
      // An unsigned index beyond int64_t is out of range all the same.
      int64_t value =
          isUnsigned
              ? int64_t(std::min<uint64_t>(raw.getZExtValue(), INT64_MAX))
              : raw.getSExtValue();
      if (value >= dims->least(size) && value < size)
        continue;
      InFlightDiagnostic error = op->emitError() << "index " << value;
      if (dims->perPosition)
        error << " (entry " << position << " of an index tuple)";
      error << " is out of range [" << dims->least(size) << ", " << size - 1
            << "] of the dimension it indexes";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// One report line: "stage: N ops (a.x: 3, b.y: 1)".
std::string countOps(ModuleOp module, StringRef stage) {
  std::map<std::string, int64_t> counts;
  int64_t total = 0;
  module.walk([&](Operation *op) {
    if (isa<ModuleOp, func::FuncOp, func::ReturnOp>(op))
      return;
    ++counts[op->getName().getStringRef().str()];
    ++total;
  });
  std::string line;
  llvm::raw_string_ostream os(line);
  os << stage << ": " << total << " ops (";
  llvm::interleaveComma(counts, os, [&](auto &entry) {
    os << entry.first << ": " << entry.second;
  });
  os << ")\n";
  return line;
}

/// Writes `data` to `path` ("-" is standard output).
llvm::Error writeOutput(const std::string &path, llvm::StringRef data,
                        bool binary) {
  std::error_code ec;
  llvm::ToolOutputFile file(
      path, ec, binary ? llvm::sys::fs::OF_None : llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError("cannot open " + path + ": " + ec.message());
  file.os() << data;
  file.os().flush();
  if (file.os().has_error())
    return llvm::createStringError("cannot write " + path);
  file.keep();
  return llvm::Error::success();
}

/// The module as kiln-opt prints it; with `locations`, as kiln-opt parses
/// it back with the same locations (the ONNX node names that passes read).
std::string printModule(ModuleOp module, bool locations = false) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module.print(os, flags);
  // A final newline, as kiln-opt (MlirOptMain) prints.
  os << "\n";
  return text;
}

ImportOptions importOptions(const CompileOptions &options) {
  ImportOptions result;
  result.inputShapes = options.inputShapes;
  result.sequenceShapes = options.sequenceShapes;
  // Bounds of one size fix the dimension.
  for (const auto &[name, bounds] : options.dynamicDims) {
    if (bounds.first == bounds.second)
      result.dimSizes[name] = bounds.first;
    else
      result.symbolBounds[name] = bounds;
  }
  return result;
}

/// The size that stands for a symbolic batch in the second import, which
/// checks the first (see Compilation::checkBatchIndependence).
constexpr int64_t kSecondBatchProbe = 89;

/// Whether two attributes are the same, taking two weights of one type as
/// the same: each import holds its weights as resources of its own.
bool sameAttribute(Attribute a, Attribute b) {
  if (a == b)
    return true;
  return isa<DenseResourceElementsAttr>(a) &&
         isa<DenseResourceElementsAttr>(b) &&
         cast<TypedAttr>(a).getType() == cast<TypedAttr>(b).getType();
}

/// The first op of `a`'s body (in pre-order) that differs from its
/// counterpart in `b`'s: its name, operand count, result types or
/// attributes. Null where the bodies are the same.
Operation *firstDifference(Operation *a, Operation *b) {
  SmallVector<Operation *> left, right;
  for (Region &region : a->getRegions())
    region.walk<WalkOrder::PreOrder>(
        [&](Operation *op) { left.push_back(op); });
  for (Region &region : b->getRegions())
    region.walk<WalkOrder::PreOrder>(
        [&](Operation *op) { right.push_back(op); });
  for (size_t i = 0; i < left.size(); ++i) {
    if (i >= right.size())
      return left[i];
    Operation *x = left[i], *y = right[i];
    if (x->getName() != y->getName() ||
        x->getNumOperands() != y->getNumOperands() ||
        x->getResultTypes() != y->getResultTypes())
      return x;
    ArrayRef<NamedAttribute> xs = x->getAttrs(), ys = y->getAttrs();
    if (xs.size() != ys.size())
      return x;
    for (auto [p, q] : llvm::zip(xs, ys))
      if (p.getName() != q.getName() ||
          !sameAttribute(p.getValue(), q.getValue()))
        return x;
  }
  return left.size() < right.size() ? a : nullptr;
}

/// Whether registerCommandLineOptions ran in this process.
bool commandLineOptionsRegistered = false;

class Compilation {
public:
  explicit Compilation(const CompileOptions &options)
      : options(options), diagnostics(context) {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerAllToLLVMIRTranslations(registry);
    registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Checks and resolves the options, before anything is imported.
  LogicalResult resolveOptions() {
    llvm::Expected<PipelineOptions> resolved = resolvePipelineOptions(options);
    if (!resolved)
      return emitError(resolved.takeError());
    pipeline = std::move(*resolved);
    return success();
  }

  CompileResult run(OwningOpRef<ModuleOp> module,
                    const std::string &outputPath) {
    if (!module)
      return fail();
    if (failed(compile(*module, outputPath))) {
      // A symbolic batch beside sizes that the code reads runs once per
      // sample where its samples run apart; elsewhere its size is read at
      // run time like theirs, from a second import.
      if (readBatchBecause.empty() || !reimport)
        return fail(readBatchBecause.empty()
                        ? ""
                        : "the batch cannot stay symbolic: " +
                              readBatchBecause);
      std::string because = std::move(readBatchBecause);
      readBatchBecause.clear();
      diagnostics.clear();
      result = CompileResult();
      ImportOptions reading = importOptions(options);
      reading.readBatchAtRunTime = true;
      OwningOpRef<ModuleOp> again = reimport(reading);
      if (!again || failed(compile(*again, outputPath)))
        return fail("(there the batch's size is read at run time, as it is "
                    "not run once per sample: " +
                    because + ")");
      if (options.report)
        result.report +=
            "batch: read at run time (not split: " + because + ")\n";
    }
    result.ok = true;
    return result;
  }

  MLIRContext context;
  /// Imports the model again with other import options; empty for a model
  /// given as MLIR.
  std::function<OwningOpRef<ModuleOp>(const ImportOptions &)> reimport;
  /// Why a symbolic batch beside sizes that the code reads was not split:
  /// run() then imports the model again, reading the batch's size too.
  std::string readBatchBecause;

  /// The error messages so far, one each.
  const std::vector<std::string> &errorMessages() const {
    return diagnostics.messages();
  }

  CompileResult fail(std::string message = "") {
    result.ok = false;
    std::string collected = diagnostics.text();
    result.error = collected;
    if (!message.empty())
      result.error += (collected.empty() ? "" : "\n") + message;
    if (result.error.empty())
      result.error = "compilation failed";
    return result;
  }

private:
  /// Runs the passes of `stage` on `module`, with the pass manager's
  /// command-line options where a tool registered them.
  LogicalResult runStage(ModuleOp module, PipelineStage stage) {
    PassManager pm(&context, ModuleOp::getOperationName());
    buildPipeline(pm, pipeline, stage, stage);
    if (commandLineOptionsRegistered && failed(applyPassManagerCLOptions(pm)))
      return failure();
    if (commandLineOptionsRegistered)
      applyDefaultTimingPassManagerCLOptions(pm);
    return pm.run(module);
  }

  /// A symbolic batch stands as ImportOptions::batchProbe in the types
  /// until kiln-graph-split-batch makes the entry take one sample. A model
  /// that computes with the batch's size (a Shape whose batch becomes data,
  /// a Range over it) would keep the probe's value in its code: so the
  /// model is imported and lowered a second time with another probe, and
  /// the two entries must be the same. Where they differ, the batch cannot
  /// stay symbolic.
  LogicalResult checkBatchIndependence(Operation *entry) {
    auto symbols = entry->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
    if (!symbols || symbols.empty() || !reimport)
      return success();
    StringRef name =
        cast<DictionaryAttr>(symbols[0]).getAs<StringAttr>("name").getValue();
    ImportOptions second = importOptions(options);
    second.batchProbe = kSecondBatchProbe;
    OwningOpRef<ModuleOp> other = reimport(second);
    if (!other || failed(runStage(*other, PipelineStage::Graph)) ||
        failed(runStage(*other, PipelineStage::Linalg)))
      return failure();
    Operation *otherEntry = other->lookupSymbol(kEntryName);
    if (!otherEntry)
      return failure();
    Operation *differs = firstDifference(entry, otherEntry);
    if (!differs)
      return success();
    // Beside sizes that the code reads, the batch's is read too (run()).
    if (auto dims = entry->getAttrOfType<ArrayAttr>(attr::kDimSymbols);
        dims && !dims.empty()) {
      readBatchBecause = "the model computes with the batch's size (" +
                         differs->getName().getStringRef().str() + ")";
      return failure();
    }
    return differs->emitError()
           << "the model computes with the size of the batch '" << name
           << "' here (" << differs->getName()
           << "), so the batch cannot stay symbolic; give it a size with "
              "--dynamic-dims "
           << name << "=SIZE (or --input-shape)";
  }

  /// Where kiln-graph-split-batch kept a symbolic batch whole beside sizes
  /// that the code reads (it failed without an error): why, for run().
  void noteBatchKeptWhole(Operation *entry) {
    if (!entry || entry->hasAttr(graph::kBatchRepeatAttr))
      return;
    auto symbols = entry->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
    auto dims = entry->getAttrOfType<ArrayAttr>(attr::kDimSymbols);
    auto reason = entry->getAttrOfType<StringAttr>(graph::kBatchSplitAttr);
    if (symbols && !symbols.empty() && dims && !dims.empty() && reason)
      readBatchBecause = "the model is kept " + reason.str();
  }

  /// The last stage of the pass pipeline that `emit` needs.
  static PipelineStage lastStage(EmitStage emit) {
    switch (emit) {
    case EmitStage::Imported:
    case EmitStage::Graph:
      return PipelineStage::Graph;
    case EmitStage::Linalg:
    case EmitStage::Kernels:
      return PipelineStage::Linalg;
    default:
      return PipelineStage::LLVM;
    }
  }

  LogicalResult compile(ModuleOp module, const std::string &outputPath) {
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main)
      return module.emitError("the model has no function @main");
    if (failed(checkElementTypes(main)) || failed(checkTensorSizes(module)))
      return failure();
    // A symbolic batch runs one sample at a time, which a GPU model does
    // not do (yet): it runs its batch whole.
    if (auto symbols = main->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
        symbols && !symbols.empty() &&
        (options.batchSplit == BatchSplit::Off ||
         pipeline.target.arch == TargetArch::NVPTX)) {
      StringRef name =
          cast<DictionaryAttr>(symbols[0]).getAs<StringAttr>("name").getValue();
      return mlir::emitError(main.getLoc())
             << (options.batchSplit == BatchSplit::Off
                     ? "--batch-split=off keeps the batch whole"
                     : "the nvptx target runs a batch whole")
             << ", so the batch '" << name
             << "' cannot stay symbolic; give it a size with "
             << "--dynamic-dims " << name << "=SIZE";
    }
    // Sizes that the code reads at run time: the CPU's loop path so far.
    if (auto dims = main->getAttrOfType<ArrayAttr>(attr::kDimSymbols);
        dims && !dims.empty() && pipeline.target.arch == TargetArch::NVPTX)
      return mlir::emitError(main.getLoc())
             << "the nvptx target compiles static sizes only (so far): give '"
             << cast<DictionaryAttr>(dims[0])
                    .getAs<StringAttr>("name")
                    .getValue()
             << "' a size with --dynamic-dims NAME=SIZE";
    // Outputs whose sizes the data decides are returned through the model
    // ABI's result symbols.
    if (auto results = main->getAttrOfType<ArrayAttr>(attr::kResultSymbols);
        results && !results.empty()) {
      if (auto symbols = main->getAttrOfType<ArrayAttr>(graph::kSymbolsAttr);
          symbols && !symbols.empty())
        return mlir::emitError(main.getLoc())
               << "the model has outputs whose sizes the data decides and a "
                  "symbolic batch '"
               << cast<DictionaryAttr>(symbols[0])
                      .getAs<StringAttr>("name")
                      .getValue()
               << "', which Kiln does not combine (yet); give the batch a "
                  "size with --dynamic-dims NAME=SIZE";
    }
    if (options.emit == EmitStage::Imported)
      return writeText(outputPath, printModule(module, /*locations=*/true));
    if (options.printPipeline) {
      PassManager pm(&context, ModuleOp::getOperationName());
      buildPipeline(pm, pipeline, PipelineStage::Graph,
                    lastStage(options.emit));
      llvm::raw_string_ostream os(result.pipeline);
      pm.printAsTextualPipeline(os);
      os << "\n";
      return success();
    }
    if (options.report)
      result.report += countOps(module, "imported");

    // Folding may make new values (a shape computed from constants).
    if (failed(runStage(module, PipelineStage::Graph)) ||
        failed(checkTensorSizes(module)) ||
        failed(checkConstantIndices(module)))
      return failure();
    if (options.report) {
      result.report += countOps(module, "graph");
      int64_t block = pipeline.graph.layoutBlock;
      result.report +=
          block > 0 ? "layout: blocked NCHWc, c=" + std::to_string(block) + "\n"
                    : "layout: nchw\n";
    }
    if (options.emit == EmitStage::Graph)
      return writeText(outputPath, printModule(module));

    if (failed(runStage(module, PipelineStage::Linalg))) {
      noteBatchKeptWhole(module.lookupSymbol(kEntryName));
      return failure();
    }
    Operation *entry = module.lookupSymbol(kEntryName);
    if (!entry)
      return module.emitError("the pipeline lost the entry function");
    if (failed(checkBatchIndependence(entry)))
      return failure();
    if (options.report) {
      if (auto reason =
              entry->getAttrOfType<StringAttr>(graph::kBatchSplitAttr))
        result.report += "batch: " + reason.str() + "\n";
      result.report += countOps(module, "linalg");
    }
    if (options.emit == EmitStage::Linalg)
      return writeText(outputPath, printModule(module));

    const TargetInfo &target = pipeline.target;
    codegen::KernelTarget kernelTarget;
    kernelTarget.key = pipeline.cpu.targetKey;
    kernelTarget.vectorWidth = pipeline.cpu.vectorWidth;
    kernelTarget.parallel = pipeline.cpu.parallel;
    if (options.emit == EmitStage::Kernels)
      return writeText(
          outputPath,
          llvm::formatv("{0:2}\n", codegen::listKernels(module, kernelTarget))
              .str());
    if (!options.tuningDB.empty() &&
        failed(findKernelConfigs(module, kernelTarget)))
      return failure();
    if (options.report && target.arch == TargetArch::NVPTX)
      result.report += "target: nvptx " + llvm::join(pipeline.gpu.archs, ",") +
                       ", host " + target.triple + " cpu=" + target.cpu + ", " +
                       std::to_string(pipeline.gpu.blockSize) +
                       " threads per block\n";
    else if (options.report)
      result.report += "target: " + target.triple + " cpu=" + target.cpu +
                       ", " + std::to_string(target.vectorWidthF32) +
                       " x f32 per vector, " +
                       std::to_string(target.vectorRegisters) +
                       " vector registers, register block " +
                       std::to_string(pipeline.cpu.rows) + " x 2 vectors\n";
    if (failed(runStage(module, PipelineStage::LLVM)))
      return failure();
    entry = module.lookupSymbol(kEntryName);
    if (!entry)
      return module.emitError("code generation lost the entry function");
    if (options.report) {
      result.report += countOps(module, "llvm");
      if (auto layers = entry->getAttrOfType<ArrayAttr>(cpu::kConvReportAttr))
        for (auto line : layers.getAsValueRange<StringAttr>())
          result.report += "conv " + line.str() + "\n";
    }
    if (options.emit == EmitStage::LLVM)
      return writeText(outputPath, printModule(module));

    // LLVM IR, the model ABI, optimisation.
    FailureOr<ModelSignature> signature = readModelSignature(entry);
    if (failed(signature))
      return failure();
    if (target.arch == TargetArch::NVPTX) {
      if (failed(collectGPUModel(module, entry, *signature)))
        return failure();
      if (options.emit == EmitStage::PTX)
        return writeText(outputPath, ptxText);
    } else if (options.emit == EmitStage::PTX) {
      return emitError(
          llvm::createStringError("--emit=ptx is for the nvptx target"));
    }
    auto machine = target.createTargetMachine();
    if (!machine)
      return emitError(machine.takeError());
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(module, llvmContext, "kiln_model");
    if (!llvmModule)
      return module.emitError("cannot translate the model to LLVM IR");
    signature->usesOpenMP =
        llvmModule->getFunction("__kmpc_fork_call") != nullptr;
    // The kernel table: every function kiln-codegen-outline-kernels made
    // (a GPU model's: every host stub of kiln-gpu-lower-launches).
    for (auto function : module.getOps<LLVM::LLVMFuncOp>()) {
      auto kernel = function->getAttrOfType<KernelAttr>(codegen::kKernelAttr);
      if (!kernel)
        continue;
      // A kernel runs once per sample where the batch is split.
      signature->kernels.push_back(
          {function.getSymName().str(), kernel.getSource().str(),
           uint64_t(kernel.getFlops()) * uint64_t(signature->repeat)});
      if (signature->device != KILN_ABI_DEVICE_CUDA)
        continue;
      auto launch =
          function->getAttrOfType<DenseI64ArrayAttr>(gpu::kLaunchAttr);
      if (!launch || launch.size() != 6)
        return function.emitError("a GPU kernel without its launch geometry");
      GPUKernelSignature gpuKernel;
      for (int i = 0; i < 3; ++i) {
        gpuKernel.grid[i] = uint32_t(launch[i]);
        gpuKernel.block[i] = uint32_t(launch[3 + i]);
      }
      // The launcher first, then the kernel's parameters.
      gpuKernel.numParams = function.getNumArguments() - 1;
      signature->gpuKernels.push_back(gpuKernel);
      // A one-thread launch is the fallback for what has no parallel loop.
      if (options.report &&
          llvm::all_of(launch.asArrayRef(), [](int64_t v) { return v == 1; }))
        result.report += "gpu: serial kernel (one thread) " +
                         function.getSymName().str() + " (" +
                         kernel.getSource().str() + ")\n";
    }
    signature->sampleSlots = chooseSampleSlots(*signature, *llvmModule);
    if (options.report) {
      result.report +=
          "workspace: " + std::to_string(signature->workspaceSize) +
          " bytes (intermediate buffers, planned)";
      if (signature->sampleSlots > 1)
        result.report += ", a sample's; up to " +
                         std::to_string(signature->sampleSlots) +
                         " samples side by side, one workspace each";
      result.report += "\n";
    }
    if (llvm::Error error =
            emitModelABI(*llvmModule, kEntryName, *signature, target))
      return emitError(std::move(error));
    if (target.arch != TargetArch::NVPTX) {
      uint64_t saved = storeConstantsAsHalf(*llvmModule, **machine);
      if (options.report && saved > 0)
        result.report += "constants: " + std::to_string(saved) +
                         " bytes saved by storing f32 weights that f16 holds "
                         "exactly as f16 (converted when the model loads)\n";
    }
    if (llvm::Error error =
            optimizeModule(*llvmModule, **machine, target.sveVectorBits))
      return emitError(std::move(error));
    if (options.emit == EmitStage::LLVMIR) {
      std::string text;
      llvm::raw_string_ostream os(text);
      llvmModule->print(os, nullptr);
      return writeText(outputPath, text);
    }
    if (options.emit == EmitStage::Assembly) {
      std::string assembly;
      if (llvm::Error error = emitAssembly(*llvmModule, **machine, assembly))
        return emitError(std::move(error));
      return writeText(outputPath, assembly);
    }
    std::string object;
    if (llvm::Error error = emitObject(*llvmModule, **machine, object))
      return emitError(std::move(error));
    if (options.emit == EmitStage::Object) {
      if (llvm::Error error = writeOutput(outputPath, object, true))
        return emitError(std::move(error));
      return success();
    }
    if (outputPath == "-")
      return emitError(llvm::createStringError(
          "a shared object cannot be written to standard output; give a "
          "file with -o"));
    if (llvm::Error error =
            linkSharedObject(object, outputPath, target, signature->usesOpenMP))
      return emitError(std::move(error));
    return success();
  }

  /// A GPU model: the PTX of each architecture from the gpu.binary that
  /// gpu-module-to-binary left, a cubin of each made by ptxas, and the
  /// constants segment, into `signature`; the gpu.binary goes (the images
  /// are the descriptor's, not a global constructor's).
  LogicalResult collectGPUModel(ModuleOp module, Operation *entry,
                                ModelSignature &signature) {
    signature.device = KILN_ABI_DEVICE_CUDA;
    signature.emulation = pipeline.gpu.emulation;
    if (auto size = entry->getAttrOfType<IntegerAttr>(gpu::kConstantsSizeAttr))
      signature.constantsSize = size.getInt();
    signature.constantsGlobal = gpu::kConstantsGlobal.str();
    auto binary = module.lookupSymbol<mlir::gpu::BinaryOp>(gpu::kKernelModule);
    if (!binary) {
      // A model without kernels (its outputs are copies of constants, say)
      // has nothing to assemble.
      return success();
    }
    std::vector<std::pair<std::string, std::string>> ptxByArch;
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<mlir::gpu::ObjectAttr>(attr);
      auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!nvvm || object.getFormat() != mlir::gpu::CompilationTarget::Assembly)
        return binary.emitError("expected the PTX of an NVVM target");
      std::string ptx = object.getObject().getValue().str();
      // Without the toolkit's libdevice the math functions stay external,
      // which the driver only finds out when it loads the image.
      if (StringRef(ptx).contains(".extern .func") &&
          StringRef(ptx).contains("__nv_"))
        return binary.emitError(
            "the PTX calls libdevice functions that were not linked (is "
            "the CUDA toolkit's nvvm/libdevice present?)");
      ptxByArch.push_back({nvvm.getChip().str(), std::move(ptx)});
    }
    for (const auto &[arch, ptx] : ptxByArch) {
      ptxText += "// ---- " + arch + "\n" + ptx;
      if (options.emit == EmitStage::PTX)
        continue;
      llvm::Expected<Cubin> cubin = runPtxas(pipeline.gpu.toolkit, ptx, arch);
      if (!cubin)
        return emitError(cubin.takeError());
      signature.deviceImages.push_back(
          {arch, KILN_ABI_IMAGE_CUBIN, std::move(cubin->data)});
      int64_t spilling =
          llvm::count_if(cubin->kernels, [](const PtxasKernelInfo &k) {
            return k.spillStores + k.spillLoads > 0;
          });
      if (options.report && spilling)
        result.report += "ptxas " + arch + ": " + std::to_string(spilling) +
                         " kernel(s) spill registers\n";
      if (options.report)
        for (const PtxasKernelInfo &k : cubin->kernels)
          result.report += "ptxas " + arch + " " + k.name + ": " +
                           std::to_string(k.registers) + " registers, " +
                           std::to_string(k.spillStores + k.spillLoads) +
                           " bytes spilled, " + std::to_string(k.stackBytes) +
                           " bytes stack, " + std::to_string(k.sharedBytes) +
                           " bytes shared\n";
    }
    // The oldest architecture's PTX, which newer GPUs compile at load time.
    if (!ptxByArch.empty())
      signature.deviceImages.push_back({ptxByArch.front().first,
                                        KILN_ABI_IMAGE_PTX,
                                        ptxByArch.front().second});
    binary.erase();
    if (options.report)
      result.report +=
          "gpu: " + std::to_string(ptxByArch.size()) + " architecture(s) (" +
          llvm::join(pipeline.gpu.archs, ", ") + "), constants " +
          std::to_string(signature.constantsSize) + " bytes" +
          (signature.emulation ? ", with an emulation image" : "") + "\n";
    return success();
  }

  /// The kernels that the tuning database configures, as data in the result
  /// (and lines of the report): found by the same function that
  /// kiln-codegen-apply-kernel-configs runs, on a copy of the module, which the
  /// pass then configures for real.
  LogicalResult findKernelConfigs(ModuleOp module,
                                  const codegen::KernelTarget &target) {
    OwningOpRef<ModuleOp> copy(module.clone());
    std::vector<codegen::TuningRecord> applied;
    if (failed(codegen::applyKernelConfigs(*copy, *pipeline.tuningDatabase,
                                           target, &applied)) ||
        failed(codegen::fuseElementwise(*copy)) ||
        failed(codegen::applyKernelConfigs(*copy, *pipeline.tuningDatabase,
                                           target, &applied,
                                           codegen::KernelStage::LoopNests)))
      return failure();
    for (const codegen::TuningRecord &record : applied) {
      std::string configuration;
      llvm::raw_string_ostream(configuration)
          << llvm::json::Value(llvm::json::Object(record.config));
      result.kernelConfigs.push_back({record.kernel, configuration,
                                      pipeline.tuningDatabase->path(),
                                      record.line});
    }
    if (options.report) {
      result.report +=
          "tuning: " + std::to_string(result.kernelConfigs.size()) +
          " kernel(s) configured by " + options.tuningDB + " for " +
          target.key + "\n";
      for (const AppliedKernelConfig &config : result.kernelConfigs)
        result.report += "  " + config.kernel + ": " + config.configuration +
                         " (" + config.database + ":" +
                         std::to_string(config.line) + ")\n";
    }
    return success();
  }

  LogicalResult writeText(const std::string &path, StringRef text) {
    if (llvm::Error error = writeOutput(path, text, false))
      return emitError(std::move(error));
    return success();
  }

  LogicalResult emitError(llvm::Error error) {
    mlir::emitError(UnknownLoc::get(&context))
        << llvm::toString(std::move(error));
    return failure();
  }

  const CompileOptions &options;
  /// A GPU model's PTX, every architecture's (--emit=ptx).
  std::string ptxText;
  DiagnosticCollector diagnostics;
  PipelineOptions pipeline;
  CompileResult result;
};

/// Runs `import` as a check: past every problem, each reported.
template <typename ImportFn>
CheckResult check(const CompileOptions &options, ImportFn import) {
  CheckResult result;
  Compilation compilation(options);
  ImportReport report;
  if (succeeded(compilation.resolveOptions())) {
    ImportOptions importing = importOptions(options);
    importing.keepGoing = true;
    importing.report = &report;
    result.ok = static_cast<bool>(import(compilation.context, importing));
  }
  result.nodes = report.nodes;
  result.opset = report.opset;
  result.unchecked = report.unchecked;
  for (auto &[opType, nodes] : report.unsupported)
    result.unsupported.push_back({opType, nodes});
  // The unsupported operators are in the report; the rest are errors.
  result.errors = compilation.errorMessages();
  result.ok = result.ok && result.errors.empty() && result.unsupported.empty();

  llvm::raw_string_ostream os(result.report);
  os << result.nodes << " node(s)";
  if (result.opset)
    os << ", ai.onnx opset " << result.opset;
  os << ": " << (result.ok ? "Kiln supports the model" : "not supported")
     << "\n";
  if (!result.unsupported.empty()) {
    os << "unsupported operators:\n";
    for (const UnsupportedOperator &op : result.unsupported) {
      os << "  " << op.opType << " \u00d7" << op.nodes.size() << ": ";
      for (auto [i, node] : llvm::enumerate(op.nodes)) {
        if (i == 5) {
          os << ", ... (" << op.nodes.size() - 5 << " more)";
          break;
        }
        os << (i ? ", " : "") << "'" << node << "'";
      }
      os << "\n";
    }
  }
  if (!result.errors.empty()) {
    os << "errors:\n";
    for (const std::string &error : result.errors)
      os << "  " << StringRef(error).rtrim() << "\n";
  }
  if (result.unchecked)
    os << result.unchecked
       << " node(s) not checked: an input comes from a node above\n";
  return result;
}

} // namespace

void registerCommandLineOptions() {
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  commandLineOptionsRegistered = true;
}

CompileResult compileFile(const std::string &inputPath,
                          const std::string &outputPath,
                          const CompileOptions &options) {
  Compilation compilation(options);
  if (failed(compilation.resolveOptions()))
    return compilation.fail();
  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(inputPath).ends_with(".mlir")) {
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto file = openInputFile(inputPath, &error);
    if (!file)
      return compilation.fail(error);
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &compilation.context);
  } else {
    compilation.reimport = [&](const ImportOptions &importing) {
      return importONNXFile(compilation.context, inputPath, importing);
    };
    module =
        importONNXFile(compilation.context, inputPath, importOptions(options));
  }
  return compilation.run(std::move(module), outputPath);
}

CheckResult checkFile(const std::string &inputPath,
                      const CompileOptions &options) {
  return check(options, [&](MLIRContext &context, const ImportOptions &import) {
    return importONNXFile(context, inputPath, import);
  });
}

CheckResult checkONNXBytes(const std::string &bytes, const std::string &baseDir,
                           const CompileOptions &options) {
  return check(options, [&](MLIRContext &context, const ImportOptions &import) {
    return importONNXBytes(context, bytes, baseDir, import);
  });
}

CompileResult compileONNXBytes(const std::string &bytes,
                               const std::string &baseDir,
                               const std::string &outputPath,
                               const CompileOptions &options) {
  Compilation compilation(options);
  if (failed(compilation.resolveOptions()))
    return compilation.fail();
  compilation.reimport = [&](const ImportOptions &importing) {
    return importONNXBytes(compilation.context, bytes, baseDir, importing);
  };
  return compilation.run(importONNXBytes(compilation.context, bytes, baseDir,
                                         importOptions(options)),
                         outputPath);
}

} // namespace kiln
