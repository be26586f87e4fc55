"""Operators whose output sizes the data decides (NonZero, Compress, Unique,
NonMaxSuppression) against onnxruntime.

One compiled model serves every size: the model ABI returns each run's size
(a data-dependent symbol), kiln-run writes outputs of that size and
kiln.Model.run returns arrays of it. Each model below is compiled once and
run on inputs that give different sizes, down to empty outputs.
"""

import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln_testing import (KILN_RUN, KilnError,
                          assert_matches_onnxruntime, compile_model,
                          run_compiled, run_onnxruntime)

ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64,
              np.int32: TensorProto.INT32, np.bool_: TensorProto.BOOL,
              np.int8: TensorProto.INT8}
rng = np.random.default_rng(22)


def one_node(op, inputs, outputs, attrs=None, inits=(), opset=17):
    """A one-node model; `inputs` maps graph input names to example arrays
    (None: an absent optional input), `outputs` lists output names."""
    names = [n if v is not None else "" for n, v in inputs.items()]
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, ONNX_TYPES[v.dtype.type],
                                                  v.shape)
                    for n, v in inputs.items()
                    if v is not None and n not in {i.name for i in inits}]
    graph = helper.make_graph(
        [node], op.lower(), graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
         for o in outputs], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check_runs(model, feeds_list, tmp_path):
    """Compiles `model` once and checks every feed dict against onnxruntime,
    through kiln.Model.run; returns the loaded model."""
    so = compile_model(model, tmp_path)
    loaded = kiln.load(so)
    for feeds in feeds_list:
        got = loaded.run(feeds)
        want = run_onnxruntime(model, feeds)
        for name, expected in want.items():
            assert got[name].dtype == expected.dtype, name
            assert got[name].shape == expected.shape, (name, got[name].shape,
                                                       expected.shape)
            if np.issubdtype(expected.dtype, np.floating):
                np.testing.assert_allclose(got[name], expected, rtol=1e-5,
                                           atol=1e-6, err_msg=name)
            else:
                np.testing.assert_array_equal(got[name], expected, err_msg=name)
    return loaded


def sparse(shape, dtype=np.float32, density=0.4):
    values = rng.standard_normal(shape)
    values[rng.random(shape) > density] = 0
    return values.astype(dtype)


@pytest.mark.parametrize("shape,dtype", [((7,), np.float32), ((3, 4), np.float32),
                                         ((2, 3, 5), np.int64), ((4, 6), np.bool_)])
def test_nonzero_any_count(shape, dtype, tmp_path):
    x = sparse(shape, dtype)
    model = one_node("NonZero", {"x": x}, ["y"])
    feeds = [{"x": sparse(shape, dtype, d)} for d in (0.0, 0.1, 0.5, 1.0)]
    loaded = check_runs(model, feeds, tmp_path)
    (symbol,) = loaded.symbols
    assert symbol.data_dependent and symbol.min == 0
    assert symbol.max == int(np.prod(shape))
    assert loaded.outputs[0].shape == (len(shape), None)


def test_nonzero_through_kiln_run(tmp_path):
    """kiln-run writes the run's shape, and --info says who decides it; the
    symbol takes the output's dim_param (else '<output>_<dimension>')."""
    x = sparse((5, 6))
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"]),
         helper.make_node("NonZero", ["x"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [2, "nnz"]),
         helper.make_tensor_value_info("z", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    assert_matches_onnxruntime(model, {"x": x}, tmp_path)
    info = subprocess.run([str(KILN_RUN), str(tmp_path / "model.so"), "--info"],
                          capture_output=True, text=True, check=True).stdout
    assert "nnz: 0..30 (decided by the run)" in info, info
    assert "z_1: 0..30 (decided by the run)" in info, info
    assert "y: i64 [2,nnz]" in info, info


def test_nonzero_of_a_constant_is_static(tmp_path):
    """A constant input is computed when the model compiles: the output is
    static, with no symbol."""
    value = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    model = one_node("NonZero", {"c": value}, ["y"],
                     inits=[numpy_helper.from_array(value, "c")])
    loaded = check_runs(model, [{}], tmp_path)
    assert loaded.symbols == []
    assert loaded.outputs[0].shape == (2, 3)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis, tmp_path):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    length = 4 if axis in (None, 0) else 5
    if axis is None:
        length = 11  # a condition shorter than the 20 elements
    attrs = {} if axis is None else {"axis": axis}
    model = one_node("Compress", {"x": x, "c": np.ones(length, bool)}, ["y"], attrs)
    feeds = [{"x": x, "c": rng.random(length) < p} for p in (0.0, 0.3, 0.7, 1.0)]
    check_runs(model, feeds, tmp_path)


def test_compress_constant_condition_is_static(tmp_path):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    condition = np.array([True, False, True])
    model = one_node("Compress", {"x": x, "c": condition}, ["y"], {"axis": 0},
                     inits=[numpy_helper.from_array(condition, "c")])
    loaded = check_runs(model, [{"x": x}], tmp_path)
    assert loaded.outputs[0].shape == (2, 4)


@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_elements(sorted_, tmp_path):
    x = np.array([2.5, -1, 2.5, 0.0, -0.0, 7, -1, 3], np.float32)
    model = one_node("Unique", {"x": x}, ["y", "indices", "inverse", "counts"],
                     {"sorted": sorted_}, opset=11)
    feeds = [{"x": x}, {"x": np.full(8, 4.0, np.float32)},
             {"x": rng.integers(0, 3, 8).astype(np.float32)},
             {"x": rng.standard_normal(8).astype(np.float32)}]
    check_runs(model, feeds, tmp_path)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_slices(axis, tmp_path):
    x = rng.integers(0, 2, (4, 5, 3)).astype(np.int64)
    model = one_node("Unique", {"x": x}, ["y", "indices", "inverse", "counts"],
                     {"axis": axis, "sorted": 1}, opset=11)
    feeds = [{"x": rng.integers(0, k, (4, 5, 3)).astype(np.int64)} for k in (1, 2, 5)]
    check_runs(model, feeds, tmp_path)


def test_unique_y_only(tmp_path):
    x = rng.integers(-3, 3, (2, 6)).astype(np.int64)
    model = one_node("Unique", {"x": x}, ["y"], {"sorted": 0}, opset=11)
    check_runs(model, [{"x": x}], tmp_path)


def random_boxes(batches, count, center):
    corners = rng.random((batches, count, 4)).astype(np.float32)
    if center:
        corners[..., 2:] = corners[..., 2:] * 0.5 + 0.05  # width, height
    else:
        corners[..., 2:] += corners[..., :2] * 0.3
        corners[..., [0, 2]] = corners[..., [2, 0]]  # some flipped corners
    return corners


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_run_time_limits(center, tmp_path):
    """max_output_boxes_per_class, the IoU and score thresholds are run-time
    inputs: the output has room for every box of every class."""
    boxes = random_boxes(2, 30, center)
    scores = rng.random((2, 3, 30)).astype(np.float32)
    feeds = {"boxes": boxes, "scores": scores, "max": np.array([4], np.int64),
             "iou": np.array([0.4], np.float32), "thr": np.array([0.2], np.float32)}
    model = one_node("NonMaxSuppression", feeds, ["selected"],
                     {"center_point_box": center}, opset=11)
    runs = []
    for limit, iou, thr in [(4, 0.4, 0.2), (100, 0.6, 0.0), (0, 0.5, 0.0),
                            (10, 0.1, 0.95), (-3, 0.5, 0.0)]:
        runs.append(dict(feeds, max=np.array([limit], np.int64),
                         iou=np.array([iou], np.float32),
                         thr=np.array([thr], np.float32)))
    loaded = check_runs(model, runs, tmp_path)
    assert loaded.symbols[0].max == 2 * 3 * 30


def test_non_max_suppression_constant_limit(tmp_path):
    """A constant max_output_boxes_per_class bounds the output; without a
    score threshold every box is a candidate; ties keep the lower index."""
    boxes = random_boxes(1, 12, 0)
    scores = np.round(rng.random((1, 2, 12)), 1).astype(np.float32)
    limit = np.array([3], np.int64)
    model = one_node("NonMaxSuppression",
                     {"boxes": boxes, "scores": scores, "max": limit,
                      "iou": np.array([0.3], np.float32)}, ["selected"],
                     inits=[numpy_helper.from_array(limit, "max")], opset=11)
    loaded = check_runs(model, [{"boxes": boxes, "scores": scores,
                                 "iou": np.array([0.3], np.float32)}], tmp_path)
    assert loaded.symbols[0].max == 1 * 2 * 3


def graph_model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
         for n in outputs], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    return onnx.shape_inference.infer_shapes(model)


def scalar(name, value, dtype):
    return numpy_helper.from_array(np.array(value, dtype), name)


def test_masked_select_flows_on(tmp_path):
    """torch's x[x > 0]: NonZero, Transpose, GatherND, then element-wise
    ops and an Unsqueeze on the selected values; the size passes through."""
    model = graph_model(
        [helper.make_node("Greater", ["x", "zero"], ["mask"]),
         helper.make_node("NonZero", ["mask"], ["nz"]),
         helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
         helper.make_node("GatherND", ["x", "idx"], ["v"]),
         helper.make_node("Mul", ["v", "two"], ["y"]),
         helper.make_node("Unsqueeze", ["y", "axes"], ["z"])],
        [("x", TensorProto.FLOAT, [4, 5])], ["z", "idx"],
        [scalar("zero", 0.0, np.float32), scalar("two", 2.0, np.float32),
         numpy_helper.from_array(np.array([1], np.int64), "axes")])
    feeds = [{"x": rng.standard_normal((4, 5)).astype(np.float32) + shift}
             for shift in (0.0, -10.0, 10.0, 0.5)]
    loaded = check_runs(model, feeds, tmp_path)
    (symbol,) = loaded.symbols  # one count, shared by both outputs
    assert loaded.outputs[0].dims == (symbol.name, None)
    assert loaded.outputs[1].dims == (symbol.name, None)


def test_detections_flow_on(tmp_path):
    """NonMaxSuppression's selection picks the boxes (Gather of its box
    column, then of the boxes), which are reduced and sliced along their
    other dimension."""
    model = graph_model(
        [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"],
                          ["selected"]),
         helper.make_node("Gather", ["selected", "two"], ["index"], axis=1),
         helper.make_node("Squeeze", ["boxes", "zero"], ["flat"]),
         helper.make_node("Gather", ["flat", "index"], ["picked"], axis=0),
         helper.make_node("ReduceMax", ["picked"], ["top"], axes=[1], keepdims=0),
         helper.make_node("Slice", ["picked", "start", "end", "one"], ["corner"]),
         helper.make_node("Softmax", ["picked"], ["soft"], axis=1)],
        [("boxes", TensorProto.FLOAT, [1, 25, 4]),
         ("scores", TensorProto.FLOAT, [1, 2, 25])], ["top", "corner", "soft"],
        [scalar("two", 2, np.int64), scalar("max", [6], np.int64),
         scalar("iou", [0.3], np.float32),
         numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array([1], np.int64), "one"),
         numpy_helper.from_array(np.array([0], np.int64), "start"),
         numpy_helper.from_array(np.array([2], np.int64), "end")])
    feeds = [{"boxes": random_boxes(1, 25, 0),
              "scores": rng.random((1, 2, 25)).astype(np.float32)}
             for _ in range(3)]
    check_runs(model, feeds, tmp_path)


@pytest.mark.parametrize("nodes,inits,message", [
    ([helper.make_node("Shape", ["nz"], ["y"], name="s")], [],
     "node 's' (Shape): input 'nz' is an output of node 'nz' (NonZero), whose "
     "size (dimension 1) only the run decides, and Kiln passes such a size "
     "through element-wise operators"),
    ([helper.make_node("ReduceSum", ["nz", "axes"], ["y"], name="r")],
     [numpy_helper.from_array(np.array([1], np.int64), "axes")],
     "ReduceSum reduces along it"),
    ([helper.make_node("Add", ["nz", "full"], ["y"], name="a")],
     [numpy_helper.from_array(np.zeros((2, 12), np.int64), "full")],
     "input 'full' has a fixed size along it (it must broadcast)"),
    ([helper.make_node("NonZero", ["x"], ["nz2"], name="nz2"),
      helper.make_node("Add", ["nz", "nz2"], ["y"], name="a")], [],
     "have sizes that the run decides apart"),
])
def test_mixing_the_padding_is_refused(nodes, inits, message, tmp_path):
    model = graph_model([helper.make_node("NonZero", ["x"], ["nz"], name="nz")]
                        + nodes, [("x", TensorProto.FLOAT, [3, 4])], ["y"], inits)
    with pytest.raises(KilnError) as error:
        compile_model(model, tmp_path)
    assert message in str(error.value)


def test_softmax_before_opset_13_normalises_past_its_axis(tmp_path):
    """Softmax(axis=0) of [2, n] normalises over both dimensions before
    opset 13 (refused), over dimension 0 only from then on (passed on)."""
    def softmax_of_positions(opset):
        return graph_model(
            [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
             helper.make_node("Cast", ["nz"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Softmax", ["f"], ["y"], axis=0, name="sm")],
            [("x", TensorProto.FLOAT, [3, 4])], ["y"], opset=opset)
    with pytest.raises(KilnError, match="Softmax reduces along it"):
        compile_model(softmax_of_positions(11), tmp_path / "11")
    model = softmax_of_positions(13)
    check_runs(model, [{"x": sparse((3, 4), density=d)} for d in (0.3, 1.0)],
               tmp_path / "13")


def test_subgraph_output_is_refused(tmp_path):
    branch = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["inner"], name="inner_nz")], "b",
        [], [helper.make_tensor_value_info("inner", TensorProto.INT64, None)])
    model = graph_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch,
                          else_branch=branch)],
        [("x", TensorProto.FLOAT, [3, 4]), ("c", TensorProto.BOOL, [])], ["y"])
    with pytest.raises(KilnError) as error:
        compile_model(model, tmp_path)
    assert "is an output of node 'inner_nz' (NonZero)" in str(error.value)


def test_symbolic_batch_is_refused(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    with pytest.raises(KilnError) as error:
        compile_model(model, tmp_path)
    assert "--dynamic-dims" in str(error.value)
    # With the batch given a size, it compiles.
    so = compile_model(model, tmp_path / "sized", ["--dynamic-dims", "N=3"])
    x = sparse((3, 4))
    got = run_compiled(so, {"x": x}, tmp_path / "sized")
    np.testing.assert_array_equal(got["y"], np.stack(np.nonzero(x)))
