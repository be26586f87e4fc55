// Inputs and outputs with no elements: the model takes no pointer for them,
// kiln-run still writes an empty output, and the other outputs are right.
// RUN: kiln-compile %s -o %t.so
// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.zeros((2, 0, 4), np.float32)); np.save('%t.y.npy', -np.ones((2, 3, 4), np.float32))"
// RUN: kiln-run %t.so --input x=%t.x.npy --input y=%t.y.npy --output-dir %t.out
// RUN: %python -c "import numpy as np; print(np.load('%t.out/z.npy').sum(), np.load('%t.out/w.npy').shape)" | FileCheck %s
// CHECK: 0.0 (2, 0, 4)

func.func @main(%x: tensor<2x0x4xf32> {kiln.name = "x"}, %y: tensor<2x3x4xf32> {kiln.name = "y"})
    -> (tensor<2x3x4xf32> {kiln.name = "z"}, tensor<2x0x4xf32> {kiln.name = "w"}) {
  %0 = graph.add %x, %x : (tensor<2x0x4xf32>, tensor<2x0x4xf32>) -> tensor<2x0x4xf32>
  %1 = graph.relu %y : tensor<2x3x4xf32>
  return %1, %0 : tensor<2x3x4xf32>, tensor<2x0x4xf32>
}
