"""Differential testing against onnxruntime (issue 23): 300 random ONNX
graphs from tools/difftest.py (seeds 0 to 299, six chunks of 50, each in a
process of its own so that a crash is a failure of its chunk, not of the
test run), and every model a past run found wrong, kept in difftest/ with
its inputs and what was wrong (docs/reliability.md)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from kiln_testing import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import difftest  # noqa: E402

REGRESSIONS = Path(__file__).parent / "difftest"
CHUNK = 50


@pytest.mark.parametrize("start", range(0, 300, CHUNK))
def test_random_graphs_match_onnxruntime(start, tmp_path):
    summary = tmp_path / "summary.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "difftest.py"), "--start",
         str(start), "--count", str(CHUNK), "--jobs", "1", "--quiet",
         "--json", str(summary)], capture_output=True, text=True, timeout=1200)
    assert summary.exists(), proc.stdout + proc.stderr
    result = json.loads(summary.read_text())
    assert result["findings"] == {}, proc.stdout
    # The generator makes valid graphs: onnxruntime runs every one.
    assert result["compared"] == CHUNK, result


def test_generator_is_deterministic():
    first, feeds = difftest.make_graph(123)
    again, feeds_again = difftest.make_graph(123)
    assert first.SerializeToString() == again.SerializeToString()
    assert all(np.array_equal(feeds[k], feeds_again[k]) for k in feeds)


def test_a_wrong_output_is_a_finding():
    """The comparison can fail: a changed element is reported."""
    want = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    got = want.copy()
    assert difftest.mismatch("y", got, want) is None
    got[1, 2] += 0.01
    assert "1 of 12 elements differ, first at [1, 2]" in difftest.mismatch(
        "y", got, want)
    assert "onnxruntime gives" in difftest.mismatch("y", got.astype(np.float64),
                                                    want)
    flags = np.array([True, False])
    assert difftest.mismatch("b", flags, ~flags) is not None


@pytest.mark.parametrize("name", sorted(p.stem for p in REGRESSIONS.glob("*.onnx")))
def test_regression(name, tmp_path):
    model = onnx.load(REGRESSIONS / f"{name}.onnx")
    feeds = dict(np.load(REGRESSIONS / f"{name}.npz"))
    assert (REGRESSIONS / f"{name}.txt").read_text().strip(), "say what it was"
    assert difftest.check(model, feeds, str(tmp_path)) is None
