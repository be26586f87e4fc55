"""End-to-end tests of the reduction operators (ReduceX, Softmax, LogSoftmax,
Hardmax, ArgMax, ArgMin, CumSum, CumProd) against onnxruntime.

Each test builds a one-node ONNX model, compiles it with kiln-compile, runs it
with kiln-run and compares every output with onnxruntime (dtype, shape, values).
Old opsets, where axes were attributes and Softmax coerced its input to 2-D,
are tested beside the current ones.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import KilnError, assert_matches_onnxruntime, compile_model

NP_TO_ONNX = {
    np.float16: TensorProto.FLOAT16,
    np.float32: TensorProto.FLOAT,
    np.float64: TensorProto.DOUBLE,
    np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64,
    np.uint8: TensorProto.UINT8,
}


def data(shape, dtype=np.float32, seed=0, low=-10, high=10):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(max(low, 0) if dtype == np.uint8 else low, high,
                            size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def model(op, x, attrs=None, consts=None, opset=18, outputs=("y",)):
    """A one-node model reading graph input `x`, then the initializers
    `consts` (name -> array, or None for an absent optional input)."""
    consts = consts or {}
    names = ["x"] + [n if v is not None else "" for n, v in consts.items()]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    inputs = [helper.make_tensor_value_info("x", NP_TO_ONNX[x.dtype.type], x.shape)]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
            for o in outputs]
    inits = [numpy_helper.from_array(v, n) for n, v in consts.items() if v is not None]
    graph = helper.make_graph([node], op.lower(), inputs, outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def check(m, x, tmp_path, **kw):
    assert_matches_onnxruntime(m, {"x": x}, tmp_path, **kw)


REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
              "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
              "ReduceSumSquare"]
# The opset from which each op takes its axes as an input.
AXES_INPUT_SINCE = {op: 13 if op == "ReduceSum" else 18 for op in REDUCE_OPS}


def positive_input(op, shape, dtype=np.float32):
    """Inputs that keep log() defined and products small."""
    x = data(shape, dtype)
    if op in ("ReduceLogSum",):
        x = np.abs(x) + np.asarray(0.5, dtype)
    if op == "ReduceProd" and dtype == np.float32:
        x = np.asarray(0.5, dtype) + np.abs(x) / 4
    return x


# --- ReduceX: axes as an input (opset 18) and as an attribute ---------------

@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_axes_input_keepdims(op, tmp_path):
    x = positive_input(op, (3, 4, 5))
    axes = np.array([-1, 0], np.int64)
    check(model(op, x, {"keepdims": 1}, {"axes": axes}, opset=18), x, tmp_path)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_axes_attribute(op, tmp_path):
    x = positive_input(op, (2, 7, 3))
    opset = AXES_INPUT_SINCE[op] - 1
    check(model(op, x, {"axes": [1], "keepdims": 0}, opset=opset), x, tmp_path)


def test_reduce_sum_all_axes_default(tmp_path):
    # No axes input and noop_with_empty_axes = 0: everything is reduced.
    x = data((3, 5, 2))
    check(model("ReduceSum", x, {"keepdims": 0}, opset=13), x, tmp_path)


def test_reduce_mean_empty_axes_reduces_all(tmp_path):
    x = data((4, 3))
    check(model("ReduceMean", x, {"keepdims": 1},
                {"axes": np.array([], np.int64)}, opset=18), x, tmp_path)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceSumSquare", "ReduceL1",
                                "ReduceLogSumExp", "ReduceMax"])
def test_reduce_noop_with_empty_axes(op, tmp_path):
    # Nothing is reduced; the per-element part still applies (x*x, |x|...).
    x = data((3, 4))
    check(model(op, x, {"keepdims": 1, "noop_with_empty_axes": 1},
                {"axes": np.array([], np.int64)}, opset=18), x, tmp_path)


def test_reduce_middle_axes_odd_sizes(tmp_path):
    x = data((3, 5, 7, 2))
    check(model("ReduceSum", x, {"keepdims": 0},
                {"axes": np.array([2, -3], np.int64)}, opset=13), x, tmp_path)


@pytest.mark.parametrize("op,dtype", [
    ("ReduceSum", np.int32), ("ReduceSum", np.int64), ("ReduceMean", np.int32),
    ("ReduceMax", np.int32), ("ReduceMin", np.int64), ("ReduceMax", np.uint8),
    ("ReduceMin", np.uint8), ("ReduceProd", np.int64), ("ReduceL1", np.int64),
    ("ReduceSumSquare", np.int32), ("ReduceSum", np.float64),
])
def test_reduce_types(op, dtype, tmp_path):
    x = data((4, 3, 5), dtype, low=-3, high=4)
    check(model(op, x, {"keepdims": 0}, {"axes": np.array([1], np.int64)},
                opset=18), x, tmp_path)


def test_reduce_log_sum_exp_large_values(tmp_path):
    # exp(1000) overflows: the maximum must be subtracted first.
    x = data((3, 6)) + np.float32(1000)
    check(model("ReduceLogSumExp", x, {"keepdims": 0},
                {"axes": np.array([1], np.int64)}, opset=18), x, tmp_path)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceLogSumExp"])
def test_reduce_empty_set(op, tmp_path):
    # Reducing a zero-size dimension gives the identity: 0, -inf, -inf.
    x = np.zeros((2, 0, 4), np.float32)
    check(model(op, x, {"keepdims": 1}, {"axes": np.array([1], np.int64)},
                opset=18), x, tmp_path)


def test_reduce_run_time_axes_not_a_list_is_refused(tmp_path):
    """Axes read at run time are a 1-D int64 list (run-time axes work:
    test_run_time_operands.py)."""
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(KilnError, match="input 'axes', read at run time, must "
                                        "be a 1-D int64 tensor"):
        compile_model(m, tmp_path)


def test_reduce_axis_out_of_range_is_refused(tmp_path):
    x = data((2, 3))
    node = helper.make_node("ReduceMax", ["x"], ["y"], axes=[2])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(KilnError, match="axis 2 is out of range"):
        compile_model(m, tmp_path)


# --- Softmax, LogSoftmax, Hardmax --------------------------------------------

@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,attrs", [
    (13, {"axis": 1}), (13, {}), (11, {"axis": 1}), (11, {}), (11, {"axis": -2}),
])
def test_softmax(op, opset, attrs, tmp_path):
    # Opset 11 flattens to 2-D at axis: it normalises over axes 1 and 2.
    x = data((2, 3, 5)) * np.float32(4)
    check(model(op, x, attrs, opset=opset), x, tmp_path)


def test_softmax_large_numbers(tmp_path):
    x = data((2, 6)) * np.float32(100) + np.float32(1000)
    check(model("Softmax", x, {"axis": -1}, opset=13), x, tmp_path)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_float16_long_rows(op, tmp_path):
    # 4096 equal terms: summed in float16 the sum would stop at 2048 (2048 + 1
    # rounds back to 2048); Kiln sums in f32 and rounds the sum once.
    from kiln_testing import run_compiled
    x = np.zeros((2, 4096), np.float16)
    x[1] = (data((4096,)) * np.float32(2)).astype(np.float16)
    m = model(op, x, {"axis": -1}, opset=13)
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)["y"]
    x32 = x.astype(np.float32)
    shifted = x32 - x32.max(axis=-1, keepdims=True)
    total = np.exp(shifted.astype(np.float16).astype(np.float32)).sum(axis=-1, keepdims=True)
    want = shifted - np.log(total) if op == "LogSoftmax" else np.exp(shifted) / total
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("opset,attrs", [(13, {"axis": 1}), (13, {}), (11, {"axis": 1})])
def test_hardmax_ties(opset, attrs, tmp_path):
    # Small integers give ties: only the first maximum is set.
    x = data((3, 4, 3), np.int32, low=0, high=3).astype(np.float32)
    check(model("Hardmax", x, attrs, opset=opset), x, tmp_path)


# --- ArgMax, ArgMin ----------------------------------------------------------

@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attrs", [
    {"axis": 1, "keepdims": 1, "select_last_index": 0},
    {"axis": -1, "keepdims": 0, "select_last_index": 1},
    {"axis": 0, "keepdims": 0, "select_last_index": 0},
])
def test_arg_reduce_ties(op, attrs, tmp_path):
    x = data((3, 5, 4), np.int32, low=0, high=3).astype(np.float32)
    check(model(op, x, attrs, opset=13), x, tmp_path)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reduce_int_old_opset(op, tmp_path):
    x = data((4, 7), np.int32)
    check(model(op, x, {"axis": 1}, opset=11), x, tmp_path)


# --- CumSum ------------------------------------------------------------------

@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(exclusive, reverse, tmp_path):
    x = data((3, 6, 2))
    check(model("CumSum", x, {"exclusive": exclusive, "reverse": reverse},
                {"axis": np.array(1, np.int64)}, opset=14), x, tmp_path)


def test_cumsum_int_negative_axis(tmp_path):
    x = data((4, 5), np.int32)
    check(model("CumSum", x, {"reverse": 1}, {"axis": np.array(-1, np.int32)},
                opset=11), x, tmp_path)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumprod(exclusive, reverse, tmp_path):
    x = data((3, 5, 2), low=0.5, high=1.5)
    check(model("CumProd", x, {"exclusive": exclusive, "reverse": reverse},
                {"axis": np.array(1, np.int64)}, opset=26), x, tmp_path)


def test_cumprod_int_negative_axis(tmp_path):
    x = data((4, 5), np.int32, low=-3, high=4)
    check(model("CumProd", x, {"exclusive": 1}, {"axis": np.array(-1, np.int32)},
                opset=26), x, tmp_path)


# --- TopK --------------------------------------------------------------------

@pytest.mark.parametrize("opset,attrs,k", [
    (11, {"axis": 1, "largest": 1, "sorted": 1}, 3),
    (11, {"axis": -1, "largest": 0, "sorted": 1}, 2),
    (10, {"axis": 0}, 4),
])
def test_topk_ties(opset, attrs, k, tmp_path):
    # Small integers give ties: the lower index comes first.
    x = data((4, 6, 3), np.int32, low=0, high=4).astype(np.float32)
    check(model("TopK", x, attrs, {"k": np.array([k], np.int64)}, opset=opset,
                outputs=("values", "indices")), x, tmp_path)


def test_topk_k_attribute(tmp_path):
    x = data((3, 7))
    check(model("TopK", x, {"axis": 1, "k": 2}, opset=9,
                outputs=("values", "indices")), x, tmp_path)


def test_topk_int64_smallest(tmp_path):
    x = data((3, 7), np.int64)
    check(model("TopK", x, {"axis": 1, "largest": 0}, {"k": np.array([5], np.int64)},
                opset=11, outputs=("values", "indices")), x, tmp_path)
