"""A model whose shapes ask for more than Kiln compiles (16 GiB per tensor)
is refused with a message naming the node, and kiln-compile's memory stays
bounded: a 200-byte ConstantOfShape to 10^12 elements used to abort with
"LLVM ERROR: out of memory" (issue 23), and would have taken a Python
process calling kiln.compile down with it."""

import resource
import subprocess

import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln_testing import KILN_COMPILE

HUGE = [1000000, 1000000]  # 10^12 elements


def shape_constant(name="shape"):
    return helper.make_tensor(name, TensorProto.INT64, [2], HUGE)


def constant_of_shape():
    node = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill",
                            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))
    return [node], [], [shape_constant()]


def expand():
    node = helper.make_node("Expand", ["x", "shape"], ["y"], name="grow")
    return [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])], \
        [shape_constant()]


def tile():
    repeats = helper.make_tensor("repeats", TensorProto.INT64, [2], HUGE)
    node = helper.make_node("Tile", ["x", "repeats"], ["y"], name="tiles")
    return [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])], \
        [repeats]


def model(build):
    nodes, inputs, initializers = build()
    graph = helper.make_graph(nodes, "huge", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def limit_memory():
    limit = 4 << 30  # 4 GiB of address space: far below 10^12 floats
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize("build, node, op", [
    (constant_of_shape, "fill", "ConstantOfShape"),
    (expand, "grow", "Expand"),
    (tile, "tiles", "Tile"),
])
def test_huge_tensor_is_refused_within_bounded_memory(build, node, op, tmp_path):
    path = tmp_path / "huge.onnx"
    onnx.save(model(build), str(path))
    proc = subprocess.run([str(KILN_COMPILE), str(path), "-o", str(tmp_path / "m.so")],
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=limit_memory)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert (f"kiln-compile: error: {node} ({op}): makes a tensor of type "
            "tensor<1000000x1000000xf32> (4000000000000 bytes), above Kiln's limit "
            "of 16 GiB per tensor") in proc.stderr
    assert "LLVM ERROR" not in proc.stderr and "Stack dump" not in proc.stderr
    # The same through Python: an exception, the process goes on.
    with pytest.raises(kiln.CompileError, match="above Kiln's limit of 16 GiB"):
        kiln.compile(path, tmp_path / "m2.so")
