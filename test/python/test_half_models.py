"""Half-precision (f16) models, as deployment converters emit them: weights,
inputs and outputs in f16. The CPU has no f16 arithmetic that Kiln's code
uses, so kiln-graph-widen-half computes them in f32 (issue 19): the model's
inputs and outputs stay f16, and the products and convolutions are the f32
ones."""

import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from test_qlinear import conv_stack, mlp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import to_fp16  # noqa: E402

rng = np.random.default_rng(16)


def to_half(model):
    """`model` in f16, as tools/models/to_fp16.py converts it."""
    half = onnx.ModelProto()
    half.CopyFrom(model)
    return to_fp16.convert(half)


def to_float(model):
    """The f32 twin of an f16 model: the same (f16) weight values."""
    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    graph = wide.graph
    for i, tensor in enumerate(graph.initializer):
        if tensor.data_type == TensorProto.FLOAT16:
            values = numpy_helper.to_array(tensor).astype(np.float32)
            graph.initializer[i].CopyFrom(numpy_helper.from_array(values, tensor.name))
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT16:
            value.type.tensor_type.elem_type = TensorProto.FLOAT
    return wide


def session(model):
    return onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("build,shape", [(conv_stack, (1, 3, 21, 21)),
                                         (mlp, (3, 10, 40))], ids=["conv", "mlp"])
def test_f16_model_computes_in_f32(build, shape):
    model = to_half(build())
    # The products and convolutions are f32 ops; f16 is left at the edges.
    graph = kiln.compile(model, emit="graph")
    graph = open(graph).read() if not graph.lstrip().startswith("module") else graph
    contractions = [line for line in graph.splitlines()
                    if re.search(r"graph\.(blocked_conv|fused_conv|conv|matmul|fused_matmul|gemm)\b", line)]
    assert contractions
    assert not [line for line in contractions if "f16" in line]

    ours = kiln.load(kiln.compile(model))
    name = model.graph.input[0].name
    assert ours.inputs[0].dtype == np.float16
    twin, peer = session(to_float(model)), session(model)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float16)
        got = next(iter(ours.run({name: x}).values()))
        assert got.dtype == np.float16
        exact = twin.run(None, {name: x.astype(np.float32)})[0]
        # Computed in f32 and rounded once: within half an f16 step of the
        # f32 twin's result (which sums in another order).
        step = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float32)
        assert (np.abs(got.astype(np.float32) - exact) <= step + 1e-4 * np.abs(exact).max()).all()
        # onnxruntime computes the f16 model in f32 too.
        want = peer.run(None, {name: x})[0]
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=2e-3, atol=2e-3 * np.abs(want).max())


def test_cast_to_f16_still_rounds():
    # An f32 model that rounds to f16 in the middle and adds a small term
    # after: computing that Add in f32 must not skip the rounding.
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.FLOAT16),
         helper.make_node("Add", ["h", "eps"], ["s"]),
         helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT)],
        "rounding",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array([2.0 ** -12] * 4, np.float16), "eps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    x = np.array([1 + 2.0 ** -13, 1 - 2.0 ** -13, 3.0, -0.5], np.float32)
    got = kiln.load(kiln.compile(model)).run({"x": x})["y"]
    # The Cast rounds (1 + 2^-13 is 1 in f16, whose step at 1 is 2^-10);
    # the f16 Add after it is computed in f32 and, feeding a Cast to f32,
    # is not rounded: 1 + 2^-12 (onnxruntime, which also computes it in
    # f32 but rounds its result to f16, gives 1).
    want = x.astype(np.float16).astype(np.float32) + np.float32(2.0 ** -12)
    np.testing.assert_array_equal(got, want)
    assert got[0] == 1 + 2.0 ** -12  # not 1 + 3 * 2^-13: the Cast rounded


def test_f16_weights_are_stored_as_f16(tmp_path):
    # A product by a one-hot matrix returns the weight's rows: every value,
    # f16's subnormals and extremes included, survives being stored as f16
    # in the shared object and converted to f32 when the model loads.
    w = rng.standard_normal((256, 1024)).astype(np.float16)
    w[0, :9] = [0, -0.0, 2.0 ** -24, -(2.0 ** -24), 3 * 2.0 ** -20, 2.0 ** -14,
                65504, -65504, 1 + 2.0 ** -10]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [256, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [256, 1024])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              ir_version=8)
    half, exact, inexact = (tmp_path / f"{name}.so" for name in ("half", "exact", "inexact"))
    kiln.compile(model, output=str(half))
    # f32 twins: with the same weights (f16 values), and with weights that
    # f16 does not hold (a relative change of 2^-20).
    kiln.compile(to_float(model), output=str(exact))
    perturbed = to_float(model)
    w32 = w.astype(np.float32) * np.float32(1 + 2.0 ** -20)
    perturbed.graph.initializer[0].CopyFrom(numpy_helper.from_array(w32, "w"))
    kiln.compile(perturbed, output=str(inexact))
    # 512 KB of f16 weights: stored as f16 in both models that hold f16
    # values, as f32 (twice the bytes) in the other.
    assert half.stat().st_size < inexact.stat().st_size - 0.8 * w.nbytes
    assert abs(exact.stat().st_size - half.stat().st_size) < 0.2 * w.nbytes
    x = np.eye(256, dtype=np.float16)
    got = kiln.load(str(half)).run({"x": x})["y"]
    np.testing.assert_array_equal(got, w)
    np.testing.assert_array_equal(
        kiln.load(str(exact)).run({"x": x.astype(np.float32)})["y"], w.astype(np.float32))
    np.testing.assert_array_equal(
        kiln.load(str(inexact)).run({"x": x.astype(np.float32)})["y"], w32)
