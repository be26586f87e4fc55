// The nvptx target: PTX per architecture from upstream's NVVM path, with the
// weights outside the PTX, cubins from ptxas with no spills, and a model
// descriptor listing the images and launches.
// REQUIRES: cuda-toolkit
// RUN: kiln-compile %s --target=nvptx --emit=ptx -o - | FileCheck %s --check-prefix=PTX
// RUN: kiln-compile %s --target=nvptx --gpu-arch=sm_90a -o %t.so --report 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: kiln-run --info %t.so | FileCheck %s --check-prefix=INFO
// RUN: kiln-compile %s --target=nvptx --gpu-arch=sm_90a,sm_80,sm_90a -o %t.two.so --report 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: not kiln-compile %s --target=nvptx --gpu-arch=sm_70 -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: not kiln-compile %s --target=nvptx --gpu-arch=sm_8O -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not kiln-compile %s --target=nvptx --cuda-path=%t.nowhere -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=NOCUDA
// RUN: not kiln-compile %s --gpu-emulation -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not kiln-compile %s --gpu-implicit-gemm -o %t.bad.so 2>&1 | FileCheck %s --check-prefix=CPU-IGEMM
// RUN: kiln-compile %s --target=nvptx --gpu-implicit-gemm --print-pipeline | FileCheck %s --check-prefix=IGEMM

// The default architectures, sm_80 and sm_90, each a module of one kernel
// per loop nest; the parameters are plain pointers, and the weights (a
// 64 x 32 constant) are not initializers in the PTX.
// PTX: // ---- sm_80
// PTX: .target sm_80
// PTX: .visible .entry kiln_model_main_kernel0(
// PTX-NEXT: .param .u64 .ptr .align 1 kiln_model_main_kernel0_param_0
// PTX: .maxntid 256, 1, 1
// PTX-NOT: .global .align {{[0-9]+}} .b8
// PTX: // ---- sm_90
// PTX: .target sm_90

// REPORT: target: nvptx sm_90a, host x86_64-unknown-linux-gnu cpu=x86-64-v3
// REPORT: ptxas sm_90a kiln_model_main_kernel{{[0-9]+}}: {{[0-9]+}} registers, 0 bytes spilled, 0 bytes stack, 0 bytes shared
// REPORT: gpu: 1 architecture(s) (sm_90a), constants 8192 bytes

// Listed once each, oldest first (its PTX is the fallback).
// TWO: gpu: 2 architecture(s) (sm_80, sm_90a)

// INFO: abi version: 8
// INFO: device: cuda (NVIDIA GPU)
// INFO: host: x86_64-unknown-linux-gnu, cpu x86-64-v3
// INFO: constants: 8192 bytes
// INFO: images (2):
// INFO-NEXT: sm_90a cubin, {{[0-9]+}} bytes
// INFO-NEXT: sm_90a ptx, {{[0-9]+}} bytes
// INFO: kernels (
// INFO: kiln_model_main_kernel{{[0-9]+}}: grid [{{[0-9]+}},1,1], block [{{[0-9]+}},1,1], {{[0-9]+}} params, {{[0-9]+}} flops, mm (MatMul)

// OLD: kiln-compile: error: --gpu-arch: sm_70 is older than CUDA 13 supports (the oldest is sm_75)
// TYPO: kiln-compile: error: --gpu-arch: unknown GPU architecture 'sm_8O' (expected one of sm_75, sm_80,
// NOCUDA: kiln-compile: error: cannot find the CUDA toolkit's ptxas (looked in {{.*}}nowhere): install the CUDA toolkit, or give its root with --cuda-path
// CPU: kiln-compile: error: --gpu-emulation is for the nvptx target
// CPU-IGEMM: kiln-compile: error: --gpu-implicit-gemm is for the nvptx target
// IGEMM: kiln-gpu-tile-contractions{implicit-gemm=true

func.func @main(%a: tensor<16x64xf32> {kiln.name = "a"}) -> (tensor<16x32xf32> {kiln.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<64x32xf32> loc("w (initializer)")
  %m = graph.matmul %a, %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("mm (MatMul)")
  %y = graph.erf %m : tensor<16x32xf32> loc("act (Erf)")
  return %y : tensor<16x32xf32>
}
