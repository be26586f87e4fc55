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
#include "dialects/Kiln/KilnAttributes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"
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

/// Whether `op` computes each sample of its batch from that sample alone,
/// given which of its operands carry the batch: the op's own answer
/// (SampleWiseOpInterface); an op without the interface keeps the batch
/// whole.
bool perSample(Operation *op, const llvm::DenseSet<Value> &batched) {
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

/// Retypes `func` (a copy) to batch 1; fails with the reason.
LogicalResult retype(func::FuncOp func, int64_t batch, int64_t &activations,
                     int64_t &largest, std::string &reason) {
  llvm::DenseSet<Value> batched;
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    arg.setType(withBatch(cast<RankedTensorType>(arg.getType()), 1));
    batched.insert(arg);
  }
  for (Operation &op : entry) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value value : ret.getOperands())
        if (!batched.contains(value)) {
          reason = "an output does not depend on the inputs' batch";
          return failure();
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
      batched.insert(expand.getResult());
      activations += byteSize(type);
      largest = std::max(largest, byteSize(type));
      continue;
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
    if (op.getNumRegions() != 0 || !perSample(&op, batched)) {
      reason = describe(&op) + " does not treat the samples apart";
      return failure();
    }
    // The batch-1 types, before a reshape's target takes batch 1.
    SmallVector<RankedTensorType> expected;
    for (Value result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!leadsWithStatic(type) || type.getDimSize(0) != batch) {
        reason = describe(&op) + " has a result without the batch first";
        return failure();
      }
      expected.push_back(withBatch(type, 1));
    }
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
      ends[0] = 1;
      slice.setEnds(ends);
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
    for (auto [result, type, want] :
         llvm::zip(op.getResults(), inferred, expected)) {
      if (failed(verifyCompatibleShape(type, want)) ||
          cast<ShapedType>(type).getElementType() != want.getElementType()) {
        reason = describe(&op) + " does not keep the batch first";
        return failure();
      }
      result.setType(want);
      batched.insert(result);
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
/// where the result's repeat is 1.
BatchSplit splitBatch(func::FuncOp main, BatchSplitMode mode,
                      int64_t cacheBytes) {
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
  std::string reason;
  if (failed(retype(copy, batch, activations, largest, reason))) {
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
        func, symbolic ? BatchSplitMode::On : parsedMode, cacheBytes);
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
