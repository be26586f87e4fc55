"""The blocked layout NCHWc (kiln-compile --layout=blocked, the default):
convolutions and pools run on N x C1 x H x W x c tensors, with layout conversions only
where the blocked region begins and ends, and the results still match
onnxruntime (rtol 1e-3, atol 1e-4).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from kiln_testing import KILN_COMPILE, assert_matches_onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))

import light_models  # noqa: E402
from common import GraphBuilder, tensor_info  # noqa: E402

RTOL = 1e-3
ATOL = 1e-4
CONVS = ("graph.conv", "graph.fused_conv")


def graph_report(model_path, workdir, *args):
    """({op name: count} after the graph passes, the report, the graph IR)."""
    out = Path(workdir) / "graph.mlir"
    proc = subprocess.run([str(a) for a in (KILN_COMPILE, model_path, "--report",
                                            "--emit=graph", "-o", out, *args)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"^graph: \d+ ops \((.*)\)$", proc.stderr, re.M)
    counts = {name: int(n) for name, n in re.findall(r"([\w.]+): (\d+)", m.group(1))}
    return counts, proc.stderr, out.read_text()


def resnet_blocks():
    """ResNet-50's shapes in small: a 7x7/2 stem of 20 channels (not a
    multiple of any block), a 3x3/2 max pool, a bottleneck with a strided
    1x1 projection shortcut, an identity bottleneck, a global average pool."""
    g = GraphBuilder(seed=5)
    y = g.op("Relu", [g.conv_bn("x", 3, 20, 7, stride=2, hint="stem")])
    y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def bottleneck(x, cin, mid, cout, stride, project):
        h = g.op("Relu", [g.conv_bn(x, cin, mid, 1, hint="a")])
        h = g.op("Relu", [g.conv_bn(h, mid, mid, 3, stride=stride, hint="b")])
        h = g.conv_bn(h, mid, cout, 1, hint="c")
        shortcut = g.conv_bn(x, cin, cout, 1, stride=stride, hint="proj") if project else x
        return g.op("Relu", [g.op("Add", [h, shortcut])])

    y = bottleneck(y, 20, 12, 40, 2, True)
    y = bottleneck(y, 40, 12, 40, 1, False)
    y = g.op("GlobalAveragePool", [y])
    return g.model("resnet_blocks", [tensor_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                   [tensor_info(y, TensorProto.FLOAT, [1, 40, 1, 1])])


@pytest.mark.parametrize("block", [16, 8, 4])
def test_resnet_blocks_blocked(tmp_path, block):
    model = resnet_blocks()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", f"--layout-block={block}"]
    counts, report, graph = graph_report(path, tmp_path, *args)
    assert f"layout: blocked NCHWc, c={block}" in report
    # Every convolution and the pool are blocked; one conversion in (the
    # input), one out (before the global pool, which stays NCHW).
    assert not [op for op in CONVS + ("graph.max_pool",) if op in counts], counts
    assert counts["graph.blocked_conv"] == 8
    assert counts["graph.blocked_max_pool"] == 1
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    assert f"#graph.blocked<c = {block}>" in graph

    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=RTOL, atol=ATOL,
                               compile_args=args)


def test_op_without_layout_gets_conversions(tmp_path):
    """A Softmax over the channels between two convolutions cannot take the
    layout: the blocked region ends before it and starts again after it."""
    g = GraphBuilder(seed=7)
    y = g.op("Relu", [g.conv_bn("x", 8, 24, 3, hint="a")])
    y = g.op("Softmax", [y], axis=1)
    y = g.conv_bn(y, 24, 16, 3, hint="b")
    model = g.model("softmax_between", [tensor_info("x", TensorProto.FLOAT, [1, 8, 12, 12])],
                    [tensor_info(y, TensorProto.FLOAT, [1, 16, 12, 12])])
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", "--layout-block=16"]
    counts, _, _ = graph_report(path, tmp_path, *args)
    assert counts["graph.blocked_conv"] == 2
    assert counts["graph.to_blocked"] == 2
    assert counts["graph.from_blocked"] == 2
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 8, 12, 12)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=RTOL, atol=ATOL,
                               compile_args=args)


def test_blocked_is_the_default(tmp_path):
    """With no flag the layout is blocked at the target's vector width (the
    host's: AVX-512 here gives 16, AVX2 8); --layout=nchw turns it off."""
    path = tmp_path / "model.onnx"
    onnx.save(resnet_blocks(), str(path))
    counts, report, _ = graph_report(path, tmp_path)
    assert re.search(r"^layout: blocked NCHWc, c=\d+$", report, re.M), report
    assert counts["graph.blocked_conv"] == 8
    assert not [op for op in CONVS if op in counts], counts
    counts, report, _ = graph_report(path, tmp_path, "--layout=nchw")
    assert "layout: nchw" in report
    assert not [op for op in counts if "blocked" in op], counts


def test_unknown_layout_is_refused(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(resnet_blocks(), str(path))
    proc = subprocess.run([str(KILN_COMPILE), str(path), "--layout=nhwc", "--emit=graph",
                           "-o", str(tmp_path / "g.mlir")], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "unknown layout 'nhwc'; expected auto, blocked or nchw" in proc.stderr


@pytest.mark.large
def test_resnet50_convolutions_are_blocked(tmp_path, request):
    """Every one of ResNet-50's 53 convolutions is blocked, with no layout
    conversion between consecutive ones: the only conversions are the
    input's and the one before the final average pool (a 7x7 AveragePool in
    this model), which stays NCHW."""
    if not os.environ.get("KILN_LARGE_TESTS") and \
            "large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("large model: run with -m large or KILN_LARGE_TESTS=1")
    model = light_models.build("resnet50")
    path = tmp_path / "resnet50.onnx"
    onnx.save(model, str(path))
    args = ["--layout=blocked", "--layout-block=16"]
    counts, _, graph = graph_report(path, tmp_path, *args)
    assert not [op for op in CONVS if op in counts], counts
    assert counts["graph.blocked_conv"] == 53
    assert counts["graph.to_blocked"] == 1
    assert counts["graph.from_blocked"] == 1
    # The one from_blocked feeds the average pool.
    (converted,) = re.findall(r"(%\w+) = graph.from_blocked", graph)
    assert re.search(rf"graph.average_pool {converted} ", graph)
    assert_matches_onnxruntime(model, light_models.feeds(model), tmp_path / "run",
                               rtol=RTOL, atol=ATOL, compile_args=args)


def test_python_compile_takes_the_layout(tmp_path):
    import kiln

    path = kiln.compile(resnet_blocks(), tmp_path / "graph.mlir", emit="graph",
                        layout="blocked", layout_block=8)
    graph = Path(path).read_text()
    assert "graph.blocked_conv" in graph
    assert "#graph.blocked<c = 8>" in graph
    with pytest.raises(kiln.CompileError, match="unknown layout 'nhwc'"):
        kiln.compile(resnet_blocks(), tmp_path / "bad.mlir", emit="graph", layout="nhwc")
