"""kiln.quantize (calibration to a QDQ model) and kiln.prune (structured
pruning): issue 20's model optimiser. Accuracy is measured on samples that
calibration did not see, against the float model, and against onnxruntime's
own quantiser on the same model and data."""

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln.quantize import QuantizationReport
from kiln_testing import run_onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import kiln_cnn  # noqa: E402
import mobilenetv2  # noqa: E402
import transformer_encoder  # noqa: E402

rng = np.random.default_rng(20)


def cosine(a, b):
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def images(count, shape=(1, 3, 64, 64)):
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def logits_model(model):
    """`model` without its final Softmax: the accuracy of a classifier's
    logits says more than that of probabilities saturated by random
    weights."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    last = model.graph.node[-1]
    assert last.op_type == "Softmax"
    model.graph.output[0].name = last.input[0]
    model.graph.output[0].type.tensor_type.ClearField("shape")
    del model.graph.node[-1]
    return model


def kiln_run(path, feeds):
    return kiln.load(kiln.compile(path)).run(feeds)


def sessions(model):
    """A function running `model` (a ModelProto or path) with onnxruntime
    on one sample, the session made once."""
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


@pytest.fixture(scope="module")
def cnn():
    return logits_model(kiln_cnn.build())


@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy"])
def test_cnn_int8_close_to_float(cnn, tmp_path, method):
    calibration, held_out = images(24), images(8)
    report = kiln.quantize(cnn, calibration, tmp_path / "q.onnx", method=method,
                           report_samples=8)
    assert isinstance(report, QuantizationReport)
    assert report.samples == 24 and report.method == method
    assert len(report.layers) == 7  # 6 convolutions and the Gemm
    assert all(t.scale > 0 and 0 <= t.zero_point <= 255 for t in report.tensors)
    assert all(layer.cosine > 0.99 for layer in report.layers), str(report)
    quantized = onnx.load(tmp_path / "q.onnx")
    ops = [n.op_type for n in quantized.graph.node]
    # One pair per distinct activation: block2's conv1 and projection share.
    assert ops.count("QuantizeLinear") == 6
    weights = [t for t in quantized.graph.initializer
               if t.data_type == TensorProto.INT8 and t.name.endswith("weight_quantized")]
    assert len(weights) == 7
    biases = [t for t in quantized.graph.initializer
              if t.data_type == TensorProto.INT32 and t.name.endswith("bias_quantized")]
    assert len(biases) == 1  # the Gemm's; the convolutions have none (BatchNorm follows)
    name = cnn.graph.output[0].name
    # Held-out samples: Kiln's int8 model against float, and onnxruntime on
    # the same QDQ model.
    ours = kiln.load(kiln.compile(tmp_path / "q.onnx"))
    float_model, ort_int8 = sessions(cnn), sessions(quantized)
    for x in held_out:
        want = float_model({"input": x})[name]
        got = ours.run({"input": x})[name]
        assert cosine(want, got) >= 0.99
        # The same QDQ model in onnxruntime: float differences (Kiln folds
        # BatchNorm into the dequantised weights) move an activation by one
        # quantisation step here and there, no more.
        ort = ort_int8({"input": x})[name]
        assert cosine(got, ort) >= 0.9999
        assert np.abs(got - ort).max() <= 0.01 * np.abs(ort).max()


def test_cnn_no_worse_than_onnxruntime_quantize_static(cnn, tmp_path):
    """The same model and calibration data through onnxruntime's
    quantize_static (per channel, QDQ): Kiln's error against float is no
    larger (within a margin for the noise of 8 samples)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    calibration, held_out = images(24), images(8)
    onnx.save(cnn, tmp_path / "f.onnx")

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"input": x} for x in calibration])

        def get_next(self):
            return next(self.samples, None)

    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "ort.onnx"), Reader(),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    kiln.quantize(cnn, calibration, tmp_path / "kiln.onnx", evaluate=False)
    name = cnn.graph.output[0].name
    ours, theirs = [], []
    kiln_int8 = kiln.load(kiln.compile(tmp_path / "kiln.onnx"))
    float_model, ort_int8 = sessions(cnn), sessions(tmp_path / "ort.onnx")
    for x in held_out:
        want = float_model({"input": x})[name]
        ours.append(cosine(want, kiln_int8.run({"input": x})[name]))
        theirs.append(cosine(want, ort_int8({"input": x})[name]))
    assert np.mean(ours) >= np.mean(theirs) - 0.002, (ours, theirs)


def test_transformer_matmuls(tmp_path):
    model = transformer_encoder.build(layers=1, seq=16)
    ids = [rng.integers(0, 1000, (1, 16)).astype(np.int64) for _ in range(12)]
    report = kiln.quantize(model, ids[:8], tmp_path / "q.onnx", report_samples=4)
    assert {layer.op_type for layer in report.layers} == {"MatMul"}
    assert len(report.layers) == 6  # q, k, v, output, ffn up and down
    name = model.graph.output[0].name
    assert report.outputs[name]["cosine"] >= 0.99
    ours, float_model = kiln.load(kiln.compile(tmp_path / "q.onnx")), sessions(model)
    for x in ids[8:]:
        want = float_model({"input_ids": x})[name]
        assert cosine(want, ours.run({"input_ids": x})[name]) >= 0.99


def test_bad_layers_stay_float(cnn, tmp_path):
    """Above the threshold every layer stays float: no QDQ is written, and
    the report lists them all."""
    report = kiln.quantize(cnn, images(4), tmp_path / "q.onnx", max_loss=-1.0,
                           evaluate=False)
    assert len(report.kept_float) == len(report.layers) == 7
    ops = [n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node]
    assert "QuantizeLinear" not in ops
    assert "stay float" in str(report)


def test_report_text_and_json(cnn, tmp_path):
    report = kiln.quantize(cnn, images(4), tmp_path / "q.onnx", report_samples=2)
    text = str(report)
    assert text.startswith("kiln.quantize: minmax, per channel, 4 samples")
    assert all(layer.node[:40] in text for layer in report.layers)
    assert "output fc: cosine" in text
    import json
    data = json.loads(report.to_json())
    assert len(data["layers"]) == 7 and data["outputs"]


def test_per_tensor_weights(cnn, tmp_path):
    report = kiln.quantize(cnn, images(8), tmp_path / "q.onnx", per_channel=False,
                           report_samples=4)
    assert all(layer.weight_scales[0] == layer.weight_scales[1]
               for layer in report.layers)
    assert report.outputs[cnn.graph.output[0].name]["cosine"] > 0.98


def test_bad_calibration_is_named(cnn, tmp_path):
    out = tmp_path / "q.onnx"
    good = images(2)
    with pytest.raises(ValueError, match=r"calibration sample 2: input 'input' has "
                                         r"shape \[1, 3, 32, 32\], the model's is "
                                         r"\[1,3,64,64\]"):
        kiln.quantize(cnn, good + [np.zeros((1, 3, 32, 32), np.float32)], out)
    with pytest.raises(ValueError, match=r"calibration sample 1: input 'input' is "
                                         r"float64, the model's is float32"):
        kiln.quantize(cnn, [good[0], good[1].astype(np.float64)], out)
    with pytest.raises(ValueError, match=r"calibration sample 0 gives \['x'\], but "
                                         r"the model's inputs are \['input'\]"):
        kiln.quantize(cnn, [{"x": good[0]}], out)
    with pytest.raises(ValueError, match="no calibration samples"):
        kiln.quantize(cnn, [], out)
    with pytest.raises(ValueError, match="unknown method 'kl'"):
        kiln.quantize(cnn, good, out, method="kl")
    relu = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ValueError, match="has no Conv, MatMul, Gemm"):
        kiln.quantize(relu, [np.zeros(2, np.float32)], out)


# -- kiln.prune ----------------------------------------------------------------

def test_prune_cnn_keeps_residuals_consistent(tmp_path):
    model = kiln_cnn.build()
    report = kiln.prune(model, tmp_path / "p.onnx", sparsity=0.5)
    pruned = onnx.load(tmp_path / "p.onnx")
    assert report.params_after < report.params_before
    assert report.flops_after < 0.6 * report.flops_before
    # A residual Add joins its branches' channels: they lose the same ones.
    shapes = {t.name: list(t.dims) for t in pruned.graph.initializer}
    assert shapes["block1.conv2.weight"][0] == shapes["stem.weight"][0] == 8
    x = images(1)[0]
    got = run_onnxruntime(pruned, {"input": x})
    assert got["probabilities"].shape == (1, 10)
    np.testing.assert_allclose(kiln_run(tmp_path / "p.onnx", {"input": x})["probabilities"],
                               got["probabilities"], rtol=1e-4, atol=1e-5)
    assert "kept whole" not in str(report) or "graph output" not in str(report)


def test_prune_mobilenet_depthwise(tmp_path):
    model = mobilenetv2.build(width=0.5, resolution=64)
    report = kiln.prune(model, tmp_path / "p.onnx", sparsity=0.3, measure=True,
                        num_threads=1)
    assert report.flops_after < report.flops_before
    assert report.speedup and report.speedup > 0
    pruned = onnx.load(tmp_path / "p.onnx")
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    name = pruned.graph.input[0].name
    want = run_onnxruntime(pruned, {name: x})
    got = kiln_run(tmp_path / "p.onnx", {name: x})
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-3, atol=1e-4)


def test_pruning_zero_filters_is_exact(tmp_path):
    """Filters that are all zero are the first to go, and removing them (and
    the next convolution's input channels they fed) changes nothing."""
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    w1[[1, 4, 6]] = 0.0
    w2 = rng.standard_normal((5, 8, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], name="c1"),
         helper.make_node("Relu", ["a"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "w2"], ["y"], name="c2")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 8, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    report = kiln.prune(model, tmp_path / "p.onnx", sparsity=3 / 8)
    assert report.pruned == {"c1": (8, 5)}
    pruned = onnx.load(tmp_path / "p.onnx")
    dims = {t.name: list(t.dims) for t in pruned.graph.initializer}
    assert dims == {"w1": [5, 3, 3, 3], "w2": [5, 5, 3, 3]}
    x = rng.standard_normal((1, 3, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(run_onnxruntime(pruned, {"x": x})["y"],
                               run_onnxruntime(model, {"x": x})["y"], rtol=1e-5,
                               atol=1e-5)
    # c2 writes a graph output: its channels are kept, and the report says so.
    assert "'y' is a graph output" in str(report)


def test_prune_refuses_what_it_cannot_follow(tmp_path):
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["a"], name="c"),
         helper.make_node("Transpose", ["a"], ["y"], perm=[0, 2, 3, 1], name="t")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    with pytest.raises(ValueError, match=r"no convolution can be pruned: node 't' "
                                         r"\(Transpose\) is an op pruning does not follow"):
        kiln.prune(model, tmp_path / "p.onnx")
    with pytest.raises(ValueError, match=r"sparsity must be in \[0, 1\)"):
        kiln.prune(model, tmp_path / "p.onnx", sparsity=1.0)
    with pytest.raises(ValueError, match="unknown method 'l2'"):
        kiln.prune(model, tmp_path / "p.onnx", method="l2")


def test_kiln_compile_quantize(cnn, tmp_path):
    """kiln-compile --quantize=int8 --calibration DIR: the same quantiser from
    .npy files, then the compile; the int8 model against float on held-out
    samples. Bad calibration folders are named."""
    import subprocess
    from kiln_testing import KILN_COMPILE
    onnx.save(cnn, tmp_path / "f.onnx")
    folder = tmp_path / "calibration"
    folder.mkdir()
    for i, x in enumerate(images(16)):
        np.save(folder / f"{i:03d}.npy", x)
    done = subprocess.run(
        [KILN_COMPILE, tmp_path / "f.onnx", "--quantize=int8", "--calibration", folder,
         "--quantize-method=percentile", "-o", tmp_path / "q.so"],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "output fc: cosine" in done.stderr  # the report
    ours = kiln.load(tmp_path / "q.so")
    name = cnn.graph.output[0].name
    float_model = sessions(cnn)
    for x in images(4):
        assert cosine(float_model({"input": x})[name], ours.run({"input": x})[name]) >= 0.99

    np.save(folder / "bad.npy", np.zeros((1, 3, 32, 32), np.float32))
    for args, message in [
            (["--quantize=int8"], "needs calibration samples: --calibration DIR"),
            (["--quantize=int4", "--calibration", folder], "unknown --quantize value 'int4'"),
            (["--quantize=int8", "--calibration", tmp_path / "none"], "does not exist"),
            (["--quantize=int8", "--calibration", folder], "(file 'bad.npy')")]:
        done = subprocess.run([KILN_COMPILE, tmp_path / "f.onnx", *args, "-o", tmp_path / "x.so"],
                              capture_output=True, text=True)
        assert done.returncode == 1 and message in done.stderr, done.stderr
