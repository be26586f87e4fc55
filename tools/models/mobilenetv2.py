#!/usr/bin/env python3
"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear
Bottlenecks", CVPR 2018) with seeded random weights.

1x3x224x224 input; inverted residual blocks of 1x1 expansion, 3x3 depthwise
(grouped) convolution and 1x1 linear projection, each Conv followed by
BatchNormalization, Clip(0, 6) as Relu6; GlobalAveragePool, Flatten, Gemm to
1000 logits. --width scales every channel count (rounded to multiples of 8, as
in the paper's reference code).

  python tools/models/mobilenetv2.py -o mobilenetv2.onnx [--width 0.5] [--check]
"""

import numpy as np

from common import GraphBuilder, TensorProto, main, random_inputs, tensor_info

# (expansion t, output channels c, repeats n, first stride s), Table 2 of the paper.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
CLASSES = 1000


def divisible(value, divisor=8):
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def relu6(g, x):
    return g.op("Clip", [x, g.zero, g.six], "relu6")


def build(args=None, seed=0, width=None, resolution=None):
    width = width if width is not None else getattr(args, "width", 1.0)
    resolution = resolution or getattr(args, "resolution", 224)
    g = GraphBuilder(seed)
    g.zero = g.const("relu6.min", np.array(0.0, np.float32))
    g.six = g.const("relu6.max", np.array(6.0, np.float32))
    cin = divisible(32 * width)
    x = relu6(g, g.conv_bn("input", 3, cin, 3, 2, hint="features.0"))
    index = 1
    for t, c, n, s in BLOCKS:
        cout = divisible(c * width)
        for i in range(n):
            hint = f"features.{index}"
            hidden = cin * t
            y = x
            if t != 1:
                y = relu6(g, g.conv_bn(y, cin, hidden, 1, hint=f"{hint}.expand"))
            y = relu6(g, g.conv_bn(y, hidden, hidden, 3, s if i == 0 else 1,
                                   group=hidden, hint=f"{hint}.depthwise"))
            y = g.conv_bn(y, hidden, cout, 1, hint=f"{hint}.project")
            if i > 0 and cin == cout:
                y = g.op("Add", [x, y], f"{hint}.add")
            x, cin = y, cout
            index += 1
    last = divisible(1280 * max(1.0, width))
    x = relu6(g, g.conv_bn(x, cin, last, 1, hint=f"features.{index}"))
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [x], axis=1)
    w = g.normal("classifier.weight", (CLASSES, last), 1.0 / np.sqrt(last))
    b = g.normal("classifier.bias", (CLASSES,), 0.1)
    g.op("Gemm", [x, w, b], "logits", transB=1)
    return g.model(
        "mobilenetv2",
        [tensor_info("input", TensorProto.FLOAT, (1, 3, resolution, resolution))],
        [tensor_info("logits", TensorProto.FLOAT, (1, CLASSES))],
        doc=f"MobileNetV2, width {width}, seeded random weights")


def add_arguments(parser):
    parser.add_argument("--width", type=float, default=1.0,
                        help="width multiplier (default 1.0)")
    parser.add_argument("--resolution", type=int, default=224,
                        help="input height and width (default 224)")


def feeds(model, seed=0):
    return random_inputs(model, seed)


if __name__ == "__main__":
    raise SystemExit(main(build, feeds, add_arguments, __doc__.split("\n\n")[0]))
