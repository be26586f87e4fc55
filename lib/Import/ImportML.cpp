//===- ImportML.cpp - ai.onnx.ml operators on numeric tensors -------------===//
//
// The classical-ML domain's operators that compute on numeric tensors and
// map onto graph ops: Binarizer and ArrayFeatureExtractor. (Those on strings
// need string tensors, which Kiln does not have.)
//
//===----------------------------------------------------------------------===//

#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

/// Binarizer: Y = X > threshold ? 1 : 0, in X's type.
static LogicalResult importBinarizer(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  Type element = elementType(input);
  if (!isa<FloatType>(element) && !isa<IntegerType>(element))
    return node.emitError() << "needs a numeric input, got " << input.getType();
  double threshold = node.getFloat("threshold", 0.0f);
  if (node.hasFailed())
    return failure();
  Value limit = createScalar(node, element, threshold);
  Value one = createScalar(node, element, 1.0);
  Value zero = createScalar(node, element, 0.0);
  Value above = limit ? node.create<graph::GreaterOp>(input, limit) : Value();
  if (!above || !one || !zero)
    return failure();
  return node.setResults(node.create<graph::WhereOp>(above, one, zero));
}

/// ArrayFeatureExtractor: the entries of X's last axis at the indices Y (all
/// of Y's entries, flattened), Z = X[..., Y]; a 1-D X gives [1, n]. The
/// indices are checked at run time like any Gather's.
static LogicalResult importArrayFeatureExtractor(NodeImporter &node) {
  Value data = node.getInput(0), indices = node.getInput(1);
  if (!data || !indices)
    return node.emitError() << "needs inputs X and Y";
  RankedTensorType dataType = tensorType(data), indexType = tensorType(indices);
  if (dataType.getRank() == 0)
    return node.emitError() << "needs X of rank >= 1, got " << dataType;
  if (!indexType.getElementType().isInteger(64))
    return node.emitError() << "needs int64 indices Y, got " << indexType;
  if (!indexType.hasStaticShape() || !dataType.hasStaticShape())
    return node.emitError()
           << "needs static shapes, got " << dataType << " and " << indexType;
  int64_t count = indexType.getNumElements();
  Value flat = node.create<graph::ReshapeOp>(
      indices, SmallVector<int64_t>{count}, /*allow_zero=*/false);
  Value picked = flat ? node.create<graph::GatherOp>(
                            data, flat, uint64_t(dataType.getRank() - 1))
                      : Value();
  if (picked && dataType.getRank() == 1)
    picked = node.create<graph::ReshapeOp>(
        picked, SmallVector<int64_t>{1, count}, /*allow_zero=*/false);
  return node.setResults(picked);
}

void kiln::registerMLImporters(NodeImporterRegistry &registry) {
  registry.add("ai.onnx.ml.Binarizer", 1, importBinarizer);
  registry.add("ai.onnx.ml.ArrayFeatureExtractor", 1,
               importArrayFeatureExtractor);
}
