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


def test_attention_refuses_nonpad_kv_seqlen(tmp_path):
    q, k, v = data(1, 2, 3, 4), data(1, 2, 3, 4), data(1, 2, 3, 4)
    lengths = np.array([2], dtype=np.int64)
    m = model("Attention", {"q": q, "k": k, "v": v, "lengths": lengths}, ["y"],
              names=["q", "k", "v", "", "", "", "lengths"], opset=24)
    with pytest.raises(KilnError, match="Attention.*nonpad_kv_seqlen"):
        compile_model(m, tmp_path)
