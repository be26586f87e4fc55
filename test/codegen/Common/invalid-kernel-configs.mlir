// RUN: rm -rf %t && mkdir -p %t
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "t", "config": {"rows": 5}, "ms": 0.5}' > %t/value.jsonl
// RUN: kiln-opt %s -kiln-codegen-apply-kernel-configs="tuning-db=%t/value.jsonl target=t" -verify-diagnostics -split-input-file
// RUN: echo '{"kernel": "linalg.matmul tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>", "target": "t", "config": {"unroll": 2}, "ms": 0.5}' > %t/knob.jsonl
// RUN: not kiln-opt %s -kiln-codegen-apply-kernel-configs="tuning-db=%t/knob.jsonl target=t" 2>&1 | FileCheck %s --check-prefix=KNOB
// RUN: echo '{"kernel": "k", "target": "t", "config": {}}' > %t/broken.jsonl
// RUN: echo 'not json' >> %t/broken.jsonl
// RUN: not kiln-opt %s -kiln-codegen-apply-kernel-configs="tuning-db=%t/broken.jsonl target=t" 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: echo '{"kernel": "k", "target": "t", "config": {}, "ms": "fast"}' > %t/ms.jsonl
// RUN: not kiln-opt %s -kiln-codegen-apply-kernel-configs="tuning-db=%t/ms.jsonl target=t" 2>&1 | FileCheck %s --check-prefix=MS
// RUN: not kiln-opt %s -kiln-codegen-apply-kernel-configs="tuning-db=%t/missing.jsonl target=t" 2>&1 | FileCheck %s --check-prefix=MISSING

// KNOB: error: tuning database {{.*}}knob.jsonl:1: the kernel has no knob 'unroll' (its knobs: k_tile, rows, vector_width, vectors)
// BROKEN: error: {{.*}}broken.jsonl:2: not a JSON value
// MS: error: {{.*}}ms.jsonl:1: "ms" must be a non-negative number
// MISSING: error: cannot read the tuning database {{.*}}missing.jsonl

func.func @matmul(%a: tensor<32x128xf32>, %b: tensor<128x64xf32>, %c: tensor<32x64xf32>) -> tensor<32x64xf32> {
  // expected-error @below {{value.jsonl:1: value 5 of knob 'rows' is not in the kernel's search space [1,2,4,8,16]}}
  %0 = linalg.matmul ins(%a, %b : tensor<32x128xf32>, tensor<128x64xf32>) outs(%c : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}
