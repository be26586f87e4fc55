"""Shape operands read at run time (issue 21): a Reshape's shape, Squeeze's
and Unsqueeze's axes, an Expand's shape, Tile's repeats, ConstantOfShape's
shape, Range's bounds, a Slice's axes and steps. One compiled model serves
every value, against onnxruntime; each size the operand decides is one the
run decides, within a bound known when compiling (--dynamic-dims, the
output's declared shape, or what the operator allows), and a value beyond
it, or an invalid one, fails the run with a clear error.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln_testing import KilnError, compile_model, run_onnxruntime

rng = np.random.default_rng(29)
I64 = TensorProto.INT64


def model_of(nodes, inputs, outputs, opset=18):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def check(model, feeds_list, tmp_path, extra_args=()):
    """Compiles `model` once and checks every feed against onnxruntime."""
    loaded = kiln.load(compile_model(model, tmp_path, extra_args))
    for feeds in feeds_list:
        got = loaded.run(feeds)
        for out, want in run_onnxruntime(model, feeds).items():
            assert got[out].shape == want.shape, (feeds, out)
            np.testing.assert_allclose(got[out], want, rtol=1e-6, atol=1e-6,
                                       err_msg=str(feeds))
    return loaded


def test_reshape_run_time_shape(tmp_path):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    model = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [3])],
                     [("y", TensorProto.FLOAT, None)])
    shapes = ([4, 3, 2], [0, -1, 2], [24, 1, 1], [1, 1, 24], [2, 0, -1],
              [-1, 1, 1])
    loaded = check(model, [{"x": x, "shape": np.array(s, np.int64)}
                           for s in shapes], tmp_path)
    # Each dimension's size is the run's, at most the element count.
    assert [(s.data_dependent, s.max) for s in loaded.symbols] == [(True, 24)] * 3
    for bad, what in (([5, 5, 1], "element count of the shape 25"),
                      ([-2, -12, 1], "dimension 0's size -2"),
                      ([-1, -1, 6], "element count")):
        with pytest.raises(kiln.InvalidInputError, match=what):
            loaded.run({"x": x, "shape": np.array(bad, np.int64)})


def test_reshape_allowzero_and_declared_bounds(tmp_path):
    """allowzero keeps a 0 as a size; the output's declared shape bounds
    the padding (here to exactly the 24 elements)."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    model = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"],
                                       allowzero=1)],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [2])],
                     [("y", TensorProto.FLOAT, [6, 12])])
    loaded = check(model, [{"x": x, "shape": np.array(s, np.int64)}
                           for s in ([6, 4], [2, 12], [6, -1])], tmp_path)
    assert [s.max for s in loaded.symbols] == [6, 12]
    with pytest.raises(kiln.InvalidInputError, match="dimension 0's size 8"):
        loaded.run({"x": x, "shape": np.array([8, 3], np.int64)})


def test_reshape_padding_too_large_is_refused(tmp_path):
    x = np.zeros((64, 64), np.float32)
    model = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [3])],
                     [("y", TensorProto.FLOAT, None)])
    with pytest.raises(KilnError, match="would hold more than 16777216 elements"):
        compile_model(model, tmp_path)
    # Bounds make it fit.
    check(model, [{"x": x, "shape": np.array([16, 16, 16], np.int64)}],
          tmp_path / "bounded",
          ["--dynamic-dims", "y_0=1..64,y_1=1..64,y_2=1..64"])


@pytest.mark.parametrize("op", ["Squeeze", "Unsqueeze"])
def test_squeeze_and_unsqueeze_run_time_axes(op, tmp_path):
    x = rng.standard_normal((1, 3, 1, 4) if op == "Squeeze" else (2, 3, 4))
    x = x.astype(np.float32)
    count = 1 if op == "Squeeze" else 2
    model = model_of([helper.make_node(op, ["x", "axes"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("axes", I64, [count])],
                     [("y", TensorProto.FLOAT, None)])
    axes = ([0], [2], [-2], [-4]) if op == "Squeeze" else \
        ([0, 1], [4, 0], [-1, 2], [1, 3])
    loaded = check(model, [{"x": x, "axes": np.array(a, np.int64)} for a in axes],
                   tmp_path)
    bad = [[1], "dimension 1 \\(of size 3\\) 1 is out of range \\[0, 0\\]"] \
        if op == "Squeeze" else [[1, 1], "naming dimension 1 2"]
    with pytest.raises(kiln.InvalidInputError, match=bad[1]):
        loaded.run({"x": x, "axes": np.array(bad[0], np.int64)})
    with pytest.raises(kiln.InvalidInputError, match="axis"):
        loaded.run({"x": x, "axes": np.array([7] * count, np.int64)})


def test_expand_run_time_shape(tmp_path):
    """The sizes where the input has a 1 need bounds: without them the
    compiler names the option; with them every shape within serves."""
    x = rng.standard_normal((3, 1)).astype(np.float32)
    model = model_of([helper.make_node("Expand", ["x", "shape"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [3])],
                     [("y", TensorProto.FLOAT, None)])
    with pytest.raises(KilnError, match="--dynamic-dims y_0=1..MAX"):
        compile_model(model, tmp_path / "unbounded")
    loaded = check(model, [{"x": x, "shape": np.array(s, np.int64)}
                           for s in ([2, 1, 6], [1, 3, 1], [4, 3, 8], [2, 1, 0])],
                   tmp_path, ["--dynamic-dims", "y_0=1..4,y_2=1..8"])
    assert [s.max for s in loaded.symbols] == [4, 8]
    with pytest.raises(kiln.InvalidInputError, match="entry 1 of the shape 2 "
                       "is out of range \\[3, 3\\]"):
        loaded.run({"x": x, "shape": np.array([2, 2, 6], np.int64)})
    with pytest.raises(kiln.InvalidInputError, match="dimension 2's size 9"):
        loaded.run({"x": x, "shape": np.array([2, 1, 9], np.int64)})


def test_tile_and_constant_of_shape_bounded_by_the_declared_shape(tmp_path):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    tile = model_of([helper.make_node("Tile", ["x", "repeats"], ["y"])],
                    [("x", TensorProto.FLOAT, x.shape), ("repeats", I64, [3])],
                    [("y", TensorProto.FLOAT, [6, 6, 8])])
    loaded = check(tile, [{"x": x, "repeats": np.array(r, np.int64)}
                          for r in ([1, 1, 1], [3, 2, 2], [2, 1, 2], [0, 1, 1])],
                   tmp_path / "tile")
    with pytest.raises(kiln.InvalidInputError, match="repeat count 4"):
        loaded.run({"x": x, "repeats": np.array([4, 1, 1], np.int64)})
    fill = helper.make_tensor("v", TensorProto.FLOAT, [1], [2.5])
    constant = model_of([helper.make_node("ConstantOfShape", ["shape"], ["y"],
                                          value=fill)],
                        [("shape", I64, [2])], [("y", TensorProto.FLOAT, [10, 6])])
    loaded = check(constant, [{"shape": np.array(s, np.int64)}
                              for s in ([10, 6], [3, 4], [0, 2])],
                   tmp_path / "constant")
    for bad in ([11, 1], [-1, 2]):
        with pytest.raises(kiln.InvalidInputError, match="dimension 0's size"):
            loaded.run({"shape": np.array(bad, np.int64)})


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_range_run_time_bounds(dtype, tmp_path):
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = model_of([helper.make_node("Range", ["a", "b", "d"], ["y"])],
                     [(n, onnx_type, []) for n in "abd"], [("y", onnx_type, [10])])
    cases = ((0, 10, 1), (10, 4, -3), (1, 1, 1), (3, 2, 1), (0, 5, 2), (-4, 5, 3))
    loaded = check(model, [{"a": np.array(a, dtype), "b": np.array(b, dtype),
                            "d": np.array(d, dtype)} for a, b, d in cases],
                   tmp_path)
    for a, b, d in ((0, 11, 1), (0, 1, 0)):
        with pytest.raises(kiln.InvalidInputError, match="number of elements"):
            loaded.run({"a": np.array(a, dtype), "b": np.array(b, dtype),
                        "d": np.array(d, dtype)})


def test_slice_run_time_axes_and_steps(tmp_path):
    """Every dimension may be sliced: each is a size the run decides."""
    x = rng.standard_normal((6, 3, 8)).astype(np.float32)
    model = model_of([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape)] +
                     [(n, I64, [2]) for n in "seat"],
                     [("y", TensorProto.FLOAT, None)])
    big = np.iinfo(np.int64).max
    cases = [((0, 0), (6, 8), (0, 2), (1, 1)), ((1, -2), (-1, 2), (-1, 0), (2, -1)),
             ((5, 7), (-100, 0), (0, -1), (-2, -3)),
             ((0, 1), (big, 2), (1, 2), (1, big)),
             ((-1, 0), (-big - 1, 3), (2, 1), (-1, 1))]
    loaded = check(model, [{"x": x, "s": np.array(s, np.int64),
                            "e": np.array(e, np.int64), "a": np.array(a, np.int64),
                            "t": np.array(t, np.int64)} for s, e, a, t in cases],
                   tmp_path)
    assert len(loaded.symbols) == 3
    zeros = np.zeros(2, np.int64)
    for axes, steps, what in (((1, 1), (1, 1), "naming dimension 1 2"),
                              ((0, 1), (0, 1), "magnitude of the step 0")):
        with pytest.raises(kiln.InvalidInputError, match=what):
            loaded.run({"x": x, "s": zeros, "e": np.array([1, 1], np.int64),
                        "a": np.array(axes, np.int64),
                        "t": np.array(steps, np.int64)})


def test_bounds_that_name_nothing_are_refused(tmp_path):
    x = np.zeros((2, 3), np.float32)
    model = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [2])],
                     [("y", TensorProto.FLOAT, None)])
    with pytest.raises(KilnError, match="names 'z_0', which no input of the "
                       "model has .*nor is it a size that a node reads"):
        compile_model(model, tmp_path, ["--dynamic-dims", "z_0=1..4"])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
def test_pad_run_time_pads(mode, tmp_path):
    """Pads read at run time, negative ones cropping; the constant mode's
    value read at run time too; reflect and wrap beyond the input's size."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    inputs = ["x", "pads"] + (["value"] if mode == "constant" else [])
    model = model_of([helper.make_node("Pad", inputs, ["y"], mode=mode)],
                     [("x", TensorProto.FLOAT, x.shape), ("pads", I64, [6])] +
                     ([("value", TensorProto.FLOAT, [])] if mode == "constant"
                      else []),
                     [("y", TensorProto.FLOAT, [4, 8, 12])], opset=19)
    pads = ([0, 0, 0, 0, 0, 0], [1, 2, 3, 1, 3, 5], [0, -1, 2, 0, 0, -3],
            [2, 0, 7, 0, 5, 1])
    if mode == "reflect":  # onnxruntime reflects only within the input
        pads = (pads[0], [0, -1, 1, 0, 0, -1], [1, 2, 3, 1, 2, 3],
                [1, 1, -1, 0, 2, 2])
    feeds = [{"x": x, "pads": np.array(p, np.int64)} for p in pads]
    for f in feeds:
        if mode == "constant":
            f["value"] = np.array(-1.5, np.float32)
    loaded = check(model, feeds, tmp_path)
    bad = dict(feeds[0], pads=np.array([0, 0, 5, 0, 0, 5], np.int64))
    with pytest.raises(kiln.InvalidInputError, match="dimension 2's size 14 is "
                       "out of range \\[0, 12\\]"):
        loaded.run(bad)
    bad["pads"] = np.array([0, 0, -5, 0, 0, 0], np.int64)
    with pytest.raises(kiln.InvalidInputError, match="leading pad -5"):
        loaded.run(bad)


def test_pad_run_time_axes(tmp_path):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    model = model_of([helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
                     [("x", TensorProto.FLOAT, x.shape), ("pads", I64, [4]),
                      ("axes", I64, [2])],
                     [("y", TensorProto.FLOAT, [5, 6, 7])])
    check(model, [{"x": x, "pads": np.array(p, np.int64),
                   "axes": np.array(a, np.int64)}
                  for p, a in (([1, 2, 1, 1], [0, -1]), ([3, 0, 0, 1], [1, 2]),
                               ([0, 0, 0, 0], [2, 0]))], tmp_path)


@pytest.mark.parametrize("depth_type", [np.int64, np.float32])
def test_one_hot_run_time_depth(depth_type, tmp_path):
    indices = np.array([[0, 3, -1], [7, -9, 2]], np.int64)
    onnx_type = helper.np_dtype_to_tensor_dtype(np.dtype(depth_type))
    model = model_of(
        [helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=1)],
        [("i", I64, indices.shape), ("depth", onnx_type, []),
         ("v", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, None)])
    values = np.array([-1.0, 4.0], np.float32)
    loaded = check(model, [{"i": indices, "depth": np.array(d, depth_type),
                            "v": values} for d in (1, 4, 9, 12)],
                   tmp_path, ["--dynamic-dims", "y_1=1..12"])
    for bad in (0, 13):
        with pytest.raises(kiln.InvalidInputError, match=f"depth {bad} is out "
                           "of range \\[1, 12\\]"):
            loaded.run({"i": indices, "depth": np.array(bad, depth_type),
                        "v": values})


def test_center_crop_pad_run_time_shape(tmp_path):
    """Crops and pads centred, as the shape read at run time says; checked
    against the ONNX reference (onnxruntime lacks CenterCropPad)."""
    from onnx.reference import ReferenceEvaluator

    x = rng.standard_normal((5, 6, 3)).astype(np.float32)
    model = model_of([helper.make_node("CenterCropPad", ["x", "shape"], ["y"],
                                       axes=[0, -2])],
                     [("x", TensorProto.FLOAT, x.shape), ("shape", I64, [2])],
                     [("y", TensorProto.FLOAT, [9, 9, 3])])
    loaded = kiln.load(compile_model(model, tmp_path))
    reference = ReferenceEvaluator(model)
    for shape in ([5, 6], [3, 4], [8, 9], [2, 9], [9, 1], [0, 6]):
        feeds = {"x": x, "shape": np.array(shape, np.int64)}
        got = loaded.run(feeds)["y"]
        (want,) = reference.run(None, feeds)
        assert got.shape == want.shape, shape
        np.testing.assert_array_equal(got, want, err_msg=str(shape))
    with pytest.raises(kiln.InvalidInputError, match="dimension 1's size 10"):
        loaded.run({"x": x, "shape": np.array([5, 10], np.int64)})


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
def test_window_run_time_size(op, periodic, tmp_path):
    model = model_of([helper.make_node(op, ["n"], ["y"], periodic=periodic)],
                     [("n", I64, [])], [("y", TensorProto.FLOAT, [16])],
                     opset=17)
    loaded = check(model, [{"n": np.array(n, np.int64)} for n in (16, 2, 5, 0)],
                   tmp_path)
    with pytest.raises(kiln.InvalidInputError, match="size 17 is out of range"):
        loaded.run({"n": np.array(17, np.int64)})


@pytest.mark.parametrize("mode,transform,antialias", [
    ("nearest", "asymmetric", 0), ("linear", "half_pixel", 0),
    ("linear", "align_corners", 0), ("cubic", "half_pixel", 0),
    ("linear", "half_pixel", 1), ("cubic", "pytorch_half_pixel", 1)])
def test_resize_run_time_scales(mode, transform, antialias, tmp_path):
    """One model serves every scale within the declared bounds: up, down,
    and each axis its own way; against the ONNX reference."""
    from onnx.reference import ReferenceEvaluator

    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    model = model_of(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                          coordinate_transformation_mode=transform,
                          antialias=antialias, axes=[2, 3])],
        [("x", TensorProto.FLOAT, x.shape), ("scales", TensorProto.FLOAT, [2])],
        [("y", TensorProto.FLOAT, [1, 2, 15, 18])])
    loaded = kiln.load(compile_model(model, tmp_path))
    reference = ReferenceEvaluator(model)
    for scales in ([1.0, 1.0], [2.0, 3.0], [0.5, 0.4], [3.0, 0.7], [1.3, 2.5]):
        feeds = {"x": x, "scales": np.array(scales, np.float32)}
        got = loaded.run(feeds)["y"]
        (want,) = reference.run(None, feeds)
        assert got.shape == want.shape, scales
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5,
                                   err_msg=str(scales))
    with pytest.raises(kiln.InvalidInputError, match="dimension 2's size 20"):
        loaded.run({"x": x, "scales": np.array([4.0, 1.0], np.float32)})


def test_resize_run_time_sizes_keep_aspect_ratio(tmp_path):
    x = rng.standard_normal((1, 1, 4, 6)).astype(np.float32)
    model = model_of(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                          keep_aspect_ratio_policy="not_larger", axes=[2, 3])],
        [("x", TensorProto.FLOAT, x.shape), ("sizes", I64, [2])],
        [("y", TensorProto.FLOAT, [1, 1, 12, 12])])
    check(model, [{"x": x, "sizes": np.array(s, np.int64)}
                  for s in ([4, 6], [8, 12], [2, 9], [12, 3])], tmp_path)


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_run_time_size(align_corners, tmp_path):
    from onnx.reference import ReferenceEvaluator

    theta = rng.standard_normal((2, 2, 3)).astype(np.float32)
    model = model_of(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"],
                          align_corners=align_corners)],
        [("theta", TensorProto.FLOAT, theta.shape), ("size", I64, [4])],
        [("grid", TensorProto.FLOAT, [2, 6, 7, 2])], opset=20)
    loaded = kiln.load(compile_model(model, tmp_path))
    reference = ReferenceEvaluator(model)
    for size in ([2, 3, 6, 7], [2, 1, 1, 5], [2, 3, 4, 1]):
        feeds = {"theta": theta, "size": np.array(size, np.int64)}
        got = loaded.run(feeds)["grid"]
        (want,) = reference.run(None, feeds)
        assert got.shape == want.shape, size
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for bad, what in (([3, 3, 6, 7], "the size's batch 3"),
                      ([2, 3, 8, 7], "dimension 1's size 8")):
        with pytest.raises(kiln.InvalidInputError, match=what):
            loaded.run({"theta": theta, "size": np.array(bad, np.int64)})


def test_hostile_shape_operands_are_refused_when_compiling(tmp_path):
    """A run-time shape of 100 entries would make 100 sizes the run
    decides, more than a model can describe; a scalar cannot be sliced."""
    reshape = model_of([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                       [("x", TensorProto.FLOAT, [1]), ("shape", I64, [100])],
                       [("y", TensorProto.FLOAT, None)])
    with pytest.raises(KilnError, match="100 symbolic sizes .* more than the 64"):
        compile_model(reshape, tmp_path / "reshape")
    sliced = model_of([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])],
                      [("x", TensorProto.FLOAT, []), ("s", I64, [1]),
                       ("e", I64, [1]), ("a", I64, [1])],
                      [("y", TensorProto.FLOAT, None)])
    with pytest.raises(KilnError, match="cannot slice a scalar"):
        compile_model(sliced, tmp_path / "slice")


@pytest.mark.parametrize("onesided", [0, 1])
def test_dft_run_time_axis(onesided, tmp_path):
    """The transform along every axis the input read at run time may name,
    the run choosing one; a one-sided result's shortened axis is a size the
    run decides."""
    from onnx.reference import ReferenceEvaluator

    x = rng.standard_normal((3, 6, 1)).astype(np.float32)
    model = model_of([helper.make_node("DFT", ["x", "", "axis"], ["y"],
                                       onesided=onesided)],
                     [("x", TensorProto.FLOAT, x.shape), ("axis", I64, [])],
                     [("y", TensorProto.FLOAT, None)], opset=20)
    loaded = kiln.load(compile_model(model, tmp_path))
    reference = ReferenceEvaluator(model)
    for axis in (0, 1, -2, -3):
        feeds = {"x": x, "axis": np.array(axis, np.int64)}
        got = loaded.run(feeds)["y"]
        (want,) = reference.run(None, feeds)
        assert got.shape == want.shape, axis
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(kiln.InvalidInputError, match="axis \\(counted from "
                       "the front\\) 2 is out of range \\[0, 1\\]"):
        loaded.run({"x": x, "axis": np.array(-1, np.int64)})
