"""Quantised ONNX models as onnxruntime's quantiser writes them: the QDQ
format (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear) and the
QOperator format (QLinearConv, QLinearMatMul, and com.microsoft's
QLinearAdd, QLinearGlobalAveragePool, QLinearAveragePool, QGemm,
QLinearSoftmax...). Kiln computes the products of the integers and
requantises them as onnxruntime does: its outputs stay within one
quantisation step of onnxruntime's on at least 99.9% of the elements (issue
20)."""

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import kiln_cnn  # noqa: E402
import mobilenetv2  # noqa: E402

rng = np.random.default_rng(21)


def quantize_with_onnxruntime(model, path, quant_format, samples):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    # As onnxruntime asks: its pre-processing (BatchNorm folded into the
    # convolutions) first.
    raw_path, float_path = path.with_suffix(".raw.onnx"), path.with_suffix(".float.onnx")
    onnx.save(model, raw_path)
    quant_pre_process(str(raw_path), str(float_path), skip_symbolic_shape=True)
    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{name: x} for x in samples])

        def get_next(self):
            return next(self.samples, None)

    quantize_static(str(float_path), str(path), Reader(),
                    quant_format=getattr(QuantFormat, quant_format),
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    return onnx.load(path)


def output_step(model):
    """The scale of the DequantizeLinear that makes the model's output."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    output = model.graph.output[0].name
    last = next(n for n in model.graph.node if output in n.output)
    assert last.op_type == "DequantizeLinear"
    return float(inits[last.input[1]])


@pytest.mark.parametrize("quant_format", ["QDQ", "QOperator"])
@pytest.mark.parametrize("name", ["kiln_cnn", "mobilenetv2"])
def test_onnxruntime_quantised_models(tmp_path, name, quant_format):
    if name == "kiln_cnn":
        model, shape = kiln_cnn.build(), (1, 3, 64, 64)
    else:
        model, shape = mobilenetv2.build(resolution=96), (1, 3, 96, 96)
    calibration = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    quantized = quantize_with_onnxruntime(model, tmp_path / "q.onnx", quant_format,
                                          calibration)
    domains = {n.domain for n in quantized.graph.node}
    if quant_format == "QOperator":
        assert "com.microsoft" in domains  # QLinearAdd, QGemm, ...
        assert any(n.op_type == "QLinearConv" for n in quantized.graph.node)
    step = output_step(quantized)
    ours = kiln.load(kiln.compile(tmp_path / "q.onnx"))
    session = onnxruntime.InferenceSession(str(tmp_path / "q.onnx"),
                                           providers=["CPUExecutionProvider"])
    input_name = model.graph.input[0].name
    off = total = 0
    for _ in range(4):
        x = rng.standard_normal(shape).astype(np.float32)
        want = session.run(None, {input_name: x})[0]
        got = next(iter(ours.run({input_name: x}).values()))
        steps = np.abs(got.astype(np.float64) - want) / step
        off += int(np.count_nonzero(steps > 1.001))
        total += steps.size
    assert off <= 0.001 * total


def conv_stack(seed=3, group=1):
    """Convolutions of the shapes the integer path must get right: a first
    layer of 3 channels (padded to a group of 4), 20 channels
    (a padded channel block), stride 2 with dilation 2 and padding (read as
    the zero point), a 1x1 layer (or with `group` groups a 3x3 one), a
    residual Add and a Relu."""
    weights = np.random.default_rng(seed)  # its own: other modules build it

    def conv(name, x, cin, cout, k, stride=1, dilation=1, pad=0, group=1):
        w = helper.make_tensor(name + "_w", TensorProto.FLOAT,
                               [cout, cin // group, k, k],
                               weights.standard_normal(cout * cin // group * k * k)
                               * 0.2)
        b = helper.make_tensor(name + "_b", TensorProto.FLOAT, [cout],
                               weights.standard_normal(cout) * 0.1)
        node = helper.make_node("Conv", [x, name + "_w", name + "_b"], [name],
                                strides=[stride] * 2, dilations=[dilation] * 2,
                                pads=[pad] * 4, group=group)
        return node, [w, b]
    nodes, inits = [], []
    for args in [("c1", "x", 3, 20, 3, 1, 1, 1), ("c2", "r1", 20, 40, 3, 2, 2, 2),
                 # grouped: 3x3 (1x1 groups narrower than a block keep NCHW)
                 ("c3", "c2", 40, 40, 1 if group == 1 else 3, 1, 1,
                  0 if group == 1 else 1, group),
                 ("c4", "s", 40, 24, 3, 1, 1, 1)]:
        node, params = conv(*args)
        nodes.append(node)
        inits += params
        if args[0] == "c1":
            nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
        if args[0] == "c3":
            nodes.append(helper.make_node("Add", ["c2", "c3"], ["a"]))
            nodes.append(helper.make_node("Relu", ["a"], ["s"]))
    graph = helper.make_graph(
        nodes, "conv_stack",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 21, 21])],
        [helper.make_tensor_value_info("c4", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             ir_version=8)


def host_has(flag):
    with open("/proc/cpuinfo") as cpuinfo:
        return flag in cpuinfo.read().split()


@pytest.mark.parametrize("features,lanes,group", [
    (None, 16 if host_has("avx512_vnni") else 8 if host_has("avx_vnni") else 0, 1),
    ("-avx512f", 8 if host_has("avx_vnni") else 0, 1),
    ("-avx512vnni,-avxvnni", 0, 1),
    # Five groups of 8 channels, merged two at a time (at 16 lanes) into
    # groups of whole blocks, the last completed by padding.
    (None, 16 if host_has("avx512_vnni") else 8 if host_has("avx_vnni") else 0, 5)])
def test_integer_convolutions_by_target(tmp_path, features, lanes, group):
    """Where the target has 8-bit dot products (AVX-512 VNNI: 16 lanes,
    AVX-VNNI: 8), the convolutions of 8-bit operands compute in integers
    (vpdpbusd); elsewhere in f32. Either way within one step of
    onnxruntime, and the integer path exact against it but for
    onnxruntime's own rounding of float ops."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("x86 feature sets")
    model = conv_stack(group=group)
    calibration = [rng.standard_normal((1, 3, 21, 21)).astype(np.float32)
                   for _ in range(4)]
    quantized = quantize_with_onnxruntime(model, tmp_path / "q.onnx", "QDQ",
                                          calibration)
    step = output_step(quantized)
    graph = Path(kiln.compile(tmp_path / "q.onnx", features=features,
                              emit="graph")).read_text()
    # Every layer has 8-bit operands.
    assert graph.count("kiln.integer_input") == (4 if lanes else 0)
    ours = kiln.load(kiln.compile(tmp_path / "q.onnx", features=features))
    session = onnxruntime.InferenceSession(str(tmp_path / "q.onnx"),
                                           providers=["CPUExecutionProvider"])
    off = total = 0
    for _ in range(4):
        x = rng.standard_normal((1, 3, 21, 21)).astype(np.float32)
        want = session.run(None, {"x": x})[0]
        got = next(iter(ours.run({"x": x}).values()))
        steps = np.abs(got.astype(np.float64) - want) / step
        assert steps.max() <= 1.001
        off += int(np.count_nonzero(steps > 0.5))
        total += steps.size
    assert off <= 0.01 * total


def mlp(seed=4):
    """Two MatMuls with biases, a Relu between, 40 -> 64 -> 24 on 3 x 10
    rows: K = 40 and 64, N = 64 and 24 (not a multiple of 16). Its weights
    come from a generator of its own, so that building it elsewhere (other
    test modules do) leaves this module's random sequence alone."""
    weights = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(
        (weights.standard_normal((40, 64)) * 0.2).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(
        (weights.standard_normal(64) * 0.1).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(
        (weights.standard_normal((64, 24)) * 0.2).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 10, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, b1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             ir_version=8)


@pytest.mark.parametrize("quantize", ["dynamic", "QDQ"])
def test_integer_matmuls(tmp_path, quantize):
    """MatMuls of int8 weights compute in integers where the target has 8-bit
    dot products: onnxruntime's quantize_dynamic (an activation less a zero
    point known at run time) and quantize_static (QDQ) alike, within
    onnxruntime's own rounding of them."""
    model = mlp()
    samples = [rng.standard_normal((3, 10, 40)).astype(np.float32) for _ in range(4)]
    path = tmp_path / "q.onnx"
    if quantize == "dynamic":
        from onnxruntime.quantization import QuantType, quantize_dynamic
        onnx.save(model, tmp_path / "float.onnx")
        quantize_dynamic(str(tmp_path / "float.onnx"), str(path),
                         weight_type=QuantType.QInt8)
        assert any(n.op_type == "MatMulInteger" for n in onnx.load(path).graph.node)
    else:
        quantize_with_onnxruntime(model, path, "QDQ", samples)
    graph = Path(kiln.compile(path, emit="graph")).read_text()
    # Both products (the first with its bias and Relu fused).
    lanes = host_has("avx512_vnni") or host_has("avx_vnni")
    assert graph.count("kiln.integer_input") == (2 if lanes else 0)
    ours = kiln.load(kiln.compile(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for x in samples:
        want = session.run(None, {"x": x})[0]
        got = ours.run({"x": x})["y"]
        np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * np.abs(want).max())


def test_qlinear_and_integer_nodes_against_reference(tmp_path):
    """QLinearConv with a per-channel weight, bias, padding and a stride,
    and MatMulInteger with zero points beyond the 2^8 range of one product:
    against ONNX's reference, exactly."""
    from onnx.reference import ReferenceEvaluator
    x = rng.integers(0, 256, (1, 8, 9, 9), dtype=np.uint8)
    w = rng.integers(-128, 128, (16, 8, 3, 3), dtype=np.int8)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
        numpy_helper.from_array(np.array(131, np.uint8), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(rng.uniform(0.001, 0.01, 16).astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(16, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.9, np.float32), "ys"),
        numpy_helper.from_array(np.array(7, np.uint8), "yz"),
        numpy_helper.from_array(rng.integers(-500, 500, 16).astype(np.int32), "b"),
        numpy_helper.from_array(rng.integers(-128, 128, (81, 5), dtype=np.int8), "m"),
        numpy_helper.from_array(np.array(3, np.uint8), "az"),
        numpy_helper.from_array(np.array(-2, np.int8), "mz"),
    ]
    nodes = [
        helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                         ["y"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("MatMulInteger", ["flat", "m", "az", "mz"], ["p"]),
    ]
    inits.append(numpy_helper.from_array(np.array([8, 81], np.int64), "shape"))
    graph = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None),
         helper.make_tensor_value_info("p", TensorProto.INT32, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    want = ReferenceEvaluator(model).run(None, {"x": x})
    got = kiln.load(kiln.compile(tmp_path / "m.onnx")).run({"x": x})
    np.testing.assert_array_equal(got["y"], want[0])
    np.testing.assert_array_equal(got["p"], want[1])


def qlinear_conv_model(scale, domain_op=None):
    inits = [
        numpy_helper.from_array(np.array(scale, np.float32), "xs"),
        numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(np.ones((4, 3, 1, 1), np.int8), "w"),
        numpy_helper.from_array(np.array(0.5, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
        numpy_helper.from_array(np.array(128, np.uint8), "yz"),
    ]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                              ["y"], name="conv")]
    opsets = [helper.make_opsetid("", 13)]
    if domain_op:
        nodes.append(helper.make_node(domain_op, ["y"], ["z"], domain="com.microsoft",
                                      name="custom"))
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    graph = helper.make_graph(
        nodes, "q", [helper.make_tensor_value_info("x", TensorProto.UINT8, (1, 3, 4, 4))],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scales_are_refused(tmp_path, scale):
    onnx.save(qlinear_conv_model(scale), tmp_path / "m.onnx")
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(tmp_path / "m.onnx")
    message = str(error.value)
    assert "node 'conv' (QLinearConv)" in message
    assert "must be positive and finite" in message


def test_other_com_microsoft_ops_are_named(tmp_path):
    onnx.save(qlinear_conv_model(0.1, "FusedGemm"), tmp_path / "m.onnx")
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(tmp_path / "m.onnx")
    message = str(error.value)
    assert "com.microsoft.FusedGemm" in message
    assert "QLinearAdd" in message  # what Kiln does take from com.microsoft
