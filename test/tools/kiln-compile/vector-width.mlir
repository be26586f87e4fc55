// On an AVX-512 target, the loops LLVM vectorizes itself (here a max pool
// in NCHW) use 512-bit vectors like Kiln's own kernels, also on the Intel
// server cores that LLVM tunes to prefer 256-bit ones; a user's
// --features=+prefer-256-bit still gets 256-bit ones.
// RUN: kiln-compile %s --emit=asm --cpu=sapphirerapids -o - | FileCheck %s --check-prefix=WIDE
// RUN: kiln-compile %s --emit=asm --cpu=skylake-avx512 -o - | FileCheck %s --check-prefix=WIDE
// RUN: kiln-compile %s --emit=asm --cpu=sapphirerapids --features=+prefer-256-bit -o - | FileCheck %s --check-prefix=NARROW

func.func @main(%x: tensor<1x64x56x56xf32> {kiln.name = "x"}) -> (tensor<1x64x27x27xf32> {kiln.name = "y"}) {
  %0 = graph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x64x56x56xf32>) -> tensor<1x64x27x27xf32>
  return %0 : tensor<1x64x27x27xf32>
}

// WIDE: vmaxps {{.*}}zmm
// WIDE-NOT: vmaxps {{.*}}ymm
// NARROW: vmaxps {{.*}}ymm
// NARROW-NOT: vmaxps {{.*}}zmm
