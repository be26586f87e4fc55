// RUN: kiln-opt %s -split-input-file -kiln-cpu-plan-memory | FileCheck %s

// %a and %b are alive together and get disjoint bytes; %c is allocated
// after %a's last use and reuses %a's bytes. The workspace is the last
// argument and its size is recorded on the function.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: (%{{.+}}: memref<256xf32>, %{{.+}}: memref<256xf32>, %[[WS:.+]]: memref<2048xi8>)
// CHECK-SAME: kiln.workspace_size = 2048 : i64
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: memref.view %[[WS]][%[[C0]]][] : memref<2048xi8> to memref<256xf32>
// CHECK: %[[C1024:.+]] = arith.constant 1024 : index
// CHECK: memref.view %[[WS]][%[[C1024]]][] : memref<2048xi8> to memref<256xf32>
// CHECK: %[[C0B:.+]] = arith.constant 0 : index
// CHECK: memref.view %[[WS]][%[[C0B]]][] : memref<2048xi8> to memref<128xf32>
// CHECK-NOT: memref.alloc
func.func @reuse(%in: memref<256xf32>, %out: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  linalg.copy ins(%in : memref<256xf32>) outs(%a : memref<256xf32>)
  %b = memref.alloc() : memref<256xf32>
  linalg.copy ins(%a : memref<256xf32>) outs(%b : memref<256xf32>)
  %c = memref.alloc() : memref<128xf32>
  %bs = memref.subview %b[0] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1]>>
  linalg.copy ins(%bs : memref<128xf32, strided<[1]>>) outs(%c : memref<128xf32>)
  %os = memref.subview %out[0] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1]>>
  linalg.copy ins(%c : memref<128xf32>) outs(%os : memref<128xf32, strided<[1]>>)
  return
}

// -----

// A buffer used inside a loop lives until the loop ends; a returned buffer
// and a dynamic one are left alone.
// CHECK-LABEL: func.func @loops_and_escapes
// CHECK-SAME: memref<64xi8>
// CHECK: memref.view
// CHECK: %[[R:.+]] = memref.alloc() : memref<4xf32>
// CHECK: memref.alloc(%{{.+}}) : memref<?xf32>
// CHECK: return %[[R]]
func.func @loops_and_escapes(%n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<16xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %a[%c0] : memref<16xf32>
  }
  %r = memref.alloc() : memref<4xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  return %r : memref<4xf32>
}

// -----

// A boolean takes one byte in memory, not one bit.
// CHECK-LABEL: func.func @booleans
// CHECK-SAME: memref<128xi8>
func.func @booleans(%in: memref<100xi1>, %out: memref<100xi1>) {
  %a = memref.alloc() : memref<100xi1>
  linalg.copy ins(%in : memref<100xi1>) outs(%a : memref<100xi1>)
  linalg.copy ins(%a : memref<100xi1>) outs(%out : memref<100xi1>)
  return
}

// -----

// A loop that carries a buffer returns an alias of it: the buffer lives as
// long as the loop's result is used, so %b must not take %a's bytes.
// CHECK-LABEL: func.func @carried
// CHECK-SAME: memref<512xi8>
// CHECK: memref.view %{{.+}}[%{{.+}}][] : memref<512xi8> to memref<64xf32>
// CHECK: scf.for
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: memref.view %{{.+}}[%[[C256]]][] : memref<512xi8> to memref<64xf32>
func.func @carried(%in: memref<64xf32>, %out: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<64xf32>
  linalg.copy ins(%in : memref<64xf32>) outs(%a : memref<64xf32>)
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> (memref<64xf32>) {
    scf.yield %x : memref<64xf32>
  }
  %b = memref.alloc() : memref<64xf32>
  linalg.copy ins(%in : memref<64xf32>) outs(%b : memref<64xf32>)
  linalg.add ins(%r, %b : memref<64xf32>, memref<64xf32>) outs(%out : memref<64xf32>)
  return
}
