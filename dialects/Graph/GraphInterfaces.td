//===- GraphInterfaces.td - Interfaces of the graph dialect -*- tablegen -*-===//

#ifndef KILN_GRAPH_INTERFACES
#define KILN_GRAPH_INTERFACES

include "mlir/IR/OpBase.td"

def Graph_SampleWiseOpInterface : OpInterface<"SampleWiseOpInterface"> {
  let cppNamespace = "::kiln::graph";
  let description = [{
    An op that can compute each sample of a batch (the first dimension of
    its results) from that sample of its operands alone: run once per
    sample on batch-1 tensors, it gives the batch's result sample by sample.
    kiln-graph-split-batch asks every op on the way from the inputs to the
    outputs, so a new op takes part in batch splitting by implementing this
    interface, and an op without it keeps the batch whole.

    The default is the rule of elementwise ops with numpy broadcasting: every
    operand that carries the batch has the result's rank, and every other
    one broadcasts along the batch (a lower rank, or a first dimension of
    1). Ops with another rule (convolutions, matmuls, softmaxes, concats,
    reshapes, ...) override it in `dialects/Graph/SampleWise.cpp`.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether the op treats the samples of its batch apart, given which of
        its operands carry the batch (`carriesBatch`, true for a value that
        depends on the inputs' batch, in its first dimension).
      }],
      "bool", "treatsSamplesApart",
      (ins "::llvm::function_ref<bool(::mlir::Value)>":$carriesBatch),
      /*methodBody=*/[{}],
      /*defaultImplementation=*/[{
        return ::kiln::graph::isElementwiseSampleWise($_op.getOperation(),
                                                      carriesBatch);
      }]>,
    InterfaceMethod<[{
        Whether the op's rule is the elementwise one, the default:
        kiln-graph-split-batch then also follows a batch that lies in
        another dimension than the first (moved by a transpose, merged with
        another size by a reshape) through the op.
      }],
      "bool", "hasElementwiseSampleRule", (ins), /*methodBody=*/[{}],
      /*defaultImplementation=*/[{ return true; }]>
  ];
}

// The op overrides the elementwise rule with its own.
def Graph_OwnSampleRule
    : DeclareOpInterfaceMethods<Graph_SampleWiseOpInterface,
                                ["treatsSamplesApart",
                                 "hasElementwiseSampleRule"]>;

#endif // KILN_GRAPH_INTERFACES
