// kiln-compile lists a model's tunable kernels and compiles with the
// configurations of a tuning database.
// RUN: kiln-compile %s --emit=kernels --cpu=x86-64-v4 -o - | FileCheck %s --check-prefix=KERNELS
// RUN: rm -rf %t && mkdir -p %t
// RUN: echo '{"kernel": "linalg.matmul tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>", "target": "x86_64-unknown-linux-gnu/x86-64-v4", "config": {"rows": 4, "vectors": 1, "k_tile": 2, "parallel": false}, "ms": 0.01}' > %t/db.jsonl
// RUN: kiln-compile %s --cpu=x86-64-v4 --tuning-db=%t/db.jsonl -o %t/tuned.so --report 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-compile %s --cpu=x86-64-v4 --tuning-db=%t/db.jsonl --emit=llvm-ir -o - | FileCheck %s --check-prefix=TUNED
// RUN: kiln-compile %s --cpu=x86-64-v4 --emit=llvm-ir -o - | FileCheck %s --check-prefix=DEFAULT
// Another target's records do not apply.
// RUN: kiln-compile %s --cpu=x86-64-v3 --tuning-db=%t/db.jsonl -o %t/v3.so --report 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: echo '{"kernel": "k"}' > %t/bad.jsonl
// RUN: not kiln-compile %s --tuning-db=%t/bad.jsonl -o %t/bad.so 2>&1 | FileCheck %s --check-prefix=BAD

func.func @main(%a: tensor<32x64xf32> {kiln.name = "a"}, %b: tensor<64x128xf32> {kiln.name = "b"})
    -> (tensor<32x128xf32> {kiln.name = "y"}) {
  %0 = graph.matmul %a, %b : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// KERNELS: "kind": "contraction"
// KERNELS: "module": "module {
// KERNELS: "signature": "linalg.matmul tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>"
// KERNELS: "space": {
// KERNELS: "k_tile": [
// KERNELS: "target": "x86_64-unknown-linux-gnu/x86-64-v4"

// REPORT: tuning: 1 kernel(s) configured by {{.*}}db.jsonl for x86_64-unknown-linux-gnu/x86-64-v4
// REPORT-NEXT: linalg.matmul tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>: {"k_tile":2,"parallel":false,"rows":4,"vectors":1} ({{.*}}db.jsonl:1)

// The configured kernel runs on one thread; the default one forks.
// TUNED-NOT: __kmpc_fork_call
// DEFAULT: __kmpc_fork_call

// OTHER: tuning: 0 kernel(s) configured

// BAD: kiln-compile: error: {{.*}}bad.jsonl:1: a record needs "kernel" and "target" strings
