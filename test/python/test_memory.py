"""Static memory planning: every intermediate buffer lives in one workspace
whose size the compiler computes from the buffers' live ranges and reports
with `kiln-compile --report`; the model allocates nothing when it runs."""

import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import BUILD, KILN_COMPILE, KILN_RUN, compile_model, run_compiled

CHANNELS, SIZE = 16, 32
ACTIVATION_BYTES = CHANNELS * SIZE * SIZE * 4  # one [1, 16, 32, 32] f32 tensor


def conv_chain(depth, seed=0, channels=CHANNELS, kernel=3):
    """`depth` convolutions (3x3, padded, or 1x1), each followed by Relu, on
    [1, channels, 32, 32]."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    value = "x"
    for i in range(depth):
        w = numpy_helper.from_array(
            rng.normal(0, 0.1, (channels, channels, kernel, kernel)).astype(np.float32),
            f"w{i}")
        inits.append(w)
        nodes.append(helper.make_node("Conv", [value, w.name], [f"c{i}"],
                                      pads=[kernel // 2] * 4, name=f"conv{i}"))
        out = "y" if i == depth - 1 else f"r{i}"
        nodes.append(helper.make_node("Relu", [f"c{i}"], [out], name=f"relu{i}"))
        value = out
    shape = [1, channels, SIZE, SIZE]
    graph = helper.make_graph(
        nodes, f"chain{depth}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def workspace_bytes(model, workdir):
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "model.onnx"
    onnx.save(model, str(path))
    proc = subprocess.run([str(KILN_COMPILE), str(path), "-o", str(workdir / "r.so"),
                           "--report"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"^workspace: (\d+) bytes", proc.stderr, re.M)
    assert match, f"no workspace line in the report:\n{proc.stderr}"
    return int(match.group(1))


def test_workspace_is_reused_across_layers(tmp_path):
    """Buffers whose live ranges do not overlap share bytes, so the peak does
    not grow with the depth of a chain of layers: 8 convolutions need no more
    workspace than 2, while each one has its own intermediates."""
    two = workspace_bytes(conv_chain(2), tmp_path / "two")
    eight = workspace_bytes(conv_chain(8), tmp_path / "eight")
    # At least the activation between two layers lives in the workspace...
    assert two >= ACTIVATION_BYTES, two
    # ...and a deeper chain reuses the same bytes.
    assert eight == two, (two, eight)


@pytest.mark.parametrize("channels,kernel", [(CHANNELS, 3), (2 * CHANNELS, 1)])
def test_planned_model_matches_and_imports_no_allocator(tmp_path, channels, kernel):
    """The workspace comes from the runtime, once per model: the compiled
    code calls no allocator, and a deep chain still computes the right
    numbers with its buffers overlapping in time. With 32 channels each
    convolution tile holds two output channel blocks; the Relu of a 1x1
    one once went through a tile-sized temporary, allocated per tile."""
    model = conv_chain(8, channels=channels, kernel=kernel)
    so = compile_model(model, tmp_path)
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(so)],
                               capture_output=True, text=True, check=True).stdout
    imported = {line.split()[-1].split("@")[0] for line in undefined.splitlines()
                if line.strip()}
    allocators = imported & {"malloc", "calloc", "realloc", "free", "aligned_alloc",
                             "posix_memalign", "memalign", "_Znwm", "_Znam"}
    assert not allocators, f"the model calls {sorted(allocators)}"

    x = np.random.default_rng(1).normal(size=(1, channels, SIZE, SIZE)).astype(np.float32)
    got = run_compiled(so, {"x": x}, tmp_path)["y"]
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    want = session.run(["y"], {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("batch", [1, 3])
def test_concat_inputs_are_written_in_place(tmp_path, batch):
    """A Concat of two convolutions read by a third (SqueezeNet's fire
    module) copies nothing: each convolution writes its part of the
    concatenated tensor (kiln-codegen-duplicate-destinations points their empty
    tensors at it before bufferization), so no kernel of the compiled model
    belongs to the Concat node alone. At batch 3, run whole, each part is a
    strided slice of the result."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(
        rng.normal(0, 0.1, (32, CHANNELS, k, k)).astype(np.float32), f"w{k}")
        for k in (1, 3)]
    inits.append(numpy_helper.from_array(
        rng.normal(0, 0.1, (CHANNELS, 64, 1, 1)).astype(np.float32), "ws"))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="expand1x1"),
             helper.make_node("Conv", ["x", "w3"], ["b"], pads=[1, 1, 1, 1],
                              name="expand3x3"),
             helper.make_node("Relu", ["a"], ["ra"], name="relu1x1"),
             helper.make_node("Relu", ["b"], ["rb"], name="relu3x3"),
             helper.make_node("Concat", ["ra", "rb"], ["cat"], axis=1, name="concat"),
             helper.make_node("Conv", ["cat", "ws"], ["y"], name="squeeze")]
    graph = helper.make_graph(
        nodes, "fire",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, CHANNELS, SIZE, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, CHANNELS, SIZE, SIZE])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    so = compile_model(model, tmp_path, ["--batch-split=off"])
    x = rng.normal(size=(batch, CHANNELS, SIZE, SIZE)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    profile = subprocess.run([str(KILN_RUN), str(so), "--input", f"x={tmp_path / 'x.npy'}",
                              "--output-dir", str(tmp_path), "--repeat", "2", "--profile"],
                             capture_output=True, text=True, timeout=300, check=True).stdout
    kernels = [line for line in profile.splitlines() if "kiln_model_main_kernel" in line]
    assert kernels, profile
    assert not [k for k in kernels if k.rstrip().endswith("(concat (Concat))")], profile
    got = run_compiled(so, {"x": x}, tmp_path)["y"]
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(["y"], {"x": x})[0], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_contraction_result_is_written_into_the_output(tmp_path, threads):
    """A MatMul that is the model's output writes it directly: its result,
    computed in panels of the packed weights (a reshape of the output
    buffer), once went through a workspace buffer and a copy of the whole
    output. Now the workspace is empty, and the numbers are right."""
    rng = np.random.default_rng(4)
    w = numpy_helper.from_array(rng.normal(0, 0.1, (128, 256)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="logits")], "head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 256])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    assert workspace_bytes(model, tmp_path / "report") == 0
    so = compile_model(model, tmp_path)
    x = rng.normal(size=(8, 128)).astype(np.float32)
    got = run_compiled(so, {"x": x}, tmp_path, threads=threads)["y"]
    np.testing.assert_allclose(got, x @ numpy_helper.to_array(w), rtol=1e-4, atol=1e-5)
