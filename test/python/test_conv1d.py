"""1-D convolutions (audio and sequence models) run as 2-D convolutions of
height 1 (kiln-graph-conv1d-as-2d): the blocked layout and its kernels,
with the activations after them computed in 4-D (issue 19)."""

import re

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

rng = np.random.default_rng(11)


def conv1d_stack(channels=24, length=50, batch=1):
    """Conv k3 + BatchNorm + Relu; a strided, dilated, grouped Conv with
    asymmetric pads; a depthwise k7 Conv and SiLU; a 1x1 Conv with a
    residual Add; a per-channel Mul."""
    inits, nodes = [], []

    def const(name, values):
        inits.append(numpy_helper.from_array(np.asarray(values, np.float32), name))
        return name

    def conv(x, y, cout, cin_per_group, k, **attrs):
        w = const(y + "_w", rng.standard_normal((cout, cin_per_group, k)) * 0.3)
        b = const(y + "_b", rng.standard_normal(cout) * 0.1)
        nodes.append(helper.make_node("Conv", [x, w, b], [y], **attrs))

    c = channels
    conv("x", "c1", c, c, 3, pads=[1, 1])
    nodes.append(helper.make_node(
        "BatchNormalization",
        ["c1", const("g", rng.uniform(0.5, 1.5, c)), const("beta", rng.standard_normal(c)),
         const("mean", rng.standard_normal(c) * 0.1), const("var", rng.uniform(0.5, 2, c))],
        ["bn"]))
    nodes.append(helper.make_node("Relu", ["bn"], ["r1"]))
    conv("r1", "c2", c, c // 4, 5, strides=[2], dilations=[2], pads=[1, 3], group=4)
    conv("c2", "dw", c, 1, 7, pads=[3, 3], group=c)
    nodes.append(helper.make_node("Sigmoid", ["dw"], ["sg"]))
    nodes.append(helper.make_node("Mul", ["dw", "sg"], ["silu"]))
    conv("silu", "c3", c, c, 1)
    nodes.append(helper.make_node("Add", ["c3", "c2"], ["res"]))
    nodes.append(helper.make_node("Mul", ["res", const("scale", rng.uniform(0.5, 2, (c, 1)))], ["y"]))
    graph = helper.make_graph(
        nodes, "conv1d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             ir_version=8)


@pytest.mark.parametrize("batch,length", [(1, 50), (2, 33), (1, 7)])
def test_conv1d_stack_against_onnxruntime(batch, length):
    model = conv1d_stack(length=length, batch=batch)
    graph = kiln.compile(model, emit="graph")
    graph = open(graph).read() if not graph.lstrip().startswith("module") else graph
    # Every convolution is a 2-D one of height 1 (the grouped one in NCHW,
    # the rest blocked), its BatchNorm folded, its activation or residual
    # fused: none is left over [N, C, L].
    convs = [line.split(" : (", 1)[1] for line in graph.splitlines()
             if re.search(r"graph\.(blocked_|blocked_depthwise_)?conv ", line)]
    assert len(convs) == 4
    assert all(re.match(rf"tensor<{batch}x\d+x1x\d+x", operands) for operands in convs), convs
    assert "activation relu" in graph and "residual" in graph
    ours = kiln.load(kiln.compile(model))
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    for _ in range(2):
        x = rng.standard_normal((batch, 24, length)).astype(np.float32)
        want = session.run(None, {"x": x})[0]
        got = ours.run({"x": x})["y"]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
