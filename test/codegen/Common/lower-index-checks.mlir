// RUN: kiln-opt %s -kiln-codegen-lower-index-checks | FileCheck %s
// RUN: kiln-opt %s -kiln-codegen-lower-index-checks=slot=argument | FileCheck %s --check-prefix=ARG
// RUN: not kiln-opt %s -kiln-codegen-lower-index-checks=slot=global 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown slot 'global' for the index checks (thread-local or argument)

// Each check records, on failure and when no check of the run failed
// before, its number + 1 and the index out of range in a thread-local slot;
// the module lists the checks in the same order for the model ABI.
// CHECK: module attributes {kiln.index_checks = [{high = 9 : i64, low = -10 : i64, source = "lookup (Gather)", what = "index"}, {high = 2 : i64, low = -3 : i64, source = "", what = "index 0 of a tuple"}]}
// CHECK: llvm.mlir.global internal thread_local @kiln.run_error(dense<0> : tensor<2xi64>) {addr_space = 0 : i32, alignment = 8 : i64, dso_local} : !llvm.array<2 x i64>
// CHECK-LABEL: func.func @two_checks
// CHECK-SAME: (%[[LO:.+]]: i64, %[[HI:.+]]: i64)
// CHECK: %[[BELOW:.+]] = arith.cmpi slt, %[[LO]], %{{.+}} : i64
// CHECK: %[[ABOVE:.+]] = arith.cmpi sgt, %[[HI]], %{{.+}} : i64
// CHECK: %[[BAD:.+]] = arith.ori %[[BELOW]], %[[ABOVE]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK: %[[SLOT:.+]] = llvm.mlir.addressof @kiln.run_error : !llvm.ptr
// CHECK: %[[ERR:.+]] = "llvm.intr.threadlocal.address"(%[[SLOT]]) : (!llvm.ptr) -> !llvm.ptr
// CHECK: %[[FIRST:.+]] = llvm.load %[[ERR]] : !llvm.ptr -> i64
// CHECK: %[[NONE:.+]] = arith.cmpi eq, %[[FIRST]], %{{.+}} : i64
// CHECK: scf.if %[[NONE]] {
// CHECK: llvm.store %{{.+}}, %[[ERR]] : i64, !llvm.ptr
// CHECK: %[[INDEX:.+]] = arith.select %[[ABOVE]], %[[HI]], %[[LO]] : i64
// CHECK: %[[SECOND:.+]] = llvm.getelementptr %[[ERR]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.store %[[INDEX]], %[[SECOND]] : i64, !llvm.ptr
// CHECK-NOT: kiln.check_index

// With slot=argument (the GPU) the function takes the run's error slot
// after its other arguments; a failed check whose slot still says none (a
// negative first word) writes its number (from 0) and the index there.
// ARG: module attributes {kiln.index_checks = [{high = 9 : i64, low = -10 : i64, source = "lookup (Gather)", what = "index"}, {high = 2 : i64, low = -3 : i64, source = "", what = "index 0 of a tuple"}], kiln.run_error_argument}
// ARG-NOT: llvm.mlir.global
// ARG-LABEL: func.func @two_checks
// ARG-SAME: (%[[LO:.+]]: i64, %[[HI:.+]]: i64, %[[SLOT:.+]]: memref<2xi64>)
// ARG: %[[BELOW:.+]] = arith.cmpi slt, %[[LO]], %{{.+}} : i64
// ARG: %[[ABOVE:.+]] = arith.cmpi sgt, %[[HI]], %{{.+}} : i64
// ARG: %[[BAD:.+]] = arith.ori %[[BELOW]], %[[ABOVE]] : i1
// ARG: scf.if %[[BAD]] {
// ARG: %[[FIRST:.+]] = memref.load %[[SLOT]][%{{.+}}] : memref<2xi64>
// ARG: %[[NONE:.+]] = arith.cmpi slt, %[[FIRST]], %{{.+}} : i64
// ARG: scf.if %[[NONE]] {
// ARG: memref.store %{{.+}}, %[[SLOT]][%{{.+}}] : memref<2xi64>
// ARG: %[[INDEX:.+]] = arith.select %[[ABOVE]], %[[HI]], %[[LO]] : i64
// ARG: memref.store %[[INDEX]], %[[SLOT]][%{{.+}}] : memref<2xi64>
// ARG-NOT: kiln.check_index
func.func @two_checks(%lo: i64, %hi: i64) {
  kiln.check_index %lo, %hi in [-10, 9] {source = "lookup (Gather)", what = "index"}
  kiln.check_index %lo, %hi in [-3, 2] {source = "", what = "index 0 of a tuple"}
  return
}
