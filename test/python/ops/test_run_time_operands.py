"""Operands that used to be needed at compile time, now read at run time:
Trilu's k, CumSum's and CumProd's axis, TopK's K (whose output size the run
then decides). One compiled model serves every value, checked against
onnxruntime; a value out of range fails the run with a clear error.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln_testing import compile_model, run_onnxruntime

rng = np.random.default_rng(23)


def model_of(op, x, operand_name, operand_shape, attrs=None, opset=18,
             outputs=("y",)):
    node = helper.make_node(op, ["x", operand_name], list(outputs), **(attrs or {}))
    x_type = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}[x.dtype.type]
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info("x", x_type, x.shape),
         helper.make_tensor_value_info(operand_name, TensorProto.INT64,
                                       operand_shape)],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
         for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def check_values(model, x, name, values, tmp_path):
    loaded = kiln.load(compile_model(model, tmp_path))
    for value in values:
        feeds = {"x": x, name: value}
        got = loaded.run(feeds)
        for out, want in run_onnxruntime(model, feeds).items():
            assert got[out].shape == want.shape, (value, out)
            np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name}={value}, {out}")
    return loaded


@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_run_time_k(upper, tmp_path):
    x = rng.standard_normal((2, 4, 6)).astype(np.float32)
    model = model_of("Trilu", x, "k", [], {"upper": upper}, opset=14)
    check_values(model, x, "k", [np.array(k, np.int64) for k in
                                 (0, 1, -2, 5, -7, 100, -100)], tmp_path)


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
def test_cumulative_run_time_axis(op, tmp_path):
    # Checked against numpy (onnxruntime lacks CumProd).
    x = (rng.random((2, 3, 4)) + 0.5).astype(np.float32)
    model = model_of(op, x, "axis", [], {"exclusive": 1, "reverse": 1},
                     opset=26 if op == "CumProd" else 18)
    loaded = kiln.load(compile_model(model, tmp_path))
    for axis in (0, 1, 2, -1, -3):
        got = loaded.run({"x": x, "axis": np.array(axis, np.int64)})["y"]
        moved = np.flip(x, axis)
        acc = (np.cumsum if op == "CumSum" else np.cumprod)(moved, axis=axis)
        identity = 0.0 if op == "CumSum" else 1.0
        shifted = np.concatenate(
            [np.full_like(np.take(acc, [0], axis=axis), identity),
             np.delete(acc, -1, axis=axis)], axis=axis)
        np.testing.assert_allclose(got, np.flip(shifted, axis), rtol=1e-5,
                                   err_msg=f"axis {axis}")
    with pytest.raises(kiln.InvalidInputError, match="index 3 is out of range"):
        loaded.run({"x": x, "axis": np.array(3, np.int64)})


def test_topk_run_time_k(tmp_path):
    x = rng.standard_normal((3, 7)).astype(np.float32)
    model = model_of("TopK", x, "K", [1], {"axis": 1, "largest": 0},
                     outputs=("values", "indices"))
    loaded = check_values(model, x, "K",
                          [np.array([k], np.int64) for k in (0, 1, 4, 7)],
                          tmp_path)
    (symbol,) = loaded.symbols
    assert symbol.data_dependent and symbol.max == 7
    with pytest.raises(kiln.InvalidInputError, match="index 8 is out of range"):
        loaded.run({"x": x, "K": np.array([8], np.int64)})
