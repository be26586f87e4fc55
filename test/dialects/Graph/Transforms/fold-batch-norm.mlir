// RUN: kiln-opt %s -split-input-file -kiln-graph-fold-batch-norm | FileCheck %s

// s = scale / sqrt(var + eps) = [4/2, 3/1] = [2, 3], t = bias - mean * s =
// [1 - 2, 0] = [-1, 0]: filters scaled by s, bias b * s + t.
// CHECK-LABEL: func.func @bn_into_conv
// CHECK-SAME: (%[[X:.+]]: tensor<1x1x4x4xf32>)
// CHECK-DAG: %[[W:.+]] = graph.constant dense<{{\[}}[{{\[}}[4.000000e+00]]], {{\[}}[{{\[}}9.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.+]] = graph.constant dense<[0.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK: %[[Y:.+]] = graph.conv %[[X]], %[[W]], %[[B]]
// CHECK-NOT: graph.batch_norm
// CHECK: return %[[Y]]
func.func @bn_into_conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %scale = graph.constant dense<[4.0, 3.0]> : tensor<2xf32>
  %shift = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[3.0, 0.0]> : tensor<2xf32>
  %0 = graph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %1 : tensor<1x2x4x4xf32>
}

// -----

// A Mul by one value per channel scales the filters and the (absent) bias;
// an Add by one value per channel becomes the bias.
// CHECK-LABEL: func.func @mul_add_into_conv
// CHECK-DAG: %[[W:.+]] = graph.constant dense<{{\[}}[{{\[}}[4.000000e+00]]], {{\[}}[{{\[}}-3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.+]] = graph.constant dense<5.000000e-01> : tensor<2xf32>
// CHECK: %[[Y:.+]] = graph.conv %{{.+}}, %[[W]], %[[B]]
// CHECK-NOT: graph.mul
// CHECK-NOT: graph.add
// CHECK: return %[[Y]]
func.func @mul_add_into_conv(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %m = graph.constant dense<[[[2.0]], [[-1.0]]]> : tensor<2x1x1xf32>
  %a = graph.constant dense<0.5> : tensor<1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.mul %m, %0 : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.add %1, %a : (tensor<1x2x4x4xf32>, tensor<1xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// The convolution has a second use: folding would change it for that use.
// CHECK-LABEL: func.func @conv_two_uses
// CHECK: graph.conv
// CHECK: graph.batch_norm
func.func @conv_two_uses(%x: tensor<1x1x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %p = graph.constant dense<1.0> : tensor<2xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %0, %1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// A weight or a statistic that is not a constant cannot be folded.
// CHECK-LABEL: func.func @not_constant
// CHECK-COUNT-2: graph.batch_norm
func.func @not_constant(%x: tensor<1x1x4x4xf32>, %w: tensor<2x1x1x1xf32>, %var: tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %c = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %p = graph.constant dense<1.0> : tensor<2xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.conv %x, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %3 = graph.batch_norm %2, %p, %p, %p, %var {epsilon = 1.0e-05 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %1, %3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// A constant that varies along the spatial dimensions is not per channel.
// CHECK-LABEL: func.func @not_per_channel
// CHECK: graph.conv
// CHECK: graph.mul
func.func @not_per_channel(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %m = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = graph.mul %0, %m : (tensor<1x2x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x2xf32>
  return %1 : tensor<1x2x2x2xf32>
}

// -----

// After a Gemm with B transposed ([N, K]), row n of B is scaled by s[n] and
// C becomes beta * C * s + t: s = [2, 1], t = [0 - 2, 1 - 0] = [-2, 1].
// CHECK-LABEL: func.func @bn_into_gemm
// CHECK-DAG: %[[B:.+]] = graph.constant dense<{{\[}}[2.000000e+00, 4.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[C:.+]] = graph.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: graph.gemm %{{.+}}, %[[B]], %[[C]] {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
// CHECK-NOT: graph.batch_norm
func.func @bn_into_gemm(%a: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %b = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %c = graph.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %scale = graph.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %shift = graph.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %mean = graph.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %var = graph.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %0 = graph.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %1 = graph.batch_norm %0, %scale, %shift, %mean, %var {epsilon = 1.0 : f32} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// A scale whose result is rounded (a requantisation: the convolution of
// integers, then the scale) stays outside the convolution: folded, it would
// round inside every product, and a value near a tie could round the other
// way.
// CHECK-LABEL: func.func @rounded_scale_stays
// CHECK: %[[Y:.+]] = graph.conv
// CHECK: %[[M:.+]] = graph.mul %[[Y]]
// CHECK: graph.round %[[M]]
func.func @rounded_scale_stays(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[2.0]]], [[[3.0]]]]> : tensor<2x1x1x1xf32>
  %m = graph.constant dense<[[[0.1]], [[0.3]]]> : tensor<2x1x1xf32>
  %0 = graph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1} : (tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.mul %0, %m : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.round %1 : tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// After a transposed convolution ([C, M/G, k...] filter, two groups): each
// filter column j of group g scales by the map of output channel
// g * M/G + j (BatchNorm's s = [2, 4], then the Mul's [1, 1.25]), and the
// bias becomes b * s + t ([0.5, 0] -> [1, -1] -> [1, -1.25]).
// CHECK-LABEL: func.func @conv_transpose
// CHECK-DAG: graph.constant dense<{{\[}}{{\[}}{{\[}}[2.000000e+00]]], {{\[}}{{\[}}[5.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: graph.constant dense<[1.000000e+00, -1.250000e+00]> : tensor<2xf32>
// CHECK: graph.conv_transpose {{.+}} -> tensor<1x2x4x4xf32>
// CHECK-NOT: graph.batch_norm
// CHECK-NOT: graph.mul
func.func @conv_transpose(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x4x4xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[1.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[0.5, 0.0]> : tensor<2xf32>
  %g = graph.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %beta = graph.constant dense<[0.0, -1.0]> : tensor<2xf32>
  %mean = graph.constant dense<0.0> : tensor<2xf32>
  %var = graph.constant dense<1.0> : tensor<2xf32>
  %s = graph.constant dense<[[[1.0]], [[1.25]]]> : tensor<2x1x1xf32>
  %0 = graph.conv_transpose %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64, output_padding = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.batch_norm %0, %g, %beta, %mean, %var {epsilon = 0.0 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %2 = graph.mul %1, %s : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}
