//===- ImportNN.cpp - Convolution, matrix products and friends ------------===//

#include "lib/Import/ImportState.h"
#include "lib/Import/ImportUtils.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/GraphShapeUtils.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace kiln;

/// Explicit pads (all begins, then all ends) for `auto_pad` SAME_UPPER or
/// SAME_LOWER: the output has ceil(input / stride) elements, and the odd
/// padding element goes at the end (UPPER) or the beginning (LOWER).
static LogicalResult resolveSamePads(NodeImporter &node,
                                     RankedTensorType inputType,
                                     ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations, bool upper,
                                     SmallVectorImpl<int64_t> &pads) {
  size_t spatial = kernel.size();
  pads.assign(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = inputType.getDimSize(2 + i);
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel[i]))
      return node.emitError()
             << "auto_pad SAME_* needs static spatial sizes, got input "
             << graph::formatShape(inputType.getShape()) << " and kernel "
             << graph::formatShape(kernel)
             << " (give the input a static shape in the import options)";
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t needed =
        (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in;
    int64_t total = std::max<int64_t>(needed, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = upper ? small : large;
    pads[spatial + i] = upper ? large : small;
  }
  return success();
}

FailureOr<Value> kiln::createConvFromAttributes(NodeImporter &node, Value input,
                                                Value weight, Value bias) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t rank = inputType.getRank();
  if (rank < 3)
    return node.emitError() << "input X must have rank >= 3 (N, C and at "
                               "least one spatial dimension), got "
                            << inputType;
  if (weightType.getRank() != rank)
    return node.emitError() << "weight W has rank " << weightType.getRank()
                            << " but input X has rank " << rank;
  size_t spatial = rank - 2;
  SmallVector<int64_t> ones(spatial, 1);

  SmallVector<int64_t> kernel =
      node.getInts("kernel_shape", weightType.getShape().drop_front(2));
  SmallVector<int64_t> strides = node.getInts("strides", ones);
  SmallVector<int64_t> dilations = node.getInts("dilations", ones);
  int64_t group = node.getInt("group", 1);
  std::string autoPad = node.getString("auto_pad", "NOTSET");
  if (node.hasFailed())
    return failure();
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial)
    return node.emitError()
           << "kernel_shape, strides and dilations need " << spatial
           << " values each (one per spatial dimension), got " << kernel.size()
           << ", " << strides.size() << " and " << dilations.size();
  for (size_t i = 0; i < spatial; ++i) {
    int64_t declared = weightType.getDimSize(2 + i);
    if (!ShapedType::isDynamic(declared) && declared != kernel[i])
      return node.emitError()
             << "kernel_shape " << graph::formatShape(kernel)
             << " differs from the weight's spatial dimensions "
             << graph::formatShape(weightType.getShape().drop_front(2));
    if (strides[i] <= 0 || dilations[i] <= 0)
      return node.emitError() << "strides and dilations must be positive";
  }
  if (group <= 0)
    return node.emitError() << "group must be positive, got " << group;

  SmallVector<int64_t> pads;
  if (autoPad == "NOTSET") {
    pads = node.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial)
      return node.emitError()
             << "pads needs " << 2 * spatial
             << " values (begins, then ends), got " << pads.size();
    if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
      return node.emitError() << "pads must not be negative";
  } else if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    if (failed(resolveSamePads(node, inputType, kernel, strides, dilations,
                               autoPad == "SAME_UPPER", pads)))
      return failure();
  } else {
    return node.emitError() << "auto_pad '" << autoPad
                            << "' is not NOTSET, VALID, SAME_UPPER or "
                               "SAME_LOWER";
  }
  if (node.hasFailed())
    return failure();
  Value conv = node.create<graph::ConvOp>(
      input, weight, bias, ArrayRef<int64_t>(strides), ArrayRef<int64_t>(pads),
      ArrayRef<int64_t>(dilations), static_cast<uint64_t>(group));
  if (!conv)
    return failure();
  return conv;
}

static LogicalResult importConv(NodeImporter &node) {
  Value input = node.getInput(0), weight = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !weight)
    return node.emitError() << "needs inputs X and W";
  if (Value quantized = createQuantizedConv(node, input, weight, bias))
    return node.setResults(quantized);
  if (node.hasFailed())
    return failure();
  FailureOr<Value> conv = createConvFromAttributes(node, input, weight, bias);
  return failed(conv) ? failure() : node.setResults(*conv);
}

static LogicalResult importMatMul(NodeImporter &node) {
  Value lhs = node.getInput(0), rhs = node.getInput(1);
  if (!lhs || !rhs)
    return node.emitError() << "needs two inputs";
  if (Value quantized = createQuantizedMatMul(node, lhs, rhs, /*bias=*/Value(),
                                              /*transposeRhs=*/false))
    return node.setResults(quantized);
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::MatMulOp>(lhs, rhs));
}

/// A two-operand Einsum that is a (batched) matrix product up to transposes
/// and reshapes, as those ops: the batch letters (in both operands and the
/// output), the rows (first operand and output), the columns (second operand
/// and output) and the contraction (both operands only). graph.matmul then
/// takes the register-blocked path of code generation. Null when the
/// equation is anything else (a diagonal, a letter summed within one
/// operand, sizes that broadcast).
static Value einsumAsMatMul(NodeImporter &node, ArrayRef<std::string> terms,
                            StringRef output, ArrayRef<Value> inputs) {
  if (terms.size() != 2)
    return nullptr;
  StringRef a = terms[0], b = terms[1];
  llvm::DenseMap<char, int64_t> sizes;
  for (auto [term, input] : llvm::zip(terms, inputs)) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(input.getType()).getShape();
    for (auto [c, size] : llvm::zip(term, shape)) {
      if (llvm::count(term, c) != 1 || ShapedType::isDynamic(size))
        return nullptr;
      auto [it, inserted] = sizes.try_emplace(c, size);
      if (!inserted && it->second != size)
        return nullptr;
    }
  }
  std::string batch, rows, cols, sum;
  for (char c : output)
    (a.contains(c) && b.contains(c) ? batch : a.contains(c) ? rows : cols) += c;
  for (char c : a)
    if (!output.contains(c)) {
      if (!b.contains(c))
        return nullptr;
      sum += c;
    }
  for (char c : b)
    if (!output.contains(c) && !a.contains(c))
      return nullptr;
  auto product = [&](StringRef letters) {
    int64_t n = 1;
    for (char c : letters)
      n *= sizes[c];
    return n;
  };
  // operand -> transpose to `order` -> reshape to [batch..., x, y].
  auto arrange = [&](Value v, StringRef term, StringRef first,
                     StringRef second) -> Value {
    std::string order = batch + first.str() + second.str();
    SmallVector<int64_t> perm;
    for (char c : order)
      perm.push_back(term.find(c));
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      v = node.create<graph::TransposeOp>(v, perm);
    SmallVector<int64_t> shape;
    for (char c : batch)
      shape.push_back(sizes[c]);
    shape.append({product(first), product(second)});
    return v ? node.create<graph::ReshapeOp>(v, shape, /*allow_zero=*/true)
             : Value();
  };
  Value lhs = arrange(inputs[0], a, rows, sum);
  Value rhs = arrange(inputs[1], b, sum, cols);
  if (!lhs || !rhs)
    return nullptr;
  Value result = node.create<graph::MatMulOp>(lhs, rhs);
  // [batch..., rows, cols] -> the output's order.
  std::string order = batch + rows + cols;
  SmallVector<int64_t> shape;
  for (char c : order)
    shape.push_back(sizes[c]);
  result = result ? node.create<graph::ReshapeOp>(result, shape,
                                                  /*allow_zero=*/true)
                  : Value();
  SmallVector<int64_t> perm;
  for (char c : output)
    perm.push_back(StringRef(order).find(c));
  if (result && !llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    result = node.create<graph::TransposeOp>(result, perm);
  return result;
}

/// Einsum: the equation made explicit for graph.einsum. Spaces go, each
/// ellipsis becomes letters of its own (the same for every term, aligned
/// from the right, as numpy broadcasts), and an implicit output (no `->`) is
/// the ellipsis then the letters that appear once, in alphabetical order.
static LogicalResult importEinsum(NodeImporter &node) {
  std::string equation = node.getString("equation");
  if (node.hasFailed())
    return failure();
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text += c;
  StringRef lhs = StringRef(text).split("->").first;
  bool explicitOutput = StringRef(text).contains("->");
  StringRef output = explicitOutput ? StringRef(text).split("->").second : "";
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  unsigned n = node.getNumInputs();
  if (terms.size() != n)
    return node.emitError()
           << "equation '" << equation << "' has " << terms.size()
           << " input term(s) for " << n << " input(s)";
  // Letters not used by the equation, for the ellipsis' dimensions.
  std::string free;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (!StringRef(text).contains(c))
      free += c;
  for (char c = 'a'; c <= 'z'; ++c)
    if (!StringRef(text).contains(c))
      free += c;
  SmallVector<Value> inputs;
  SmallVector<std::string> expanded;
  size_t ellipsisRank = 0;
  for (auto [i, term] : llvm::enumerate(terms)) {
    Value input = node.getInput(i);
    if (!input)
      return node.emitError() << "input " << i << " is missing";
    inputs.push_back(input);
    int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
    size_t dots = term.find("...");
    int64_t letters = int64_t(term.size()) - (dots == StringRef::npos ? 0 : 3);
    if (dots == StringRef::npos ? letters != rank : letters > rank)
      return node.emitError() << "term '" << term << "' does not fit input "
                              << i << " of rank " << rank;
    if (dots != StringRef::npos)
      ellipsisRank = std::max<size_t>(ellipsisRank, rank - letters);
  }
  if (ellipsisRank > free.size())
    return node.emitError() << "too many dimensions under '...'";
  std::string ellipsis = free.substr(0, ellipsisRank);
  for (auto [i, term] : llvm::enumerate(terms)) {
    size_t dots = term.find("...");
    if (dots == StringRef::npos) {
      expanded.push_back(term.str());
      continue;
    }
    int64_t rank = cast<RankedTensorType>(inputs[i].getType()).getRank();
    size_t own = rank - (term.size() - 3);
    expanded.push_back(term.take_front(dots).str() +
                       ellipsis.substr(ellipsis.size() - own) +
                       term.drop_front(dots + 3).str());
  }
  std::string result;
  if (explicitOutput) {
    size_t dots = output.find("...");
    result = dots == StringRef::npos
                 ? output.str()
                 : output.take_front(dots).str() + ellipsis +
                       output.drop_front(dots + 3).str();
  } else {
    std::string once;
    for (char c = 'A'; c <= 'z'; ++c)
      if (llvm::isAlpha(c) && !StringRef(ellipsis).contains(c) &&
          llvm::count(lhs, c) == 1)
        once += c;
    result = ellipsis + once;
  }
  std::string normalized = llvm::join(expanded, ",") + "->" + result;
  if (failed(graph::EinsumOp::parseEquation(normalized)))
    return node.emitError() << "malformed equation '" << equation << "'";
  // Checked by graph.einsum's type inference, then, where the equation is a
  // matrix product, made one.
  Value einsum =
      node.create<graph::EinsumOp>(ValueRange(inputs), StringRef(normalized));
  if (!einsum)
    return failure();
  if (Value product = einsumAsMatMul(node, expanded, result, inputs)) {
    einsum.getDefiningOp()->erase();
    return node.setResults(product);
  }
  return node.setResults(einsum);
}

/// Gemm from opset 7 (earlier ones take a `broadcast` attribute); C is
/// optional from opset 11 and accepted absent in all.
static LogicalResult importGemm(NodeImporter &node) {
  Value a = node.getInput(0), b = node.getInput(1), c = node.getInput(2);
  if (!a || !b)
    return node.emitError() << "needs inputs A and B";
  float alpha = node.getFloat("alpha", 1.0f);
  float beta = node.getFloat("beta", 1.0f);
  int64_t transA = node.getInt("transA", 0);
  int64_t transB = node.getInt("transB", 0);
  if (node.hasFailed())
    return failure();
  if (alpha == 1.0f && beta == 1.0f && transA == 0)
    if (Value quantized = createQuantizedMatMul(node, a, b, c, transB != 0))
      return node.setResults(quantized);
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::GemmOp>(
      a, b, c, llvm::APFloat(alpha), llvm::APFloat(beta), transA != 0,
      transB != 0));
}

/// Reads kernel_shape, strides, dilations and the pads of a windowed node
/// (pads resolved from auto_pad). `kernel` holds the default kernel shape
/// (empty when the attribute is required).
static LogicalResult getWindowAttrs(NodeImporter &node,
                                    RankedTensorType inputType,
                                    SmallVectorImpl<int64_t> &kernel,
                                    SmallVectorImpl<int64_t> &strides,
                                    SmallVectorImpl<int64_t> &dilations,
                                    SmallVectorImpl<int64_t> &pads) {
  int64_t rank = inputType.getRank();
  if (rank < 3)
    return node.emitError() << "input X must have rank >= 3 (N, C and at "
                               "least one spatial dimension), got "
                            << inputType;
  size_t spatial = rank - 2;
  SmallVector<int64_t> ones(spatial, 1);
  if (!node.hasAttr("kernel_shape") && kernel.empty())
    return node.emitError() << "needs the kernel_shape attribute";
  SmallVector<int64_t> kernelAttr = node.getInts("kernel_shape", kernel);
  kernel.assign(kernelAttr.begin(), kernelAttr.end());
  SmallVector<int64_t> stridesAttr = node.getInts("strides", ones);
  strides.assign(stridesAttr.begin(), stridesAttr.end());
  SmallVector<int64_t> dilationsAttr = node.getInts("dilations", ones);
  dilations.assign(dilationsAttr.begin(), dilationsAttr.end());
  std::string autoPad = node.getString("auto_pad", "NOTSET");
  if (node.hasFailed())
    return failure();
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial)
    return node.emitError()
           << "kernel_shape, strides and dilations need " << spatial
           << " values each (one per spatial dimension), got " << kernel.size()
           << ", " << strides.size() << " and " << dilations.size();
  if (llvm::any_of(kernel, [](int64_t k) { return k <= 0; }) ||
      llvm::any_of(strides, [](int64_t s) { return s <= 0; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d <= 0; }))
    return node.emitError()
           << "kernel_shape, strides and dilations must be positive";
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> padsAttr =
        node.getInts("pads", SmallVector<int64_t>(2 * spatial, 0));
    pads.assign(padsAttr.begin(), padsAttr.end());
    if (pads.size() != 2 * spatial)
      return node.emitError()
             << "pads needs " << 2 * spatial
             << " values (begins, then ends), got " << pads.size();
    if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
      return node.emitError() << "pads must not be negative";
    return success(!node.hasFailed());
  }
  if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
    return success();
  }
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
    return resolveSamePads(node, inputType, kernel, strides, dilations,
                           autoPad == "SAME_UPPER", pads);
  return node.emitError() << "auto_pad '" << autoPad
                          << "' is not NOTSET, VALID, SAME_UPPER or "
                             "SAME_LOWER";
}

/// ConvTranspose: `output_shape` and `auto_pad` become explicit pads and
/// output_padding, as the ONNX specification computes them.
static LogicalResult importConvTranspose(NodeImporter &node) {
  Value input = node.getInput(0), weight = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !weight)
    return node.emitError() << "needs inputs X and W";
  auto inputType = cast<RankedTensorType>(input.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t rank = inputType.getRank();
  if (rank < 3 || weightType.getRank() != rank)
    return node.emitError() << "input X " << inputType << " and weight W "
                            << weightType << " need the same rank, at least 3";
  size_t spatial = rank - 2;
  std::string autoPad = node.getString("auto_pad", "NOTSET");
  SmallVector<int64_t> kernel(weightType.getShape().drop_front(2)), strides,
      dilations, pads;
  // Pads are worked out here; let getWindowAttrs read them unresolved.
  SmallVector<int64_t> zeros(spatial, 0);
  SmallVector<int64_t> outputPadding = node.getInts("output_padding", zeros);
  SmallVector<int64_t> outputShape = node.getInts("output_shape");
  int64_t group = node.getInt("group", 1);
  if (node.hasFailed())
    return failure();
  if (group <= 0)
    return node.emitError() << "group must be positive, got " << group;
  if (outputPadding.size() != spatial)
    return node.emitError() << "output_padding needs " << spatial
                            << " values, got " << outputPadding.size();
  if (outputShape.size() == spatial + 2)
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() && outputShape.size() != spatial)
    return node.emitError() << "output_shape needs " << spatial
                            << " values, got " << outputShape.size();
  if (autoPad == "NOTSET" && outputShape.empty()) {
    if (failed(
            getWindowAttrs(node, inputType, kernel, strides, dilations, pads)))
      return failure();
  } else {
    // Read kernel, strides and dilations only; pads follow from the output
    // shape (the input's times the stride for SAME_*).
    SmallVector<int64_t> ones(spatial, 1);
    strides = node.getInts("strides", ones);
    dilations = node.getInts("dilations", ones);
    if (node.hasFailed())
      return failure();
    if (strides.size() != spatial || dilations.size() != spatial)
      return node.emitError()
             << "strides and dilations need " << spatial << " values each";
    pads.assign(2 * spatial, 0);
    if (autoPad != "VALID" || !outputShape.empty()) {
      for (size_t i = 0; i < spatial; ++i) {
        int64_t in = inputType.getDimSize(2 + i);
        if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel[i]))
          return node.emitError()
                 << "output_shape and auto_pad need static spatial sizes";
        int64_t out = outputShape.empty() ? in * strides[i] : outputShape[i];
        int64_t total = strides[i] * (in - 1) + outputPadding[i] +
                        (kernel[i] - 1) * dilations[i] + 1 - out;
        if (total < 0) {
          // A larger output than the input gives: extend at the end.
          outputPadding[i] -= total;
          continue;
        }
        // As ONNX specifies: the odd element at the end for SAME_UPPER, at
        // the beginning otherwise.
        bool upper = autoPad == "SAME_UPPER";
        pads[i] = upper ? total / 2 : total - total / 2;
        pads[spatial + i] = total - pads[i];
      }
    }
  }
  return node.setResults(node.create<graph::ConvTransposeOp>(
      input, weight, bias, ArrayRef<int64_t>(strides), ArrayRef<int64_t>(pads),
      ArrayRef<int64_t>(dilations), ArrayRef<int64_t>(outputPadding),
      static_cast<uint64_t>(group)));
}

/// MaxPool's Indices output: for each output element, the flat index into
/// X (row-major, or with storage_order 1 the spatial dimensions in
/// column-major order) of its window's first maximum. A running maximum
/// over the window's offsets, each a strided slice of X padded with -inf;
/// the index of an offset is (n * C + c) * size + the position's, built by
/// broadcasting small constants.
static Value maxPoolIndices(NodeImporter &node, Value input, Value pooled,
                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                            bool columnMajor) {
  auto type = cast<RankedTensorType>(input.getType());
  auto outType = cast<RankedTensorType>(pooled.getType());
  if (!type.hasStaticShape() || !isa<FloatType>(type.getElementType())) {
    node.emitError() << "the Indices output needs a static float input, got "
                     << type;
    return {};
  }
  int64_t rank = type.getRank(), spatial = rank - 2;
  ArrayRef<int64_t> in = type.getShape(), out = outType.getShape();
  Builder &b = node.getBuilder();
  Type i64 = b.getI64Type();
  auto i64Constant = [&](ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
    return node.create<graph::ConstantOp>(cast<TypedAttr>(
        DenseElementsAttr::get(RankedTensorType::get(shape, i64), values)));
  };
  // Padded with -inf, at the end far enough for ceil_mode's last windows.
  SmallVector<int64_t> padding(2 * rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed = (out[2 + i] - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] + 1 - in[2 + i] - pads[i];
    padding[2 + i] = pads[i];
    padding[rank + 2 + i] = std::max(needed, pads[spatial + i]);
  }
  Value padded = node.create<graph::PadOp>(
      input, b.getDenseI64ArrayAttr(padding), b.getStringAttr("constant"),
      b.getF64FloatAttr(-std::numeric_limits<double>::infinity()));
  // (n * C + c) * size, [N, C, 1...].
  int64_t size = 1;
  for (int64_t i = 0; i < spatial; ++i)
    size *= in[2 + i];
  SmallVector<int64_t> baseShape = {in[0], in[1]}, baseValues;
  baseShape.append(spatial, 1);
  for (int64_t nc = 0; nc < in[0] * in[1]; ++nc)
    baseValues.push_back(nc * size);
  Value base = i64Constant(baseShape, baseValues);
  // The stride of each spatial dimension in the flat index.
  SmallVector<int64_t> stride(spatial, 1);
  for (int64_t i = 0; i < spatial; ++i)
    for (int64_t j = 0; j < spatial; ++j)
      if (columnMajor ? j < i : j > i)
        stride[i] *= in[2 + j];
  Value best, index;
  SmallVector<int64_t> offset(spatial, 0);
  while (true) {
    SmallVector<int64_t> starts(rank, 0), ends(out), steps(rank, 1);
    Value flat = base;
    for (int64_t i = 0; i < spatial; ++i) {
      starts[2 + i] = offset[i] * dilations[i];
      ends[2 + i] = starts[2 + i] + (out[2 + i] - 1) * strides[i] + 1;
      steps[2 + i] = strides[i];
      // The input position of each output position along dimension i
      // (clamped: a padding cell holds -inf and is never the first max
      // unless the whole window is padding).
      SmallVector<int64_t> shape(rank, 1), values;
      shape[2 + i] = out[2 + i];
      for (int64_t o = 0; o < out[2 + i]; ++o) {
        int64_t p = o * strides[i] + offset[i] * dilations[i] - pads[i];
        values.push_back(std::clamp<int64_t>(p, 0, in[2 + i] - 1) * stride[i]);
      }
      Value term = i64Constant(shape, values);
      flat = flat && term ? node.create<graph::AddOp>(flat, term) : Value();
    }
    Value window =
        padded ? node.create<graph::SliceOp>(padded, starts, ends, steps)
               : Value();
    if (!window || !flat)
      return {};
    if (!best) {
      best = window;
      index = node.create<graph::ExpandOp>(flat, out);
    } else {
      Value greater = node.create<graph::GreaterOp>(window, best);
      best = greater ? node.create<graph::WhereOp>(greater, window, best)
                     : Value();
      index = greater && index
                  ? node.create<graph::WhereOp>(greater, flat, index)
                  : Value();
    }
    if (!best || !index)
      return {};
    int64_t i = spatial - 1;
    while (i >= 0 && ++offset[i] == kernel[i])
      offset[i--] = 0;
    if (i < 0)
      break;
  }
  return index;
}

static LogicalResult importMaxPool(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> kernel, strides, dilations, pads;
  if (failed(getWindowAttrs(node, inputType, kernel, strides, dilations, pads)))
    return failure();
  bool ceilMode = node.getInt("ceil_mode", 0) != 0;
  bool columnMajor = node.getInt("storage_order", 0) != 0;
  if (node.hasFailed())
    return failure();
  Value pooled = node.create<graph::MaxPoolOp>(
      input, ArrayRef<int64_t>(kernel), ArrayRef<int64_t>(strides),
      ArrayRef<int64_t>(pads), ArrayRef<int64_t>(dilations), ceilMode);
  if (!pooled || node.getNumOutputs() < 2 || !node.isOutputUsed(1))
    return node.setResults(pooled);
  return node.setResults(
      {pooled, maxPoolIndices(node, input, pooled, kernel, strides, dilations,
                              pads, columnMajor)});
}

Value kiln::createAveragePoolFromAttributes(NodeImporter &node, Value input) {
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> kernel, strides, dilations, pads;
  if (failed(getWindowAttrs(node, inputType, kernel, strides, dilations, pads)))
    return {};
  bool ceilMode = node.getInt("ceil_mode", 0) != 0;
  bool countIncludePad = node.getInt("count_include_pad", 0) != 0;
  if (node.hasFailed())
    return {};
  return node.create<graph::AveragePoolOp>(
      input, ArrayRef<int64_t>(kernel), ArrayRef<int64_t>(strides),
      ArrayRef<int64_t>(pads), ArrayRef<int64_t>(dilations), ceilMode,
      countIncludePad);
}

static LogicalResult importAveragePool(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  return node.setResults(createAveragePoolFromAttributes(node, input));
}

/// LpPool: (sum of |x|^p over the window)^(1/p), as an average pool of
/// |x|^p that counts the padding (zeros, as LpPool's sum does) times the
/// window's size, then the p-th root.
static LogicalResult importLpPool(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> kernel, strides, dilations, pads;
  if (failed(getWindowAttrs(node, inputType, kernel, strides, dilations, pads)))
    return failure();
  bool ceilMode = node.getInt("ceil_mode", 0) != 0;
  int64_t p = node.getInt("p", 2);
  if (node.hasFailed())
    return failure();
  if (p < 1)
    return node.emitError() << "p must be at least 1, not " << p;
  Type element = inputType.getElementType();
  auto scalar = [&](double value) {
    auto type = RankedTensorType::get({}, element);
    return node.create<graph::ConstantOp>(
        cast<TypedAttr>(DenseElementsAttr::get(
            type, FloatAttr::get(cast<FloatType>(element), value))));
  };
  Value powered =
      p == 2   ? node.create<graph::MulOp>(input, input)
      : p == 1 ? node.create<graph::AbsOp>(input)
               : node.create<graph::PowOp>(node.create<graph::AbsOp>(input),
                                           scalar(static_cast<double>(p)));
  if (!powered)
    return failure();
  Value mean = node.create<graph::AveragePoolOp>(
      powered, ArrayRef<int64_t>(kernel), ArrayRef<int64_t>(strides),
      ArrayRef<int64_t>(pads), ArrayRef<int64_t>(dilations), ceilMode,
      /*count_include_pad=*/true);
  int64_t window = 1;
  for (int64_t k : kernel)
    window *= k;
  Value sum =
      mean
          ? node.create<graph::MulOp>(mean, scalar(static_cast<double>(window)))
          : Value();
  if (!sum)
    return failure();
  if (p == 1)
    return node.setResults(sum);
  if (p == 2)
    return node.setResults(node.create<graph::SqrtOp>(sum));
  return node.setResults(
      node.create<graph::PowOp>(sum, scalar(1.0 / static_cast<double>(p))));
}

template <typename OpTy>
static LogicalResult importGlobalPool(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  return node.setResults(node.create<OpTy>(input));
}

/// BatchNormalization in training mode (opset 14 on): X normalised by the
/// statistics of this batch (the mean and population variance over every
/// dimension but the channels), and the running statistics updated,
/// running = input * momentum + batch * (1 - momentum). Outputs Y,
/// running_mean, running_var.
static LogicalResult importTrainingBatchNorm(NodeImporter &node,
                                             ArrayRef<Value> operands,
                                             float epsilon) {
  float momentum = node.getFloat("momentum", 0.9f);
  if (node.hasFailed())
    return failure();
  Value x = operands[0];
  RankedTensorType type = import::tensorType(x);
  Type element = type.getElementType();
  if (!isa<FloatType>(element) || type.getRank() < 2 || !type.hasStaticShape())
    return node.emitError() << "training mode needs a static float input of "
                               "rank >= 2 (N, C, ...), got "
                            << type;
  int64_t channels = type.getDimSize(1);
  for (unsigned i = 1; i < 5; ++i) {
    auto paramType = import::tensorType(operands[i]);
    if (paramType.getRank() != 1 || paramType.getDimSize(0) != channels ||
        paramType.getElementType() != element)
      return node.emitError()
             << "input " << i << " must be " << element << " of shape ["
             << channels << "], got " << paramType;
  }
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  // [C] -> [C, 1, ...] to broadcast against X's channels.
  SmallVector<int64_t> paramShape(type.getRank() - 1, 1);
  paramShape[0] = channels;
  auto perChannel = [&](Value v) {
    return node.create<graph::ReshapeOp>(v, paramShape, false);
  };
  Value mean = node.create<graph::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  Value centered = mean ? node.create<graph::SubOp>(x, mean) : Value();
  Value squared =
      centered ? node.create<graph::MulOp>(centered, centered) : Value();
  Value variance =
      squared ? node.create<graph::ReduceMeanOp>(squared, axes, true) : Value();
  Value eps = import::createScalar(node, element, epsilon);
  Value shifted =
      variance && eps ? node.create<graph::AddOp>(variance, eps) : Value();
  Value root = shifted ? node.create<graph::SqrtOp>(shifted) : Value();
  Value normalized = root ? node.create<graph::DivOp>(centered, root) : Value();
  Value scale = perChannel(operands[1]), bias = perChannel(operands[2]);
  Value scaled = normalized && scale
                     ? node.create<graph::MulOp>(normalized, scale)
                     : Value();
  Value y = scaled && bias ? node.create<graph::AddOp>(scaled, bias) : Value();
  if (!y)
    return failure();
  // The batch's statistics as [C], blended into the running ones.
  Value keep = import::createScalar(node, element, momentum);
  Value take = import::createScalar(node, element, 1.0 - double(momentum));
  SmallVector<Value> results{y};
  for (auto [batch, running] :
       {std::pair(mean, operands[3]), std::pair(variance, operands[4])}) {
    Value flat = node.create<graph::ReshapeOp>(
        batch, SmallVector<int64_t>{channels}, false);
    Value old = keep ? node.create<graph::MulOp>(running, keep) : Value();
    Value update =
        flat && take ? node.create<graph::MulOp>(flat, take) : Value();
    Value blended =
        old && update ? node.create<graph::AddOp>(old, update) : Value();
    if (!blended)
      return failure();
    results.push_back(blended);
  }
  return node.setResults(results);
}

/// BatchNormalization: the inference form, or the training form (opset 14
/// on) with its running statistics.
static LogicalResult importBatchNorm(NodeImporter &node) {
  SmallVector<Value> operands;
  for (unsigned i = 0; i < 5; ++i) {
    operands.push_back(node.getInput(i));
    if (!operands.back())
      return node.emitError()
             << "needs inputs X, scale, B, input_mean and input_var";
  }
  float epsilon = node.getFloat("epsilon", 1e-5f);
  if (node.getOpset() >= 14 && node.getInt("training_mode", 0) != 0)
    return importTrainingBatchNorm(node, operands, epsilon);
  if (node.getInt("training_mode", 0) != 0)
    return node.emitError() << "training_mode is not supported before "
                               "opset 14";
  if (node.getOpset() < 9 && node.getInt("spatial", 1) != 1)
    return node.emitError() << "spatial = 0 is not supported";
  for (unsigned i = 1; i < node.getNumOutputs(); ++i)
    if (node.isOutputUsed(i))
      return node.emitError() << "the training outputs (running mean and "
                                 "variance) are not supported";
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::BatchNormOp>(
      operands[0], operands[1], operands[2], operands[3], operands[4],
      llvm::APFloat(epsilon)));
}

static LogicalResult importInstanceNorm(NodeImporter &node) {
  Value input = node.getInput(0), scale = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !scale || !bias)
    return node.emitError() << "needs inputs input, scale and B";
  float epsilon = node.getFloat("epsilon", 1e-5f);
  if (node.hasFailed())
    return failure();
  return node.setResults(node.create<graph::InstanceNormOp>(
      input, scale, bias, llvm::APFloat(epsilon)));
}

/// Mean and 1 / sqrt(var + epsilon) of `input` over the dimensions from `axis`
/// on, kept as size-1 dimensions, computed in `stash` (ONNX's function body of
/// LayerNormalization).
static LogicalResult computeLayerNormStats(NodeImporter &node, Value input,
                                           int64_t axis, float epsilon,
                                           Value &mean, Value &invStdDev) {
  // stash_type 1 (the default) is float32; another keeps the input's type.
  auto inputType = cast<RankedTensorType>(input.getType());
  Type stash = node.getInt("stash_type", 1) == 1
                   ? Float32Type::get(node.getContext())
                   : inputType.getElementType();
  if (node.hasFailed())
    return failure();
  Value x = input;
  if (inputType.getElementType() != stash)
    x = graph::CastOp::create(node.getBuilder(), node.getLoc(),
                              inputType.clone(stash), input);
  SmallVector<int64_t> axes;
  for (int64_t i = axis; i < inputType.getRank(); ++i)
    axes.push_back(i);
  mean = node.create<graph::ReduceMeanOp>(x, axes, /*keepdims=*/true);
  if (!mean)
    return failure();
  Value centered = node.create<graph::SubOp>(x, mean);
  if (!centered)
    return failure();
  Value squared = node.create<graph::MulOp>(centered, centered);
  if (!squared)
    return failure();
  Value variance =
      node.create<graph::ReduceMeanOp>(squared, axes, /*keepdims=*/true);
  auto scalarType = RankedTensorType::get({}, stash);
  Value eps = node.create<graph::ConstantOp>(cast<TypedAttr>(
      DenseElementsAttr::get(scalarType, FloatAttr::get(stash, epsilon))));
  if (!variance || !eps)
    return failure();
  Value shifted = node.create<graph::AddOp>(variance, eps);
  if (!shifted)
    return failure();
  Value stdDev = node.create<graph::SqrtOp>(shifted);
  if (!stdDev)
    return failure();
  invStdDev = node.create<graph::ReciprocalOp>(stdDev);
  return success(invStdDev != nullptr);
}

static LogicalResult importLayerNorm(NodeImporter &node) {
  Value input = node.getInput(0), scale = node.getInput(1),
        bias = node.getInput(2);
  if (!input || !scale)
    return node.emitError() << "needs inputs X and Scale";
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t rank = inputType.getRank();
  int64_t axis = node.getInt("axis", -1);
  float epsilon = node.getFloat("epsilon", 1e-5f);
  if (node.hasFailed())
    return failure();
  if (axis < -rank || axis >= rank)
    return node.emitError()
           << "axis " << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  Value result = node.create<graph::LayerNormOp>(
      input, scale, bias, static_cast<uint64_t>(axis), llvm::APFloat(epsilon));
  if (!result)
    return failure();
  if (!node.isOutputUsed(1) && !node.isOutputUsed(2))
    return node.setResults(result);
  Value mean, invStdDev;
  if (failed(
          computeLayerNormStats(node, input, axis, epsilon, mean, invStdDev)))
    return failure();
  return node.setResults({result, mean, invStdDev});
}

static LogicalResult importLRN(NodeImporter &node) {
  Value input = node.getInput(0);
  if (!input)
    return node.emitError() << "needs an input";
  if (!node.hasAttr("size"))
    return node.emitError() << "needs the size attribute";
  int64_t size = node.getInt("size");
  float alpha = node.getFloat("alpha", 1e-4f);
  float beta = node.getFloat("beta", 0.75f);
  float bias = node.getFloat("bias", 1.0f);
  if (node.hasFailed())
    return failure();
  if (size <= 0)
    return node.emitError() << "size must be positive, got " << size;
  return node.setResults(node.create<graph::LRNOp>(
      input, static_cast<uint64_t>(size), llvm::APFloat(alpha),
      llvm::APFloat(beta), llvm::APFloat(bias)));
}

void kiln::registerNNImporters(NodeImporterRegistry &registry) {
  registry.add("AveragePool", /*minOpset=*/1, importAveragePool);
  registry.add("BatchNormalization", /*minOpset=*/6, importBatchNorm);
  registry.add("Conv", /*minOpset=*/1, importConv);
  registry.add("ConvTranspose", /*minOpset=*/1, importConvTranspose);
  registry.add("Gemm", /*minOpset=*/7, importGemm);
  registry.add("GlobalAveragePool", /*minOpset=*/1,
               importGlobalPool<graph::GlobalAveragePoolOp>);
  registry.add("GlobalMaxPool", /*minOpset=*/1,
               importGlobalPool<graph::GlobalMaxPoolOp>);
  registry.add("InstanceNormalization", /*minOpset=*/1, importInstanceNorm);
  registry.add("LayerNormalization", /*minOpset=*/17, importLayerNorm);
  registry.add("LRN", /*minOpset=*/1, importLRN);
  registry.add("LpPool", /*minOpset=*/2, importLpPool);
  registry.add("MatMul", /*minOpset=*/1, importMatMul);
  registry.add("Einsum", /*minOpset=*/12, importEinsum);
  registry.add("MaxPool", /*minOpset=*/1, importMaxPool);
}
