"""The up-front model check (kiln.check, kiln-compile --check) and the errors
a person reads for an unsupported model: grouped by op type, an opset newer
than Kiln knows, every attribute problem of a model at once."""

import subprocess

import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln_testing import KILN_COMPILE

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])


def _model(nodes, outputs, initializers=(), opset=17, inputs=(X,), domains=()):
    graph = helper.make_graph(nodes, "check", list(inputs), outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _out(name, shape=None):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


@pytest.fixture(scope="module")
def unsupported_model():
    """Five TfIdfVectorizer in a chain, StringNormalizer twice, an op of a custom
    domain, and a Relu after the custom op that cannot be checked."""
    nodes, last = [], "x"
    for i in range(5):
        nodes.append(helper.make_node("TfIdfVectorizer", [last], [f"s{i}"],
                                      name=f"/features/{i}/attn/TfIdfVectorizer"))
        last = f"s{i}"
    nodes.append(helper.make_node("MyOp", [last], ["c"], name="custom", domain="com.example"))
    nodes.append(helper.make_node("Relu", ["c"], ["y"], name="after_custom"))
    for i in range(2):
        nodes.append(helper.make_node("StringNormalizer", ["boxes", "scores"], [f"l{i}"],
                                      name=f"nms{i}"))
    boxes = helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4])
    return _model(nodes, [_out("y"), _out("l0"), _out("l1")],
                  inputs=(X, boxes, scores), domains=["com.example"])


def test_compile_error_groups_unsupported_operators(unsupported_model, tmp_path):
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(unsupported_model, tmp_path / "m.so")
    message = str(error.value)
    assert ("unsupported ONNX operators (ai.onnx opset 17): TfIdfVectorizer \u00d75 "
            "(first: '/features/0/attn/TfIdfVectorizer', '/features/1/attn/TfIdfVectorizer', "
            "'/features/2/attn/TfIdfVectorizer'), com.example.MyOp \u00d71 ('custom'), "
            "StringNormalizer \u00d72 ('nms0', 'nms1')") in message
    assert "domain 'com.example' is not ai.onnx" in message
    # One line for all of them, not one per node.
    assert message.count("TfIdfVectorizer") == 4


def test_check_lists_unsupported_operators(unsupported_model, tmp_path):
    checked = kiln.check(unsupported_model)
    assert not checked and not checked.ok
    assert checked.nodes == 9 and checked.opset == 17
    assert list(checked.unsupported) == ["TfIdfVectorizer", "com.example.MyOp", "StringNormalizer"]
    assert checked.unsupported["TfIdfVectorizer"] == [
        f"/features/{i}/attn/TfIdfVectorizer" for i in range(5)]
    assert checked.unsupported["StringNormalizer"] == ["nms0", "nms1"]
    assert checked.errors == []
    # The Relu reads the custom op's output: it cannot be checked.
    assert checked.unchecked == 1
    assert "TfIdfVectorizer \u00d75" in str(checked)

    # The same from the command line, from a file; nothing is written.
    path = tmp_path / "m.onnx"
    onnx.save(unsupported_model, str(path))
    proc = subprocess.run([str(KILN_COMPILE), "--check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(f"{path}: 9 node(s), ai.onnx opset 17: not supported")
    assert "  StringNormalizer \u00d72: 'nms0', 'nms1'" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
    assert kiln.check(path).unsupported == checked.unsupported


def test_check_reports_every_attribute_problem():
    """Two independent nodes with attribute values Kiln refuses are both
    reported (the check goes on past the first); a node reading a failed one
    is counted as unchecked; the others are checked and pass."""
    sizes = helper.make_tensor("sizes", TensorProto.INT64, [4], [1, 3, 16, 16])
    nodes = [
        helper.make_node("Resize", ["x", "", "", "sizes"], ["big"], name="resize_lanczos",
                         mode="lanczos"),
        helper.make_node("Relu", ["big"], ["big_relu"], name="after_resize"),
        helper.make_node("Softmax", ["x"], ["bn"], name="softmax_axis", axis=7),
        helper.make_node("Relu", ["x"], ["y"], name="fine"),
    ]
    model = _model(nodes, [_out("y"), _out("big_relu"), _out("bn")], [sizes])
    checked = kiln.check(model)
    assert not checked.ok and checked.unsupported == {}
    assert len(checked.errors) == 2, checked.report
    assert checked.errors[0].startswith("node 'resize_lanczos' (Resize): mode 'lanczos'")
    assert checked.errors[1].startswith("node 'softmax_axis' (Softmax): axis 7"), \
        checked.errors[1]
    assert checked.unchecked == 1


def test_check_passes_a_supported_model(tmp_path):
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [_out("y", [1, 3, 8, 8])])
    checked = kiln.check(model)
    assert checked and checked.errors == [] and checked.unsupported == {}
    assert checked.report == "1 node(s), ai.onnx opset 17: Kiln supports the model\n"
    path = tmp_path / "ok.onnx"
    onnx.save(model, str(path))
    proc = subprocess.run([str(KILN_COMPILE), "--check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Kiln supports the model" in proc.stdout


def test_opset_newer_than_kiln_knows(tmp_path):
    """A later opset may change what an operator means: refused, naming a
    node, the domain, the version and the newest Kiln reads."""
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="r")],
                   [_out("y", [1, 3, 8, 8])], opset=9999)
    with pytest.raises(kiln.CompileError) as error:
        kiln.compile(model, tmp_path / "m.so")
    assert ("the model imports ai.onnx opset 9999, newer than Kiln knows (the "
            "newest it reads is 28): node 'r' (Relu) may mean something Kiln "
            "cannot know") in str(error.value)
    checked = kiln.check(model)
    assert not checked.ok and checked.opset == 9999
    assert "opset 9999" in checked.errors[0]


def test_check_malformed_inputs(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08this is not a protobuf\xff\xff\xff")
    checked = kiln.check(garbage)
    assert not checked.ok and "not a valid ONNX model" in checked.errors[0]
    missing = kiln.check(tmp_path / "missing.onnx")
    assert not missing.ok and "cannot read ONNX model" in missing.errors[0]
    with pytest.raises(TypeError):
        kiln.check(42)
