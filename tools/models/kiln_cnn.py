#!/usr/bin/env python3
"""Kiln's small ResNet-style CNN: the model the README's main example compiles.

1x3x64x64 input -> Conv+BatchNorm+Relu -> MaxPool -> two residual blocks (the
second one strided, with a 1x1 projection shortcut) -> GlobalAveragePool ->
Flatten -> Gemm -> Softmax over 10 classes. About 30 K weights, seeded, so the
file is identical on every run.

  python tools/models/kiln_cnn.py -o kiln_cnn.onnx [--check]
"""

import numpy as np

from common import GraphBuilder, TensorProto, main, random_inputs, tensor_info

INPUT_SHAPE = (1, 3, 64, 64)
CLASSES = 10


def residual_block(g, x, cin, cout, stride, hint):
    y = g.op("Relu", [g.conv_bn(x, cin, cout, 3, stride, hint=f"{hint}.conv1")])
    y = g.conv_bn(y, cout, cout, 3, hint=f"{hint}.conv2")
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = g.conv_bn(x, cin, cout, 1, stride, hint=f"{hint}.proj")
    return g.op("Relu", [g.op("Add", [y, shortcut], f"{hint}.add")])


def build(args=None, seed=0):
    g = GraphBuilder(seed)
    x = g.op("Relu", [g.conv_bn("input", 3, 16, 3, hint="stem")])
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = residual_block(g, x, 16, 16, 1, "block1")
    x = residual_block(g, x, 16, 32, 2, "block2")
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    w = g.normal("fc.weight", (CLASSES, 32), 1.0 / np.sqrt(32))
    b = g.normal("fc.bias", (CLASSES,), 0.1)
    x = g.op("Gemm", [x, w, b], "fc", transB=1)
    g.op("Softmax", [x], "probabilities", axis=-1)
    return g.model("kiln_cnn",
                   [tensor_info("input", TensorProto.FLOAT, INPUT_SHAPE)],
                   [tensor_info("probabilities", TensorProto.FLOAT, (1, CLASSES))],
                   doc="Kiln's small ResNet-style CNN with seeded random weights")


def feeds(model, seed=0):
    return random_inputs(model, seed)


if __name__ == "__main__":
    raise SystemExit(main(build, feeds, description=__doc__.split("\n\n")[0]))
