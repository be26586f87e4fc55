//===- ImportControlFlow.cpp - If, Loop and Scan --------------------------===//
//
// Control flow imported into straight-line graph ops, which every later
// pass, the blocked layout and the GPU included, handles as it is:
// - If: a condition known at compile time imports only the branch taken;
//   otherwise both branches are imported and each output selected with
//   graph.where (both branches then run, so they must give outputs of one
//   type).
// - Loop and Scan: unrolled, the body imported once per iteration, when the
//   trip count (Loop) or the sequence length (Scan) is known at compile time
//   and Loop's condition stays a constant. A body that decides at run time
//   whether to go on is refused, naming the node.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/Matchers.h"

#include "onnx/onnx_pb.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

/// The value of a one-element constant boolean or integer, if it is one.
static std::optional<bool> constantCondition(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) ||
      attr.getNumElements() != 1)
    return std::nullopt;
  if (attr.getElementType().isInteger(1))
    return *attr.getValues<bool>().begin();
  if (isa<IntegerType>(attr.getElementType()))
    return !(*attr.getValues<APInt>().begin()).isZero();
  return std::nullopt;
}

/// `value` with a dimension of size 1 inserted at `axis`.
static Value unsqueeze(NodeImporter &node, Value value, int64_t axis) {
  SmallVector<int64_t> shape(tensorType(value).getShape());
  shape.insert(shape.begin() + axis, 1);
  return node.create<graph::ReshapeOp>(value, shape, /*allow_zero=*/false);
}

/// `parts` (one per iteration) stacked along a new dimension `axis`.
static Value stack(NodeImporter &node, ArrayRef<Value> parts, int64_t axis) {
  SmallVector<Value> expanded;
  for (Value part : parts) {
    Value v = unsqueeze(node, part, axis);
    if (!v)
      return {};
    expanded.push_back(v);
  }
  if (expanded.size() == 1)
    return expanded.front();
  return node.create<graph::ConcatOp>(ValueRange(expanded), uint64_t(axis));
}

/// If (opset 1).
static LogicalResult importIf(NodeImporter &node) {
  Value cond = node.getInput(0);
  const onnx::GraphProto *thenBranch = node.getGraph("then_branch");
  const onnx::GraphProto *elseBranch = node.getGraph("else_branch");
  if (!cond || !thenBranch || !elseBranch)
    return node.emitError() << "needs a condition and both branches";
  if (isSequence(cond))
    return node.emitError() << "the condition must be one bool, got a "
                               "sequence";
  if (tensorType(cond).getNumElements() != 1 || !elementType(cond).isInteger(1))
    return node.emitError()
           << "the condition must be one bool, got " << cond.getType();
  if (std::optional<bool> taken = constantCondition(cond)) {
    FailureOr<SmallVector<Value>> outputs =
        node.importGraph(*taken ? *thenBranch : *elseBranch, {});
    return failed(outputs) ? failure() : node.setResults(*outputs);
  }
  FailureOr<SmallVector<Value>> thenOutputs = node.importGraph(*thenBranch, {});
  if (failed(thenOutputs))
    return failure();
  FailureOr<SmallVector<Value>> elseOutputs = node.importGraph(*elseBranch, {});
  if (failed(elseOutputs))
    return failure();
  if (thenOutputs->size() != elseOutputs->size())
    return node.emitError() << "the branches give " << thenOutputs->size()
                            << " and " << elseOutputs->size() << " outputs";
  Value scalar = node.create<graph::ReshapeOp>(cond, ArrayRef<int64_t>{},
                                               /*allow_zero=*/false);
  if (!scalar)
    return failure();
  SmallVector<Value> results;
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(*thenOutputs, *elseOutputs))) {
    auto [a, b] = pair;
    if (isSequence(a) && a.getType() == b.getType()) {
      // Sequences of one length and shapes: select tensor by tensor.
      SmallVector<Value> selected, thenElements = getSequenceElements(a),
                                   elseElements = getSequenceElements(b);
      for (auto [x, y] : llvm::zip_equal(thenElements, elseElements)) {
        selected.push_back(node.create<graph::WhereOp>(scalar, x, y));
        if (!selected.back())
          return failure();
      }
      results.push_back(createSequence(node.getBuilder(), node.getLoc(),
                                       selected, getSequenceElementType(a)));
      continue;
    }
    if (a.getType() != b.getType())
      return node.emitError()
             << "with a condition known only at run time, both branches run "
                "and must give outputs of one type; output "
             << i << " is " << a.getType() << " in then_branch and "
             << b.getType() << " in else_branch";
    Value selected = node.create<graph::WhereOp>(scalar, a, b);
    if (!selected)
      return failure();
    results.push_back(selected);
  }
  return node.setResults(results);
}

/// Loop (opset 1): M (the trip count), cond, then the loop-carried values;
/// the body takes (iteration, cond, carried...) and gives (cond, carried...,
/// scan outputs...). Unrolled.
static LogicalResult importLoop(NodeImporter &node) {
  const onnx::GraphProto *body = node.getGraph("body");
  if (!body)
    return failure();
  Value tripInput = node.getInput(0), condInput = node.getInput(1);
  int64_t trips = kMaxUnrolledIterations + 1;
  if (tripInput) {
    DenseIntElementsAttr attr;
    if (!matchPattern(tripInput, m_Constant(&attr)) ||
        attr.getNumElements() != 1)
      return node.emitError()
             << "the trip count M must be a constant for Kiln to unroll the "
                "loop (a trip count known only at run time is not supported)";
    trips = (*attr.getValues<APInt>().begin()).getSExtValue();
  }
  std::optional<bool> go = condInput ? constantCondition(condInput) : true;
  if (!go)
    return node.emitError() << "the condition must be a constant for Kiln to "
                               "unroll the loop";
  if (!*go)
    trips = 0;
  if (trips > kMaxUnrolledIterations)
    return node.emitError()
           << (tripInput ? "the trip count is " + std::to_string(trips)
                         : std::string("the loop has no trip count"))
           << ": Kiln unrolls loops of at most " << kMaxUnrolledIterations
           << " iterations";
  unsigned carriedCount = node.getNumInputs() - 2;
  SmallVector<Value> carried;
  for (unsigned i = 0; i < carriedCount; ++i) {
    Value v = node.getInput(2 + i);
    if (!v)
      return node.emitError() << "loop-carried input " << i << " is missing";
    carried.push_back(v);
  }
  if (body->output_size() < static_cast<int>(1 + carriedCount))
    return node.emitError()
           << "the body gives " << body->output_size() << " outputs for "
           << carriedCount << " loop-carried values";
  unsigned scanCount = body->output_size() - 1 - carriedCount;
  SmallVector<SmallVector<Value>> scans(scanCount);
  Type i64 = node.getBuilder().getI64Type();
  Type i1 = node.getBuilder().getI1Type();
  for (int64_t iteration = 0; iteration < trips; ++iteration) {
    SmallVector<Value> inputs = {createScalar(node, i64, double(iteration)),
                                 createScalar(node, i1, 1.0)};
    inputs.append(carried);
    FailureOr<SmallVector<Value>> outputs = node.importGraph(*body, inputs);
    if (failed(outputs))
      return failure();
    for (unsigned i = 0; i < carriedCount; ++i)
      carried[i] = (*outputs)[1 + i];
    for (unsigned k = 0; k < scanCount; ++k) {
      if (isSequence((*outputs)[1 + carriedCount + k]))
        return node.emitError() << "scan output " << k
                                << " is a sequence; Kiln stacks tensors only";
      scans[k].push_back((*outputs)[1 + carriedCount + k]);
    }
    std::optional<bool> next = constantCondition(outputs->front());
    if (!next)
      return node.emitError()
             << "the body computes its condition at run time (a loop that "
                "decides when to stop): Kiln unrolls loops whose condition "
                "stays a constant";
    if (!*next)
      break;
  }
  SmallVector<Value> results(carried);
  for (unsigned k = 0; k < scanCount; ++k) {
    if (scans[k].empty())
      return node.emitError() << "the loop runs no iteration, so its scan "
                                 "output "
                              << k << " has no known shape";
    Value stacked = stack(node, scans[k], 0);
    if (!stacked)
      return failure();
    results.push_back(stacked);
  }
  return node.setResults(results);
}

/// The body of a Scan unrolled over `sequences` (sliced along `inAxes`,
/// reversed where `inDirections` says), the states threaded through: the
/// final states, then the scan outputs stacked along `outAxes` (reversed
/// where `outDirections` says). Failure after an error.
static FailureOr<SmallVector<Value>>
unrollScan(NodeImporter &node, const onnx::GraphProto &body,
           SmallVector<Value> states, ArrayRef<Value> sequences,
           SmallVector<int64_t> inAxes, ArrayRef<int64_t> inDirections,
           ArrayRef<int64_t> outAxes, ArrayRef<int64_t> outDirections) {
  int64_t stateCount = states.size();
  int64_t scanOutputs = int64_t(outAxes.size());
  int64_t length = -1;
  for (auto [j, sequence] : llvm::enumerate(sequences)) {
    RankedTensorType type = tensorType(sequence);
    FailureOr<int64_t> axis = normalizeAxis(node, inAxes[j], type.getRank());
    if (failed(axis))
      return failure();
    inAxes[j] = *axis;
    int64_t size = type.getDimSize(*axis);
    if (ShapedType::isDynamic(size)) {
      node.emitError() << "the sequence length of scan input " << j
                       << " must be static for Kiln to unroll the scan";
      return failure();
    }
    if (length >= 0 && size != length) {
      node.emitError() << "the scan inputs have lengths " << length << " and "
                       << size;
      return failure();
    }
    length = size;
  }
  if (length > kMaxUnrolledIterations) {
    node.emitError() << "the sequence is " << length
                     << " long: Kiln unrolls scans of at most "
                     << kMaxUnrolledIterations << " steps";
    return failure();
  }
  SmallVector<SmallVector<Value>> scans(scanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> inputs(states);
    for (auto [j, sequence] : llvm::enumerate(sequences)) {
      RankedTensorType type = tensorType(sequence);
      int64_t at = inDirections[j] ? length - 1 - t : t;
      int64_t rank = type.getRank();
      SmallVector<int64_t> starts(rank, 0), ends(type.getShape()),
          steps(rank, 1);
      starts[inAxes[j]] = at;
      ends[inAxes[j]] = at + 1;
      Value slice = node.create<graph::SliceOp>(sequence, starts, ends, steps);
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + inAxes[j]);
      slice = slice ? node.create<graph::ReshapeOp>(slice, shape,
                                                    /*allow_zero=*/false)
                    : Value();
      if (!slice)
        return failure();
      inputs.push_back(slice);
    }
    FailureOr<SmallVector<Value>> outputs = node.importGraph(body, inputs);
    if (failed(outputs))
      return failure();
    for (int64_t i = 0; i < stateCount; ++i)
      states[i] = (*outputs)[i];
    for (int64_t k = 0; k < scanOutputs; ++k)
      scans[k].push_back((*outputs)[stateCount + k]);
  }
  SmallVector<Value> results(states);
  for (int64_t k = 0; k < scanOutputs; ++k) {
    if (scans[k].empty()) {
      node.emitError() << "the sequences are empty, so scan output " << k
                       << " has no known shape";
      return failure();
    }
    if (outDirections[k])
      std::reverse(scans[k].begin(), scans[k].end());
    FailureOr<int64_t> axis = normalizeAxis(
        node, outAxes[k], tensorType(scans[k].front()).getRank() + 1);
    if (failed(axis))
      return failure();
    Value stacked = stack(node, scans[k], *axis);
    if (!stacked)
      return failure();
    results.push_back(stacked);
  }
  return results;
}

/// Scan (opset 9): N state values then num_scan_inputs sequences; the body
/// takes (states..., one slice of each sequence) and gives (states...,
/// one slice of each scan output). Unrolled over the sequence.
static LogicalResult importScan(NodeImporter &node) {
  const onnx::GraphProto *body = node.getGraph("body");
  int64_t scanInputs = node.getInt("num_scan_inputs", 0);
  if (!body || node.hasFailed())
    return failure();
  int64_t inputCount = node.getNumInputs();
  if (scanInputs <= 0 || scanInputs > inputCount)
    return node.emitError() << "num_scan_inputs must be between 1 and the "
                            << inputCount << " inputs, got " << scanInputs;
  int64_t stateCount = inputCount - scanInputs;
  int64_t scanOutputs = body->output_size() - stateCount;
  if (scanOutputs < 0)
    return node.emitError() << "the body gives " << body->output_size()
                            << " outputs for " << stateCount << " states";
  SmallVector<int64_t> inAxes =
      node.getInts("scan_input_axes", SmallVector<int64_t>(scanInputs, 0));
  SmallVector<int64_t> inDirections = node.getInts(
      "scan_input_directions", SmallVector<int64_t>(scanInputs, 0));
  SmallVector<int64_t> outAxes =
      node.getInts("scan_output_axes", SmallVector<int64_t>(scanOutputs, 0));
  SmallVector<int64_t> outDirections = node.getInts(
      "scan_output_directions", SmallVector<int64_t>(scanOutputs, 0));
  if (node.hasFailed())
    return failure();
  if (static_cast<int64_t>(inAxes.size()) != scanInputs ||
      static_cast<int64_t>(inDirections.size()) != scanInputs ||
      static_cast<int64_t>(outAxes.size()) != scanOutputs ||
      static_cast<int64_t>(outDirections.size()) != scanOutputs)
    return node.emitError() << "scan_input_axes and scan_input_directions "
                               "need one value per scan input, the output "
                               "ones one per scan output";
  SmallVector<Value> states, sequences;
  for (int64_t i = 0; i < inputCount; ++i) {
    Value v = node.getInput(i);
    if (!v)
      return node.emitError() << "input " << i << " is missing";
    (i < stateCount ? states : sequences).push_back(v);
  }
  FailureOr<SmallVector<Value>> results =
      unrollScan(node, *body, states, sequences, inAxes, inDirections, outAxes,
                 outDirections);
  return failed(results) ? failure() : node.setResults(*results);
}

/// Scan (opset 8): an optional sequence_lens, N states and num_scan_inputs
/// sequences, all with a leading batch dimension (the sequences' axis 1 is
/// the scanned one); scan outputs are [batch, sequence, ...]. Unrolled per
/// sample. sequence_lens must be absent or a constant equal to the
/// sequence length in every sample.
static LogicalResult importScan8(NodeImporter &node) {
  const onnx::GraphProto *body = node.getGraph("body");
  int64_t scanInputs = node.getInt("num_scan_inputs", 0);
  if (!body || node.hasFailed())
    return failure();
  int64_t inputCount = int64_t(node.getNumInputs()) - 1;
  if (scanInputs <= 0 || scanInputs > inputCount)
    return node.emitError()
           << "num_scan_inputs must be between 1 and the " << inputCount
           << " inputs after sequence_lens, got " << scanInputs;
  SmallVector<int64_t> directions =
      node.getInts("directions", SmallVector<int64_t>(scanInputs, 0));
  if (node.hasFailed())
    return failure();
  if (int64_t(directions.size()) != scanInputs)
    return node.emitError() << "directions needs one value per scan input";
  int64_t stateCount = inputCount - scanInputs;
  int64_t scanOutputs = body->output_size() - stateCount;
  if (scanOutputs < 0)
    return node.emitError() << "the body gives " << body->output_size()
                            << " outputs for " << stateCount << " states";
  SmallVector<Value> operands;
  int64_t batch = -1;
  for (int64_t i = 0; i < inputCount; ++i) {
    Value v = node.getInput(1 + i);
    if (!v)
      return node.emitError() << "input " << 1 + i << " is missing";
    RankedTensorType type = tensorType(v);
    int64_t minRank = i < stateCount ? 1 : 2;
    if (type.getRank() < minRank || type.isDynamicDim(0) ||
        (batch >= 0 && type.getDimSize(0) != batch))
      return node.emitError()
             << "input " << 1 + i << " must lead with the batch ("
             << (i < stateCount ? "a state"
                                : "a sequence: [batch, length, ...]")
             << "), got " << type;
    batch = type.getDimSize(0);
    operands.push_back(v);
  }
  int64_t length = tensorType(operands.back()).getDimSize(1);
  if (Value lens = node.getInput(0)) {
    DenseIntElementsAttr attr;
    if (!matchPattern(lens, m_Constant(&attr)) ||
        llvm::any_of(attr.getValues<APInt>(), [&](const APInt &v) {
          return v.getSExtValue() != length;
        }))
      return node.emitError()
             << "sequence_lens must be absent or a constant equal to the "
                "sequence length "
             << length << " for every sample (Kiln unrolls the scan)";
  }
  if (batch * std::max<int64_t>(length, 1) > kMaxUnrolledIterations)
    return node.emitError() << "a batch of " << batch << " sequences of "
                            << length << " steps: Kiln unrolls scans of at "
                            << "most " << kMaxUnrolledIterations << " steps";
  SmallVector<SmallVector<Value>> perSample(stateCount + scanOutputs);
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<Value> states, sequences;
    for (auto [i, v] : llvm::enumerate(operands)) {
      RankedTensorType type = tensorType(v);
      int64_t rank = type.getRank();
      SmallVector<int64_t> starts(rank, 0), ends(type.getShape()),
          steps(rank, 1);
      starts[0] = b;
      ends[0] = b + 1;
      Value sample = node.create<graph::SliceOp>(v, starts, ends, steps);
      sample = sample ? node.create<graph::ReshapeOp>(
                            sample, type.getShape().drop_front(), false)
                      : Value();
      if (!sample)
        return failure();
      (int64_t(i) < stateCount ? states : sequences).push_back(sample);
    }
    FailureOr<SmallVector<Value>> results = unrollScan(
        node, *body, states, sequences, SmallVector<int64_t>(scanInputs, 0),
        directions, SmallVector<int64_t>(scanOutputs, 0),
        SmallVector<int64_t>(scanOutputs, 0));
    if (failed(results))
      return failure();
    for (auto [k, r] : llvm::enumerate(*results))
      perSample[k].push_back(r);
  }
  if (batch == 0)
    return node.emitError() << "the batch is empty, so the outputs have no "
                               "known shape";
  SmallVector<Value> results;
  for (auto &samples : perSample) {
    Value stacked = stack(node, samples, 0);
    if (!stacked)
      return failure();
    results.push_back(stacked);
  }
  return node.setResults(results);
}

void kiln::registerControlFlowImporters(NodeImporterRegistry &registry) {
  registry.add("If", /*minOpset=*/1, importIf);
  registry.add("Loop", /*minOpset=*/1, importLoop);
  registry.add("Scan", /*minOpset=*/8, importScan8, /*maxOpset=*/8);
  registry.add("Scan", /*minOpset=*/9, importScan);
}
