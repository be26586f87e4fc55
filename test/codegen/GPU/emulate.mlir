// RUN: kiln-opt %s --split-input-file --kiln-gpu-emulate | FileCheck %s

// The kernel's host twin takes its buffer, then the block's and the
// thread's indices (x, y, z), the block's shared memory and the barrier
// function; the block and grid sizes are the launch's.
// CHECK-LABEL: func.func private @k_emu(
// CHECK-SAME: %[[Y:.+]]: memref<64xf32>, %[[BX:[^:]+]]: index, %{{.+}}: index, %{{.+}}: index, %[[TX:[^:]+]]: index, %{{.+}}: index, %{{.+}}: index, %{{.+}}: memref<49152xi8>, %{{.+}}: i64)
// CHECK: %[[BDIM:.+]] = arith.constant 32 : index
// CHECK: %[[MUL:.+]] = arith.muli %[[BX]], %[[BDIM]] : index
// CHECK: %[[ID:.+]] = arith.addi %[[MUL]], %[[TX]] : index
// CHECK: memref.store %{{.+}}, %[[Y]][%[[ID]]]
// CHECK: return
// CHECK-NOT: gpu.thread_id
// CHECK: // -----
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

// -----

// Shared buffers become views of the block's shared memory, 16-byte
// aligned one after the other, without their memory space; a barrier calls
// the emulator's function.
// CHECK-LABEL: func.func private @reverse_emu(
// CHECK-SAME: %[[SHARED:[^:]+]]: memref<49152xi8>, %[[BARRIER:[^:]+]]: i64)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C48:.+]] = arith.constant 48 : index
// CHECK-DAG: %[[T:.+]] = memref.view %[[SHARED]][%[[C0]]][] : memref<49152xi8> to memref<10xf32>
// CHECK-DAG: %[[U:.+]] = memref.view %[[SHARED]][%[[C48]]][] : memref<49152xi8> to memref<4xi8>
// CHECK: memref.store %{{.+}}, %[[T]][%{{.+}}] : memref<10xf32>
// CHECK: %[[FN:.+]] = llvm.inttoptr %[[BARRIER]] : i64 to !llvm.ptr
// CHECK-NEXT: llvm.call %[[FN]]() : !llvm.ptr, () -> ()
// CHECK: memref.load %[[T]][%{{.+}}] : memref<10xf32>
// CHECK-NOT: gpu.barrier
// CHECK-NOT: #gpu.address_space
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @reverse(%x: memref<10xf32>, %y: memref<10xf32>)
        workgroup(%t: memref<10xf32, #gpu.address_space<workgroup>>,
                  %u: memref<4xi8, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 10, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %tx = gpu.thread_id x
      %c9 = arith.constant 9 : index
      %v = memref.load %x[%tx] : memref<10xf32>
      memref.store %v, %t[%tx] : memref<10xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %r = arith.subi %c9, %tx : index
      %w = memref.load %t[%r] : memref<10xf32, #gpu.address_space<workgroup>>
      memref.store %w, %y[%tx] : memref<10xf32>
      gpu.return
    }
  }
}

// -----

// A shuffle exchanges through a 32-bit slot per thread after the kernel's
// shared buffers (here at 0: it has none): the value stored at the thread's
// linear index (x fastest), a barrier, the partner lane's slot read (its own
// where the partner is out of range), a barrier again.
// CHECK-LABEL: func.func private @warp_sum_emu(
// CHECK-SAME: %[[TX:[^:]+]]: index, %[[TY:[^:]+]]: index, %[[TZ:[^:]+]]: index, %[[SHARED:[^:]+]]: memref<49152xi8>, %[[BARRIER:[^:]+]]: i64)
// CHECK: %[[SLOTS:.+]] = memref.view %[[SHARED]][%{{.+}}][] : memref<49152xi8> to memref<64xi32>
// CHECK: %[[ID:.+]] = arith.addi %[[TX]], %{{.+}} : index
// CHECK: %[[BITS:.+]] = arith.bitcast %{{.+}} : f32 to i32
// CHECK: memref.store %[[BITS]], %[[SLOTS]][%[[ID]]]
// CHECK: llvm.call
// CHECK: %[[LANE:.+]] = arith.remui %[[ID]], %c32
// CHECK: %[[SOURCE:.+]] = arith.xori %[[LANE]],
// CHECK: %[[SLOT:.+]] = arith.select %{{.+}}, %{{.+}}, %[[ID]] : index
// CHECK: %[[READ:.+]] = memref.load %[[SLOTS]][%[[SLOT]]]
// CHECK: llvm.call
// CHECK: arith.bitcast %[[READ]] : i32 to f32
// CHECK-NOT: gpu.shuffle
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @warp_sum(%x: memref<64xf32>, %y: memref<64xf32>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %tx = gpu.thread_id x
      %v = memref.load %x[%tx] : memref<64xf32>
      %c16 = arith.constant 16 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c16, %c32 : f32
      %t = arith.addf %v, %s : f32
      memref.store %t, %y[%tx] : memref<64xf32>
      gpu.return
    }
  }
}
