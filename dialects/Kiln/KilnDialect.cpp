//===- KilnDialect.cpp - The kiln dialect and its attribute verifier ------===//

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include "dialects/Kiln/KilnDialect.cpp.inc"
#include "dialects/Kiln/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/KilnAttrs.cpp.inc"
#define GET_OP_CLASSES
#include "dialects/Kiln/KilnOps.cpp.inc"

using namespace mlir;

namespace kiln {

llvm::ArrayRef<llvm::StringRef> attr::convAlgorithmNames() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> all;
    for (uint32_t i = 0; i <= getMaxEnumValForConvAlgorithm(); ++i)
      all.push_back(stringifyConvAlgorithm(static_cast<ConvAlgorithm>(i)));
    return all;
  }();
  return names;
}

void KilnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Kiln/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/Kiln/KilnOps.cpp.inc"
      >();
}

/// "a, b or c" for a list of names.
static std::string oneOf(ArrayRef<StringRef> names) {
  std::string text;
  for (auto [i, name] : llvm::enumerate(names))
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + name.str();
  return text;
}

//===----------------------------------------------------------------------===//
// KernelConfigAttr
//===----------------------------------------------------------------------===//

KernelConfigAttr KernelConfigAttr::of(Operation *op) {
  if (auto config = op->getAttrOfType<KernelConfigAttr>(attr::kKernelConfig))
    return config;
  return get(op->getContext(), std::nullopt, std::nullopt, std::nullopt,
             std::nullopt, std::nullopt, std::nullopt, std::nullopt);
}

LogicalResult KernelConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, std::optional<ConvAlgorithm>,
    std::optional<int64_t> vectorWidth, std::optional<int64_t> vectors,
    std::optional<int64_t> rows, std::optional<int64_t> reductionTile,
    std::optional<bool>, std::optional<int64_t> tiles) {
  for (auto [name, value] : {std::pair{attr::kKnobVectorWidth, vectorWidth},
                             std::pair{attr::kKnobVectors, vectors},
                             std::pair{attr::kKnobRows, rows},
                             std::pair{attr::kKnobReductionTile, reductionTile},
                             std::pair{attr::kKnobTiles, tiles}})
    if (value && *value < 1)
      return emitError() << "kernel configuration knob '" << name
                         << "' must be at least 1, not " << *value;
  return success();
}

/// #kiln.kernel_config<algorithm = direct, rows = 4, parallel = false>: the
/// knobs in any order, each at most once, spelled as in the tuning database.
Attribute KernelConfigAttr::parse(AsmParser &parser, Type) {
  SMLoc start = parser.getCurrentLocation();
  std::optional<ConvAlgorithm> algorithm;
  std::optional<int64_t> vectorWidth, vectors, rows, reductionTile, tiles;
  std::optional<bool> parallel;
  llvm::StringSet<> seen;
  auto parseKnob = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    std::string name;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual())
      return failure();
    if (!seen.insert(name).second)
      return parser.emitError(loc) << "knob '" << name << "' appears twice";
    if (name == attr::kKnobAlgorithm) {
      SMLoc valueLoc = parser.getCurrentLocation();
      std::string value;
      if (parser.parseKeywordOrString(&value))
        return failure();
      algorithm = symbolizeConvAlgorithm(value);
      if (!algorithm)
        return parser.emitError(valueLoc)
               << "unknown convolution algorithm '" << value << "' (one of "
               << oneOf(attr::convAlgorithmNames()) << ")";
      return success();
    }
    if (name == attr::kKnobParallel) {
      SMLoc valueLoc = parser.getCurrentLocation();
      StringRef value;
      if (parser.parseKeyword(&value))
        return failure();
      if (value != "true" && value != "false")
        return parser.emitError(valueLoc) << "knob 'parallel' is true or false";
      parallel = value == "true";
      return success();
    }
    std::optional<int64_t> *knob = name == attr::kKnobVectorWidth ? &vectorWidth
                                   : name == attr::kKnobVectors   ? &vectors
                                   : name == attr::kKnobRows      ? &rows
                                   : name == attr::kKnobReductionTile
                                       ? &reductionTile
                                   : name == attr::kKnobTiles ? &tiles
                                                              : nullptr;
    if (!knob)
      return parser.emitError(loc)
             << "unknown kernel configuration knob '" << name << "' (one of "
             << oneOf({attr::kKnobAlgorithm, attr::kKnobVectorWidth,
                       attr::kKnobVectors, attr::kKnobRows,
                       attr::kKnobReductionTile, attr::kKnobParallel,
                       attr::kKnobTiles})
             << ")";
    int64_t value;
    if (parser.parseInteger(value))
      return failure();
    *knob = value;
    return success();
  };
  if (parser.parseLess())
    return {};
  if (failed(parser.parseOptionalGreater()) &&
      (parser.parseCommaSeparatedList(parseKnob) || parser.parseGreater()))
    return {};
  return getChecked([&] { return parser.emitError(start); },
                    parser.getContext(), algorithm, vectorWidth, vectors, rows,
                    reductionTile, parallel, tiles);
}

void KernelConfigAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::ListSeparator comma;
  if (getAlgorithm()) {
    printer << StringRef(comma) << attr::kKnobAlgorithm << " = ";
    printer.printKeywordOrString(stringifyConvAlgorithm(*getAlgorithm()));
  }
  for (auto [name, value] :
       {std::pair{attr::kKnobVectorWidth, getVectorWidth()},
        std::pair{attr::kKnobVectors, getVectors()},
        std::pair{attr::kKnobRows, getRows()},
        std::pair{attr::kKnobReductionTile, getReductionTile()}})
    if (value)
      printer << StringRef(comma) << name << " = " << *value;
  if (getParallel())
    printer << StringRef(comma) << attr::kKnobParallel << " = "
            << (*getParallel() ? "true" : "false");
  if (getTiles())
    printer << StringRef(comma) << attr::kKnobTiles << " = " << *getTiles();
  printer << ">";
}

//===----------------------------------------------------------------------===//
// BlockedConvAttr, KernelAttr
//===----------------------------------------------------------------------===//

LogicalResult
BlockedConvAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations) {
  auto positivePair = [](ArrayRef<int64_t> values) {
    return values.size() == 2 && values[0] >= 1 && values[1] >= 1;
  };
  if (!positivePair(strides) || !positivePair(dilations))
    return emitError() << "a blocked convolution has two strides and two "
                          "dilations, each at least 1";
  return success();
}

LogicalResult KernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t flops, StringRef) {
  if (flops < 0)
    return emitError() << "a kernel's flops are not negative, not " << flops;
  return success();
}

namespace {

/// One entry of kiln.inputs or kiln.outputs: {name, type, passed}, and
/// the optional fields that KilnAttributes.h names.
bool isInterfaceEntry(Attribute entry) {
  auto fields = dyn_cast<DictionaryAttr>(entry);
  if (!fields || !fields.getAs<StringAttr>("name") ||
      !fields.getAs<TypeAttr>("type") || !fields.getAs<BoolAttr>("passed"))
    return false;
  // An output's data-dependent sizes (kiln.result_dims / result_symbol).
  size_t expected = 3;
  if (Attribute dims = fields.get("dims")) {
    if (!isa<DenseI64ArrayAttr>(dims))
      return false;
    ++expected;
  }
  if (Attribute symbol = fields.get("symbol")) {
    if (!isa<IntegerAttr>(symbol))
      return false;
    ++expected;
  }
  // Its dimensions' symbols of kiln.dim_symbols.
  if (Attribute dims = fields.get("symbol_dims")) {
    if (!isa<DenseI64ArrayAttr>(dims))
      return false;
    ++expected;
  }
  return fields.size() == expected;
}

} // namespace

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  auto fail = [&](StringRef what) {
    return op->emitOpError()
           << "'" << name << "' must be " << what << ", not " << value;
  };
  auto nonNegative = [](Attribute value) {
    auto integer = dyn_cast<IntegerAttr>(value);
    return integer && !integer.getValue().isNegative();
  };
  bool onFunction = isa<FunctionOpInterface>(op);
  if (name == attr::kInputs || name == attr::kOutputs) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!onFunction || !list || !llvm::all_of(list, isInterfaceEntry))
      return fail("on a function, an array of {name, type, passed}");
    return success();
  }
  if (name == attr::kBatchRepeat) {
    auto repeat = dyn_cast<IntegerAttr>(value);
    if (!onFunction || !repeat || repeat.getValue().sle(1))
      return fail("on a function, an integer above 1");
    return success();
  }
  if (name == attr::kSymbols || name == attr::kDimSymbols) {
    auto list = dyn_cast<ArrayAttr>(value);
    auto isSymbol = [](Attribute entry) {
      auto fields = dyn_cast<DictionaryAttr>(entry);
      auto min = fields ? fields.getAs<IntegerAttr>("min") : nullptr;
      auto max = fields ? fields.getAs<IntegerAttr>("max") : nullptr;
      return fields && fields.size() == 3 && fields.getAs<StringAttr>("name") &&
             min && max && min.getInt() >= 1 && max.getInt() >= min.getInt();
    };
    if (!onFunction || !list || !llvm::all_of(list, isSymbol))
      return fail("on a function, an array of {name, min, max} with 1 <= "
                  "min <= max");
    return success();
  }
  if (name == attr::kResultSymbols) {
    auto list = dyn_cast<ArrayAttr>(value);
    auto isSymbol = [](Attribute entry) {
      auto fields = dyn_cast<DictionaryAttr>(entry);
      auto max = fields ? fields.getAs<IntegerAttr>("max") : nullptr;
      return fields && fields.size() == 2 && fields.getAs<StringAttr>("name") &&
             max && max.getInt() >= 0;
    };
    if (!onFunction || !list || !llvm::all_of(list, isSymbol))
      return fail("on a function, an array of {name, max} with max >= 0");
    return success();
  }
  if (name == attr::kBatchSplit) {
    if (!onFunction || !isa<StringAttr>(value))
      return fail("on a function, a string");
    return success();
  }
  if (name == attr::kWorkspaceSize) {
    if (!onFunction || !nonNegative(value))
      return fail("on a function, a non-negative integer");
    return success();
  }
  if (name == attr::kConstantsSize) {
    if (!onFunction || !nonNegative(value))
      return fail("on a function, a non-negative integer");
    return success();
  }
  if (name == attr::kIndexChecks) {
    auto list = dyn_cast<ArrayAttr>(value);
    auto isCheck = [](Attribute entry) {
      auto fields = dyn_cast<DictionaryAttr>(entry);
      auto low = fields ? fields.getAs<IntegerAttr>("low") : nullptr;
      auto high = fields ? fields.getAs<IntegerAttr>("high") : nullptr;
      return fields && fields.size() == 4 &&
             fields.getAs<StringAttr>("source") &&
             fields.getAs<StringAttr>("what") && low && high &&
             low.getInt() <= high.getInt();
    };
    if (!isa<ModuleOp>(op) || !list || !llvm::all_of(list, isCheck))
      return fail("on the module, an array of {source, what, low, high} "
                  "with low <= high");
    return success();
  }
  if (name == attr::kRunErrorArgument) {
    if (!isa<ModuleOp>(op) || !isa<UnitAttr>(value))
      return fail("a unit attribute on the module");
    return success();
  }
  if (name == attr::kGPULaunch) {
    auto sizes = dyn_cast<DenseI64ArrayAttr>(value);
    if (!onFunction || !sizes || sizes.size() != 6 ||
        !llvm::all_of(sizes.asArrayRef(), [](int64_t v) { return v > 0; }))
      return fail("on a function, six positive integers");
    return success();
  }
  if (name == attr::kKernel) {
    // A loop nest mapped to a GPU launch carries it until outlining.
    bool onLaunch = op->getName().getStringRef() == "gpu.launch";
    if ((!onFunction && !onLaunch) || !isa<KernelAttr>(value))
      return fail("on a function or a gpu.launch, a #kiln.kernel");
    return success();
  }
  if (name == attr::kConvAlgorithm) {
    if (!isa<ConvAlgorithmAttr>(value))
      return fail("a #kiln.conv_algorithm (" +
                  oneOf(attr::convAlgorithmNames()) + ")");
    return success();
  }
  if (name == attr::kConvAlgorithms) {
    auto lines = dyn_cast<ArrayAttr>(value);
    if (!onFunction || !lines ||
        !llvm::all_of(lines, [](Attribute a) { return isa<StringAttr>(a); }))
      return fail("on a function, an array of strings");
    return success();
  }
  if (name == attr::kKernelConfig) {
    if (!isa<KernelConfigAttr>(value))
      return fail("a #kiln.kernel_config");
    return success();
  }
  if (name == attr::kBF16) {
    if (!isa<UnitAttr>(value))
      return fail("a unit attribute");
    return success();
  }
  if (name == attr::kIntegerInput) {
    auto range = dyn_cast<DenseI64ArrayAttr>(value);
    if (!range || range.size() != 2 || range[0] > 0 || range[1] < 0 ||
        range[1] - range[0] > 255)
      return fail("two integers low <= 0 <= high at most 255 apart");
    return success();
  }
  if (name == attr::kToBytes) {
    auto low = dyn_cast<IntegerAttr>(value);
    if (!low || low.getInt() > 0 || low.getInt() < -255 ||
        op->getName().getStringRef() != "linalg.generic")
      return fail("an integer low in [-255, 0] on a linalg.generic");
    return success();
  }
  if (name == attr::kBlockedConv) {
    if (!isa<BlockedConvAttr>(value))
      return fail("a #kiln.blocked_conv");
    return success();
  }
  if (name == attr::kPadInterior) {
    auto box = dyn_cast<DenseI64ArrayAttr>(value);
    // The dialect does not link linalg: the op is known by its name.
    bool fill = op->getName().getStringRef() == "linalg.fill" &&
                op->getNumResults() == 1;
    auto type =
        fill ? dyn_cast<RankedTensorType>(op->getResult(0).getType()) : nullptr;
    if (!box || !type || !type.hasStaticShape() ||
        box.size() != 2 * type.getRank())
      return fail("on a linalg.fill of a static tensor, its rank's offsets "
                  "then sizes");
    for (int64_t d = 0, rank = type.getRank(); d < rank; ++d)
      if (box[d] < 0 || box[rank + d] < 0 ||
          box[d] + box[rank + d] > type.getDimSize(d))
        return fail("offsets and sizes of a box inside the tensor");
    return success();
  }
  if (name == attr::kIndicesFromZero) {
    // The dialect does not link the graph dialect: the ops are known by name.
    StringRef opName = op->getName().getStringRef();
    if (!isa<UnitAttr>(value) ||
        (opName != "graph.gather" && opName != "graph.scatter_elements"))
      return fail(
          "a unit attribute on a graph.gather or graph.scatter_elements");
    return success();
  }
  if (name == attr::kName)
    return op->emitOpError() << "'" << name
                             << "' belongs on a function's arguments and "
                                "results, not on an op";
  return op->emitOpError() << "has an unknown Kiln attribute '" << name << "'";
}

/// kiln.name, an argument's kiln.dims and a result's kiln.result_dims or
/// kiln.result_symbol are the attributes of arguments and results.
static LogicalResult
verifyValueAttribute(Operation *op, NamedAttribute attribute, StringRef where) {
  StringRef name = attribute.getName().getValue();
  if (name == attr::kDims && where == "argument") {
    auto names = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError()
             << "'" << name << "' of " << where
             << " must be an array of strings, not " << attribute.getValue();
    return success();
  }
  // A result's, or the out-parameter's that it becomes in code generation.
  if (name == attr::kResultDims) {
    if (!isa<DenseI64ArrayAttr>(attribute.getValue()))
      return op->emitOpError()
             << "'" << name << "' of " << where
             << " must be an array of integers, not " << attribute.getValue();
    return success();
  }
  if (name == attr::kResultSymbol) {
    auto symbol = dyn_cast<IntegerAttr>(attribute.getValue());
    if (!symbol || symbol.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' of " << where
             << " must be a non-negative integer, not " << attribute.getValue();
    return success();
  }
  if (name != attr::kName)
    return op->emitOpError()
           << "has an unknown Kiln " << where << " attribute '" << name << "'";
  if (!isa<StringAttr>(attribute.getValue()))
    return op->emitOpError()
           << "'" << name << "' of " << where << " must be a string, not "
           << attribute.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult CheckIndexOp::verify() {
  int64_t low = getLowAttr().getInt(), high = getHighAttr().getInt();
  if (low > high)
    return emitOpError() << "range [" << low << ", " << high << "] is empty";
  return success();
}

LogicalResult KilnDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                    unsigned,
                                                    NamedAttribute attribute) {
  return verifyValueAttribute(op, attribute, "argument");
}

LogicalResult
KilnDialect::verifyRegionResultAttribute(Operation *op, unsigned, unsigned,
                                         NamedAttribute attribute) {
  return verifyValueAttribute(op, attribute, "result");
}

} // namespace kiln
