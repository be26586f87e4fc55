// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-gpu-map-to-launch{block-size=64}))' -split-input-file | FileCheck %s

// A parallel loop of 4 x 40 = 160 iterations: 3 blocks of 64 threads, thread
// i taking iteration (i / 40, i % 40), the out-of-range threads guarded. The
// view it reads is recomputed inside; the launch names its kernel and
// carries its flops and node.
// CHECK-LABEL: func.func @relu
// CHECK-DAG: %[[C3:.+]] = arith.constant 3 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C3]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) threads(%[[TX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %[[C64]], %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) module(@kiln_kernels) function(@relu_kernel0)
// CHECK: %[[VIEW:.+]] = memref.view %arg0
// CHECK: %[[MUL:.+]] = arith.muli %[[BX]], %{{.+}} : index
// CHECK: %[[ID:.+]] = arith.addi %[[MUL]], %[[TX]] : index
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ID]], %{{.+}} : index
// CHECK: scf.if %[[IN]] {
// CHECK: arith.remui %[[ID]], %{{.+}} : index
// CHECK: arith.divui %[[ID]], %{{.+}} : index
// CHECK: memref.load %[[VIEW]]
// CHECK: arith.maximumf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK: } {kiln.kernel = #kiln.kernel<flops = 160, source = "r">}
// CHECK-NOT: scf.parallel
func.func @relu(%ws: memref<640xi8>, %y: memref<4x40xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c40 = arith.constant 40 : index
  %zero = arith.constant 0.0 : f32
  %x = memref.view %ws[%c0][] : memref<640xi8> to memref<4x40xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c40) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4x40xf32>
    %r = arith.maximumf %v, %zero : f32
    memref.store %r, %y[%i, %j] : memref<4x40xf32>
    scf.reduce
  } loc("r")
  return
}

// -----

// A serial stretch (what a 0-d op lowers to: a load, arithmetic, a store)
// runs in one thread of one block, as one kernel. (Its load reads a buffer
// that the function writes, so it cannot be repeated elsewhere.)
// CHECK-LABEL: func.func @scalar
// CHECK: gpu.launch {{.*}} module(@kiln_kernels) function(@scalar_kernel0)
// CHECK: memref.load
// CHECK: arith.subf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK: } {kiln.kernel = #kiln.kernel<flops = 1, source = "s">}
// CHECK-NEXT: return
func.func @scalar(%y: memref<f32>) {
  %one = arith.constant 1.0 : f32
  %v = memref.load %y[] : memref<f32> loc("s")
  %d = arith.subf %v, %one : f32 loc("s")
  memref.store %d, %y[] : memref<f32> loc("s")
  return
}

// -----

// A scalar of an input (which nothing writes), loaded at the top level and
// used in a parallel loop, is loaded again in the kernel: the host never
// reads device memory.
// CHECK-LABEL: func.func @hoisted_scalar
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK-DAG: %[[S:.+]] = memref.load %arg0[] : memref<f32>
// CHECK-DAG: %[[V:.+]] = memref.load %arg1
// CHECK: arith.mulf %[[V]], %[[S]]
// CHECK: gpu.terminator
func.func @hoisted_scalar(%s: memref<f32>, %x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %scale = memref.load %s[] : memref<f32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %r = arith.mulf %v, %scale : f32
    memref.store %r, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// A launch an earlier pass built (a tiled contraction, a block reduction)
// ends a serial stretch rather than joining it: the store gets a one-thread
// launch of its own, and the existing launch is named in turn, not nested.
// CHECK-LABEL: func.func @existing_launch
// CHECK: gpu.launch {{.*}} module(@kiln_kernels) function(@existing_launch_kernel0)
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: gpu.launch {{.*}} module(@kiln_kernels) function(@existing_launch_kernel1)
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @existing_launch(%x: memref<1xf32>, %y: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %v = arith.constant 1.0 : f32
  memref.store %v, %x[%c0] : memref<1xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    memref.store %v, %y[%tx] : memref<256xf32>
    gpu.terminator
  }
  return
}

// -----

// A count a serial loop computes, which a later parallel loop runs to: the
// host cannot read it from the GPU's memory, so one block runs the loop,
// the parallel loop between and the one that uses the count. Every thread
// counts alike (the loop only reads); the parallel loop's iterations are
// shared out between the block's threads, with a barrier before and after;
// thread 0 runs the loop that writes, then a barrier (none at the end).
// CHECK-LABEL: func.func @count_then_loop
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads(%[[TID:[^,]+]], {{.*}}) in ({{.*}} = %c64{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK: %[[COUNT:.+]] = scf.for
// CHECK-NOT: memref.store
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %[[TID]] to %{{.+}} step %c64
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[TID]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[COUNT]]
// CHECK: memref.store
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @count_then_loop(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %n = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %c0) -> (index) {
    %v = memref.load %x[%i] : memref<8xf32>
    %p = arith.cmpf ogt, %v, %zero : f32
    %one = arith.index_cast %p : i1 to index
    %next = arith.addi %acc, %one : index
    scf.yield %next : index
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %zero, %z[%i] : memref<8xf32>
    scf.reduce
  }
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %y[%i] : memref<8xf32>
  }
  return
}

// -----

// A recurrence (what LSTM and GRU lower to): a loop over steps holding a
// parallel loop and a serial write. One block runs it all: every thread
// steps alike, each step's parallel loop shared out between barriers, the
// write by thread 0 between barriers.
// CHECK-LABEL: func.func @recurrence
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}}) threads(%[[TID:[^,]+]], {{.*}}) in ({{.*}} = %c64{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %{{.+}} step
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %[[TID]] to %{{.+}} step %c64
// CHECK: arith.mulf
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %arg0[%[[T]], %c0
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
func.func @recurrence(%h: memref<8x300xf32>, %w: memref<300xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c300 = arith.constant 300 : index
  %zero = arith.constant 0.0 : f32
  scf.for %t = %c0 to %c7 step %c1 {
    %next = arith.addi %t, %c1 : index
    scf.parallel (%i) = (%c0) to (%c300) step (%c1) {
      %a = memref.load %h[%t, %i] : memref<8x300xf32>
      %b = memref.load %w[%i] : memref<300xf32>
      %m = arith.mulf %a, %b : f32
      memref.store %m, %h[%next, %i] : memref<8x300xf32>
      scf.reduce
    }
    memref.store %zero, %h[%t, %c0] : memref<8x300xf32>
  }
  return
}
