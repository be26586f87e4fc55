#!/usr/bin/env python3
"""Times every convolution algorithm on single 3x3 stride-1 layers and prints
the cost model's choice next to the measurements (docs/performance.md).

  .venv/bin/python tools/conv_algorithms.py 64x56 256x14 512x7 [--threads 1]
      [--layout blocked|nchw]

Each LAYER is CxH (C channels in and out) or CxKxH (C in, K out) on an HxH
map, batch 1 (or --batch). Every layer
is compiled once per algorithm with kiln-compile --conv-algorithm=ALG and run
with kiln-run (min of the timed runs, in ms); `kiln-compile --report` gives
the cost model's choice and estimates. In the blocked layout (the default)
the algorithms are direct and Winograd, and the times include the layer's
two layout conversions, the same for every algorithm.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "python" / "ops"))
sys.path.insert(0, str(ROOT / "test" / "python"))
from test_conv_algorithms import conv_model  # noqa: E402

ALGORITHMS = {
    "nchw": ["im2col", "winograd-2x3", "winograd-4x3", "winograd-6x3"],
    "blocked": ["direct", "winograd-2x3", "winograd-4x3", "winograd-6x3"],
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="+", help="CxH or CxKxH, e.g. 64x56 16x64x55")
    parser.add_argument("--build", default=os.environ.get("KILN_BUILD_DIR", ROOT / "build"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--layout", choices=sorted(ALGORITHMS), default="blocked")
    args = parser.parse_args()
    compile_ = Path(args.build) / "bin" / "kiln-compile"
    run = Path(args.build) / "bin" / "kiln-run"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for layer in args.layers:
            sizes = [int(v) for v in layer.split("x")]
            c, k, h = sizes if len(sizes) == 3 else (sizes[0], sizes[0], sizes[1])
            model, feeds = conv_model(args.batch, c, k, h, h)
            onnx.save(model, str(tmp / "layer.onnx"))
            np.save(tmp / "x.npy", feeds["x"])
            layout = f"--layout={args.layout}"
            report = subprocess.run([compile_, tmp / "layer.onnx", "-o", tmp / "r.so",
                                     "--report", layout], capture_output=True, text=True,
                                    check=True).stderr
            choice = next(line for line in report.splitlines() if line.startswith("conv "))
            times = []
            for algorithm in ALGORITHMS[args.layout]:
                so = tmp / f"{algorithm}.so"
                subprocess.run([compile_, tmp / "layer.onnx", "-o", so,
                                f"--conv-algorithm={algorithm}", layout], check=True)
                out = subprocess.run([run, so, "--input", f"x={tmp / 'x.npy'}",
                                      "--output-dir", tmp, "--threads", str(args.threads),
                                      "--warmup", "3", "--repeat", str(args.repeat), "--json"],
                                     capture_output=True, text=True, check=True).stdout
                times.append(f"{algorithm}={json.loads(out)['min_ms']:.3f}")
            print(f"{c}->{k} ch, {h}x{h}: min ms {' '.join(times)}\n  {choice}", flush=True)


if __name__ == "__main__":
    main()
