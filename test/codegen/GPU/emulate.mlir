// RUN: kiln-opt %s --kiln-gpu-emulate | FileCheck %s

// The kernel's host twin takes its buffer, then the block's and the
// thread's indices (x, y, z); the block and grid sizes are the launch's.
// CHECK-LABEL: func.func private @k_emu(
// CHECK-SAME: %[[Y:.+]]: memref<64xf32>, %[[BX:[^:]+]]: index, %{{.+}}: index, %{{.+}}: index, %[[TX:[^:]+]]: index, %{{.+}}: index, %{{.+}}: index)
// CHECK: %[[BDIM:.+]] = arith.constant 32 : index
// CHECK: %[[MUL:.+]] = arith.muli %[[BX]], %[[BDIM]] : index
// CHECK: %[[ID:.+]] = arith.addi %[[MUL]], %[[TX]] : index
// CHECK: memref.store %{{.+}}, %[[Y]][%[[ID]]]
// CHECK: return
// CHECK-NOT: gpu.thread_id
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @k(%y: memref<64xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 2, 1, 1>} {
      %bx = gpu.block_id x
      %tx = gpu.thread_id x
      %n = gpu.block_dim x
      %b = arith.muli %bx, %n : index
      %i = arith.addi %b, %tx : index
      %v = arith.constant 1.0 : f32
      memref.store %v, %y[%i] : memref<64xf32>
      gpu.return
    }
  }
}
