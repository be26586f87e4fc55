"""Transposed convolutions computed by phases (kiln-graph-conv-transpose-as-
conv): one convolution with stride^d times the filters, interleaved, rather
than a convolution of the input with zeros inserted (issue 19). Checked
against onnxruntime over strides, kernel sizes smaller and larger than the
stride, pads, output padding, groups, biases and 1-D to 3-D."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

rng = np.random.default_rng(5)

CASES = [
    # (input shape, out channels, kernel, strides, pads, output_padding, group, bias)
    ((1, 16, 7, 7), 8, (4, 4), (2, 2), (1, 1, 1, 1), (0, 0), 1, True),
    ((1, 16, 7, 9), 8, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, True),
    ((2, 8, 5, 5), 16, (2, 2), (2, 2), (0, 0, 0, 0), (0, 0), 1, False),
    ((1, 12, 6, 5), 6, (5, 3), (3, 2), (2, 0, 1, 1), (1, 0), 3, True),
    ((1, 8, 6, 6), 8, (3, 3), (1, 1), (1, 1, 1, 1), (0, 0), 1, True),
    ((1, 8, 4, 4), 4, (1, 1), (3, 3), (0, 0, 0, 0), (2, 2), 1, True),
    ((1, 6, 11), 10, (4,), (2,), (1, 1), (0,), 2, True),
    ((1, 4, 3, 4, 4), 4, (2, 3, 3), (2, 2, 2), (0, 1, 1, 0, 1, 1), (0, 1, 1), 1, True),
]


def conv_transpose_model(shape, filters, kernel, strides, pads, output_padding,
                         group, bias):
    channels = shape[1]
    w = (rng.standard_normal((channels, filters // group) + kernel) * 0.3).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(filters).astype(np.float32), "b"))
        inputs.append("b")
    node = helper.make_node("ConvTranspose", inputs, ["y"], strides=list(strides),
                            pads=list(pads), output_padding=list(output_padding),
                            group=group)
    graph = helper.make_graph(
        [node, helper.make_node("Relu", ["y"], ["r"])], "convT",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             ir_version=8)


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_conv_transpose_by_phases(case):
    model = conv_transpose_model(*case)
    graph = kiln.compile(model, emit="graph")
    graph = open(graph).read() if not graph.lstrip().startswith("module") else graph
    # No transposed convolution is left for the zero-insertion lowering.
    assert "conv_transpose" not in graph
    ours = kiln.load(kiln.compile(model))
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    x = rng.standard_normal(case[0]).astype(np.float32)
    want = session.run(None, {"x": x})[0]
    got = ours.run({"x": x})["r"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_dilated_conv_transpose_keeps_its_lowering():
    # Dilation is left to the zero-insertion lowering, and still correct.
    w = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                            dilations=[2, 2], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "dilated",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    graph_text = kiln.compile(model, emit="graph")
    graph_text = open(graph_text).read() if not graph_text.lstrip().startswith("module") else graph_text
    assert "conv_transpose" in graph_text
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    want = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(kiln.load(kiln.compile(model)).run({"x": x})["y"], want,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_with_batch_norm_and_activation(group):
    # A decoder's layer: ConvTranspose, BatchNormalization (folded into its
    # filter and bias), a per-channel Mul and Add (folded too), then an
    # activation applied to the phases before they interleave, fused into
    # the convolution.
    filters = 8
    w = (rng.standard_normal((6, filters // group, 4, 4)) * 0.3).astype(np.float32)
    channel = lambda low, high: rng.uniform(low, high, filters).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(channel(-0.5, 0.5), "b"),
             numpy_helper.from_array(channel(0.5, 1.5), "g"),
             numpy_helper.from_array(channel(-0.5, 0.5), "beta"),
             numpy_helper.from_array(channel(-0.2, 0.2), "mean"),
             numpy_helper.from_array(channel(0.5, 2.0), "var"),
             numpy_helper.from_array(channel(0.5, 2.0).reshape(filters, 1, 1), "s"),
             numpy_helper.from_array(channel(-1, 1).reshape(filters, 1, 1), "t")]
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["c"], strides=[2, 2],
                              pads=[1, 1, 1, 1], group=group),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["n"]),
             helper.make_node("Mul", ["n", "s"], ["m"]),
             helper.make_node("Add", ["m", "t"], ["a"]),
             helper.make_node("LeakyRelu", ["a"], ["y"], alpha=0.2)]
    graph = helper.make_graph(
        nodes, "decoder_layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    text = kiln.compile(model, emit="graph")
    text = open(text).read() if not text.lstrip().startswith("module") else text
    assert "batch_norm" not in text and "graph.mul" not in text and "graph.add" not in text
    assert "activation leaky_relu" in text or "graph.leaky_relu %" in text
    x = rng.standard_normal((1, 6, 9, 9)).astype(np.float32)
    want = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(kiln.load(kiln.compile(model)).run({"x": x})["y"], want,
                               rtol=1e-4, atol=1e-4)
