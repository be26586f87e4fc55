// RUN: kiln-opt %s -split-input-file -kiln-cpu-prefetch-weights | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-cpu-prefetch-weights=distance=0 | FileCheck %s --check-prefix=OFF

// A dot product's weights (a cache line) read in a loop from a constant of
// 128 KB, through an expand_shape and a subview (a tile's panel): before
// the read, a prefetch of the element 4096 bytes further along the weight
// (its position: the view's offset plus the index along the view's
// stride), clamped to the weight's last element, on the weight made one
// dimension.
// CHECK-LABEL: func.func @panel
// CHECK: %[[G:.+]] = memref.get_global @weights : memref<2x32x32x64xi8>
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %[[G]] {{\[}}[0, 1, 2, 3]] : memref<2x32x32x64xi8> into memref<131072xi8>
// CHECK: scf.for %[[Q:.+]] =
// CHECK: %[[BASE:.+]], %[[OFFSET:.+]], %[[SIZE:.+]], %[[STRIDE:.+]] = memref.extract_strided_metadata %[[VIEW:.+]] :
// CHECK: %[[AT:.+]] = arith.addi %[[OFFSET]], %{{.+}} : index
// CHECK: %[[AHEAD:.+]] = arith.addi %[[AT]], %c4096 : index
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[AHEAD]], %c131071 : index
// CHECK: memref.prefetch %[[FLAT]][%[[CLAMPED]]], read, locality<3>, data : memref<131072xi8>
// CHECK: vector.transfer_read %[[VIEW]]
// CHECK: kiln.dot_i8
// OFF-LABEL: func.func @panel
// OFF-NOT: memref.prefetch
memref.global "private" constant @weights : memref<2x32x32x64xi8> = dense<1>
func.func @panel(%acc: vector<16xi32>, %a: vector<16xi32>, %p: index) -> vector<16xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0 : i8
  %g = memref.get_global @weights : memref<2x32x32x64xi8>
  %r = scf.for %q = %c0 to %c16 step %c1 iter_args(%x = %acc) -> vector<16xi32> {
    %s = memref.subview %g[%p, %q, 0, 0] [1, 1, 1, 64] [1, 1, 1, 1] : memref<2x32x32x64xi8> to memref<64xi8, strided<[1], offset: ?>>
    %w = vector.transfer_read %s[%c0], %pad {in_bounds = [true]} : memref<64xi8, strided<[1], offset: ?>>, vector<64xi8>
    %wb = vector.bitcast %w : vector<64xi8> to vector<16xi32>
    %y = kiln.dot_i8 %x, %a, %wb : vector<16xi32>
    scf.yield %y : vector<16xi32>
  }
  return %r : vector<16xi32>
}

// -----

// An f32 tile's panel row (32 floats, two cache lines) in its reduction
// loop: the prefetch is 1024 elements (4096 bytes) ahead.
// CHECK-LABEL: func.func @f32_panel
// CHECK: memref.get_global @panels : memref<65536xf32>
// CHECK: scf.for
// CHECK: %[[AHEAD:.+]] = arith.addi %{{.+}}, %c1024 : index
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[AHEAD]], %c65535 : index
// CHECK: memref.prefetch %{{.+}}[%[[CLAMPED]]], read, locality<3>, data : memref<65536xf32>
// CHECK: vector.transfer_read
memref.global "private" constant @panels : memref<65536xf32> = dense<1.0>
func.func @f32_panel(%acc: vector<32xf32>, %a: vector<32xf32>, %p: index) -> vector<32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %pad = arith.constant 0.0 : f32
  %g = memref.get_global @panels : memref<65536xf32>
  %e = memref.expand_shape %g [[0, 1, 2]] output_shape [4, 512, 32] : memref<65536xf32> into memref<4x512x32xf32>
  %r = scf.for %k = %c0 to %c512 step %c1 iter_args(%x = %acc) -> vector<32xf32> {
    %w = vector.transfer_read %e[%p, %k, %c0], %pad {in_bounds = [true]} : memref<4x512x32xf32>, vector<32xf32>
    %y = vector.fma %a, %w, %x : vector<32xf32>
    scf.yield %y : vector<32xf32>
  }
  return %r : vector<32xf32>
}

// -----

// Left alone: weights of 64 KB or less (they stay in L1 and L2), weights
// that are not a constant (a function argument), a read outside a loop,
// and a read under a cache line.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: memref.prefetch
// CHECK: return
memref.global "private" constant @small : memref<1024x64xi8> = dense<1>
memref.global "private" constant @large : memref<4096x64xi8> = dense<1>
func.func @left_alone(%acc: vector<16xi32>, %a: vector<16xi32>, %arg: memref<4096x64xi8>, %i: index) -> vector<16xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %pad = arith.constant 0 : i8
  %g = memref.get_global @small : memref<1024x64xi8>
  %l = memref.get_global @large : memref<4096x64xi8>
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%x = %acc) -> vector<16xi32> {
    %w = vector.transfer_read %g[%k, %c0], %pad {in_bounds = [true]} : memref<1024x64xi8>, vector<64xi8>
    %wb = vector.bitcast %w : vector<64xi8> to vector<16xi32>
    %y = kiln.dot_i8 %x, %a, %wb : vector<16xi32>
    %v = vector.transfer_read %arg[%k, %c0], %pad {in_bounds = [true]} : memref<4096x64xi8>, vector<64xi8>
    %vb = vector.bitcast %v : vector<64xi8> to vector<16xi32>
    %z = kiln.dot_i8 %y, %a, %vb : vector<16xi32>
    %n = vector.transfer_read %l[%k, %c0], %pad {in_bounds = [true]} : memref<4096x64xi8>, vector<16xi8>
    %nb = vector.bitcast %n : vector<16xi8> to vector<4xi32>
    %nz = vector.extract %nb[0] : i32 from vector<4xi32>
    %ns = vector.broadcast %nz : i32 to vector<16xi32>
    %s = arith.addi %z, %ns : vector<16xi32>
    scf.yield %s : vector<16xi32>
  }
  %o = vector.transfer_read %l[%i, %c0], %pad {in_bounds = [true]} : memref<4096x64xi8>, vector<64xi8>
  %ob = vector.bitcast %o : vector<64xi8> to vector<16xi32>
  %out = kiln.dot_i8 %r, %a, %ob : vector<16xi32>
  return %out : vector<16xi32>
}
