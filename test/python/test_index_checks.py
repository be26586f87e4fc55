"""Run-time bounds of gather and scatter indices (issue 23): an index out of
range after negative wrap-around fails the run with a message naming the
node, the index and the range, where Kiln used to clamp it silently (index
1000000 into a 10-row table returned row 9). Constant indices out of range
are refused when the model compiles. In-range indices, negative ones
included, still agree with onnxruntime, and a failed run leaves the handle
usable."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

RNG = np.random.default_rng(23)


def one_node(op, data, indices, attrs=None, updates=None, const_indices=False,
             batch=None):
    """A model of one `op` on a constant `data` table with run-time (or
    constant) `indices` and, for scatters, run-time `updates`."""
    inputs, inits = [], [numpy_helper.from_array(data, "data")]
    names = ["data", "indices"]
    index_shape = list(indices.shape)
    if batch is not None:
        index_shape[0] = batch
    if const_indices:
        inits.append(numpy_helper.from_array(indices, "indices"))
    else:
        inputs.append(helper.make_tensor_value_info(
            "indices", helper.np_dtype_to_tensor_dtype(indices.dtype), index_shape))
    if updates is not None:
        names.append("updates")
        inputs.append(helper.make_tensor_value_info(
            "updates", TensorProto.FLOAT, list(updates.shape)))
    node = helper.make_node(op, names, ["y"], name="lookup", **(attrs or {}))
    graph = helper.make_graph(
        [node], "g", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def table(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# op, data, good indices, bad indices, attributes, updates, (index, range)
CASES = {
    "gather": ("Gather", table(10, 4),
               np.array([[0, 9, -1], [-10, 3, 4]], np.int64),
               np.array([[0, 9, -1], [-10, 1000000, 4]], np.int64),
               {"axis": 0}, None, "index 1000000 is out of range [-10, 9]"),
    "gather_negative": ("Gather", table(3, 10),
                        np.array([2, -10], np.int32),
                        np.array([2, -11], np.int32),
                        {"axis": 1}, None, "index -11 is out of range [-10, 9]"),
    "gather_elements": ("GatherElements", table(3, 4),
                        np.array([[0, 2, -1, 1]], np.int64),
                        np.array([[0, 3, -1, 1]], np.int64),
                        {"axis": 0}, None, "index 3 is out of range [-3, 2]"),
    "gather_nd": ("GatherND", table(4, 5),
                  np.array([[3, -5], [0, 4]], np.int64),
                  np.array([[3, -5], [0, 5]], np.int64),
                  {}, None, "index 1 of a tuple 5 is out of range [-5, 4]"),
    "scatter_elements": ("ScatterElements", table(3, 4),
                         np.array([[0, 2, -3, 1]], np.int64),
                         np.array([[0, 9, -1, -7]], np.int64),
                         {"axis": 0}, table(1, 4),
                         "index 9 is out of range [-3, 2]"),
    "scatter_nd": ("ScatterND", table(4, 3),
                   np.array([[1], [-4]], np.int64),
                   np.array([[1], [-5]], np.int64),
                   {}, table(2, 3),
                   "index 0 of a tuple -5 is out of range [-4, 3]"),
}


def feeds(indices, updates):
    given = {"indices": indices}
    if updates is not None:
        given["updates"] = updates
    return given


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_of_range_index_fails_the_run(case, tmp_path):
    op, data, good, bad, attrs, updates, message = CASES[case]
    model = one_node(op, data, good, attrs, updates)
    path = kiln.compile(model, str(tmp_path / f"{case}.so"))
    with kiln.load(path) as compiled:
        got = compiled.run(feeds(good, updates))["y"]
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        want = session.run(None, feeds(good, updates))[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        with pytest.raises(kiln.InvalidInputError) as error:
            compiled.run(feeds(bad, updates))
        assert f"lookup ({op}): {message}" in str(error.value)
        # The failed run leaves the handle usable, and a later good run
        # does not see the earlier failure.
        np.testing.assert_allclose(compiled.run(feeds(good, updates))["y"], want,
                                   rtol=1e-6, atol=1e-6)


def test_onnxruntime_refuses_the_same_index():
    """The behaviour matched: onnxruntime fails the run too."""
    op, data, good, bad, attrs, updates, _ = CASES["gather"]
    model = one_node(op, data, good, attrs, updates)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="out of data bounds"):
        session.run(None, feeds(bad, updates))


def test_symbolic_batch_checks_every_sample(tmp_path):
    """A symbolic batch runs the entry once per sample: a bad index in the
    last sample fails the run all the same."""
    data = table(10, 4)
    good = np.zeros((5, 3), np.int64)
    model = one_node("Gather", data, good, {"axis": 0}, batch="N")
    path = kiln.compile(model, str(tmp_path / "batch.so"))
    with kiln.load(path) as compiled:
        np.testing.assert_array_equal(compiled.run({"indices": good})["y"],
                                      data[good])
        bad = good.copy()
        bad[4, 2] = 10
        with pytest.raises(kiln.InvalidInputError,
                           match=r"index 10 is out of range \[-10, 9\]"):
            compiled.run({"indices": bad})


def test_threads_report_the_same_failure(tmp_path):
    """The check runs on the calling thread whatever the thread count."""
    data = table(64, 32)
    good = RNG.integers(-64, 64, size=(16, 128)).astype(np.int64)
    bad = good.copy()
    bad[7, 100] = -65
    model = one_node("Gather", data, good, {"axis": 0})
    path = kiln.compile(model, str(tmp_path / "threads.so"))
    for threads in (1, 2):
        with kiln.load(path, num_threads=threads) as compiled:
            np.testing.assert_array_equal(compiled.run({"indices": good})["y"],
                                          data[good])
            with pytest.raises(kiln.InvalidInputError,
                               match=r"index -65 is out of range \[-64, 63\]"):
                compiled.run({"indices": bad})


@pytest.mark.parametrize("op,data,indices,attrs,updates,message", [
    ("Gather", table(10, 4), np.array([1, 12], np.int64), {"axis": 0}, None,
     "index 12 is out of range [-10, 9]"),
    ("GatherND", table(4, 5), np.array([[0, -6]], np.int64), {}, None,
     "index -6 (entry 1 of an index tuple) is out of range [-5, 4]"),
    ("ScatterElements", table(3, 4), np.array([[0, 1, 2, 3]], np.int64),
     {"axis": 0}, table(1, 4), "index 3 is out of range [-3, 2]"),
])
def test_constant_index_out_of_range_is_refused(op, data, indices, attrs,
                                                updates, message, tmp_path):
    model = one_node(op, data, indices, attrs, updates, const_indices=True)
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(model, str(tmp_path / "const.so"))
    assert f"lookup ({op}): {message}" in str(error.value)


# Ops whose indices count from zero only (kiln.indices_from_zero): RoiAlign's
# batch indices and MaxUnpool's positions. onnxruntime refuses a negative
# one, so Kiln's range is [0, size - 1], not [-size, size - 1].

def graph_of(node, inputs, inits):
    """A model of the one `node` with output y."""
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def roi_align(const_batch=None):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8]),
              helper.make_tensor_value_info("rois", TensorProto.FLOAT, [2, 4])]
    inits = []
    if const_batch is None:
        inputs.append(helper.make_tensor_value_info("batch", TensorProto.INT64, [2]))
    else:
        inits.append(numpy_helper.from_array(np.array(const_batch, np.int64), "batch"))
    return graph_of(helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"],
                                     name="lookup", output_height=2, output_width=2,
                                     sampling_ratio=2), inputs, inits)


def max_unpool(const_indices=None):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])]
    inits = []
    if const_indices is None:
        inputs.append(helper.make_tensor_value_info("indices", TensorProto.INT64,
                                                    [1, 2, 2, 2]))
    else:
        inits.append(numpy_helper.from_array(const_indices, "indices"))
    return graph_of(helper.make_node("MaxUnpool", ["x", "indices"], ["y"], name="lookup",
                                     kernel_shape=[2, 2], strides=[2, 2]), inputs, inits)


UNPOOL_GOOD = np.array([0, 5, 10, 15, 16, 18, 25, 31], np.int64).reshape(1, 2, 2, 2)


@pytest.mark.parametrize("case,bad,message", [
    ("roi_align", [0, 2], "index 2 is out of range [0, 1]"),
    ("roi_align", [-1, 1], "index -1 is out of range [0, 1]"),
    ("max_unpool", 32, "index 32 is out of range [0, 31]"),
    ("max_unpool", -1, "index -1 is out of range [0, 31]"),
])
def test_indices_from_zero(case, bad, message, tmp_path):
    if case == "roi_align":
        model, op = roi_align(), "RoiAlign"
        base = {"x": table(2, 3, 8, 8),
                "rois": np.array([[0, 0, 4, 4], [1, 1, 6, 6]], np.float32)}
        good = dict(base, batch=np.array([1, 0], np.int64))
        wrong = dict(base, batch=np.array(bad, np.int64))
    else:
        model, op = max_unpool(), "MaxUnpool"
        x = table(1, 2, 2, 2)
        good = {"x": x, "indices": UNPOOL_GOOD}
        indices = UNPOOL_GOOD.copy()
        indices[0, 1, 1, 1] = bad
        wrong = {"x": x, "indices": indices}
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    want = session.run(None, good)[0]
    with pytest.raises(Exception, match="out of (range|bounds)"):
        session.run(None, wrong)  # onnxruntime refuses it too
    path = kiln.compile(model, str(tmp_path / f"{case}.so"))
    with kiln.load(path) as compiled:
        np.testing.assert_allclose(compiled.run(good)["y"], want, rtol=1e-5, atol=1e-6)
        with pytest.raises(kiln.InvalidInputError) as error:
            compiled.run(wrong)
        assert f"lookup ({op}): {message}" in str(error.value)
        np.testing.assert_allclose(compiled.run(good)["y"], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model,message", [
    (lambda: roi_align(const_batch=[0, -1]), "index -1 is out of range [0, 1]"),
    (lambda: max_unpool(const_indices=np.where(UNPOOL_GOOD == 31, -1, UNPOOL_GOOD)),
     "index -1 is out of range [0, 31]"),
], ids=["roi_align", "max_unpool"])
def test_constant_indices_from_zero_are_refused(model, message, tmp_path):
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(model(), str(tmp_path / "const.so"))
    assert message in str(error.value)
