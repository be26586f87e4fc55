#!/usr/bin/env python3
"""Quantises a model of tools/models (or an .onnx file) with kiln.quantize on
seeded random calibration samples, and prints the report and the time taken:
the command behind docs/quantization.md's timings.

  PYTHONPATH=build/python .venv/bin/python tools/quantize_model.py resnet50 \\
      --samples 100 [--method minmax|percentile|entropy] [-o out.onnx]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "models"))


def load_model(name, workdir):
    if name.endswith(".onnx"):
        return onnx.load(name)
    path = Path(workdir) / f"{name}.onnx"
    script = {"kiln_cnn": "kiln_cnn.py", "mobilenetv2": "mobilenetv2.py",
              "transformer": "transformer_encoder.py"}.get(name)
    args = [str(ROOT / "tools" / "models" / script)] if script else \
        [str(ROOT / "tools" / "models" / "light_models.py"), name]
    subprocess.run([sys.executable, *args, "-o", str(path)], check=True,
                   stdout=subprocess.DEVNULL)
    return onnx.load(str(path))


def samples(model, count, seed=0):
    from common import random_inputs
    return [random_inputs(model, seed + i, int_high=2) for i in range(count)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a tools/models name or an .onnx file")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--method", default="minmax")
    parser.add_argument("--report-samples", type=int, default=16)
    parser.add_argument("-o", "--output", help="where to write the QDQ model")
    args = parser.parse_args()
    import kiln
    with tempfile.TemporaryDirectory() as workdir:
        model = load_model(args.model, workdir)
        data = samples(model, args.samples)
        output = args.output or str(Path(workdir) / "q.onnx")
        start = time.monotonic()
        report = kiln.quantize(model, data, output, method=args.method,
                               report_samples=args.report_samples)
        seconds = time.monotonic() - start
    print(report)
    print(f"{args.model}: {args.samples} samples, {args.method}: {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
