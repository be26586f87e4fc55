// RUN: kiln-opt %s -split-input-file -kiln-codegen-plan-memory | FileCheck %s

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

// -----

// The parts of one buffer (one op's results, each bufferized into a buffer
// of its own and then copied into a contiguous slice of the whole) are
// placed in their slices, and the copies are gone: %p0 at the whole's
// offset, %p1 64 bytes (16 floats) further. The whole lives from the first
// part's allocation on.
// CHECK-LABEL: func.func @parts
// CHECK-SAME: kiln.workspace_size = 128 : i64
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[P0:.+]] = memref.view %{{.+}}[%[[C0]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK: %[[P1:.+]] = memref.view %{{.+}}[%[[C64]]][] : memref<128xi8> to memref<16xf32>
// CHECK: linalg.generic {{.*}} outs(%[[P0]], %[[P1]] : memref<16xf32>, memref<16xf32>)
// CHECK-NOT: memref.copy
// CHECK: memref.copy %{{.+}}, %arg1
// CHECK-NOT: memref.copy
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @parts(%in: memref<16xf32>, %out: memref<2x16xf32>) {
  %p0 = memref.alloc() : memref<16xf32>
  %p1 = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%in : memref<16xf32>) outs(%p0, %p1 : memref<16xf32>, memref<16xf32>) {
  ^bb0(%i: f32, %o0: f32, %o1: f32):
    %n = arith.negf %i : f32
    linalg.yield %i, %n : f32, f32
  }
  %whole = memref.alloc() : memref<2x16xf32>
  %s0 = memref.subview %whole[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  memref.copy %p0, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  %s1 = memref.subview %whole[1, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %p1, %s1 : memref<16xf32> to memref<16xf32, strided<[1], offset: 16>>
  memref.copy %whole, %out : memref<2x16xf32> to memref<2x16xf32>
  return
}

// -----

// Not a part: the slice is read between the part's write and the copy (its
// old contents are still needed), or it is not contiguous.
// CHECK-LABEL: func.func @not_parts
// CHECK: memref.copy %{{.+}}, %subview : memref<16xf32> to memref<16xf32, strided<[1]>>
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<16xf32> to memref<16xf32, strided<[2]>>
// CHECK: return
func.func @not_parts(%in: memref<16xf32>, %out: memref<16xf32>, %out2: memref<2x16xf32>, %out3: memref<16x2xf32>) {
  %whole = memref.alloc() : memref<2x16xf32>
  %s0 = memref.subview %whole[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  linalg.copy ins(%in : memref<16xf32>) outs(%s0 : memref<16xf32, strided<[1]>>)
  %p0 = memref.alloc() : memref<16xf32>
  linalg.copy ins(%in : memref<16xf32>) outs(%p0 : memref<16xf32>)
  linalg.copy ins(%s0 : memref<16xf32, strided<[1]>>) outs(%out : memref<16xf32>)
  memref.copy %p0, %s0 : memref<16xf32> to memref<16xf32, strided<[1]>>
  %col = memref.alloc() : memref<16x2xf32>
  %p1 = memref.alloc() : memref<16xf32>
  linalg.copy ins(%in : memref<16xf32>) outs(%p1 : memref<16xf32>)
  %c0 = memref.subview %col[0, 0] [16, 1] [1, 1] : memref<16x2xf32> to memref<16xf32, strided<[2]>>
  memref.copy %p1, %c0 : memref<16xf32> to memref<16xf32, strided<[2]>>
  memref.copy %whole, %out2 : memref<2x16xf32> to memref<2x16xf32>
  memref.copy %col, %out3 : memref<16x2xf32> to memref<16x2xf32>
  return
}

// -----

// A buffer copied whole into an output argument through reshapes (a
// contraction's result in packed panels, as buffer-results-to-out-params
// leaves it) is that argument: no workspace, no copy.
// CHECK-LABEL: func.func @into_output
// CHECK-SAME: (%[[IN:.+]]: memref<4x64xf32>, %[[OUT:.+]]: memref<4x64xf32>)
// CHECK-NOT: kiln.workspace_size
// CHECK: %[[V:.+]] = memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [4, 64], strides: [64, 1] : memref<4x64xf32> to memref<4x64xf32>
// CHECK: memref.expand_shape %[[V]]
// CHECK-NOT: memref.copy
// CHECK: return
func.func @into_output(%in: memref<4x64xf32>, %out: memref<4x64xf32>) {
  %f = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x64xf32>
  %panels = memref.expand_shape %a [[0], [1, 2]] output_shape [4, 2, 32] : memref<4x64xf32> into memref<4x2x32xf32>
  linalg.fill ins(%f : f32) outs(%panels : memref<4x2x32xf32>)
  %flat = memref.collapse_shape %panels [[0], [1, 2]] : memref<4x2x32xf32> into memref<4x64xf32>
  linalg.add ins(%in, %flat : memref<4x64xf32>, memref<4x64xf32>) outs(%flat : memref<4x64xf32>)
  memref.copy %flat, %out : memref<4x64xf32> to memref<4x64xf32>
  return
}

// -----

// Left in the workspace, with their copies: a buffer still read after its
// copy into the output, and a buffer copied into an argument that is read
// too (the two share their bytes).
// CHECK-LABEL: func.func @not_into_output
// CHECK-SAME: kiln.workspace_size = 1024 : i64
// CHECK-NOT: memref.reinterpret_cast
// CHECK: memref.copy %{{.+}}, %arg1
// CHECK: linalg.copy ins(%{{.+}} : memref<256xf32>) outs(%arg2
// CHECK: memref.copy %{{.+}}, %arg3
// CHECK: return
func.func @not_into_output(%in: memref<256xf32>, %out: memref<256xf32>, %out2: memref<256xf32>, %inout: memref<256xf32>) {
  %a = memref.alloc() : memref<256xf32>
  linalg.copy ins(%in : memref<256xf32>) outs(%a : memref<256xf32>)
  memref.copy %a, %out : memref<256xf32> to memref<256xf32>
  linalg.copy ins(%a : memref<256xf32>) outs(%out2 : memref<256xf32>)
  %b = memref.alloc() : memref<256xf32>
  linalg.copy ins(%inout : memref<256xf32>) outs(%b : memref<256xf32>)
  linalg.exp ins(%b : memref<256xf32>) outs(%b : memref<256xf32>)
  memref.copy %b, %inout : memref<256xf32> to memref<256xf32>
  return
}

// -----

// A buffer whose sizes the run chooses (kiln.dim_symbols) takes the bytes
// of its largest sizes (seq <= 64: 64 * 4 * 4 bytes and, by a product of
// bounded sizes, 64 * 64 * 4) and keeps its run-time sizes in the view.
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: %[[WS:[a-z0-9]+]]: memref<17408xi8>
// CHECK-SAME: kiln.workspace_size = 17408 : i64
// CHECK: %[[SEQ:.+]] = memref.dim %{{.+}}, %c1
// CHECK: memref.view %[[WS]][%{{.+}}][%[[SEQ]]] : memref<17408xi8> to memref<1x?x4xf32>
// CHECK: %[[SQ:.+]] = arith.muli %[[SEQ]], %[[SEQ]]
// CHECK: memref.view %[[WS]][%{{.+}}][%[[SQ]]] : memref<17408xi8> to memref<?xf32>
// CHECK-NOT: memref.alloc
func.func @symbolic(%in: memref<1x?x4xf32> {kiln.dims = ["", "seq", ""]}, %out: memref<1x?x4xf32>) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 64 : i64}]} {
  %c1 = arith.constant 1 : index
  %seq = memref.dim %in, %c1 : memref<1x?x4xf32>
  %a = memref.alloc(%seq) : memref<1x?x4xf32>
  linalg.copy ins(%in : memref<1x?x4xf32>) outs(%a : memref<1x?x4xf32>)
  %sq = arith.muli %seq, %seq : index
  %b = memref.alloc(%sq) : memref<?xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%b : memref<?xf32>)
  linalg.copy ins(%a : memref<1x?x4xf32>) outs(%out : memref<1x?x4xf32>)
  return
}

// -----

// A size without a bound (an argument's `?` that names no symbol) leaves
// the buffer allocated.
// CHECK-LABEL: func.func @unbounded
// CHECK: memref.alloc(%{{.+}}) : memref<?xf32>
func.func @unbounded(%in: memref<?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %in, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  linalg.copy ins(%in : memref<?xf32>) outs(%a : memref<?xf32>)
  linalg.copy ins(%a : memref<?xf32>) outs(%out : memref<?xf32>)
  return
}

// -----

// Through a loop that carries a buffer (blocks of rows, kiln-cpu-tile-
// symbolic-rows): its result has the shape of its initial buffer.
// CHECK-LABEL: func.func @through_loop
// CHECK-SAME: kiln.workspace_size = 1024 : i64
// CHECK-NOT: memref.alloc
func.func @through_loop(%in: memref<?x8xf32> {kiln.dims = ["seq", ""]}, %out: memref<?x8xf32>) attributes {kiln.dim_symbols = [{name = "seq", min = 1 : i64, max = 32 : i64}]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %seq = memref.dim %in, %c0 : memref<?x8xf32>
  %a = memref.alloc(%seq) : memref<?x8xf32>
  %l = scf.for %i = %c0 to %seq step %c1 iter_args(%b = %a) -> (memref<?x8xf32>) {
    scf.yield %b : memref<?x8xf32>
  }
  %n = memref.dim %l, %c0 : memref<?x8xf32>
  %c = memref.alloc(%n) : memref<?x8xf32>
  linalg.copy ins(%in : memref<?x8xf32>) outs(%c : memref<?x8xf32>)
  linalg.copy ins(%c : memref<?x8xf32>) outs(%out : memref<?x8xf32>)
  return
}
