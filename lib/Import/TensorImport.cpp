//===- TensorImport.cpp - ONNX tensors into elements attributes -----------===//
//
// Reads the data of an initializer or a tensor attribute (raw little-endian
// bytes, the typed repeated fields, or an external file inside the model's
// folder) and checks every size against the declared shape before touching
// the data.
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportState.h"

#include "dialects/Graph/GraphShapeUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SwapByteOrder.h"

#include "onnx/onnx_pb.h"

#include <cstring>

using namespace mlir;
using namespace kiln;

/// Tensors with more elements than this become dense_resource blobs.
static constexpr int64_t kMaxInlineElements = 64;
/// Alignment of weight blobs: enough for any vector load on the data.
static constexpr size_t kBlobAlignment = 64;

Type kiln::convertElementType(MLIRContext *context, int32_t onnxType) {
  Builder b(context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT32:
    return b.getIntegerType(32);
  case onnx::TensorProto::INT64:
    return b.getIntegerType(64);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, /*isSigned=*/false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, /*isSigned=*/false);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, /*isSigned=*/false);
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  // Numbers from onnx.proto, newer than the schema Kiln is built against.
  case 17: // FLOAT8E4M3FN
    return b.getType<Float8E4M3FNType>();
  case 18: // FLOAT8E4M3FNUZ
    return b.getType<Float8E4M3FNUZType>();
  case 19: // FLOAT8E5M2
    return b.getType<Float8E5M2Type>();
  case 20: // FLOAT8E5M2FNUZ
    return b.getType<Float8E5M2FNUZType>();
  case 21: // UINT4
    return b.getIntegerType(4, /*isSigned=*/false);
  case 22: // INT4
    return b.getIntegerType(4);
  case 23: // FLOAT4E2M1
    return b.getType<Float4E2M1FNType>();
  case 24: // FLOAT8E8M0
    return b.getType<Float8E8M0FNUType>();
  case 25: // UINT2
    return b.getIntegerType(2, /*isSigned=*/false);
  case 26: // INT2
    return b.getIntegerType(2);
  default:
    return {};
  }
}

std::string kiln::getONNXTypeName(int32_t onnxType) {
  // Numbered as in onnx.proto; the ones after BFLOAT16 are newer than the
  // schema Kiln is built against.
  static const char *const names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",
      "INT8",           "UINT16",     "INT16",
      "INT32",          "INT64",      "STRING",
      "BOOL",           "FLOAT16",    "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",
      "COMPLEX128",     "BFLOAT16",   "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",          "INT4",       "FLOAT4E2M1",
      "FLOAT8E8M0",     "UINT2",      "INT2"};
  if (onnxType >= 0 && static_cast<size_t>(onnxType) < std::size(names))
    return names[onnxType];
  return "data type " + std::to_string(onnxType);
}

/// Bytes one element takes in raw_data and in Kiln's buffers.
static size_t getStorageBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  return type.getIntOrFloatBitWidth() / 8;
}

namespace {
/// Reports errors at one location with a common prefix.
struct TensorErrors {
  Location loc;
  const Twine &what;
  InFlightDiagnostic operator()() const {
    return emitError(loc) << what << ": ";
  }
};
} // namespace

/// Opens the external data of `tensor` after checking that it lies inside
/// the model's folder and holds exactly `byteCount` bytes.
static std::unique_ptr<llvm::MemoryBuffer>
openExternalData(const onnx::TensorProto &tensor, GraphImportState &state,
                 int64_t byteCount, const TensorErrors &error) {
  std::string location;
  std::optional<int64_t> offset, length;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    llvm::StringRef key = entry.key(), value = entry.value();
    if (key == "location") {
      location = entry.value();
      continue;
    }
    if (key != "offset" && key != "length")
      continue; // "checksum" and unknown keys do not change the data.
    int64_t number;
    if (value.getAsInteger(10, number) || number < 0) {
      error() << "external data " << key << " '" << value
              << "' is not a non-negative integer";
      return nullptr;
    }
    (key == "offset" ? offset : length) = number;
  }
  if (location.empty()) {
    error() << "external data has no 'location'";
    return nullptr;
  }
  if (state.baseDir.empty()) {
    error() << "uses external data file '" << location
            << "', but the model was given in memory without a folder to "
               "read it from";
    return nullptr;
  }
  if (llvm::sys::path::is_absolute(location, llvm::sys::path::Style::posix) ||
      llvm::sys::path::is_absolute(location, llvm::sys::path::Style::windows)) {
    error() << "external data location '" << location
            << "' is an absolute path; it must be relative to the model's "
               "folder";
    return nullptr;
  }
  for (llvm::StringRef part : llvm::make_range(
           llvm::sys::path::begin(location, llvm::sys::path::Style::posix),
           llvm::sys::path::end(location))) {
    if (part == "..") {
      error() << "external data location '" << location
              << "' leaves the model's folder ('..' is not allowed)";
      return nullptr;
    }
  }

  llvm::SmallString<256> realBase, realFile, joined(state.baseDir);
  llvm::sys::path::append(joined, location);
  if (std::error_code ec = llvm::sys::fs::real_path(state.baseDir, realBase)) {
    error() << "cannot resolve the model's folder '" << state.baseDir
            << "': " << ec.message();
    return nullptr;
  }
  if (std::error_code ec = llvm::sys::fs::real_path(joined, realFile)) {
    error() << "cannot open external data file '" << location
            << "': " << ec.message();
    return nullptr;
  }
  llvm::SmallString<256> prefix(realBase);
  if (!prefix.ends_with("/"))
    prefix += "/";
  if (!llvm::StringRef(realFile).starts_with(prefix)) {
    error() << "external data file '" << location << "' resolves to '"
            << realFile << "', outside the model's folder '" << realBase
            << "' (through a symbolic link?)";
    return nullptr;
  }
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(realFile, status)) {
    error() << "cannot read external data file '" << location
            << "': " << ec.message();
    return nullptr;
  }
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    error() << "external data file '" << location << "' is not a regular file";
    return nullptr;
  }
  uint64_t fileSize = status.getSize();
  int64_t begin = offset.value_or(0);
  if (static_cast<uint64_t>(begin) > fileSize) {
    error() << "external data offset " << begin << " is past the end of '"
            << location << "' (" << fileSize << " bytes)";
    return nullptr;
  }
  int64_t size = length.value_or(static_cast<int64_t>(fileSize - begin));
  int64_t end;
  if (llvm::AddOverflow(begin, size, end) ||
      static_cast<uint64_t>(end) > fileSize) {
    error() << "external data [" << begin << ", " << begin << " + " << size
            << ") runs past the end of '" << location << "' (" << fileSize
            << " bytes)";
    return nullptr;
  }
  if (size != byteCount) {
    error() << "external data holds " << size << " bytes, but the shape needs "
            << byteCount;
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFileSlice(realFile, size, begin,
                                                 /*IsVolatile=*/false);
  if (!buffer) {
    error() << "cannot read external data file '" << location
            << "': " << buffer.getError().message();
    return nullptr;
  }
  return std::move(*buffer);
}

/// Copies `src` (little-endian elements of `elementBytes`) into `dst` in the
/// host's byte order.
static void copyLittleEndian(const char *src, MutableArrayRef<char> dst,
                             size_t elementBytes) {
  if (dst.empty()) // an empty tensor's data may be a null pointer
    return;
  std::memcpy(dst.data(), src, dst.size());
  if (!llvm::sys::IsBigEndianHost || elementBytes == 1)
    return;
  for (size_t i = 0; i < dst.size(); i += elementBytes)
    std::reverse(dst.begin() + i, dst.begin() + i + elementBytes);
}

/// Writes the values of a typed field, converted to the element's storage.
template <typename Field>
static void copyTyped(const Field &field, Type type,
                      MutableArrayRef<char> dst) {
  size_t bytes = getStorageBytes(type);
  char *out = dst.data();
  for (auto value : field) {
    if (type.isF32()) {
      float f = value;
      std::memcpy(out, &f, 4);
    } else if (type.isF64()) {
      double d = value;
      std::memcpy(out, &d, 8);
    } else if (type.isInteger(1)) {
      *out = value != 0;
    } else {
      // Integers, and f16/bf16 whose bit pattern ONNX keeps in the low 16
      // bits of int32_data: keep the low bytes.
      uint64_t bits = static_cast<uint64_t>(value);
      switch (bytes) {
      case 1: {
        uint8_t v = bits;
        std::memcpy(out, &v, 1);
        break;
      }
      case 2: {
        uint16_t v = bits;
        std::memcpy(out, &v, 2);
        break;
      }
      case 4: {
        uint32_t v = bits;
        std::memcpy(out, &v, 4);
        break;
      }
      default:
        std::memcpy(out, &bits, 8);
        break;
      }
    }
    out += bytes;
  }
}

ElementsAttr
kiln::makeElementsAttr(RankedTensorType type, int64_t count, int64_t byteCount,
                       llvm::StringRef name,
                       llvm::function_ref<void(MutableArrayRef<char>)> fill) {
  Type elementType = type.getElementType();
  if (elementType.isInteger(1)) {
    // Booleans stay dense: MLIR stores i1 elements bit-packed.
    std::vector<char> bytes(count);
    fill(bytes);
    llvm::SmallVector<bool> values(bytes.begin(), bytes.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  if (count <= kMaxInlineElements) {
    llvm::SmallVector<char, 512> bytes(byteCount);
    fill(bytes);
    return DenseElementsAttr::getFromRawBuffer(type, bytes);
  }
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(byteCount, kBlobAlignment);
  fill(blob.getMutableData());
  // Resource keys are identifiers; the manager makes them unique.
  std::string key;
  for (char c : name)
    key += llvm::isAlnum(c) ? c : '_';
  if (key.empty() || llvm::isDigit(key.front()))
    key.insert(0, "w_");
  return DenseResourceElementsAttr::get(type, key, std::move(blob));
}

ElementsAttr kiln::importTensor(const onnx::TensorProto &tensor,
                                GraphImportState &state, Location loc,
                                const Twine &what) {
  TensorErrors error{loc, what};
  MLIRContext *context = state.context;
  Type elementType = convertElementType(context, tensor.data_type());
  if (!elementType) {
    error() << "element type " << getONNXTypeName(tensor.data_type())
            << " is not supported";
    return {};
  }
  if ((elementType.getIntOrFloatBitWidth() < 8 && !elementType.isInteger(1)) ||
      (isa<FloatType>(elementType) &&
       elementType.getIntOrFloatBitWidth() <= 8)) {
    // Graph ops other than graph.cast do not take the 8-, 4- and 2-bit types
    // (and ONNX packs the 4- and 2-bit ones two or four to a byte).
    error() << "constants of element type "
            << getONNXTypeName(tensor.data_type()) << " are not supported";
    return {};
  }
  if (tensor.has_segment()) {
    error() << "segmented tensors are not supported";
    return {};
  }
  llvm::SmallVector<int64_t> shape;
  int64_t count = 1;
  bool overflow = false;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0) {
      error() << "dimension " << shape.size() << " is negative (" << dim << ")";
      return {};
    }
    shape.push_back(dim);
    overflow = overflow || llvm::MulOverflow(count, dim, count);
  }
  size_t elementBytes = getStorageBytes(elementType);
  int64_t byteCount = 0;
  if (overflow ||
      llvm::MulOverflow(count, static_cast<int64_t>(elementBytes), byteCount)) {
    error() << "shape " << graph::formatShape(shape)
            << " has more elements than fit in 64 bits";
    return {};
  }
  auto type = RankedTensorType::get(shape, elementType);
  auto describeNeed = [&]() {
    return graph::formatShape(shape) + " of " +
           getONNXTypeName(tensor.data_type()) + " needs " +
           std::to_string(count) + " elements (" + std::to_string(byteCount) +
           " bytes)";
  };

  if (tensor.has_data_location() &&
      tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::unique_ptr<llvm::MemoryBuffer> buffer =
        openExternalData(tensor, state, byteCount, error);
    if (!buffer)
      return {};
    return makeElementsAttr(
        type, count, byteCount, tensor.name(), [&](MutableArrayRef<char> dst) {
          copyLittleEndian(buffer->getBufferStart(), dst, elementBytes);
        });
  }

  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (static_cast<uint64_t>(raw.size()) != static_cast<uint64_t>(byteCount)) {
      error() << "raw_data holds " << raw.size() << " bytes, but shape "
              << describeNeed();
      return {};
    }
    return makeElementsAttr(type, count, byteCount, tensor.name(),
                            [&](MutableArrayRef<char> dst) {
                              copyLittleEndian(raw.data(), dst, elementBytes);
                            });
  }

  // The typed field ONNX uses for each element type.
  auto checkCount = [&](int size, llvm::StringRef field) {
    if (static_cast<int64_t>(size) == count)
      return true;
    error() << field << " holds " << size << " values, but shape "
            << describeNeed();
    return false;
  };
  auto fromField = [&](const auto &field,
                       llvm::StringRef fieldName) -> ElementsAttr {
    if (!checkCount(field.size(), fieldName))
      return {};
    return makeElementsAttr(
        type, count, byteCount, tensor.name(),
        [&](MutableArrayRef<char> dst) { copyTyped(field, elementType, dst); });
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    return fromField(tensor.float_data(), "float_data");
  case onnx::TensorProto::DOUBLE:
    return fromField(tensor.double_data(), "double_data");
  case onnx::TensorProto::INT64:
    return fromField(tensor.int64_data(), "int64_data");
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    return fromField(tensor.uint64_data(), "uint64_data");
  default:
    return fromField(tensor.int32_data(), "int32_data");
  }
}

SmallVector<std::pair<Location, std::string>>
kiln::collectDiagnostics(MLIRContext *context, llvm::function_ref<void()> fn) {
  SmallVector<std::pair<Location, std::string>> messages;
  {
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      std::string text = diag.str();
      for (Diagnostic &note : diag.getNotes())
        text += " (" + note.str() + ")";
      messages.push_back({diag.getLocation(), std::move(text)});
      return success();
    });
    fn();
  }
  return messages;
}
