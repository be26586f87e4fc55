// RUN: kiln-opt %s -split-input-file -kiln-codegen-fuse-elementwise | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A chain whose intermediate nothing else reads becomes one loop nest.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
func.func @chain(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  return %relu : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A residual block's output, read by the next block and by its residual sum,
// is computed once: the sum reads it from memory instead of recomputing it
// (which also kept the sum from fusing into the convolution before it).
// CHECK-LABEL: func.func @shared
// CHECK: %[[OUT:.+]] = linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: %[[NEXT:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[OUT]] :
// CHECK-NOT: arith.maximumf
// CHECK: arith.addf
// CHECK-NOT: arith.maximumf
// CHECK: return %[[OUT]], %[[NEXT]]
func.func @shared(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %c: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %out = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x16xf32>
  %next = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %out : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %out, %next : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A broadcast costs no memory traffic to compute again: it is fused into
// each of its readers, and the broadcast tensor is never made.
// CHECK-LABEL: func.func @broadcast
// CHECK-COUNT-2: linalg.generic {{.*}} ins(%{{.+}}, %{{.+}} : tensor<4x16xf32>, tensor<16xf32>)
// CHECK-NOT: linalg.generic
func.func @broadcast(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %bias: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %e = tensor.empty() : tensor<4x16xf32>
  %wide = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x16xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %wide : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %wide : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.mulf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A quantised block's output (integers in [-3, 252]) that a packed integer
// product reads as bytes (kiln.to_bytes) and the next residual sum reads
// in f32: the sum reads the bytes too, converting them in its body, so the
// block's producer fuses with the conversion and writes bytes alone.
// CHECK-LABEL: func.func @bytes_read_once
// CHECK: %[[LOW:.+]] = arith.constant -3.000000e+00 : f32
// CHECK: %[[BYTES:.+]] = linalg.generic {{.*}} ins(%{{.+}} : tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xi8>)
// CHECK: math.roundeven
// CHECK: arith.fptoui
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%{{.+}}, %[[BYTES]] : tensor<4x16xf32>, tensor<4x16xi8>)
// CHECK-NEXT: ^bb0(%{{.+}}: f32, %[[B:.+]]: i8, %{{.+}}: f32):
// CHECK-NEXT: %[[W:.+]] = arith.uitofp %[[B]] : i8 to f32
// CHECK-NEXT: %[[X:.+]] = arith.addf %[[W]], %[[LOW]] : f32
// CHECK-NEXT: arith.addf %{{.+}}, %[[X]] : f32
// CHECK: return %[[BYTES]], %[[SUM]]
func.func @bytes_read_once(%a: tensor<4x16xf32>, %r: tensor<4x16xf32>) -> (tensor<4x16xi8>, tensor<4x16xf32>) {
  %low = arith.constant -3.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x16xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = math.roundeven %x : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %bytes = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<4x16xf32>) outs(%e8 : tensor<4x16xi8>) attrs = {kiln.to_bytes = -3 : i64} {
  ^bb0(%x: f32, %o: i8):
    %s = arith.subf %x, %low : f32
    %b = arith.fptoui %s : f32 to i8
    linalg.yield %b : i8
  } -> tensor<4x16xi8>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %q : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %bytes, %sum : tensor<4x16xi8>, tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A reader that comes before the conversion keeps reading the f32 value:
// the bytes do not exist yet there.
// CHECK-LABEL: func.func @bytes_after_a_reader
// CHECK: %[[Q:.+]] = linalg.generic {{.*}} outs(%{{.+}} : tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.+}}, %[[Q]] : tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[Q]] : tensor<4x16xf32>) outs(%{{.+}} : tensor<4x16xi8>)
func.func @bytes_after_a_reader(%a: tensor<4x16xf32>, %r: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xi8>) {
  %low = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %e8 = tensor.empty() : tensor<4x16xi8>
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = math.roundeven %x : f32
    linalg.yield %v : f32
  } -> tensor<4x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %q : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  %bytes = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<4x16xf32>) outs(%e8 : tensor<4x16xi8>) attrs = {kiln.to_bytes = 0 : i64} {
  ^bb0(%x: f32, %o: i8):
    %s = arith.subf %x, %low : f32
    %b = arith.fptoui %s : f32 to i8
    linalg.yield %b : i8
  } -> tensor<4x16xi8>
  return %sum, %bytes : tensor<4x16xf32>, tensor<4x16xi8>
}
