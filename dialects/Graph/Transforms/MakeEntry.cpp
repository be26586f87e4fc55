//===- MakeEntry.cpp - @main becomes the model's entry function -----------===//
//
// kiln-graph-make-entry (Passes.td): the model's interface, recorded as the
// caller will see it, before code generation changes the signature.
//
//===----------------------------------------------------------------------===//

#include "dialects/Graph/Transforms/Passes.h"
#include "dialects/Graph/Transforms/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/BitVector.h"

namespace kiln::graph {
#define GEN_PASS_DEF_GRAPHMAKEENTRY
#include "dialects/Graph/Transforms/Passes.h.inc"
} // namespace kiln::graph

using namespace mlir;

namespace kiln::graph {
namespace {

bool hasNoElements(Type type) {
  return llvm::is_contained(cast<RankedTensorType>(type).getShape(), 0);
}

struct GraphMakeEntryPass : impl::GraphMakeEntryBase<GraphMakeEntryPass> {
  using GraphMakeEntryBase::GraphMakeEntryBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal()) {
      module.emitError("the model has no function @main");
      return signalPassFailure();
    }
    Builder builder(&getContext());
    // Which symbolic dimension each `?` is, from the inputs to the outputs;
    // fails where a `?` is not one the model may keep.
    FailureOr<SymbolicDims> symbolic = SymbolicDims::trace(main);
    if (failed(symbolic))
      return signalPassFailure();
    // One dictionary per tensor; fails on a tensor the ABI cannot describe.
    auto describe = [&](Value value, StringAttr name, StringRef kind,
                        unsigned index,
                        SmallVectorImpl<Attribute> &list) -> LogicalResult {
      Type type = value.getType();
      SmallVector<int64_t> symbols = symbolic->of(value);
      std::string text = name ? name.str() : kind.str() + std::to_string(index);
      auto ranked = dyn_cast<RankedTensorType>(type);
      if (!ranked)
        return main.emitError()
               << kind << " '" << text << "' is not a ranked tensor: " << type;
      NamedAttrList fields;
      fields.set("name", builder.getStringAttr(text));
      fields.set("type", TypeAttr::get(type));
      fields.set("passed", builder.getBoolAttr(true));
      if (!ranked.hasStaticShape())
        fields.set("symbol_dims", builder.getDenseI64ArrayAttr(symbols));
      for (int64_t d = 0; d < ranked.getRank(); ++d)
        if (int64_t scale = symbolic->scaleOf(value, d); scale != 1)
          return main.emitError()
                 << kind << " '" << text << "' dimension " << d << " is "
                 << scale << " x '" << symbolic->names()[symbols[d]]
                 << "', which the model's interface cannot describe";
      list.push_back(fields.getDictionary(&getContext()));
      return success();
    };
    SmallVector<Value> returned;
    main.walk([&](func::ReturnOp ret) {
      returned.assign(ret.getOperands().begin(), ret.getOperands().end());
    });
    SmallVector<Attribute> inputs, outputs;
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (failed(describe(main.getArgument(i),
                          main.getArgAttrOfType<StringAttr>(i, kNameAttr),
                          "input", i, inputs)))
        return signalPassFailure();
    for (unsigned i = 0; i < main.getNumResults(); ++i) {
      if (failed(describe(returned[i],
                          main.getResultAttrOfType<StringAttr>(i, kNameAttr),
                          "output", i, outputs)))
        return signalPassFailure();
      // The sizes that the data decides (the importer's result attributes).
      NamedAttrList fields(cast<DictionaryAttr>(outputs.back()));
      if (auto dims = main.getResultAttr(i, attr::kResultDims))
        fields.set("dims", dims);
      if (auto symbol = main.getResultAttr(i, attr::kResultSymbol))
        fields.set("symbol", symbol);
      outputs.back() = fields.getDictionary(&getContext());
    }

    // Tensors without elements leave the signature.
    auto notPassed = [&](Attribute &entry) {
      NamedAttrList fields(cast<DictionaryAttr>(entry));
      fields.set("passed", builder.getBoolAttr(false));
      entry = fields.getDictionary(&getContext());
    };
    llvm::BitVector args(main.getNumArguments()), results(main.getNumResults());
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (hasNoElements(main.getArgument(i).getType()) &&
          main.getArgument(i).use_empty())
        args.set(i), notPassed(inputs[i]);
    for (unsigned i = 0; i < main.getNumResults(); ++i)
      if (hasNoElements(main.getResultTypes()[i]))
        results.set(i), notPassed(outputs[i]);
    if (results.any()) {
      main.walk([&](func::ReturnOp ret) {
        SmallVector<Value> kept;
        for (auto [i, value] : llvm::enumerate(ret.getOperands()))
          if (!results.test(i))
            kept.push_back(value);
        ret->setOperands(kept);
      });
      if (failed(main.eraseResults(results)))
        return signalPassFailure();
    }
    if (args.any() && failed(main.eraseArguments(args)))
      return signalPassFailure();

    main->setAttr(kModelInputsAttr, builder.getArrayAttr(inputs));
    main->setAttr(kModelOutputsAttr, builder.getArrayAttr(outputs));
    if (module.lookupSymbol(entryName)) {
      module.emitError() << "the model already has a function @" << entryName;
      return signalPassFailure();
    }
    main.setSymName(entryName);
  }
};

} // namespace
} // namespace kiln::graph
