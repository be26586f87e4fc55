// The model carries a kernel table (ABI version 2): one entry per outlined
// kernel, with its name, its ONNX nodes and its FLOPs per call, and
// kiln_abi_run calls the profiler hooks of its arguments around every
// kernel when they are set; when they are not, LLVM leaves a plain sequence
// of kernel calls.
// RUN: kiln-compile %s --emit=llvm-ir -o - | FileCheck %s

// The descriptor: version 2, ..., 2 kernels and the table. The matmul (its
// accumulators' zero fill fused into its tiles) counts 2 x 16 x 64 x 32
// FLOPs, the Sin one per element. (Sin stays a kernel of its own: an
// epilogue that is a libm call per element is not fused into the matmul.)
// CHECK-DAG: @[[NAME0:kiln.kernel.name.0]] = {{.*}}c"kiln_model_main_kernel0\00"
// CHECK-DAG: @[[NAME1:kiln.kernel.name.1]] = {{.*}}c"kiln_model_main_kernel1\00"
// CHECK-DAG: @[[MM:kiln.kernel.source.[0-9]+]] = {{.*}}c"mm (MatMul)\00"
// CHECK-DAG: @[[ACT:kiln.kernel.source.[0-9]+]] = {{.*}}c"act (Sin)\00"
// CHECK-DAG: @kiln.kernels = private constant [2 x %kiln_abi_kernel] [%kiln_abi_kernel { ptr @[[NAME0]], ptr @[[MM]], i64 65536 }, %kiln_abi_kernel { ptr @[[NAME1]], ptr @[[ACT]], i64 512 }]
// CHECK-DAG: @kiln.model = private constant %kiln_abi_model { i32 8, i32 0, {{.*}}, i64 2, ptr @kiln.kernels, i32 0, i32 0, ptr null, ptr null, ptr null, i64 0, i32 0, i32 0, ptr null, i32 0, i32 0, ptr null }

// The run reads `profiler`, the sixth field of the run arguments (byte 32),
// and calls kernel_begin (hooks field 1, byte 8) and kernel_end (field 2,
// byte 16) around kernels 0 and 1 only when it is not NULL.
// CHECK-LABEL: define {{.*}}i32 @kiln_abi_run(ptr
// CHECK: %[[FIELD:.+]] = getelementptr inbounds nuw i8, ptr %{{.+}}, i64 32
// CHECK: %[[PROFILER:.+]] = load ptr, ptr %[[FIELD]]
// CHECK: icmp eq ptr %[[PROFILER]], null
// CHECK: call fastcc void @kiln_model_main_kernel0(
// CHECK-NEXT: call fastcc void @kiln_model_main_kernel1(
// CHECK: getelementptr inbounds nuw i8, ptr %[[PROFILER]], i64 8
// CHECK: call void %{{.+}}(ptr %{{.+}}, i64 0)
// CHECK-NEXT: call fastcc void @kiln_model_main_kernel0(
// CHECK: getelementptr inbounds nuw i8, ptr %[[PROFILER]], i64 16
// CHECK: call void %{{.+}}(ptr %{{.+}}, i64 0)
// CHECK: call void %{{.+}}(ptr %{{.+}}, i64 1)
// CHECK-NEXT: call fastcc void @kiln_model_main_kernel1(
// CHECK: call void %{{.+}}(ptr %{{.+}}, i64 1)

func.func @main(%a: tensor<16x64xf32> {kiln.name = "a"}) -> (tensor<16x32xf32> {kiln.name = "y"}) {
  %w = graph.constant dense<0.5> : tensor<64x32xf32> loc("w (initializer)")
  %m = graph.matmul %a, %w : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32> loc("mm (MatMul)")
  %y = graph.sin %m : tensor<16x32xf32> loc("act (Sin)")
  return %y : tensor<16x32xf32>
}
