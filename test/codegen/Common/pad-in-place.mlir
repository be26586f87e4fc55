// RUN: kiln-opt %s -split-input-file -kiln-codegen-pad-in-place | FileCheck %s

// A pad of what an elementwise op (a Relu epilogue) computes: the padded
// tensor is filled with the padding value, and the Relu writes into its
// interior, so nothing is copied. The fill carries the interior, which
// kiln-codegen-fill-borders leaves out of it.
// CHECK-LABEL: func.func @relu_then_pad
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x2x10x10x8xf32>
// CHECK: %[[F:.+]] = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 1, 1, 0, 1, 2, 8, 8, 8>} ins(%{{.+}} : f32) outs(%[[E]] : tensor<1x2x10x10x8xf32>)
// CHECK: %[[I:.+]] = tensor.extract_slice %[[F]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} outs(%[[I]] : tensor<1x2x8x8x8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[P:.+]] = tensor.insert_slice %[[R]] into %[[F]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1]
// CHECK: return %[[P]]
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @relu_then_pad(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x10x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x8x8x8xf32>) outs(%e : tensor<1x2x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8x8x8xf32>
  %p = tensor.pad %r low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<1x2x8x8x8xf32> to tensor<1x2x10x10x8xf32>
  return %p : tensor<1x2x10x10x8xf32>
}

// -----

// A source that is a function argument is copied into the filled tensor
// (an insert_slice); the padding value of a max pool (-inf) is kept.
// CHECK-LABEL: func.func @copied
// CHECK: %[[F:.+]] = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 1, 1, 0, 1, 1, 4, 4, 8>} ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x1x6x6x8xf32>)
// CHECK: tensor.insert_slice %{{.+}} into %[[F]][0, 0, 1, 1, 0] [1, 1, 4, 4, 8] [1, 1, 1, 1, 1]
// CHECK-NOT: tensor.pad
func.func @copied(%x: tensor<1x1x4x4x8xf32>) -> tensor<1x1x6x6x8xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %ninf : f32
  } : tensor<1x1x4x4x8xf32> to tensor<1x1x6x6x8xf32>
  return %p : tensor<1x1x6x6x8xf32>
}

// -----

// A Winograd input: the convolution's padding, then more zeros to whole
// tiles. The two pads become one (low 1, high 1 + 1), written in place: the
// Relu writes into the interior of a single filled tensor, with no copy of
// an inner padded tensor into the outer one.
// CHECK-LABEL: func.func @pad_of_pad
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x2x11x11x8xf32>
// CHECK: %[[F:.+]] = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 1, 1, 0, 1, 2, 8, 8, 8>} ins(%{{.+}} : f32) outs(%[[E]] : tensor<1x2x11x11x8xf32>)
// CHECK: %[[I:.+]] = tensor.extract_slice %[[F]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} outs(%[[I]] : tensor<1x2x8x8x8xf32>)
// CHECK: %[[P:.+]] = tensor.insert_slice %[[R]] into %[[F]][0, 0, 1, 1, 0] [1, 2, 8, 8, 8] [1, 1, 1, 1, 1]
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.fill
// CHECK: return %[[P]]
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @pad_of_pad(%x: tensor<1x2x8x8x8xf32>) -> tensor<1x2x11x11x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x2x8x8x8xf32>) outs(%e : tensor<1x2x8x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x8x8x8xf32>
  %p = tensor.pad %r low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<1x2x8x8x8xf32> to tensor<1x2x10x10x8xf32>
  %zero2 = arith.constant 0.0 : f32
  %q = tensor.pad %p low[0, 0, 0, 0, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero2 : f32
  } : tensor<1x2x10x10x8xf32> to tensor<1x2x11x11x8xf32>
  return %q : tensor<1x2x11x11x8xf32>
}

// -----

// Pads by different values stay two pads.
// CHECK-LABEL: func.func @pad_of_pad_other_value
// CHECK-COUNT-2: linalg.fill
func.func @pad_of_pad_other_value(%x: tensor<2x8xf32>) -> tensor<4x10xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[1, 1] high[0, 0] {
  ^bb0(%i0: index, %i1: index):
    tensor.yield %zero : f32
  } : tensor<2x8xf32> to tensor<3x9xf32>
  %q = tensor.pad %p low[0, 0] high[1, 1] {
  ^bb0(%i0: index, %i1: index):
    tensor.yield %ninf : f32
  } : tensor<3x9xf32> to tensor<4x10xf32>
  return %q : tensor<4x10xf32>
}

// -----

// A Relu that something else reads too (a fire module's 1x1 expand beside
// its padded 3x3) still writes into the padded tensor's interior; the other
// reader reads its result there.
// CHECK-LABEL: func.func @relu_read_twice
// CHECK: %[[F:.+]] = linalg.fill {kiln.pad_interior = array<i64: 0, 0, 1, 1, 0, 1, 1, 4, 4, 8>} ins(%{{.+}} : f32) outs(%{{.+}} : tensor<1x1x6x6x8xf32>)
// CHECK: %[[I:.+]] = tensor.extract_slice %[[F]][0, 0, 1, 1, 0] [1, 1, 4, 4, 8] [1, 1, 1, 1, 1]
// CHECK: %[[R:.+]] = linalg.generic {{.*}} outs(%[[I]] : tensor<1x1x4x4x8xf32>)
// CHECK: %[[P:.+]] = tensor.insert_slice %[[R]] into %[[F]]
// CHECK: return %[[P]], %[[R]]
#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
func.func @relu_read_twice(%x: tensor<1x1x4x4x8xf32>) -> (tensor<1x1x6x6x8xf32>, tensor<1x1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x1x4x4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x4x4x8xf32>) outs(%e : tensor<1x1x4x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x1x4x4x8xf32>
  %p = tensor.pad %r low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  } : tensor<1x1x4x4x8xf32> to tensor<1x1x6x6x8xf32>
  return %p, %r : tensor<1x1x6x6x8xf32>, tensor<1x1x4x4x8xf32>
}
