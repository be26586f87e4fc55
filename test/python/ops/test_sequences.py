"""Sequences (lib/Import/ImportSequence.cpp) and the operators added with
them for issue 22: Det, MelWeightMatrix, Scan at opset 8 and
BatchNormalization in training mode.

A sequence is resolved when the model compiles: its operators pick, add and
drop tensors; a sequence input or output is one tensor per element, named
NAME[i], its length and shapes given when compiling. Checked against
onnxruntime (or ONNX's reference where onnxruntime has no kernel), and the
errors for what Kiln cannot resolve.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import kiln
from kiln_testing import run_onnxruntime

RNG = np.random.default_rng(11)
F = TensorProto.FLOAT


def save(tmp_path, nodes, inputs, outputs, inits=(), opset=17, name="m"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return model, path


def tensor(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def sequence(name, elem=F):
    return helper.make_tensor_sequence_value_info(name, elem, None)


def test_internal_sequences_split_map_insert_concat(tmp_path):
    """SplitToSequence -> SequenceMap (a Relu body) -> SequenceInsert ->
    SequenceErase -> SequenceLength and ConcatFromSequence (concatenated and
    stacked), all inside the model."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["e"], ["r"])], "body",
        [tensor("e", None)], [tensor("r", None)])
    nodes = [
        helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1),
        helper.make_node("SequenceMap", ["s"], ["m"], body=body),
        helper.make_node("SequenceInsert", ["m", "z", "pos"], ["i"]),
        helper.make_node("SequenceErase", ["i"], ["j"]),  # the last
        helper.make_node("SequenceLength", ["j"], ["n"]),
        helper.make_node("ConcatFromSequence", ["j"], ["y"], axis=1),
        helper.make_node("ConcatFromSequence", ["j"], ["w"], axis=-1, new_axis=1),
    ]
    inits = [numpy_helper.from_array(np.array(2, np.int64), "split"),
             numpy_helper.from_array(np.array(-1, np.int64), "pos")]
    model, path = save(tmp_path, nodes, [tensor("x", [2, 6]), tensor("z", [2, 2])],
                       [tensor("y", None), tensor("n", [], TensorProto.INT64),
                        tensor("w", None)], inits)
    feeds = {"x": RNG.standard_normal((2, 6)).astype(np.float32),
             "z": RNG.standard_normal((2, 2)).astype(np.float32)}
    want = run_onnxruntime(model, feeds)
    got = kiln.load(kiln.compile(path)).run(feeds)
    assert got["n"] == want["n"] == 3
    for name in ["y", "w"]:
        assert got[name].shape == want[name].shape
        np.testing.assert_array_equal(got[name], want[name])


def test_loop_builds_a_sequence(tmp_path):
    """The way torch exports a list built in a loop: SequenceEmpty, a Loop
    inserting a tensor per iteration, ConcatFromSequence after it."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x", "fi"], ["t"]),
         helper.make_node("SequenceInsert", ["seq_in", "t"], ["seq_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [tensor("i", [], TensorProto.INT64), tensor("c_in", [], TensorProto.BOOL),
                 sequence("seq_in")],
        [tensor("c_out", [], TensorProto.BOOL), sequence("seq_out")])
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["trips", "", "empty"], ["seq"], body=body),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0,
                              new_axis=1)]
    inits = [numpy_helper.from_array(np.array(4, np.int64), "trips")]
    model, path = save(tmp_path, nodes, [tensor("x", [3])], [tensor("y", [4, 3])],
                       inits)
    feeds = {"x": RNG.standard_normal(3).astype(np.float32)}
    want = run_onnxruntime(model, feeds)
    got = kiln.load(kiln.compile(path)).run(feeds)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)


def test_sequence_inputs_and_outputs(tmp_path):
    """A sequence input is compiled with its shapes and fed as a list (or as
    NAME[i]); a sequence output comes back as NAME[i]."""
    nodes = [helper.make_node("SequenceAt", ["xs", "one"], ["second"]),
             helper.make_node("SequenceInsert", ["xs", "t", "zero"], ["ys"])]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(0, np.int64), "zero")]
    model, path = save(tmp_path, nodes, [sequence("xs"), tensor("t", [4])],
                       [tensor("second", None), sequence("ys")], inits)
    xs = [RNG.standard_normal(s).astype(np.float32) for s in [(2, 3), (5,)]]
    t = RNG.standard_normal(4).astype(np.float32)
    so = kiln.compile(path, sequence_shapes={"xs": [(2, 3), (5,)]})
    m = kiln.load(so)
    assert [i.name for i in m.inputs] == ["xs[0]", "xs[1]", "t"]
    assert [o.name for o in m.outputs] == ["second", "ys[0]", "ys[1]", "ys[2]"]
    got = m.run({"xs": xs, "t": t})
    want = run_onnxruntime(model, {"xs": xs, "t": t})
    np.testing.assert_array_equal(got["second"], want["second"])
    for i, value in enumerate(want["ys"]):
        np.testing.assert_array_equal(got[f"ys[{i}]"], value)
    flat = m.run({"xs[0]": xs[0], "xs[1]": xs[1], "t": t})
    np.testing.assert_array_equal(flat["ys[0]"], t)
    with pytest.raises(kiln.InvalidInputError, match="a sequence of 3 tensors, "
                       "but the model was compiled for 2"):
        m.run({"xs": xs + [xs[0]], "t": t})


def test_sequence_errors(tmp_path):
    nodes = [helper.make_node("SequenceAt", ["xs", "pos"], ["y"])]
    inits = [numpy_helper.from_array(np.array(2, np.int64), "pos")]
    _, path = save(tmp_path, nodes, [sequence("xs")], [tensor("y", None)], inits)
    with pytest.raises(kiln.CompileError,
                       match="input 'xs' is a sequence: .* --sequence-shape "
                             r"xs=D0xD1,D0xD1,\.\.\."):
        kiln.compile(path)
    with pytest.raises(kiln.CompileError,
                       match=r"position 2 is out of range \[-2, 1\] of a "
                             "sequence of 2"):
        kiln.compile(path, sequence_shapes={"xs": [(3,), (3,)]})
    with pytest.raises(kiln.CompileError, match="a sequence shape is given for "
                       "'t', which is not a sequence input"):
        kiln.compile(path, sequence_shapes={"xs": [(3,)], "t": [(1,)]})
    # A tensor operator given a sequence.
    nodes = [helper.make_node("SequenceConstruct", ["a", "a"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    _, path = save(tmp_path, nodes, [tensor("a", [2])], [tensor("y", None)],
                   name="relu")
    with pytest.raises(kiln.CompileError, match=r"node 'Relu#1' \(Relu\): input 0 "
                       r"\('s'\) is a sequence, but Relu takes tensors"):
        kiln.compile(path)
    # A sequence where If wants its condition.
    branch = helper.make_graph([helper.make_node("Identity", ["a"], ["o"])], "b",
                               [], [tensor("o", [2])])
    nodes = [helper.make_node("SequenceConstruct", ["a"], ["s"]),
             helper.make_node("If", ["s"], ["y"], then_branch=branch,
                              else_branch=branch)]
    _, path = save(tmp_path, nodes, [tensor("a", [2])], [tensor("y", [2])],
                   name="if_on_sequence")
    with pytest.raises(kiln.CompileError, match="the condition must be one bool, "
                       "got a sequence"):
        kiln.compile(path)
    # A position known only at run time.
    nodes = [helper.make_node("SequenceConstruct", ["a", "a"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["y"])]
    _, path = save(tmp_path, nodes, [tensor("a", [2]),
                                     tensor("p", [], TensorProto.INT64)],
                   [tensor("y", None)], name="runtime_position")
    with pytest.raises(kiln.CompileError, match="the position must be a constant"):
        kiln.compile(path)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 5), (4, 8, 8), (0, 0), (3, 0, 0)])
def test_det(tmp_path, shape):
    # 0x0 matrices: the empty product, 1 (a fuzzer's find: it crashed the importer).
    x = RNG.standard_normal(shape).astype(np.float32)
    if len(shape) == 3 and shape[-1]:
        x[0, 1] = x[0, 0] * 2  # a singular matrix
        x[-1] = x[-1][::-1]    # rows that need pivoting
    if shape == (3, 3):
        x[0, 0] = 0.0          # a zero where the first pivot would be
    _, path = save(tmp_path, [helper.make_node("Det", ["x"], ["y"])],
                   [tensor("x", list(shape))], [tensor("y", None)])
    got = kiln.load(kiln.compile(path)).run({"x": x})["y"]
    want = np.linalg.det(x.astype(np.float64))
    assert got.shape == want.shape
    # A singular matrix's determinant is 0 in float64 but float32 rounding
    # off the product of the other pivots: tolerate that relative to the
    # largest determinant of the batch.
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=1e-6 * max(1.0, np.abs(want).max(initial=0)))


@pytest.mark.parametrize("bins,length,rate,low,high", [
    (8, 16, 8192, 0.0, 4000.0), (20, 512, 16000, 20.0, 7600.0)])
def test_mel_weight_matrix(tmp_path, bins, length, rate, low, high):
    inits = [numpy_helper.from_array(np.array(bins, np.int64), "bins"),
             numpy_helper.from_array(np.array(length, np.int64), "length"),
             numpy_helper.from_array(np.array(rate, np.int64), "rate"),
             numpy_helper.from_array(np.array(low, np.float32), "low"),
             numpy_helper.from_array(np.array(high, np.float32), "high")]
    model, path = save(
        tmp_path, [helper.make_node("MelWeightMatrix",
                                    ["bins", "length", "rate", "low", "high"], ["y"])],
        [], [tensor("y", None)], inits)
    got = kiln.load(kiln.compile(path)).run({})["y"]
    want = ReferenceEvaluator(model).run(None, {})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_scan_opset8(tmp_path):
    """Scan at opset 8: a batch leads every input; a running sum per sample."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [tensor("s_in", [2]), tensor("x", [2])],
        [tensor("s_out", [2]), tensor("y", [2])])
    nodes = [helper.make_node("Scan", ["", "init", "xs"], ["final", "ys"], body=body,
                              num_scan_inputs=1, directions=[1])]
    model, path = save(tmp_path, nodes, [tensor("init", [3, 2]), tensor("xs", [3, 4, 2])],
                       [tensor("final", [3, 2]), tensor("ys", [3, 4, 2])], opset=8)
    feeds = {"init": RNG.standard_normal((3, 2)).astype(np.float32),
             "xs": RNG.standard_normal((3, 4, 2)).astype(np.float32)}
    want = run_onnxruntime(model, feeds)
    got = kiln.load(kiln.compile(path)).run(feeds)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-6)


def test_batch_norm_training_mode(tmp_path):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"],
                            ["y", "running_mean", "running_var"], training_mode=1,
                            momentum=0.8, epsilon=1e-3)
    model, path = save(tmp_path, [node],
                       [tensor(n, [3] if n != "x" else [2, 3, 4, 5])
                        for n in ["x", "s", "b", "mean", "var"]],
                       [tensor("y", None), tensor("running_mean", None),
                        tensor("running_var", None)], opset=15)
    feeds = {"x": RNG.standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1}
    for n in ["s", "b", "mean"]:
        feeds[n] = RNG.standard_normal(3).astype(np.float32)
    feeds["var"] = np.abs(RNG.standard_normal(3)).astype(np.float32)
    got = kiln.load(kiln.compile(path)).run(feeds)
    want = ReferenceEvaluator(model).run(None, feeds)
    for name, value in zip(["y", "running_mean", "running_var"], want):
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5,
                                   err_msg=name)
