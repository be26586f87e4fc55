"""End-to-end tests of the shape and data-movement operators against onnxruntime.

Each test builds a tiny ONNX model, compiles it with kiln-compile, runs it with
kiln-run and compares every output with onnxruntime (dtype, shape, values).
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import assert_matches_onnxruntime, compile_model, run_compiled

RNG = np.random.default_rng(0)

NP_TO_ONNX = {
    np.float32: TensorProto.FLOAT,
    np.float16: TensorProto.FLOAT16,
    np.int64: TensorProto.INT64,
    np.int32: TensorProto.INT32,
    np.bool_: TensorProto.BOOL,
    np.uint8: TensorProto.UINT8,
}


def data(shape, dtype=np.float32):
    if dtype == np.bool_:
        return RNG.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dtype) if dtype != np.uint8 \
            else RNG.integers(0, 200, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def model(op, inputs, out_type=None, attrs=None, consts=None, opset=17,
          extra_inputs=(), outputs=None):
    """One-node model. `inputs`: {name: array} fed at run time; `consts`:
    {name: array} initializers; `extra_inputs`: names of optional inputs left
    empty ('') or given, in node order after the fed and constant ones."""
    consts = consts or {}
    names = list(inputs) + list(consts) if not extra_inputs else list(extra_inputs)
    outputs = outputs or ["y"]
    node = helper.make_node(op, names, outputs, **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype.type], v.shape)
                    for n, v in inputs.items()]
    if out_type is None:
        out_type = NP_TO_ONNX[next(iter(inputs.values())).dtype.type]
    graph_outputs = [helper.make_tensor_value_info(o, out_type, None) for o in outputs]
    inits = [numpy_helper.from_array(v, n) for n, v in consts.items()]
    graph = helper.make_graph([node], op.lower(), graph_inputs, graph_outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def check(m, feeds, tmp_path, **kw):
    return assert_matches_onnxruntime(m, feeds, tmp_path, **kw)


def i64(*values):
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize("shape,target,allowzero", [
    ((2, 3, 4), (0, -1), 0),
    ((2, 3, 4), (4, 6), 0),
    ((6,), (1, 2, 3), 0),
    ((2, 3, 4), (3, 8), 1),
    ((1,), (), 0),
])
def test_reshape(shape, target, allowzero, tmp_path):
    x = data(shape)
    m = model("Reshape", {"x": x}, None, {"allowzero": allowzero},
              {"shape": np.array(target, dtype=np.int64)}, opset=14)
    check(m, {"x": x}, tmp_path)


def test_reshape_opset1_attribute(tmp_path):
    x = data((2, 6))
    m = model("Reshape", {"x": x}, None, {"shape": [3, 4]}, opset=1)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_reshape_dtypes(dtype, tmp_path):
    x = data((2, 3, 2), dtype)
    m = model("Reshape", {"x": x}, None, {}, {"shape": i64(3, -1)})
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_flatten(axis, tmp_path):
    x = data((2, 3, 4))
    m = model("Flatten", {"x": x}, None, {"axis": axis})
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1], [3, 1, 0, 2]])
def test_transpose(perm, tmp_path):
    x = data((2, 3, 4, 5))
    m = model("Transpose", {"x": x}, None, {"perm": perm} if perm else {})
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("shape,perm", [((2, 32, 48), [0, 2, 1]),
                                        ((1, 64, 4, 32), [0, 2, 3, 1]),
                                        ((1, 32, 3, 16), [0, 2, 3, 1])])
def test_transpose_in_blocks(shape, perm, tmp_path):
    """Transposes that move the innermost dimension, in whole 16x16
    blocks (kiln-cpu-reorder-loops shuffles each in registers; the last is
    an attention head's key, [S, H, D] -> [H, D, S]), are exact, on one
    thread and on the threads the runtime gives the model."""
    x = data(shape)
    m = model("Transpose", {"x": x}, None, {"perm": perm})
    so = compile_model(m, tmp_path)
    for threads in (1, 2):
        got = run_compiled(so, {"x": x}, tmp_path, threads=threads)["y"]
        np.testing.assert_array_equal(got, np.transpose(x, perm))


def test_squeeze_unsqueeze_opset13(tmp_path):
    x = data((1, 3, 1, 2), np.int64)
    m = model("Squeeze", {"x": x}, None, {}, {"axes": i64(0, -2)}, opset=13)
    check(m, {"x": x}, tmp_path / "sq")
    m = model("Squeeze", {"x": x}, None, {}, {}, opset=13)
    check(m, {"x": x}, tmp_path / "sq_all")
    m = model("Unsqueeze", {"x": x}, None, {}, {"axes": i64(-1, 1)}, opset=13)
    check(m, {"x": x}, tmp_path / "unsq")


def test_squeeze_unsqueeze_opset11(tmp_path):
    x = data((3, 1, 2))
    check(model("Squeeze", {"x": x}, None, {"axes": [1]}, opset=11), {"x": x},
          tmp_path / "sq")
    check(model("Unsqueeze", {"x": x}, None, {"axes": [0, 4]}, opset=11), {"x": x},
          tmp_path / "unsq")


@pytest.mark.parametrize("axis,dtype", [(1, np.float32), (-1, np.int64), (0, np.bool_)])
def test_concat(axis, dtype, tmp_path):
    a, b, c = data((2, 3, 2), dtype), data((2, 3, 2), dtype), data((2, 3, 2), dtype)
    m = model("Concat", {"a": a, "b": b, "c": c}, None, {"axis": axis})
    check(m, {"a": a, "b": b, "c": c}, tmp_path)


def test_split_variants(tmp_path):
    x = data((2, 7))
    m = model("Split", {"x": x}, None, {"axis": 1}, {"split": i64(2, 5)}, opset=13,
              outputs=["y0", "y1"])
    check(m, {"x": x}, tmp_path / "input")
    m = model("Split", {"x": x}, None, {"axis": -1, "num_outputs": 3}, opset=18,
              outputs=["y0", "y1", "y2"])
    check(m, {"x": x}, tmp_path / "num_outputs")
    x = data((6, 2))
    m = model("Split", {"x": x}, None, {"axis": 0, "split": [1, 2, 3]}, opset=11,
              outputs=["y0", "y1", "y2"])
    check(m, {"x": x}, tmp_path / "attr")
    m = model("Split", {"x": x}, None, {}, opset=11, outputs=["y0", "y1"])
    check(m, {"x": x}, tmp_path / "equal")


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([0, 1], [2, 100], [0, 1], [1, 2]),
    ([-1], [-100], [1], [-1]),
    ([5, -2], [0, 0], [1, 2], [-2, -1]),
    ([1], [-1], None, None),
])
def test_slice(starts, ends, axes, steps, tmp_path):
    x = data((3, 7, 4))
    consts = {"starts": i64(*starts), "ends": i64(*ends)}
    if axes is not None:
        consts["axes"] = i64(*axes)
    if steps is not None:
        consts["steps"] = i64(*steps)
    m = model("Slice", {"x": x}, None, {}, consts)
    check(m, {"x": x}, tmp_path)


def test_slice_opset1_attributes(tmp_path):
    x = data((4, 5), np.int64)
    m = model("Slice", {"x": x}, None, {"starts": [1, -3], "ends": [3, 1000],
                                         "axes": [0, 1]}, opset=9)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("axis,dtype", [(0, np.float32), (1, np.int64), (-1, np.bool_)])
def test_gather(axis, dtype, tmp_path):
    x = data((4, 5, 3), dtype)
    idx = np.array([[0, -1], [2, 1]], dtype=np.int64)
    m = model("Gather", {"x": x, "i": idx}, None, {"axis": axis})
    check(m, {"x": x, "i": idx}, tmp_path)


def test_gather_scalar_index_int32(tmp_path):
    x = data((4, 5))
    m = model("Gather", {"x": x}, None, {"axis": 1}, {"i": np.array(-2, np.int32)})
    check(m, {"x": x}, tmp_path)


def test_gather_elements_and_nd(tmp_path):
    x = data((3, 4))
    idx = np.array([[0, -1, 2], [1, 0, 3], [3, 3, 0]], dtype=np.int64)
    m = model("GatherElements", {"x": x, "i": idx}, None, {"axis": 1})
    check(m, {"x": x, "i": idx}, tmp_path / "elements")
    x = data((2, 3, 4))
    idx = np.array([[[0, 1]], [[2, -1]]], dtype=np.int64)
    m = model("GatherND", {"x": x, "i": idx}, None, {"batch_dims": 1})
    check(m, {"x": x, "i": idx}, tmp_path / "nd")
    idx = np.array([[1, 2], [0, 0]], dtype=np.int64)
    m = model("GatherND", {"x": x, "i": idx}, None, {})
    check(m, {"x": x, "i": idx}, tmp_path / "nd0")


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_scatter_elements(reduction, dtype, tmp_path):
    """Runtime indices, negative ones, duplicates (which a reduction
    accumulates in order), on an axis that is not the last."""
    x = data((4, 3), dtype)
    updates = data((3, 3), dtype)
    idx = np.array([[0, -1, 2], [1, 0, -4], [3, 3, 1]], dtype=np.int64)
    if reduction == "none":  # duplicates are undefined without a reduction
        idx = np.array([[0, -1, 2], [1, 0, -3], [3, 2, 1]], dtype=np.int64)
    m = model("ScatterElements", {"x": x, "i": idx, "u": updates}, None,
              {"axis": 0, "reduction": reduction}, opset=18)
    check(m, {"x": x, "i": idx, "u": updates}, tmp_path)


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(reduction, tmp_path):
    """Slices (indices of depth 1 into a 3-D tensor) and single elements
    (depth 3), with runtime and constant indices."""
    x = data((4, 2, 3))
    rows = np.array([[1], [-1]], dtype=np.int64)
    updates = data((2, 2, 3))
    m = model("ScatterND", {"x": x, "u": updates}, None, {"reduction": reduction},
              {"i": rows}, opset=18, extra_inputs=["x", "i", "u"])
    check(m, {"x": x, "u": updates}, tmp_path / "slices")
    points = np.array([[[0, 1, 2], [3, 0, 0]], [[3, 0, 0], [1, 1, -1]]], dtype=np.int64)
    if reduction == "none":
        points[1, 0] = [2, 0, 1]
    values = data((2, 2))
    m = model("ScatterND", {"x": x, "i": points, "u": values}, None,
              {"reduction": reduction}, opset=18)
    check(m, {"x": x, "i": points, "u": values}, tmp_path / "points")


def test_scatter_before_opset_11(tmp_path):
    x = data((3, 3))
    idx = np.array([[1, 0, 2]], dtype=np.int64)
    updates = data((1, 3))
    m = model("Scatter", {"x": x, "i": idx, "u": updates}, None, {"axis": 1}, opset=10)
    check(m, {"x": x, "i": idx, "u": updates}, tmp_path)


def test_scatter_reduction_needs_its_opset(tmp_path):
    x = data((3,))
    m = model("ScatterElements", {"x": x, "i": np.array([0], np.int64),
                                  "u": data((1,))}, None, {"reduction": "max"}, opset=16)
    with pytest.raises(Exception) as error:
        compile_model(m, tmp_path)
    assert "reduction 'max' is not one of opset 16's (none, add, mul)" in str(error.value)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode, tmp_path):
    """A KV cache's update, [batch, heads, max_seq, head] from per-sample
    write indices (wrapping around in circular mode); against ONNX's
    reference, as onnxruntime has no TensorScatter yet."""
    from onnx.reference import ReferenceEvaluator
    past = data((2, 3, 6, 4))
    update = data((2, 3, 3, 4))
    writes = np.array([1, 3] if mode == "linear" else [4, 5], np.int64)
    graph = helper.make_graph(
        [helper.make_node("TensorScatter", ["past", "update", "writes"], ["y"], mode=mode)],
        "tensorscatter",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
         for n, v in (("past", past), ("update", update))] +
        [helper.make_tensor_value_info("writes", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, past.shape)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 10
    feeds = {"past": past, "update": update, "writes": writes}
    want = ReferenceEvaluator(m).run(None, feeds)[0]
    got = run_compiled(compile_model(m, tmp_path), feeds, tmp_path)["y"]
    np.testing.assert_array_equal(got, want)


def test_exporter_shape_chain(tmp_path):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports a flatten."""
    x = data((2, 3, 4))
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
        helper.make_node("Shape", ["x"], ["tail"], start=-2),
        helper.make_node("Size", ["x"], ["size"]),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(i64(0), "axes"),
             numpy_helper.from_array(i64(-1), "minus1")]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("tail", TensorProto.INT64, None),
         helper.make_tensor_value_info("size", TensorProto.INT64, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    check(m, {"x": x}, tmp_path)


def test_constant_of_shape_and_range(tmp_path):
    x = data((3,))
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["c"],
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [7])),
        helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
        helper.make_node("Range", ["fstart", "flimit", "fdelta"], ["rf"]),
        helper.make_node("Identity", ["x"], ["y"]),
    ]
    inits = [numpy_helper.from_array(i64(2, 3), "shape"),
             numpy_helper.from_array(np.array(10, np.int64), "start"),
             numpy_helper.from_array(np.array(1, np.int64), "limit"),
             numpy_helper.from_array(np.array(-3, np.int64), "delta"),
             numpy_helper.from_array(np.array(0.5, np.float32), "fstart"),
             numpy_helper.from_array(np.array(2.0, np.float32), "flimit"),
             numpy_helper.from_array(np.array(0.25, np.float32), "fdelta")]
    graph = helper.make_graph(
        nodes, "consts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         [("c", TensorProto.INT64), ("r", TensorProto.INT64),
          ("rf", TensorProto.FLOAT), ("y", TensorProto.FLOAT)]], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("shape,target,dtype", [
    ((3, 1), (2, 1, 6), np.float32),
    ((1,), (4, 3), np.int64),
    ((2, 3), (3,), np.bool_),
])
def test_expand(shape, target, dtype, tmp_path):
    x = data(shape, dtype)
    m = model("Expand", {"x": x}, None, {}, {"shape": np.array(target, np.int64)})
    check(m, {"x": x}, tmp_path)


def test_tile(tmp_path):
    x = data((2, 3), np.int64)
    m = model("Tile", {"x": x}, None, {}, {"repeats": i64(3, 2)})
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("shape,pads", [
    ((2, 3, 4), (0, 2, 1, 1, 1, 3)),
    # Every dimension padded, some by 0 on one side; a crop beside a pad.
    ((2, 3, 5, 6), (1, 0, 2, 1, 1, 2, 0, 3)),
    ((3, 5, 6), (0, -1, 2, 0, 1, -2)),
])
def test_pad(mode, shape, pads, tmp_path):
    """The interior and each border box (or one generic where it crops)."""
    x = data(shape)
    consts = {"pads": i64(*pads)}
    if mode == "constant":
        consts["value"] = np.array(1.5, np.float32)
    m = model("Pad", {"x": x}, None, {"mode": mode}, consts, opset=13)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_between_ops(mode, tmp_path):
    """Relu -> Pad -> Sigmoid, and the Relu's result read again after the
    pad: the Relu writes into the padded tensor's interior, where the
    border boxes and the Add read it."""
    x = data((1, 5, 9, 11))
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Pad", ["r", "pads"], ["p"], mode=mode),
             helper.make_node("Sigmoid", ["p"], ["s"]),
             helper.make_node("Slice", ["s", "starts", "ends", "axes"], ["c"]),
             helper.make_node("Add", ["c", "r"], ["y"])]
    inits = [numpy_helper.from_array(i64(0, 0, 3, 2, 0, 0, 1, 4), "pads"),
             numpy_helper.from_array(i64(3, 2), "starts"),
             numpy_helper.from_array(i64(12, 13), "ends"),
             numpy_helper.from_array(i64(2, 3), "axes")]
    graph = helper.make_graph(
        nodes, "pad_between", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    check(m, {"x": x}, tmp_path)


def test_pad_axes_negative_and_opset2(tmp_path):
    x = data((3, 4), np.int64)
    m = model("Pad", {"x": x}, None, {}, {"pads": i64(2, -1), "value": np.array(9, np.int64),
                                           "axes": i64(-1)}, opset=18)
    check(m, {"x": x}, tmp_path / "axes")
    x = data((3, 4))
    m = model("Pad", {"x": x}, None, {"pads": [1, 0, 0, 2], "value": 2.0}, opset=2)
    check(m, {"x": x}, tmp_path / "opset2")


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode, tmp_path):
    x = data((1, 8, 2, 3))
    m = model("DepthToSpace", {"x": x}, None, {"blocksize": 2, "mode": mode})
    check(m, {"x": x}, tmp_path)


def test_space_to_depth(tmp_path):
    x = data((2, 2, 4, 6))
    m = model("SpaceToDepth", {"x": x}, None, {"blocksize": 2})
    check(m, {"x": x}, tmp_path)
    # CRD mode (SpaceToDepth-25): the inverse of DepthToSpace CRD.
    y = data((1, 8, 2, 3))
    d2s = helper.make_node("DepthToSpace", ["y"], ["s"], blocksize=2, mode="CRD")
    s2d = helper.make_node("SpaceToDepth", ["s"], ["z"], blocksize=2, mode="CRD")
    graph = helper.make_graph(
        [d2s, s2d], "roundtrip", [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    from kiln_testing import compile_model, run_compiled
    so = compile_model(m, tmp_path / "crd")
    np.testing.assert_array_equal(run_compiled(so, {"y": y}, tmp_path / "crd")["z"], y)


@pytest.mark.parametrize("upper,k", [(1, 0), (0, -1), (1, 2)])
def test_trilu(upper, k, tmp_path):
    x = data((2, 4, 5), np.int64)
    m = model("Trilu", {"x": x}, None, {"upper": upper}, {"k": np.array(k, np.int64)})
    check(m, {"x": x}, tmp_path)


def test_one_hot(tmp_path):
    idx = np.array([[0, 3], [-1, 2]], dtype=np.int64)
    m = model("OneHot", {"i": idx}, TensorProto.FLOAT, {"axis": 1},
              {"depth": np.array(4, np.int64), "values": np.array([-1.0, 2.0], np.float32)})
    check(m, {"i": idx}, tmp_path)


@pytest.mark.parametrize("mode,transform,nearest", [
    ("nearest", "asymmetric", "floor"),
    ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"),
    ("linear", "half_pixel", "round_prefer_floor"),
    ("linear", "align_corners", "round_prefer_floor"),
    ("linear", "asymmetric", "round_prefer_floor"),
    ("linear", "pytorch_half_pixel", "round_prefer_floor"),
])
def test_resize_scales(mode, transform, nearest, tmp_path):
    x = data((1, 2, 3, 4))
    m = model("Resize", {"x": x}, None,
              {"mode": mode, "coordinate_transformation_mode": transform,
               "nearest_mode": nearest},
              {"roi": np.array([], np.float32),
               "scales": np.array([1, 1, 2.0, 1.5], np.float32)}, opset=13)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("transform, attrs, scales", [
    ("half_pixel", {}, [1, 1, 2.0, 1.5]),
    ("half_pixel", {}, [1, 1, 0.6, 0.75]),
    ("half_pixel", {"cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 1.7, 0.6]),
    ("align_corners", {}, [1, 1, 2.0, 2.0]),
    ("asymmetric", {"exclude_outside": 1}, [1, 1, 2.0, 0.5]),
    ("pytorch_half_pixel", {}, [1, 1, 3.0, 1.0]),
    ("half_pixel_symmetric", {}, [1, 1, 1.7, 0.6]),
])
def test_resize_cubic(transform, attrs, scales, tmp_path):
    x = data((1, 2, 5, 6))
    m = model("Resize", {"x": x}, None,
              {"mode": "cubic", "coordinate_transformation_mode": transform, **attrs},
              {"roi": np.array([], np.float32),
               "scales": np.array(scales, np.float32)}, opset=19)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode, roi, axes, extrapolation", [
    ("linear", [0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8], None, 0.0),
    ("nearest", [0, 0, -0.2, 0.1, 1, 1, 1.3, 0.9], None, 10.0),
    ("cubic", [0.4, 0.6, 0.6, 0.8], [2, 3], -1.0),
])
def test_resize_tf_crop_and_resize(mode, roi, axes, extrapolation, tmp_path):
    x = data((1, 2, 5, 6))
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": extrapolation}
    if axes:
        attrs["axes"] = axes
    sizes = [4, 5] if axes else [1, 2, 4, 5]
    m = model("Resize", {"x": x}, None, attrs,
              {"roi": np.array(roi, np.float32), "scales": np.array([], np.float32),
               "sizes": np.array(sizes, np.int64)}, opset=19)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode, scales", [
    ("linear", [1, 1, 0.6, 0.35]),
    ("cubic", [1, 1, 0.5, 0.7]),
    ("linear", [1, 1, 1.5, 0.4]),   # upsampling one dimension: plain there
])
def test_resize_antialias(mode, scales, tmp_path):
    x = data((1, 2, 9, 11))
    m = model("Resize", {"x": x}, None, {"mode": mode, "antialias": 1},
              {"roi": np.array([], np.float32),
               "scales": np.array(scales, np.float32)}, opset=19)
    check(m, {"x": x}, tmp_path)


def test_resize_linear_half_pixel_symmetric(tmp_path):
    x = data((1, 1, 4, 5))
    m = model("Resize", {"x": x}, None,
              {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
              {"roi": np.array([], np.float32),
               "scales": np.array([1, 1, 2.3, 0.7], np.float32)}, opset=19)
    check(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.6], [1, 1, 1.7, 2.3]])
def test_resize_align_corners_fractional_scales(scales, tmp_path):
    # align_corners divides by the unrounded resized length (in * scale - 1),
    # as ONNX's reference does: the oracle here.
    from onnx.reference import ReferenceEvaluator
    from kiln_testing import compile_model, run_compiled
    x = data((1, 1, 4, 5))
    m = model("Resize", {"x": x}, None,
              {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
              {"roi": np.array([], np.float32),
               "scales": np.array(scales, np.float32)}, opset=13)
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    (have,) = got.values()
    assert have.shape == want.shape
    np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attrs,consts", [
    ({"axes": [2, 3]}, {"scales": np.array([2.0, 1.5], np.float32)}),
    ({"axes": [3, 2]}, {"scales": np.array([1.5, 0.5], np.float32)}),
    ({"axes": [2, 3]}, {"sizes": np.array([3, 5], np.int64)}),
    ({"axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
     {"sizes": np.array([3, 5], np.int64)}),
    ({"keep_aspect_ratio_policy": "not_smaller"},
     {"sizes": np.array([1, 2, 3, 5], np.int64)}),
])
def test_resize_axes_and_aspect_ratio(attrs, consts, tmp_path):
    # Opset 18: scales or sizes for some axes only, and sizes that keep the
    # aspect ratio (one scale for all resized axes, sizes rounded half up).
    from onnx.reference import ReferenceEvaluator
    from kiln_testing import compile_model, run_compiled
    x = data((1, 2, 4, 6))
    names = ["x", "", "scales"] if "scales" in consts else ["x", "", "", "sizes"]
    m = model("Resize", {"x": x}, None, {"mode": "nearest", **attrs}, consts,
              opset=18, extra_inputs=names)
    got = run_compiled(compile_model(m, tmp_path), {"x": x}, tmp_path)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    (have,) = got.values()
    assert have.shape == want.shape
    np.testing.assert_array_equal(have, want)


def test_pad_constant_value_at_run_time(tmp_path):
    # constant_value fed as an input: padded with 0, then the value placed
    # by a padding mask.
    x = data((2, 3))
    value = np.array(-7.5, np.float32)
    m = model("Pad", {"x": x, "v": value}, None,
              consts={"pads": np.array([1, 0, 0, 2], np.int64)}, opset=13,
              extra_inputs=["x", "pads", "v"])
    check(m, {"x": x, "v": value}, tmp_path)


def test_dropout_mask_at_inference(tmp_path):
    # Not training: the output is the input and the mask all true.
    x = data((3, 4))
    m = model("Dropout", {"x": x}, None, consts={"ratio": np.array(0.3, np.float32)},
              opset=13, outputs=["y", "mask"])
    m.graph.output[1].type.tensor_type.elem_type = TensorProto.BOOL
    check(m, {"x": x}, tmp_path)


def test_resize_sizes_downsample(tmp_path):
    x = data((1, 1, 5, 7))
    m = model("Resize", {"x": x}, None, {"mode": "linear"},
              {"sizes": i64(1, 1, 3, 3)}, opset=13, extra_inputs=["x", "", "", "sizes"])
    check(m, {"x": x}, tmp_path)


def test_upsample_opset9(tmp_path):
    x = data((1, 1, 2, 3))
    m = model("Upsample", {"x": x}, None, {"mode": "nearest"},
              {"scales": np.array([1, 1, 2, 3], np.float32)}, opset=9)
    check(m, {"x": x}, tmp_path)


def test_non_constant_shape_is_read_at_run_time(tmp_path):
    # (test_run_time_shapes.py has the rest.)
    x = data((2, 3))
    m = model("Reshape", {"x": x, "s": i64(3, 2)}, None)
    check(m, {"x": x, "s": i64(3, 2)}, tmp_path)
