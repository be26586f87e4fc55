"""Batch splitting (kiln-compile --batch-split): a model whose inputs and
outputs lead with a batch above 1, and whose ops treat the samples apart,
is compiled for one sample and run once per sample by the model ABI's run
function, each input and output pointer advanced by one sample."""

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from kiln_testing import (KILN_COMPILE, KILN_RUN, assert_matches_onnxruntime,
                          compile_model, run_compiled, run_onnxruntime)

rng = np.random.default_rng(11)


def make_model(nodes, inputs, outputs, inits, name):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def fire_classifier(batch, size=20):
    """A fire module (two convolutions concatenated), a pool, a Flatten and
    a Gemm with Softmax, and a second input through a MatMul to a second
    output: inputs and outputs of four different sample sizes."""
    w = lambda name, *shape: numpy_helper.from_array(
        rng.normal(0, 0.2, shape).astype(np.float32), name)
    inits = [w("w1", 16, 8, 1, 1), w("w3", 16, 8, 3, 3), w("wg", 32, 10),
             w("bg", 10), w("wm", 7, 5)]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], name="expand1x1"),
        helper.make_node("Conv", ["x", "w3"], ["b"], pads=[1, 1, 1, 1], name="expand3x3"),
        helper.make_node("Relu", ["a"], ["ra"], name="relu1x1"),
        helper.make_node("Relu", ["b"], ["rb"], name="relu3x3"),
        helper.make_node("Concat", ["ra", "rb"], ["cat"], axis=1, name="concat"),
        helper.make_node("MaxPool", ["cat"], ["pool"], kernel_shape=[3, 3],
                         strides=[2, 2], name="pool"),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wg", "bg"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=1, name="softmax"),
        helper.make_node("MatMul", ["z", "wm"], ["m"], name="matmul"),
        helper.make_node("Tanh", ["m"], ["t"], name="tanh"),
    ]
    return make_model(nodes, [("x", [batch, 8, size, size]), ("z", [batch, 3, 7])],
                      [("prob", [batch, 10]), ("t", [batch, 3, 5]),
                       ("cat", [batch, 32, size, size])], inits, "fire")


def compile_report(model, workdir, *args):
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(workdir / "model.onnx"))
    proc = subprocess.run([str(KILN_COMPILE), str(workdir / "model.onnx"), "-o",
                           str(workdir / "model.so"), "--report", *args],
                          capture_output=True, text=True, timeout=300)
    return proc, workdir / "model.so"


def report_line(report, key):
    match = re.search(rf"^{key}: (.*)$", report, re.M)
    assert match, report
    return match.group(1)


@pytest.mark.parametrize("threads", [1, 2])
def test_split_batch_matches_onnxruntime(tmp_path, threads):
    """Three samples, three runs of the one-sample entry: every output of
    every sample matches onnxruntime, and the workspace is the size of one
    sample's intermediates, a third of the whole batch's."""
    model = fire_classifier(3)
    feeds = {"x": rng.normal(size=(3, 8, 20, 20)).astype(np.float32),
             "z": rng.normal(size=(3, 3, 7)).astype(np.float32)}
    split, so = compile_report(model, tmp_path / "on", "--batch-split=on")
    assert split.returncode == 0, split.stderr
    assert report_line(split.stderr, "batch").startswith("3 runs of one sample ("), \
        split.stderr
    got = run_compiled(so, feeds, tmp_path / "on", threads=threads)
    want = run_onnxruntime(model, feeds)
    for name in want:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)

    whole, _ = compile_report(model, tmp_path / "off", "--batch-split=off")
    assert whole.returncode == 0, whole.stderr
    assert report_line(whole.stderr, "batch") == "whole (--batch-split=off)"
    workspace = lambda r: int(report_line(r, "workspace").split()[0])
    assert workspace(split.stderr) * 3 <= workspace(whole.stderr) + 64, \
        (split.stderr, whole.stderr)


@pytest.mark.parametrize("batch,slots", [(6, 6), ("N", 16)])
def test_samples_side_by_side(tmp_path, batch, slots):
    """With P threads, 1 < P <= the batch, a split model runs whole rounds
    of P samples side by side, each on one thread in a workspace of its
    own, and the rest one after the other on all P threads: the workspace
    holds a slot per sample (at most 16), every sample of a round matches
    the one-thread run bit for bit, and every output matches onnxruntime's,
    whatever the remainder (6 samples on 2, 3, 4 and 5 threads, and on 7,
    more threads than samples), with a batch of 6 or a symbolic one."""
    model = fire_classifier(batch)
    proc, so = compile_report(model, tmp_path / "split", "--batch-split=on")
    assert proc.returncode == 0, proc.stderr
    workspace = report_line(proc.stderr, "workspace")
    assert workspace.endswith(f", a sample's; up to {slots} samples side by side, "
                              "one workspace each"), workspace
    feeds = {"x": rng.normal(size=(6, 8, 20, 20)).astype(np.float32),
             "z": rng.normal(size=(6, 3, 7)).astype(np.float32)}
    want = run_onnxruntime(model, feeds)
    run = lambda threads: run_compiled(so, feeds, tmp_path / "split", threads=threads)
    alone = run(1)
    for threads in (2, 3, 4, 5, 7):
        got = run(threads)
        side_by_side = 6 // threads * threads if threads <= 6 else 0
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}, {threads} threads")
            np.testing.assert_array_equal(got[name][:side_by_side],
                                          alone[name][:side_by_side],
                                          err_msg=f"{name}, {threads} threads")


def test_split_profile_counts_every_sample(tmp_path):
    """kiln-run --profile times each kernel over all the runs of a call,
    and the kernel table counts the FLOPs of all of them: a split model's
    GFLOP/s are those of the whole batch, not a third of them."""
    model = fire_classifier(3, size=32)
    x = rng.normal(size=(3, 8, 32, 32)).astype(np.float32)
    z = rng.normal(size=(3, 3, 7)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "z.npy", z)
    flops = {}
    for mode in ("on", "off"):
        # One algorithm for both: the cost model may pick another at batch 3.
        proc, so = compile_report(model, tmp_path / mode, f"--batch-split={mode}",
                                  "--conv-algorithm=direct")
        assert proc.returncode == 0, proc.stderr
        out = subprocess.run([str(KILN_RUN), str(so), "--input", f"x={tmp_path / 'x.npy'}",
                              "--input", f"z={tmp_path / 'z.npy'}", "--output-dir",
                              str(tmp_path / mode), "--repeat", "3", "--profile",
                              "--json"], capture_output=True, text=True, timeout=300,
                             check=True).stdout
        kernels = json.loads(out)["profile"]["kernels"]
        flops[mode] = {}
        for k in kernels:
            flops[mode][k["source"]] = flops[mode].get(k["source"], 0) + k["flops"]
    # Every node that is a kernel in both builds counts the same FLOPs: the
    # whole batch's, not one sample's. Code that is no loop nest is not a
    # kernel and is not counted: split, the z branch's 3x7 by 7x5 product
    # and its Tanh (fused into the product's tile) are straight-line vector
    # code, 45 FLOPs of the 8.2 million.
    common = set(flops["on"]) & set(flops["off"])
    for source in common:
        assert flops["on"][source] == flops["off"][source], source
    for mode in ("on", "off"):
        counted = sum(flops[mode][source] for source in common)
        assert counted >= 0.999 * sum(flops[mode].values()), (mode, flops)


def test_auto_keeps_a_small_batch_whole(tmp_path):
    """By default the batch is split only where its activations outgrow
    the cache: these fit, and the report says so with the sizes."""
    proc, _ = compile_report(fire_classifier(2), tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = report_line(proc.stderr, "batch")
    assert line.startswith("whole (largest activation "), line


def test_auto_splits_large_activations(tmp_path):
    """Eight samples of 32 channels at 224x224 (6.4 MB each) outgrow the
    cache and outweigh the weights: auto splits them, and the numbers stay
    onnxruntime's."""
    w = numpy_helper.from_array(rng.normal(0, 0.2, (32, 3, 3, 3)).astype(np.float32), "w")
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2],
                          name="pool")],
        [("x", [8, 3, 224, 224])], [("y", [8, 32, 112, 112])], [w], "big")
    proc, so = compile_report(model, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert report_line(proc.stderr, "batch").startswith("8 runs of one sample"), \
        proc.stderr
    x = rng.normal(size=(8, 3, 224, 224)).astype(np.float32)
    np.testing.assert_allclose(run_compiled(so, {"x": x}, tmp_path)["y"],
                               run_onnxruntime(model, {"x": x})["y"],
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("node,reason", [
    (helper.make_node("Softmax", ["x"], ["y"], axis=0, name="across"),
     "whole (across (Softmax) does not treat the samples apart)"),
    (helper.make_node("ReduceMean", ["x"], ["y"], axes=[0], keepdims=1, name="mean"),
     "whole (no batch above 1 leads every input and output)"),
])
def test_ops_across_the_batch_keep_it_whole(tmp_path, node, reason):
    """An op that mixes samples keeps the batch whole even with
    --batch-split=on, the report names it, and the results are right."""
    shape = [4, 6]
    out = [4, 6] if node.op_type == "Softmax" else [1, 6]
    model = make_model([node], [("x", shape)], [("y", out)], [], "across")
    proc, _ = compile_report(model, tmp_path, "--batch-split=on")
    assert proc.returncode == 0, proc.stderr
    assert report_line(proc.stderr, "batch") == reason
    assert_matches_onnxruntime(model, {"x": rng.normal(size=shape).astype(np.float32)},
                               tmp_path / "run", compile_args=["--batch-split=on"])


def test_unknown_batch_split_is_an_error(tmp_path):
    proc, _ = compile_report(fire_classifier(2), tmp_path, "--batch-split=maybe")
    assert proc.returncode != 0
    assert "unknown --batch-split value 'maybe' (expected auto, on, off)" in proc.stderr


def test_python_compile_takes_batch_split(tmp_path):
    """kiln.compile(batch_split=...) reaches the compiler: "on" makes the
    run function loop over the samples (its LLVM IR has the loop's block),
    "off" does not, and a bad value is the compiler's error."""
    kiln = pytest.importorskip("kiln")
    model = fire_classifier(2)
    for mode, loops in (("on", True), ("off", False)):
        ir = Path(kiln.compile(model, tmp_path / f"{mode}.ll", emit="llvm-ir",
                               batch_split=mode)).read_text()
        run = ir[ir.index("@kiln_abi_run("):]
        assert ("\nsample:" in run) == loops, mode
    path = kiln.compile(model, tmp_path / "on.so", batch_split="on")
    feeds = {"x": rng.normal(size=(2, 8, 20, 20)).astype(np.float32),
             "z": rng.normal(size=(2, 3, 7)).astype(np.float32)}
    got = kiln.load(path).run(feeds)
    want = run_onnxruntime(model, feeds)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="unknown batch_split 'sideways'"):
        kiln.compile(model, tmp_path / "bad.so", batch_split="sideways")
