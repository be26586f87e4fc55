// RUN: kiln-opt %s -split-input-file -kiln-codegen-outline-kernels | FileCheck %s

// Each top-level loop nest becomes a private, never-inlined kernel; the
// constants and views it uses are recreated inside it, buffers are passed,
// each marked noalias (no two arguments are views of one buffer).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.+]]: memref<64xf32>, %[[B:.+]]: memref<8x8xf32>)
// CHECK: call @main_kernel0(%[[A]]) : (memref<64xf32>) -> ()
// CHECK: call @main_kernel1(%[[B]]) : (memref<8x8xf32>) -> ()
// CHECK: return
// CHECK: func.func private @main_kernel0(%[[KA:.+]]: memref<64xf32> {llvm.noalias}) attributes {kiln.kernel = #kiln.kernel<flops = 0, source = "">, passthrough = ["noinline"]}
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %[[KA]]
// CHECK: func.func private @main_kernel1(%[[KB:.+]]: memref<8x8xf32> {llvm.noalias})
// CHECK: memref.subview %[[KB]]
func.func @main(%a: memref<64xf32>, %b: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %f, %a[%i] : memref<64xf32>
  }
  %row = memref.subview %b[0, 0] [1, 8] [1, 1] : memref<8x8xf32> to memref<8xf32, strided<[1]>>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %f, %row[%i] : memref<8xf32, strided<[1]>>
  }
  return
}

// -----

// Each kernel records its floating-point operations per call, from constant
// trip counts (an affine.min bound counts as its constant), and the ONNX
// nodes named in its location: 8 x (4 x 16 x 2 + 4 x 1 + 1) = 1064.
// CHECK-LABEL: func.func @counts
// CHECK: func.func private @counts_kernel0({{.*}}) attributes {kiln.kernel = #kiln.kernel<flops = 1064, source = "fc (Gemm), act (Relu)">, passthrough = ["noinline"]}
// A trip count that is not known: 0.
// CHECK: func.func private @counts_kernel1({{.*}}) attributes {kiln.kernel = #kiln.kernel<flops = 0, source = "">, passthrough = ["noinline"]}
func.func @counts(%a: memref<8x64xf32>, %b: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %v = arith.constant dense<1.0> : vector<16xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c64 step %c16 {
      %x = vector.load %a[%i, %j] : memref<8x64xf32>, vector<16xf32>
      %y = vector.fma %x, %x, %v : vector<16xf32>
      vector.store %y, %a[%i, %j] : memref<8x64xf32>, vector<16xf32>
    }
    %m = affine.min affine_map<(d0) -> (4, 10 - d0)>(%i)
    scf.for %k = %c0 to %m step %c1 {
      %s = memref.load %a[%i, %k] : memref<8x64xf32>
      %t = arith.mulf %s, %s : f32
      memref.store %t, %a[%i, %k] : memref<8x64xf32>
    }
    %s = memref.load %b[%i] : memref<8xf32>
    %t = arith.addf %s, %s : f32
    memref.store %t, %b[%i] : memref<8xf32>
    scf.reduce
  } loc(fused["fc (Gemm)", "act (Relu)"])
  scf.for %i = %c0 to %n step %c1 {
    %s = memref.load %b[%i] : memref<8xf32>
    %t = arith.addf %s, %s : f32
    memref.store %t, %b[%i] : memref<8xf32>
  }
  return
}

// -----

// Buffers of the workspace (the memref.view of kiln-codegen-plan-memory) are
// passed as buffers of their own, noalias like any other: the plan keeps
// every buffer clear of those alive at the same time. Other views of them
// are recreated.
// CHECK-LABEL: func.func @workspace
// CHECK-SAME: (%[[W:.+]]: memref<512xi8>)
// CHECK-DAG: %[[X:.+]] = memref.view %[[W]][%{{.+}}][] : memref<512xi8> to memref<64xf32>
// CHECK-DAG: %[[Y:.+]] = memref.view %[[W]][%{{.+}}][] : memref<512xi8> to memref<64xf32>
// CHECK: call @workspace_kernel0(%[[X]], %[[Y]]) : (memref<64xf32>, memref<64xf32>) -> ()
// CHECK: func.func private @workspace_kernel0(%[[KX:.+]]: memref<64xf32> {llvm.noalias}, %[[KY:.+]]: memref<64xf32> {llvm.noalias})
// CHECK: memref.expand_shape %[[KY]]
func.func @workspace(%w: memref<512xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %x = memref.view %w[%c0][] : memref<512xi8> to memref<64xf32>
  %y = memref.view %w[%c256][] : memref<512xi8> to memref<64xf32>
  %y2 = memref.expand_shape %y [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %s = memref.load %x[%i] : memref<64xf32>
    memref.store %s, %y2[%i, %i] : memref<8x8xf32>
  }
  return
}

// -----

// A parallel loop's body moves into a function of its own, called once per
// iteration with the loop's indices and the kernel's buffers (noalias, as
// the kernel's are), the views it uses recreated inside: the OpenMP lowering
// would otherwise put it where LLVM sees neither. The kernel counts the
// body's work (8 x 16 additions); the tile function is no kernel of its own.
// CHECK-LABEL: func.func @parallel
// CHECK: call @parallel_kernel0(%{{.+}}, %{{.+}}) : (memref<8x16xf32>, memref<128xf32>) -> ()
// CHECK: func.func private @parallel_kernel0(%[[X:.+]]: memref<8x16xf32> {llvm.noalias}, %[[Y:.+]]: memref<128xf32> {llvm.noalias}) attributes {kiln.kernel = #kiln.kernel<flops = 128,
// CHECK: scf.parallel (%[[I:.+]]) =
// CHECK-NEXT: func.call @parallel_kernel0_tile(%[[I]], %[[X]], %[[Y]]) : (index, memref<8x16xf32>, memref<128xf32>) -> ()
// CHECK-NEXT: scf.reduce
// CHECK: func.func private @parallel_kernel0_tile(%[[TI:.+]]: index, %[[TX:.+]]: memref<8x16xf32> {llvm.noalias}, %[[TY:.+]]: memref<128xf32> {llvm.noalias}) attributes {passthrough = ["noinline"]}
// CHECK: memref.expand_shape %[[TY]]
// CHECK: scf.for
// CHECK: memref.load %[[TX]][%[[TI]]
// CHECK: arith.addf
func.func @parallel(%x: memref<8x16xf32>, %y: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %view = memref.expand_shape %y [[0, 1]] output_shape [8, 16] : memref<128xf32> into memref<8x16xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %x[%i, %j] : memref<8x16xf32>
      %s = arith.addf %v, %v : f32
      memref.store %s, %view[%i, %j] : memref<8x16xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A buffer whose sizes the run chooses passes as its pointer (a memref<1x>,
// which the bare-pointer convention takes) and its run-time sizes; the
// kernel views the pointer at those sizes again, row-major.
// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: (%[[A:.+]]: memref<?x8xf32>)
// CHECK: %[[P:.+]] = memref.reinterpret_cast %[[A]] to offset: [0], sizes: [1], strides: [1] : memref<?x8xf32> to memref<1xf32>
// CHECK: %[[N:.+]] = memref.dim %[[A]], %{{.+}}
// CHECK: call @symbolic_kernel0(%[[P]], %[[N]], %{{.+}}) : (memref<1xf32>, index, index) -> ()
// CHECK: func.func private @symbolic_kernel0(%[[KP:.+]]: memref<1xf32> {llvm.noalias}, %[[KN:[a-z0-9]+]]: index, %{{.+}}: index)
// CHECK-NOT: arith.muli
// CHECK: %[[V:.+]] = memref.reinterpret_cast %[[KP]] to offset: [0], sizes: [%[[KN]], 8], strides: [8, 1] : memref<1xf32> to memref<?x8xf32>
// CHECK: memref.store %{{.+}}, %[[V]]
func.func @symbolic(%a: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  %n = memref.dim %a, %c0 : memref<?x8xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %a[%i, %c0] : memref<?x8xf32>
  }
  return
}
