"""Tests of the Python package: kiln.compile, kiln.load, Model.run and errors.

The package comes from the build tree (tools/test.sh puts $build/python on
PYTHONPATH) or from `pip install .`. Small models are built here with
onnx.helper from operators that compile today; every result is compared
with onnxruntime.
"""

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln import _kiln

ROOT = Path(__file__).resolve().parents[2]
RTOL = 1e-3
ATOL = 1e-4


def _ort(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def _model(nodes, inputs, outputs, initializers=(), name="test"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def _conv_model():
    """x [1,3,8,8] -> Conv(4, 3x3) + bias -> Relu -> "r"; r + y -> "z"."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "y"], ["z"], name="add"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 6, 6]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4, 6, 6])],
        [w, b], "conv")


def _mlp_model(batch="N"):
    """a [batch,16] -> Gemm(16->32) -> Relu -> MatMul(32->8) -> "out"."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Gemm", ["a", "w1", "b1"], ["g"], name="gemm", transB=1),
        helper.make_node("Relu", ["g"], ["h"], name="relu"),
        helper.make_node("MatMul", ["h", "w2"], ["out"], name="matmul"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 8])],
        [w1, b1, w2], "mlp")


def _conv_feeds():
    rng = np.random.default_rng(2)
    return {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
            "y": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}


@pytest.fixture(scope="module")
def conv_model():
    return _conv_model()


@pytest.fixture(scope="module")
def conv_so(conv_model, tmp_path_factory):
    return kiln.compile(conv_model, tmp_path_factory.mktemp("conv") / "conv.so")


@pytest.fixture
def conv(conv_so):
    return kiln.load(conv_so)


def _assert_matches(got, expected):
    assert list(got) == list(expected)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=RTOL, atol=ATOL, err_msg=name)


# --- compile ------------------------------------------------------------------


def test_version():
    assert isinstance(kiln.__version__, str) and kiln.__version__[0].isdigit()


def test_compile_from_path(conv_model, tmp_path):
    onnx.save(conv_model, tmp_path / "conv.onnx")
    output = tmp_path / "out" / "conv.so"
    output.parent.mkdir()
    path = kiln.compile(tmp_path / "conv.onnx", output=output)
    assert path == str(output)
    assert output.stat().st_size > 0
    assert kiln.compile(str(tmp_path / "conv.onnx"), str(output)) == str(output)


def test_compile_from_model_proto_to_a_temporary_file(conv_model):
    path = kiln.compile(conv_model)
    assert path.endswith(".so") and os.path.getsize(path) > 0
    model = kiln.load(path)
    _assert_matches(model.run(_conv_feeds()), _ort(conv_model, _conv_feeds()))


def test_compile_input_shapes(tmp_path):
    model = _mlp_model(batch="N")
    path = kiln.compile(model, tmp_path / "mlp.so", input_shapes={"a": (3, 16)})
    loaded = kiln.load(path)
    assert loaded.inputs == [kiln.TensorInfo("a", np.dtype(np.float32), (3, 16),
                                             (None, None))]
    assert loaded.symbols == []
    a = np.random.default_rng(3).standard_normal((3, 16)).astype(np.float32)
    _assert_matches(loaded.run({"a": a}), _ort(model, {"a": a}))


def test_compile_emit_graph(conv_model, tmp_path):
    path = kiln.compile(conv_model, tmp_path / "conv.mlir", emit="graph")
    assert "func.func" in Path(path).read_text()
    assert kiln.compile(conv_model, emit="llvm-ir").endswith(".ll")


def test_compile_unsupported_op_names_the_node(tmp_path):
    model = _model(
        [helper.make_node("Bernoulli", ["m"], ["d"], name="the_bernoulli")],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, [None])])
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(model, tmp_path / "bernoulli.so")
    assert "the_bernoulli" in str(error.value) and "Bernoulli" in str(error.value)
    assert isinstance(error.value, kiln.KilnError)


def test_compile_garbage_file(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08this is not a protobuf\xff\xff\xff")
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(garbage, tmp_path / "garbage.so")
    assert str(error.value)


def test_compile_missing_file(tmp_path):
    with pytest.raises(kiln.CompileError, match="missing.onnx"):
        kiln.compile(tmp_path / "missing.onnx", tmp_path / "missing.so")


@pytest.mark.parametrize("options", [
    dict(conv_algorithm="winograd-4x3"),
    dict(conv_algorithms={"conv": "direct"}),
    dict(openmp=False),
])
def test_compile_codegen_options(conv_model, tmp_path, options):
    """The code-generation choices of kiln-compile, as keyword options: the
    numbers stay those of onnxruntime."""
    so = kiln.compile(conv_model, tmp_path / "conv.so", **options)
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
             "y": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}
    got, want = kiln.load(so).run(feeds), _ort(conv_model, feeds)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=RTOL, atol=ATOL)
    settings = _kiln.compiler.CompileOptions()
    settings.report = True
    settings.conv_algorithm = options.get("conv_algorithm", "auto")
    settings.conv_algorithms = options.get("conv_algorithms", {})
    report = _kiln.compiler.compile_onnx_bytes(
        conv_model.SerializeToString(), "", str(tmp_path / "r.so"), settings).report
    if "conv_algorithm" in options:
        assert "conv conv: winograd-4x3 (default;" in report, report
    if "conv_algorithms" in options:
        assert "conv conv: direct (override;" in report, report


def test_compile_bad_codegen_options(conv_model):
    with pytest.raises(kiln.CompileError, match="unknown convolution algorithm 'fast'"):
        kiln.compile(conv_model, conv_algorithm="fast")
    with pytest.raises(kiln.CompileError, match="no convolution named 'nope'"):
        kiln.compile(conv_model, conv_algorithms={"nope": "im2col"})


def test_compile_bad_arguments(conv_model):
    with pytest.raises(ValueError, match="bogus"):
        kiln.compile(conv_model, emit="bogus")
    with pytest.raises(TypeError, match="no_such_option"):
        kiln.compile(conv_model, no_such_option=1)
    with pytest.raises(TypeError, match="ModelProto"):
        kiln.compile(42)
    with pytest.raises(kiln.CompileError, match="sparc"):
        kiln.compile(conv_model, target="sparc")


# --- load and metadata ----------------------------------------------------------


def test_metadata(conv):
    f32 = np.dtype(np.float32)
    static = (None,) * 4  # no symbolic dimension
    assert conv.inputs == [kiln.TensorInfo("x", f32, (1, 3, 8, 8), static),
                           kiln.TensorInfo("y", f32, (1, 4, 6, 6), static)]
    assert conv.outputs == [kiln.TensorInfo("z", f32, (1, 4, 6, 6), static),
                            kiln.TensorInfo("r", f32, (1, 4, 6, 6), static)]
    info = conv.inputs[0]
    assert (info.name, info.dtype, info.shape) == ("x", f32, (1, 3, 8, 8))
    assert isinstance(info.dtype, np.dtype)
    assert conv.target_triple.startswith("x86_64")
    assert "x" in repr(conv)


def test_load_a_file_that_is_not_a_model(tmp_path):
    text = tmp_path / "notes.so"
    text.write_text("not a shared object\n")
    with pytest.raises(kiln.ModelError):
        kiln.load(text)
    with pytest.raises(kiln.ModelError, match="missing.so"):
        kiln.load(tmp_path / "missing.so")
    # A shared object that is not a Kiln model: the extension itself.
    with pytest.raises(kiln.ModelError):
        kiln.load(kiln._kiln.__file__)


# --- run ------------------------------------------------------------------------


def test_run_matches_onnxruntime(conv, conv_model):
    feeds = _conv_feeds()
    _assert_matches(conv.run(feeds), _ort(conv_model, feeds))


def test_run_list_and_dict_agree(conv):
    feeds = _conv_feeds()
    by_name = conv.run(feeds)
    by_order = conv.run([feeds["x"], feeds["y"]])
    assert list(by_order) == ["z", "r"]
    for name in by_name:
        np.testing.assert_array_equal(by_name[name], by_order[name])
    np.testing.assert_array_equal(conv.run(tuple(feeds.values()))["z"], by_name["z"])


def test_run_copies_non_contiguous_inputs(conv):
    feeds = _conv_feeds()
    strided = {"x": np.asfortranarray(feeds["x"]),
               "y": np.repeat(feeds["y"], 2, axis=3)[..., ::2]}
    assert not strided["x"].flags.c_contiguous and not strided["y"].flags.c_contiguous
    want = conv.run(feeds)
    got = conv.run(strided)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_run_outputs_are_fresh_arrays(conv):
    feeds = _conv_feeds()
    first = conv.run(feeds)
    second = conv.run(feeds)
    assert first["z"] is not second["z"]
    assert not np.shares_memory(first["z"], second["z"])
    assert first["z"].flags.c_contiguous and first["z"].flags.writeable
    first["z"][...] = 0
    assert np.any(second["z"] != 0)


def test_run_wrong_dtype(conv):
    feeds = _conv_feeds()
    feeds["x"] = feeds["x"].astype(np.float64)
    with pytest.raises(kiln.InvalidInputError) as error:
        conv.run(feeds)
    assert str(error.value) == \
        "input 'x': expected float32 [1,3,8,8], got float64 [1,3,8,8]"
    assert isinstance(error.value, ValueError)


def test_run_wrong_shape(conv):
    feeds = _conv_feeds()
    feeds["y"] = np.zeros((1, 4, 6, 7), np.float32)
    with pytest.raises(kiln.InvalidInputError) as error:
        conv.run(feeds)
    assert str(error.value) == \
        "input 'y': expected float32 [1,4,6,6], got float32 [1,4,6,7]"
    with pytest.raises(kiln.InvalidInputError, match=r"got float32 \[4,6,6\]"):
        conv.run([feeds["x"], np.zeros((4, 6, 6), np.float32)])


def test_run_missing_and_unknown_inputs(conv):
    feeds = _conv_feeds()
    with pytest.raises(kiln.InvalidInputError, match="missing input.*'y'"):
        conv.run({"x": feeds["x"]})
    with pytest.raises(kiln.InvalidInputError, match="unknown input.*'w'"):
        conv.run({**feeds, "w": feeds["x"]})


def test_run_wrong_count(conv):
    feeds = _conv_feeds()
    with pytest.raises(kiln.InvalidInputError, match="expected 2 input.*got 1"):
        conv.run([feeds["x"]])
    with pytest.raises(kiln.InvalidInputError, match="expected 2 input.*got 3"):
        conv.run([feeds["x"], feeds["y"], feeds["y"]])
    with pytest.raises(TypeError):
        conv.run(feeds["x"])


def test_num_threads(conv_so):
    model = kiln.load(conv_so, num_threads=1)
    assert model.num_threads == 1
    model.num_threads = 2
    assert model.num_threads == 2
    with pytest.raises(ValueError):
        model.num_threads = 0
    assert model.num_threads == 2
    with pytest.raises(ValueError):
        kiln.load(conv_so, num_threads=-1)
    want = kiln.load(conv_so, num_threads=1).run(_conv_feeds())
    got = model.run(_conv_feeds())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)


def test_close(conv_so):
    with kiln.load(conv_so) as model:
        model.run(_conv_feeds())
    with pytest.raises(kiln.KilnError, match="closed"):
        model.run(_conv_feeds())


# --- the GIL --------------------------------------------------------------------


def _main_thread_ran_during(fn):
    """Runs fn() in a thread while this thread keeps stamping the time; True if
    a stamp falls in the middle half of fn's run. While a thread holds the GIL
    in C code no other thread runs Python, so a stamp there means fn let the
    GIL go."""
    window = {}

    def target():
        window["start"] = time.perf_counter()
        fn()
        window["end"] = time.perf_counter()

    stamps = []
    thread = threading.Thread(target=target)
    thread.start()
    while thread.is_alive():
        stamps.append(time.perf_counter())
    thread.join()
    start, end = window["start"], window["end"]
    quarter = (end - start) / 4
    return any(start + quarter < s < end - quarter for s in stamps)


def test_compile_releases_the_gil(conv_model, tmp_path):
    assert _main_thread_ran_during(
        lambda: kiln.compile(conv_model, tmp_path / "conv.so"))


def test_run_releases_the_gil(tmp_path):
    # One MatMul big enough to run for a while on one thread.
    n = 2048
    model = _model(
        [helper.make_node("MatMul", ["a", "b"], ["c"], name="matmul")],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])])
    loaded = kiln.load(kiln.compile(model, tmp_path / "matmul.so"), num_threads=1)
    rng = np.random.default_rng(4)
    feeds = {"a": rng.standard_normal((n, n)).astype(np.float32),
             "b": rng.standard_normal((n, n)).astype(np.float32)}
    result = {}
    assert _main_thread_ran_during(lambda: result.update(loaded.run(feeds)))
    np.testing.assert_allclose(result["c"], feeds["a"] @ feeds["b"], rtol=RTOL, atol=1e-3)


# --- a real model ---------------------------------------------------------------


def test_transformer_encoder_matches_onnxruntime(tmp_path):
    sys.path.insert(0, str(ROOT / "tools" / "models"))
    try:
        import transformer_encoder
    finally:
        sys.path.pop(0)
    model = transformer_encoder.build()
    feeds = transformer_encoder.feeds(model)
    # A CompileError fails this test with the compiler's message.
    loaded = kiln.load(kiln.compile(model, tmp_path / "encoder.so"))
    assert [i.name for i in loaded.inputs] == [i.name for i in model.graph.input
                                                if i.name in feeds]
    _assert_matches(loaded.run(feeds), _ort(model, feeds))
