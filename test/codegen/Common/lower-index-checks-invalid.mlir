// RUN: kiln-opt %s -kiln-codegen-lower-index-checks -verify-diagnostics

// A check inside a parallel loop would record on another thread.
func.func @parallel(%lo: i64, %hi: i64) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    // expected-error @+1 {{inside a parallel loop}}
    kiln.check_index %lo, %hi in [-10, 9] {source = "", what = "index"}
    scf.reduce
  }
  return
}
