// RUN: kiln-opt %s -kiln-cpu-lower-dot-products="instruction=vpdpbusd lanes=16" | FileCheck %s --check-prefix=VNNI
// RUN: kiln-opt %s -kiln-cpu-lower-dot-products="instruction=vpdpbusd lanes=8" | FileCheck %s --check-prefix=AVXVNNI
// RUN: kiln-opt %s -kiln-cpu-lower-dot-products | FileCheck %s --check-prefix=PLAIN
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="instruction=usdot lanes=4" | FileCheck %s --check-prefix=USDOT
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="instruction=sdot lanes=4" | FileCheck %s --check-prefix=SDOT
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="bf16-instruction=vdpbf16ps bf16-lanes=16" | FileCheck %s --check-prefix=BF16X86
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="bf16-instruction=bfdot bf16-lanes=4" | FileCheck %s --check-prefix=BF16ARM
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products | FileCheck %s --check-prefix=BF16PLAIN

// With AVX-512 VNNI (16 lanes), the 16-lane dot product is vpdpbusd on
// byte vectors (LLVM 22's signature); the 8-lane one has no instruction of
// its width and is vector arithmetic. With AVX-VNNI (8 lanes), the other
// way round; with none, both are arithmetic.
// VNNI-LABEL: func.func @dots
// VNNI: %[[A:.+]] = vector.bitcast %{{.+}} : vector<16xi32> to vector<64xi8>
// VNNI: %[[B:.+]] = vector.bitcast %{{.+}} : vector<16xi32> to vector<64xi8>
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.+}}, %[[A]], %[[B]]) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// VNNI: arith.extui %{{.+}} : vector<32xi8> to vector<32xi32>
// VNNI-NOT: llvm.call_intrinsic

// AVXVNNI-LABEL: func.func @dots
// AVXVNNI-NOT: vpdpbusd.512
// AVXVNNI: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%{{.+}}, %{{.+}}, %{{.+}}) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>

// Each lane: acc + sum over its four bytes of zext(lhs) * sext(rhs), in one
// dimension (it runs after the vector lowering).
// PLAIN-LABEL: func.func @dots
// PLAIN-NOT: llvm.call_intrinsic
// PLAIN: %[[L:.+]] = arith.extui %{{.+}} : vector<64xi8> to vector<64xi32>
// PLAIN: %[[R:.+]] = arith.extsi %{{.+}} : vector<64xi8> to vector<64xi32>
// PLAIN: %[[P:.+]] = arith.muli %[[L]], %[[R]] : vector<64xi32>
// PLAIN: %[[B0:.+]] = vector.shuffle %[[P]], %[[P]] [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>, vector<64xi32>
// PLAIN: %[[S0:.+]] = arith.addi %{{.+}}, %[[B0]] : vector<16xi32>
// PLAIN: vector.shuffle %[[P]], %[[P]] [1, 5,
// PLAIN: vector.shuffle %[[P]], %[[P]] [2, 6,
// PLAIN: vector.shuffle %[[P]], %[[P]] [3, 7,
func.func @dots(%acc: vector<16xi32>, %a: vector<16xi32>, %b: vector<16xi32>,
                %acc8: vector<8xi32>, %a8: vector<8xi32>, %b8: vector<8xi32>)
    -> (vector<16xi32>, vector<8xi32>) {
  %0 = kiln.dot_i8 %acc, %a, %b : vector<16xi32>
  %1 = kiln.dot_i8 %acc8, %a8, %b8 : vector<8xi32>
  return %0, %1 : vector<16xi32>, vector<8xi32>
}

// -----

// AArch64: i8mm's usdot is the op itself (u8 x s8); dotprod's sdot (s8 x
// s8) takes the unsigned bytes less 128 (top bits flipped) and adds back
// 128 times the weights' sum, -sdot(0, splat(-128), w).
// USDOT-LABEL: func.func @neon
// USDOT: llvm.call_intrinsic "llvm.aarch64.neon.usdot.v4i32.v16i8"(%{{.+}}, %{{.+}}, %{{.+}}) : (vector<4xi32>, vector<16xi8>, vector<16xi8>) -> vector<4xi32>
// SDOT-LABEL: func.func @neon
// SDOT-DAG: %[[FLIP:.+]] = arith.constant dense<-128> : vector<16xi8>
// SDOT-DAG: %[[ZEROS:.+]] = arith.constant dense<0> : vector<4xi32>
// SDOT: %[[A:.+]] = vector.bitcast %{{.+}} : vector<4xi32> to vector<16xi8>
// SDOT: %[[SHIFTED:.+]] = arith.xori %[[A]], %[[FLIP]] : vector<16xi8>
// SDOT: %[[B:.+]] = vector.bitcast %{{.+}} : vector<4xi32> to vector<16xi8>
// SDOT: %[[DOT:.+]] = llvm.call_intrinsic "llvm.aarch64.neon.sdot.v4i32.v16i8"(%{{.+}}, %[[SHIFTED]], %[[B]])
// SDOT: %[[CORRECTION:.+]] = llvm.call_intrinsic "llvm.aarch64.neon.sdot.v4i32.v16i8"(%[[ZEROS]], %[[FLIP]], %[[B]])
// SDOT: arith.subi %[[DOT]], %[[CORRECTION]] : vector<4xi32>
func.func @neon(%acc: vector<4xi32>, %a: vector<4xi32>, %b: vector<4xi32>) -> vector<4xi32> {
  %0 = kiln.dot_i8 %acc, %a, %b : vector<4xi32>
  return %0 : vector<4xi32>
}

// -----

// bf16 pairs: vdpbf16ps (x86 AVX512-BF16, 16 lanes) and bfdot (AArch64
// BF16, 4 lanes) on the halves; elsewhere both halves extended to f32,
// multiplied, and the even and odd products summed onto the accumulators.
// BF16X86-LABEL: func.func @bf16
// BF16X86: %[[A:.+]] = vector.bitcast %{{.+}} : vector<16xi32> to vector<32xbf16>
// BF16X86: %[[B:.+]] = vector.bitcast %{{.+}} : vector<16xi32> to vector<32xbf16>
// BF16X86: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.+}}, %[[A]], %[[B]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// BF16ARM-LABEL: func.func @bf16
// BF16ARM: arith.extf %{{.+}} : vector<32xbf16> to vector<32xf32>
// BF16ARM: llvm.call_intrinsic "llvm.aarch64.neon.bfdot.v4f32.v8bf16"(%{{.+}}, %{{.+}}, %{{.+}}) : (vector<4xf32>, vector<8xbf16>, vector<8xbf16>) -> vector<4xf32>
// BF16PLAIN-LABEL: func.func @bf16
// BF16PLAIN-NOT: llvm.call_intrinsic
// BF16PLAIN: %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} : vector<32xf32>
// BF16PLAIN: %[[EVEN:.+]] = vector.shuffle %[[P]], %[[P]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// BF16PLAIN: arith.addf %{{.+}}, %[[EVEN]] : vector<16xf32>
// BF16PLAIN: vector.shuffle %[[P]], %[[P]] [1, 3, 5,
func.func @bf16(%acc: vector<16xf32>, %a: vector<16xi32>, %b: vector<16xi32>,
                %acc4: vector<4xf32>, %a4: vector<4xi32>, %b4: vector<4xi32>)
    -> (vector<16xf32>, vector<4xf32>) {
  %0 = kiln.dot_bf16 %acc, %a, %b : vector<16xi32> -> vector<16xf32>
  %1 = kiln.dot_bf16 %acc4, %a4, %b4 : vector<4xi32> -> vector<4xf32>
  return %0, %1 : vector<16xf32>, vector<4xf32>
}
