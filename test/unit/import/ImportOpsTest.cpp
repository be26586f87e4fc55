//===- ImportOpsTest.cpp - Each supported operator imports ----------------===//

#include "test/unit/import/ImportTestUtils.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

class ImportOpsTest : public ::testing::Test {
protected:
  mlir::MLIRContext context;
};

TEST_F(ImportOpsTest, BinaryOpsBroadcast) {
  for (const char *op : {"Add", "Sub", "Mul", "Div"}) {
    ModelBuilder m;
    m.addInput("a", {2, 3});
    m.addInput("b", {int64_t(3)});
    m.addNode(op, {"a", "b"}, {"y"}, "n");
    m.addOutput("y");
    ImportResult r = importModel(context, m.serialize());
    ASSERT_TRUE(r.module) << op << ": " << r.allErrors();
    std::string name =
        std::string("graph.") + char(std::tolower(op[0])) + std::string(op + 1);
    for (char &c : name)
      c = std::tolower(c);
    EXPECT_NE(r.ir.find(name), std::string::npos) << r.ir;
    EXPECT_NE(r.ir.find("-> (tensor<2x3xf32> {kiln.name = \"y\"})"),
              std::string::npos)
        << r.ir;
    EXPECT_NE(r.ir.find("{kiln.name = \"a\"}"), std::string::npos) << r.ir;
  }
}

TEST_F(ImportOpsTest, BinaryOpsBeforeOpset7AreUnsupported) {
  ModelBuilder m(/*opset=*/6);
  m.addInput("a", {2});
  m.addNode("Add", {"a", "a"}, {"y"}, "old_add");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find(
                "unsupported ONNX operators (ai.onnx opset 6): Add \u00d71 "
                "('old_add')"),
            std::string::npos)
      << r.allErrors();
}

TEST_F(ImportOpsTest, MismatchedElementTypesErrorAtNode) {
  ModelBuilder m;
  m.addInput("a", {2}, onnx::TensorProto::FLOAT);
  m.addInput("b", {2}, onnx::TensorProto::FLOAT16);
  m.addNode("Add", {"a", "b"}, {"y"}, "mixed");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("node 'mixed' (Add)"), std::string::npos)
      << r.allErrors();
}

TEST_F(ImportOpsTest, ReluOfBoolFailsVerificationAtNode) {
  ModelBuilder m;
  m.addInput("a", {2}, onnx::TensorProto::BOOL);
  m.addNode("Relu", {"a"}, {"y"}, "r");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("node 'r' (Relu): 'graph.relu' op"),
            std::string::npos)
      << r.allErrors();
}

TEST_F(ImportOpsTest, ReluAndUnnamedNodeLocation) {
  ModelBuilder m;
  m.addInput("x", {1, 4});
  m.addNode("Relu", {"x"}, {"y"});
  m.addOutput("y", onnx::TensorProto::FLOAT);
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.relu"), std::string::npos);
  mlir::OpPrintingFlags flags;
  flags.enableDebugInfo();
  std::string withLocs;
  llvm::raw_string_ostream os(withLocs);
  r.module->print(os, flags);
  EXPECT_NE(withLocs.find("\"Relu#0 (Relu)\""), std::string::npos) << withLocs;
}

TEST_F(ImportOpsTest, MatMulBatched) {
  ModelBuilder m;
  m.addInput("a", {std::string("batch"), 4, 8});
  m.addInitializer("w", {8, 16}, std::vector<float>(128, 0.5f));
  m.addNode("MatMul", {"a", "w"}, {"y"}, "mm");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.matmul"), std::string::npos);
  // The symbolic batch stands as the probe size (ImportOptions).
  EXPECT_NE(r.ir.find("tensor<97x4x16xf32>"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, GemmAttributesAndOptionalC) {
  ModelBuilder m;
  m.addInput("a", {2, 8});
  m.addInput("b", {16, 8});
  onnx::NodeProto &n = m.addNode("Gemm", {"a", "b"}, {"y"}, "fc");
  addFloatAttr(n, "alpha", 0.5f);
  addIntAttr(n, "transB", 1);
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("alpha = 5.000000e-01 : f32"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("trans_b = true"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("tensor<2x16xf32>"), std::string::npos) << r.ir;

  ModelBuilder withC;
  withC.addInput("a", {2, 8});
  withC.addInput("b", {8, 16});
  withC.addInitializer("c", {16}, std::vector<float>(16, 1.0f));
  withC.addNode("Gemm", {"a", "b", "c"}, {"y"}, "fc");
  withC.addOutput("y");
  r = importModel(context, withC.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.gemm %arg0, %arg1, %"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, GemmBeforeOpset7IsUnsupported) {
  ModelBuilder m(/*opset=*/6);
  m.addInput("a", {2, 8});
  m.addInput("b", {8, 4});
  m.addNode("Gemm", {"a", "b"}, {"y"}, "fc");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("(ai.onnx opset 6): Gemm \u00d71 ('fc')"),
            std::string::npos)
      << r.allErrors();
}

/// A 1x3x7x7 input through a Conv with a 8x3x3x3 weight and `attrs`.
static ImportResult importConv(mlir::MLIRContext &context,
                               void (*attrs)(onnx::NodeProto &)) {
  ModelBuilder m;
  m.addInput("x", {1, 3, 7, 7});
  m.addInitializer("w", {8, 3, 3, 3}, std::vector<float>(8 * 27, 0.1f));
  m.addInitializer("b", {8}, std::vector<float>(8, 0.0f));
  onnx::NodeProto &n = m.addNode("Conv", {"x", "w", "b"}, {"y"}, "conv1");
  attrs(n);
  m.addOutput("y");
  return importModel(context, m.serialize());
}

TEST_F(ImportOpsTest, ConvDefaults) {
  ImportResult r = importConv(context, [](onnx::NodeProto &) {});
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("pads = array<i64: 0, 0, 0, 0>"), std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("strides = array<i64: 1, 1>"), std::string::npos);
  EXPECT_NE(r.ir.find("-> tensor<1x8x5x5xf32>"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, ConvExplicitPadsAndStrides) {
  ImportResult r = importConv(context, [](onnx::NodeProto &n) {
    addIntsAttr(n, "pads", {1, 1, 1, 1});
    addIntsAttr(n, "strides", {2, 2});
    addIntsAttr(n, "kernel_shape", {3, 3});
  });
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("-> tensor<1x8x4x4xf32>"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, ConvAutoPad) {
  ImportResult upper = importConv(context, [](onnx::NodeProto &n) {
    addStringAttr(n, "auto_pad", "SAME_UPPER");
    addIntsAttr(n, "strides", {2, 2});
  });
  ASSERT_TRUE(upper.module) << upper.allErrors();
  // 7 / 2 -> 4 outputs need (4-1)*2+3-7 = 2 pads: 1 before, 1 after.
  EXPECT_NE(upper.ir.find("pads = array<i64: 1, 1, 1, 1>"), std::string::npos)
      << upper.ir;
  EXPECT_NE(upper.ir.find("-> tensor<1x8x4x4xf32>"), std::string::npos);

  ImportResult lower = importConv(context, [](onnx::NodeProto &n) {
    addStringAttr(n, "auto_pad", "SAME_LOWER");
  });
  ASSERT_TRUE(lower.module) << lower.allErrors();
  EXPECT_NE(lower.ir.find("pads = array<i64: 1, 1, 1, 1>"), std::string::npos)
      << lower.ir;
  EXPECT_NE(lower.ir.find("-> tensor<1x8x7x7xf32>"), std::string::npos);

  ImportResult valid = importConv(context, [](onnx::NodeProto &n) {
    addStringAttr(n, "auto_pad", "VALID");
  });
  ASSERT_TRUE(valid.module) << valid.allErrors();
  EXPECT_NE(valid.ir.find("-> tensor<1x8x5x5xf32>"), std::string::npos);

  ImportResult bad = importConv(context, [](onnx::NodeProto &n) {
    addStringAttr(n, "auto_pad", "SAME");
  });
  ASSERT_FALSE(bad.module);
  EXPECT_NE(bad.allErrors().find("node 'conv1' (Conv): auto_pad 'SAME'"),
            std::string::npos)
      << bad.allErrors();
}

TEST_F(ImportOpsTest, ConvSameLowerPutsOddPadFirst) {
  ModelBuilder m;
  m.addInput("x", {1, 1, 6, 6});
  m.addInitializer("w", {1, 1, 2, 2}, std::vector<float>(4, 1.0f));
  onnx::NodeProto &n = m.addNode("Conv", {"x", "w"}, {"y"}, "c");
  addStringAttr(n, "auto_pad", "SAME_LOWER");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("pads = array<i64: 1, 1, 0, 0>"), std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("-> tensor<1x1x6x6xf32>"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, ConvGroupAndBadAttributes) {
  ModelBuilder m;
  m.addInput("x", {1, 4, 5, 5});
  m.addInitializer("w", {4, 1, 3, 3}, std::vector<float>(36, 1.0f));
  onnx::NodeProto &n = m.addNode("Conv", {"x", "w"}, {"y"}, "dw");
  addIntAttr(n, "group", 4);
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("group = 4"), std::string::npos) << r.ir;

  ImportResult wrongKernel = importConv(context, [](onnx::NodeProto &n) {
    addIntsAttr(n, "kernel_shape", {5, 5});
  });
  ASSERT_FALSE(wrongKernel.module);
  EXPECT_NE(wrongKernel.allErrors().find("node 'conv1' (Conv): kernel_shape"),
            std::string::npos)
      << wrongKernel.allErrors();

  ImportResult wrongType = importConv(
      context, [](onnx::NodeProto &n) { addFloatAttr(n, "group", 2.0f); });
  ASSERT_FALSE(wrongType.module);
  EXPECT_NE(wrongType.allErrors().find("attribute 'group' must be an INT"),
            std::string::npos)
      << wrongType.allErrors();

  ImportResult badGroup = importConv(
      context, [](onnx::NodeProto &n) { addIntAttr(n, "group", 2); });
  ASSERT_FALSE(badGroup.module);
  EXPECT_NE(badGroup.allErrors().find("node 'conv1' (Conv)"), std::string::npos)
      << badGroup.allErrors();
}

TEST_F(ImportOpsTest, ConstantKinds) {
  ModelBuilder m;
  onnx::NodeProto &c1 = m.addNode("Constant", {}, {"c1"}, "c1");
  onnx::AttributeProto *value = c1.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = value->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(3);
  for (int64_t v : {1, 2, 3})
    t->add_int64_data(v);
  onnx::NodeProto &c2 = m.addNode("Constant", {}, {"c2"}, "c2");
  addFloatAttr(c2, "value_float", 2.5f);
  onnx::NodeProto &c3 = m.addNode("Constant", {}, {"c3"}, "c3");
  addIntsAttr(c3, "value_ints", {4, 5});
  m.addOutput("c1");
  m.addOutput("c2");
  m.addOutput("c3");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("dense<[1, 2, 3]> : tensor<3xi64>"), std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("dense<2.500000e+00> : tensor<f32>"), std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("dense<[4, 5]> : tensor<2xi64>"), std::string::npos)
      << r.ir;

  ModelBuilder none;
  none.addNode("Constant", {}, {"c"}, "empty");
  none.addOutput("c");
  r = importModel(context, none.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("node 'empty' (Constant): needs exactly one"),
            std::string::npos)
      << r.allErrors();
}

TEST_F(ImportOpsTest, IdentityAndDropoutForward) {
  ModelBuilder m;
  m.addInput("x", {2, 2});
  m.addNode("Identity", {"x"}, {"i"}, "id");
  m.addNode("Dropout", {"i"}, {"d", ""}, "drop");
  m.addNode("Relu", {"d"}, {"y"}, "r");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.relu %arg0"), std::string::npos) << r.ir;
}

TEST_F(ImportOpsTest, DropoutMaskAllTrueTrainingRefused) {
  // Not training, the mask is a constant of true.
  ModelBuilder mask;
  mask.addInput("x", {2});
  mask.addNode("Dropout", {"x"}, {"d", "mask"}, "drop");
  mask.addOutput("mask");
  ImportResult r = importModel(context, mask.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.constant dense<true> : tensor<2xi1>"),
            std::string::npos)
      << r.ir;

  ModelBuilder training;
  training.addInput("x", {2});
  training.addInput("train", {}, onnx::TensorProto::BOOL);
  training.addNode("Dropout", {"x", "", "train"}, {"d"}, "drop");
  training.addOutput("d");
  r = importModel(context, training.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("training_mode must be a constant false"),
            std::string::npos)
      << r.allErrors();

  ModelBuilder inference;
  inference.addInput("x", {2});
  onnx::TensorProto &flag =
      inference.addEmptyInitializer("train", {}, onnx::TensorProto::BOOL);
  flag.add_int32_data(0);
  inference.addNode("Dropout", {"x", "", "train"}, {"d"}, "drop");
  inference.addOutput("d");
  r = importModel(context, inference.serialize());
  EXPECT_TRUE(r.module) << r.allErrors();

  // Training mode with a constant ratio of 0 (torchvision's Swin) drops
  // nothing: the identity, mask all true.
  ModelBuilder zeroRatio;
  zeroRatio.addInput("x", {2});
  onnx::TensorProto &on =
      zeroRatio.addEmptyInitializer("train", {}, onnx::TensorProto::BOOL);
  on.add_int32_data(1);
  onnx::TensorProto &ratio =
      zeroRatio.addEmptyInitializer("ratio", {}, onnx::TensorProto::FLOAT);
  ratio.add_float_data(0.0f);
  zeroRatio.addNode("Dropout", {"x", "ratio", "train"}, {"d", "mask"}, "drop");
  zeroRatio.addOutput("d");
  zeroRatio.addOutput("mask");
  r = importModel(context, zeroRatio.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("graph.constant dense<true> : tensor<2xi1>"),
            std::string::npos)
      << r.ir;

  // Training mode with a ratio of 0.5 would drop at random: refused.
  ModelBuilder halfRatio;
  halfRatio.addInput("x", {2});
  onnx::TensorProto &on2 =
      halfRatio.addEmptyInitializer("train", {}, onnx::TensorProto::BOOL);
  on2.add_int32_data(1);
  onnx::TensorProto &half =
      halfRatio.addEmptyInitializer("ratio", {}, onnx::TensorProto::FLOAT);
  half.add_float_data(0.5f);
  halfRatio.addNode("Dropout", {"x", "ratio", "train"}, {"d"}, "drop");
  halfRatio.addOutput("d");
  r = importModel(context, halfRatio.serialize());
  ASSERT_FALSE(r.module);
  EXPECT_NE(r.allErrors().find("training_mode must be a constant false"),
            std::string::npos)
      << r.allErrors();
}

} // namespace
