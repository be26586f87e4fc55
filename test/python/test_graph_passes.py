"""The graph passes on whole models: kiln-compile --report shows the op counts
before ("imported") and after ("graph") kiln-graph-optimize. BatchNormalization
must fold into the convolutions, and every activation and residual Add after a
convolution must end up inside a graph.fused_conv, with results that still
match onnxruntime.
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

# Ops that must not be left standalone after the graph passes in a CNN whose
# activations all follow a convolution.
ACTIVATIONS = ("graph.relu", "graph.leaky_relu", "graph.sigmoid", "graph.tanh",
               "graph.hard_sigmoid", "graph.hard_swish", "graph.gelu",
               "graph.max", "graph.min")


def report(model_path, workdir, *args):
    """{stage: {op name: count}} from kiln-compile --report, and the graph IR.
    The fusion tests pass --layout=nchw to see graph.fused_conv, which the
    blocked layout (the default) turns into graph.blocked_conv."""
    out = Path(workdir) / "graph.mlir"
    stderr = _run_report([KILN_COMPILE, model_path, "--report",
                          "--emit=graph", "-o", out, *args])
    stages = {}
    for line in stderr.splitlines():
        m = re.match(r"(\w+): \d+ ops \((.*)\)$", line)
        if m:
            stages[m.group(1)] = {name: int(n) for name, n in
                                  re.findall(r"([\w.]+): (\d+)", m.group(2))}
    return stages, out.read_text()


def _run_report(args):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def residual_cnn():
    """Conv+BN+Relu, Conv+BN, residual Add, Relu; then a Conv+BN+Clip(0, 6)."""
    g = GraphBuilder(seed=3)
    x = "x"
    y = g.op("Relu", [g.conv_bn(x, 16, 16, 3, hint="a")])
    y = g.conv_bn(y, 16, 16, 3, hint="b")
    y = g.op("Relu", [g.op("Add", [y, x])])
    y = g.conv_bn(y, 16, 32, 1, hint="c")
    y = g.op("Clip", [y, g.const("lo", np.float32(0)), g.const("hi", np.float32(6))])
    return g.model("residual_cnn", [tensor_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
                   [tensor_info(y, TensorProto.FLOAT, [1, 32, 16, 16])])


def test_residual_block_is_fused(tmp_path):
    model = residual_cnn()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    stages, graph = report(path, tmp_path, "--layout=nchw")
    assert stages["imported"]["graph.batch_norm"] == 3
    assert stages["imported"]["graph.relu"] == 2
    after = stages["graph"]
    assert "graph.batch_norm" not in after
    assert "graph.conv" not in after
    assert "graph.add" not in after
    assert not [op for op in ACTIVATIONS if op in after], after
    assert after["graph.fused_conv"] == 3
    assert "residual %arg0 activation relu" in graph
    assert "activation clip {activation_params = array<f32: 0.000000e+00, 6.000000e+00>" in graph

    # By default the fused convolutions are blocked and keep their epilogues.
    stages, graph = report(path, tmp_path)
    assert stages["graph"]["graph.blocked_conv"] == 3
    assert not [op for op in ("graph.conv", "graph.fused_conv", "graph.add") + ACTIVATIONS
                if op in stages["graph"]], stages["graph"]
    assert re.search(r"graph.blocked_conv .* residual %\w+ activation relu", graph)

    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((1, 16, 16, 16)).astype(np.float32)}
    assert_matches_onnxruntime(model, feeds, tmp_path / "run", rtol=1e-3, atol=1e-4)


@pytest.mark.large
def test_resnet50_has_no_batch_norm_or_standalone_activation(tmp_path, request):
    if not os.environ.get("KILN_LARGE_TESTS") and \
            "large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("large model: run with -m large or KILN_LARGE_TESTS=1")
    path = tmp_path / "resnet50.onnx"
    onnx.save(light_models.build("resnet50"), str(path))
    stages, _ = report(path, tmp_path, "--layout=nchw")
    assert stages["imported"]["graph.batch_norm"] > 0
    after = stages["graph"]
    assert "graph.batch_norm" not in after
    assert not [op for op in ACTIVATIONS if op in after], after
    assert "graph.add" not in after  # every residual Add is in a fused_conv
    # The 4 projection shortcuts (Conv + BN) stay plain convolutions with a
    # folded bias: they are the residual operand of a fused_conv.
    assert after["graph.conv"] == 4
    assert after["graph.fused_conv"] + 4 == stages["imported"]["graph.conv"]
