"""End-to-end tests of the operators Kiln imports by decomposition into other
graph ops (lib/Import/ImportComposite.cpp, LayerNormalization's statistics).

Each test builds a one-node ONNX model, compiles it with kiln-compile, runs it
with kiln-run and compares every output with onnxruntime. Attention and
RMSNormalization (opset 23) are checked against ONNX's reference evaluator,
which implements them whatever the onnxruntime version.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from kiln_testing import KilnError, assert_matches_onnxruntime, compile_model, run_compiled

RNG = np.random.default_rng(3)

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def data(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(op, inputs, outputs, attrs=None, consts=None, opset=17, names=None):
    """A one-node model: `inputs` fed at run time, `consts` initializers,
    `names` the node's inputs in order when some are left empty."""
    consts = consts or {}
    names = names if names is not None else list(inputs) + list(consts)
    node = helper.make_node(op, names, list(outputs), **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype], v.shape)
                    for n, v in inputs.items()]
    graph_outputs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
                     for n in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in consts.items()]
    graph = helper.make_graph([node], op.lower(), graph_inputs, graph_outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 23 else 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def assert_matches_reference(m, feeds, tmp_path, rtol=1e-4, atol=1e-5):
    """Like assert_matches_onnxruntime, with ONNX's reference evaluator."""
    got = run_compiled(compile_model(m, tmp_path), feeds, tmp_path)
    names = [o.name for o in m.graph.output]
    expected = dict(zip(names, ReferenceEvaluator(m).run(None, feeds)))
    assert set(got) == set(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype, f"{name}: dtype {have.dtype}, expected {want.dtype}"
        assert have.shape == want.shape, f"{name}: shape {have.shape}, expected {want.shape}"
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("axis", [1, -1])
def test_layer_norm_mean_inv_std_dev(tmp_path, axis):
    x = data(2, 3, 5)
    scale_shape = x.shape[axis:]
    m = model("LayerNormalization", {"x": x}, ["y", "mean", "inv_std_dev"],
              attrs={"axis": axis, "epsilon": 1e-3},
              consts={"scale": data(*scale_shape), "bias": data(*scale_shape)})
    assert_matches_onnxruntime(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss_weight_ignore_index(tmp_path, reduction):
    x = data(3, 4, 2)
    target = RNG.integers(0, 4, size=(3, 2)).astype(np.int64)
    target[1, 0] = 2  # the ignored class, at least once
    m = model("NegativeLogLikelihoodLoss", {"x": x, "target": target}, ["loss"],
              attrs={"reduction": reduction, "ignore_index": 2},
              consts={"weight": np.abs(data(4)) + 0.1}, opset=13)
    assert_matches_onnxruntime(m, {"x": x, "target": target}, tmp_path)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_loss_log_prob(tmp_path, reduction):
    scores = data(4, 5)
    labels = RNG.integers(0, 5, size=(4,)).astype(np.int64)
    m = model("SoftmaxCrossEntropyLoss", {"scores": scores, "labels": labels},
              ["loss", "log_prob"], attrs={"reduction": reduction}, opset=13)
    assert_matches_onnxruntime(m, {"scores": scores, "labels": labels}, tmp_path)


def test_rms_norm(tmp_path):
    x = data(2, 3, 8)
    m = model("RMSNormalization", {"x": x}, ["y"], attrs={"axis": -1},
              consts={"scale": data(8)}, opset=23)
    assert_matches_reference(m, {"x": x}, tmp_path)


def test_attention_3d_gqa_causal(tmp_path):
    q, k, v = data(2, 4, 8 * 4), data(2, 6, 2 * 4), data(2, 6, 2 * 5)
    m = model("Attention", {"q": q, "k": k, "v": v}, ["y"],
              attrs={"q_num_heads": 8, "kv_num_heads": 2, "is_causal": 1}, opset=23)
    assert_matches_reference(m, {"q": q, "k": k, "v": v}, tmp_path)


def test_attention_4d_bool_mask_softcap_past(tmp_path):
    q, k, v = data(1, 2, 3, 4), data(1, 2, 3, 4), data(1, 2, 3, 4)
    past_k, past_v = data(1, 2, 2, 4), data(1, 2, 2, 4)
    mask = RNG.integers(0, 2, size=(3, 5)).astype(np.bool_)
    mask[:, 0] = True
    feeds = {"q": q, "k": k, "v": v, "mask": mask, "past_k": past_k, "past_v": past_v}
    m = model("Attention", feeds, ["y", "present_k", "present_v", "qk"],
              attrs={"softcap": 2.0, "scale": 0.3, "qk_matmul_output_mode": 3}, opset=23)
    assert_matches_reference(m, feeds, tmp_path)


@pytest.mark.parametrize("attrs", [{}, {"is_causal": 1},
                                   {"is_causal": 1, "left_window_size": 1}])
def test_attention_nonpad_kv_seqlen(attrs, tmp_path):
    # Batch b sees its first lengths[b] keys; causal and window masks count
    # from the last query sitting at key lengths[b] - 1. A length shorter than
    # the queries masks whole rows, which give 0.
    q, k, v = data(3, 2, 3, 4), data(3, 2, 5, 4), data(3, 2, 5, 4)
    lengths = np.array([5, 3, 2], dtype=np.int64)
    feeds = {"q": q, "k": k, "v": v, "lengths": lengths}
    m = model("Attention", feeds, ["y"], attrs=attrs,
              names=["q", "k", "v", "", "", "", "lengths"], opset=24)
    assert_matches_reference(m, feeds, tmp_path)


def test_attention_refuses_nonpad_kv_seqlen_with_past(tmp_path):
    q, k, v = data(1, 2, 3, 4), data(1, 2, 3, 4), data(1, 2, 3, 4)
    past = data(1, 2, 2, 4)
    feeds = {"q": q, "k": k, "v": v, "pk": past, "pv": past,
             "lengths": np.array([2], dtype=np.int64)}
    m = model("Attention", feeds, ["y"],
              names=["q", "k", "v", "", "pk", "pv", "lengths"], opset=24)
    with pytest.raises(KilnError, match="Attention.*nonpad_kv_seqlen cannot"):
        compile_model(m, tmp_path)


# --- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ---------------

import ml_dtypes  # noqa: E402  (onnx's own dependency)

NARROW_DTYPES = (ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2,
                 ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                 ml_dtypes.float4_e2m1fn)


def quant_model(op, inputs, attrs=None, opset=25, n_outputs=1):
    """A one-node model on graph inputs of any dtype (ml_dtypes included)."""
    graph_inputs = [helper.make_tensor_value_info(
        n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in inputs.items()]
    outputs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, list(inputs), outputs, **(attrs or {}))
    graph = helper.make_graph([node], op.lower(), graph_inputs, [
        helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 11 if opset >= 25 else 8
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def assert_quant_matches_reference(m, feeds, tmp_path, rtol=0, atol=0):
    """Kiln against ONNX's reference; the narrow types travel as uint8 bytes."""
    kiln_feeds = {n: v.view(np.uint8) if v.dtype in NARROW_DTYPES else v
                  for n, v in feeds.items()}
    got = run_compiled(compile_model(m, tmp_path), kiln_feeds, tmp_path)
    names = [o.name for o in m.graph.output]
    for name, want in zip(names, ReferenceEvaluator(m).run(None, feeds)):
        have = got[name]
        if want.dtype in NARROW_DTYPES:
            have = have.view(want.dtype)
        assert have.dtype == want.dtype, f"{name}: dtype {have.dtype}, expected {want.dtype}"
        assert have.shape == want.shape, name
        np.testing.assert_allclose(have.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=name)


def test_quantize_dequantize_8bit_matches_onnxruntime(tmp_path):
    # Per tensor and per axis, uint8 and int8; ties of x / scale round to even.
    x = np.concatenate([data(2, 3, 4).ravel() * 100,
                        np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1e6])]).astype(np.float32)
    x = x[:24].reshape(2, 3, 4)
    x[0, 0, :4] = [1.0, 3.0, 5.0, -3.0]  # halves after dividing by 2
    scale = np.array([2.0, 0.5, 3.0], np.float32)
    feeds = {"x": x, "s": scale, "z": np.array([128, 0, 250], np.uint8)}
    m = model("QuantizeLinear", {"x": x}, ["y"], {"axis": 1},
              consts={"s": scale, "z": feeds["z"]}, opset=13)
    assert_matches_onnxruntime(m, {"x": x}, tmp_path / "q_axis")
    m = model("QuantizeLinear", {"x": x}, ["y"],
              consts={"s": np.array(2.0, np.float32), "z": np.array(-3, np.int8)}, opset=13)
    assert_matches_onnxruntime(m, {"x": x}, tmp_path / "q_tensor")
    q = RNG.integers(0, 256, size=(2, 3, 4)).astype(np.uint8)
    m = quant_model("DequantizeLinear", {"q": q, "s": scale, "z": feeds["z"]},
                    {"axis": 1}, opset=19)
    assert_quant_matches_reference(m, {"q": q, "s": scale, "z": feeds["z"]},
                                   tmp_path / "dq_axis")


@pytest.mark.parametrize("block", [2, 3])
def test_quantize_dequantize_blocked(block, tmp_path):
    # Blocks of 2 divide the axis (4); blocks of 3 leave a short last block.
    x = (data(3, 4) * 20).astype(np.float32)
    blocks = (4 + block - 1) // block
    scale = (np.abs(data(3, blocks)) + 0.5).astype(np.float32)
    zp = RNG.integers(0, 20, size=(3, blocks)).astype(np.uint8)
    feeds = {"x": x, "s": scale, "z": zp}
    m = quant_model("QuantizeLinear", feeds, {"axis": 1, "block_size": block})
    assert_quant_matches_reference(m, feeds, tmp_path / "q")
    q = RNG.integers(0, 256, size=(3, 4)).astype(np.uint8)
    feeds = {"q": q, "s": scale, "z": zp}
    m = quant_model("DequantizeLinear", feeds, {"axis": 1, "block_size": block})
    assert_quant_matches_reference(m, feeds, tmp_path / "dq")


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                   ml_dtypes.uint2, np.int16, np.uint16])
def test_quantize_dequantize_integers(dtype, tmp_path):
    # Saturation at both ends of the range, per-axis zero points.
    x = np.array([[0, 2.5, 4.8, 8.6], [-30, -20, 6, 9], [1e4, -1e4, 3, -3]], np.float32)
    scale = np.array([2.0, 3.0, 0.25], np.float32)
    zp = np.array([1, 0, 1]).astype(dtype)
    feeds = {"x": x, "s": scale, "z": zp}
    assert_quant_matches_reference(quant_model("QuantizeLinear", feeds, {"axis": 0}),
                                   feeds, tmp_path / "q")
    info = ml_dtypes.iinfo(dtype)
    q = np.resize(np.arange(info.min, info.max + 1), (3, 4)).astype(dtype)
    feeds = {"q": q, "s": scale, "z": zp}
    assert_quant_matches_reference(quant_model("DequantizeLinear", feeds, {"axis": 0}),
                                   feeds, tmp_path / "dq")


@pytest.mark.parametrize("dtype,saturate", [(ml_dtypes.float8_e4m3fn, 1),
                                            (ml_dtypes.float8_e4m3fn, 0),
                                            (ml_dtypes.float8_e5m2, 0),
                                            (ml_dtypes.float4_e2m1fn, 1)])
def test_quantize_dequantize_floats(dtype, saturate, tmp_path):
    x = np.array([0, 1, 2, 1e5, 200, -7.3, 0.013, -1e9], np.float32)
    feeds = {"x": x, "s": np.array(2.0, np.float32), "z": np.zeros(1, dtype)}
    attrs = {"saturate": saturate} if dtype != ml_dtypes.float4_e2m1fn else {}
    assert_quant_matches_reference(quant_model("QuantizeLinear", feeds, attrs),
                                   feeds, tmp_path / "q")
    q = np.arange(0, 256 if dtype != ml_dtypes.float4_e2m1fn else 16,
                  dtype=np.uint8).view(dtype)
    feeds = {"q": q, "s": np.array(0.5, np.float16)}
    assert_quant_matches_reference(quant_model("DequantizeLinear", feeds),
                                   feeds, tmp_path / "dq")


@pytest.mark.parametrize("x", [
    np.array([[0, 2, -3, -2.5], [1.34, 0.5, 7, -0.1]], np.float32),
    np.array([1, 2.7, 100, 3], np.float32),      # no negative: min is 0
    np.array([-1, -2.7, -100, -3], np.float32),  # no positive: max is 0
])
def test_dynamic_quantize_linear(x, tmp_path):
    m = model("DynamicQuantizeLinear", {"x": x}, ["y", "scale", "zero_point"], opset=11)
    assert_matches_onnxruntime(m, {"x": x}, tmp_path)


def test_dynamic_quantize_linear_all_zero(tmp_path):
    # max == min: ONNX's reference takes a range of 1, so the scale is 1/255
    # (onnxruntime gives 1; the spec's formula divides by zero).
    x = np.zeros((2, 2), np.float32)
    m = model("DynamicQuantizeLinear", {"x": x}, ["y", "scale", "zero_point"], opset=11)
    assert_quant_matches_reference(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
def test_rotary_embedding(interleaved, rotary_dim, tmp_path):
    """4-D input with position ids gathered from the caches, and 3-D input
    (heads from num_heads) with per-position caches; whole or partial
    rotation, halves or interleaved pairs; against ONNX's reference."""
    half = (rotary_dim or 8) // 2
    x = data(2, 3, 5, 8)
    positions = np.array([[0, 2, 4, 6, 1], [3, 3, 0, 1, 2]], np.int64)
    cos, sin = data(7, half), data(7, half)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    m = model("RotaryEmbedding", {"x": x, "p": positions}, ["y"], attrs,
              consts={"cos": cos, "sin": sin}, opset=23, names=["x", "cos", "sin", "p"])
    assert_matches_reference(m, {"x": x, "p": positions}, tmp_path / "4d")
    x3 = data(2, 5, 16)
    cos3, sin3 = data(2, 5, half), data(2, 5, half)
    m = model("RotaryEmbedding", {"x": x3}, ["y"], dict(attrs, num_heads=2),
              consts={"cos": cos3, "sin": sin3}, opset=23)
    assert_matches_reference(m, {"x": x3}, tmp_path / "3d")
