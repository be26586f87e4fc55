"""One pipeline, reproducible in kiln-opt: for each set of options,
`kiln-compile --print-pipeline` prints a textual pass pipeline that kiln-opt
runs on `kiln-compile --emit=imported` to print, byte for byte, what
`kiln-compile --emit=llvm` prints."""

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from kiln_testing import BUILD, KILN_COMPILE
from test_batch_split import fire_classifier

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import kiln_cnn  # noqa: E402

KILN_OPT = BUILD / "bin" / "kiln-opt"


def _run(args):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}:\n{proc.stderr}"
    return proc.stdout


def _tuning_db(model_path, workdir, args):
    """A database configuring the model's first tunable kernel with the first
    value of each knob of its search space."""
    kernels = json.loads(_run([KILN_COMPILE, model_path, "--emit=kernels", "-o", "-",
                               *args]))
    kernel = next(k for k in kernels["kernels"] if k["space"])
    config = {knob: values[0] for knob, values in kernel["space"].items()}
    db = Path(workdir) / "db.jsonl"
    db.write_text(json.dumps({"kernel": kernel["signature"], "target": kernels["target"],
                              "config": config, "ms": 0.01}) + "\n")
    return db


@pytest.mark.parametrize("model_name,args", [
    ("cnn", []),
    ("cnn", ["--layout=nchw"]),
    ("cnn", ["--target=aarch64"]),
    ("cnn", ["--no-openmp", "--conv-algorithm=winograd-4x3"]),
    ("cnn", ["--tuning-db"]),
    ("batch", ["--batch-split=on"]),
], ids=["default", "nchw", "aarch64", "serial-winograd", "tuning-db", "batch-split"])
def test_kiln_opt_reproduces_kiln_compile(tmp_path, model_name, args):
    model = kiln_cnn.build() if model_name == "cnn" else fire_classifier(2)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    if args == ["--tuning-db"]:
        args = ["--tuning-db", str(_tuning_db(path, tmp_path, []))]
        report = subprocess.run([str(KILN_COMPILE), path, *args, "--report",
                                 "-o", tmp_path / "m.so"],
                                capture_output=True, text=True)
        assert "tuning: 1 kernel(s) configured" in report.stderr, report.stderr

    imported = tmp_path / "imported.mlir"
    _run([KILN_COMPILE, path, *args, "--emit=imported", "-o", imported])
    pipeline = _run([KILN_COMPILE, path, *args, "--print-pipeline"]).strip()
    assert pipeline.startswith("builtin.module("), pipeline[:200]
    assert "kiln-graph-make-entry" in pipeline and "kiln-graph-split-batch" in pipeline
    compiled = _run([KILN_COMPILE, path, *args, "--emit=llvm", "-o", "-"])
    reproduced = _run([KILN_OPT, imported, f"--pass-pipeline={pipeline}"])
    assert "llvm.func @kiln_model_main" in compiled
    assert reproduced == compiled


def test_pipeline_text_follows_the_options(tmp_path):
    """The options reach the passes' own options, visibly."""
    path = tmp_path / "model.onnx"
    onnx.save(fire_classifier(2), str(path))
    default = _run([KILN_COMPILE, path, "--print-pipeline", "--cpu=x86-64-v4"])
    assert "kiln-graph-blocked-layout{block=16}" in default
    assert "kiln-graph-split-batch{cache-bytes=16777216 mode=auto}" in default
    assert "rows=8" in default and "vector-width=16" in default
    avx2 = _run([KILN_COMPILE, path, "--print-pipeline", "--cpu=x86-64-v3",
                 "--layout=nchw", "--batch-split=off"])
    assert "kiln-graph-blocked-layout" not in avx2
    assert "mode=off" in avx2
    assert "rows=6" in avx2 and "vector-width=8" in avx2
    # Up to the --emit stage only.
    graph = _run([KILN_COMPILE, path, "--print-pipeline", "--emit=graph"])
    assert "kiln-graph-fuse-epilogues" in graph
    assert "kiln-graph-make-entry" not in graph
