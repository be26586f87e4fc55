// RUN: kiln-opt %s -kiln-codegen-flatten-globals | FileCheck %s

// A 4-D constant becomes a 1-D global read through an expand_shape view;
// a 1-D global, a global without a value and a scalar are left alone.
// CHECK: memref.global "private" constant @w : memref<8xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]>
// CHECK: memref.global "private" constant @v : memref<3xf32> = dense<5.000000e-01>
// CHECK: memref.global "private" @buffer : memref<2x2xf32> = uninitialized
memref.global "private" constant @w : memref<2x2x2x1xf32> = dense<[[[[1.0], [2.0]], [[3.0], [4.0]]], [[[5.0], [6.0]], [[7.0], [8.0]]]]>
memref.global "private" constant @v : memref<3xf32> = dense<0.5>
memref.global "private" @buffer : memref<2x2xf32> = uninitialized

// CHECK-LABEL: func.func @read
// CHECK: %[[FLAT:.+]] = memref.get_global @w : memref<8xf32>
// CHECK: %[[VIEW:.+]] = memref.expand_shape %[[FLAT]] {{\[}}[0, 1, 2, 3]] output_shape [2, 2, 2, 1] : memref<8xf32> into memref<2x2x2x1xf32>
// CHECK: memref.load %[[VIEW]]
// CHECK: memref.get_global @v : memref<3xf32>
// CHECK: memref.get_global @buffer : memref<2x2xf32>
func.func @read(%i: index) -> (f32, f32, f32) {
  %w = memref.get_global @w : memref<2x2x2x1xf32>
  %a = memref.load %w[%i, %i, %i, %i] : memref<2x2x2x1xf32>
  %v = memref.get_global @v : memref<3xf32>
  %b = memref.load %v[%i] : memref<3xf32>
  %buf = memref.get_global @buffer : memref<2x2xf32>
  %c = memref.load %buf[%i, %i] : memref<2x2xf32>
  return %a, %b, %c : f32, f32, f32
}
