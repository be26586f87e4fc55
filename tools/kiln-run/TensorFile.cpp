//===- TensorFile.cpp - .npy and ONNX TensorProto files -------------------===//
//
// .npy: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// TensorProto: onnx/onnx.proto (field numbers) and the protobuf encoding
// guide (wire types, varints, packed repeated fields).
//
// The host is assumed little-endian (x86-64, AArch64), as the model ABI is.
//
//===----------------------------------------------------------------------===//

#include "TensorFile.h"

#include "kiln/runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tensor files are read and written for a little-endian host");

using namespace kiln;

bool HostTensor::allocate(size_t byteSize) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (byteSize + 63) & ~size_t(63);
  if (rounded < byteSize)
    return false;
  auto *memory =
      static_cast<uint8_t *>(std::aligned_alloc(64, rounded ? rounded : 64));
  if (!memory)
    return false;
  std::memset(memory, 0, rounded ? rounded : 64);
  data_.reset(memory);
  byteSize_ = byteSize;
  return true;
}

std::string kiln::formatShape(const int64_t *shape, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

namespace {

constexpr size_t kMaxRank = 64;

// Element count times element size, or an error on overflow.
std::string byteSizeOf(int32_t dtype, const std::vector<int64_t> &shape,
                       size_t &bytes) {
  bytes = kiln_dtype_size(dtype);
  for (int64_t dim : shape) {
    if (dim < 0)
      return "negative dimension in shape " +
             formatShape(shape.data(), shape.size());
    if (dim != 0 && bytes > SIZE_MAX / static_cast<uint64_t>(dim))
      return "shape " + formatShape(shape.data(), shape.size()) +
             " is too large";
    bytes *= static_cast<size_t>(dim);
  }
  return "";
}

//===--- .npy header -----------------------------------------------------===//

// A parser for the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class NpyHeaderParser {
public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  std::string parse(std::string &descr, bool &fortranOrder,
                    std::vector<int64_t> &shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return "header is not a dict";
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return "expected a quoted key in the header";
      skipSpace();
      if (!consume(':'))
        return "expected ':' after '" + key + "' in the header";
      skipSpace();
      if (key == "descr") {
        if (!parseString(descr))
          return "'descr' is not a string";
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (consumeWord("True"))
          fortranOrder = true;
        else if (consumeWord("False"))
          fortranOrder = false;
        else
          return "'fortran_order' is not True or False";
        haveOrder = true;
      } else if (key == "shape") {
        if (std::string error = parseShape(shape); !error.empty())
          return error;
        haveShape = true;
      } else {
        return "unknown key '" + key + "' in the header";
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return "expected ',' or '}' in the header";
    }
    skipSpace();
    if (pos_ != text_.size())
      return "unexpected text after the header dict";
    if (!haveDescr || !haveOrder || !haveShape)
      return std::string("header lacks '") +
             (!haveDescr   ? "descr"
              : !haveOrder ? "fortran_order"
                           : "shape") +
             "'";
    return "";
  }

private:
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }
  bool parseString(std::string &out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return false;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      return false;
    out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  std::string parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!consume('('))
      return "'shape' is not a tuple";
    while (true) {
      skipSpace();
      if (consume(')'))
        return "";
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
        return "'shape' holds something other than non-negative integers";
      int64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        int digit = text_[pos_++] - '0';
        if (value > (INT64_MAX - digit) / 10)
          return "a dimension in 'shape' is too large";
        value = value * 10 + digit;
      }
      consume('L'); // Python 2 long literals
      if (shape.size() == kMaxRank)
        return "'shape' has more than 64 dimensions";
      shape.push_back(value);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return "";
      return "expected ',' or ')' in 'shape'";
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

struct NpyType {
  const char *code; // kind and size, e.g. "f4"
  int32_t dtype;
};

constexpr NpyType npyTypes[] = {
    {"f4", KILN_DTYPE_F32}, {"f8", KILN_DTYPE_F64}, {"f2", KILN_DTYPE_F16},
    {"i1", KILN_DTYPE_I8},  {"i2", KILN_DTYPE_I16}, {"i4", KILN_DTYPE_I32},
    {"i8", KILN_DTYPE_I64}, {"u1", KILN_DTYPE_U8},  {"u2", KILN_DTYPE_U16},
    {"u4", KILN_DTYPE_U32}, {"u8", KILN_DTYPE_U64}, {"b1", KILN_DTYPE_BOOL},
};

/// Bits per element of the types ONNX packs several to a byte; 0 for others.
unsigned packedBits(int32_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_U4:
  case KILN_DTYPE_I4:
  case KILN_DTYPE_F4E2M1:
    return 4;
  case KILN_DTYPE_U2:
  case KILN_DTYPE_I2:
    return 2;
  default:
    return 0;
  }
}

const char *npyCodeOf(int32_t dtype) {
  if (dtype == KILN_DTYPE_BF16)
    return "u2";
  // The 8-, 4- and 2-bit types: their ABI bytes (model_abi.h).
  if (dtype >= KILN_DTYPE_F8E4M3FN && dtype <= KILN_DTYPE_I2)
    return "u1";
  for (const NpyType &t : npyTypes)
    if (t.dtype == dtype)
      return t.code;
  return nullptr;
}

uint32_t readLE(const uint8_t *p, size_t n) {
  uint32_t value = 0;
  for (size_t i = 0; i < n; ++i)
    value |= uint32_t(p[i]) << (8 * i);
  return value;
}

//===--- protobuf wire format --------------------------------------------===//

class WireReader {
public:
  WireReader(const uint8_t *begin, const uint8_t *end) : p_(begin), end_(end) {}
  bool atEnd() const { return p_ == end_; }

  bool varint(uint64_t &value) {
    value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (p_ == end_)
        return false;
      uint8_t byte = *p_++;
      if (shift == 63 && (byte & 0x7e))
        return false; // more than 64 bits
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }
  bool fixed(void *out, size_t n) {
    if (size_t(end_ - p_) < n)
      return false;
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  bool bytes(const uint8_t *&begin, size_t &size) {
    uint64_t length;
    if (!varint(length) || length > uint64_t(end_ - p_))
      return false;
    begin = p_;
    size = size_t(length);
    p_ += size;
    return true;
  }
  bool skip(unsigned wireType) {
    uint64_t ignored;
    const uint8_t *begin;
    size_t size;
    switch (wireType) {
    case 0:
      return varint(ignored);
    case 1:
      return fixed(&ignored, 8);
    case 2:
      return bytes(begin, size);
    case 5:
      return fixed(&ignored, 4);
    default:
      return false; // groups (3, 4) and invalid types
    }
  }

private:
  const uint8_t *p_;
  const uint8_t *end_;
};

// Appends the values of a repeated scalar field, packed (wire type 2) or not.
// `Element` is uint64_t for varints, or float / double for fixed-size fields.
template <typename Element>
bool readRepeated(WireReader &reader, unsigned wireType,
                  std::vector<Element> &values) {
  constexpr bool isVarint = std::is_same_v<Element, uint64_t>;
  constexpr unsigned scalarWire = isVarint ? 0 : sizeof(Element) == 4 ? 5 : 1;
  auto readOne = [](WireReader &r, Element &v) {
    if constexpr (isVarint)
      return r.varint(v);
    else
      return r.fixed(&v, sizeof(Element));
  };
  if (wireType == scalarWire) {
    Element v;
    if (!readOne(reader, v))
      return false;
    values.push_back(v);
    return true;
  }
  if (wireType != 2)
    return false;
  const uint8_t *begin;
  size_t size;
  if (!reader.bytes(begin, size))
    return false;
  WireReader packed(begin, begin + size);
  while (!packed.atEnd()) {
    Element v;
    if (!readOne(packed, v))
      return false;
    values.push_back(v);
  }
  return true;
}

std::string readWholeFile(const std::string &path, std::vector<uint8_t> &out) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file)
    return "cannot open '" + path + "': " + std::strerror(errno);
  out.clear();
  uint8_t buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    out.insert(out.end(), buffer, buffer + n);
  bool failed = std::ferror(file);
  int error = errno;
  std::fclose(file);
  if (failed)
    return "cannot read '" + path + "': " + std::strerror(error);
  return "";
}

bool endsWith(const std::string &text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         std::string_view(text).substr(text.size() - suffix.size()) == suffix;
}

} // namespace

std::string kiln::parseNpy(const uint8_t *bytes, size_t size, HostTensor &out) {
  static const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 8 || std::memcmp(bytes, magic, sizeof(magic)) != 0)
    return "not a .npy file (no \\x93NUMPY magic string)";
  uint8_t major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return "unsupported .npy version " + std::to_string(major) + "." +
           std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)";
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (size < 8 + lengthBytes)
    return "truncated .npy header";
  size_t headerLength = readLE(bytes + 8, lengthBytes);
  size_t dataOffset = 8 + lengthBytes;
  if (headerLength > size - dataOffset)
    return "truncated .npy header: it claims " + std::to_string(headerLength) +
           " bytes, the file has " + std::to_string(size - dataOffset);
  std::string_view header(reinterpret_cast<const char *>(bytes + dataOffset),
                          headerLength);
  dataOffset += headerLength;

  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  if (std::string error =
          NpyHeaderParser(header).parse(descr, fortranOrder, shape);
      !error.empty())
    return "malformed .npy header: " + error;
  if (fortranOrder)
    return "Fortran-order .npy files are not supported; save the array in C "
           "order (numpy.ascontiguousarray)";
  if (descr.size() != 3)
    return "unsupported .npy dtype '" + descr + "'";
  char order = descr[0];
  std::string code = descr.substr(1);
  int32_t dtype = 0;
  for (const NpyType &t : npyTypes)
    if (code == t.code)
      dtype = t.dtype;
  if (!dtype)
    return "unsupported .npy dtype '" + descr +
           "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)";
  bool oneByte = kiln_dtype_size(dtype) == 1;
  if (order != '<' && order != '=' && order != '|' &&
      !(order == '>' && oneByte))
    return "unsupported .npy byte order in '" + descr +
           "' (only little-endian is supported)";

  size_t byteSize;
  if (std::string error = byteSizeOf(dtype, shape, byteSize); !error.empty())
    return error;
  size_t available = size - dataOffset;
  if (available < byteSize)
    return "truncated .npy data: shape " +
           formatShape(shape.data(), shape.size()) + " needs " +
           std::to_string(byteSize) + " bytes, the file has " +
           std::to_string(available);
  if (available > byteSize)
    return ".npy file has " + std::to_string(available - byteSize) +
           " bytes after its data";
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.name.clear();
  if (!out.allocate(byteSize))
    return "out of memory";
  if (byteSize)
    std::memcpy(out.data(), bytes + dataOffset, byteSize);
  return "";
}

std::string kiln::encodeNpy(int32_t dtype, const int64_t *shape, int32_t rank,
                            const void *data, size_t byteSize,
                            std::string &out) {
  const char *code = npyCodeOf(dtype);
  if (!code)
    return "cannot write dtype " + std::to_string(dtype) + " as .npy";
  if (rank < 0 || (rank > 0 && !shape))
    return "invalid shape";
  std::string header = std::string("{'descr': '") +
                       (kiln_dtype_size(dtype) == 1 ? '|' : '<') + code +
                       "', 'fortran_order': False, 'shape': (";
  for (int32_t i = 0; i < rank; ++i)
    header += std::to_string(shape[i]) + (rank == 1      ? ","
                                          : i + 1 < rank ? ", "
                                                         : "");
  header += "), }";
  // Pad with spaces and end with '\n' so that the data starts at a multiple
  // of 64 bytes, as NumPy does.
  size_t prefix = 10;
  if ((prefix + header.size() + 1 + 63) / 64 * 64 - prefix > 65535)
    prefix = 12; // version 2.0: 4-byte header length
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  out.clear();
  out.reserve(total + byteSize);
  out += "\x93NUMPY";
  out += char(prefix == 10 ? 1 : 2);
  out += char(0);
  size_t length = header.size();
  for (size_t i = 0; i < prefix - 8; ++i)
    out += char((length >> (8 * i)) & 0xff);
  out += header;
  out.append(static_cast<const char *>(data), byteSize);
  return "";
}

std::string kiln::parseTensorProto(const uint8_t *bytes, size_t size,
                                   HostTensor &out) {
  std::vector<uint64_t> dims, int32Data, int64Data, uint64Data;
  std::vector<float> floatData;
  std::vector<double> doubleData;
  const uint8_t *raw = nullptr;
  size_t rawSize = 0;
  bool haveRaw = false;
  uint64_t dataType = 0;
  std::string name;

  WireReader reader(bytes, bytes + size);
  while (!reader.atEnd()) {
    uint64_t key;
    if (!reader.varint(key))
      return "truncated or malformed TensorProto (bad field key)";
    uint64_t field = key >> 3;
    unsigned wireType = unsigned(key & 7);
    bool ok = true;
    auto fieldName = [&]() -> std::string {
      return "field " + std::to_string(field);
    };
    switch (field) {
    case 1:
      ok = readRepeated(reader, wireType, dims);
      if (dims.size() > kMaxRank)
        return "TensorProto has more than 64 dims";
      break;
    case 2:
      ok = wireType == 0 && reader.varint(dataType);
      break;
    case 3:
      return "segmented TensorProto (field 'segment') is not supported";
    case 4:
      ok = readRepeated(reader, wireType, floatData);
      break;
    case 5:
      ok = readRepeated(reader, wireType, int32Data);
      break;
    case 7:
      ok = readRepeated(reader, wireType, int64Data);
      break;
    case 8: {
      const uint8_t *begin;
      size_t length;
      ok = wireType == 2 && reader.bytes(begin, length);
      if (ok)
        name.assign(reinterpret_cast<const char *>(begin), length);
      break;
    }
    case 9:
      ok = wireType == 2 && reader.bytes(raw, rawSize);
      haveRaw = ok;
      break;
    case 10:
      ok = readRepeated(reader, wireType, doubleData);
      break;
    case 11:
      ok = readRepeated(reader, wireType, uint64Data);
      break;
    case 14: {
      uint64_t location;
      ok = wireType == 0 && reader.varint(location);
      if (ok && location != 0)
        return "TensorProto with external data is not supported";
      break;
    }
    default:
      if (field == 0)
        return "malformed TensorProto (field number 0)";
      ok = reader.skip(wireType);
      break;
    }
    if (!ok)
      return "truncated or malformed TensorProto (" + fieldName() +
             ", wire type " + std::to_string(wireType) + ")";
  }

  if (dataType == 0)
    return "TensorProto has no data_type";
  int32_t dtype = dataType <= 64 ? int32_t(dataType) : 0;
  if (!kiln_dtype_name(dtype))
    return "TensorProto data_type " + std::to_string(dataType) +
           " is not supported";
  std::vector<int64_t> shape;
  for (uint64_t d : dims) {
    if (int64_t(d) < 0)
      return "TensorProto has a negative dimension";
    shape.push_back(int64_t(d));
  }
  size_t byteSize;
  if (std::string error = byteSizeOf(dtype, shape, byteSize); !error.empty())
    return "TensorProto: " + error;
  size_t elementSize = kiln_dtype_size(dtype);
  size_t count = byteSize / elementSize;

  // Which typed field holds the values when there is no raw_data.
  enum { Float, Int32, Int64, Double, Uint64 } source;
  switch (dtype) {
  case KILN_DTYPE_F32:
    source = Float;
    break;
  case KILN_DTYPE_I64:
    source = Int64;
    break;
  case KILN_DTYPE_F64:
    source = Double;
    break;
  case KILN_DTYPE_U32:
  case KILN_DTYPE_U64:
    source = Uint64;
    break;
  default: // i8 u8 i16 u16 i32 bool f16 bf16
    source = Int32;
    break;
  }
  size_t typedCounts[] = {floatData.size(), int32Data.size(), int64Data.size(),
                          doubleData.size(), uint64Data.size()};
  static const char *typedNames[] = {"float_data", "int32_data", "int64_data",
                                     "double_data", "uint64_data"};
  for (int s = Float; s <= Uint64; ++s)
    if (typedCounts[s] && (haveRaw || s != source))
      return std::string("TensorProto of type ") + kiln_dtype_name(dtype) +
             (haveRaw ? " has both raw_data and " : " has ") + typedNames[s];

  // The data the shape asks for must be there before anything is
  // allocated: a few bytes of header may ask for any size.
  unsigned bits = packedBits(dtype);
  if (bits) {
    // ONNX packs these, the first element in the lowest bits of the first
    // byte, in raw_data or one byte per int32_data value; Kiln's buffers hold
    // one element per byte.
    // In whole bytes of 8 elements first: count * bits may wrap around
    // (a 4-bit tensor of 2^62 elements would need 0 bytes).
    size_t packedSize = count / 8 * bits + ((count % 8) * bits + 7) / 8;
    size_t given = haveRaw ? rawSize : int32Data.size();
    if (given != packedSize)
      return std::string("TensorProto ") +
             (haveRaw ? "raw_data" : "int32_data") + " has " +
             std::to_string(given) + " bytes, its shape " +
             formatShape(shape.data(), shape.size()) + " needs " +
             std::to_string(packedSize) + " packed " + kiln_dtype_name(dtype) +
             " bytes";
  } else if (haveRaw) {
    if (rawSize != byteSize)
      return "TensorProto raw_data has " + std::to_string(rawSize) +
             " bytes, its shape " + formatShape(shape.data(), shape.size()) +
             " needs " + std::to_string(byteSize);
  } else if (typedCounts[source] != count) {
    return std::string("TensorProto ") + typedNames[source] + " has " +
           std::to_string(typedCounts[source]) + " values, its shape " +
           formatShape(shape.data(), shape.size()) + " needs " +
           std::to_string(count);
  }
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.name = std::move(name);
  if (!out.allocate(byteSize))
    return "out of memory";
  if (bits) {
    uint8_t mask = uint8_t((1u << bits) - 1);
    for (size_t i = 0; i < count; ++i) {
      size_t bit = i * bits;
      uint8_t byte =
          haveRaw ? uint8_t(raw[bit / 8]) : uint8_t(int32Data[bit / 8]);
      out.data()[i] = uint8_t(byte >> (bit % 8)) & mask;
    }
    return "";
  }
  if (haveRaw) {
    if (byteSize)
      std::memcpy(out.data(), raw, byteSize);
    return "";
  }
  uint8_t *dst = out.data();
  for (size_t i = 0; i < count; ++i) {
    switch (source) {
    case Float:
      std::memcpy(dst + 4 * i, &floatData[i], 4);
      break;
    case Double:
      std::memcpy(dst + 8 * i, &doubleData[i], 8);
      break;
    case Int64:
      std::memcpy(dst + 8 * i, &int64Data[i], 8);
      break;
    case Uint64:
      // Little-endian: the low bytes of the value are its first bytes.
      std::memcpy(dst + elementSize * i, &uint64Data[i], elementSize);
      break;
    case Int32:
      std::memcpy(dst + elementSize * i, &int32Data[i], elementSize);
      break;
    }
  }
  return "";
}

std::string kiln::readTensorFile(const std::string &path, HostTensor &out) {
  std::vector<uint8_t> bytes;
  if (std::string error = readWholeFile(path, bytes); !error.empty())
    return error;
  std::string error;
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0)
    error = parseNpy(bytes.data(), bytes.size(), out);
  else if (endsWith(path, ".pb"))
    error = parseTensorProto(bytes.data(), bytes.size(), out);
  else if (endsWith(path, ".npy"))
    error = parseNpy(bytes.data(), bytes.size(), out);
  else
    return "'" + path +
           "': unknown tensor file type (expected a .npy file or an ONNX "
           "TensorProto .pb file)";
  if (!error.empty())
    return "'" + path + "': " + error;
  return "";
}

std::string kiln::writeNpyFile(const std::string &path, int32_t dtype,
                               const int64_t *shape, int32_t rank,
                               const void *data, size_t byteSize) {
  std::string bytes;
  if (std::string error = encodeNpy(dtype, shape, rank, data, byteSize, bytes);
      !error.empty())
    return "cannot write '" + path + "': " + error;
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return "cannot write '" + path + "': " + std::strerror(errno);
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int error = errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (!ok)
    return "cannot write '" + path + "': " + std::strerror(error);
  return "";
}
