//===- FlattenGlobals.cpp - Constants as one-dimensional globals ----------===//
//
// A constant memref.global of shape [K, C, 1, 1] becomes, in LLVM IR, an
// array of K arrays of C arrays of one-element arrays: one uniqued LLVM
// constant per innermost row. For the weights of a ResNet-50 that is
// millions of constants, which LLVM hashes, walks in every module pass and
// frees one by one; most of a compilation went there. Flat, the same bytes
// are one ConstantDataArray per global.
//
//===----------------------------------------------------------------------===//

#include "codegen/Common/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

namespace kiln::codegen {
#define GEN_PASS_DEF_CODEGENFLATTENGLOBALS
#include "codegen/Common/Passes.h.inc"
} // namespace kiln::codegen

using namespace mlir;

namespace kiln::codegen {
namespace {

/// The initial value of `global` with the 1-D type `type`, or null.
ElementsAttr flatten(ElementsAttr value, RankedTensorType type) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense.reshape(type);
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    return DenseResourceElementsAttr::get(type, resource.getRawHandle());
  return nullptr;
}

struct CodegenFlattenGlobalsPass
    : impl::CodegenFlattenGlobalsBase<CodegenFlattenGlobalsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<StringAttr, MemRefType> flattened;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      auto value = dyn_cast_or_null<ElementsAttr>(global.getInitialValueAttr());
      if (!value || type.getRank() < 2 || !type.hasStaticShape() ||
          !type.getLayout().isIdentity())
        continue;
      int64_t count = type.getNumElements();
      ElementsAttr flat =
          flatten(value, RankedTensorType::get({count}, type.getElementType()));
      if (!flat)
        continue;
      auto flatType = MemRefType::get({count}, type.getElementType(), nullptr,
                                      type.getMemorySpace());
      global.setType(flatType);
      global.setInitialValueAttr(flat);
      flattened[global.getSymNameAttr()] = type;
    }
    if (flattened.empty())
      return;
    // Each use reads the flat global through a view of its old shape.
    module.walk([&](memref::GetGlobalOp get) {
      auto it = flattened.find(get.getNameAttr().getAttr());
      if (it == flattened.end())
        return;
      MemRefType shaped = it->second;
      OpBuilder b(get);
      auto flatType =
          MemRefType::get({shaped.getNumElements()}, shaped.getElementType(),
                          nullptr, shaped.getMemorySpace());
      Value flat = memref::GetGlobalOp::create(b, get.getLoc(), flatType,
                                               get.getNameAttr());
      ReassociationIndices all =
          llvm::to_vector(llvm::seq<int64_t>(0, shaped.getRank()));
      Value view = memref::ExpandShapeOp::create(
          b, get.getLoc(), shaped, flat, ArrayRef<ReassociationIndices>{all});
      get.getResult().replaceAllUsesWith(view);
      get.erase();
    });
  }
};

} // namespace
} // namespace kiln::codegen
