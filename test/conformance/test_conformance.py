"""The ONNX conformance suite in CI: runs tools/conformance.py --check on all
node tests (or a deterministic share, every N-th by name) against
test/conformance/expected-failures.txt. It fails when a test that is not listed
there does not pass, or when a listed test passes (then delete its line).

  pytest test/conformance                         # the CI share
  KILN_CONFORMANCE_SHARD=1/4 pytest test/conformance
The full suite is a separate command: see docs/conformance.md.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
# The whole suite: 1884 node tests took 66 s with 2 processes on 2 cores
# (most unsupported tests are refused in milliseconds). A share, e.g. 0/4,
# is for slower machines.
SHARD = os.environ.get("KILN_CONFORMANCE_SHARD", "0/1")
JOBS = os.environ.get("KILN_CONFORMANCE_JOBS", "2")


def check_share(*options, timeout=1800):
    """Runs tools/conformance.py --check on the share with `options` and
    asserts it passes, showing its summary when not."""
    command = [sys.executable, str(ROOT / "tools" / "conformance.py"),
               "--build", str(BUILD), "--shard", SHARD, "--jobs", JOBS,
               "--quiet", "--check", *options]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    summary = proc.stdout[proc.stdout.find("\nran "):] if "\nran " in proc.stdout \
        else proc.stdout[-6000:]
    assert proc.returncode == 0, (
        f"{' '.join(command)} exited {proc.returncode}\n{summary}\n{proc.stderr[-3000:]}")


def test_conformance_share_matches_expected_failures():
    check_share("--expected-failures",
                str(ROOT / "test" / "conformance" / "expected-failures.txt"))


CUDA_ROOTS = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
              "/usr/local/cuda"]


def test_conformance_on_emulated_gpu_matches_expected_failures():
    """The same share compiled for the nvptx target and run on the CUDA driver
    emulator (docs/gpu.md), against expected-failures.txt and
    expected-failures-gpu.txt (the GPU's own)."""
    if not any(r and os.access(os.path.join(r, "bin", "ptxas"), os.X_OK)
               for r in CUDA_ROOTS):
        import pytest
        pytest.skip("no CUDA toolkit (ptxas) on this machine")
    check_share("--gpu-emulation", timeout=2400)


def test_shape_operands_are_traced_to_the_graph_inputs():
    """The runner freezes a graph input whose values decide a shape: one that
    is a shape operand, or that one is computed from (through a Cast, inside
    an If's branch), but not one whose shape alone is read."""
    sys.path.insert(0, str(ROOT / "tools"))
    import conformance
    from onnx import TensorProto, helper

    def vi(name, elem=TensorProto.INT64, shape=()):
        return helper.make_tensor_value_info(name, elem, list(shape))

    then = helper.make_graph([helper.make_node("Identity", ["n"], ["m"])],
                             "then", [], [vi("m")])
    nodes = [
        helper.make_node("Cast", ["size"], ["size_f"], to=TensorProto.FLOAT),
        helper.make_node("Range", ["zero", "size_f", "one"], ["r"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Reshape", ["x", "xs"], ["y"]),
        helper.make_node("If", ["c"], ["shape"], then_branch=then,
                         else_branch=then),
        helper.make_node("Expand", ["x", "shape"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [vi("size"), vi("zero", TensorProto.FLOAT), vi("one", TensorProto.FLOAT),
         vi("x", TensorProto.FLOAT, [2]), vi("c", TensorProto.BOOL), vi("n", shape=[1])],
        [vi("r", TensorProto.FLOAT, [None]), vi("y", TensorProto.FLOAT, [2]),
         vi("z", TensorProto.FLOAT, [None])])
    model = helper.make_model(graph)
    computed = set()
    found = conformance.shape_like_inputs(model, computed=computed)
    assert found == {"size", "zero", "one", "c", "n"}
    assert computed == {"size", "c", "n"}
