"""Compiles the shipped CNN with Kiln, runs it, checks it against onnxruntime, prints timings.

Run through tools/main-job.sh, which installs and builds what this needs.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime

ROOT = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kiln-main-job-"))
    model_path = work / "kiln_cnn.onnx"
    so_path = work / "kiln_cnn.so"

    print("main-job: building the model (tools/models/kiln_cnn.py)")
    subprocess.run([sys.executable, str(ROOT / "tools/models/kiln_cnn.py"), "-o",
                    str(model_path)], check=True)
    model = onnx.load(str(model_path))

    print("main-job: compiling with kiln-compile")
    start = time.perf_counter()
    proc = subprocess.run([str(args.build / "bin/kiln-compile"), str(model_path), "-o",
                           str(so_path)], capture_output=True, text=True)
    compile_s = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stderr.strip(), file=sys.stderr)
        print("main-job: FAILED: the model does not compile yet", file=sys.stderr)
        return 1

    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    run_args = [str(args.build / "bin/kiln-run"), str(so_path), "--json",
                "--output-dir", str(work / "out"), "--repeat", str(args.repeat),
                "--warmup", str(args.warmup), "--threads", str(args.threads)]
    for i, (name, value) in enumerate(feeds.items()):
        np.save(work / f"in{i}.npy", value)
        run_args += ["--input", f"{name}={work / f'in{i}.npy'}"]
    print(f"main-job: running with kiln-run ({args.repeat} runs, {args.threads} thread(s))")
    proc = subprocess.run(run_args, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr.strip(), file=sys.stderr)
        return 1
    result = json.loads(proc.stdout)
    got = {name: np.load(path) for name, path in result["outputs"].items()}

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(model_path), options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(names, feeds)))
    for _ in range(args.warmup):
        session.run(names, feeds)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        session.run(names, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    ort_median = float(np.median(times))

    ok = True
    for name, want in expected.items():
        have = got[name]
        close = have.shape == want.shape and np.allclose(have, want, rtol=1e-3, atol=1e-4)
        err = float(np.max(np.abs(have - want))) if have.shape == want.shape else float("nan")
        print(f"main-job: output {name} {list(have.shape)}: "
              f"{'matches' if close else 'DIFFERS from'} onnxruntime (max abs error {err:.2e})")
        ok &= close

    print()
    print(f"  compile time        {compile_s:8.2f} s")
    print(f"  kiln median         {result['median_ms']:8.3f} ms "
          f"(min {result['min_ms']:.3f}, max {result['max_ms']:.3f})")
    print(f"  onnxruntime median  {ort_median:8.3f} ms")
    print(f"  kiln / onnxruntime  {result['median_ms'] / ort_median:8.2f}x")
    print()
    print("main-job: " + ("OK" if ok else "FAILED: outputs differ from onnxruntime"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
