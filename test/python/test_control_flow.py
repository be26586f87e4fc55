"""If, Loop and Scan (issue 22): a branch or body imported in place, a Loop
or Scan unrolled when its trip count or length is known at compile time, an
If on a run-time condition as both branches and a select. Against
onnxruntime, and the errors for what Kiln cannot unroll."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln_testing import run_onnxruntime

rng = np.random.default_rng(22)
F = TensorProto.FLOAT


def _save(tmp_path, graph, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return model, path


def _compare(model, path, feeds):
    want = run_onnxruntime(model, feeds)
    got = kiln.load(kiln.compile(path)).run(feeds)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6)


def _branch(name, op, out):
    """A branch computing `op` of the outer `x` (an outer-scope value)."""
    return helper.make_graph([helper.make_node(op, ["x"], [out])], name, [],
                             [helper.make_tensor_value_info(out, F, [2, 3])])


def test_if_on_a_run_time_condition(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"],
                          then_branch=_branch("then", "Relu", "t"),
                          else_branch=_branch("else", "Neg", "e"))],
        "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, [2, 3])])
    model, path = _save(tmp_path, graph)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    for c in (True, False):
        _compare(model, path, {"c": np.array(c), "x": x})


def test_loop_and_scan_unrolled(tmp_path):
    # Loop: 4 iterations of s = s * 2 + i, with s after each as a scan output.
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["s_in", "two"], ["d"]),
         helper.make_node("Add", ["d", "fi"], ["s_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["s_out"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", F, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", F, [3]),
         helper.make_tensor_value_info("scan", F, [3])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    # Scan: a running sum over the rows of x, the rows reversed.
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["acc_out"]),
         helper.make_node("Identity", ["acc_out"], ["partial"])],
        "scan_body",
        [helper.make_tensor_value_info("acc", F, [3]),
         helper.make_tensor_value_info("row", F, [3])],
        [helper.make_tensor_value_info("acc_out", F, [3]),
         helper.make_tensor_value_info("partial", F, [3])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "s0"], ["s", "history"], body=body),
         helper.make_node("Scan", ["s0", "x"], ["total", "partials"], body=scan_body,
                          num_scan_inputs=1, scan_input_directions=[1])],
        "loops", [helper.make_tensor_value_info("s0", F, [3]),
                  helper.make_tensor_value_info("x", F, [5, 3])],
        [helper.make_tensor_value_info("s", F, [3]),
         helper.make_tensor_value_info("history", F, [4, 3]),
         helper.make_tensor_value_info("total", F, [3]),
         helper.make_tensor_value_info("partials", F, [5, 3])],
        [numpy_helper.from_array(np.array(4, np.int64), "m")])
    model, path = _save(tmp_path, graph)
    _compare(model, path, {"s0": rng.standard_normal(3).astype(np.float32),
                           "x": rng.standard_normal((5, 3)).astype(np.float32)})


def test_what_cannot_unroll_is_refused(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("Identity", ["v"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v", F, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [2])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "v0"], ["v"], body=body, name="the_loop")],
        "loop", [helper.make_tensor_value_info("m", TensorProto.INT64, []),
                 helper.make_tensor_value_info("v0", F, [2])],
        [helper.make_tensor_value_info("v", F, [2])])
    _, path = _save(tmp_path, graph)
    with pytest.raises(kiln.CompileError, match=r"node 'the_loop' \(Loop\): the trip "
                                                 r"count M must be a constant"):
        kiln.compile(path)

    # Branches of different shapes on a run-time condition.
    other = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["r"], keepdims=0)], "else", [],
        [helper.make_tensor_value_info("r", F, [])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="the_if",
                          then_branch=_branch("then", "Relu", "t"), else_branch=other)],
        "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, None)])
    _, path = _save(tmp_path, graph)
    with pytest.raises(kiln.CompileError, match=r"node 'the_if' \(If\): with a condition "
                                                 r"known only at run time, both branches"):
        kiln.compile(path)


def test_unsupported_ops_inside_a_body_are_listed(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="the_if",
                          then_branch=helper.make_graph(
                              [helper.make_node("TfIdfVectorizer", ["x"], ["u"], name="inner_unique")],
                              "then", [], [helper.make_tensor_value_info("u", F, None)]),
                          else_branch=_branch("else", "Neg", "e"))],
        "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, None)])
    model, path = _save(tmp_path, graph)
    checked = kiln.check(model)
    assert list(checked.unsupported) == ["TfIdfVectorizer"]
    assert checked.unsupported["TfIdfVectorizer"] == ["inner_unique"]
    with pytest.raises(kiln.CompileError, match=r"TfIdfVectorizer \u00d71 \('inner_unique'\)"):
        kiln.compile(path)


def test_nesting_and_unrolling_are_bounded(tmp_path):
    """A hostile model gets an error, not an exhausted stack or memory:
    If nested 20 deep (Kiln takes 16), and a Loop whose unrolling would
    build 4000 x 60 nodes (Kiln builds at most 200000)."""
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", F, [2, 3])
    branch = _branch("leaf", "Relu", "r0")
    for depth in range(20):
        out = f"r{depth + 1}"
        node = helper.make_node("If", ["c"], [out], then_branch=branch,
                                else_branch=_branch(f"else{depth}", "Neg", out))
        branch = helper.make_graph([node], f"level{depth}", [],
                                   [helper.make_tensor_value_info(out, F, [2, 3])])
    graph = helper.make_graph(list(branch.node), "nested", [c, x],
                              [helper.make_tensor_value_info("r20", F, [2, 3])])
    _, path = _save(tmp_path, graph)
    with pytest.raises(kiln.CompileError, match="is nested more than 16 deep"):
        kiln.compile(path)

    nodes = [helper.make_node("Identity", ["c"], ["c_out"])]
    last = "v"
    for i in range(59):
        nodes.append(helper.make_node("Relu", [last], [f"a{i}"]))
        last = f"a{i}"
    nodes[-1].output[0] = "v_out"
    body = helper.make_graph(
        nodes, "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                        helper.make_tensor_value_info("v", F, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [2])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "v0"], ["v"], body=body)], "loop",
        [helper.make_tensor_value_info("v0", F, [2])],
        [helper.make_tensor_value_info("v", F, [2])],
        [numpy_helper.from_array(np.array(4000, np.int64), "m")])
    _, path = _save(tmp_path, graph)
    with pytest.raises(kiln.CompileError, match="would build more than 200000 nodes"):
        kiln.compile(path)
