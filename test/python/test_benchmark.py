"""tools/benchmark.py: its FLOP count, its rebatching, and one real run of
the harness on the shipped CNN (Kiln and onnxruntime; the peers pointed at
an environment that does not exist). No latency is asserted: performance
is measured by the harness itself, never in a test."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import BUILD, ROOT

spec = importlib.util.spec_from_file_location("benchmark", ROOT / "tools" / "benchmark.py")
benchmark = importlib.util.module_from_spec(spec)
spec.loader.exec_module(benchmark)


def conv_matmul_model(batch=1):
    """x [batch,3,8,8] -> Conv 4x3x3x3 pad 1 -> Reshape [1,256] -> MatMul 256x10."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([1, 256], np.int64), "shape"),
        numpy_helper.from_array(rng.standard_normal((256, 10)).astype(np.float32), "m"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c", "shape"], ["r"]),
        helper.make_node("MatMul", ["r", "m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_count_flops_counts_conv_and_matmul_macs_twice():
    # Conv: 4 x 8 x 8 outputs, 27 MACs each; MatMul: 10 outputs, 256 MACs each.
    assert benchmark.count_flops(conv_matmul_model()) == 2 * (4 * 64 * 27 + 10 * 256)


def test_rebatch_changes_inputs_and_constant_reshapes():
    model = benchmark.rebatch(conv_matmul_model(), 8)
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [8, 3, 8, 8]
    assert benchmark.count_flops(model) == 8 * benchmark.count_flops(conv_matmul_model())
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((8, 3, 8, 8)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    assert y.shape == (8, 10)
    # Each sample of the batch gives what the batch-1 model gives it.
    single = onnxruntime.InferenceSession(conv_matmul_model().SerializeToString(),
                                          providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(y[3:4], single.run(None, {"x": x[3:4]})[0], rtol=1e-5)


def test_harness_runs_kiln_and_onnxruntime_and_reports_missing_peers(tmp_path):
    result = tmp_path / "bench.json"
    svg = tmp_path / "bench.svg"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "benchmark.py"), "--models", "kiln_cnn",
         "--threads", "1", "--warmup", "0", "--repeat", "2", "--build", str(BUILD),
         "--peer-python", str(tmp_path / "no-venv" / "bin" / "python"),
         "--json", str(result), "--svg", str(svg)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(result.read_text())
    rows = {row["engine"]: row for row in report["rows"]}
    assert set(rows) == {"kiln", "onnxruntime", "iree", "tvm"}
    assert rows["kiln"]["outputs"] == "match"
    assert rows["kiln"]["median_ms"] > 0 and rows["kiln"]["rss_mb"] > 0
    assert rows["kiln"]["ratio"] == rows["kiln"]["median_ms"] / rows["onnxruntime"]["median_ms"]
    for peer in ("iree", "tvm"):
        assert rows[peer]["error"] == "not installed: run tools/setup.sh --bench"
    assert report["peaks"]["1"] > 0
    # One table row per engine on stdout, and a plot.
    assert proc.stdout.count("| kiln_cnn | 1 | 1 |") == 4
    assert svg.read_text().startswith("<svg")


def test_quantised_model_names(tmp_path):
    """kiln_cnn-qdq and kiln_cnn-qop: the model quantised by onnxruntime in
    each format, a file every engine loads; transformer-dyn, by
    quantize_dynamic."""
    qdq = onnx.load(benchmark.build_model("kiln_cnn-qdq", 1, tmp_path))
    assert {n.op_type for n in qdq.graph.node} >= {"QuantizeLinear", "DequantizeLinear",
                                                    "Conv"}
    qop = onnx.load(benchmark.build_model("kiln_cnn-qop", 1, tmp_path))
    ops = {(n.domain, n.op_type) for n in qop.graph.node}
    assert ("", "QLinearConv") in ops and ("com.microsoft", "QLinearAdd") in ops
    # -dyn: quantize_dynamic's int8 MatMuls of activations quantised at run time.
    dyn = onnx.load(benchmark.build_model("transformer-dyn", 1, tmp_path))
    assert {n.op_type for n in dyn.graph.node} >= {"DynamicQuantizeLinear",
                                                    "MatMulInteger"}


def test_busy_core_spins_only_while_active():
    """--busy-core's neighbour: a process on the last CPU while the engine
    runs, gone after; an inactive one starts nothing."""
    import os
    with benchmark.BusyCore(False) as idle:
        assert idle.proc is None
    with benchmark.BusyCore(True) as busy:
        pid = busy.proc.pid
        assert busy.proc.poll() is None
        assert os.sched_getaffinity(pid) == {max(os.sched_getaffinity(0))}
    assert busy.proc.poll() is not None
    assert benchmark.threads_label({"threads": 2, "busy_core": True}) == "2, busy core"
    assert benchmark.threads_label({"threads": 2}) == 2
