//===- KilnDialect.cpp - The kiln dialect and its attribute verifier ------===//

#include "dialects/Kiln/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "dialects/Kiln/KilnDialect.cpp.inc"

using namespace mlir;

namespace kiln {

llvm::ArrayRef<llvm::StringLiteral> attr::convAlgorithmNames() {
  static constexpr llvm::StringLiteral names[] = {
      "im2col", "direct", "winograd-2x3", "winograd-4x3", "winograd-6x3"};
  return names;
}

void KilnDialect::initialize() {}

namespace {

/// The knobs a kernel configuration may hold.
bool isKnob(StringRef name) {
  return llvm::is_contained({attr::kKnobAlgorithm, attr::kKnobVectorWidth,
                             attr::kKnobVectors, attr::kKnobRows,
                             attr::kKnobReductionTile, attr::kKnobParallel},
                            name);
}

/// "a, b or c" for a list of names.
std::string oneOf(ArrayRef<llvm::StringLiteral> names) {
  std::string text;
  for (auto [i, name] : llvm::enumerate(names))
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + name.str();
  return text;
}

LogicalResult verifyKernelConfig(Operation *op, DictionaryAttr config) {
  for (NamedAttribute knob : config) {
    StringRef name = knob.getName().getValue();
    if (!isKnob(name))
      return op->emitOpError() << "'" << attr::kKernelConfig
                               << "' has an unknown knob '" << name << "'";
    // The algorithm is a string, parallel a bool, the others integers.
    bool ok = name == attr::kKnobAlgorithm  ? isa<StringAttr>(knob.getValue())
              : name == attr::kKnobParallel ? isa<BoolAttr>(knob.getValue())
                                            : isa<IntegerAttr>(knob.getValue());
    if (!ok)
      return op->emitOpError()
             << "'" << attr::kKernelConfig << "' knob '" << name
             << "' has a value of the wrong kind: " << knob.getValue();
  }
  return success();
}

/// One entry of kiln.inputs or kiln.outputs: {name, type, passed}.
bool isInterfaceEntry(Attribute entry) {
  auto fields = dyn_cast<DictionaryAttr>(entry);
  return fields && fields.size() == 3 && fields.getAs<StringAttr>("name") &&
         fields.getAs<TypeAttr>("type") && fields.getAs<BoolAttr>("passed");
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
  if (name == attr::kBatchSplit || name == attr::kKernelSource) {
    if (!onFunction || !isa<StringAttr>(value))
      return fail("on a function, a string");
    return success();
  }
  if (name == attr::kWorkspaceSize || name == attr::kKernelFlops) {
    if (!onFunction || !nonNegative(value))
      return fail("on a function, a non-negative integer");
    return success();
  }
  if (name == attr::kConvAlgorithm) {
    auto algorithm = dyn_cast<StringAttr>(value);
    if (!algorithm ||
        !llvm::is_contained(attr::convAlgorithmNames(), algorithm.getValue()))
      return fail("one of " + oneOf(attr::convAlgorithmNames()));
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
    auto config = dyn_cast<DictionaryAttr>(value);
    if (!config)
      return fail("a dictionary of knobs");
    return verifyKernelConfig(op, config);
  }
  if (name == attr::kBlockedConv) {
    if (!isa<DictionaryAttr>(value))
      return fail("a dictionary");
    return success();
  }
  if (name == attr::kName)
    return op->emitOpError() << "'" << name
                             << "' belongs on a function's arguments and "
                                "results, not on an op";
  return op->emitOpError() << "has an unknown Kiln attribute '" << name << "'";
}

/// kiln.name is the only attribute of arguments and results.
static LogicalResult
verifyValueAttribute(Operation *op, NamedAttribute attribute, StringRef where) {
  StringRef name = attribute.getName().getValue();
  if (name != attr::kName)
    return op->emitOpError()
           << "has an unknown Kiln " << where << " attribute '" << name << "'";
  if (!isa<StringAttr>(attribute.getValue()))
    return op->emitOpError()
           << "'" << name << "' of " << where << " must be a string, not "
           << attribute.getValue();
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
