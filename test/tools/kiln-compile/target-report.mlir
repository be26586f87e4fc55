// --report names the target and the register block, which follow the
// target's vector width and register count.
// RUN: kiln-compile %s --cpu=skylake-avx512 --report -o %t.so 2>&1 | FileCheck %s --check-prefix=AVX512
// RUN: kiln-compile %s --cpu=haswell --report -o %t.so 2>&1 | FileCheck %s --check-prefix=AVX2
// RUN: kiln-compile %s --cpu=x86-64 --report -o %t.so 2>&1 | FileCheck %s --check-prefix=SSE
// RUN: kiln-compile %s --target=aarch64 --report --emit=obj -o %t.o 2>&1 | FileCheck %s --check-prefix=NEON
// RUN: kiln-compile %s --target=aarch64 --cpu=a64fx --sve-vector-bits=512 --report --emit=obj -o %t.o 2>&1 | FileCheck %s --check-prefix=SVE512

func.func @main(%a: tensor<8x8xf32> {kiln.name = "a"}, %b: tensor<8x8xf32> {kiln.name = "b"}) -> (tensor<8x8xf32> {kiln.name = "y"}) {
  %0 = graph.matmul %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// AVX512: target: x86_64-unknown-linux-gnu cpu=skylake-avx512, 16 x f32 per vector, 32 vector registers, register block 8 x 2 vectors
// AVX2: target: x86_64-unknown-linux-gnu cpu=haswell, 8 x f32 per vector, 16 vector registers, register block 6 x 2 vectors
// SSE: target: x86_64-unknown-linux-gnu cpu=x86-64, 4 x f32 per vector, 16 vector registers, register block 6 x 2 vectors
// NEON: target: aarch64-unknown-linux-gnu cpu=generic, 4 x f32 per vector, 32 vector registers, register block 8 x 2 vectors
// SVE512: target: aarch64-unknown-linux-gnu cpu=a64fx, 16 x f32 per vector, 32 vector registers, register block 8 x 2 vectors
