// RUN: kiln-opt %s --split-input-file --kiln-gpu-emulate --verify-diagnostics

// Only 32-bit values are exchanged by an emulated shuffle.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @wide(%x: memref<32xf64>)
        kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %tx = gpu.thread_id x
      %v = memref.load %x[%tx] : memref<32xf64>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      // expected-error @+1 {{a shuffle of 'f64' cannot be emulated yet (32-bit values only)}}
      %s, %ok = gpu.shuffle down %v, %c1, %c32 : f64
      memref.store %s, %x[%tx] : memref<32xf64>
      gpu.return
    }
  }
}

// -----

// A kernel's shared buffers and its shuffle slots must fit the emulated
// block's shared memory.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    // expected-error @+1 {{the kernel's shared buffers and shuffle slots exceed 49152 bytes}}
    gpu.func @full(%x: memref<256xf32>)
        workgroup(%t: memref<12224xf32, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %tx = gpu.thread_id x
      %v = memref.load %x[%tx] : memref<256xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      memref.store %s, %t[%tx] : memref<12224xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}

// -----

// Nor vectors.
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @pair(%x: memref<32xvector<2xf32>>)
        kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %tx = gpu.thread_id x
      %v = memref.load %x[%tx] : memref<32xvector<2xf32>>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      // expected-error @+1 {{a shuffle of 'vector<2xf32>' cannot be emulated yet (32-bit values only)}}
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : vector<2xf32>
      memref.store %s, %x[%tx] : memref<32xvector<2xf32>>
      gpu.return
    }
  }
}
