//===- ImportModelTest.cpp - Model-level checks of the importer -----------===//

#include "test/unit/import/ImportTestUtils.h"

#include <gtest/gtest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

class ImportModelTest : public ::testing::Test {
protected:
  mlir::MLIRContext context;

  /// x -> Relu -> y with x of `dims`.
  static ModelBuilder reluModel(std::vector<Dim> dims) {
    ModelBuilder m;
    m.addInput("x", std::move(dims));
    m.addNode("Relu", {"x"}, {"y"}, "r");
    m.addOutput("y");
    return m;
  }

  void expectError(const ImportResult &r, const std::string &text) {
    EXPECT_FALSE(r.module);
    EXPECT_NE(r.allErrors().find(text), std::string::npos)
        << "expected: " << text << "\ngot: " << r.allErrors();
  }
};

TEST_F(ImportModelTest, GarbageIsNotAModel) {
  expectError(importModel(context, "hello, this is not a model\n"),
              "not a valid ONNX model");
  expectError(importModel(context, std::string("\xff\xff\xff\xff\xff", 5)),
              "not a valid ONNX model");
  expectError(importModel(context, ""), "not a valid ONNX model");
}

TEST_F(ImportModelTest, TruncatedModel) {
  ModelBuilder m = reluModel({1, 2});
  m.addInitializer("w", {100}, std::vector<float>(100, 1.0f));
  std::string bytes = m.serialize();
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t(3)})
    expectError(importModel(context, bytes.substr(0, keep)),
                "not a valid ONNX model");
}

TEST_F(ImportModelTest, IRVersions) {
  ModelBuilder m = reluModel({1});
  m.model.set_ir_version(2);
  expectError(importModel(context, m.serialize()),
              "ONNX IR version 2 is too old");
  m.model.set_ir_version(99);
  expectError(importModel(context, m.serialize()),
              "ONNX IR version 99 is newer than Kiln knows");
  for (int64_t version : {3, 10, 14}) {
    m.model.set_ir_version(version);
    EXPECT_TRUE(importModel(context, m.serialize()).module) << version;
  }
}

TEST_F(ImportModelTest, AiOnnxDomainNameIsDefault) {
  ModelBuilder m = reluModel({1});
  m.model.mutable_opset_import(0)->set_domain("ai.onnx");
  m.graph().mutable_node(0)->set_domain("ai.onnx");
  EXPECT_TRUE(importModel(context, m.serialize()).module);
  m.model.clear_opset_import();
  expectError(importModel(context, m.serialize()), "imports no ai.onnx opset");
}

// A symbolic batch (the leading dimension) stands as the probe size, named
// in kiln.dims and kiln.symbols with the default bounds; another symbolic
// dimension stays dynamic, named too.
TEST_F(ImportModelTest, SymbolicBatchIsAProbeOthersStayDynamic) {
  ImportResult r = importModel(
      context, reluModel({std::string("N"), 3, std::string("")}).serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("tensor<97x3x?xf32> {kiln.dims = [\"N\", \"\", \"\"]"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("kiln.symbols = [{max = 1024 : i64, min = 1 : i64, "
                      "name = \"N\"}]"),
            std::string::npos)
      << r.ir;
}

// --dynamic-dims: a size fixes a dimension by name in every input, bounds
// go to the batch; names the model lacks, bounds on a dimension that is not
// the batch, and two batches of different names are refused.
TEST_F(ImportModelTest, DynamicDimsByName) {
  ModelBuilder m;
  m.addInput("ids", {std::string("B"), std::string("seq")});
  m.addInput("mask", {std::string("B"), std::string("seq")});
  m.addNode("Add", {"ids", "mask"}, {"y"}, "add");
  m.addOutput("y");
  std::string bytes = m.serialize();
  ImportOptions options;
  options.dimSizes["seq"] = 16;
  options.symbolBounds["B"] = {2, 8};
  ImportResult r = importModel(context, bytes, "", options);
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("(%arg0: tensor<97x16xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("%arg1: tensor<97x16xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("max = 8 : i64, min = 2 : i64, name = \"B\""),
            std::string::npos)
      << r.ir;

  options.dimSizes["sq"] = 16;
  expectError(importModel(context, bytes, "", options),
              "--dynamic-dims names 'sq', which no input of the model has "
              "(its symbolic dimensions: 'B', 'seq')");
  // Bounds keep another dimension `?`, named in kiln.dim_symbols; beside
  // it, the batch stays the repeated one (its probe, in kiln.symbols).
  options.dimSizes.clear();
  options.symbolBounds["seq"] = {1, 64};
  // Imports with `options`: the first argument's type and the function's
  // symbol attributes.
  auto expectImported = [&](const std::string &argument,
                            const std::string &symbols) {
    ImportResult r = importModel(context, bytes, "", options);
    ASSERT_TRUE(r.module) << r.allErrors();
    EXPECT_NE(r.ir.find(argument), std::string::npos) << r.ir;
    EXPECT_NE(r.ir.find(symbols), std::string::npos) << r.ir;
  };
  expectImported("(%arg0: tensor<97x?xf32>",
                 "kiln.dim_symbols = [{max = 64 : i64, min = 1 : i64, name = "
                 "\"seq\"}], kiln.symbols = [{max = 8 : i64, min = 2 : i64, "
                 "name = \"B\"}]");
  // Where the compiler asks for the batch to be read at run time (its
  // samples do not run apart), it is `?` and the first of dim_symbols.
  options.readBatchAtRunTime = true;
  expectImported("(%arg0: tensor<?x?xf32>",
                 "kiln.dim_symbols = [{max = 8 : i64, min = 2 : i64, name = "
                 "\"B\"}, {max = 64 : i64, min = 1 : i64, name = \"seq\"}]");
  // So read, the batch needs bounds of its own (its default would size the
  // workspace for 1024 samples); without the option it does not.
  options.symbolBounds.erase("B");
  expectError(importModel(context, bytes, "", options),
              "the batch 'B' and the symbolic dimensions given bounds ('seq', "
              "...) cannot both stay symbolic with the batch's default bounds");
  options.readBatchAtRunTime = false;
  ImportResult repeated = importModel(context, bytes, "", options);
  ASSERT_TRUE(repeated.module) << repeated.allErrors();
  EXPECT_NE(repeated.ir.find("(%arg0: tensor<97x?xf32>"), std::string::npos)
      << repeated.ir;

  ModelBuilder two;
  two.addInput("a", {std::string("N"), 2});
  two.addInput("b", {std::string("M"), 2});
  two.addNode("Add", {"a", "b"}, {"y"}, "add");
  two.addOutput("y");
  expectError(importModel(context, two.serialize()),
              "inputs 'a' and 'b' lead with different symbolic dimensions, "
              "'N' and 'M'");
}

// A name that leads one input but sits further in in another is no batch:
// it stays dynamic everywhere.
TEST_F(ImportModelTest, BatchNamedElsewhereIsNoBatch) {
  ModelBuilder m;
  m.addInput("a", {std::string("N"), 4});
  m.addInput("b", {4, std::string("N")});
  m.addNode("MatMul", {"a", "b"}, {"y"}, "mm");
  m.addOutput("y");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("(%arg0: tensor<?x4xf32>"), std::string::npos) << r.ir;
  EXPECT_EQ(r.ir.find("kiln.symbols"), std::string::npos) << r.ir;
}

TEST_F(ImportModelTest, InputShapeOverride) {
  std::string bytes = reluModel({std::string("N"), 3}).serialize();
  ImportOptions options;
  options.inputShapes["x"] = {8, 3};
  ImportResult r = importModel(context, bytes, "", options);
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("(%arg0: tensor<8x3xf32>"), std::string::npos) << r.ir;
  EXPECT_NE(r.ir.find("-> (tensor<8x3xf32>"), std::string::npos) << r.ir;

  options.inputShapes["x"] = {8, 3, 1};
  expectError(importModel(context, bytes, "", options),
              "has rank 3 but the model's input has rank 2");
  options.inputShapes["x"] = {8, 4};
  expectError(importModel(context, bytes, "", options),
              "differs from the model's [?,3] in dimension 1");
  options.inputShapes.clear();
  options.inputShapes["z"] = {1};
  expectError(importModel(context, bytes, "", options),
              "a shape is given for 'z', which is not an input of the model "
              "(inputs: 'x')");
  options.inputShapes.clear();
  options.inputShapes["x"] = {-1, 3};
  expectError(importModel(context, bytes, "", options), "negative dimension");
}

TEST_F(ImportModelTest, InputWithoutShapeNeedsOverride) {
  ModelBuilder m = reluModel({});
  m.graph()
      .mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->clear_shape();
  expectError(importModel(context, m.serialize()), "input 'x' has no shape");
  ImportOptions options;
  options.inputShapes["x"] = {2, 2};
  EXPECT_TRUE(importModel(context, m.serialize(), "", options).module);
}

TEST_F(ImportModelTest, InitializerInputsAreConstants) {
  ModelBuilder m = reluModel({2});
  m.addInput("w", {2});
  m.addInitializer("w", {2}, {1.0f, 2.0f});
  m.addNode("Add", {"y", "w"}, {"z"}, "add");
  m.addOutput("z");
  ImportResult r = importModel(context, m.serialize());
  ASSERT_TRUE(r.module) << r.allErrors();
  EXPECT_NE(r.ir.find("func.func @main(%arg0: tensor<2xf32> {kiln.name = "
                      "\"x\"}) ->"),
            std::string::npos)
      << r.ir;
  EXPECT_NE(r.ir.find("graph.constant dense<[1.000000e+00, 2.000000e+00]>"),
            std::string::npos)
      << r.ir;
}

TEST_F(ImportModelTest, UnknownOperatorsListedTogether) {
  ModelBuilder m = reluModel({2});
  m.addNode("FancyOp", {"y"}, {"a"}, "fancy1");
  m.addNode("Relu", {"a"}, {"b"}, "ok");
  m.addNode("OtherOp", {"b"}, {"c"});
  onnx::NodeProto &custom = m.addNode("FusedConv", {"c"}, {"d"}, "fused");
  custom.set_domain("com.microsoft");
  onnx::OperatorSetIdProto *ms = m.model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  m.addOutput("d");
  ImportResult r = importModel(context, m.serialize());
  expectError(r, "unsupported ONNX operators (ai.onnx opset 17): FancyOp "
                 "\u00d71 ('fancy1'), OtherOp \u00d71 ('OtherOp#3'), "
                 "com.microsoft.FusedConv \u00d71 ('fused')");
  expectError(r, "domain 'com.microsoft' is not ai.onnx");
  EXPECT_EQ(r.errors.size(), 1u) << r.allErrors();
}

TEST_F(ImportModelTest, UnsupportedOperatorsAreGroupedByOpType) {
  ModelBuilder m = reluModel({2});
  std::string last = "y";
  for (int i = 0; i < 5; ++i) {
    std::string next = "s" + std::to_string(i);
    m.addNode("TfIdfVectorizer", {last}, {next},
              "/attn/" + std::to_string(i) + "/TfIdfVectorizer");
    last = next;
  }
  m.addNode("StringNormalizer", {last}, {"l"}, "nms");
  m.addOutput("l");
  ImportResult r = importModel(context, m.serialize());
  expectError(
      r,
      "unsupported ONNX operators (ai.onnx opset 17): TfIdfVectorizer "
      "\u00d75 (first: '/attn/0/TfIdfVectorizer', '/attn/1/TfIdfVectorizer', "
      "'/attn/2/TfIdfVectorizer'), StringNormalizer \u00d71 ('nms')");
  EXPECT_EQ(r.errors.size(), 1u) << r.allErrors();
}

TEST_F(ImportModelTest, OpsetNewerThanKilnKnowsIsRefused) {
  ModelBuilder m(/*opset=*/9999);
  m.addInput("x", {2});
  m.addNode("Relu", {"x"}, {"a"}, "first_relu");
  m.addNode("Relu", {"a"}, {"y"}, "second_relu");
  m.addOutput("y");
  expectError(importModel(context, m.serialize()),
              "the model imports ai.onnx opset 9999, newer than Kiln knows "
              "(the newest it reads is 28): node 'first_relu' (Relu) and 1 "
              "other ai.onnx node(s) may mean something Kiln cannot know");
}

TEST_F(ImportModelTest, OpsetZeroIsInvalid) {
  ModelBuilder m(/*opset=*/0);
  m.addInput("x", {2});
  m.addNode("Relu", {"x"}, {"y"}, "r");
  m.addOutput("y");
  expectError(importModel(context, m.serialize()),
              "not a valid ONNX model: it imports ai.onnx opset 0");
}

TEST_F(ImportModelTest, UnsupportedElementTypes) {
  ModelBuilder strings;
  strings.addInput("s", {2}, onnx::TensorProto::STRING);
  strings.addNode("Identity", {"s"}, {"y"}, "id");
  strings.addOutput("y");
  expectError(importModel(context, strings.serialize()),
              "input 's' has element type STRING, which Kiln does not "
              "support");

  ModelBuilder complex = reluModel({2});
  complex.addEmptyInitializer("c", {1}, onnx::TensorProto::COMPLEX64)
      .add_float_data(1.0f);
  expectError(importModel(context, complex.serialize()),
              "initializer 'c': element type COMPLEX64 is not supported");

  // The narrow types are graph inputs and outputs and cast results, not
  // constants (ONNX packs the 4- and 2-bit ones).
  ModelBuilder fp8 = reluModel({2});
  fp8.addEmptyInitializer("f8", {1}, 17).add_int32_data(0);
  expectError(importModel(context, fp8.serialize()),
              "initializer 'f8': constants of element type FLOAT8E4M3FN are "
              "not supported");
  ModelBuilder int4 = reluModel({2});
  int4.addEmptyInitializer("i4", {2}, 22).add_int32_data(0x21);
  expectError(importModel(context, int4.serialize()),
              "initializer 'i4': constants of element type INT4 are not "
              "supported");
}

TEST_F(ImportModelTest, AllElementTypesMapped) {
  struct Case {
    int32_t onnx;
    const char *mlir;
  } cases[] = {{onnx::TensorProto::FLOAT, "f32"},
               {onnx::TensorProto::FLOAT16, "f16"},
               {onnx::TensorProto::BFLOAT16, "bf16"},
               {onnx::TensorProto::DOUBLE, "f64"},
               {onnx::TensorProto::INT8, "i8"},
               {onnx::TensorProto::INT16, "i16"},
               {onnx::TensorProto::INT32, "i32"},
               {onnx::TensorProto::INT64, "i64"},
               {onnx::TensorProto::UINT8, "ui8"},
               {onnx::TensorProto::UINT16, "ui16"},
               {onnx::TensorProto::UINT32, "ui32"},
               {onnx::TensorProto::UINT64, "ui64"},
               {onnx::TensorProto::BOOL, "i1"}};
  for (const Case &c : cases) {
    ModelBuilder m;
    m.addInput("x", {2}, c.onnx);
    m.addNode("Identity", {"x"}, {"y"}, "id");
    m.addOutput("y", c.onnx);
    ImportResult r = importModel(context, m.serialize());
    ASSERT_TRUE(r.module) << c.mlir << ": " << r.allErrors();
    EXPECT_NE(r.ir.find(std::string("tensor<2x") + c.mlir + ">"),
              std::string::npos)
        << r.ir;
  }
}

TEST_F(ImportModelTest, GraphStructureErrors) {
  ModelBuilder missing = reluModel({2});
  missing.addOutput("nowhere");
  expectError(importModel(context, missing.serialize()),
              "graph output 'nowhere' is not computed");

  ModelBuilder unsorted;
  unsorted.addInput("x", {2});
  unsorted.addNode("Relu", {"t"}, {"y"}, "second");
  unsorted.addNode("Relu", {"x"}, {"t"}, "first");
  unsorted.addOutput("y");
  expectError(importModel(context, unsorted.serialize()),
              "node 'second' (Relu): input 't' is not a graph input");

  ModelBuilder twice = reluModel({2});
  twice.addNode("Relu", {"x"}, {"y"}, "again");
  expectError(importModel(context, twice.serialize()),
              "node 'again' (Relu): output 'y' is already defined");

  ModelBuilder declared = reluModel({2});
  declared.graph()
      .mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::INT64);
  expectError(importModel(context, declared.serialize()),
              "graph output 'y' is declared as INT64 but computed as f32");

  ModelBuilder noGraph;
  noGraph.model.clear_graph();
  expectError(importModel(context, noGraph.serialize()), "has no graph");
}

} // namespace
