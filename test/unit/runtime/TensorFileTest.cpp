//===- TensorFileTest.cpp - kiln-run's .npy and TensorProto files ---------===//

#include "TensorFile.h"

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace kiln;

namespace {

std::vector<uint8_t> bytesOf(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

// A .npy file with `header` (the dict text) and `data`, version `major`.
std::string npyFile(const std::string &header, const std::string &data,
                    int major = 1) {
  std::string file = "\x93NUMPY";
  file += char(major);
  file += char(0);
  size_t length = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    file += char((length >> (8 * i)) & 0xff);
  return file + header + data;
}

std::string parse(const std::string &file, HostTensor &tensor) {
  std::vector<uint8_t> bytes = bytesOf(file);
  return parseNpy(bytes.data(), bytes.size(), tensor);
}

TEST(Npy, RoundTripsEveryDtype) {
  const int32_t dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16,
                            KILN_DTYPE_I8,  KILN_DTYPE_I16, KILN_DTYPE_I32,
                            KILN_DTYPE_I64, KILN_DTYPE_U8,  KILN_DTYPE_U16,
                            KILN_DTYPE_U32, KILN_DTYPE_U64, KILN_DTYPE_BOOL};
  // The narrow types are written as u1 and read back as u8 (kiln-run maps
  // them to the model's dtype).
  std::string narrow;
  const uint8_t codes[2] = {0x7E, 0x81};
  const int64_t two = 2;
  ASSERT_EQ(encodeNpy(KILN_DTYPE_F8E4M3FN, &two, 1, codes, 2, narrow), "");
  HostTensor narrowTensor;
  ASSERT_EQ(parse(narrow, narrowTensor), "");
  EXPECT_EQ(narrowTensor.dtype, KILN_DTYPE_U8);
  EXPECT_EQ(std::memcmp(narrowTensor.data(), codes, 2), 0);
  const int64_t shape[3] = {2, 1, 3};
  for (int32_t dtype : dtypes) {
    size_t size = 6 * kiln_dtype_size(dtype);
    std::vector<uint8_t> data(size);
    for (size_t i = 0; i < size; ++i)
      data[i] = dtype == KILN_DTYPE_BOOL ? uint8_t(i & 1) : uint8_t(i * 7);
    std::string encoded;
    ASSERT_EQ(encodeNpy(dtype, shape, 3, data.data(), size, encoded), "");
    EXPECT_EQ((encoded.size() - size) % 64, 0u);
    HostTensor tensor;
    ASSERT_EQ(parse(encoded, tensor), "") << kiln_dtype_name(dtype);
    EXPECT_EQ(tensor.dtype, dtype);
    EXPECT_EQ(tensor.shape, std::vector<int64_t>(shape, shape + 3));
    ASSERT_EQ(tensor.byteSize(), size);
    EXPECT_EQ(std::memcmp(tensor.data(), data.data(), size), 0);
  }
}

TEST(Npy, ScalarsAndRankOne) {
  float value = 2.5f;
  std::string encoded;
  ASSERT_EQ(encodeNpy(KILN_DTYPE_F32, nullptr, 0, &value, 4, encoded), "");
  EXPECT_NE(encoded.find("'shape': ()"), std::string::npos);
  HostTensor tensor;
  ASSERT_EQ(parse(encoded, tensor), "");
  EXPECT_TRUE(tensor.shape.empty());
  int64_t three = 3;
  float values[3] = {1, 2, 3};
  ASSERT_EQ(encodeNpy(KILN_DTYPE_F32, &three, 1, values, 12, encoded), "");
  EXPECT_NE(encoded.find("'shape': (3,)"), std::string::npos);
}

TEST(Npy, ReadsVersions2And3AndOtherSpellings) {
  std::string data(8, '\0');
  HostTensor tensor;
  for (int major : {2, 3}) {
    ASSERT_EQ(parse(npyFile("{'descr': '<i4', 'fortran_order': False, "
                            "'shape': (2,), }\n",
                            data, major),
                    tensor),
              "");
    EXPECT_EQ(tensor.dtype, KILN_DTYPE_I32);
  }
  // Double quotes, no trailing comma, other key order, Python 2 longs.
  ASSERT_EQ(parse(npyFile("{\"shape\": (1L, 2L), \"fortran_order\": False, "
                          "\"descr\": \"|u1\"}",
                          std::string(2, '\0')),
                  tensor),
            "");
  EXPECT_EQ(tensor.dtype, KILN_DTYPE_U8);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{1, 2}));
}

TEST(Npy, RejectsWhatItCannotRead) {
  HostTensor tensor;
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (2,), }";
  const std::string data(8, '\0');
  EXPECT_EQ(parse("", tensor), "not a .npy file (no \\x93NUMPY magic string)");
  EXPECT_EQ(parse("\x93NUMPY", tensor),
            "not a .npy file (no \\x93NUMPY magic string)");
  EXPECT_EQ(parse(std::string("\x93NUMPY\x01\x00\x05", 9), tensor),
            "truncated .npy header");
  EXPECT_EQ(parse(npyFile(ok, data, 4), tensor),
            "unsupported .npy version 4.0 (expected 1.0, 2.0 or 3.0)");
  std::string truncatedHeader = npyFile(ok, "").substr(0, 30);
  EXPECT_EQ(parse(truncatedHeader, tensor).rfind("truncated .npy header", 0),
            0u);
  EXPECT_EQ(parse(npyFile(ok, data.substr(0, 5)), tensor),
            "truncated .npy data: shape [2] needs 8 bytes, the file has 5");
  EXPECT_EQ(parse(npyFile(ok, data + "xx"), tensor),
            ".npy file has 2 bytes after its data");
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'fortran_order': True, "
                          "'shape': (2,), }",
                          data),
                  tensor),
            "Fortran-order .npy files are not supported; save the array in C "
            "order (numpy.ascontiguousarray)");
  EXPECT_EQ(parse(npyFile("{'descr': '>f4', 'fortran_order': False, "
                          "'shape': (2,), }",
                          data),
                  tensor),
            "unsupported .npy byte order in '>f4' (only little-endian is "
            "supported)");
  EXPECT_EQ(parse(npyFile("{'descr': '<c8', 'fortran_order': False, "
                          "'shape': (1,), }",
                          data),
                  tensor)
                .rfind("unsupported .npy dtype '<c8'", 0),
            0u);
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'shape': (2,), }", data), tensor),
            "malformed .npy header: header lacks 'fortran_order'");
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, -1), }",
                          data),
                  tensor),
            "malformed .npy header: 'shape' holds something other than "
            "non-negative integers");
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (99999999999999999999,), }",
                          data),
                  tensor),
            "malformed .npy header: a dimension in 'shape' is too large");
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (4611686018427387904, 8), }",
                          data),
                  tensor),
            "shape [4611686018427387904,8] is too large");
  EXPECT_EQ(parse(npyFile("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2",
                          ""),
                  tensor),
            "malformed .npy header: expected ',' or ')' in 'shape'");
  EXPECT_EQ(parse(npyFile("{'descr: '<f4'}", ""), tensor),
            "malformed .npy header: expected ':' after 'descr: ' in the "
            "header");
  EXPECT_EQ(parse(npyFile("[1, 2]", ""), tensor),
            "malformed .npy header: header is not a dict");
}

TEST(Npy, EveryTruncationIsAnError) {
  int64_t shape[2] = {3, 4};
  std::vector<float> values(12, 1.0f);
  std::string encoded;
  ASSERT_EQ(encodeNpy(KILN_DTYPE_F32, shape, 2, values.data(), 48, encoded),
            "");
  HostTensor tensor;
  for (size_t length = 0; length < encoded.size(); ++length)
    EXPECT_NE(parse(encoded.substr(0, length), tensor), "") << length;
}

//===--- TensorProto -----------------------------------------------------===//

// A minimal protobuf writer for building test messages.
struct Proto {
  std::string bytes;
  void varint(uint64_t v) {
    do {
      uint8_t byte = v & 0x7f;
      v >>= 7;
      bytes += char(byte | (v ? 0x80 : 0));
    } while (v);
  }
  void key(int field, int wire) { varint(uint64_t(field) << 3 | wire); }
  void varintField(int field, uint64_t v) {
    key(field, 0);
    varint(v);
  }
  void bytesField(int field, const std::string &data) {
    key(field, 2);
    varint(data.size());
    bytes += data;
  }
  void packedVarints(int field, const std::vector<int64_t> &values) {
    Proto inner;
    for (int64_t v : values)
      inner.varint(uint64_t(v));
    bytesField(field, inner.bytes);
  }
};

std::string parseProto(const std::string &bytes, HostTensor &tensor) {
  std::vector<uint8_t> data = bytesOf(bytes);
  return parseTensorProto(data.data(), data.size(), tensor);
}

TEST(TensorProto, RawData) {
  Proto p;
  p.packedVarints(1, {2, 2});
  p.varintField(2, KILN_DTYPE_F32);
  p.bytesField(8, "x:0");
  float values[4] = {1, 2, 3, 4};
  p.bytesField(9, std::string(reinterpret_cast<char *>(values), 16));
  HostTensor tensor;
  ASSERT_EQ(parseProto(p.bytes, tensor), "");
  EXPECT_EQ(tensor.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(tensor.name, "x:0");
  ASSERT_EQ(tensor.byteSize(), 16u);
  EXPECT_EQ(std::memcmp(tensor.data(), values, 16), 0);
}

TEST(TensorProto, UnpackedDimsAndFloatData) {
  Proto p;
  p.varintField(1, 3); // unpacked dims
  p.varintField(2, KILN_DTYPE_F32);
  for (float f : {1.5f, -2.0f, 3.25f}) { // unpacked float_data (fixed32)
    p.key(4, 5);
    p.bytes.append(reinterpret_cast<char *>(&f), 4);
  }
  HostTensor tensor;
  ASSERT_EQ(parseProto(p.bytes, tensor), "");
  const float *data = reinterpret_cast<const float *>(tensor.data());
  EXPECT_EQ(data[0], 1.5f);
  EXPECT_EQ(data[1], -2.0f);
  EXPECT_EQ(data[2], 3.25f);
}

TEST(TensorProto, UnpacksFourAndTwoBitTypes) {
  HostTensor tensor;
  { // int4 in raw_data: two to a byte, the first in the low bits; odd count
    Proto p;
    p.packedVarints(1, {3});
    p.varintField(2, KILN_DTYPE_I4);
    p.bytesField(9, std::string("\x8F\x07", 2)); // -1, -8, 7
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    ASSERT_EQ(tensor.byteSize(), 3u);
    EXPECT_EQ(tensor.data()[0], 0x0F);
    EXPECT_EQ(tensor.data()[1], 0x08);
    EXPECT_EQ(tensor.data()[2], 0x07);
  }
  { // uint2 in int32_data: four to a value
    Proto p;
    p.packedVarints(1, {5});
    p.varintField(2, KILN_DTYPE_U2);
    p.packedVarints(5, {0xE4, 0x02}); // 0, 1, 2, 3, 2
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    ASSERT_EQ(tensor.byteSize(), 5u);
    const uint8_t expected[5] = {0, 1, 2, 3, 2};
    EXPECT_EQ(std::memcmp(tensor.data(), expected, 5), 0);
  }
  { // a packed size that does not match the shape
    Proto p;
    p.packedVarints(1, {3});
    p.varintField(2, KILN_DTYPE_U4);
    p.bytesField(9, std::string("\x01", 1));
    EXPECT_NE(parseProto(p.bytes, tensor).find("needs 2 packed u4 bytes"),
              std::string::npos);
  }
}

TEST(TensorProto, TypedFields) {
  HostTensor tensor;
  { // int32_data for i8, negative values included, packed
    Proto p;
    p.packedVarints(1, {3});
    p.varintField(2, KILN_DTYPE_I8);
    p.packedVarints(5, {-1, 7, -128});
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    const int8_t *data = reinterpret_cast<const int8_t *>(tensor.data());
    EXPECT_EQ(data[0], -1);
    EXPECT_EQ(data[1], 7);
    EXPECT_EQ(data[2], -128);
  }
  { // int64_data, unpacked
    Proto p;
    p.varintField(1, 2);
    p.varintField(2, KILN_DTYPE_I64);
    p.varintField(7, uint64_t(int64_t(-5)));
    p.varintField(7, 1ull << 40);
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    const int64_t *data = reinterpret_cast<const int64_t *>(tensor.data());
    EXPECT_EQ(data[0], -5);
    EXPECT_EQ(data[1], int64_t(1) << 40);
  }
  { // double_data, packed
    Proto p;
    p.packedVarints(1, {2});
    p.varintField(2, KILN_DTYPE_F64);
    double values[2] = {0.5, -1e300};
    p.bytesField(10, std::string(reinterpret_cast<char *>(values), 16));
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    EXPECT_EQ(std::memcmp(tensor.data(), values, 16), 0);
  }
  { // uint64_data for u32
    Proto p;
    p.packedVarints(1, {2});
    p.varintField(2, KILN_DTYPE_U32);
    p.packedVarints(11, {7, 0xffffffffll});
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    const uint32_t *data = reinterpret_cast<const uint32_t *>(tensor.data());
    EXPECT_EQ(data[0], 7u);
    EXPECT_EQ(data[1], 0xffffffffu);
  }
  { // a scalar with an unknown field (doc_string, 12) that is skipped
    Proto p;
    p.varintField(2, KILN_DTYPE_I32);
    p.bytesField(12, "documentation");
    p.varintField(5, 42);
    ASSERT_EQ(parseProto(p.bytes, tensor), "");
    EXPECT_TRUE(tensor.shape.empty());
    EXPECT_EQ(*reinterpret_cast<const int32_t *>(tensor.data()), 42);
  }
}

TEST(TensorProto, RejectsWhatItCannotRead) {
  HostTensor tensor;
  Proto noType;
  noType.packedVarints(1, {1});
  EXPECT_EQ(parseProto(noType.bytes, tensor), "TensorProto has no data_type");

  Proto string;
  string.varintField(2, 8);
  EXPECT_EQ(parseProto(string.bytes, tensor),
            "TensorProto data_type 8 is not supported");

  Proto wrongCount;
  wrongCount.packedVarints(1, {3});
  wrongCount.varintField(2, KILN_DTYPE_I64);
  wrongCount.packedVarints(7, {1, 2});
  EXPECT_EQ(parseProto(wrongCount.bytes, tensor),
            "TensorProto int64_data has 2 values, its shape [3] needs 3");

  Proto wrongRaw;
  wrongRaw.packedVarints(1, {3});
  wrongRaw.varintField(2, KILN_DTYPE_F32);
  wrongRaw.bytesField(9, std::string(8, '\0'));
  EXPECT_EQ(parseProto(wrongRaw.bytes, tensor),
            "TensorProto raw_data has 8 bytes, its shape [3] needs 12");

  Proto wrongField;
  wrongField.packedVarints(1, {1});
  wrongField.varintField(2, KILN_DTYPE_F32);
  wrongField.packedVarints(7, {1});
  EXPECT_EQ(parseProto(wrongField.bytes, tensor),
            "TensorProto of type f32 has int64_data");

  Proto negative;
  negative.packedVarints(1, {-2});
  negative.varintField(2, KILN_DTYPE_F32);
  EXPECT_EQ(parseProto(negative.bytes, tensor),
            "TensorProto has a negative dimension");

  Proto external;
  external.varintField(2, KILN_DTYPE_F32);
  external.varintField(14, 1);
  EXPECT_EQ(parseProto(external.bytes, tensor),
            "TensorProto with external data is not supported");

  Proto group;
  group.key(15, 3);
  EXPECT_EQ(parseProto(group.bytes, tensor),
            "truncated or malformed TensorProto (field 15, wire type 3)");

  EXPECT_EQ(parseProto(std::string("\x08\x80", 2), tensor),
            "truncated or malformed TensorProto (field 1, wire type 0)");
  EXPECT_EQ(parseProto(std::string(11, '\xff'), tensor),
            "truncated or malformed TensorProto (bad field key)");
  EXPECT_EQ(parseProto(std::string("\x4a\x10zz", 4), tensor),
            "truncated or malformed TensorProto (field 9, wire type 2)");
}

TEST(TensorProto, EveryTruncationIsAnError) {
  Proto p;
  p.packedVarints(1, {2, 3});
  p.varintField(2, KILN_DTYPE_F32);
  p.bytesField(8, "input");
  p.bytesField(9, std::string(24, '\x01'));
  HostTensor tensor;
  ASSERT_EQ(parseProto(p.bytes, tensor), "");
  for (size_t length = 0; length < p.bytes.size(); ++length)
    EXPECT_NE(parseProto(p.bytes.substr(0, length), tensor), "") << length;
}

TEST(TensorFile, DispatchesOnContentAndName) {
  HostTensor tensor;
  EXPECT_EQ(readTensorFile("/nonexistent/x.npy", tensor),
            "cannot open '/nonexistent/x.npy': No such file or directory");
  std::string path = testing::TempDir() + "/kiln_tensor.txt";
  int64_t two = 2;
  float values[2] = {1, 2};
  ASSERT_EQ(writeNpyFile(path, KILN_DTYPE_F32, &two, 1, values, 8), "");
  // .npy content is recognised whatever the name.
  ASSERT_EQ(readTensorFile(path, tensor), "");
  EXPECT_EQ(tensor.shape, std::vector<int64_t>{2});
  EXPECT_EQ(writeNpyFile("/nonexistent/dir/out.npy", KILN_DTYPE_F32, &two, 1,
                         values, 8),
            "cannot write '/nonexistent/dir/out.npy': No such file or "
            "directory");
}

} // namespace
