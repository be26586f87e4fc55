#!/usr/bin/env python3
"""Kiln against its peers on whole models, side by side in one run.

For each model and thread count: compile with kiln-compile (timed), run with
kiln-run (warm-up, repeats, median), run the same inputs with onnxruntime at
the same thread count, check that the outputs agree, and print one table row:
median latencies, the ratio Kiln / onnxruntime (below 1 is faster), Kiln's
achieved GFLOP/s (multiply-adds of Conv, ConvTranspose, Gemm and MatMul,
counted twice) and its share of the machine's measured peak. A peer that is
not installed, or cannot run a model, is reported as such.

  .venv/bin/python tools/benchmark.py                        # default models
  .venv/bin/python tools/benchmark.py --models kiln_cnn squeezenet --threads 1 2
  .venv/bin/python tools/benchmark.py --markdown docs/bench.md

Models are names of tools/models builders (kiln_cnn, transformer, bert_base,
mobilenetv2, and the light_* models: resnet50, squeezenet, ...) or .onnx
paths. These machines are shared and noisy: compare medians from one run.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper, shape_inference

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tools" / "models"
LIGHT = ["resnet50", "vgg19", "densenet121", "inception_v1", "inception_v2",
         "shufflenet", "squeezenet", "bvlc_alexnet", "zfnet512"]
BUILDERS = {
    "kiln_cnn": ["kiln_cnn.py"],
    "transformer": ["transformer_encoder.py"],
    "bert_base": ["transformer_encoder.py", "--bert-base"],
    "mobilenetv2": ["mobilenetv2.py"],
}
# A register-resident AVX-512 FMA loop on this machine (docs/performance.md).
PEAK_GFLOPS_PER_THREAD = 253.0


def build_model(name, workdir):
    if name.endswith(".onnx"):
        return Path(name)
    out = workdir / f"{name}.onnx"
    if name in BUILDERS:
        script, *extra = BUILDERS[name]
        args = [sys.executable, str(MODELS / script), "-o", str(out), *extra]
    else:
        args = [sys.executable, str(MODELS / "light_models.py"), name, "-o", str(out)]
    subprocess.run(args, check=True, capture_output=True, text=True)
    return out


def count_flops(model):
    """2 x multiply-adds of the convolutions and matrix products."""
    model = shape_inference.infer_shapes(model)
    shapes = {}
    for value in list(model.graph.value_info) + list(model.graph.input) + \
            list(model.graph.output):
        dims = [d.dim_value for d in value.type.tensor_type.shape.dim]
        shapes[value.name] = dims
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    flops = 0
    for node in model.graph.node:
        out = shapes.get(node.output[0]) if node.output else None
        if not out:
            continue
        if node.op_type in ("Conv", "ConvTranspose"):
            w = shapes.get(node.input[1])
            if not w:
                continue
            group = next((a.i for a in node.attribute if a.name == "group"), 1)
            if node.op_type == "Conv":
                flops += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
            else:
                x = shapes.get(node.input[0])
                if x:
                    flops += 2 * int(np.prod(x)) * int(np.prod(w[1:])) // max(group, 1) * group
        elif node.op_type in ("Gemm", "MatMul"):
            a = shapes.get(node.input[0])
            if not a:
                continue
            trans_a = any(at.name == "transA" and at.i for at in node.attribute)
            k = a[0] if (node.op_type == "Gemm" and trans_a) else a[-1]
            flops += 2 * int(np.prod(out)) * k
    return flops


def random_feeds(model, seed=0):
    sys.path.insert(0, str(MODELS))
    from common import random_inputs
    return random_inputs(model, seed=seed, int_high=100)


def time_onnxruntime(path, feeds, threads, warmup, repeat):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = dict(zip(names, session.run(names, feeds)))
    for _ in range(warmup):
        session.run(names, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(names, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times)), outputs


def run_kiln(build, so, feeds, threads, warmup, repeat, workdir):
    args = [str(build / "bin" / "kiln-run"), str(so), "--json", "--output-dir",
            str(workdir / "out"), "--threads", str(threads), "--warmup", str(warmup),
            "--repeat", str(repeat)]
    for i, (name, value) in enumerate(feeds.items()):
        path = workdir / f"in{i}.npy"
        np.save(path, np.array(value, order="C"))
        args += ["--input", f"{name}={path}"]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip())
    result = json.loads(proc.stdout)
    outputs = {n: np.load(p) for n, p in result["outputs"].items()}
    return result["median_ms"], outputs


def peers_status():
    status = {}
    for peer, module in (("IREE", "iree.compiler"), ("TVM", "tvm")):
        found = importlib.util.find_spec(module.split(".")[0]) is not None
        status[peer] = "not run" if found else "not installed"
    return status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+",
                        default=["kiln_cnn", "transformer", "squeezenet", "resnet50"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--build", type=Path,
                        default=Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")))
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kiln-bench-"))
    peers = peers_status()
    rows = []
    header = ("| model | threads | Kiln ms | onnxruntime ms | Kiln/ORT | Kiln GFLOP/s "
              "| % of peak | compile s | outputs |")
    print(header)
    print("|" + "---|" * 9)
    for name in args.models:
        try:
            path = build_model(name, work)
        except subprocess.CalledProcessError as error:
            print(f"| {name} | - | cannot build the model: {error.stderr.strip()[:80]} |")
            continue
        model = onnx.load(str(path))
        flops = count_flops(model)
        feeds = random_feeds(model)
        so = work / f"{Path(path).stem}.so"
        start = time.perf_counter()
        proc = subprocess.run([str(args.build / "bin" / "kiln-compile"), str(path), "-o",
                               str(so)], capture_output=True, text=True)
        compile_s = time.perf_counter() - start
        for threads in args.threads:
            ort_ms, expected = time_onnxruntime(path, feeds, threads, args.warmup,
                                                args.repeat)
            if proc.returncode != 0:
                row = (f"| {name} | {threads} | compile failed | {ort_ms:.3f} | - | - | - "
                       f"| {compile_s:.1f} | {proc.stderr.strip().splitlines()[0][:60]} |")
            else:
                try:
                    kiln_ms, got = run_kiln(args.build, so, feeds, threads, args.warmup,
                                            args.repeat, work)
                    ok = all(np.allclose(got[n], v, rtol=1e-3, atol=1e-4)
                             for n, v in expected.items())
                    gflops = flops / kiln_ms / 1e6
                    peak = 100 * gflops / (PEAK_GFLOPS_PER_THREAD * threads)
                    row = (f"| {name} | {threads} | {kiln_ms:.3f} | {ort_ms:.3f} | "
                           f"{kiln_ms / ort_ms:.2f} | {gflops:.1f} | {peak:.0f}% | "
                           f"{compile_s:.1f} | {'match' if ok else 'DIFFER'} |")
                except RuntimeError as error:
                    row = (f"| {name} | {threads} | run failed | {ort_ms:.3f} | - | - | - "
                           f"| {compile_s:.1f} | {str(error)[:60]} |")
            print(row, flush=True)
            rows.append(row)
    print()
    for peer, status in peers.items():
        print(f"{peer}: {status}")
    if args.markdown:
        text = [header, "|" + "---|" * 9, *rows, ""]
        text += [f"{peer}: {status}" for peer, status in peers.items()]
        args.markdown.write_text("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
