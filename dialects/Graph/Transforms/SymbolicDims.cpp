//===- SymbolicDims.cpp - Which symbol each `?` dimension is -------------===//

#include "dialects/Graph/Transforms/SymbolicDims.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Graph/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln::graph {
namespace {

constexpr int64_t kStatic = -1;

/// Inside the tracer, a `?` size is a static multiple of a symbol (a
/// sequence's length times a batch that the split pass makes 1, where a
/// reshape merged the two): symbol + (scale - 1) x kScaleStride, so that
/// two sizes are equal where their numbers are.
constexpr int64_t kScaleStride = int64_t(1) << 20;

int64_t symbolPart(int64_t size) { return size % kScaleStride; }
int64_t scalePart(int64_t size) { return size / kScaleStride + 1; }
std::optional<int64_t> scaled(int64_t symbol, int64_t scale) {
  if (scale < 1 || scale > (INT64_MAX / kScaleStride) - 1)
    return std::nullopt;
  return symbol + (scale - 1) * kScaleStride;
}

/// A name for `op` in an error: its ONNX node where the importer kept it.
std::string nodeName(Operation *op) {
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    return loc.getName().str();
  return op->getName().getStringRef().str();
}

/// Traces one function; `fail` collects what cannot be traced.
class Tracer {
public:
  Tracer(llvm::DenseMap<Value, SmallVector<int64_t>> &dims,
         ArrayRef<std::string> names)
      : dims(dims), names(names) {}

  /// A symbol's name in a reason, with its factor where it has one.
  std::string name(int64_t size) const {
    std::string text = names[symbolPart(size)];
    return scalePart(size) == 1
               ? text
               : std::to_string(scalePart(size)) + " x " + text;
  }

  SmallVector<int64_t> of(Value value) const {
    auto it = dims.find(value);
    if (it != dims.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(value.getType());
    return SmallVector<int64_t>(type ? type.getRank() : 0, kStatic);
  }

  static bool touchesSymbols(Operation *op) {
    auto dynamic = [](Type type) {
      auto ranked = dyn_cast<RankedTensorType>(type);
      return ranked && !ranked.hasStaticShape();
    };
    return llvm::any_of(op->getOperandTypes(), dynamic) ||
           llvm::any_of(op->getResultTypes(), dynamic);
  }

  /// The symbols of `op`'s results by its rule; an error message where it
  /// has none or its operands break it.
  FailureOr<SmallVector<SmallVector<int64_t>>> rule(Operation *op,
                                                    std::string &why) {
    using Result = FailureOr<SmallVector<SmallVector<int64_t>>>;
    auto one = [](SmallVector<int64_t> dims) -> Result {
      return SmallVector<SmallVector<int64_t>>{std::move(dims)};
    };
    if (op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
        op->hasTrait<OpTrait::SameOperandsAndResultType>())
      return one(of(op->getOperand(0)));
    return TypeSwitch<Operation *, Result>(op)
        .Case<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, ModOp, PReluOp,
              ShiftLeftOp, ShiftRightOp, AndOp, OrOp, XorOp, BitwiseAndOp,
              BitwiseOrOp, BitwiseXorOp, PowOp, EqualOp, LessOp, LessEqualOp,
              GreaterOp, GreaterEqualOp, WhereOp>([&](Operation *op) -> Result {
          FailureOr<SmallVector<int64_t>> dims =
              broadcast(op->getResult(0), op->getOperands(), why);
          if (failed(dims))
            return failure();
          return one(*dims);
        })
        .Case<SoftmaxOp, LogSoftmaxOp>(
            [&](Operation *op) { return one(of(op->getOperand(0))); })
        .Case<LayerNormOp>([&](LayerNormOp op) -> Result {
          // The normalized dimensions are the scale's, which is static.
          SmallVector<int64_t> input = of(op.getInput());
          for (int64_t d = op.getAxis(); d < int64_t(input.size()); ++d)
            if (input[d] != kStatic) {
              why = "normalizes over the symbolic dimension '" +
                    name(input[d]) + "'";
              return failure();
            }
          return one(input);
        })
        .Case<TransposeOp>([&](TransposeOp op) {
          SmallVector<int64_t> input = of(op.getInput()), result;
          for (int64_t p : op.getPerm())
            result.push_back(input[p]);
          return one(result);
        })
        .Case<GatherOp>([&](GatherOp op) -> Result {
          // Symbolic indices (token ids) into static data.
          SmallVector<int64_t> data = of(op.getData());
          if (llvm::any_of(data, [](int64_t s) { return s != kStatic; })) {
            why = "gathers from data of a symbolic size";
            return failure();
          }
          SmallVector<int64_t> result(data.begin(),
                                      data.begin() + op.getAxis());
          llvm::append_range(result, of(op.getIndices()));
          result.append(data.size() - op.getAxis() - 1, kStatic);
          return one(result);
        })
        .Case<SliceOp>([&](SliceOp op) -> Result {
          // A symbolic dimension is taken whole.
          SmallVector<int64_t> input = of(op.getInput());
          for (auto [d, symbol] : llvm::enumerate(input))
            if (symbol != kStatic &&
                (op.getStarts()[d] != 0 || op.getSteps()[d] != 1 ||
                 !ShapedType::isDynamic(op.getEnds()[d]))) {
              why = "slices the symbolic dimension '" + name(symbol) + "'";
              return failure();
            }
          return one(input);
        })
        .Case<SplitOp>([&](SplitOp op) -> Result {
          SmallVector<int64_t> input = of(op.getInput());
          if (input[op.getAxis()] != kStatic) {
            why = "splits the symbolic dimension '" +
                  name(input[op.getAxis()]) + "'";
            return failure();
          }
          return SmallVector<SmallVector<int64_t>>(op.getNumResults(), input);
        })
        .Case<ExpandOp>([&](ExpandOp op) -> Result {
          // A symbolic dimension of the input is kept (a 1 in the shape).
          SmallVector<int64_t> input = of(op.getInput());
          ArrayRef<int64_t> shape = op.getShape();
          int64_t rank = op.getType().getRank();
          SmallVector<int64_t> result(rank, kStatic);
          for (auto [d, symbol] : llvm::enumerate(input)) {
            int64_t at = d + rank - input.size();
            int64_t s = at - (rank - int64_t(shape.size()));
            if (symbol != kStatic && s >= 0 && shape[s] != 1) {
              why = "expands the symbolic dimension '" + name(symbol) +
                    "' to a static size";
              return failure();
            }
            result[at] = symbol;
          }
          return one(result);
        })
        .Case<ShapeOp>([&](ShapeOp op) {
          // The sizes, read at run time, make a static vector.
          return one({kStatic});
        })
        .Case<PrefixOp>([&](PrefixOp op) {
          SmallVector<int64_t> result = of(op.getInput());
          result[op.getAxis()] = of(op.getLike())[op.getLikeAxis()];
          return one(result);
        })
        .Case<ReshapeOp>([&](ReshapeOp op) -> Result {
          FailureOr<SmallVector<int64_t>> dims = reshape(op, why);
          if (failed(dims))
            return failure();
          return one(*dims);
        })
        .Case<MatMulOp>([&](MatMulOp op) -> Result {
          FailureOr<SmallVector<int64_t>> dims =
              matmul(op.getResult(), op.getLhs(), op.getRhs(), {}, why);
          if (failed(dims))
            return failure();
          return one(*dims);
        })
        .Case<FusedMatMulOp>([&](FusedMatMulOp op) -> Result {
          SmallVector<Value> addends;
          if (op.getBias())
            addends.push_back(op.getBias());
          if (op.getResidual())
            addends.push_back(op.getResidual());
          FailureOr<SmallVector<int64_t>> dims =
              matmul(op.getResult(), op.getLhs(), op.getRhs(), addends, why);
          if (failed(dims))
            return failure();
          return one(*dims);
        })
        .Case<GemmOp>([&](GemmOp op) -> Result {
          // M from A, N from B; the reduced sizes must agree, C broadcasts.
          SmallVector<int64_t> a = of(op.getA()), b = of(op.getB());
          if (a.size() != 2 || b.size() != 2) {
            why = "multiplies operands that are not matrices";
            return failure();
          }
          if (op.getTransA())
            std::swap(a[0], a[1]);
          if (op.getTransB())
            std::swap(b[0], b[1]);
          if (a[1] != b[0]) {
            why = "reduces over dimensions that are not one symbol";
            return failure();
          }
          SmallVector<int64_t> dims = {a[0], b[1]};
          SmallVector<Value> addends;
          if (op.getC())
            addends.push_back(op.getC());
          if (failed(added(dims, addends, why)))
            return failure();
          return one(dims);
        })
        .Default([&](Operation *) -> Result {
          why = "";
          return failure();
        });
  }

private:
  /// Two operands' symbols at one broadcast dimension: `symbol` (kStatic
  /// until one is met) takes `s`; two different ones fail.
  LogicalResult meet(int64_t &symbol, int64_t s, std::string &why) {
    if (symbol != kStatic && symbol != s) {
      why = "broadcasts the symbolic dimensions '" + name(symbol) + "' and '" +
            name(s) + "' together";
      return failure();
    }
    symbol = s;
    return success();
  }

  /// Numpy broadcasting: each result dimension is the symbol of the
  /// operands' `?` dimensions aligned with it, which must agree; a static
  /// size other than 1 against a symbol is refused (the two would have to
  /// be equal at run time).
  FailureOr<SmallVector<int64_t>> broadcast(Value result, ValueRange operands,
                                            std::string &why) {
    auto type = cast<RankedTensorType>(result.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> dims(rank, kStatic);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t symbol = kStatic, size = 1;
      for (Value operand : operands) {
        auto operandType = cast<RankedTensorType>(operand.getType());
        int64_t at = d - (rank - operandType.getRank());
        if (at < 0)
          continue;
        int64_t s = of(operand)[at];
        if (s == kStatic) {
          if (!operandType.isDynamicDim(at) && operandType.getDimSize(at) != 1)
            size = operandType.getDimSize(at);
          continue;
        }
        if (failed(meet(symbol, s, why)))
          return failure();
      }
      if (symbol != kStatic && size != 1) {
        why = "broadcasts the symbolic dimension '" + name(symbol) +
              "' with the size " + std::to_string(size);
        return failure();
      }
      dims[d] = symbol;
    }
    return dims;
  }

  /// A reshape keeps a symbol where its shape copies the input's size at
  /// the same index (a `0`), or where its `-1` stands for the one symbol
  /// that no `0` copies, times what the static sizes left leave; anything
  /// else (a symbol split, or merged with another) is refused.
  FailureOr<SmallVector<int64_t>> reshape(ReshapeOp op, std::string &why) {
    SmallVector<int64_t> input = of(op.getInput());
    auto inType = op.getInput().getType();
    ArrayRef<int64_t> spec = op.getShape();
    SmallVector<int64_t> result(spec.size(), kStatic);
    SmallVector<bool> copied(input.size(), false);
    int64_t inferred = -1, outStatic = 1;
    for (auto [d, size] : llvm::enumerate(spec)) {
      if (size == 0 && !op.getAllowZero() && d < input.size()) {
        result[d] = input[d];
        copied[d] = true;
      } else if (size == -1) {
        inferred = d;
      } else {
        outStatic *= size;
      }
    }
    int64_t inStatic = 1, uncopied = kStatic, uncopiedCount = 0;
    for (auto [d, symbol] : llvm::enumerate(input)) {
      if (copied[d])
        continue;
      if (symbol == kStatic)
        inStatic *= inType.getDimSize(d);
      else
        uncopied = symbol, ++uncopiedCount;
    }
    if (uncopiedCount == 0)
      return result;
    // The `-1` is the symbol times what the static sizes leave (the
    // batch that kiln-graph-split-batch makes 1, merged with a sequence).
    if (uncopiedCount == 1 && inferred >= 0 && outStatic > 0 &&
        (scalePart(uncopied) * inStatic) % outStatic == 0) {
      if (std::optional<int64_t> size =
              scaled(symbolPart(uncopied),
                     scalePart(uncopied) * inStatic / outStatic)) {
        result[inferred] = *size;
        return result;
      }
    }
    why = "merges or splits the symbolic dimension '" + name(uncopied) +
          "' with other sizes";
    return failure();
  }

  /// A matrix product: the batch broadcasts, M is the left operand's, N
  /// the right one's; the two reduced sizes must be one symbol or static.
  FailureOr<SmallVector<int64_t>> matmul(Value result, Value lhs, Value rhs,
                                         ValueRange addends, std::string &why) {
    SmallVector<int64_t> a = of(lhs), b = of(rhs);
    auto resultType = cast<RankedTensorType>(result.getType());
    if (a.size() < 2 || b.size() < 2 || resultType.getRank() < 2) {
      if (llvm::any_of(a, [](int64_t s) { return s != kStatic; }) ||
          llvm::any_of(b, [](int64_t s) { return s != kStatic; })) {
        why = "multiplies a vector of a symbolic size";
        return failure();
      }
      return SmallVector<int64_t>(resultType.getRank(), kStatic);
    }
    if (a.back() != b[b.size() - 2]) {
      why = "reduces over dimensions that are not one symbol";
      return failure();
    }
    int64_t rank = resultType.getRank();
    SmallVector<int64_t> dims(rank, kStatic);
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    for (int64_t d = 0; d + 2 < rank; ++d) {
      int64_t symbol = kStatic;
      for (auto [dimsOf, type] :
           {std::pair(&a, lhsType), std::pair(&b, rhsType)}) {
        int64_t at = d - (rank - type.getRank());
        if (at < 0)
          continue;
        int64_t s = (*dimsOf)[at];
        if (s != kStatic && failed(meet(symbol, s, why)))
          return failure();
      }
      dims[d] = symbol;
    }
    dims[rank - 2] = a[a.size() - 2];
    dims[rank - 1] = b.back();
    // Bias and residual broadcast against the product.
    if (failed(added(dims, addends, why)))
      return failure();
    return dims;
  }

  /// `addends` (a bias, a residual, Gemm's C) broadcast against a product
  /// whose dimensions are `dims`: each of their dimensions is the
  /// product's, or a static 1.
  LogicalResult added(ArrayRef<int64_t> dims, ValueRange addends,
                      std::string &why) {
    int64_t rank = dims.size();
    for (Value addend : addends) {
      auto type = cast<RankedTensorType>(addend.getType());
      SmallVector<int64_t> s = of(addend);
      for (int64_t at = 0; at < type.getRank(); ++at) {
        int64_t d = at + rank - type.getRank();
        if (s[at] != dims[d] &&
            !(s[at] == kStatic && type.getDimSize(at) == 1)) {
          why = "adds a tensor whose dimensions are not the product's";
          return failure();
        }
      }
    }
    return success();
  }

  llvm::DenseMap<Value, SmallVector<int64_t>> &dims;
  ArrayRef<std::string> names;
};

} // namespace

FailureOr<SymbolicDims> SymbolicDims::trace(func::FuncOp func) {
  return trace(func, /*report=*/true);
}

SymbolicDims SymbolicDims::traceSoFar(func::FuncOp func) {
  return *trace(func, /*report=*/false);
}

std::optional<int64_t> SymbolicDims::symbolOf(Value value, int64_t dim) const {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || dim < 0 || dim >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(dim))
    return kStatic;
  auto it = dims.find(value);
  if (it == dims.end() || it->second[dim] == kStatic)
    return std::nullopt;
  return symbolPart(it->second[dim]);
}

int64_t SymbolicDims::scaleOf(Value value, int64_t dim) const {
  auto it = dims.find(value);
  if (it == dims.end() || dim < 0 || dim >= int64_t(it->second.size()) ||
      it->second[dim] == kStatic)
    return 1;
  return scalePart(it->second[dim]);
}

FailureOr<SymbolicDims> SymbolicDims::trace(func::FuncOp func, bool report) {
  SymbolicDims result;
  llvm::StringMap<int64_t> index;
  if (auto list = func->getAttrOfType<ArrayAttr>(attr::kDimSymbols))
    for (Attribute item : list) {
      std::string name =
          cast<DictionaryAttr>(item).getAs<StringAttr>("name").str();
      index[name] = result.symbolNames.size();
      result.symbolNames.push_back(name);
    }
  // The arguments, by the names the importer kept.
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.hasStaticShape())
      continue;
    unsigned i = arg.getArgNumber();
    auto names = func.getArgAttrOfType<ArrayAttr>(i, attr::kDims);
    SmallVector<int64_t> dims(type.getRank(), kStatic);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d))
        continue;
      StringAttr name = names && int64_t(names.size()) > d
                            ? dyn_cast<StringAttr>(names[d])
                            : StringAttr();
      auto it = name ? index.find(name.getValue()) : index.end();
      if (it != index.end()) {
        dims[d] = it->second;
        continue;
      }
      if (!report)
        break;
      auto inputName = func.getArgAttrOfType<StringAttr>(i, attr::kName);
      std::string text =
          inputName ? inputName.str() : "input" + std::to_string(i);
      InFlightDiagnostic diag = func.emitError()
                                << "input '" << text << "' dimension " << d;
      bool named = name && !name.getValue().empty();
      if (named)
        diag << " ('" << name.getValue() << "')";
      diag << " is symbolic: give it a size with ";
      if (named)
        diag << "--dynamic-dims " << name.getValue() << "=SIZE, bounds with "
             << "--dynamic-dims " << name.getValue() << "=MIN..MAX, or ";
      return diag << "--input-shape " << text << "=D0xD1x...";
    }
    if (llvm::all_of(llvm::seq<int64_t>(0, type.getRank()), [&](int64_t d) {
          return !type.isDynamicDim(d) || dims[d] != kStatic;
        }))
      result.dims[arg] = dims;
  }

  // Every op, in order; those that meet no symbol keep static dimensions.
  Tracer tracer(result.dims, result.symbolNames);
  // The refused ops by type: the nodes and the first reason.
  llvm::MapVector<StringRef, std::pair<SmallVector<std::string>, std::string>>
      refused;
  Block &body = func.getBody().front();
  // The results of refused ops, and of ops after them: reported once, at
  // the refused op.
  llvm::DenseSet<Value> untraced;
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op) ||
        !Tracer::touchesSymbols(op))
      return;
    auto unknown = [&](Value v) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      return untraced.contains(v) ||
             (!report && type && !type.hasStaticShape() &&
              !result.dims.count(v));
    };
    if (llvm::any_of(op->getOperands(), unknown)) {
      untraced.insert(op->result_begin(), op->result_end());
      return;
    }
    std::string why;
    FailureOr<SmallVector<SmallVector<int64_t>>> dims = failure();
    if (op->getBlock() == &body)
      dims = tracer.rule(op, why);
    if (succeeded(dims)) {
      for (auto [value, symbols] : llvm::zip_equal(op->getResults(), *dims)) {
        // The types say which dimensions are `?`; a rule names each.
        auto type = cast<RankedTensorType>(value.getType());
        for (int64_t d = 0; d < type.getRank(); ++d) {
          if (!type.isDynamicDim(d))
            symbols[d] = kStatic;
          else if (symbols[d] == kStatic)
            why = "gives a result a size that no symbol names";
        }
        result.dims[value] = symbols;
      }
      if (why.empty())
        return;
    }
    untraced.insert(op->result_begin(), op->result_end());
    auto &entry = refused[op->getName().getStringRef()];
    entry.first.push_back(nodeName(op));
    if (entry.second.empty())
      entry.second = why;
  });
  if (refused.empty() || !report)
    return result;
  InFlightDiagnostic diag = func.emitError();
  if (result.symbolNames.empty())
    diag << "ops whose results' sizes Kiln cannot tell when it compiles (a "
            "compiled model's sizes are static, but for the dimensions "
            "given bounds with --dynamic-dims):";
  else
    diag << "the symbolic dimensions (" << llvm::join(result.symbolNames, ", ")
         << ") reach ops that Kiln computes only at static sizes so far:";
  for (auto [i, item] : llvm::enumerate(refused)) {
    auto &[name, entry] = item;
    diag << (i ? ", " : " ") << name << " (" << entry.first.size() << ": '"
         << entry.first.front() << "'";
    if (entry.first.size() > 1)
      diag << ", ...";
    if (!entry.second.empty())
      diag << "; it " << entry.second;
    diag << ")";
  }
  if (!result.symbolNames.empty())
    diag << "; give each a size with --dynamic-dims NAME=SIZE";
  return diag;
}

SmallVector<int64_t> SymbolicDims::of(Value value) const {
  auto it = dims.find(value);
  if (it != dims.end())
    return llvm::map_to_vector(it->second, [](int64_t size) {
      return size == kStatic ? kStatic : symbolPart(size);
    });
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return SmallVector<int64_t>(type ? type.getRank() : 0, kStatic);
}

} // namespace kiln::graph
