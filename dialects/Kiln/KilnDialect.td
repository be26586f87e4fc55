//===- KilnDialect.td - The kiln dialect -------------------*- tablegen -*-===//

#ifndef KILN_DIALECT
#define KILN_DIALECT

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "The attributes by which Kiln's passes hand facts to one another";
  let description = [{
    The kiln dialect has no ops. It owns the discardable `kiln.*`
    attributes that a pass writes and a later pass, the driver or the model
    ABI reads (their names are in `KilnAttributes.h`), and verifies each
    wherever it appears: its kind of value, and where it may be. An unknown
    `kiln.*` name is an error, so a misspelt attribute fails at once instead
    of being silently ignored by its reader.

    ```mlir
    func.func @kiln_model_main(%x: tensor<1x4xf32> {kiln.name = "x"})
        -> (tensor<1x4xf32> {kiln.name = "y"})
        attributes {kiln.batch_split = "whole (...)",
                    kiln.inputs = [{name = "x", passed = true, type = tensor<1x4xf32>} ],
                    kiln.outputs = [{name = "y", passed = true, type = tensor<1x4xf32>} ]}
    ```
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

#endif // KILN_DIALECT
