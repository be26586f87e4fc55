"""Outputs are bit-identical across runs, processes and thread counts
(docs/reliability.md): Kiln's threads split the output tiles of a kernel,
never a reduction, so each output element is summed by one thread in an
order fixed at compile time."""

import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln_testing import run_compiled

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))

import kiln_cnn  # noqa: E402
import light_models  # noqa: E402
import mobilenetv2  # noqa: E402
import transformer_encoder  # noqa: E402

MODELS = {
    "kiln_cnn": (kiln_cnn.build, kiln_cnn.feeds),
    "mobilenetv2": (mobilenetv2.build, mobilenetv2.feeds),
    "transformer_encoder": (transformer_encoder.build, transformer_encoder.feeds),
    "light_squeezenet": (lambda: light_models.build("squeezenet"), light_models.feeds),
}


def same_bits(a, b):
    return set(a) == set(b) and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        and a[k].tobytes() == b[k].tobytes() for k in a)


@pytest.mark.parametrize("name", list(MODELS))
def test_bit_identical_across_runs_processes_and_threads(name, tmp_path):
    build, feeds_of = MODELS[name]
    model = build()
    feeds = feeds_of(model)
    so = kiln.compile(model, tmp_path / "model.so")
    reference = None
    for threads in (1, 2, 3):
        handle = kiln.load(so, num_threads=threads)
        for _ in range(3):
            outputs = handle.run(feeds)
            reference = reference or outputs
            assert same_bits(outputs, reference), f"{threads} thread(s)"
        handle.close()
    # Another process (kiln-run), at its default thread count.
    assert same_bits(run_compiled(so, feeds, tmp_path), reference)
