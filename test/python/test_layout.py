"""The blocked layout NCHWc (kiln-compile --layout=blocked, the default on
every target): convolutions (one-group and depthwise),
pools, elementwise ops, BatchNorm and channel concats run on
N x C1 x H x W x c tensors, with layout conversions only
where the blocked region begins and ends, and the results still match
onnxruntime (rtol 1e-3, atol 1e-4).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from kiln_testing import KILN_COMPILE, assert_matches_onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))

import light_models  # noqa: E402
from common import GraphBuilder, tensor_info  # noqa: E402

RTOL = 1e-3
ATOL = 1e-4
CONVS = ("graph.conv", "graph.fused_conv")


def graph_report(model_path, workdir, *args):
    """({op name: count} after the graph passes, the report, the graph IR)."""
    out = Path(workdir) / "graph.mlir"
    proc = subprocess.run([str(a) for a in (KILN_COMPILE, model_path, "--report",
                                            "--emit=graph", "-o", out, *args)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"^graph: \d+ ops \((.*)\)$", proc.stderr, re.M)
    counts = {name: int(n) for name, n in re.findall(r"([\w.]+): (\d+)", m.group(1))}
    return counts, proc.stderr, out.read_text()


def resnet_blocks():
    """ResNet-50's shapes in small: a 7x7/2 stem of 20 channels (not a
    multiple of any block), a 3x3/2 max pool, a bottleneck with a strided
    1x1 projection shortcut, an identity bottleneck, a global average pool."""
    g = GraphBuilder(seed=5)
    y = g.op("Relu", [g.conv_bn("x", 3, 20, 7, stride=2, hint="stem")])
    y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def bottleneck(x, cin, mid, cout, stride, project):
        h = g.op("Relu", [g.conv_bn(x, cin, mid, 1, hint="a")])
        h = g.op("Relu", [g.conv_bn(h, mid, mid, 3, stride=stride, hint="b")])
        h = g.conv_bn(h, mid, cout, 1, hint="c")
        shortcut = g.conv_bn(x, cin, cout, 1, stride=stride, hint="proj") if project else x
        return g.op("Relu", [g.op("Add", [h, shortcut])])

    y = bottleneck(y, 20, 12, 40, 2, True)
    y = bottleneck(y, 40, 12, 40, 1, False)
    y = g.op("GlobalAveragePool", [y])
    return g.model("resnet_blocks", [tensor_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                   [tensor_info(y, TensorProto.FLOAT, [1, 40, 1, 1])])


@pytest.mark.parametrize("block", [16, 8, 4])
def test_resnet_blocks_blocked(tmp_path, block):
    model = resnet_blocks()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", f"--layout-block={block}"]
    counts, report, graph = graph_report(path, tmp_path, *args)
    assert f"layout: blocked NCHWc, c={block}" in report
    # Every convolution and the pools are blocked; one conversion in (the
    # input), one out (after the global pool).
    assert not [op for op in CONVS + ("graph.max_pool",) if op in counts], counts
    assert counts["graph.blocked_conv"] == 8
    assert counts["graph.blocked_max_pool"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    assert f"#graph.blocked<c = {block}>" in graph

    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=RTOL, atol=ATOL,
                               compile_args=args)


def test_op_without_layout_gets_conversions(tmp_path):
    """A Softmax over the channels between two convolutions cannot take the
    layout: the blocked region ends before it and starts again after it."""
    g = GraphBuilder(seed=7)
    y = g.op("Relu", [g.conv_bn("x", 8, 24, 3, hint="a")])
    y = g.op("Softmax", [y], axis=1)
    y = g.conv_bn(y, 24, 16, 3, hint="b")
    model = g.model("softmax_between", [tensor_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 16, 12, 12])])
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", "--layout-block=16"]
    counts, _, _ = graph_report(path, tmp_path, *args)
    assert counts["graph.blocked_conv"] == 2
    assert counts["graph.to_blocked"] == 2
    assert counts["graph.from_blocked"] == 2
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 8, 12, 12)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=RTOL, atol=ATOL,
                               compile_args=args)


def test_blocked_is_the_default(tmp_path):
    """With no flag the layout is blocked at the target's vector width (the
    host's: AVX-512 here gives 16, AVX2 8); --layout=nchw turns it off."""
    path = tmp_path / "model.onnx"
    onnx.save(resnet_blocks(), str(path))
    counts, report, _ = graph_report(path, tmp_path)
    assert re.search(r"^layout: blocked NCHWc, c=\d+$", report, re.M), report
    assert counts["graph.blocked_conv"] == 8
    assert not [op for op in CONVS if op in counts], counts
    counts, report, _ = graph_report(path, tmp_path, "--layout=nchw")
    assert "layout: nchw" in report
    assert not [op for op in counts if "blocked" in op], counts
    # Fixed-length SVE too, with blocks of one 256-bit vector (it was NCHW
    # while SVE's lowering left the blocked direct convolution scalar).
    counts, report, _ = graph_report(path, tmp_path, "--target=aarch64",
                                     "--cpu=neoverse-v1", "--sve-vector-bits=256")
    assert "layout: blocked NCHWc, c=8" in report
    assert counts["graph.blocked_conv"] == 8


def test_nc1hwc0_blocks_by_16(tmp_path):
    """--layout=nc1hwc0 is NCHWc with C0 = 16 whatever the target's vector
    width (NEON's is 4), or --layout-block's."""
    path = tmp_path / "model.onnx"
    onnx.save(resnet_blocks(), str(path))
    counts, report, graph = graph_report(path, tmp_path, "--layout=nc1hwc0",
                                         "--target=aarch64")
    assert "layout: blocked NCHWc, c=16" in report
    assert "#graph.blocked<c = 16>" in graph
    assert counts["graph.blocked_conv"] == 8
    _, report, _ = graph_report(path, tmp_path, "--target=aarch64")
    assert "layout: blocked NCHWc, c=4" in report
    _, report, _ = graph_report(path, tmp_path, "--layout=nc1hwc0", "--layout-block=8")
    assert "layout: blocked NCHWc, c=8" in report


def test_unknown_layout_is_refused(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(resnet_blocks(), str(path))
    proc = subprocess.run([str(KILN_COMPILE), str(path), "--layout=nhwc", "--emit=graph",
                           "-o", str(tmp_path / "g.mlir")], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "unknown --layout value 'nhwc' (expected auto, blocked, nc1hwc0, nchw)" in proc.stderr


@pytest.mark.large
def test_resnet50_convolutions_are_blocked(tmp_path, request):
    """With the default passes, every one of ResNet-50's 53 convolutions is
    blocked, with no layout conversion between consecutive ones: the only
    conversions are the input's and the one after the final average pool (a
    7x7 AveragePool in this model, blocked too). No BatchNormalization and
    no standalone activation is left (the graph issue's "done when")."""
    if not os.environ.get("KILN_LARGE_TESTS") and \
            "large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("large model: run with -m large or KILN_LARGE_TESTS=1")
    model = light_models.build("resnet50")
    path = tmp_path / "resnet50.onnx"
    onnx.save(model, str(path))
    args = []  # the default passes and layout
    counts, _, graph = graph_report(path, tmp_path, *args)
    assert not [op for op in CONVS if op in counts], counts
    assert not [op for op in ("graph.batch_norm", "graph.relu", "graph.add") if op in counts]
    assert counts["graph.blocked_conv"] == 53
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    # The one from_blocked converts the average pool's result.
    (converted,) = re.findall(r"graph.from_blocked (%\w+) ", graph)
    assert re.search(rf"{converted} = graph.blocked_average_pool ", graph)
    assert_matches_onnxruntime(model, light_models.feeds(model), tmp_path / "run",
                               rtol=RTOL, atol=ATOL, compile_args=args)


def test_python_compile_takes_the_layout(tmp_path):
    import kiln

    path = kiln.compile(resnet_blocks(), tmp_path / "graph.mlir", emit="graph",
                        layout="blocked", layout_block=8)
    graph = Path(path).read_text()
    assert "graph.blocked_conv" in graph
    assert "#graph.blocked<c = 8>" in graph
    with pytest.raises(ValueError, match=r"unknown layout 'nhwc' \(expected auto, blocked, nc1hwc0, nchw\)"):
        kiln.compile(resnet_blocks(), tmp_path / "bad.mlir", emit="graph", layout="nhwc")


def compile_and_compare(tmp_path, model, block, seed=3):
    """The graph's op counts with the layout in blocks of `block`, after
    checking the compiled model against onnxruntime."""
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", f"--layout-block={block}"]
    counts, _, graph = graph_report(path, tmp_path, *args)
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=RTOL, atol=ATOL,
                               compile_args=args)
    return counts, graph


def mobilenet_blocks():
    """MobileNetV2's shapes in small: a 3x3/2 stem, inverted residuals
    (1x1 expansion, 3x3 depthwise of stride 1 or 2, 1x1 projection, each
    with BatchNorm and ReLU6 but the projection), one with an identity
    shortcut, a 1x1 head and a global average pool, on channel counts that
    are not multiples of a block and an odd input size."""
    g = GraphBuilder(seed=11)

    def relu6(x):
        return g.op("Clip", [x, g.const("lo", np.float32(0)), g.const("hi", np.float32(6))])

    def inverted(x, cin, expand, cout, stride):
        mid = cin * expand
        h = relu6(g.conv_bn(x, cin, mid, 1, hint="expand"))
        h = relu6(g.conv_bn(h, mid, mid, 3, stride=stride, group=mid, hint="dw"))
        h = g.conv_bn(h, mid, cout, 1, hint="project")
        return g.op("Add", [h, x]) if stride == 1 and cin == cout else h

    y = relu6(g.conv_bn("x", 3, 12, 3, stride=2, hint="stem"))
    y = relu6(g.conv_bn(y, 12, 12, 3, group=12, hint="dw0"))
    y = g.conv_bn(y, 12, 10, 1, hint="project0")
    y = inverted(y, 10, 3, 14, 2)
    y = inverted(y, 14, 3, 14, 1)
    y = relu6(g.conv_bn(y, 14, 20, 1, hint="head"))
    y = g.op("GlobalAveragePool", [y])
    return g.model("mobilenet_blocks", [tensor_info("x", TensorProto.FLOAT, [1, 3, 33, 33])],
                   [tensor_info(y, TensorProto.FLOAT, [1, 20, 1, 1])])


@pytest.mark.parametrize("block", [16, 8, 4])
def test_mobilenet_blocks_blocked(tmp_path, block):
    """Depthwise convolutions and the global average pool take the layout:
    one conversion in (the input) and one out, after the pool."""
    counts, graph = compile_and_compare(tmp_path, mobilenet_blocks(), block)
    assert not [op for op in CONVS + ("graph.global_average_pool",) if op in counts], counts
    assert counts["graph.blocked_depthwise_conv"] == 3
    assert counts["graph.blocked_conv"] == 7
    assert counts["graph.blocked_average_pool"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    (pooled,) = re.findall(r"(%\w+) = graph.blocked_average_pool", graph)
    assert re.search(rf"graph.from_blocked {pooled} ", graph)


def conv_pool_conv(pool, out_shape, **attrs):
    g = GraphBuilder(seed=13)
    y = g.op("Relu", [g.conv_bn("x", 5, 12, 3, hint="a")])
    y = g.op(pool, [y], **attrs)
    y = g.conv_bn(y, 12, 6, 1, hint="b")
    return g.model("conv_pool_conv", [tensor_info("x", TensorProto.FLOAT, [1, 5, 13, 13])],
                   [tensor_info(y, TensorProto.FLOAT, out_shape)])


@pytest.mark.parametrize("ceil_mode", [0, 1])
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_blocked(tmp_path, ceil_mode, count_include_pad):
    # 13 x 13 padded by (1, 0) and (1, 1): 6 (7 with ceil_mode) x 7.
    out_shape = [1, 6, 6 + ceil_mode, 7]
    model = conv_pool_conv("AveragePool", out_shape, kernel_shape=[3, 3], strides=[2, 2],
                           pads=[1, 1, 0, 1], ceil_mode=ceil_mode,
                           count_include_pad=count_include_pad)
    counts, _ = compile_and_compare(tmp_path, model, 8)
    assert counts["graph.blocked_average_pool"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1


def test_global_max_pool_blocked(tmp_path):
    g = GraphBuilder(seed=17)
    y = g.op("GlobalMaxPool", [g.conv_bn("x", 5, 12, 3, stride=2, hint="a")])
    model = g.model("conv_gmp", [tensor_info("x", TensorProto.FLOAT, [1, 5, 11, 11])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 12, 1, 1])])
    counts, _ = compile_and_compare(tmp_path, model, 8)
    assert counts["graph.blocked_max_pool"] == 1
    assert "graph.global_max_pool" not in counts


def test_elementwise_blocked(tmp_path):
    """Unary and binary elementwise ops between blocked convolutions compute
    on the blocked tensors, with per-channel and scalar constants; a Div
    (0 / 0 in the padding channels) and an op on an input that is not
    blocked keep NCHW."""
    g = GraphBuilder(seed=19)
    a = g.conv_bn("x", 6, 10, 3, hint="a")
    b = g.conv_bn(a, 10, 10, 3, hint="b")
    y = g.op("Tanh", [g.op("Sub", [b, a])])
    y = g.op("Sigmoid", [g.op("Mul", [y, g.normal("scale", (1, 10, 1, 1), 1.0)])])
    y = g.op("HardSwish", [y])
    y = g.op("Max", [y, g.normal("floor", (10, 1, 1), 0.1)])
    y = g.op("LeakyRelu", [y], alpha=0.2)
    y = g.op("Min", [y, g.const("cap", np.float32(0.75))])
    y = g.conv_bn(y, 10, 7, 3, hint="c")
    z = g.op("Div", [y, g.op("Abs", [y])])
    w = g.op("Add", [y, "r"])
    model = g.model("elementwise", [tensor_info("x", TensorProto.FLOAT, [1, 6, 9, 9]),
                                    tensor_info("r", TensorProto.FLOAT, [1, 7, 9, 9])],
                    [tensor_info(z, TensorProto.FLOAT, [1, 7, 9, 9]),
                     tensor_info(w, TensorProto.FLOAT, [1, 7, 9, 9])])
    counts, graph = compile_and_compare(tmp_path, model, 8)
    blocked = "tensor<1x2x9x9x8xf32, #graph.blocked<c = 8>>"
    for op in ("mul", "tanh", "sub", "sigmoid", "hard_swish", "max", "leaky_relu", "min"):
        assert re.search(rf"graph.{op} .*{re.escape(blocked)}", graph), op
    # The abs feeding the Div is blocked (its padding is finite); the Div and
    # the Add of an NCHW input are not.
    assert re.search(r"graph.div .*tensor<1x7x9x9xf32>\)", graph)
    assert re.search(r"graph.add .*tensor<1x7x9x9xf32>\)", graph)
    assert counts["graph.to_blocked"] == 1


@pytest.mark.parametrize("block,blocked", [(8, True), (16, False)])
def test_concat_blocked(tmp_path, block, blocked):
    """A channel concat of blocked tensors of whole blocks (16 and 8
    channels in blocks of 8) is a concat of the blocks; in blocks of 16 the
    8 channels are not whole blocks, and the concat keeps NCHW."""
    g = GraphBuilder(seed=23)
    a = g.op("Relu", [g.conv_bn("x", 5, 16, 3, hint="a")])
    b = g.op("Relu", [g.conv_bn(a, 16, 8, 3, stride=1, hint="b")])
    y = g.op("Concat", [a, b], axis=1)
    y = g.conv_bn(y, 24, 6, 1, hint="c")
    model = g.model("concat", [tensor_info("x", TensorProto.FLOAT, [1, 5, 7, 7])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 6, 7, 7])])
    counts, _ = compile_and_compare(tmp_path, model, block)
    assert counts["graph.blocked_conv"] == 3
    assert counts["graph.to_blocked"] == (1 if blocked else 2)
    assert counts["graph.from_blocked"] == (1 if blocked else 3)


@pytest.mark.parametrize("channels,group,blocked", [
    (8, 2, True),    # groups of 4 merged two at a time: one block of 8
    (32, 2, True),   # two groups of two whole blocks
    (12, 4, False),  # groups of 3 channels: no merge of four makes blocks
])
def test_grouped_conv_layout(tmp_path, channels, group, blocked):
    """A 3x3 convolution of `group` groups (neither one group nor
    depthwise) takes the blocked layout where a few of its groups make
    whole blocks, so the chain has one conversion each way; otherwise it
    keeps NCHW, with conversions around it."""
    g = GraphBuilder(seed=29)
    y = g.op("Relu", [g.conv_bn("x", 4, channels, 3, hint="a")])
    y = g.op("Relu", [g.conv_bn(y, channels, channels, 3, group=group,
                                hint="grouped")])
    y = g.conv_bn(y, channels, 6, 3, hint="c")
    model = g.model("grouped", [tensor_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 6, 8, 8])])
    counts, _ = compile_and_compare(tmp_path, model, 8)
    assert "graph.blocked_depthwise_conv" not in counts
    assert counts["graph.blocked_conv"] == (3 if blocked else 2)
    assert counts["graph.to_blocked"] == (1 if blocked else 2)
    assert counts["graph.from_blocked"] == (1 if blocked else 2)


def batch_norm(g, x, c, hint):
    """An inference-mode BatchNormalization of `x` (`c` channels) that no
    convolution absorbs, with drawn statistics."""
    return g.op("BatchNormalization", [x, g.uniform(f"{hint}.scale", (c,), 0.7, 1.1),
                                       g.normal(f"{hint}.bias", (c,), 0.1),
                                       g.normal(f"{hint}.mean", (c,), 0.1),
                                       g.uniform(f"{hint}.var", (c,), 0.8, 1.5)],
                hint, epsilon=1e-5)


def test_dense_block_blocked(tmp_path):
    """DenseNet's dense block in small: BatchNorm and ReLU before each
    convolution (a BatchNorm after a concat, which no convolution absorbs)
    and the concat of the block's outputs all stay blocked."""
    g = GraphBuilder(seed=31)

    y = g.op("Relu", [g.conv_bn("x", 3, 16, 3, stride=2, hint="stem")])
    channels = 16
    for i in range(2):
        h = g.op("Relu", [batch_norm(g, y, channels, f"bn{i}a")])
        h = g.op("Relu", [g.conv_bn(h, channels, 32, 1, hint=f"conv{i}a")])
        h = g.conv_bn(h, 32, 8, 3, hint=f"conv{i}b")
        y = g.op("Concat", [y, h], axis=1)
        channels += 8
    y = g.op("AveragePool", [g.op("Relu", [batch_norm(g, y, channels, "final")])],
             kernel_shape=[2, 2], strides=[2, 2])
    model = g.model("dense_block", [tensor_info("x", TensorProto.FLOAT, [1, 3, 17, 17])],
                    [tensor_info(y, TensorProto.FLOAT, [1, channels, 4, 4])])
    counts, graph = compile_and_compare(tmp_path, model, 8)
    assert "graph.batch_norm" not in counts, counts
    assert counts["graph.blocked_conv"] == 5
    assert counts["graph.blocked_average_pool"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1


@pytest.mark.large
def test_mobilenetv2_convolutions_are_blocked(tmp_path, request):
    """Every one of MobileNetV2's 52 convolutions (17 depthwise) is blocked,
    with no layout conversion anywhere but the input's and one after the
    global average pool."""
    if not os.environ.get("KILN_LARGE_TESTS") and \
            "large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("large model: run with -m large or KILN_LARGE_TESTS=1")
    import mobilenetv2

    model = mobilenetv2.build()
    path = tmp_path / "mobilenetv2.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", "--layout-block=16"]
    counts, _, graph = graph_report(path, tmp_path, *args)
    assert not [op for op in CONVS if op in counts], counts
    assert counts["graph.blocked_conv"] == 35
    assert counts["graph.blocked_depthwise_conv"] == 17
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    (converted,) = re.findall(r"graph.from_blocked (%\w+) ", graph)
    assert re.search(rf"{converted} = graph.blocked_average_pool ", graph)
    assert_matches_onnxruntime(model, mobilenetv2.feeds(model), tmp_path / "run",
                               rtol=RTOL, atol=ATOL, compile_args=args)


def test_transition_pad_stays_blocked(tmp_path):
    """DenseNet's transition as torch exports it: a Pad of zeros before the
    AveragePool folds away, so the pool, the BatchNorm and ReLU after it
    (a per-channel scale and shift of blocked tensors, computed a vector of
    16 channels at a time) and the next convolution stay blocked. Then a
    Softmax over the channels takes the tensor out of the layout and back
    at 10 x 12 pixels (transposes whose blocks cross the ends)."""
    g = GraphBuilder(seed=37)

    y = g.op("Relu", [g.conv_bn("x", 3, 32, 3, hint="stem")])
    y = g.conv_bn(g.op("Relu", [batch_norm(g, y, 32, "bn0")]), 32, 32, 1, hint="transition")
    pads = g.const("pads", np.zeros(8, np.int64))
    y = g.op("AveragePool", [g.op("Pad", [y, pads])], kernel_shape=[2, 2], strides=[2, 2])
    y = g.conv_bn(g.op("Relu", [batch_norm(g, y, 32, "bn1")]), 32, 32, 3, hint="next")
    y = g.conv_bn(g.op("Softmax", [y], axis=1), 32, 16, 3, hint="after")
    model = g.model("transition", [tensor_info("x", TensorProto.FLOAT, [1, 3, 20, 24])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 16, 10, 12])])
    counts, graph = compile_and_compare(tmp_path, model, 16)
    assert "graph.pad" not in counts, counts
    assert "graph.batch_norm" not in counts, counts
    assert counts["graph.blocked_average_pool"] == 1
    assert counts["graph.blocked_conv"] == 4
    assert counts["graph.to_blocked"] == 2
    assert counts["graph.from_blocked"] == 2


@pytest.mark.large
@pytest.mark.parametrize("name,conversions", [("densenet121", 1), ("inception_v1", 3)])
def test_light_models_stay_blocked(tmp_path, request, name, conversions):
    """DenseNet-121 (pre-activation BatchNorm, concats, average pools) keeps
    the layout from its input to its global pool; Inception v1 leaves it only
    around its two LRNs (across channels, NCHW)."""
    if not os.environ.get("KILN_LARGE_TESTS") and \
            "large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("large model: run with -m large or KILN_LARGE_TESTS=1")
    model = light_models.build(name)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", "--layout-block=16"]
    counts, _, _ = graph_report(path, tmp_path, *args)
    assert not [op for op in CONVS if op in counts], counts
    assert counts["graph.to_blocked"] == conversions
    assert counts["graph.from_blocked"] == conversions
    assert_matches_onnxruntime(model, light_models.feeds(model), tmp_path / "run",
                               rtol=RTOL, atol=ATOL, compile_args=args)


@pytest.mark.parametrize("stride,dilation", [(1, 2), (2, 1), (2, 2)])
def test_depthwise_residual_dilation(tmp_path, stride, dilation):
    """A depthwise convolution with a bias, a residual Add and an activation
    fused into it, dilated and strided, on 20 channels in blocks of 8."""
    g = GraphBuilder(seed=37)
    y = g.op("Relu", [g.conv_bn("x", 5, 20, 1, hint="a")])
    w = g.normal("dw.weight", (20, 1, 3, 3), 0.3)
    b = g.normal("dw.bias", (20,), 0.1)
    pad = dilation
    h = g.op("Conv", [y, w, b], "dw", kernel_shape=[3, 3], strides=[stride] * 2,
             pads=[pad] * 4, dilations=[dilation] * 2, group=20)
    size = (15 - 1) // stride + 1
    if stride == 1:
        h = g.op("Add", [h, y])
    h = g.op("LeakyRelu", [h], alpha=0.1)
    h = g.conv_bn(h, 20, 6, 1, hint="c")
    model = g.model("depthwise", [tensor_info("x", TensorProto.FLOAT, [1, 5, 15, 15])],
                    [tensor_info(h, TensorProto.FLOAT, [1, 6, size, size])])
    counts, graph = compile_and_compare(tmp_path, model, 8)
    assert counts["graph.blocked_depthwise_conv"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    if stride == 1:
        assert re.search(r"graph.blocked_depthwise_conv .* residual .* activation leaky_relu",
                         graph)


def test_explicit_pads_fold_into_window_ops(tmp_path):
    """Pads written out before window ops, as exporters do: torch.onnx's
    avg_pool2d(padding=1) (a Pad, then an AveragePool that does not count
    padding), Keras' ZeroPadding2D before a stride-2 convolution
    (asymmetric) and before a MaxPool of a ReLU, and a -inf Pad before a
    MaxPool. Each Pad folds into the op after it, so every op stays in the
    blocked layout (kiln-graph-fold-pads), and the results do not change.
    A reflect Pad stays, and takes the tensor out of the layout."""
    g = GraphBuilder(seed=41)

    def pad(x, hint, begin, end, value=None, mode="constant"):
        pads = g.const(f"{hint}.pads", np.array([0, 0, *begin, 0, 0, *end], np.int64))
        inputs = [x, pads]
        if value is not None:
            inputs.append(g.const(f"{hint}.value", np.float32(value)))
        return g.op("Pad", inputs, mode=mode)

    y = g.op("Relu", [g.conv_bn("x", 3, 24, 3, hint="stem")])                       # 21 x 19
    y = g.op("AveragePool", [pad(y, "avg", [1, 1], [1, 1])], kernel_shape=[3, 3],
             count_include_pad=0)                                                  # 21 x 19
    w = g.normal("s2.weight", (20, 24, 3, 3), 0.2)
    y = g.op("Relu", [g.op("Conv", [pad(y, "s2", [0, 0], [1, 1]), w], kernel_shape=[3, 3],
                           strides=[2, 2])])                                       # 10 x 9
    y = g.op("MaxPool", [pad(y, "max", [1, 1], [1, 1], 0.0)], kernel_shape=[3, 3],
             strides=[2, 2])                                                       # 5 x 5
    y = g.conv_bn(y, 20, 20, 1, hint="mid")
    y = g.op("MaxPool", [pad(y, "ninf", [1, 0], [0, 1], -np.inf)], kernel_shape=[2, 2],
             strides=[1, 1])                                                       # 5 x 5
    y = g.conv_bn(y, 20, 16, 3, hint="after")
    model = g.model("explicit_pads", [tensor_info("x", TensorProto.FLOAT, [1, 3, 21, 19])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 16, 5, 5])])
    counts, _ = compile_and_compare(tmp_path, model, 8)
    assert "graph.pad" not in counts, counts
    assert not [op for op in CONVS + ("graph.average_pool", "graph.max_pool") if op in counts]
    assert counts["graph.blocked_average_pool"] == 1
    assert counts["graph.blocked_max_pool"] == 2
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1

    # The same with a reflect Pad before the average pool: it stays.
    g = GraphBuilder(seed=41)
    y = g.op("Relu", [g.conv_bn("x", 3, 24, 3, hint="stem")])
    y = g.op("AveragePool", [pad(y, "avg", [1, 1], [1, 1], mode="reflect")],
             kernel_shape=[3, 3])
    y = g.conv_bn(y, 24, 8, 1, hint="after")
    model = g.model("reflect_pad", [tensor_info("x", TensorProto.FLOAT, [1, 3, 21, 19])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 8, 21, 19])])
    counts, _ = compile_and_compare(tmp_path, model, 8)
    assert counts["graph.pad"] == 1
