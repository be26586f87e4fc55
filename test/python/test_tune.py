"""Tests of auto-tuning: the kernel listing, the tuning database that
kiln-compile and kiln.compile read, and kiln.tune.

The model is small (a convolution and two matmuls) so that a 16-trial run
takes seconds; every tuned build is still compared with onnxruntime.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln
from kiln_testing import BUILD

RTOL = 1e-3
ATOL = 1e-4


def _tune_model():
    """x [1,4,10,10] -> Conv(16, 3x3) -> Relu -> reshape [16,64] -> MatMul(64x32)
    -> MatMul(32x64) -> "y" [16,64]."""
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array(rng.standard_normal((16, 4, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([16, 64], np.int64), "shape"),
        numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32) / 8, "m1"),
        numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32) / 8, "m2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "m1"], ["h"], name="mm1"),
        helper.make_node("MatMul", ["h", "m2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "tune",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 64])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


@pytest.fixture(scope="module")
def tune_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "tune.onnx"
    onnx.save(_tune_model(), path)
    return path


@pytest.fixture(scope="module")
def feeds():
    return {"x": np.random.default_rng(3).standard_normal((1, 4, 10, 10)).astype(np.float32)}


def _assert_matches_onnxruntime(path, model_path, feeds):
    session = onnxruntime.InferenceSession(str(model_path),
                                           providers=["CPUExecutionProvider"])
    expected = session.run(["y"], feeds)[0]
    with kiln.load(path, num_threads=1) as model:
        got = model.run(feeds)["y"]
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


def _kernels(model_path, tmp_path, **options):
    listing = kiln.compile(model_path, tmp_path / "kernels.json", emit="kernels", **options)
    with open(listing) as f:
        return json.load(f)


def _write_db(path, records):
    with open(path, "w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


# --- the kernel listing and the database ------------------------------------------

def test_list_kernels(tune_model, tmp_path):
    listed = _kernels(tune_model, tmp_path)
    assert listed["target"].startswith("x86_64-")
    kinds = sorted(k["kind"] for k in listed["kernels"])
    assert kinds == ["contraction", "contraction", "conv2d"]
    # In the blocked layout (the default) the convolution is the tagged
    # generic of a graph.blocked_conv: its 4 input channels are one block of
    # 4, its 16 filters one block (of the host's vector width or more), no
    # padding: an 8x8 output.
    conv = next(k for k in listed["kernels"] if k["kind"] == "conv2d")
    assert conv["signature"].startswith("linalg.generic tensor<1x1x10x10x4xf32>, "
                                        "tensor<1x1x3x3x4x16xf32> -> "
                                        "tensor<1x1x8x8x16xf32>")
    # A 3x3 stride-1 layer with constant weights: direct or Winograd.
    assert conv["space"]["algorithm"] == ["direct", "winograd-2x3", "winograd-4x3",
                                          "winograd-6x3"]
    assert conv["nodes"] == ["conv (Conv)"] and conv["count"] == 1
    assert conv["flops"] == 2 * 16 * 4 * 9 * 8 * 8
    # M = the 8 output columns: register blocks of up to 8 rows.
    assert conv["space"]["rows"] == [1, 2, 4, 8]
    matmul = next(k for k in listed["kernels"] if "16x64xf32>, tensor<64x32" in k["signature"])
    assert matmul["flops"] == 2 * 16 * 64 * 32
    assert "algorithm" not in matmul["space"]
    # Each kernel's module compiles alone.
    module = tmp_path / "kernel.mlir"
    module.write_text(matmul["module"])
    with kiln.load(kiln.compile(module, tmp_path / "kernel.so")) as alone:
        # The weight stays a constant; the activation is the input.
        assert [i.shape for i in alone.inputs] == [(16, 64)]
    # The blocked convolution's module keeps its tag and its weight
    # constant, so it compiles (and is timed) as the model's convolution, by
    # Winograd too.
    module.write_text(conv["module"])
    assert "kiln.blocked_conv" in conv["module"]
    db = tmp_path / "winograd.jsonl"
    _write_db(db, [{"kernel": conv["signature"], "target": listed["target"],
                    "config": {"algorithm": "winograd-4x3"}}])
    with kiln.load(kiln.compile(module, tmp_path / "conv.so", tuning_db=db)) as alone:
        assert [i.shape for i in alone.inputs] == [(1, 1, 10, 10, 4)]


def test_list_kernels_nchw(tune_model, tmp_path):
    listed = _kernels(tune_model, tmp_path, layout="nchw")
    conv = next(k for k in listed["kernels"] if k["kind"] == "conv2d")
    assert conv["signature"].startswith("linalg.conv_2d_nchw_fchw tensor<1x4x10x10xf32>")
    assert conv["space"]["algorithm"] == ["im2col", "direct", "winograd-2x3",
                                          "winograd-4x3", "winograd-6x3"]
    # M = 16 filters (im2col): register blocks of up to 16 rows.
    assert conv["space"]["rows"] == [1, 2, 4, 8, 16]


def test_database_round_trip(tune_model, feeds, tmp_path):
    """A configuration in the database reaches the code: the report names it,
    the code changes, and the results stay right."""
    listed = _kernels(tune_model, tmp_path)
    target = listed["target"]
    records = []
    for kernel in listed["kernels"]:
        config = ({"algorithm": "direct", "parallel": False} if kernel["kind"] == "conv2d" else
                  {"rows": 2, "vectors": 1, "k_tile": 2, "parallel": False})
        records.append({"kernel": kernel["signature"], "target": target,
                        "config": config, "ms": 0.5})
        # A slower record of the same kernel is not chosen.
        records.append({"kernel": kernel["signature"], "target": target,
                        "config": {"rows": 1}, "ms": 9.0})
    db = tmp_path / "db.jsonl"
    _write_db(db, records)

    tuned = kiln.compile(tune_model, tmp_path / "tuned.so", tuning_db=db)
    _assert_matches_onnxruntime(tuned, tune_model, feeds)

    # The compile returns the records it applied as data (the tuner checks
    # them): the faster record of each kernel, with its file and line.
    from kiln import _kiln
    options = _kiln.compiler.CompileOptions()
    options.tuning_db = str(db)
    result = _kiln.compiler.compile_file(str(tune_model), str(tmp_path / "data.so"),
                                         options)
    assert result.ok, result.error
    applied = sorted((c.kernel, json.loads(c.configuration), c.database, c.line)
                     for c in result.kernel_configs)
    assert applied == sorted((r["kernel"], r["config"], str(db), line)
                             for line, r in enumerate(records, 1) if r["ms"] == 0.5)

    report = subprocess.run(
        [BUILD / "bin" / "kiln-compile", tune_model, "-o", tmp_path / "r.so",
         "--tuning-db", db, "--report"], capture_output=True, text=True, check=True).stderr
    assert f"tuning: 3 kernel(s) configured by {db} for {target}" in report
    assert '{"algorithm":"direct","parallel":false}' in report
    assert report.count('{"k_tile":2,"parallel":false,"rows":2,"vectors":1}') == 2
    # Without parallel tiles, no OpenMP fork is left in the code.
    default_ir = kiln.compile(tune_model, tmp_path / "d.ll", emit="llvm-ir")
    tuned_ir = kiln.compile(tune_model, tmp_path / "t.ll", emit="llvm-ir", tuning_db=db)
    assert "__kmpc_fork_call" in open(default_ir).read()
    assert "__kmpc_fork_call" not in open(tuned_ir).read()


def test_bad_databases(tune_model, tmp_path):
    listed = _kernels(tune_model, tmp_path)
    conv = next(k for k in listed["kernels"] if k["kind"] == "conv2d")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"kernel": "k", "target": "t", "config": {}}\nnot json\n')
    with pytest.raises(kiln.CompileError, match=r"garbage.jsonl:2: not a JSON value"):
        kiln.compile(tune_model, tuning_db=garbage)
    with pytest.raises(ValueError, match=r"garbage.jsonl:2: not a JSON value"):
        kiln.tune(tune_model, garbage, trials=1, progress=False)

    fields = tmp_path / "fields.jsonl"
    _write_db(fields, [{"kernel": "k", "config": {}}])
    with pytest.raises(kiln.CompileError, match=r'fields.jsonl:1: a record needs "kernel" and "target"'):
        kiln.compile(tune_model, tuning_db=fields)

    outside = tmp_path / "outside.jsonl"
    _write_db(outside, [{"kernel": conv["signature"], "target": listed["target"],
                         "config": {"algorithm": "winograd"}, "ms": 1.0}])
    with pytest.raises(kiln.CompileError,
                       match=r"conv \(Conv\): tuning database .*outside.jsonl:1: value "
                             r'"winograd" of knob \'algorithm\' is not in the kernel\'s '
                             r'search space \["direct","winograd-2x3"'):
        kiln.compile(tune_model, tuning_db=outside)

    unknown = tmp_path / "unknown.jsonl"
    _write_db(unknown, [{"kernel": conv["signature"], "target": listed["target"],
                         "config": {"unroll": 4}, "ms": 1.0}])
    with pytest.raises(kiln.CompileError, match=r"the kernel has no knob 'unroll'"):
        kiln.compile(tune_model, tuning_db=unknown)

    with pytest.raises(kiln.CompileError, match=r"cannot read the tuning database .*missing.jsonl"):
        kiln.compile(tune_model, tuning_db=tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="does not exist"):
        kiln.tune(tune_model, tmp_path / "no" / "db.jsonl", trials=1, progress=False)


# --- kiln.tune ------------------------------------------------------------------

def _prime_matmul(tmp_path):
    """A MatMul of 37 rows (a prime) by constant 64x96 weights: its path, the
    kernel listing and its contraction, feeds and onnxruntime's output."""
    rng = np.random.default_rng(11)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "prime",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [37, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [37, 96])],
        [numpy_helper.from_array(rng.standard_normal((64, 96)).astype(np.float32) / 8, "w")])
    model_path = tmp_path / "prime.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), model_path)
    listed = _kernels(model_path, tmp_path)
    (kernel,) = [k for k in listed["kernels"] if k["kind"] == "contraction"]
    feeds = {"x": rng.standard_normal((37, 64)).astype(np.float32)}
    expected = onnxruntime.InferenceSession(
        str(model_path), providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    return model_path, listed, kernel, feeds, expected


def test_row_blocks_that_do_not_divide_m(tmp_path):
    """A product of 37 rows (prime): the space lists every row block up to
    16, not only 1 and 37's divisors; a block that does not divide M splits
    the rows into whole blocks and a remainder, and the results still match
    onnxruntime."""
    model_path, listed, kernel, feeds, expected = _prime_matmul(tmp_path)
    assert kernel["space"]["rows"] == list(range(1, 17))
    irs = {}
    for rows in (1, 6, 8):
        db = tmp_path / f"rows{rows}.jsonl"
        _write_db(db, [{"kernel": kernel["signature"], "target": listed["target"],
                        "config": {"rows": rows, "vectors": 1}, "ms": 0.01}])
        irs[rows] = open(kiln.compile(model_path, tmp_path / f"rows{rows}.mlir",
                                      emit="llvm", tuning_db=db)).read()
        path = kiln.compile(model_path, tmp_path / f"rows{rows}.so", tuning_db=db)
        with kiln.load(path, num_threads=1) as compiled:
            np.testing.assert_allclose(compiled.run(feeds)["y"], expected,
                                       rtol=RTOL, atol=ATOL)
    assert len(set(irs.values())) == 3


def test_reduction_step_of_packed_product(tmp_path):
    """A product whose weights are packed into panels ignores a configured
    reduction step (k_tile): its tiles would become dot products, 20x
    slower (a 197x768x768 product, 0.9 -> 20.6 ms). The code is the
    default's, and the results match."""
    model_path, listed, kernel, feeds, expected = _prime_matmul(tmp_path)
    db = tmp_path / "k4.jsonl"
    _write_db(db, [{"kernel": kernel["signature"], "target": listed["target"],
                    "config": {"k_tile": 4}, "ms": 0.01}])
    default_ir = open(kiln.compile(model_path, tmp_path / "d.mlir", emit="llvm")).read()
    tuned_ir = open(kiln.compile(model_path, tmp_path / "k4.mlir", emit="llvm",
                                 tuning_db=db)).read()
    assert "vector.reduce.fadd" not in tuned_ir
    assert tuned_ir == default_ir
    with kiln.load(kiln.compile(model_path, tmp_path / "k4.so", tuning_db=db),
                   num_threads=1) as compiled:
        np.testing.assert_allclose(compiled.run(feeds)["y"], expected, rtol=RTOL, atol=ATOL)


def test_search_space_spellings():
    """Configurations that make the same code count once, and no others: a
    blocked convolution's "direct" algorithm is register-blocked tiles,
    whose knobs count (they once collapsed into one candidate, and RegNet's
    convolutions had nothing to tune); an NCHW convolution's is a loop nest
    without them."""
    from kiln.tune import _Space
    blocked = _Space({"algorithm": ["direct"], "rows": [1, 2, 4, 8], "vectors": [1, 2],
                      "vector_width": [16, 8], "k_tile": [1, 2],
                      "parallel": [False, True]}, 16)
    assert blocked.canonical({"algorithm": "direct", "rows": 4, "k_tile": 2}) == \
        {"algorithm": "direct", "rows": 4, "k_tile": 2}
    assert blocked.canonical({"algorithm": "direct", "vector_width": 8, "vectors": 2}) == \
        {"algorithm": "direct", "vector_width": 16, "vectors": 1}
    nchw = _Space({"algorithm": ["im2col", "direct"], "rows": [1, 2], "vectors": [1, 2],
                   "vector_width": [16, 8]}, 16)
    assert nchw.canonical({"algorithm": "direct", "rows": 2}) == {"algorithm": "direct"}
    assert nchw.canonical({"algorithm": "im2col", "rows": 2}) == {"algorithm": "im2col", "rows": 2}
    nest = _Space({"parallel": [False, True], "tiles": [2, 4, 8]}, 16)
    assert nest.canonical({"parallel": False, "tiles": 4}) == {"parallel": False}
    assert nest.canonical({"parallel": True, "tiles": 4}) == {"parallel": True, "tiles": 4}
    # Random draws from the blocked space reach more than one configuration.
    import random
    rng = random.Random(0)
    assert len({json.dumps(blocked.random(rng), sort_keys=True) for _ in range(50)}) > 10


def test_tuner_binds_threads(monkeypatch):
    """The tuner binds the OpenMP threads of what it measures, as kiln-run
    does, unless the caller placed them or one thread runs; and restores
    the environment."""
    from kiln.tune import _AFFINITY_VARIABLES, _threads_bound
    for name in _AFFINITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with _threads_bound(2):
        assert os.environ["OMP_PROC_BIND"] == "spread"
    assert "OMP_PROC_BIND" not in os.environ
    with _threads_bound(1):
        assert "OMP_PROC_BIND" not in os.environ
    monkeypatch.setenv("OMP_PLACES", "threads")
    with _threads_bound(2):
        assert "OMP_PROC_BIND" not in os.environ
    assert os.environ["OMP_PLACES"] == "threads"


def _loop_nest_model():
    """x [1,16,28,28] -> Conv 1x1 (32) -> Relu -> depthwise Conv 3x3 (group
    32) + bias -> Relu -> MaxPool 3x3 -> GlobalAveragePool -> "y" [1,32,1,1]:
    loop nests that kiln-cpu-parallelize runs on threads."""
    rng = np.random.default_rng(11)
    inits = [
        numpy_helper.from_array(rng.standard_normal((32, 16, 1, 1)).astype(np.float32) / 4, "w1"),
        numpy_helper.from_array(rng.standard_normal((32, 1, 3, 3)).astype(np.float32) / 3, "wd"),
        numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "bd"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="expand"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["cd"], name="depthwise", group=32,
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["cd"], ["rd"], name="relu2"),
        helper.make_node("MaxPool", ["rd"], ["p"], name="pool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["p"], ["y"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes, "loop_nests",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 28, 28])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def test_loop_nest_kernels(tmp_path):
    """Depthwise convolutions, pools and other loop nests have knobs too:
    whether they run on threads, into how many tiles, and a window op's
    (depthwise convolution's, pool's) positions per vector step. A database sets them, and the
    results stay right."""
    model_path = tmp_path / "loop_nests.onnx"
    onnx.save(_loop_nest_model(), model_path)
    listed = _kernels(model_path, tmp_path)
    kinds = {k["kind"] for k in listed["kernels"]}
    assert {"conv2d", "window", "reduction"} <= kinds, kinds
    depthwise = next(k for k in listed["kernels"]
                     if k["kind"] == "window" and k["nodes"][0].startswith("depthwise"))
    # The max pool is a window op too (its taps' maximum).
    assert any(k["kind"] == "window" and k["nodes"][0].startswith("pool")
               for k in listed["kernels"])
    # The blocked layout's taps: 9 windows of the padded input, fused with
    # the ReLU after it (the op as it runs); 28 columns.
    assert depthwise["space"]["rows"] == [1, 2, 4, 7]
    assert depthwise["space"]["parallel"] == [False, True]
    assert 32 in depthwise["space"]["tiles"]
    assert depthwise["flops"] > 0
    # The 1x1 convolution's ReLU runs in its tiles: not a kernel of its own.
    assert not any(k["nodes"][0].startswith("relu1") for k in listed["kernels"])
    # The module of the depthwise convolution slices one input as the model
    # does, and compiles alone with a configuration.
    module = tmp_path / "depthwise.mlir"
    module.write_text(depthwise["module"])
    db = tmp_path / "alone.jsonl"
    _write_db(db, [{"kernel": depthwise["signature"], "target": listed["target"],
                    "config": {"rows": 2, "parallel": False}}])
    with kiln.load(kiln.compile(module, tmp_path / "depthwise.so", tuning_db=db)) as alone:
        assert [i.shape for i in alone.inputs] == [(1, 2, 30, 30, 16)]
    # Every loop nest configured away from its defaults: the model still
    # matches onnxruntime.
    records = []
    for kernel in listed["kernels"]:
        if kernel["kind"] == "window":
            config = {"rows": 4, "parallel": True, "tiles": 2}
        elif kernel["kind"] in ("reduction", "elementwise"):
            config = {"parallel": not kernel["flops"] > 1e6, "tiles": kernel["space"]["tiles"][0]}
        else:
            continue
        records.append({"kernel": kernel["signature"], "target": listed["target"],
                        "config": config, "ms": 0.01})
    db = tmp_path / "nests.jsonl"
    _write_db(db, records)
    path = kiln.compile(model_path, tmp_path / "nests.so", tuning_db=db)
    # Each record reached its op (the compile returns what it applied).
    from kiln import _kiln
    options = _kiln.compiler.CompileOptions()
    options.tuning_db = str(db)
    result = _kiln.compiler.compile_file(str(model_path), str(tmp_path / "data.so"), options)
    assert result.ok, result.error
    assert sorted(c.kernel for c in result.kernel_configs) == sorted(
        r["kernel"] for r in records)
    # The code changes: the depthwise convolution's 4 positions per step
    # (7 would be the default for 28 columns) and its 2 tiles.
    default_ir = kiln.compile(model_path, tmp_path / "d.mlir", emit="llvm")
    tuned_ir = kiln.compile(model_path, tmp_path / "t.mlir", emit="llvm", tuning_db=db)
    assert open(default_ir).read() != open(tuned_ir).read()
    feeds = {"x": np.random.default_rng(5).standard_normal((1, 16, 28, 28)).astype(np.float32)}
    session = onnxruntime.InferenceSession(str(model_path),
                                           providers=["CPUExecutionProvider"])
    expected = session.run(["y"], feeds)[0]
    for threads in (1, 2):
        with kiln.load(path, num_threads=threads) as model:
            np.testing.assert_allclose(model.run(feeds)["y"], expected, rtol=RTOL, atol=ATOL)

    # The tuner measures them: every loop nest's default, then candidates,
    # none of which fails to compile or gives other results.
    tuned_db = tmp_path / "tuned.jsonl"
    # Each kernel's default, then one batch of two candidates each (the
    # tuner's first round), whatever the measurements say.
    report = kiln.tune(model_path, tuned_db, trials=3 * len(listed["kernels"]), workers=2,
                       num_threads=2, repeats=3)
    measured = _records(tuned_db)
    assert not [r for r in measured if "error" in r]
    assert {r["kind"] for r in measured} == kinds
    for kernel in listed["kernels"]:
        assert any(r["kernel"] == kernel["signature"] and r["config"] for r in measured), \
            kernel["kind"]
    assert report["best_ms"] <= report["default_ms"]
    path = kiln.compile(model_path, tmp_path / "tuned.so", tuning_db=tuned_db)
    with kiln.load(path, num_threads=2) as model:
        np.testing.assert_allclose(model.run(feeds)["y"], expected, rtol=RTOL, atol=ATOL)


def _records(db):
    with open(db) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def tuned(tune_model, tmp_path_factory):
    """One 16-trial run, shared by the tests below."""
    db = tmp_path_factory.mktemp("tuned") / "tune.jsonl"
    report = kiln.tune(tune_model, db, trials=16, workers=2, num_threads=1,
                       repeats=5, progress=True)
    return db, report


def test_tune_writes_database(tuned, tune_model, feeds, tmp_path):
    db, report = tuned
    records = _records(db)
    assert len(records) == 16 == report["trials"]
    assert report["best_ms"] <= report["default_ms"]
    assert report["best_ms"] == min(report["default_ms"], report["tuned_ms"])
    assert report["db"] == str(db) and report["reused"] == 0
    signatures = {k["signature"] for k in report["kernels"]}
    assert len(signatures) == 3
    for record in records:
        assert record["kernel"] in signatures
        assert record["target"] == report["target"]
        assert ("ms" in record) != ("error" in record)
    # Every kernel's default is measured, and kept.
    defaults = [r for r in records if r["config"] == {}]
    assert sorted(r["kernel"] for r in defaults) == sorted(signatures)
    assert all("ms" in r for r in defaults)
    for kernel in report["kernels"]:
        assert kernel["best_ms"] <= kernel["default_ms"]
        assert kernel["trials"] == sum(r["kernel"] == kernel["signature"] for r in records)
    # No configuration is measured twice.
    keys = [(r["kernel"], json.dumps(r["config"], sort_keys=True)) for r in records]
    assert len(keys) == len(set(keys))
    # The database compiles the model, and its results are right.
    path = kiln.compile(tune_model, tmp_path / "tuned.so", tuning_db=db)
    _assert_matches_onnxruntime(path, tune_model, feeds)


def test_tune_resumes(tuned, tune_model):
    db, first = tuned
    before = _records(db)
    report = kiln.tune(tune_model, db, trials=4, workers=1, num_threads=1,
                       repeats=3, progress=False)
    after = _records(db)
    assert after[:len(before)] == before
    assert len(after) == len(before) + report["trials"]
    # The defaults came from the database; nothing was measured again.
    assert report["reused"] == 3
    new = after[len(before):]
    assert all(r["config"] != {} for r in new)
    keys = [(r["kernel"], json.dumps(r["config"], sort_keys=True)) for r in after]
    assert len(keys) == len(set(keys))


def test_tune_arguments(tune_model, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="workers"):
        kiln.tune(tune_model, tmp_path / "db.jsonl", workers=0)
    with pytest.raises(ValueError, match="trials"):
        kiln.tune(tune_model, tmp_path / "db.jsonl", trials=-1)
    # Ray is installed by tools/setup.sh; a machine without it gets this.
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match="Ray is not installed"):
        kiln.tune(tune_model, tmp_path / "db.jsonl", trials=1, progress=False,
                  ray_address="ray://head:10001")
    assert not (tmp_path / "db.jsonl").exists()


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A one-node Ray cluster on this machine, started with Ray's own CLI as
    a cluster's head would be (tools/setup.sh installs Ray), stopped after
    the tests. Its workers import kiln from this environment's PYTHONPATH."""
    import ray  # installed by tools/setup.sh: its absence fails the test
    cli = Path(sys.executable).with_name("ray")
    temp = tmp_path_factory.mktemp("ray")
    port = _free_port()
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join(sys.path))
    start = subprocess.run(
        [str(cli), "start", "--head", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", f"--temp-dir={temp}", "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=180)
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([str(cli), "stop", "--force"], env=env, capture_output=True,
                       timeout=120)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tune_on_ray_cluster(ray_cluster, tuned, tune_model, feeds, tmp_path):
    """kiln.tune(ray_address=...) measures every candidate as a task on the
    cluster; its report and database have the local run's form, and the
    database it writes compiles a model that matches onnxruntime."""
    import ray
    db = tmp_path / "ray.jsonl"
    report = kiln.tune(tune_model, db, trials=4, num_threads=1, repeats=3,
                       progress=False, ray_address=ray_cluster)
    # The measurements ran on the cluster: this process joined it as a driver.
    assert ray.is_initialized()
    assert ray.get_runtime_context().gcs_address.endswith(ray_cluster.split(":")[1])
    _, local = tuned
    assert set(report) == set(local)
    assert report["trials"] == 4 and report["reused"] == 0
    assert report["target"] == local["target"]
    assert {k["signature"] for k in report["kernels"]} == \
        {k["signature"] for k in local["kernels"]}
    records = _records(db)
    assert len(records) == 4
    assert all(("ms" in r) != ("error" in r) for r in records)
    assert all(r["ms"] > 0 for r in records if "ms" in r)
    signatures = {k["signature"] for k in report["kernels"]}
    for record in records:
        assert record["kernel"] in signatures
        assert record["target"] == report["target"]
    assert report["best_ms"] == min(report["default_ms"], report["tuned_ms"])
    path = kiln.compile(tune_model, tmp_path / "ray.so", tuning_db=db)
    _assert_matches_onnxruntime(path, tune_model, feeds)
