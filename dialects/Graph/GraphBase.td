//===- GraphBase.td - The Kiln graph dialect ---------------*- tablegen -*-===//
//
// The dialect and the base classes of its ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRAPH_BASE
#define KILN_GRAPH_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/Graph/GraphInterfaces.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::kiln::graph";
  // Graph IR carries kiln.* attributes, which the kiln dialect verifies.
  let dependentDialects = ["::kiln::KilnDialect"];
  let summary = "Kiln's graph dialect: tensor operators with ONNX semantics";
  let description = [{
    The graph dialect holds a model as the importer reads it: a `func.func`
    whose arguments are the model's inputs and whose results are its outputs,
    and one op per ONNX operator. Every value is a ranked tensor of the
    builtin tensor type; a dimension is static or dynamic (`?`) where the model
    names it symbolically. Attributes follow ONNX's meaning with its defaults
    already applied by the importer, so a pass never has to know ONNX's
    defaults or opset history.

    Graph-level passes (folding, fusion, layouts, algorithm choice) work on
    this dialect; `kiln-convert-graph-to-linalg` lowers it to linalg, tensor,
    arith and math.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
}

// Element types the graph dialect computes on.
def Graph_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def Graph_Int : AnyTypeOf<[I1, I8, I16, I32, I64, UI8, UI16, UI32, UI64]>;
def Graph_Element : AnyTypeOf<[Graph_Float, Graph_Int]>;

// Storage-only element types: 8- and 4-bit floats and 4- and 2-bit integers
// are converted from and to, not computed on (graph.cast).
def Graph_NarrowFloat : AnyTypeOf<[F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ,
                                   F8E8M0FNU, F4E2M1FN]>;
def Graph_NarrowInt : AnyTypeOf<[I<4>, UI<4>, I<2>, UI<2>]>;

def Graph_Tensor : RankedTensorOf<[Graph_Element]>;
def Graph_CastTensor
    : RankedTensorOf<[Graph_Element, Graph_NarrowFloat, Graph_NarrowInt]>;
def Graph_FloatTensor : RankedTensorOf<[Graph_Float]>;
def Graph_IntTensor : RankedTensorOf<[Graph_Int]>;
def Graph_I64Tensor : RankedTensorOf<[I64]>;

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

// Result types follow from operands and attributes. Ops implement
//   static LogicalResult inferReturnTypes(MLIRContext *,
//       std::optional<Location>, Adaptor, SmallVectorImpl<Type> &);
// The declared result may be more precise than the inferred one (a static
// dimension where inference gives `?`), never contradict it.
def Graph_InferTypes : TraitList<[
  DeclareOpInterfaceMethods<InferTypeOpInterface>,
  NativeOpTrait<"InferTypeOpAdaptor", [],
    [{
      static ::llvm::LogicalResult
      inferReturnTypes(::mlir::MLIRContext *context,
                       std::optional<::mlir::Location> location,
                       Adaptor adaptor,
                       ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes);
      static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                          ::mlir::TypeRange declared);
    }],
    [{
      ::llvm::LogicalResult
      $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
          std::optional<::mlir::Location> location,
          ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
          ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
          ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
        $cppClass::Adaptor adaptor(operands, attributes, properties, regions);
        return $cppClass::inferReturnTypes(context, location, adaptor,
                                           inferredReturnTypes);
      }
      bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                              ::mlir::TypeRange declared) {
        return ::kiln::graph::areCompatibleResultTypes(inferred, declared);
      }
    }]>
]>;

class Graph_InferOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Pure, Graph_InferTypes])>;

#endif // KILN_GRAPH_BASE
