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
from kiln_testing import KilnError, compile_model, run_onnxruntime

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


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceL2"])
def test_reduce_run_time_axes(op, keepdims, tmp_path):
    """Which axes a reduction takes decides its output's shape: one compiled
    model serves every pair of axes; the sizes come back with the run."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    model = model_of(op, x, "axes", [2], {"keepdims": keepdims})
    loaded = check_values(model, x, "axes", [
        np.array(a, np.int64) for a in ([0, 1], [2, 0], [-1, 1], [0, -1])],
        tmp_path)
    assert all(s.data_dependent for s in loaded.symbols)
    with pytest.raises(kiln.InvalidInputError, match="out of range"):
        loaded.run({"x": x, "axes": np.array([0, 3], np.int64)})
    with pytest.raises(kiln.InvalidInputError, match="out of range"):
        loaded.run({"x": x, "axes": np.array([1, 1], np.int64)})


def test_reduce_run_time_axes_flow_through_element_wise(tmp_path):
    """torch's expanded ReduceL2: ReduceSum of squares, then Sqrt; each
    output dimension's size passes through."""
    x = rng.standard_normal((3, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["sq"]),
         helper.make_node("ReduceSum", ["sq", "axes"], ["s"], keepdims=1),
         helper.make_node("Sqrt", ["s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              ir_version=8)
    check_values(model, x, "axes",
                 [np.array([a], np.int64) for a in (0, 1, -1)], tmp_path)


@pytest.mark.parametrize("steps", [(1, 1), (2, -1)])
def test_slice_run_time_starts_and_ends(steps, tmp_path):
    """x[s0:e0:t0, :, s1:e1:t1] with the starts and ends read at run time
    (axes and steps constants): each sliced dimension's size is one the run
    decides."""
    x = rng.standard_normal((6, 3, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                          ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("starts", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("ends", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([0, -1], np.int64), "axes"),
         onnx.numpy_helper.from_array(np.array(steps, np.int64), "steps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              ir_version=8)
    loaded = kiln.load(compile_model(model, tmp_path))
    for starts, ends in [((0, 0), (6, 8)), ((1, -2), (-1, 2)), ((4, 7), (2, 0)),
                         ((-100, 100), (100, -100)), ((2, 3), (2, 3)),
                         ((0, -1), (9223372036854775807, -9223372036854775807))]:
        feeds = {"x": x, "starts": np.array(starts, np.int64),
                 "ends": np.array(ends, np.int64)}
        got = loaded.run(feeds)["y"]
        want = run_onnxruntime(model, feeds)["y"]
        assert got.shape == want.shape, (starts, ends)
        np.testing.assert_array_equal(got, want, err_msg=f"{starts} {ends}")
    assert len(loaded.symbols) == 2


def test_reduce_too_many_sets_of_run_time_axes_is_refused(tmp_path):
    """C(8, 4) = 70 sets is fine, C(10, 5) = 252 is too many reductions to
    compile in advance: a clear error, not a compile that never ends."""
    x = np.zeros((1,) * 10, np.float32)
    model = model_of("ReduceSum", x, "axes", [5])
    with pytest.raises(KilnError, match="make 252 sets of axes, more than the 128"):
        compile_model(model, tmp_path)


def test_split_run_time_sizes(tmp_path):
    """Split by sizes read at run time: each output's size along the axis is
    one the run decides; sizes that are negative or do not add up to the
    axis fail the run."""
    x = rng.standard_normal((3, 7)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Split", ["x", "split"], ["a", "b", "c"], axis=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("split", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
         for o in "abc"])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              ir_version=8)
    loaded = check_values(model, x, "split", [
        np.array(s, np.int64) for s in ([2, 3, 2], [0, 7, 0], [7, 0, 0], [1, 1, 5])],
        tmp_path)
    assert len(loaded.symbols) == 3
    for bad in ([2, 2, 2], [8, -1, 0]):
        with pytest.raises(kiln.InvalidInputError, match="Split"):
            loaded.run({"x": x, "split": np.array(bad, np.int64)})
