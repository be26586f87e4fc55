// A compiled model runs under kiln-run and computes the right numbers.
// RUN: kiln-compile %s -o %t.so
// RUN: %python -c "import numpy as np; np.save('%t.a.npy', np.array([[1, -2, 3], [4, 5, -6]], np.float32)); np.save('%t.b.npy', np.array([1, 1, -10], np.float32))"
// RUN: kiln-run %t.so --input a=%t.a.npy --input b=%t.b.npy --output-dir %t.out
// RUN: %python -c "import numpy as np; print(np.load('%t.out/y.npy').tolist())" | FileCheck %s
// CHECK: {{\[\[}}2.0, 0.0, 0.0], [5.0, 6.0, 0.0]]

func.func @main(%a: tensor<2x3xf32> {kiln.name = "a"}, %b: tensor<3xf32> {kiln.name = "b"})
    -> (tensor<2x3xf32> {kiln.name = "y"}) {
  %0 = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
