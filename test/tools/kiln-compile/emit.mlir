// kiln-compile stops after any stage and prints it.
// RUN: kiln-compile %s --emit=graph -o - | FileCheck %s --check-prefix=GRAPH
// RUN: kiln-compile %s --emit=linalg -o - | FileCheck %s --check-prefix=LINALG
// RUN: kiln-compile %s --emit=llvm-ir -o - | FileCheck %s --check-prefix=LLVM
// RUN: kiln-compile %s --emit=asm --target=x86-64 --cpu=x86-64-v3 -o - | FileCheck %s --check-prefix=ASM
// RUN: kiln-compile %s --emit=obj -o %t.o && llvm-nm %t.o | FileCheck %s --check-prefix=OBJ
// RUN: kiln-compile %s -o %t.so --report 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=SO

func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}, %b: tensor<3xf32> {kiln.name = "b"})
    -> (tensor<2x3xf32> {kiln.name = "y"}) {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// GRAPH: func.func @main
// GRAPH: graph.add
// GRAPH: graph.relu

// LINALG: func.func @kiln_model_main
// LINALG: linalg.generic
// LINALG-NOT: graph.

// LLVM: @kiln_abi_describe
// LLVM: define {{.*}}i32 @kiln_abi_run(ptr
// LLVM-NOT: define {{.*}}@kiln_model_main

// ASM-DAG: kiln_abi_run:
// ASM-DAG: {{vaddss|vaddps}}

// OBJ-DAG: T kiln_abi_describe
// OBJ-DAG: T kiln_abi_run

// REPORT: imported: 2 ops (graph.add: 1, graph.relu: 1)
// REPORT: graph: 2 ops
// REPORT: linalg:
// REPORT: llvm:
// REPORT: workspace: {{[0-9]+}} bytes

// The shared object exports the model ABI and nothing else.
// SO-NOT: {{ T }}
// SO: T kiln_abi_describe
// SO-NEXT: T kiln_abi_run
// SO-NOT: {{ T }}
