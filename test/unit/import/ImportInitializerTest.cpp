//===- ImportInitializerTest.cpp - Weights: data kinds and bad data -------===//

#include "test/unit/import/ImportTestUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln;
using namespace kiln::test;

namespace {

class ImportInitializerTest : public ::testing::Test {
protected:
  mlir::MLIRContext context;
  TempDir dir;

  /// A model whose output is the initializer "w" itself.
  static ModelBuilder weightModel() {
    ModelBuilder m;
    m.addOutput("w");
    return m;
  }

  /// The value of the constant returned by @main.
  static mlir::ElementsAttr returnedConstant(mlir::ModuleOp module) {
    mlir::ElementsAttr result;
    module.walk([&](mlir::Operation *op) {
      if (op->getName().getStringRef() == "graph.constant")
        result = mlir::cast<mlir::ElementsAttr>(op->getAttr("value"));
    });
    return result;
  }

  void expectError(const ImportResult &r, const std::string &text) {
    EXPECT_FALSE(r.module);
    EXPECT_NE(r.allErrors().find(text), std::string::npos)
        << "expected: " << text << "\ngot: " << r.allErrors();
  }

  /// A 100-float external initializer "w" reading `location`.
  static ModelBuilder externalModel(const std::string &location,
                                    int64_t offset = -1, int64_t length = -1) {
    ModelBuilder m = weightModel();
    onnx::TensorProto &w =
        m.addEmptyInitializer("w", {100}, onnx::TensorProto::FLOAT);
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char *key, const std::string &value) {
      onnx::StringStringEntryProto *entry = w.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    };
    add("location", location);
    if (offset >= 0)
      add("offset", std::to_string(offset));
    if (length >= 0)
      add("length", std::to_string(length));
    return m;
  }

  static std::string floats(size_t count, float first) {
    std::string bytes(count * 4, '\0');
    for (size_t i = 0; i < count; ++i) {
      float v = first + i;
      std::memcpy(&bytes[i * 4], &v, 4);
    }
    return bytes;
  }
};

TEST_F(ImportInitializerTest, SmallRawIsDenseLargeIsResource) {
  ModelBuilder m;
  m.addInitializer("small", {2, 2}, {1, 2, 3, 4});
  std::vector<float> big(1000);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = i;
  m.addInitializer("conv.weight", {10, 100}, big);
  m.addOutput("small");
  m.addOutput("conv.weight");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, "
                      "4.000000e+00]]> : tensor<2x2xf32>"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("dense_resource<conv_weight> : tensor<10x100xf32>"),
            std::string::npos)
      << r.ir.substr(0, 2000);
  mlir::ElementsAttr value = returnedConstant(*r.module);
  auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(value);
  ASSERT_TRUE(resource);
  llvm::ArrayRef<char> data = resource.getData();
  ASSERT_EQ(data.size(), 4000u);
  float last;
  std::memcpy(&last, data.data() + 3996, 4);
  EXPECT_EQ(last, 999.0f);
}

TEST_F(ImportInitializerTest, TypedFields) {
  ModelBuilder m;
  onnx::TensorProto &f =
      m.addEmptyInitializer("f", {2}, onnx::TensorProto::FLOAT);
  f.add_float_data(1.5f);
  f.add_float_data(-2.0f);
  onnx::TensorProto &i8 =
      m.addEmptyInitializer("i8", {2}, onnx::TensorProto::INT8);
  i8.add_int32_data(-3);
  i8.add_int32_data(127);
  onnx::TensorProto &u16 =
      m.addEmptyInitializer("u16", {1}, onnx::TensorProto::UINT16);
  u16.add_int32_data(65535);
  onnx::TensorProto &h =
      m.addEmptyInitializer("h", {1}, onnx::TensorProto::FLOAT16);
  h.add_int32_data(0x3C00); // 1.0 in half precision.
  onnx::TensorProto &bf =
      m.addEmptyInitializer("bf", {1}, onnx::TensorProto::BFLOAT16);
  bf.add_int32_data(0x4040); // 3.0 in bfloat16.
  onnx::TensorProto &b =
      m.addEmptyInitializer("b", {3}, onnx::TensorProto::BOOL);
  for (int v : {1, 0, 1})
    b.add_int32_data(v);
  onnx::TensorProto &i64 =
      m.addEmptyInitializer("i64", {1}, onnx::TensorProto::INT64);
  i64.add_int64_data(-5000000000);
  onnx::TensorProto &d =
      m.addEmptyInitializer("d", {1}, onnx::TensorProto::DOUBLE);
  d.add_double_data(0.25);
  onnx::TensorProto &u64 =
      m.addEmptyInitializer("u64", {1}, onnx::TensorProto::UINT64);
  u64.add_uint64_data(18446744073709551615ull);
  onnx::TensorProto &u32 =
      m.addEmptyInitializer("u32", {1}, onnx::TensorProto::UINT32);
  u32.add_uint64_data(4000000000u);
  onnx::TensorProto &empty =
      m.addEmptyInitializer("empty", {0, 3}, onnx::TensorProto::FLOAT);
  (void)empty;
  for (const char *name :
       {"f", "i8", "u16", "h", "bf", "b", "i64", "d", "u64", "u32", "empty"})
    m.addOutput(name);
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  for (const char *expected :
       {"dense<[1.500000e+00, -2.000000e+00]> : tensor<2xf32>",
        "dense<[-3, 127]> : tensor<2xi8>", "dense<65535> : tensor<1xui16>",
        "dense<1.000000e+00> : tensor<1xf16>",
        "dense<3.000000e+00> : tensor<1xbf16>",
        "dense<[true, false, true]> : tensor<3xi1>",
        "dense<-5000000000> : tensor<1xi64>",
        "dense<2.500000e-01> : tensor<1xf64>",
        "dense<18446744073709551615> : tensor<1xui64>",
        "dense<4000000000> : tensor<1xui32>", "tensor<0x3xf32>"})
    EXPECT_NE(r.ir.find(expected), std::string::npos) << expected << "\n"
                                                      << r.ir;
}

TEST_F(ImportInitializerTest, BadShapesAndSizes) {
  ModelBuilder negative = weightModel();
  negative.addInitializer("w", {2, -1}, {1, 2});
  expectError(importModel(context, negative.serialize()),
              "initializer 'w': dimension 1 is negative (-1)");

  ModelBuilder overflow = weightModel();
  overflow.addInitializer("w", {int64_t(1) << 40, int64_t(1) << 40}, {1});
  expectError(importModel(context, overflow.serialize()),
              "initializer 'w': shape [1099511627776,1099511627776] has more "
              "elements than fit in 64 bits");

  ModelBuilder byteOverflow = weightModel();
  byteOverflow.addInitializer("w", {int64_t(1) << 62}, {1});
  expectError(importModel(context, byteOverflow.serialize()),
              "has more elements than fit in 64 bits");

  ModelBuilder shortRaw = weightModel();
  shortRaw.addInitializer("w", {4}, {1, 2, 3});
  expectError(importModel(context, shortRaw.serialize()),
              "initializer 'w': raw_data holds 12 bytes, but shape [4] of "
              "FLOAT needs 4 elements (16 bytes)");

  ModelBuilder longRaw = weightModel();
  longRaw.addInitializer("w", {2}, {1, 2, 3});
  expectError(importModel(context, longRaw.serialize()),
              "initializer 'w': raw_data holds 12 bytes");

  ModelBuilder shortTyped = weightModel();
  shortTyped.addEmptyInitializer("w", {3}, onnx::TensorProto::INT64)
      .add_int64_data(1);
  expectError(importModel(context, shortTyped.serialize()),
              "initializer 'w': int64_data holds 1 values, but shape [3]");

  ModelBuilder noData = weightModel();
  noData.addEmptyInitializer("w", {3}, onnx::TensorProto::FLOAT);
  expectError(importModel(context, noData.serialize()),
              "initializer 'w': float_data holds 0 values");

  ModelBuilder strings = weightModel();
  strings.addEmptyInitializer("w", {1}, onnx::TensorProto::STRING)
      .add_string_data("x");
  expectError(importModel(context, strings.serialize()),
              "initializer 'w': element type STRING is not supported");
}

TEST_F(ImportInitializerTest, ExternalDataInsideFolder) {
  llvm::sys::fs::create_directory(dir.file("weights"));
  dir.write("weights/w.bin", std::string(16, 'x') + floats(100, 7.0f));
  ImportResult r = importModel(
      context, externalModel("weights/w.bin", 16, 400).serialize(), dir.path);
  ASSERT_TRUE(r.module) << r.allErrors();
  auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(
      returnedConstant(*r.module));
  ASSERT_TRUE(resource);
  float first;
  std::memcpy(&first, resource.getData().data(), 4);
  EXPECT_EQ(first, 7.0f);

  // Without offset and length: the whole file.
  dir.write("all.bin", floats(100, 1.0f));
  r = importModel(context, externalModel("all.bin").serialize(), dir.path);
  EXPECT_TRUE(r.module) << r.allErrors();

  // Through importONNXFile: relative to the model's folder.
  dir.write("model.onnx", externalModel("all.bin").serialize());
  r = importFile(context, dir.file("model.onnx"));
  EXPECT_TRUE(r.module) << r.allErrors();
}

TEST_F(ImportInitializerTest, ExternalDataMustStayInsideFolder) {
  llvm::sys::fs::create_directory(dir.file("model"));
  std::string modelDir = dir.file("model");
  dir.write("outside.bin", floats(100, 0.0f));

  expectError(importModel(context, externalModel("../outside.bin").serialize(),
                          modelDir),
              "initializer 'w': external data location '../outside.bin' "
              "leaves the model's folder");
  expectError(importModel(context,
                          externalModel("sub/../../outside.bin").serialize(),
                          modelDir),
              "leaves the model's folder");
  expectError(importModel(context,
                          externalModel(dir.file("outside.bin")).serialize(),
                          modelDir),
              "is an absolute path");
  ASSERT_FALSE(llvm::sys::fs::create_link(dir.file("outside.bin"),
                                          dir.file("model/link.bin")));
  expectError(
      importModel(context, externalModel("link.bin").serialize(), modelDir),
      "initializer 'w': external data file 'link.bin' resolves to");
  expectError(importModel(context, externalModel("x.bin").serialize(), ""),
              "without a folder");
  expectError(
      importModel(context, externalModel("missing.bin").serialize(), modelDir),
      "cannot open external data file 'missing.bin'");
}

TEST_F(ImportInitializerTest, ExternalDataSizeChecked) {
  dir.write("short.bin", floats(50, 0.0f));
  expectError(
      importModel(context, externalModel("short.bin").serialize(), dir.path),
      "external data holds 200 bytes, but the shape needs 400");
  expectError(importModel(context,
                          externalModel("short.bin", 0, 400).serialize(),
                          dir.path),
              "runs past the end of 'short.bin' (200 bytes)");
  expectError(importModel(context, externalModel("short.bin", 1000).serialize(),
                          dir.path),
              "offset 1000 is past the end");
  dir.write("long.bin", floats(200, 0.0f));
  expectError(importModel(context,
                          externalModel("long.bin", 0, 800).serialize(),
                          dir.path),
              "external data holds 800 bytes, but the shape needs 400");
  ModelBuilder badOffset = externalModel("long.bin");
  onnx::StringStringEntryProto *entry =
      badOffset.graph().mutable_initializer(0)->add_external_data();
  entry->set_key("offset");
  entry->set_value("-4");
  expectError(importModel(context, badOffset.serialize(), dir.path),
              "external data offset '-4' is not a non-negative integer");
  llvm::sys::fs::create_directory(dir.file("adir"));
  expectError(importModel(context, externalModel("adir").serialize(), dir.path),
              "is not a regular file");
}

} // namespace
