"""Helpers for tests that compile ONNX models with Kiln and compare with onnxruntime.

The tools come from the build folder: $KILN_BUILD_DIR (tools/test.sh sets it),
else build/ at the repository root.
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
KILN_COMPILE = BUILD / "bin" / "kiln-compile"
KILN_RUN = BUILD / "bin" / "kiln-run"


class KilnError(Exception):
    """A Kiln tool exited non-zero; the message is its standard error."""


def _run(args, timeout=300):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise KilnError(proc.stderr.strip() or f"{args[0]} exited with {proc.returncode}")
    return proc.stdout


def compile_model(model, workdir, extra_args=()):
    """Compiles `model` (a ModelProto or a path) into workdir/model.so; returns its path."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if isinstance(model, onnx.ModelProto):
        path = workdir / "model.onnx"
        onnx.save(model, str(path))
    else:
        path = Path(model)
    so = workdir / "model.so"
    _run([KILN_COMPILE, path, "-o", so, *extra_args])
    return so


def run_compiled(so, feeds, workdir, threads=None):
    """Runs a compiled model with kiln-run on numpy `feeds`; returns {name: array}."""
    workdir = Path(workdir)
    args = [KILN_RUN, so, "--json", "--output-dir", workdir / "outputs"]
    for i, (name, value) in enumerate(feeds.items()):
        path = workdir / f"input{i}.npy"
        # np.ascontiguousarray would turn a scalar into shape (1,).
        np.save(path, np.array(value, order="C"))
        args += ["--input", f"{name}={path}"]
    if threads:
        args += ["--threads", str(threads)]
    result = json.loads(_run(args))
    return {name: np.load(path) for name, path in result["outputs"].items()}


def run_onnxruntime(model, feeds):
    """Runs `model` with onnxruntime's CPU provider; returns {name: array}."""
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def assert_matches_onnxruntime(model, feeds, workdir, rtol=1e-3, atol=1e-4,
                               compile_args=(), threads=None):
    """Compiles and runs `model` with Kiln (on `threads` threads, kiln-run's
    default without) and checks every output against onnxruntime."""
    so = compile_model(model, workdir, compile_args)
    got = run_compiled(so, feeds, workdir, threads)
    expected = run_onnxruntime(model, feeds)
    assert set(got) == set(expected), f"outputs differ: {sorted(got)} vs {sorted(expected)}"
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype, f"{name}: dtype {have.dtype}, expected {want.dtype}"
        assert have.shape == want.shape, f"{name}: shape {have.shape}, expected {want.shape}"
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=name)
    return got
