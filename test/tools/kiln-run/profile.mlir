// kiln-run --profile times every kernel the compiler outlined: one line per
// kernel (the matmul, its zero fill fused into it, and the Sin, a libm
// call per element that stays a kernel of its own), then the
// time outside kernels, shares that add up to 100%, and the FLOP count of
// the matmul's kernel (2 x 16 x 64 x 32) from the kernel table.
// RUN: kiln-compile %s -o %t.so
// RUN: %python -c "import numpy as np; np.save('%t.a.npy', np.ones((16, 64), np.float32))"
// RUN: kiln-run %t.so --input a=%t.a.npy --output-dir %t.out --warmup 2 --repeat 5 --threads 1 --profile | FileCheck %s
// RUN: kiln-run %t.so --input a=%t.a.npy --output-dir %t.out --warmup 2 --repeat 5 --threads 1 --profile --json > %t.json
// RUN: %python %S/Inputs/check_profile.py %t.json --flops 65536 | FileCheck %s --check-prefix=JSON

// CHECK: 5 runs (after 2 warm-up), 1 thread:
// CHECK: profile: 2 kernels, medians of 5 runs: {{[0-9.]+}} ms in all
// CHECK-NEXT: share ms GFLOP/s kernel (ONNX nodes)
// CHECK-COUNT-2: {{^ *[0-9.]+% +[0-9.]+ +([0-9.]+|-) }}kiln_model_main_kernel{{[0-1] \((mm \(MatMul\)|act \(Sin\))\)$}}
// CHECK-NEXT: {{^ *[0-9.]+% +[0-9.]+ }}- (outside kernels)
// CHECK-NOT: {{.}}

// JSON: kernels: 2
// JSON: shares: 1.00
// JSON: kernel with 65536 flops: mm (MatMul)

func.func @main(%a: tensor<16x64xf32> {kiln.name = "a"}) -> (tensor<16x32xf32> {kiln.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<64x32xf32> loc("w (initializer)")
  %m = graph.matmul %a, %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("mm (MatMul)")
  %y = graph.sin %m : tensor<16x32xf32> loc("act (Sin)")
  return %y : tensor<16x32xf32>
}
