"""A model whose shapes ask for more than Kiln compiles (16 GiB per tensor)
is refused with a message naming the node, and kiln-compile's memory stays
bounded: a 200-byte ConstantOfShape to 10^12 elements used to abort with
"LLVM ERROR: out of memory" (issue 23), and would have taken a Python
process calling kiln.compile down with it."""

import ctypes
import os
import resource
import subprocess
import threading

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


LIMIT = 4 << 30  # 4 GiB: far below 10^12 floats


def sanitized():
    """Whether this process runs with AddressSanitizer (tools/test.sh
    --sanitizers preloads it): ASan reserves terabytes of address space for
    its shadow memory, so there a limit on the address space cannot hold and
    the child's peak resident memory is checked alone."""
    return hasattr(ctypes.CDLL(None), "__asan_init")


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_bounded(args):
    """Runs `args` under the 4 GiB limit (killed after 120 s); its exit
    status, stderr and peak resident memory in bytes."""
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(args, stdout=devnull, stderr=subprocess.PIPE,
                                preexec_fn=None if sanitized() else limit_memory)
        timer = threading.Timer(120, proc.kill)
        timer.start()
        try:
            stderr = proc.stderr.read().decode(errors="replace")
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, stderr, usage.ru_maxrss * 1024


@pytest.mark.parametrize("build, node, op", [
    (constant_of_shape, "fill", "ConstantOfShape"),
    (expand, "grow", "Expand"),
    (tile, "tiles", "Tile"),
])
def test_huge_tensor_is_refused_within_bounded_memory(build, node, op, tmp_path):
    path = tmp_path / "huge.onnx"
    onnx.save(model(build), str(path))
    code, stderr, peak = run_bounded([str(KILN_COMPILE), str(path), "-o",
                                      str(tmp_path / "m.so")])
    assert code == 1, stderr[-2000:]
    assert (f"kiln-compile: error: {node} ({op}): makes a tensor of type "
            "tensor<1000000x1000000xf32> (4000000000000 bytes), above Kiln's limit "
            "of 16 GiB per tensor") in stderr
    assert "LLVM ERROR" not in stderr and "Stack dump" not in stderr
    assert peak < LIMIT, f"kiln-compile peaked at {peak} bytes"
    # The same through Python: an exception, the process goes on.
    with pytest.raises(kiln.CompileError, match="above Kiln's limit of 16 GiB"):
        kiln.compile(path, tmp_path / "m2.so")
