// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-promote-accumulators))' | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-promote-accumulators{contract=false}))' | FileCheck %s --check-prefix=EXACT

// A matmul's nest as convert-linalg-to-parallel-loops writes it: the
// element of %c is loaded once before the k loop, carried, stored once
// after it; the multiply and add may fuse.
// CHECK-LABEL: func.func @matmul
// CHECK: scf.parallel (%[[I:.+]], %[[J:.+]]) =
// CHECK-NEXT: %[[FIRST:.+]] = memref.load %{{.+}}[%[[I]], %[[J]]]
// CHECK-NEXT: %[[LAST:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ACC:.+]] = %[[FIRST]]) -> (f32) {
// CHECK-NOT: memref.store
// CHECK: %[[P:.+]] = arith.mulf %{{.+}}, %{{.+}} fastmath<contract> : f32
// CHECK: %[[S:.+]] = arith.addf %[[ACC]], %[[P]] fastmath<contract> : f32
// CHECK-NEXT: scf.yield %[[S]] : f32
// CHECK: memref.store %[[LAST]], %{{.+}}[%[[I]], %[[J]]]
// EXACT-LABEL: func.func @matmul
// EXACT: arith.mulf %{{.+}}, %{{.+}} : f32
// EXACT-NOT: fastmath
func.func @matmul(%a: memref<4x8xf32>, %b: memref<8x5xf32>, %c: memref<4x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c5) step (%c1, %c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %k] : memref<4x8xf32>
      %y = memref.load %b[%k, %j] : memref<8x5xf32>
      %z = memref.load %c[%i, %j] : memref<4x5xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %z, %p : f32
      memref.store %s, %c[%i, %j] : memref<4x5xf32>
    }
    scf.reduce
  }
  return
}

// A convolution's three reduction loops: promoted innermost first, so that
// the whole nest carries the accumulator. Its input and output are views of
// one workspace at disjoint byte ranges.
// CHECK-LABEL: func.func @conv_nest
// CHECK: %[[FIRST:.+]] = memref.load %[[OUT:.+]][%{{.+}}]
// CHECK-NEXT: scf.for {{.+}} iter_args({{.+}} = %[[FIRST]]) -> (f32) {
// CHECK-NEXT: scf.for {{.+}} -> (f32) {
// CHECK-NEXT: scf.for {{.+}} -> (f32) {
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %{{.+}}, %[[OUT]][%{{.+}}]
func.func @conv_nest(%ws: memref<4096xi8>, %w: memref<3x3x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c1024 = arith.constant 1024 : index
  %in = memref.view %ws[%c0][] : memref<4096xi8> to memref<3x8x8xf32>
  %out = memref.view %ws[%c1024][] : memref<4096xi8> to memref<6x6xf32>
  scf.parallel (%y, %x) = (%c0, %c0) to (%c6, %c6) step (%c1, %c1) {
    scf.for %ch = %c0 to %c3 step %c1 {
      scf.for %ky = %c0 to %c3 step %c1 {
        scf.for %kx = %c0 to %c3 step %c1 {
          %iy = arith.addi %y, %ky : index
          %ix = arith.addi %x, %kx : index
          %v = memref.load %in[%ch, %iy, %ix] : memref<3x8x8xf32>
          %f = memref.load %w[%ch, %ky, %kx] : memref<3x3x3xf32>
          %o = memref.load %out[%y, %x] : memref<6x6xf32>
          %p = arith.mulf %v, %f : f32
          %s = arith.addf %o, %p : f32
          memref.store %s, %out[%y, %x] : memref<6x6xf32>
        }
      }
    }
    scf.reduce
  }
  return
}

// Left alone: the loop also reads another element of the same buffer; the
// two views overlap; the store's index changes in the loop.
// CHECK-LABEL: func.func @not_promoted
// CHECK-NOT: iter_args
// CHECK: return
func.func @not_promoted(%ws: memref<4096xi8>, %x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %x[%c0] : memref<8xf32>
    %b = memref.load %x[%k] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %x[%c0] : memref<8xf32>
  }
  %u = memref.view %ws[%c0][] : memref<4096xi8> to memref<8xf32>
  %v = memref.view %ws[%c16][] : memref<4096xi8> to memref<8xf32>
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %u[%c0] : memref<8xf32>
    %b = memref.load %v[%k] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %u[%c0] : memref<8xf32>
  }
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %x[%k] : memref<8xf32>
    %s = arith.addf %a, %a : f32
    memref.store %s, %x[%k] : memref<8xf32>
  }
  return
}
