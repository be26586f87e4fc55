"""End-to-end tests of the optimisers of ai.onnx.preview.training (Adagrad,
Adam, Momentum; lib/Import/ImportTraining.cpp) and the numeric operators of
ai.onnx.ml (Binarizer, ArrayFeatureExtractor; lib/Import/ImportML.cpp),
against ONNX's reference evaluator (onnxruntime does not implement the
training domain). The step count T is a run-time input, so the first step
(T = 0, no bias correction) and a later one run through one compiled model.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import kiln
from kiln_testing import KilnError, compile_model, run_compiled

RNG = np.random.default_rng(20)
TRAINING = "ai.onnx.preview.training"


def data(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def optimiser_model(op, groups, shapes, attrs):
    """One `op` node updating tensors of `shapes`; `groups` names the input
    lists after R and T (X, G, then the optimiser's state)."""
    inputs = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    names, outputs = ["R", "T"], []
    for group in groups:
        for i, shape in enumerate(shapes):
            names.append(f"{group}{i}")
            inputs.append(helper.make_tensor_value_info(
                f"{group}{i}", TensorProto.FLOAT, list(shape)))
    for group in ["X"] + groups[2:]:
        for i, shape in enumerate(shapes):
            outputs.append(helper.make_tensor_value_info(
                f"{group}{i}_new", TensorProto.FLOAT, list(shape)))
    node = helper.make_node(op, names, [o.name for o in outputs],
                            domain=TRAINING, **attrs)
    graph = helper.make_graph([node], op.lower(), inputs, outputs)
    m = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(TRAINING, 1)])
    m.ir_version = 8
    return m


def feeds_for(m, steps):
    feeds = {"R": np.array(0.1, np.float32), "T": np.array(steps, np.int64)}
    for i in m.graph.input[2:]:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        value = data(*shape)
        # Accumulated squares (H) are never negative.
        feeds[i.name] = np.abs(value) if i.name.startswith("H") else value
    return feeds


def assert_matches_reference(m, tmp_path, steps_list=(0, 3)):
    so = compile_model(m, tmp_path)
    for steps in steps_list:
        feeds = feeds_for(m, steps)
        (tmp_path / f"t{steps}").mkdir()
        got = run_compiled(so, feeds, tmp_path / f"t{steps}")
        names = [o.name for o in m.graph.output]
        want = dict(zip(names, ReferenceEvaluator(m).run(None, feeds)))
        for name in names:
            np.testing.assert_allclose(got[name], np.asarray(want[name], np.float32),
                                       rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} at T={steps}")


@pytest.mark.parametrize("attrs", [
    {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01},
    {},
])
def test_adagrad(tmp_path, attrs):
    m = optimiser_model("Adagrad", ["X", "G", "H"], [(3, 4), (5,)], attrs)
    assert_matches_reference(m, tmp_path)


@pytest.mark.parametrize("attrs", [
    {"alpha": 0.9, "beta": 0.8, "epsilon": 1e-2, "norm_coefficient": 0.01,
     "norm_coefficient_post": 0.02},
    {"epsilon": 1e-6},
])
def test_adam(tmp_path, attrs):
    m = optimiser_model("Adam", ["X", "G", "V", "H"], [(2, 3), (4,)], attrs)
    assert_matches_reference(m, tmp_path)


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
def test_momentum(tmp_path, mode):
    m = optimiser_model("Momentum", ["X", "G", "V"], [(6,), (2, 2)],
                        {"alpha": 0.9, "beta": 0.5, "mode": mode,
                         "norm_coefficient": 0.01})
    assert_matches_reference(m, tmp_path)


def test_optimiser_refusals(tmp_path):
    m = optimiser_model("Momentum", ["X", "G", "V"], [(3,)],
                        {"alpha": 0.9, "beta": 0.5, "mode": "heavy-ball"})
    with pytest.raises(KilnError, match='mode must be "standard" or "nesterov"'):
        compile_model(m, tmp_path / "mode")
    m = optimiser_model("Adam", ["X", "G", "V", "H"], [(3,)], {})
    m.graph.node[0].input.pop()  # one H short
    with pytest.raises(KilnError, match="needs R, T and 4 equally long lists"):
        compile_model(m, tmp_path / "count")


def ml_model(op, inputs, output, attrs=None):
    node = helper.make_node(op, list(inputs), [output], domain="ai.onnx.ml",
                            name="ml", **(attrs or {}))
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                       list(v.shape)) for n, v in inputs.items()],
        [helper.make_tensor_value_info(output, TensorProto.UNDEFINED, None)])
    m = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_binarizer(tmp_path, dtype):
    x = (data(3, 4) * 3).astype(dtype)
    m = ml_model("Binarizer", {"x": x}, "y", {"threshold": 0.5})
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)["y"]
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,indices", [
    ((3, 4), [[0, 3, -1]]),   # a [1, n] index row, a negative index
    ((2, 3, 5), [4, 0]),
    ((6,), [[1, 2], [5, 0]]),  # 1-D data gives [1, n]; 2-D indices flatten
])
def test_array_feature_extractor(tmp_path, shape, indices):
    x = data(*shape)
    y = np.array(indices, np.int64)
    m = ml_model("ArrayFeatureExtractor", {"x": x, "y": y}, "z")
    got = run_compiled(compile_model(m, tmp_path), {"x": x, "y": y}, tmp_path)["z"]
    want = ReferenceEvaluator(m).run(None, {"x": x, "y": y})[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_array_feature_extractor_index_out_of_range(tmp_path):
    x, y = data(3, 4), np.array([1, 2], np.int64)
    m = ml_model("ArrayFeatureExtractor", {"x": x, "y": y}, "z")
    model = kiln.load(compile_model(m, tmp_path))
    with pytest.raises(kiln.InvalidInputError,
                       match=r"ml \(ArrayFeatureExtractor\): index 4 is out of range \[-4, 3\]"):
        model.run({"x": x, "y": np.array([1, 4], np.int64)})
