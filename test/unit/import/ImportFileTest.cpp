//===- ImportFileTest.cpp - Models written by the onnx package ------------===//
//
// Reads the files test/import/Inputs/make_models.py writes at build time.
//
//===----------------------------------------------------------------------===//

#include "test/unit/import/ImportTestUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln;
using namespace kiln::test;

namespace {

std::string modelPath(const std::string &name) {
  return std::string(KILN_IMPORT_TEST_MODELS) + "/" + name;
}

class ImportFileTest : public ::testing::Test {
protected:
  mlir::MLIRContext context;

  void expectConvNet(const ImportResult &r) {
    ASSERT_TRUE(r.module) << r.allErrors();
    for (const char *expected : {"graph.conv", "graph.relu", "graph.add",
                                 "graph.gemm", "pads = array<i64: 1, 1, 1, 1>",
                                 // The symbolic batch as the probe size.
                                 "tensor<97x3x8x8xf32> {kiln.dims = [\"N\", "
                                 "\"\", \"\", \"\"], kiln.name = \"x\"}",
                                 "-> (tensor<97x4x8x8xf32> {kiln.name = \"y\"}",
                                 "tensor<1x10xf32> {kiln.name = \"z\"}",
                                 "dense_resource<fc_w> : tensor<10x256xf32>",
                                 "alpha = 2.000000e+00 : f32"})
      EXPECT_NE(r.ir.find(expected), std::string::npos) << expected << "\n"
                                                        << r.ir.substr(0, 3000);
    // The last weight of fc.w is 2559 / 1000.
    bool found = false;
    mlir::ModuleOp module = r.module.get();
    module.walk([&](mlir::Operation *op) {
      auto value = op->getAttrOfType<mlir::DenseResourceElementsAttr>("value");
      if (!value || value.getType().getNumElements() != 2560)
        return;
      float last;
      std::memcpy(&last, value.getData().data() + 2559 * 4, 4);
      EXPECT_FLOAT_EQ(last, 2.559f);
      found = true;
    });
    EXPECT_TRUE(found);
  }
};

TEST_F(ImportFileTest, InlineWeights) {
  expectConvNet(importFile(context, modelPath("inline.onnx")));
}

TEST_F(ImportFileTest, ExternalWeights) {
  expectConvNet(importFile(context, modelPath("convnet.onnx")));
}

TEST_F(ImportFileTest, BadFiles) {
  ImportResult r = importFile(context, modelPath("truncated.onnx"));
  EXPECT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("not a valid ONNX model"), std::string::npos)
      << r.allErrors();
  r = importFile(context, modelPath("not_a_model.onnx"));
  EXPECT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("not a valid ONNX model"), std::string::npos)
      << r.allErrors();
  r = importFile(context, modelPath("does_not_exist.onnx"));
  EXPECT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("cannot read ONNX model"), std::string::npos)
      << r.allErrors();
}

} // namespace
