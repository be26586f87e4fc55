// RUN: kiln-opt %s -kiln-graph-mark-integer-contractions="bf16=true" | FileCheck %s

// --precision=bf16: the float products with constant weights take
// kiln.bf16 (a Gemm's transposed constant folded), the integer ones keep
// their int8 mark, a product of two activations stays f32.
// CHECK-LABEL: func.func @precision
// CHECK: graph.blocked_conv {{.*}}kiln.bf16
// CHECK: %[[W:.+]] = graph.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK: graph.fused_matmul %{{.+}}, %[[W]], %{{.+}} activation none {kiln.bf16}
// CHECK: graph.matmul {{.*}}{kiln.integer_input = array<i64: 0, 255>}
// CHECK: graph.matmul %{{.+}}, %{{.+}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
func.func @precision(%x: tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, %m: tensor<2x2xf32>, %q: tensor<2x2xui8>)
    -> (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %w = graph.constant dense<0.25> : tensor<1x1x1x1x4x4xf32>
  %wt = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %y = graph.blocked_conv %x, %w activation none {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<1x1x1x1x4x4xf32>) -> tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>
  %t = graph.transpose %wt {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = graph.fused_matmul %m, %t, %b activation none : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %a = graph.cast %q : (tensor<2x2xui8>) -> tensor<2x2xf32>
  %i = graph.matmul %a, %wt : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %p = graph.matmul %m, %m : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y, %g, %i, %p : tensor<1x1x4x4x4xf32, #graph.blocked<c = 4>>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
