//===- main.cpp - The kiln._kiln extension module -------------------------===//
//
// One extension module for the whole `kiln` package, filled by one init_*
// function per layer: the compiler (include/kiln/compiler.h) and the runtime
// (include/kiln/runtime.h). Each layer gets its own submodule; the Python
// package (python/kiln) is the only client and keeps the public API.
//
//===----------------------------------------------------------------------===//

#include <pybind11/pybind11.h>

namespace py = pybind11;

void init_kiln_compiler(py::module_ &&m);
void init_kiln_runtime(py::module_ &&m);

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln's compiler and runtime; use the `kiln` package instead.";
  m.attr("__version__") = KILN_VERSION_STRING;
  init_kiln_compiler(m.def_submodule("compiler", "kiln/compiler.h"));
  init_kiln_runtime(m.def_submodule("runtime", "kiln/runtime.h"));
}
