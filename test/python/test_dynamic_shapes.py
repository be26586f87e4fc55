"""Symbolic dimensions (issue 21, first stage): a batch that leads every input
and output stays symbolic from the ONNX model to the runtime. The model is
compiled once; its entry takes one sample and the model ABI runs it once per
sample of the run's batch, which the runtime checks against the bounds
(kiln-compile --dynamic-dims, kiln.compile(dynamic_dims=...)) and against
every other tensor that names it. Every size below is checked against
onnxruntime on the same model."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln_testing import KILN_COMPILE, KILN_RUN, run_onnxruntime
from test_batch_split import fire_classifier

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import kiln_cnn  # noqa: E402
import transformer_encoder  # noqa: E402
from common import symbolic_batch  # noqa: E402

SIZES = [1, 2, 3, 7, 8, 16, 33, 64]
rng = np.random.default_rng(21)


def small_model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def check_sizes(model, compiled, feeds_for, rtol=1e-4, atol=1e-5):
    """Runs `compiled` at every size of SIZES against onnxruntime."""
    loaded = kiln.load(compiled)
    for batch in SIZES:
        feeds = feeds_for(batch)
        got = loaded.run(feeds)
        expected = run_onnxruntime(model, feeds)
        for name, want in expected.items():
            assert got[name].shape == want.shape, (batch, name)
            np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol,
                                       err_msg=f"batch {batch}, output {name}")


def test_cnn_any_batch_matches_onnxruntime(tmp_path):
    """Kiln's own CNN, exported with a symbolic batch (its Reshape copies the
    batch), compiled once for 1..64."""
    model = symbolic_batch(kiln_cnn.build())
    compiled = kiln.compile(model, tmp_path / "cnn.so", dynamic_dims={"batch": (1, 64)})
    loaded = kiln.load(compiled)
    assert loaded.symbols == [kiln.SymbolInfo("batch", 1, 64)]
    (info,) = loaded.inputs
    assert info.shape == (None, 3, 64, 64)
    assert info.dims == ("batch", None, None, None)
    assert loaded.outputs[0].shape == (None, 10)
    check_sizes(model, compiled, lambda b: {
        "input": rng.standard_normal((b, 3, 64, 64)).astype(np.float32)})


def test_two_inputs_three_outputs(tmp_path):
    """Inputs and outputs of four sample sizes share the symbol."""
    model = fire_classifier("N")
    compiled = kiln.compile(model, tmp_path / "fire.so")
    assert kiln.load(compiled).symbols == [kiln.SymbolInfo("N", 1, 1024)]
    check_sizes(model, compiled, lambda b: {
        "x": rng.standard_normal((b, 8, 20, 20)).astype(np.float32),
        "z": rng.standard_normal((b, 3, 7)).astype(np.float32)})


def test_transformer_any_batch_matches_onnxruntime(tmp_path):
    """A BERT-style encoder with a symbolic batch; its sequence length is a
    size given by name (a symbolic sequence is the next stage)."""
    model = transformer_encoder.build(seq=16, layers=1)
    model = symbolic_batch(model)
    seq_symbolic = onnx.ModelProto.FromString(model.SerializeToString())
    seq_symbolic.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "seq"
    with pytest.raises(kiln.CompileError,
                       match=r"input 'input_ids' dimension 1 \('seq'\) is "
                             r"symbolic.*--dynamic-dims seq=SIZE"):
        kiln.compile(seq_symbolic, tmp_path / "seq.so")
    compiled = kiln.compile(seq_symbolic, tmp_path / "bert.so",
                            dynamic_dims={"seq": 16, "batch": (1, 64)})
    assert kiln.load(compiled).inputs[0].shape == (None, 16)
    check_sizes(model, compiled, lambda b: {
        "input_ids": rng.integers(0, 1000, (b, 16)).astype(np.int64)},
        rtol=1e-3, atol=1e-4)


def test_kiln_run_any_batch_and_info(tmp_path):
    """kiln-run takes any batch within the bounds, writes outputs of the
    run's shapes, and --info names the symbol; outside the bounds, and with
    inputs that disagree, it fails with the runtime's message."""
    model = fire_classifier("N")
    onnx.save(model, tmp_path / "fire.onnx")
    so = tmp_path / "fire.so"
    subprocess.run([KILN_COMPILE, tmp_path / "fire.onnx", "-o", so,
                    "--dynamic-dims", "N=1..8"], check=True)
    info = subprocess.run([KILN_RUN, "--info", so], capture_output=True,
                          text=True, check=True).stdout
    assert "symbolic dimensions (1):\n  N: 1..8\n" in info
    assert "  x: f32 [N,8,20,20]\n" in info
    assert "  prob: f32 [N,10]\n" in info

    def run(bx, bz):
        np.save(tmp_path / "x.npy", np.ones((bx, 8, 20, 20), np.float32))
        np.save(tmp_path / "z.npy", np.ones((bz, 3, 7), np.float32))
        return subprocess.run([KILN_RUN, so, "--input", f"x={tmp_path / 'x.npy'}",
                               "--input", f"z={tmp_path / 'z.npy'}",
                               "--output-dir", tmp_path / "out"],
                              capture_output=True, text=True)
    assert run(5, 5).returncode == 0
    assert np.load(tmp_path / "out" / "prob.npy").shape == (5, 10)
    assert np.load(tmp_path / "out" / "cat.npy").shape == (5, 32, 20, 20)
    outside = run(9, 9)
    assert outside.returncode != 0
    assert ("dimension 0 ('N') is 9, outside the model's bounds 1..8"
            in outside.stderr)
    disagree = run(2, 3)
    assert "dimension 0 ('N') is 3, but 2 in the tensors before it" in disagree.stderr


def test_python_errors(tmp_path):
    model = fire_classifier("N")
    loaded = kiln.load(kiln.compile(model, tmp_path / "fire.so",
                                    dynamic_dims={"N": (2, 4)}))
    x = np.zeros((1, 8, 20, 20), np.float32)
    z = np.zeros((1, 3, 7), np.float32)
    with pytest.raises(kiln.InvalidInputError, match=r"is 1, outside the "
                       r"model's bounds 2\.\.4"):
        loaded.run({"x": x, "z": z})
    with pytest.raises(kiln.InvalidInputError, match=r"is 3, but 2 in the "
                       r"tensors before it"):
        loaded.run({"x": np.zeros((2, 8, 20, 20), np.float32),
                    "z": np.zeros((3, 3, 7), np.float32)})
    with pytest.raises(kiln.InvalidInputError,
                       match=r"expected float32 \[N,8,20,20\], got float32 \[2,8,20,21\]"):
        loaded.run({"x": np.zeros((2, 8, 20, 21), np.float32),
                    "z": np.zeros((2, 3, 7), np.float32)})
    with pytest.raises(ValueError, match="must be a size or"):
        kiln.compile(model, tmp_path / "bad.so", dynamic_dims={"N": (1, 2, 3)})
    with pytest.raises(kiln.CompileError, match=r"1 <= MIN <= MAX"):
        kiln.compile(model, tmp_path / "bad.so", dynamic_dims={"N": (4, 2)})
    with pytest.raises(kiln.CompileError, match=r"names 'M', which no input"):
        kiln.compile(model, tmp_path / "bad.so", dynamic_dims={"M": (1, 2)})


def test_batch_that_cannot_stay_symbolic(tmp_path):
    """A model that computes with the batch's size, or mixes its samples, is
    refused with the op and the way out; a size makes it compile."""
    uses_size = small_model(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
         helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["x", "bf"], ["y"])],
        [("x", ["N", 4])], [("y", ["N", 4])],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    with pytest.raises(kiln.CompileError,
                       match=r"computes with the size of the batch 'N' here.*"
                             r"--dynamic-dims N=SIZE"):
        kiln.compile(uses_size, tmp_path / "a.so")
    fixed = kiln.load(kiln.compile(uses_size, tmp_path / "a.so",
                                   dynamic_dims={"N": 3}))
    assert fixed.symbols == [] and fixed.inputs[0].shape == (3, 4)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(fixed.run({"x": x})["y"], 3 * x)

    mixes = small_model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=1)],
                        [("x", ["N", 3])], [("y", [1, 1])])
    with pytest.raises(kiln.CompileError,
                       match=r"the batch 'N' cannot stay symbolic: the model is "
                             r"kept whole"):
        kiln.compile(mixes, tmp_path / "b.so")


def test_report_says_symbolic(tmp_path):
    onnx.save(fire_classifier("N"), tmp_path / "fire.onnx")
    proc = subprocess.run([KILN_COMPILE, tmp_path / "fire.onnx", "-o",
                           tmp_path / "fire.so", "--report"],
                          capture_output=True, text=True, check=True)
    assert "batch: symbolic 'N', run once per sample" in proc.stderr
