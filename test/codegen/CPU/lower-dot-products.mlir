// RUN: kiln-opt %s -kiln-cpu-lower-dot-products="instruction=vpdpbusd lanes=16" | FileCheck %s --check-prefix=VNNI
// RUN: kiln-opt %s -kiln-cpu-lower-dot-products="instruction=vpdpbusd lanes=8" | FileCheck %s --check-prefix=AVXVNNI
// RUN: kiln-opt %s -kiln-cpu-lower-dot-products | FileCheck %s --check-prefix=PLAIN
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="instruction=usdot lanes=4" | FileCheck %s --check-prefix=USDOT
// RUN: kiln-opt %s -split-input-file -kiln-cpu-lower-dot-products="instruction=sdot lanes=4" | FileCheck %s --check-prefix=SDOT

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
