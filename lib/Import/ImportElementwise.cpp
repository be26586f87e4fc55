//===- ImportElementwise.cpp - Elementwise operators ----------------------===//

#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln;

/// Add, Sub, Mul and Div from opset 7, where they broadcast as numpy does
/// (before 7 they took `broadcast` and `axis` attributes instead).
template <typename OpTy> static LogicalResult importBinary(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  return node.setResults(node.create<OpTy>(lhs, rhs));
}

template <typename OpTy> static LogicalResult importUnary(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  return node.setResults(node.create<OpTy>(input));
}

void kiln::registerElementwiseImporters(NodeImporterRegistry &registry) {
  registry.add("Add", /*minOpset=*/7, importBinary<graph::AddOp>);
  registry.add("Div", /*minOpset=*/7, importBinary<graph::DivOp>);
  registry.add("Mul", /*minOpset=*/7, importBinary<graph::MulOp>);
  // Relu before opset 6 only adds the legacy `consumed_inputs` attribute.
  registry.add("Relu", /*minOpset=*/1, importUnary<graph::ReluOp>);
  registry.add("Sub", /*minOpset=*/7, importBinary<graph::SubOp>);
}
