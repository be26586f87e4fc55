"""Symbolic dimensions (issue 21). First stage: a batch that leads every
input and output stays symbolic from the ONNX model to the runtime. The model
is compiled once; its entry takes one sample and the model ABI runs it once
per sample of the run's batch, which the runtime checks against the bounds
(kiln-compile --dynamic-dims, kiln.compile(dynamic_dims=...)) and against
every other tensor that names it. Second stage: any other dimension given
bounds (a sequence length) stays `?` in the types, and the code reads its
size at run time (the loop path so far). Every size below is checked against
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
import exported_encoder  # noqa: E402
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


def attention_block(d=16):
    """One head of attention, LayerNorm and a feed-forward block over a
    symbolic sequence `seq`, with an additive mask [1, 1, seq] that shares
    it: scores [1, seq, seq] (an output too) reduce over seq in the softmax
    and in the product with the values."""
    def w(name, shape, scale=0.2):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name)
    inits = [w("Wq", (d, d)), w("Wk", (d, d)), w("Wv", (d, d)),
             w("W1", (d, 4 * d)), w("B1", (4 * d,)), w("W2", (4 * d, d)),
             w("B2", (d,)), w("g", (d,), 1.0), w("b", (d,)),
             numpy_helper.from_array(np.array(0.25, np.float32), "scale")]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "Wq"], ["q"]), n("MatMul", ["x", "Wk"], ["k"]),
        n("MatMul", ["x", "Wv"], ["v"]),
        n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        n("MatMul", ["q", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s1"]),
        n("Add", ["s1", "mask"], ["s2"]), n("Softmax", ["s2"], ["p"], axis=-1),
        n("MatMul", ["p", "v"], ["att"]), n("Add", ["att", "x"], ["r"]),
        n("LayerNormalization", ["r", "g", "b"], ["ln"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln", "W1"], ["f0"]), n("Add", ["f0", "B1"], ["f1"]),
        n("Erf", ["f1"], ["f2"]), n("Mul", ["f2", "f1"], ["f3"]),
        n("MatMul", ["f3", "W2"], ["f4"]), n("Add", ["f4", "B2"], ["f5"]),
        n("Add", ["f5", "ln"], ["y"])]
    return small_model(nodes, [("x", [1, "seq", d]), ("mask", [1, 1, "seq"])],
                       [("y", [1, "seq", d]), ("p", [1, "seq", "seq"])], inits)


def attention_feeds(seq, d=16):
    return {"x": rng.standard_normal((1, seq, d)).astype(np.float32),
            "mask": rng.standard_normal((1, 1, seq)).astype(np.float32)}


def test_sequence_any_length_matches_onnxruntime(tmp_path):
    """A sequence length given bounds stays `?`: one model serves every
    length within them, each run's outputs of its shapes, the buffers
    between the ops in the workspace (sized for the longest), nothing
    allocated by the run."""
    model = attention_block()
    compiled = kiln.compile(model, tmp_path / "att.so",
                            dynamic_dims={"seq": (1, 64)})
    loaded = kiln.load(compiled)
    assert loaded.symbols == [kiln.SymbolInfo("seq", 1, 64)]
    assert [(i.name, i.shape, i.dims) for i in loaded.inputs] == [
        ("x", (1, None, 16), (None, "seq", None)),
        ("mask", (1, 1, None), (None, None, "seq"))]
    assert loaded.outputs[1].shape == (1, None, None)
    check_sizes(model, compiled, attention_feeds, rtol=1e-4, atol=1e-5)
    onnx.save(model, tmp_path / "att.onnx")
    llvm = subprocess.run([KILN_COMPILE, tmp_path / "att.onnx", "-o", "-",
                           "--emit=llvm", "--dynamic-dims", "seq=1..64"],
                          capture_output=True, text=True, check=True).stdout
    assert "@malloc" not in llvm


def test_kiln_run_any_sequence(tmp_path):
    model = attention_block()
    onnx.save(model, tmp_path / "att.onnx")
    so = tmp_path / "att.so"
    subprocess.run([KILN_COMPILE, tmp_path / "att.onnx", "-o", so,
                    "--dynamic-dims", "seq=2..40"], check=True)
    info = subprocess.run([KILN_RUN, "--info", so], capture_output=True,
                          text=True, check=True).stdout
    assert "symbolic dimensions (1):\n  seq: 2..40\n" in info
    assert "  mask: f32 [1,1,seq]\n" in info
    assert "  p: f32 [1,seq,seq]\n" in info
    feeds = attention_feeds(11)
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
    subprocess.run([KILN_RUN, so, "--input", f"x={tmp_path / 'x.npy'}",
                    "--input", f"mask={tmp_path / 'mask.npy'}",
                    "--output-dir", tmp_path / "out"], check=True)
    expected = run_onnxruntime(model, feeds)
    for name in ("y", "p"):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"{name}.npy"),
                                   expected[name], rtol=1e-4, atol=1e-5)
    np.save(tmp_path / "x.npy", np.zeros((1, 41, 16), np.float32))
    np.save(tmp_path / "mask.npy", np.zeros((1, 1, 41), np.float32))
    outside = subprocess.run([KILN_RUN, so, "--input", f"x={tmp_path / 'x.npy'}",
                              "--input", f"mask={tmp_path / 'mask.npy'}"],
                             capture_output=True, text=True)
    assert outside.returncode != 0
    assert "dimension 1 ('seq') is 41, outside the model's bounds 2..40" in outside.stderr


def test_sequence_errors(tmp_path):
    """Sizes outside the bounds and inputs that disagree fail the run;
    ops without a rule for symbolic sizes and the GPU target are refused
    when compiling, with the way out."""
    model = attention_block()
    loaded = kiln.load(kiln.compile(model, tmp_path / "att.so",
                                    dynamic_dims={"seq": (2, 8)}))
    with pytest.raises(kiln.InvalidInputError,
                       match=r"dimension 1 \('seq'\) is 1, outside the model's "
                             r"bounds 2\.\.8"):
        loaded.run(attention_feeds(1))
    with pytest.raises(kiln.InvalidInputError,
                       match=r"input 'mask' \(#1\): dimension 2 \('seq'\) is 6, "
                             r"but 5 in the tensors before it"):
        loaded.run({"x": attention_feeds(5)["x"], "mask": attention_feeds(6)["mask"]})
    with pytest.raises(kiln.CompileError,
                       match=r"nvptx target compiles static sizes only"):
        kiln.compile(model, tmp_path / "gpu.so", target="nvptx",
                     dynamic_dims={"seq": (2, 8)})

    reshapes = small_model(
        [helper.make_node("Reshape", ["x", "shape"], ["r"]),
         helper.make_node("Relu", ["r"], ["y0"]),
         helper.make_node("Reshape", ["y0", "back"], ["y"]),
         helper.make_node("Concat", ["x", "x"], ["c"], axis=1)],
        [("x", [1, "seq", 8])], [("y", [1, "seq", 8]), ("c", [1, None, 8])],
        [numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
         numpy_helper.from_array(np.array([0, -1, 8], np.int64), "back")])
    # The reshapes that merge `seq` with 8 and split it back are followed
    # (a multiple of `seq` in between); the concat along it is not.
    with pytest.raises(kiln.CompileError,
                       match=r"the symbolic dimensions \(seq\) reach ops that "
                             r"Kiln computes only at static sizes so far: "
                             r"graph.concat \(1: 'Concat#3 \(Concat\)'\); give "
                             r"each a size with --dynamic-dims NAME=SIZE"):
        kiln.compile(reshapes, tmp_path / "r.so", dynamic_dims={"seq": (1, 8)})
    merged = kiln.load(kiln.compile(
        small_model(reshapes.graph.node[:3], [("x", [1, "seq", 8])],
                    [("y", [1, "seq", 8])], reshapes.graph.initializer),
        tmp_path / "m.so", dynamic_dims={"seq": (1, 8)}))
    for seq in (1, 3, 8):
        x = rng.standard_normal((1, seq, 8)).astype(np.float32)
        np.testing.assert_array_equal(merged.run({"x": x})["y"], np.maximum(x, 0))
    flat = small_model(reshapes.graph.node[:1], [("x", [1, "seq", 8])],
                       [("r", [1, None])], reshapes.graph.initializer)
    with pytest.raises(kiln.CompileError,
                       match=r"output 'r' dimension 1 is 8 x 'seq', which the "
                             r"model's interface cannot describe"):
        kiln.compile(flat, tmp_path / "f.so", dynamic_dims={"seq": (1, 8)})
    fixed = kiln.load(kiln.compile(reshapes, tmp_path / "r.so",
                                   dynamic_dims={"seq": 4}))
    assert fixed.inputs[0].shape == (1, 4, 8)

    both = small_model([helper.make_node("Relu", ["x"], ["y"])],
                       [("x", ["batch", "seq", 4])], [("y", ["batch", "seq", 4])])
    one = kiln.load(kiln.compile(both, tmp_path / "b.so",
                                 dynamic_dims={"seq": (1, 8), "batch": 2}))
    x = rng.standard_normal((2, 5, 4)).astype(np.float32)
    np.testing.assert_array_equal(one.run({"x": x})["y"], np.maximum(x, 0))


def test_batch_beside_sequence(tmp_path):
    """A symbolic batch beside a sequence runs the entry once per sample,
    the code reading the sequence (the batch's default bounds need no
    workspace of their own); where the samples do not run apart, the code
    reads the batch's size too, which needs bounds for it."""
    both = small_model([helper.make_node("Relu", ["x"], ["y"])],
                       [("x", ["batch", "seq", 4])], [("y", ["batch", "seq", 4])])
    onnx.save(both, tmp_path / "both.onnx")
    proc = subprocess.run([KILN_COMPILE, tmp_path / "both.onnx", "-o",
                           tmp_path / "both.so", "--report",
                           "--dynamic-dims", "seq=1..8"],
                          capture_output=True, text=True, check=True)
    assert "batch: symbolic 'batch', run once per sample" in proc.stderr
    loaded = kiln.load(str(tmp_path / "both.so"))
    assert loaded.symbols == [kiln.SymbolInfo("batch", 1, 1024),
                              kiln.SymbolInfo("seq", 1, 8)]
    for batch, seq in [(1, 1), (2, 5), (7, 8), (33, 3)]:
        x = rng.standard_normal((batch, seq, 4)).astype(np.float32)
        np.testing.assert_array_equal(loaded.run({"x": x})["y"], np.maximum(x, 0))
    with pytest.raises(kiln.InvalidInputError, match=r"'seq'\) is 9"):
        loaded.run({"x": np.zeros((2, 9, 4), np.float32)})

    # An output that does not lead with the batch: the batch is read.
    mixes = small_model([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0, 2])],
                        [("x", ["batch", "seq", 4])], [("y", ["seq", "batch", 4])])
    with pytest.raises(kiln.CompileError,
                       match=r"the batch 'batch' and the symbolic dimensions "
                             r"given bounds \('seq', \.\.\.\) cannot both stay "
                             r"symbolic with the batch's default bounds.*"
                             r"--dynamic-dims batch=MIN\.\.MAX"):
        kiln.compile(mixes, tmp_path / "m.so", dynamic_dims={"seq": (1, 8)})
    onnx.save(mixes, tmp_path / "mixes.onnx")
    proc = subprocess.run([KILN_COMPILE, tmp_path / "mixes.onnx", "-o",
                           tmp_path / "mixes.so", "--report",
                           "--dynamic-dims", "batch=1..6,seq=1..8"],
                          capture_output=True, text=True, check=True)
    assert ("batch: read at run time (not split: the model is kept whole "
            "(no batch above 1 leads every input and output))") in proc.stderr
    loaded = kiln.load(str(tmp_path / "mixes.so"))
    assert loaded.symbols == [kiln.SymbolInfo("batch", 1, 6),
                              kiln.SymbolInfo("seq", 1, 8)]
    for batch, seq in [(1, 1), (2, 5), (6, 8)]:
        x = rng.standard_normal((batch, seq, 4)).astype(np.float32)
        np.testing.assert_array_equal(loaded.run({"x": x})["y"],
                                      x.transpose(1, 0, 2))


def encoder_any_sequence(max_seq=64, layers=2):
    """tools/models/transformer_encoder.py's BERT-style encoder as exporters
    write one for any sequence length (any_sequence_length: reshapes that
    copy the sequence, position embeddings gathered by `position_ids`)."""
    return transformer_encoder.any_sequence_length(
        transformer_encoder.build(seq=max_seq, layers=layers))


def test_encoder_any_sequence_matches_onnxruntime(tmp_path):
    """Two layers of a BERT-style encoder, compiled once for 1..64 tokens."""
    model = encoder_any_sequence()
    compiled = kiln.compile(model, tmp_path / "bert.so",
                            dynamic_dims={"seq": (1, 64)})
    assert kiln.load(compiled).inputs[0].shape == (1, None)
    check_sizes(model, compiled, lambda seq: {
        "input_ids": rng.integers(0, 1000, (1, seq)).astype(np.int64),
        "position_ids": np.arange(seq, dtype=np.int64)[None]},
        rtol=1e-3, atol=1e-4)


def test_encoder_any_batch_and_sequence(tmp_path):
    """The batch beside the sequence: the entry runs once per sample and
    reads the sequence's size."""
    model = encoder_any_sequence(layers=1)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].Clear()
    dims[0].dim_param = "batch"
    out = model.graph.output[0].type.tensor_type.shape.dim
    out[0].Clear()
    out[0].dim_param = "batch"
    compiled = kiln.compile(model, tmp_path / "bert.so",
                            dynamic_dims={"batch": (1, 8), "seq": (1, 64)})
    loaded = kiln.load(compiled)
    assert loaded.symbols == [kiln.SymbolInfo("batch", 1, 8),
                              kiln.SymbolInfo("seq", 1, 64)]
    assert loaded.inputs[0].dims == ("batch", "seq")
    for batch, seq in [(1, 1), (2, 7), (3, 33), (8, 64), (5, 16)]:
        feeds = {"input_ids": rng.integers(0, 1000, (batch, seq)).astype(np.int64),
                 "position_ids": np.arange(seq, dtype=np.int64)[None]}
        got = loaded.run(feeds)["last_hidden_state"]
        want = run_onnxruntime(model, feeds)["last_hidden_state"]
        assert got.shape == (batch, seq, 128)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4,
                                   err_msg=f"batch {batch}, seq {seq}")


def feed_forward_any_sequence(hidden=256, inner=1024):
    """A transformer's feed-forward block over [1, seq, hidden]: its two
    weights (1 MB each) are beyond a core's L2 share, so the sequence's rows
    run inside loops over the weights' panels (kiln-cpu-tile-symbolic-rows)."""
    w1 = numpy_helper.from_array(
        (rng.standard_normal((hidden, inner)) * 0.05).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(inner).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(
        (rng.standard_normal((inner, hidden)) * 0.05).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), "b2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"], name="up"),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["m2"], name="down"),
             helper.make_node("Add", ["m2", "b2"], ["a2"]),
             helper.make_node("Add", ["a2", "x"], ["y"])]
    return small_model(nodes, [("x", [1, "seq", hidden])], [("y", [1, "seq", hidden])],
                       [w1, b1, w2, b2])


@pytest.mark.parametrize("openmp", [True, False])
def test_weight_panels_any_sequence(tmp_path, openmp):
    """Products of weights beyond the L2 share: the rows in blocks of 8
    inside loops over the weights' panels (each panel read once for all the
    rows), the rows after the last block as the block of 8 that ends at the
    last row, fewer than 8 rows against the whole weight in a block of 4
    ending at the last row, then single rows. Every size from one row to
    past several blocks, on one and two threads; without OpenMP too (a
    function of run-time sizes failed to translate there before)."""
    model = feed_forward_any_sequence()
    compiled = kiln.compile(model, tmp_path / "ffn.so", dynamic_dims={"seq": (1, 300)},
                            openmp=openmp)
    for threads in (1, 2):
        loaded = kiln.load(compiled, num_threads=threads)
        for seq in [1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 63, 64, 65, 100, 129, 300]:
            feeds = {"x": rng.standard_normal((1, seq, 256)).astype(np.float32)}
            got = loaded.run(feeds)["y"]
            want = run_onnxruntime(model, feeds)["y"]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{seq} rows, {threads} threads")


def test_exported_encoder_any_batch_and_sequence(tmp_path):
    """An encoder as torch.onnx exports one with dynamic axes: its sizes
    are read with Shape and computed with Gather, Concat, Div..., positions
    come from Range(0, seq), token types from a buffer sliced to seq and
    expanded. The importer follows the arithmetic to static shapes where
    the sizes are the symbols (and one model serves every size)."""
    model = exported_encoder.build(layers=2, hidden=32, heads=4, vocab=100,
                                   positions=64)
    onnx.save(model, tmp_path / "exported.onnx")
    imported = subprocess.run(
        [KILN_COMPILE, tmp_path / "exported.onnx", "-o", "-", "--emit=graph",
         "--dynamic-dims", "batch=1..4,seq=1..64"],
        capture_output=True, text=True, check=True).stdout
    # Nothing is left to read at run time: each reshape copies the sizes.
    assert "graph.shape" not in imported
    assert "graph.prefix" in imported
    # Static blocks of rows, of attention's scores by rows and columns, the
    # epilogues in the blocks: still nothing allocated by a run.
    for dims in ("batch=1,seq=1..64", "batch=1..4,seq=1..64"):
        llvm = subprocess.run(
            [KILN_COMPILE, tmp_path / "exported.onnx", "-o", "-", "--emit=llvm",
             "--dynamic-dims", dims],
            capture_output=True, text=True, check=True).stdout
        assert "@malloc" not in llvm, dims
    one = kiln.load(kiln.compile(model, tmp_path / "one.so",
                                 dynamic_dims={"batch": 1, "seq": (1, 64)}))
    both = kiln.load(kiln.compile(model, tmp_path / "both.so",
                                  dynamic_dims={"batch": (1, 4), "seq": (1, 64)}))
    assert both.inputs[1].dims == ("batch", "seq")
    sizes = [(1, s) for s in SIZES] + [(2, 7), (3, 33), (4, 64), (4, 1)]
    for batch, seq in sizes:
        feeds = exported_encoder.feeds(model, seed=seq, batch=batch, seq=seq)
        want = run_onnxruntime(model, feeds)["last_hidden_state"]
        for loaded in ([one, both] if batch == 1 else [both]):
            got = loaded.run(feeds)["last_hidden_state"]
            assert got.shape == (batch, seq, 32)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"batch {batch}, seq {seq}")


def compile_once_per_sample(model_path, out, dims):
    """kiln-compile --report with --dynamic-dims `dims`: the symbolic batch
    must run once per sample (not be read at run time)."""
    report = subprocess.run(
        [KILN_COMPILE, model_path, "-o", out, "--report", "--dynamic-dims", dims],
        capture_output=True, text=True, check=True).stderr
    assert "batch: symbolic 'batch', run once per sample" in report


def test_multihead_attention_any_batch_and_sequence(tmp_path):
    """The attention of torch.nn.TransformerEncoderLayer as torch.onnx
    exports it with dynamic axes: the sequence moved first and the batch
    merged with the heads ([seq, batch * heads, d]), the rows [seq * batch,
    hidden] for a Gemm, the mask expanded to the heads. The batch is still
    run once per sample, the split following it through the transposes and
    reshapes, and the rows are a multiple of `seq` in between."""
    model = exported_encoder.build(layers=2, hidden=32, heads=4, vocab=100,
                                   positions=64, mha=True)
    onnx.save(model, tmp_path / "mha.onnx")
    compile_once_per_sample(tmp_path / "mha.onnx", tmp_path / "r.so",
                            "batch=1..8,seq=1..64")
    both = kiln.load(kiln.compile(model, tmp_path / "both.so",
                                  dynamic_dims={"batch": (1, 8), "seq": (1, 64)}))
    batches = kiln.load(kiln.compile(model, tmp_path / "batches.so",
                                     dynamic_dims={"batch": (1, 8), "seq": 7}))
    sizes = [(1, s) for s in SIZES] + [(2, 3), (3, 33), (7, 16), (8, 64), (8, 1)]
    for batch, seq in sizes + [(b, 7) for b in (1, 2, 3, 8)]:
        feeds = exported_encoder.feeds(model, seed=seq, batch=batch, seq=seq)
        want = run_onnxruntime(model, feeds)["last_hidden_state"]
        for loaded in [both] + ([batches] if seq == 7 else []):
            got = loaded.run(feeds)["last_hidden_state"]
            assert got.shape == (batch, seq, 32)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"batch {batch}, seq {seq}")


def test_recurrence_and_resize_any_batch(tmp_path):
    """A symbolic batch through the ops that exporters wrap around it: an
    LSTM behind a batch_first Transpose (the batch second, [seq, batch,
    input]) with zero initial states made for the batch (ConstantOfShape
    of [1, batch, hidden]), a mean over the sequence; and a convolution
    with explicit padding, a Resize and a global mean. Each sample runs
    alone."""
    n = helper.make_node
    hidden, steps, features = 6, 5, 4
    w = rng.standard_normal((1, 4 * hidden, features)).astype(np.float32) * 0.5
    r = rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32) * 0.5
    k = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(v, name) for name, v in [
        ("w", w), ("r", r), ("k", k), ("zero", np.array(0, np.int64)),
        ("one", np.array([1], np.int64)), ("h", np.array([hidden], np.int64)),
        ("axis0", np.array([0], np.int64)), ("axis1", np.array([1], np.int64)),
        ("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
        ("scales", np.array([1, 1, 2, 2], np.float32))]]
    nodes = [n("Shape", ["x"], ["sx"]), n("Gather", ["sx", "zero"], ["b"], axis=0),
             n("Unsqueeze", ["b", "axis0"], ["b1"]),
             n("Concat", ["one", "b1", "h"], ["state_shape"], axis=0),
             n("ConstantOfShape", ["state_shape"], ["h0"]),
             n("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             n("LSTM", ["xt", "w", "r", "", "", "h0", "h0"], ["y4", "yh"],
               hidden_size=hidden),
             n("Squeeze", ["y4", "axis1"], ["y3"]),
             n("Transpose", ["y3"], ["y"], perm=[1, 0, 2]),
             n("ReduceMean", ["y"], ["pooled"], axes=[1], keepdims=0),
             n("Pad", ["img", "pads"], ["padded"]),
             n("Conv", ["padded", "k"], ["c"]),
             n("Resize", ["c", "", "scales"], ["up"], mode="linear"),
             n("ReduceMean", ["up"], ["g"], axes=[2, 3], keepdims=1)]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", steps, features]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, ["batch", 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", steps, hidden]),
         helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, ["batch", 3, 1, 1])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.save(model, tmp_path / "m.onnx")
    compile_once_per_sample(tmp_path / "m.onnx", tmp_path / "m.so", "batch=1..64")
    loaded = kiln.load(str(tmp_path / "m.so"))
    for batch in SIZES:
        feeds = {"x": rng.standard_normal((batch, steps, features)).astype(np.float32),
                 "img": rng.standard_normal((batch, 2, 6, 6)).astype(np.float32)}
        want = run_onnxruntime(model, feeds)
        got = loaded.run(feeds)
        for name in ("y", "pooled", "g"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}, batch {batch}")


def test_sizes_read_at_run_time(tmp_path):
    """A Shape whose values are data (an output, a product of two sizes)
    is read at run time."""
    n = helper.make_node
    nodes = [n("Shape", ["x"], ["s"]),
             n("Gather", ["s", "one"], ["len"], axis=0),
             n("Mul", ["len", "len"], ["square"]),
             n("Range", ["zero", "len", "step"], ["r"]),
             n("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             n("Add", ["x", "rf"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "seq"])],
        [helper.make_tensor_value_info("s", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("square", TensorProto.INT64, []),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "seq"])],
        [numpy_helper.from_array(np.array(v, np.int64), name)
         for name, v in [("one", 1), ("zero", 0), ("step", 1)]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    loaded = kiln.load(kiln.compile(model, tmp_path / "s.so",
                                    dynamic_dims={"seq": (1, 40)}))
    for seq in (1, 5, 40):
        x = rng.standard_normal((2, seq)).astype(np.float32)
        got = loaded.run({"x": x})
        np.testing.assert_array_equal(got["s"], [2, seq])
        assert got["square"] == seq * seq
        np.testing.assert_allclose(got["y"], x + np.arange(seq, dtype=np.float32))


def test_shape_arithmetic_errors(tmp_path):
    """Sizes that Kiln cannot express at import get an error at the node
    that says why."""
    def compile_error(nodes, inputs, inits, dims={"seq": (1, 16)}):
        graph = helper.make_graph(
            nodes, "g",
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
             for name, shape in inputs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.asarray(v), name) for name, v in inits])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  ir_version=8)
        with pytest.raises(kiln.CompileError) as error:
            kiln.compile(model, tmp_path / "e.so", dynamic_dims=dims)
        return str(error.value)

    n = helper.make_node
    sizes = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "one"], ["len"], axis=0),
             n("Unsqueeze", ["len", "zero1"], ["len1"])]
    ints = [("one", np.int64(1)), ("zero1", np.array([0], np.int64))]
    # A range that does not start at 0.
    message = compile_error(
        sizes + [n("Range", ["one", "len", "one"], ["y"])],
        [("x", [1, "seq"])], ints)
    assert "(Range): a range up to the symbolic size 'seq' must start at 0" in message
    # A table shorter than the symbol's bound.
    message = compile_error(
        sizes + [n("Slice", ["table", "zero1", "len1", "one1"], ["y"])],
        [("x", [1, "seq"])],
        ints + [("table", np.zeros((1, 8), np.float32)),
                ("one1", np.array([1], np.int64))])
    assert ("axis 1 of the data [1,8] ends at the symbolic size 'seq', which "
            "may reach 16 (--dynamic-dims seq=MIN..MAX)") in message
    # A reshape that merges the symbol with a static size.
    message = compile_error(
        sizes + [n("Concat", ["len1", "m1"], ["shape"], axis=0),
                 n("Reshape", ["x", "shape"], ["y"])],
        [("x", [2, "seq"])], ints + [("m1", np.array([-1], np.int64))])
    assert "has more than one size that is not the input's at the same index" in message
    message = compile_error(
        sizes + [n("Concat", ["len1", "two"], ["shape"], axis=0),
                 n("Reshape", ["x", "shape"], ["y"])],
        [("x", [4, "seq"])], ints + [("two", np.array([2], np.int64))])
    assert "merges or splits the symbolic dimension 'seq' with other sizes" in message
    # An expand of a static size to the symbol.
    message = compile_error(
        sizes + [n("Concat", ["len1", "len1"], ["shape"], axis=0),
                 n("Expand", ["x", "shape"], ["y"])],
        [("x", [3, "seq"])], ints)
    assert ("broadcasts dimension 0 of the input [3,?] to the symbolic size "
            "'seq'") in message
