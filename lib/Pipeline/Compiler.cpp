//===- Compiler.cpp - From a model file to a shared object ----------------===//
//
// Drives the stages of include/kiln/compiler.h: import, graph optimisation,
// lowering to linalg, CPU code generation, LLVM IR with the model ABI,
// object code and linking.
//
//===----------------------------------------------------------------------===//

#include "kiln/compiler.h"

#include "codegen/CPU/KernelConfig.h"
#include "codegen/CPU/Passes.h"
#include "kiln/model_abi.h"
#include "lib/Import/ONNXImporter.h"
#include "lib/Pipeline/Pipelines.h"
#include "lib/Pipeline/Registration.h"
#include "lib/Pipeline/SplitBatch.h"
#include "lib/Target/Linker.h"
#include "lib/Target/ModelABI.h"
#include "lib/Target/ObjectEmitter.h"
#include "lib/Target/TargetInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
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

#include <map>

using namespace mlir;

namespace kiln {

bool parseEmitStage(const std::string &name, EmitStage &stage) {
  static const std::map<std::string, EmitStage> stages = {
      {"graph", EmitStage::Graph},    {"linalg", EmitStage::Linalg},
      {"llvm", EmitStage::LLVM},      {"asm", EmitStage::Assembly},
      {"obj", EmitStage::Object},     {"so", EmitStage::SharedObject},
      {"kernels", EmitStage::Kernels}};
  auto it = stages.find(name);
  if (it == stages.end())
    return false;
  stage = it->second;
  return true;
}

namespace {

/// The name of the model's entry function in the LLVM module; `main` would
/// mean something else to a linker.
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
          os << formatLocation(diag.getLocation()) << diag;
          // A note's first line only: "see current operation" notes would
          // print a whole module.
          for (Diagnostic &note : diag.getNotes())
            os << "\n  note: " << StringRef(note.str()).split('\n').first;
          lines.push_back(line);
          return success();
        }) {}

  std::string text() const { return llvm::join(lines, "\n"); }

private:
  /// "node_name (OpType): " for an imported node; "file:line:col: " for text.
  static std::string formatLocation(Location loc) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (auto name = dyn_cast<NameLoc>(loc))
      os << name.getName().getValue() << ": ";
    else if (auto file = dyn_cast<FileLineColLoc>(loc))
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

/// Reads the model's inputs and outputs off `@main` in the graph dialect.
FailureOr<ModelSignature> getModelSignature(func::FuncOp main) {
  ModelSignature signature;
  auto describe = [&](Type type, StringAttr name, const char *kind,
                      unsigned index) -> FailureOr<TensorSignature> {
    TensorSignature tensor;
    tensor.name = name ? name.str() : std::string(kind) + std::to_string(index);
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked)
      return main.emitError() << kind << " '" << tensor.name
                              << "' is not a ranked tensor: " << type;
    if (!ranked.hasStaticShape())
      return main.emitError()
             << kind << " '" << tensor.name << "' has a dynamic shape " << type
             << "; give it a static one with --input-shape "
                "NAME=D0xD1x... (a compiled model has static shapes)";
    tensor.dtype = dtypeOf(ranked.getElementType());
    if (tensor.dtype == KILN_DTYPE_INVALID)
      return main.emitError() << kind << " '" << tensor.name
                              << "' has an element type the model ABI does "
                                 "not support: "
                              << ranked.getElementType();
    tensor.shape.assign(ranked.getShape().begin(), ranked.getShape().end());
    return tensor;
  };
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto tensor =
        describe(main.getArgument(i).getType(),
                 main.getArgAttrOfType<StringAttr>(i, "kiln.name"), "input", i);
    if (failed(tensor))
      return failure();
    signature.inputs.push_back(*tensor);
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto tensor = describe(main.getResultTypes()[i],
                           main.getResultAttrOfType<StringAttr>(i, "kiln.name"),
                           "output", i);
    if (failed(tensor))
      return failure();
    signature.outputs.push_back(*tensor);
  }
  return signature;
}

/// Removes the inputs and outputs that have no elements from the entry
/// function (kiln-graph-fold-empty-tensors has already replaced their uses
/// with constants), so that no zero-size buffer reaches code generation, and
/// marks them in `signature` as not passed.
void dropEmptyTensors(func::FuncOp main, ModelSignature &signature) {
  auto isEmpty = [](const TensorSignature &t) {
    return llvm::is_contained(t.shape, 0);
  };
  llvm::BitVector args(main.getNumArguments()), results(main.getNumResults());
  for (auto [i, input] : llvm::enumerate(signature.inputs))
    if (isEmpty(input) && main.getArgument(i).use_empty())
      args.set(i), input.passed = false;
  for (auto [i, output] : llvm::enumerate(signature.outputs))
    if (isEmpty(output))
      results.set(i), output.passed = false;
  if (results.any()) {
    main.walk([&](func::ReturnOp ret) {
      SmallVector<Value> kept;
      for (auto [i, value] : llvm::enumerate(ret.getOperands()))
        if (!results.test(i))
          kept.push_back(value);
      ret->setOperands(kept);
    });
    (void)main.eraseResults(results);
  }
  if (args.any())
    (void)main.eraseArguments(args);
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

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

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

  CompileResult run(OwningOpRef<ModuleOp> module,
                    const std::string &outputPath) {
    if (!module)
      return fail();
    if (failed(compile(*module, outputPath)))
      return fail();
    result.ok = true;
    return result;
  }

  MLIRContext context;

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
  LogicalResult runPasses(ModuleOp module,
                          llvm::function_ref<void(OpPassManager &)> build) {
    PassManager pm(&context);
    build(pm);
    return pm.run(module);
  }

  LogicalResult compile(ModuleOp module, const std::string &outputPath) {
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main)
      return module.emitError("the model has no function @main");
    if (options.report)
      result.report += countOps(module, "imported");

    GraphOptimizationOptions graphOptions;
    graphOptions.enable = options.optimizeGraph;
    std::string layout = options.layout;
    if (layout == "auto")
      layout = "blocked";
    if (layout == "nc1hwc0") {
      // The same layout, named as Ascend's toolchains name it: C0 is 16
      // unless --layout-block says otherwise, whatever the vector width.
      graphOptions.layoutBlock =
          options.layoutBlock > 0 ? options.layoutBlock : 16;
    } else if (layout == "blocked") {
      graphOptions.layoutBlock = options.layoutBlock;
      if (graphOptions.layoutBlock <= 0) {
        llvm::Expected<TargetInfo> layoutTarget =
            resolveTarget(options.target, options.cpu, options.features,
                          options.sveVectorBits);
        if (!layoutTarget)
          return emitError(layoutTarget.takeError());
        graphOptions.layoutBlock = layoutTarget->vectorWidthF32;
      }
    } else if (layout != "nchw") {
      return emitError(llvm::createStringError(
          "unknown layout '" + options.layout +
          "'; expected auto, blocked, nc1hwc0 or nchw"));
    }
    if (failed(runPasses(module, [&](OpPassManager &pm) {
          buildGraphOptimizationPipeline(pm, graphOptions);
        })))
      return failure();
    if (options.report) {
      result.report += countOps(module, "graph");
      result.report += graphOptions.layoutBlock > 0
                           ? "layout: blocked NCHWc, c=" +
                                 std::to_string(graphOptions.layoutBlock) + "\n"
                           : "layout: nchw\n";
    }
    if (options.emit == EmitStage::Graph)
      return writeText(outputPath, printModule(module));

    FailureOr<ModelSignature> signature = getModelSignature(main);
    if (failed(signature))
      return failure();
    dropEmptyTensors(main, *signature);
    BatchSplitMode splitMode;
    if (options.batchSplit == "auto")
      splitMode = BatchSplitMode::Auto;
    else if (options.batchSplit == "on")
      splitMode = BatchSplitMode::On;
    else if (options.batchSplit == "off")
      splitMode = BatchSplitMode::Off;
    else
      return emitError(llvm::createStringError("unknown batch split '" +
                                               options.batchSplit +
                                               "'; expected auto, on or off"));
    BatchSplit split = splitBatch(main, splitMode);
    if (options.report)
      result.report += "batch: " + split.reason + "\n";
    if (split.repeat > 1) {
      signature->repeat = split.repeat;
      // The entry's parameters are the tensors passed, in order.
      unsigned arg = 0, res = 0;
      for (TensorSignature &input : signature->inputs)
        if (input.passed)
          input.sampleBytes = split.argumentBytes[arg++];
      for (TensorSignature &output : signature->outputs)
        if (output.passed)
          output.sampleBytes = split.resultBytes[res++];
    }
    main.setSymName(kEntryName);

    if (failed(runPasses(module, buildLowerToLinalgPipeline)))
      return failure();
    if (options.report)
      result.report += countOps(module, "linalg");
    if (options.emit == EmitStage::Linalg)
      return writeText(outputPath, printModule(module));

    llvm::Expected<TargetInfo> target = resolveTarget(
        options.target, options.cpu, options.features, options.sveVectorBits);
    if (!target)
      return emitError(target.takeError());
    CPUCodegenOptions codegen;
    codegen.vectorWidth = target->vectorWidthF32;
    // A register block holds rows x 2 accumulator vectors, plus the two
    // vectors of the right-hand side and one broadcast of the left: 8 rows
    // (19 registers) with 32 registers, 6 (15) with AVX2's or SSE's 16,
    // where 8 rows spill (a 256x512x256 matmul on Haswell code: 0.73 ms
    // against 1.9 ms).
    codegen.rows = target->vectorRegisters >= 32 ? 8 : 6;
    codegen.convAlgorithm = options.convAlgorithm;
    const char *algorithms = "auto, im2col, direct, winograd-2x3, "
                             "winograd-4x3 or winograd-6x3";
    if (options.convAlgorithm != "auto" &&
        !cpu::isConvAlgorithmName(options.convAlgorithm))
      return emitError(llvm::createStringError(
          "unknown convolution algorithm '" + options.convAlgorithm +
          "' (expected " + algorithms + ")"));
    for (const auto &[layer, algorithm] : options.convAlgorithms) {
      if (layer.empty() || !cpu::isConvAlgorithmName(algorithm))
        return emitError(llvm::createStringError(
            "bad convolution algorithm '" + layer + "=" + algorithm +
            "' (expected LAYER=ALGORITHM with im2col, direct, winograd-2x3, "
            "winograd-4x3 or winograd-6x3)"));
      codegen.convAlgorithmOverrides.push_back(layer + "=" + algorithm);
    }
    if (options.report)
      result.report += "target: " + target->triple + " cpu=" + target->cpu +
                       ", " + std::to_string(target->vectorWidthF32) +
                       " x f32 per vector, " +
                       std::to_string(target->vectorRegisters) +
                       " vector registers, register block " +
                       std::to_string(codegen.rows) + " x 2 vectors\n";
    // Multithreading goes through LLVM's OpenMP runtime (libomp.so.5) on
    // both architectures, unless the user asks for code without it.
    codegen.parallel = options.openMP;
    codegen.tuningDB = options.tuningDB;
    cpu::KernelTarget kernelTarget;
    kernelTarget.key = target->triple + "/" + target->cpu;
    if (!options.features.empty())
      kernelTarget.key += "/" + options.features;
    kernelTarget.vectorWidth = codegen.vectorWidth;
    kernelTarget.parallel = codegen.parallel;
    codegen.targetKey = kernelTarget.key;
    if (options.emit == EmitStage::Kernels)
      return writeText(
          outputPath,
          llvm::formatv("{0:2}\n", cpu::listKernels(module, kernelTarget))
              .str());
    if (options.report && !options.tuningDB.empty() &&
        failed(reportKernelConfigs(module, kernelTarget)))
      return failure();
    if (failed(runPasses(module, [&](OpPassManager &pm) {
          buildCPUCodegenPipeline(pm, codegen);
        })))
      return failure();
    if (options.report) {
      result.report += countOps(module, "llvm");
      if (Operation *entry = module.lookupSymbol(kEntryName))
        if (auto layers = entry->getAttrOfType<ArrayAttr>(cpu::kConvReportAttr))
          for (auto line : layers.getAsValueRange<StringAttr>())
            result.report += "conv " + line.str() + "\n";
    }

    // LLVM IR, the model ABI, optimisation.
    auto machine = target->createTargetMachine();
    if (!machine)
      return emitError(machine.takeError());
    // The memory planner leaves the workspace size on the entry function.
    Operation *entry = module.lookupSymbol(kEntryName);
    if (!entry)
      return module.emitError("code generation lost the entry function");
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(module, llvmContext, "kiln_model");
    if (!llvmModule)
      return module.emitError("cannot translate the model to LLVM IR");
    signature->usesOpenMP =
        llvmModule->getFunction("__kmpc_fork_call") != nullptr;
    if (auto size = entry->getAttrOfType<IntegerAttr>("kiln.workspace_size"))
      signature->workspaceSize = size.getInt();
    // The kernel table: every function kiln-cpu-outline-kernels made.
    for (auto function : module.getOps<LLVM::LLVMFuncOp>()) {
      auto flops = function->getAttrOfType<IntegerAttr>(cpu::kKernelFlopsAttr);
      if (!flops)
        continue;
      auto source = function->getAttrOfType<StringAttr>(cpu::kKernelSourceAttr);
      // A kernel runs once per sample where the batch is split.
      signature->kernels.push_back(
          {function.getSymName().str(), source ? source.str() : std::string(),
           uint64_t(flops.getInt()) * uint64_t(signature->repeat)});
    }
    if (options.report)
      result.report +=
          "workspace: " + std::to_string(signature->workspaceSize) +
          " bytes (intermediate buffers, planned)\n";
    if (llvm::Error error =
            emitModelABI(*llvmModule, kEntryName, *signature, *target))
      return emitError(std::move(error));
    if (llvm::Error error =
            optimizeModule(*llvmModule, **machine, target->sveVectorBits))
      return emitError(std::move(error));
    if (options.emit == EmitStage::LLVM) {
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
    if (llvm::Error error = linkSharedObject(object, outputPath, *target,
                                             signature->usesOpenMP))
      return emitError(std::move(error));
    return success();
  }

  /// One report line per kernel that the tuning database configures, by the
  /// same function kiln-cpu-apply-kernel-configs runs (which then finds the
  /// same configurations again).
  LogicalResult reportKernelConfigs(ModuleOp module,
                                    const cpu::KernelTarget &target) {
    llvm::Expected<cpu::TuningDatabase> database =
        cpu::TuningDatabase::load(options.tuningDB);
    if (!database)
      return emitError(database.takeError());
    std::vector<std::string> applied;
    if (failed(cpu::applyKernelConfigs(module, *database, target, &applied)))
      return failure();
    result.report += "tuning: " + std::to_string(applied.size()) +
                     " kernel(s) configured by " + options.tuningDB + " for " +
                     target.key + "\n";
    for (const std::string &line : applied)
      result.report += "  " + line + "\n";
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
  DiagnosticCollector diagnostics;
  CompileResult result;
};

ImportOptions importOptions(const CompileOptions &options) {
  ImportOptions result;
  result.inputShapes = options.inputShapes;
  return result;
}

} // namespace

CompileResult compileFile(const std::string &inputPath,
                          const std::string &outputPath,
                          const CompileOptions &options) {
  Compilation compilation(options);
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
    module =
        importONNXFile(compilation.context, inputPath, importOptions(options));
  }
  return compilation.run(std::move(module), outputPath);
}

CompileResult compileONNXBytes(const std::string &bytes,
                               const std::string &baseDir,
                               const std::string &outputPath,
                               const CompileOptions &options) {
  Compilation compilation(options);
  return compilation.run(importONNXBytes(compilation.context, bytes, baseDir,
                                         importOptions(options)),
                         outputPath);
}

} // namespace kiln
