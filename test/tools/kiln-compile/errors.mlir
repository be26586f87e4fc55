// Bad command lines and models get one clear error line and a non-zero exit.
// RUN: not kiln-compile %s --emit=bogus -o - 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not kiln-compile %s --target=sparc -o - 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not kiln-compile %s --cpu=no-such-cpu -o %t.so 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not kiln-compile %s --features=avx2 -o %t.so 2>&1 | FileCheck %s --check-prefix=FEATURE
// RUN: not kiln-compile %s -o - 2>&1 | FileCheck %s --check-prefix=STDOUT
// RUN: not kiln-compile %s --input-shape=a=2xq -o %t.so 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not kiln-compile %s --sequence-shape=xs=2x3,4xz -o %t.so 2>&1 | FileCheck %s --check-prefix=SEQSHAPE
// RUN: not kiln-compile %s --sequence-shape=2x3 -o %t.so 2>&1 | FileCheck %s --check-prefix=SEQNAME
// RUN: not kiln-compile %S/Inputs/dynamic.mlir -o %t.so 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: not kiln-compile %t.missing.onnx -o %t.so 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not kiln-compile %s --sve-vector-bits=256 -o %t.so 2>&1 | FileCheck %s --check-prefix=SVE-X86
// RUN: not kiln-compile %s --target=aarch64 --sve-vector-bits=256 -o %t.so 2>&1 | FileCheck %s --check-prefix=SVE-NONE
// RUN: not kiln-compile %s --target=aarch64 --features=+sve --sve-vector-bits=200 -o %t.so 2>&1 | FileCheck %s --check-prefix=SVE-BITS
// Options are checked before the model is read: a bad value is the error
// even for a model that does not exist.
// RUN: not kiln-compile %t.missing.onnx --layout=nhwc -o %t.so 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not kiln-compile %t.missing.onnx --batch-split=maybe -o %t.so 2>&1 | FileCheck %s --check-prefix=SPLIT
// RUN: not kiln-compile %t.missing.onnx --conv-algorithm=fast -o %t.so 2>&1 | FileCheck %s --check-prefix=CONV
// RUN: not kiln-compile %t.missing.onnx --conv-algorithm=c1=auto -o %t.so 2>&1 | FileCheck %s --check-prefix=CONV-LAYER
// RUN: not kiln-compile %t.missing.onnx --layout-block=-3 -o %t.so 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not kiln-compile %t.missing.onnx --tuning-db=%t.missing.jsonl -o %t.so 2>&1 | FileCheck %s --check-prefix=DB
// RUN: not kiln-compile %s 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: not kiln-compile %t.missing.onnx --dynamic-dims=batch=1-8 -o %t.so 2>&1 | FileCheck %s --check-prefix=DIMS-SYNTAX
// RUN: not kiln-compile %t.missing.onnx --dynamic-dims=batch=8..2 -o %t.so 2>&1 | FileCheck %s --check-prefix=DIMS-BOUNDS
// RUN: not kiln-compile %t.missing.onnx --dynamic-dims=batch=2,batch=4 -o %t.so 2>&1 | FileCheck %s --check-prefix=DIMS-TWICE

func.func @main(%a: tensor<4xf32> {kiln.name = "a"}) -> (tensor<4xf32> {kiln.name = "y"}) {
  %0 = graph.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// EMIT: kiln-compile: error: unknown --emit value 'bogus' (expected imported, graph, linalg, kernels, llvm, llvm-ir, asm, obj, so, ptx)
// TARGET: kiln-compile: error: {{.*}}unknown target 'sparc' (expected x86-64, aarch64 or nvptx)
// CPU: kiln-compile: error: {{.*}}unknown CPU 'no-such-cpu' for target x86-64
// FEATURE: kiln-compile: error: {{.*}}feature 'avx2' must start with + or -
// STDOUT: kiln-compile: error: {{.*}}a shared object cannot be written to standard output
// SHAPE: kiln-compile: error: --input-shape: 'q' in 'a=2xq' is not a dimension
// SEQSHAPE: kiln-compile: error: --sequence-shape: '4xz' in 'xs=2x3,4xz' is not a shape
// SEQNAME: kiln-compile: error: --sequence-shape expects NAME=D0xD1,D0xD1,..., got '2x3'
// DYNAMIC: kiln-compile: error: {{.*}}input 'x' dimension 0 is symbolic: give it a size with --input-shape x=D0xD1x...
// MISSING: kiln-compile: error: {{.*}}missing.onnx
// SVE-X86: kiln-compile: error: {{.*}}--sve-vector-bits is for the aarch64 target
// SVE-NONE: kiln-compile: error: {{.*}}--sve-vector-bits needs SVE: choose an SVE CPU or add --features=+sve
// SVE-BITS: kiln-compile: error: {{.*}}--sve-vector-bits=200 is not an SVE vector length (128 to 2048, a multiple of 128)
// LAYOUT: kiln-compile: error: unknown --layout value 'nhwc' (expected auto, blocked, nc1hwc0, nchw)
// SPLIT: kiln-compile: error: unknown --batch-split value 'maybe' (expected auto, on, off)
// CONV: kiln-compile: error: unknown convolution algorithm 'fast' (expected auto, im2col, direct, winograd-2x3, winograd-4x3, winograd-6x3)
// CONV-LAYER: kiln-compile: error: bad convolution algorithm 'c1=auto' (expected LAYER=ALGORITHM with one of auto, im2col, direct, winograd-2x3, winograd-4x3, winograd-6x3 but auto)
// BLOCK: kiln-compile: error: --layout-block=-3 is not a block size
// DB: kiln-compile: error: {{.*}}missing.jsonl
// NO-OUTPUT: kiln-compile: error: no output file: give one with -o
// DIMS-SYNTAX: kiln-compile: error: --dynamic-dims expects NAME=MIN..MAX or NAME=N, got 'batch=1-8'
// DIMS-BOUNDS: kiln-compile: error: --dynamic-dims batch=8..2: the bounds must satisfy 1 <= MIN <= MAX <= 2147483647
// DIMS-TWICE: kiln-compile: error: --dynamic-dims names 'batch' twice
