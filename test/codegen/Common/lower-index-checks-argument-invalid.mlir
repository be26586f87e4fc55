// RUN: kiln-opt %s -kiln-codegen-lower-index-checks=slot=argument -verify-diagnostics

// With slot=argument the run's error slot is an argument of one function,
// the one that holds the first check: a check elsewhere is refused.
func.func @first(%lo: i64, %hi: i64) {
  kiln.check_index %lo, %hi in [-10, 9] {source = "", what = "index"}
  return
}

func.func @second(%lo: i64, %hi: i64) {
  // expected-error @+1 {{in another function than the first check's}}
  kiln.check_index %lo, %hi in [-10, 9] {source = "", what = "index"}
  return
}
