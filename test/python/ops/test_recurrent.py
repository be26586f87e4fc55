"""RNN, GRU and LSTM against onnxruntime: directions, layouts, activations and
their parameters, clip, sequence lengths, initial states, peepholes,
input_forget, linear_before_reset, weights as constants and as inputs, with
and without OpenMP; and the two recurrent models of the benchmark."""

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import (ROOT, assert_matches_onnxruntime, compile_model,
                          run_compiled)

RNG = np.random.default_rng(7)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_model(op, seq=5, batch=3, inputs=4, hidden=6, directions=1, layout=0,
                    bias=True, lengths=None, initial=False, peepholes=False,
                    constant_weights=True, opset=22, **attrs):
    """One recurrent node and its feeds. Weights are initializers (or inputs
    with constant_weights=False); every output is a graph output."""
    g = GATES[op]
    x_shape = [batch, seq, inputs] if layout else [seq, batch, inputs]
    state_shape = [batch, directions, hidden] if layout else [directions, batch, hidden]
    scale = 1 / np.sqrt(hidden)
    tensors = {
        "W": (RNG.uniform(-scale, scale, (directions, g * hidden, inputs))),
        "R": (RNG.uniform(-scale, scale, (directions, g * hidden, hidden))),
    }
    if bias:
        tensors["B"] = RNG.uniform(-scale, scale, (directions, 2 * g * hidden))
    if initial:
        tensors["initial_h"] = RNG.standard_normal(state_shape) * 0.5
        if op == "LSTM":
            tensors["initial_c"] = RNG.standard_normal(state_shape) * 0.5
    if peepholes:
        tensors["P"] = RNG.uniform(-scale, scale, (directions, 3 * hidden))
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    names = ["X", "W", "R", "B" if bias else "", "sequence_lens" if lengths is not None else "",
             "initial_h" if initial else ""]
    if op == "LSTM":
        names += ["initial_c" if initial else "", "P" if peepholes else ""]
    while names[-1] == "":
        names.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outputs, hidden_size=hidden,
                            direction=["forward", "bidirectional"][directions - 1]
                            if "direction" not in attrs else attrs.pop("direction"),
                            layout=layout, **attrs)
    feeds = {"X": RNG.standard_normal(x_shape).astype(np.float32)}
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    inits = []
    if lengths is not None:
        feeds["sequence_lens"] = np.array(lengths, np.int32)
        graph_inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32,
                                                          [batch]))
    for name, value in tensors.items():
        if constant_weights:
            inits.append(numpy_helper.from_array(value, name))
        else:
            feeds[name] = value
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                              value.shape))
    graph = helper.make_graph([node], op.lower(), graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, feeds


CASES = [
    ("RNN", dict()),
    ("RNN", dict(directions=2, initial=True, activations=["Relu", "Tanh"])),
    ("RNN", dict(direction="reverse", lengths=[5, 2, 4], clip=0.8)),
    ("GRU", dict()),
    ("GRU", dict(linear_before_reset=1, directions=2, initial=True)),
    ("GRU", dict(linear_before_reset=1, direction="reverse", lengths=[3, 5, 1])),
    # ONNX's reference implementation (layout 1) ignores sequence_lens.
    ("GRU", dict(direction="reverse", layout=1, initial=True)),
    ("GRU", dict(activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.3, 0.2],
                 activation_beta=[0.4], bias=False)),
    ("LSTM", dict()),
    ("LSTM", dict(directions=2, peepholes=True, initial=True, layout=1)),
    ("LSTM", dict(lengths=[5, 1, 3], directions=2, initial=True)),
    ("LSTM", dict(input_forget=1, clip=1.5, constant_weights=False)),
    ("LSTM", dict(activations=["Sigmoid", "Softsign", "Affine"], activation_alpha=[0.5],
                  activation_beta=[0.1], peepholes=True)),
]


@pytest.mark.parametrize("op,options", CASES,
                         ids=[f"{op}-{'-'.join(sorted(o)) or 'defaults'}" for op, o in CASES])
def test_recurrent_matches_reference(op, options, tmp_path):
    """Against onnxruntime; against ONNX's reference implementation for
    layout 1, which onnxruntime's CPU kernels refuse."""
    model, feeds = recurrent_model(op, **options)
    if not options.get("layout"):
        assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-5)
        return
    from onnx.reference import ReferenceEvaluator
    expected = ReferenceEvaluator(model).run(None, feeds)
    got = run_compiled(compile_model(model, tmp_path), feeds, tmp_path)
    names = [o.name for o in model.graph.output]
    for name, want in zip(names, expected):
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_recurrent_without_openmp(op, tmp_path):
    """Single-threaded code tiles the step's matmul with its reduction: the
    fill of its accumulators must not be fused into every reduction step."""
    model, feeds = recurrent_model(op, hidden=40, inputs=24, directions=2, initial=True)
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-5,
                               compile_args=["--no-openmp"])


@pytest.mark.parametrize("op,options", [
    ("LSTM", dict()),
    ("LSTM", dict(directions=2, peepholes=True, initial=True)),
    ("LSTM", dict(batch=2, lengths=[7, 3])),
    ("GRU", dict(linear_before_reset=1)),
    ("GRU", dict(directions=2, initial=True)),
    ("RNN", dict(batch=2)),
    ("LSTM", dict(hidden=45)),
], ids=["lstm", "lstm-bidirectional-peepholes", "lstm-batch2", "gru-linear-before-reset",
        "gru-bidirectional", "rnn-batch2", "lstm-hidden45"])
@pytest.mark.parametrize("threads", [1, 2])
def test_recurrent_packed_weights(op, options, threads, tmp_path):
    """Hidden 40: the step's weight (4 x 40 gates for LSTM, 3 x 40 for GRU,
    40 for RNN) is packed in panels of two vectors by kiln-cpu-pack-weights,
    the last one padded, and a batch of one runs as a matrix-vector product
    through the panels (isPackedMatvec), four rows of a panel per step (three
    with hidden 45), on one thread and on two."""
    options = dict(options)
    batch = options.pop("batch", 1)
    hidden = options.pop("hidden", 40)
    model, feeds = recurrent_model(op, seq=7, batch=batch, inputs=24, hidden=hidden,
                                   **options)
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-5,
                               threads=threads)


def test_matmul_without_openmp(tmp_path):
    """The bug the previous test found outside recurrences: a matmul of two
    runtime operands, compiled without OpenMP."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 40])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [40, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "mm", [x, w], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": RNG.standard_normal((3, 40)).astype(np.float32),
             "w": RNG.standard_normal((40, 64)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path, compile_args=["--no-openmp"])


def test_recurrent_errors(tmp_path):
    model, _ = recurrent_model("LSTM", activations=["Sigmoid", "Tanh", "Swish"])
    with pytest.raises(Exception) as error:
        compile_model(model, tmp_path / "a")
    assert "activation 'Swish' is not one Kiln supports" in str(error.value)
    model, _ = recurrent_model("GRU", direction="sideways")
    with pytest.raises(Exception) as error:
        compile_model(model, tmp_path / "b")
    assert "direction 'sideways' is not forward, reverse or bidirectional" in str(error.value)


@pytest.mark.parametrize("gru", [False, True], ids=["lstm_tagger", "gru_encoder"])
def test_recurrent_models(gru, tmp_path):
    """The benchmark's 2-layer LSTM tagger and bidirectional GRU encoder, as
    PyTorch lays them out, at a small size."""
    sys.path.insert(0, str(ROOT / "tools" / "models"))
    import recurrent
    model = recurrent.build(seed=1, gru=gru, seq=12, hidden=48, batch=2,
                            **({"features": 20} if gru else {"vocab": 50, "emb": 16, "tags": 5}))
    feeds = recurrent.feeds(model)
    assert_matches_onnxruntime(model, feeds, tmp_path, rtol=1e-4, atol=1e-5)
