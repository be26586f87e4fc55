"""The nvptx target without a GPU: models compiled with --gpu-emulation run
through the whole GPU path of the runtime (image choice, constants, device
memory, launches, copies) on the CUDA driver emulator, and match
onnxruntime; the driver errors each give their one-line message.

Needs the CUDA toolkit's ptxas ($CUDA_HOME, $CUDA_PATH or /usr/local/cuda);
without it every test here is reported as skipped.
"""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import (BUILD, KILN_RUN, assert_matches_onnxruntime,
                          compile_model, run_compiled, run_onnxruntime)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))

import kiln_cnn  # noqa: E402
import light_models  # noqa: E402
import mobilenetv2  # noqa: E402
import recurrent  # noqa: E402
import transformer_encoder  # noqa: E402

EMULATOR = BUILD / "lib" / "libkiln_cuda_emulator.so"
CUDA_ROOTS = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
              "/usr/local/cuda"]
HAVE_TOOLKIT = any(r and os.access(os.path.join(r, "bin", "ptxas"), os.X_OK)
                   for r in CUDA_ROOTS)
STUB = next((Path(r) / "lib64" / "stubs" / "libcuda.so" for r in CUDA_ROOTS
             if r and (Path(r) / "lib64" / "stubs" / "libcuda.so").exists()), None)

pytestmark = pytest.mark.skipif(not HAVE_TOOLKIT,
                                reason="no CUDA toolkit (ptxas) on this machine")

GPU = ("--target=nvptx", "--gpu-emulation")


@pytest.fixture
def emulator(monkeypatch):
    """Selects the CUDA driver emulator for the kiln-run processes of a test."""
    assert EMULATOR.exists(), f"{EMULATOR} was not built"
    monkeypatch.setenv("KILN_CUDA_DRIVER", str(EMULATOR))
    for name in ("KILN_EMULATOR_ORDER", "KILN_EMULATOR_ARCH", "KILN_EMULATOR_FAIL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def small_model():
    """Exp, MatMul with constant weights, Relu; a padded Conv and a Softmax
    (a reduction): parallel and serial kernels, constants, two outputs."""
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "W")
    filters = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "F")
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp"),
             helper.make_node("MatMul", ["e", "W"], ["m"], name="mm"),
             helper.make_node("Relu", ["m"], ["y"], name="relu"),
             helper.make_node("Conv", ["img", "F"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Softmax", ["c"], ["z"], name="sm", axis=1)]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 6, 6])],
        [weights, filters])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def small_feeds():
    rng = np.random.default_rng(1)
    return {"x": rng.standard_normal((3, 8)).astype(np.float32),
            "img": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}


def kiln_run_error(so, feeds, workdir):
    """kiln-run's one error line for a run that must fail."""
    workdir = Path(workdir)
    args = [str(KILN_RUN), str(so), "--output-dir", str(workdir / "out")]
    for i, (name, value) in enumerate(feeds.items()):
        np.save(workdir / f"in{i}.npy", value)
        args += ["--input", f"{name}={workdir / f'in{i}.npy'}"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kiln-run: error: "), proc.stderr
    return lines[0]


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_small_model_in_every_thread_order(order, emulator, tmp_path):
    emulator.setenv("KILN_EMULATOR_ORDER", order)
    assert_matches_onnxruntime(small_model(), small_feeds(), tmp_path,
                               rtol=1e-5, atol=1e-6, compile_args=GPU)


def emulated_and_ptx(model, shape, seed, tmp_path, tolerance, flags=()):
    """Checks `model` (one float input "x" of `shape`) on the emulated GPU
    against onnxruntime, compiled with `flags` too; returns its sm_80 PTX."""
    feeds = {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=tolerance, atol=tolerance,
                               compile_args=(*GPU, *flags))
    compile_model(model, tmp_path / "ptx",
                  ["--target=nvptx", "--gpu-arch=sm_80", "--emit=ptx", *flags])
    return (tmp_path / "ptx" / "model.so").read_text()


def reduction_model(op, shape, axes=None, **attrs):
    """One reduction node over a float input of `shape`, over `axes` (an
    input of ReduceSum, an attribute of the other Reduce ops at opset 17)."""
    inputs, initializers = ["x"], []
    if axes is not None and op == "ReduceSum":
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    node = helper.make_node(op, inputs, ["y"], name="r", **attrs)
    graph = helper.make_graph(
        [node], "reduction", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# (op, input shape, attributes, whether its kernel reduces with warp
# shuffles): rows of 31 (a thread each), 32 to 255 (a warp each, rows that
# do and do not fill a block's eight warps), 256 and more (a block each,
# each thread's share a whole or a partial number of strides), a reduction
# across the rows of NCHW (a thread each), Softmax and LayerNormalization.
REDUCTIONS = {
    "sum_31": ("ReduceSum", [5, 31], {"axes": [1], "keepdims": 0}, False),
    "sum_32": ("ReduceSum", [16, 32], {"axes": [1], "keepdims": 0}, True),
    "pool_7x7": ("GlobalAveragePool", [2, 20, 7, 7], {}, True),
    "max_100": ("ReduceMax", [3, 7, 100], {"axes": [2], "keepdims": 0}, True),
    "sum_255": ("ReduceSum", [9, 255], {"axes": [-1], "keepdims": 1}, True),
    "sum_256": ("ReduceSum", [3, 256], {"axes": [1], "keepdims": 0}, True),
    "mean_1000": ("ReduceMean", [2, 1000], {"axes": [1], "keepdims": 0}, True),
    "min_4100": ("ReduceMin", [4100], {"axes": [0], "keepdims": 0}, True),
    "across_rows": ("ReduceSum", [1, 64, 5, 5], {"axes": [1], "keepdims": 0}, False),
    "softmax_77": ("Softmax", [2, 3, 77], {"axis": -1}, True),
    "softmax_1000": ("Softmax", [1, 1000], {"axis": -1}, True),
    "layernorm_200": ("LayerNormalization", [6, 200], {"axis": -1}, True),
}


@pytest.mark.parametrize("order", ["reverse", "shuffle"])
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_by_warp_and_block(name, order, emulator, tmp_path):
    op, shape, attrs, shuffles = REDUCTIONS[name]
    emulator.setenv("KILN_EMULATOR_ORDER", order)
    model = reduction_model(op, shape, **attrs)
    if op == "LayerNormalization":
        width = shape[-1]
        model.graph.initializer.extend([
            numpy_helper.from_array(np.linspace(0.5, 1.5, width, dtype=np.float32), "scale"),
            numpy_helper.from_array(np.linspace(-1, 1, width, dtype=np.float32), "bias")])
        model.graph.node[0].input.extend(["scale", "bias"])
    ptx = emulated_and_ptx(model, shape, len(name), tmp_path, tolerance=1e-5)
    assert ("shfl.sync.bfly" in ptx) == shuffles


def conv_model(shape, filters, kernel, pad_value=None, keep_padded=False, **attrs):
    """Conv (with a bias) and Relu over a float input of `shape`; with
    `pad_value`, an explicit Pad by one pixel with that value before it, whose
    result is also an output with `keep_padded`."""
    rng = np.random.default_rng(filters * kernel)
    channels = shape[1] // attrs.get("group", 1)
    weights = numpy_helper.from_array(
        rng.standard_normal((filters, channels, kernel, kernel)).astype(np.float32), "W")
    bias = numpy_helper.from_array(rng.standard_normal(filters).astype(np.float32), "B")
    nodes, inputs, initializers = [], "x", [weights, bias]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if pad_value is not None:
        initializers += [numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
                         numpy_helper.from_array(np.array(pad_value, np.float32), "value")]
        nodes.append(helper.make_node("Pad", ["x", "pads", "value"], ["padded"], mode="constant"))
        inputs = "padded"
        if keep_padded:
            outputs.append(helper.make_tensor_value_info("padded", TensorProto.FLOAT, None))
    nodes += [helper.make_node("Conv", [inputs, "W", "B"], ["c"], **attrs),
              helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, shape)], outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# (input shape, filters, kernel size, attributes): convolutions through
# im2col and the tiled product, padded (by the Conv, or by a Pad with its
# own value, whose result may also be an output), strided, asymmetric,
# dilated, 1x1 strided and grouped.
CONVOLUTIONS = {
    "3x3_same": ([1, 32, 28, 28], 64, 3, {"pads": [1, 1, 1, 1]}),
    "3x3_stride2_asymmetric": ([2, 16, 29, 29], 32, 3,
                               {"pads": [0, 1, 1, 0], "strides": [2, 2]}),
    "7x7_stride2": ([1, 3, 64, 64], 64, 7, {"pads": [3, 3, 3, 3], "strides": [2, 2]}),
    "3x3_dilated": ([1, 16, 30, 30], 32, 3, {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    "1x1_stride2": ([1, 64, 28, 28], 128, 1, {"strides": [2, 2]}),
    "grouped": ([1, 64, 20, 20], 64, 3, {"pads": [1, 1, 1, 1], "group": 2}),
    "pad_op_half": ([1, 32, 24, 24], 64, 3, {"pad_value": 0.5}),
    "pad_kept": ([1, 32, 24, 24], 64, 3, {"pad_value": -1.0, "keep_padded": True}),
}


@pytest.mark.parametrize("implicit", [False, True], ids=["im2col", "implicit_gemm"])
@pytest.mark.parametrize("name", list(CONVOLUTIONS))
def test_convolutions_on_emulated_gpu(name, implicit, emulator, tmp_path):
    shape, filters, kernel, attrs = CONVOLUTIONS[name]
    emulator.setenv("KILN_EMULATOR_ORDER", "shuffle")
    model = conv_model(shape, filters, kernel, **attrs)
    flags = ["--gpu-implicit-gemm"] if implicit else []
    ptx = emulated_and_ptx(model, shape, len(name), tmp_path, tolerance=1e-4,
                           flags=flags)
    # The tiled product reads its shared tiles four values at a time.
    assert "ld.shared.v4" in ptx
    if name == "3x3_same" and not implicit:
        # 288 reduction steps and 784 columns: runs of four from global
        # memory, and four outputs a store.
        assert "ld.global.v4" in ptx and "st.global.v4" in ptx


def test_output_sizes_the_data_decides(emulator, tmp_path):
    """NonZero's and Compress's output sizes come back from the GPU: the
    kernels write them to device memory, the runtime copies them back with
    the outputs, and each output has the size the data gave it."""
    emulator.setenv("KILN_EMULATOR_ORDER", "shuffle")
    condition = numpy_helper.from_array(np.array([1, 0, 1, 1, 0, 1], bool), "keep")
    graph = helper.make_graph(
        [helper.make_node("Greater", ["x", "zero"], ["positive"]),
         helper.make_node("NonZero", ["positive"], ["where"]),
         helper.make_node("Compress", ["x", "keep"], ["kept"], axis=1),
         helper.make_node("Relu", ["kept"], ["y"])],
        "sizes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
        [helper.make_tensor_value_info("where", TensorProto.INT64, None),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [condition, numpy_helper.from_array(np.array(0, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((3, 6)).astype(np.float32)
        assert_matches_onnxruntime(model, {"x": x}, tmp_path / str(seed),
                                   rtol=0, atol=0, compile_args=GPU)


# Recurrences (a loop over steps, each with parallel loops) run as one
# block whose threads share each step's parallel loops between barriers.
RECURRENCES = {
    "lstm_tagger": lambda: recurrent.build(seq=12, hidden=96, emb=40, vocab=300),
    "gru_encoder_bidirectional": lambda: recurrent.build(gru=True, seq=10,
                                                        features=24, hidden=72),
}


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
@pytest.mark.parametrize("name", list(RECURRENCES))
def test_recurrences_by_one_block(name, order, emulator, tmp_path):
    emulator.setenv("KILN_EMULATOR_ORDER", order)
    model = RECURRENCES[name]()
    assert_matches_onnxruntime(model, recurrent.feeds(model), tmp_path, rtol=1e-4,
                               atol=1e-5, compile_args=GPU)
    onnx.save(model, str(tmp_path / "model.onnx"))
    proc = subprocess.run(
        [str(BUILD / "bin" / "kiln-compile"), str(tmp_path / "model.onnx"),
         "--target=nvptx", "--report", "-o", str(tmp_path / "m.so")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The steps run on a block: the only one-thread kernel left is the
    # check of the embedding's indices (their range, then the check).
    serial = [l for l in proc.stderr.splitlines()
              if l.startswith("gpu: serial kernel (one thread)")]
    assert all(l.endswith("(Gather))") for l in serial), proc.stderr
    gathers = sum(n.op_type == "Gather" for n in model.graph.node)
    assert len(serial) == gathers, proc.stderr
    info = subprocess.run([str(KILN_RUN), "--info", str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=60).stdout
    steps = [l for l in info.splitlines() if ("LSTM" in l or "GRU" in l)
             and "grid [1,1,1], block [256,1,1]" in l]
    assert steps, info


# The end-to-end models of test_models.py that CI runs on the CPU: on the
# emulator ResNet-50 takes about 5 s and BERT-base about 30 s.
MODELS = {
    "kiln_cnn": (kiln_cnn.build, kiln_cnn.feeds),
    "transformer_encoder": (transformer_encoder.build, transformer_encoder.feeds),
    "light_squeezenet": (lambda: light_models.build("squeezenet"), light_models.feeds),
    "light_shufflenet": (lambda: light_models.build("shufflenet"), light_models.feeds),
    "mobilenetv2": (mobilenetv2.build, mobilenetv2.feeds),
    "light_resnet50": (lambda: light_models.build("resnet50"), light_models.feeds),
    "transformer_encoder_bert_base": (
        lambda: transformer_encoder.build(**transformer_encoder.BERT_BASE),
        transformer_encoder.feeds),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_onnxruntime_on_emulated_gpu(name, emulator, tmp_path):
    emulator.setenv("KILN_EMULATOR_ORDER", "shuffle")
    build, feeds = MODELS[name]
    model = build()
    assert_matches_onnxruntime(model, feeds(model), tmp_path, rtol=1e-3,
                               atol=1e-4, compile_args=GPU)


@pytest.mark.parametrize("name", list(MODELS))
def test_model_kernels_pass_ptxas_without_spills(name, tmp_path):
    """Every kernel assembles for Ampere and Hopper (sm_90a) within the
    budgets of docs/gpu.md: no spills, no stack; the tiled contractions at
    most 128 registers (two blocks of 256 threads per multiprocessor) and
    16 KiB of shared memory, the others at most 255 registers and none; and
    every model has tiled contractions."""
    build, _ = MODELS[name]
    onnx.save(build(), str(tmp_path / "model.onnx"))
    proc = subprocess.run(
        [str(BUILD / "bin" / "kiln-compile"), str(tmp_path / "model.onnx"),
         "--target=nvptx", "--gpu-arch=sm_80,sm_90a", "--report", "-o",
         str(tmp_path / "m.so")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = proc.stderr
    lines = [l for l in report.splitlines() if l.startswith("ptxas sm_")]
    kernels = [l for l in report.splitlines() if l.startswith("gpu: serial kernel")]
    for arch in ("sm_80", "sm_90a"):
        mine = [l for l in lines if l.startswith(f"ptxas {arch} ")]
        assert mine, report
        tiled = 0
        for line in mine:
            registers = int(line.split(": ")[1].split()[0])
            shared = int(line.split(", ")[-1].split()[0])
            assert ", 0 bytes spilled, 0 bytes stack, " in line, line
            if shared:
                tiled += 1
                assert registers <= 128 and shared <= 16384, line
            else:
                assert registers <= 255, line
        assert tiled, report
    assert "spill registers" not in report
    # The one-thread fallback is for serial stretches only, never a layer.
    assert len(kernels) <= 2, "\n".join(kernels)


def test_ptx_image_for_a_newer_gpu(emulator, tmp_path):
    # No cubin for sm_100: the driver compiles the sm_80 PTX.
    emulator.setenv("KILN_EMULATOR_ARCH", "sm_100")
    assert_matches_onnxruntime(small_model(), small_feeds(), tmp_path,
                               rtol=1e-5, atol=1e-6, compile_args=GPU)


def test_no_image_for_an_older_gpu(emulator, tmp_path):
    emulator.setenv("KILN_EMULATOR_ARCH", "sm_75")
    so = compile_model(small_model(), tmp_path, GPU)
    line = kiln_run_error(so, small_feeds(), tmp_path)
    assert "has no image for this GPU (Kiln CUDA emulator, sm_75): it holds " \
           "sm_80 cubin, sm_90 cubin, sm_80 PTX; recompile with --gpu-arch=sm_75" in line


def test_emulator_needs_the_emulation_image(emulator, tmp_path):
    so = compile_model(small_model(), tmp_path, ("--target=nvptx",))
    line = kiln_run_error(so, small_feeds(), tmp_path)
    assert "has no emulation image" in line and "--gpu-emulation" in line


def test_missing_driver(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CUDA_DRIVER", str(tmp_path / "libcuda.so.1"))
    so = compile_model(small_model(), tmp_path, GPU)
    line = kiln_run_error(so, small_feeds(), tmp_path)
    assert "no NVIDIA driver: cannot load" in line


@pytest.mark.skipif(STUB is None, reason="the CUDA toolkit has no stub libcuda")
def test_stub_driver(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_CUDA_DRIVER", str(STUB))
    so = compile_model(small_model(), tmp_path, GPU)
    line = kiln_run_error(so, small_feeds(), tmp_path)
    assert "is the CUDA toolkit's stub driver, which cannot run anything" in line


@pytest.mark.parametrize("failure, message", [
    ("alloc", "cannot allocate"),
    ("load", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (the driver is older than the PTX"),
    ("launch", "launching kernel 'kiln_model_main_kernel0' failed: "
               "CUDA_ERROR_LAUNCH_FAILED; the handle is now unusable"),
    ("sync", "running the model on the GPU failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
])
def test_driver_failures(failure, message, emulator, tmp_path):
    emulator.setenv("KILN_EMULATOR_FAIL", failure)
    so = compile_model(small_model(), tmp_path, GPU)
    assert message in kiln_run_error(so, small_feeds(), tmp_path)


def test_python_api_and_device_memory(emulator, tmp_path):
    """kiln.compile/kiln.load on the emulated GPU; the constants go up once
    per handle, a run allocates nothing, and a failed launch breaks the
    handle for good."""
    import kiln
    so = kiln.compile(small_model(), tmp_path / "m.so", target="nvptx",
                      gpu_emulation=True, gpu_arch="sm_90")
    os.environ["KILN_CUDA_DRIVER"] = str(EMULATOR)
    emulator_lib = ctypes.CDLL(str(EMULATOR))
    stats = (ctypes.c_int64 * 4)()

    def counters():
        emulator_lib.kiln_emulator_stats(*(ctypes.byref(stats, 8 * i) for i in range(4)))
        return list(stats)  # allocations, frees, launches, uploads

    before = counters()
    model = kiln.load(so)
    assert model.device == "cuda"
    opened = counters()
    assert opened[3] - before[3] == 1  # the constants, once
    feeds = small_feeds()
    want = run_onnxruntime(small_model(), feeds)
    for _ in range(3):
        got = model.run(feeds)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)
    after = counters()
    assert after[0] == opened[0] and after[3] == opened[3]  # no allocation
    assert after[2] > opened[2]

    os.environ["KILN_EMULATOR_FAIL"] = "launch"
    try:
        with pytest.raises(kiln.KilnError, match="CUDA_ERROR_LAUNCH_FAILED"):
            model.run(feeds)
    finally:
        del os.environ["KILN_EMULATOR_FAIL"]
    with pytest.raises(kiln.KilnError, match="broken by an earlier failed run"):
        model.run(feeds)
    model.close()
    assert counters()[1] - opened[1] >= 4  # constants, workspace, I/O freed


def test_cpu_model_refuses_the_gpu(tmp_path):
    import kiln
    so = kiln.compile(small_model(), tmp_path / "cpu.so")
    assert kiln.load(so).device == "cpu"


class Tensor(ctypes.Structure):
    """kiln_tensor of include/kiln/runtime.h."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p), ("byte_size", ctypes.c_size_t),
                ("device", ctypes.c_int32)]


def test_device_pointers_through_the_c_api(emulator, tmp_path):
    """kiln_model_run with tensors already in the GPU's memory
    (KILN_DEVICE_CUDA): used in place, and checked with the driver first."""
    so = compile_model(small_model(), tmp_path, GPU)
    runtime = ctypes.CDLL(str(BUILD / "lib" / "libkiln_runtime.so.1"))
    driver = ctypes.CDLL(str(EMULATOR))
    runtime.kiln_model_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p)]
    runtime.kiln_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor),
                                       ctypes.c_size_t, ctypes.POINTER(Tensor),
                                       ctypes.c_size_t]
    runtime.kiln_model_run.restype = ctypes.c_void_p
    runtime.kiln_status_message.argtypes = [ctypes.c_void_p]
    runtime.kiln_status_message.restype = ctypes.c_char_p
    runtime.kiln_status_free.argtypes = [ctypes.c_void_p]
    runtime.kiln_model_release.argtypes = [ctypes.c_void_p]
    model = ctypes.c_void_p()
    status = runtime.kiln_model_open(str(so).encode(), None, ctypes.byref(model))
    assert not status, runtime.kiln_status_message(status)

    def device_copy(array, extra=0):
        pointer = ctypes.c_ulonglong()
        assert driver.cuMemAlloc_v2(ctypes.byref(pointer),
                                    ctypes.c_size_t(array.nbytes + extra)) == 0
        driver.cuMemcpyHtoD_v2(pointer, array.ctypes.data_as(ctypes.c_void_p),
                               ctypes.c_size_t(array.nbytes))
        return pointer.value

    def tensor(array, pointer, device):
        shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        t = Tensor(ctypes.sizeof(Tensor), 1, array.ndim, shape, pointer,
                   array.nbytes, device)
        t._keep = shape
        return t

    feeds = small_feeds()
    want = run_onnxruntime(small_model(), feeds)
    x, img = feeds["x"], np.ascontiguousarray(feeds["img"])
    y = np.zeros_like(want["y"])
    z_device = device_copy(np.zeros_like(want["z"]))
    inputs = (Tensor * 2)(tensor(x, device_copy(x), 1),
                          tensor(img, img.ctypes.data, 0))  # one on the host
    outputs = (Tensor * 2)(tensor(y, y.ctypes.data, 0),
                           tensor(want["z"], z_device, 1))

    def run():
        status = runtime.kiln_model_run(model, inputs, 2, outputs, 2)
        message = runtime.kiln_status_message(status).decode() if status else ""
        runtime.kiln_status_free(status)
        return message

    assert run() == ""
    z = np.zeros_like(want["z"])
    driver.cuMemcpyDtoHAsync_v2(z.ctypes.data_as(ctypes.c_void_p),
                                ctypes.c_ulonglong(z_device),
                                ctypes.c_size_t(z.nbytes), None)
    np.testing.assert_allclose(y, want["y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, want["z"], rtol=1e-5, atol=1e-6)

    # A host pointer that claims to be device memory, and a device buffer too
    # small for the tensor, are refused before anything runs.
    inputs[0].data = x.ctypes.data
    assert "is not memory of the model's GPU" in run()
    short = device_copy(x[:1])
    inputs[0].data = short
    assert "run past the end of their device allocation" in run()
    runtime.kiln_model_release(model)


def test_profile_times_every_gpu_kernel(emulator, tmp_path):
    """kiln-run --profile on a GPU model: the hooks around each launch
    synchronise the stream, so each kernel's time is its own."""
    import json
    so = compile_model(small_model(), tmp_path, GPU)
    args = [str(KILN_RUN), str(so), "--json", "--profile", "--repeat", "2",
            "--output-dir", str(tmp_path / "out")]
    for i, (name, value) in enumerate(small_feeds().items()):
        np.save(tmp_path / f"in{i}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'in{i}.npy'}"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)["profile"]
    info = subprocess.run([str(KILN_RUN), "--info", str(so)], capture_output=True,
                          text=True, timeout=60).stdout
    kernels = [line.split(":")[0].strip() for line in info.splitlines()
               if line.startswith("  kiln_model_main_kernel")]
    assert [k["name"] for k in profile["kernels"]] == kernels
    assert all(k["ms"] >= 0 for k in profile["kernels"])
    assert sum(k["flops"] for k in profile["kernels"]) > 0


def test_out_of_range_index_fails_the_run_on_the_gpu(emulator, tmp_path):
    """Gather/scatter indices out of range fail the run on the GPU as on the
    CPU (issue 23): a one-thread kernel after the one that finds the indices'
    range writes the first failed check into the run's error slot in device
    memory, which the runtime reads back after the run. In-range indices,
    negative ones included, agree with onnxruntime; a failed run leaves the
    handle usable, and the next good run does not see the failure."""
    import kiln
    from test_index_checks import CASES, feeds, one_node
    os.environ["KILN_CUDA_DRIVER"] = str(EMULATOR)
    for case in sorted(CASES):
        op, data, good, bad, attrs, updates, message = CASES[case]
        model = one_node(op, data, good, attrs, updates)
        so = kiln.compile(model, tmp_path / f"{case}.so", target="nvptx",
                          gpu_emulation=True, gpu_arch="sm_90")
        want = run_onnxruntime(model, feeds(good, updates))["y"]
        with kiln.load(so) as compiled:
            assert compiled.device == "cuda"
            np.testing.assert_allclose(compiled.run(feeds(good, updates))["y"],
                                       want, rtol=1e-6, atol=1e-6, err_msg=case)
            with pytest.raises(kiln.InvalidInputError) as error:
                compiled.run(feeds(bad, updates))
            assert f"lookup ({op}): {message}" in str(error.value), case
            np.testing.assert_allclose(compiled.run(feeds(good, updates))["y"],
                                       want, rtol=1e-6, atol=1e-6, err_msg=case)


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_index_ranges_by_block_and_warp(order, emulator, tmp_path):
    """The indices' range that a check reads is reduced by a block (600
    indices) or a warp (40) with 64-bit shuffles; the one bad index, first,
    in the middle or last, is found wherever it lies."""
    import kiln
    from test_index_checks import one_node
    os.environ["KILN_CUDA_DRIVER"] = str(EMULATOR)
    emulator.setenv("KILN_EMULATOR_ORDER", order)
    rng = np.random.default_rng(7)
    data = rng.standard_normal((50, 3)).astype(np.float32)
    for n in (40, 600):
        good = rng.integers(-50, 50, size=n).astype(np.int64)
        model = one_node("Gather", data, good, {"axis": 0})
        so = kiln.compile(model, tmp_path / f"g{n}.so", target="nvptx",
                          gpu_emulation=True, gpu_arch="sm_90")
        with kiln.load(so) as compiled:
            np.testing.assert_array_equal(compiled.run({"indices": good})["y"],
                                          data[good])
            for at, value in ((0, 50), (n // 2, -51), (n - 1, 1 << 40)):
                bad = good.copy()
                bad[at] = value
                with pytest.raises(kiln.InvalidInputError,
                                   match=rf"index {value} is out of range \[-50, 49\]"):
                    compiled.run({"indices": bad})
            # Out of range above and below: the greatest is reported, as
            # on the CPU.
            bad = good.copy()
            bad[1], bad[n - 2] = 77, -(1 << 35)
            with pytest.raises(kiln.InvalidInputError,
                               match=r"index 77 is out of range \[-50, 49\]"):
                compiled.run({"indices": bad})


NUMPY_REDUCTIONS = {"ReduceMax": np.max, "ReduceMin": np.min, "ReduceSum": np.sum}


@pytest.mark.parametrize("op,dtype", [("ReduceMax", np.int64), ("ReduceMin", np.int32),
                                      ("ReduceSum", np.int64), ("ReduceSum", np.int32)])
def test_integer_reductions_by_block_and_warp(op, dtype, emulator, tmp_path):
    """Integer reductions of long rows run on a block (700 elements a row)
    or a warp (three rows of 64) each, 64-bit values shuffled as halves;
    exact in every thread order. Against numpy: onnxruntime 1.31's int64
    ReduceMax of these [2, 700] values misses the largest (1095293798490
    where numpy and Kiln find 1099078482394)."""
    rng = np.random.default_rng(3)
    for shape in ((2, 700), (3, 64)):
        graph = helper.make_graph(
            [helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)], "r",
            [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(
                np.dtype(dtype)), list(shape))],
            [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(
                np.dtype(dtype)), None)],
            [numpy_helper.from_array(np.array([1], np.int64), "axes")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        big = 1 << 40 if dtype == np.int64 else 1 << 20
        x = rng.integers(-big, big, size=shape).astype(dtype)
        workdir = tmp_path / str(shape[0])
        so = compile_model(model, workdir, GPU)
        want = NUMPY_REDUCTIONS[op](x, axis=1).astype(dtype)
        for order in ("forward", "shuffle"):
            emulator.setenv("KILN_EMULATOR_ORDER", order)
            got = run_compiled(so, {"x": x}, workdir)["y"]
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} {order}")
