// RUN: kiln-opt %s --kiln-gpu-externalize-constants -allow-unregistered-dialect | FileCheck %s

// Two constants become one segment at offsets 0 and 256 (each aligned to
// 256 bytes); the entry reads them through its new last argument.
// CHECK: memref.global "private" constant @kiln_constants : memref<512xi8> = dense<"0x0000803F0000803F0000803F0000803F{{0+}}02000000030000000000
// CHECK-NOT: memref.global "private" constant @w
// CHECK-LABEL: func.func @kiln_model_main(
// CHECK-SAME: %[[X:.+]]: memref<4xf32>, %[[Y:.+]]: memref<4xf32>, %[[C:.+]]: memref<512xi8>)
// CHECK-SAME: kiln.constants_size = 512 : i64
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: memref.view %[[C]][%[[C0]]][] : memref<512xi8> to memref<4xf32>
// CHECK-DAG: memref.view %[[C]][%[[C256]]][] : memref<512xi8> to memref<2xi32>
memref.global "private" constant @w : memref<4xf32> = dense<1.0>
memref.global "private" constant @i : memref<2xi32> = dense<[2, 3]>
func.func @kiln_model_main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %w = memref.get_global @w : memref<4xf32>
  %i = memref.get_global @i : memref<2xi32>
  "test.use"(%w, %i) : (memref<4xf32>, memref<2xi32>) -> ()
  return
}
