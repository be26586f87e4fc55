// RUN: kiln-opt %s -split-input-file --kiln-graph-widen-half | FileCheck %s

// The signature keeps f16: the argument is widened where the function
// starts, the result rounded where it returns; the ops and the inline
// constant between them are f32.
// CHECK-LABEL: func.func @ops_between
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: %[[W:.+]] = graph.cast %[[X]] : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK: %[[C:.+]] = graph.constant dense<[1.000000e+00, 5.000000e-01, -2.500000e-01]> : tensor<3xf32>
// CHECK: %[[A:.+]] = graph.add %[[W]], %[[C]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: %[[R:.+]] = graph.relu %[[A]] : tensor<2x3xf32>
// CHECK: %[[N:.+]] = graph.cast %[[R]] : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK: return %[[N]] : tensor<2x3xf16>
func.func @ops_between(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %c = graph.constant dense<[1.0, 0.5, -0.25]> : tensor<3xf16>
  %0 = graph.add %x, %c : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %1 = graph.relu %0 : tensor<2x3xf16>
  return %1 : tensor<2x3xf16>
}

// -----

// A weight held as a blob (as the importer holds initializers) becomes an
// f32 blob: 1.0, -2.0 (f16 0x3C00, 0xC000). bf16 is left alone.
// CHECK-LABEL: func.func @blobs
// CHECK: %[[A:.+]] = graph.constant dense_resource<f16_blob_f32> : tensor<2xf32>
// CHECK: %[[M:.+]] = graph.mul %[[A]], %[[A]] : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: graph.relu %{{.+}} : tensor<2xbf16>
// CHECK: graph.cast %[[M]] : (tensor<2xf32>) -> tensor<2xf16>
// CHECK: f16_blob_f32: "0x040000000000803F000000C0"
func.func @blobs(%b: tensor<2xbf16>) -> (tensor<2xf16>, tensor<2xbf16>) {
  %a = graph.constant dense_resource<f16_blob> : tensor<2xf16>
  %0 = graph.mul %a, %a : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %1 = graph.relu %b : tensor<2xbf16>
  return %0, %1 : tensor<2xf16>, tensor<2xbf16>
}

{-#
  dialect_resources: {
    builtin: {
      f16_blob: "0x02000000003C00C0"
    }
  }
#-}

// -----

// A cast to f16 inside the model still rounds: it stays, and its result is
// widened again after it. A cast from f16 reads the widened value.
// CHECK-LABEL: func.func @casts
// CHECK: %[[W:.+]] = graph.cast %{{.+}} : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: %[[I:.+]] = graph.cast %[[W]] : (tensor<4xf32>) -> tensor<4xi32>
// CHECK: %[[R:.+]] = graph.cast %{{.+}} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: %[[B:.+]] = graph.cast %[[R]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: graph.neg %[[B]] : tensor<4xf32>
func.func @casts(%h: tensor<4xf16>, %f: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf16>) {
  %0 = graph.cast %h : (tensor<4xf16>) -> tensor<4xi32>
  %1 = graph.cast %f : (tensor<4xf32>) -> tensor<4xf16>
  %2 = graph.neg %1 : tensor<4xf16>
  return %0, %2 : tensor<4xi32>, tensor<4xf16>
}

// -----

// A bitcast reads and writes the 16-bit patterns: its operand is narrowed
// before it, and a result of f16 widened after it.
// CHECK-LABEL: func.func @bitcasts
// CHECK: %[[A:.+]] = graph.abs %{{.+}} : tensor<4xf32>
// CHECK: %[[N:.+]] = graph.cast %[[A]] : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: graph.bitcast %[[N]] : (tensor<4xf16>) -> tensor<4xi16>
// CHECK: %[[H:.+]] = graph.bitcast %{{.+}} : (tensor<4xi16>) -> tensor<4xf16>
// CHECK: %[[W:.+]] = graph.cast %[[H]] : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: graph.abs %[[W]] : tensor<4xf32>
func.func @bitcasts(%h: tensor<4xf16>, %i: tensor<4xi16>) -> (tensor<4xi16>, tensor<4xf16>) {
  %0 = graph.abs %h : tensor<4xf16>
  %1 = graph.bitcast %0 : (tensor<4xf16>) -> tensor<4xi16>
  %2 = graph.bitcast %i : (tensor<4xi16>) -> tensor<4xf16>
  %3 = graph.abs %2 : tensor<4xf16>
  return %1, %3 : tensor<4xi16>, tensor<4xf16>
}

// -----

// A model without half-precision tensors is left as it is.
// CHECK-LABEL: func.func @f32_only
// CHECK-NEXT: graph.relu %{{.+}} : tensor<4xf32>
// CHECK-NEXT: return
func.func @f32_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
