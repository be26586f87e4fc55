//===- FuzzModelProto.cpp - libFuzzer harness: mutated ONNX models --------===//
//
// A structure-aware fuzzer of ModelProto (issue 23, docs/reliability.md):
// its mutator parses the input as a model and changes it through protobuf
// reflection (a field set to an edge value, a name swapped for another of
// the model's names, a repeated entry dropped, duplicated or swapped, a
// tensor's bytes cut or flipped), so that most inputs stay models that get
// past the parser. Each is imported, verified and, when it imports, run
// through the graph-level optimisation pipeline (with the blocked layout)
// and verified again: errors are fine, a crash, hang, leak or sanitizer
// report is not. (Debian has no libprotobuf-mutator; this is Kiln's own.)
//
// Built a second time with KILN_FUZZ_CODEGEN as kiln-fuzz-codegen, the same
// mutator feeds the whole compiler instead (kiln::compileONNXBytes down to
// an object file: the lowering, bufferisation, the CPU code generation and
// LLVM) with models small enough to compile in a fraction of a second.
// Code generation of random valid graphs is also the differential tester's
// (tools/difftest.py).
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"
#include "dialects/Graph/GraphShapeUtils.h"
#include "dialects/Graph/Transforms/Pipeline.h"
#include "kiln/compiler.h"
#include "lib/Import/ONNXImporter.h"

#include "mlir/IR/BuiltinTypes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// One field of one message somewhere in the model.
struct Site {
  Message *message;
  const FieldDescriptor *field;
};

/// Every field of `message` and of the messages inside it (to a depth of
/// 12: subgraphs nest), set or not, and every string in it.
void collect(Message &message, std::vector<Site> &sites,
             std::vector<std::string> &strings, int depth) {
  const Reflection *reflection = message.GetReflection();
  const auto *descriptor = message.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor *field = descriptor->field(i);
    sites.push_back({&message, field});
    bool isMessage = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    bool isString = field->cpp_type() == FieldDescriptor::CPPTYPE_STRING &&
                    field->type() == FieldDescriptor::TYPE_STRING;
    if (field->is_repeated()) {
      int n = reflection->FieldSize(message, field);
      for (int j = 0; j < n; ++j) {
        if (isMessage && depth < 12)
          collect(*reflection->MutableRepeatedMessage(&message, field, j),
                  sites, strings, depth + 1);
        else if (isString)
          strings.push_back(reflection->GetRepeatedString(message, field, j));
      }
    } else if (isMessage && depth < 12 &&
               reflection->HasField(message, field)) {
      collect(*reflection->MutableMessage(&message, field), sites, strings,
              depth + 1);
    } else if (isString && reflection->HasField(message, field)) {
      strings.push_back(reflection->GetString(message, field));
    }
  }
}

template <typename T> T edgeInteger(std::mt19937 &rng, T value) {
  // Wrapping arithmetic, in the unsigned type (no overflow to trip UBSan).
  using U = std::make_unsigned_t<T>;
  const T choices[] = {0,
                       1,
                       T(-1),
                       2,
                       3,
                       T(U(value) + 1),
                       T(U(value) - 1),
                       T(U(value) * 2),
                       std::numeric_limits<T>::max(),
                       std::numeric_limits<T>::min(),
                       T(1) << (sizeof(T) * 8 - 2),
                       T(rng() % 4096)};
  return choices[rng() % (sizeof(choices) / sizeof(choices[0]))];
}

double edgeFloat(std::mt19937 &rng, double value) {
  const double choices[] = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            value * 2,
                            -value,
                            1e30,
                            1e-30,
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  return choices[rng() % (sizeof(choices) / sizeof(choices[0]))];
}

std::string mutateString(std::mt19937 &rng, const std::string &value,
                         const std::vector<std::string> &strings) {
  static const char *const opTypes[] = {
      "Conv",    "MatMul", "Gemm",      "Add",    "Relu",      "Reshape",
      "Gather",  "Concat", "Transpose", "Slice",  "Softmax",   "If",
      "Loop",    "Scan",   "LSTM",      "Resize", "ScatterND", "Einsum",
      "MaxPool", "Pad",    "Expand",    "Tile",   "TopK",      "Unknown"};
  switch (rng() % 5) {
  case 0:
  case 1: // another name of the model: rewires the graph
    if (!strings.empty())
      return strings[rng() % strings.size()];
    return value;
  case 2:
    return opTypes[rng() % (sizeof(opTypes) / sizeof(opTypes[0]))];
  case 3:
    return "";
  default:
    return value + static_cast<char>('a' + rng() % 26);
  }
}

std::string mutateBytes(std::mt19937 &rng, std::string bytes) {
  switch (rng() % 3) {
  case 0:
    bytes.resize(bytes.empty() ? 0 : rng() % bytes.size());
    break;
  case 1:
    bytes.append(1 + rng() % 16, static_cast<char>(rng()));
    break;
  default:
    if (!bytes.empty())
      bytes[rng() % bytes.size()] ^= static_cast<char>(1u << (rng() % 8));
  }
  return bytes;
}

/// Changes one value of a singular field.
void mutateSingular(std::mt19937 &rng, Site site,
                    const std::vector<std::string> &strings) {
  Message &m = *site.message;
  const Reflection *r = m.GetReflection();
  const FieldDescriptor *f = site.field;
  switch (f->cpp_type()) {
  case FieldDescriptor::CPPTYPE_INT32:
    r->SetInt32(&m, f, edgeInteger<int32_t>(rng, r->GetInt32(m, f)));
    break;
  case FieldDescriptor::CPPTYPE_INT64:
    r->SetInt64(&m, f, edgeInteger<int64_t>(rng, r->GetInt64(m, f)));
    break;
  case FieldDescriptor::CPPTYPE_UINT32:
    r->SetUInt32(&m, f, edgeInteger<uint32_t>(rng, r->GetUInt32(m, f)));
    break;
  case FieldDescriptor::CPPTYPE_UINT64:
    r->SetUInt64(&m, f, edgeInteger<uint64_t>(rng, r->GetUInt64(m, f)));
    break;
  case FieldDescriptor::CPPTYPE_FLOAT:
    r->SetFloat(&m, f, float(edgeFloat(rng, r->GetFloat(m, f))));
    break;
  case FieldDescriptor::CPPTYPE_DOUBLE:
    r->SetDouble(&m, f, edgeFloat(rng, r->GetDouble(m, f)));
    break;
  case FieldDescriptor::CPPTYPE_BOOL:
    r->SetBool(&m, f, !r->GetBool(m, f));
    break;
  case FieldDescriptor::CPPTYPE_ENUM: {
    const auto *type = f->enum_type();
    r->SetEnum(&m, f, type->value(rng() % type->value_count()));
    break;
  }
  case FieldDescriptor::CPPTYPE_STRING:
    if (f->type() == FieldDescriptor::TYPE_BYTES)
      r->SetString(&m, f, mutateBytes(rng, r->GetString(m, f)));
    else
      r->SetString(&m, f, mutateString(rng, r->GetString(m, f), strings));
    break;
  case FieldDescriptor::CPPTYPE_MESSAGE:
    r->ClearField(&m, f);
    break;
  }
}

/// Changes a repeated field: drops, duplicates or swaps an entry, or
/// changes one entry's value.
void mutateRepeated(std::mt19937 &rng, Site site,
                    const std::vector<std::string> &strings) {
  Message &m = *site.message;
  const Reflection *r = m.GetReflection();
  const FieldDescriptor *f = site.field;
  int n = r->FieldSize(m, f);
  if (n == 0)
    return;
  int j = static_cast<int>(rng() % n);
  switch (rng() % 4) {
  case 0: // drop entry j
    r->SwapElements(&m, f, j, n - 1);
    r->RemoveLast(&m, f);
    return;
  case 1: // swap two entries
    r->SwapElements(&m, f, j, static_cast<int>(rng() % n));
    return;
  case 2: // duplicate entry j (messages) at the end
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      const Message &entry = r->GetRepeatedMessage(m, f, j);
      r->AddMessage(&m, f)->CopyFrom(entry);
      return;
    }
    [[fallthrough]];
  default:
    break;
  }
  switch (f->cpp_type()) {
  case FieldDescriptor::CPPTYPE_INT32:
    r->SetRepeatedInt32(
        &m, f, j, edgeInteger<int32_t>(rng, r->GetRepeatedInt32(m, f, j)));
    break;
  case FieldDescriptor::CPPTYPE_INT64:
    r->SetRepeatedInt64(
        &m, f, j, edgeInteger<int64_t>(rng, r->GetRepeatedInt64(m, f, j)));
    break;
  case FieldDescriptor::CPPTYPE_UINT64:
    r->SetRepeatedUInt64(
        &m, f, j, edgeInteger<uint64_t>(rng, r->GetRepeatedUInt64(m, f, j)));
    break;
  case FieldDescriptor::CPPTYPE_FLOAT:
    r->SetRepeatedFloat(&m, f, j,
                        float(edgeFloat(rng, r->GetRepeatedFloat(m, f, j))));
    break;
  case FieldDescriptor::CPPTYPE_DOUBLE:
    r->SetRepeatedDouble(&m, f, j,
                         edgeFloat(rng, r->GetRepeatedDouble(m, f, j)));
    break;
  case FieldDescriptor::CPPTYPE_STRING:
    r->SetRepeatedString(
        &m, f, j,
        f->type() == FieldDescriptor::TYPE_BYTES
            ? mutateBytes(rng, r->GetRepeatedString(m, f, j))
            : mutateString(rng, r->GetRepeatedString(m, f, j), strings));
    break;
  default: // messages: drop it instead
    r->SwapElements(&m, f, j, n - 1);
    r->RemoveLast(&m, f);
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937 rng(seed);
  onnx::ModelProto model;
  // Not a model, and now and then a model too: libFuzzer's byte mutations.
  if (rng() % 8 == 0 || !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  for (unsigned step = 0, steps = 1 + rng() % 3; step < steps; ++step) {
    std::vector<Site> sites;
    std::vector<std::string> strings;
    collect(model, sites, strings, 0);
    if (sites.empty())
      break;
    Site site = sites[rng() % sites.size()];
    if (site.field->is_repeated())
      mutateRepeated(rng, site, strings);
    else
      mutateSingular(rng, site, strings);
  }
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

#ifdef KILN_FUZZ_CODEGEN
/// Whether `module` is small enough to compile many times a second: at most
/// 64 ops, and no tensor of more than 2^16 elements.
static bool isSmall(mlir::ModuleOp module) {
  int64_t ops = 0;
  mlir::WalkResult walk = module.walk([&](mlir::Operation *op) {
    if (++ops > 64)
      return mlir::WalkResult::interrupt();
    for (mlir::Type type : op->getResultTypes()) {
      auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
      if (tensor && (!tensor.hasStaticShape() ||
                     !kiln::graph::hasAtMostElements(tensor.getShape(),
                                                     int64_t(1) << 16)))
        return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::fuzz::importAndVerify(data, size);
  if (!module || !isSmall(*module))
    return 0;
  // The whole compiler, as kiln-compile runs it, to a relocatable object
  // (the shared object adds only the linker): an error is the user's answer.
  static const std::string output =
      "/tmp/kiln-fuzz-codegen-" + std::to_string(getpid()) + ".o";
  kiln::CompileOptions options;
  options.emit = kiln::EmitStage::Object;
  (void)kiln::compileONNXBytes(
      std::string(reinterpret_cast<const char *>(data), size),
      /*baseDir=*/"", output, options);
  std::remove(output.c_str());
  return 0;
}
#else
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::fuzz::importAndVerify(data, size);
  if (!module)
    return 0;
  mlir::PassManager pm(&kiln::fuzz::context(),
                       mlir::ModuleOp::getOperationName());
  kiln::GraphOptimizationOptions graph;
  graph.layoutBlock = 16;
  // As for a CPU target: f16 models computed in f32, large reductions split.
  graph.widenHalf = true;
  graph.splitReductions = true;
  kiln::buildGraphOptimizationPipeline(pm, graph);
  // A pass may refuse the model (its error is the user's answer); if it
  // succeeds, the module must still verify (the pass manager checks).
  (void)pm.run(*module);
  return 0;
}
#endif
