#!/usr/bin/env python3
"""The scripted battery for a lent NVIDIA GPU (docs/gpu.md).

Two steps, so that the GPU's minutes go to running, not building:

  # here, where Kiln is built: models compiled for the GPU, their inputs and
  # onnxruntime's outputs, and the runtime, into one folder (< 64 MiB)
  .venv/bin/python tools/gpu_battery.py prepare --build build --out gpu-battery

  # there (the folder carried to the GPU machine): every model on the real
  # driver against the reference outputs, timed; compute-sanitizer's memcheck
  # and racecheck where the toolkit has it; one JSON file of results
  python3 gpu-battery/gpu_battery.py run gpu-battery --out $OUT/results.json

`run` needs only Python 3 and numpy on the GPU machine: it calls the
carried kiln-run and reads .npy files. A model that did not run is recorded
as an error or not run, never as passed. `prepare --emulation` makes models
that the CUDA driver emulator also runs, to try the battery without a GPU.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepare(args):
    import numpy as np
    import onnx
    import onnxruntime
    sys.path.insert(0, str(ROOT / "tools" / "models"))
    sys.path.insert(0, str(ROOT / "test" / "python"))
    import kiln_cnn
    import light_models
    import mobilenetv2
    import transformer_encoder
    from test_gpu import small_feeds, small_model

    models = {
        "small": (small_model, lambda m: small_feeds()),
        "kiln_cnn": (kiln_cnn.build, kiln_cnn.feeds),
        "transformer_encoder": (transformer_encoder.build, transformer_encoder.feeds),
        "light_squeezenet": (lambda: light_models.build("squeezenet"), light_models.feeds),
        "mobilenetv2": (mobilenetv2.build, mobilenetv2.feeds),
    }
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "bin").mkdir(parents=True)
    build = Path(args.build)
    shutil.copy2(build / "bin" / "kiln-run", out / "bin")
    # The runtime by its soname, which kiln-run asks for.
    shutil.copy2(build / "lib" / "libkiln_runtime.so.1", out / "bin")
    shutil.copy2(Path(__file__), out / "gpu_battery.py")
    manifest = []
    for name, (build_model, feeds_of) in models.items():
        print(f"preparing {name}", flush=True)
        model = build_model()
        feeds = feeds_of(model)
        folder = out / name
        folder.mkdir()
        onnx.save(model, str(folder / "model.onnx"))
        subprocess.run([str(build / "bin" / "kiln-compile"), str(folder / "model.onnx"),
                        "--target=nvptx", f"--gpu-arch={args.gpu_arch}",
                        *(["--gpu-emulation"] if args.emulation else []),
                        "-o", str(folder / "model.so")], check=True)
        (folder / "model.onnx").unlink()  # the .so holds what runs
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        reference = dict(zip(names, session.run(names, feeds)))
        inputs = {}
        for i, (input_name, value) in enumerate(feeds.items()):
            np.save(folder / f"input{i}.npy", value)
            inputs[input_name] = f"input{i}.npy"
        outputs = {}
        for i, (output_name, value) in enumerate(reference.items()):
            np.save(folder / f"reference{i}.npy", value)
            outputs[output_name] = f"reference{i}.npy"
        manifest.append({"name": name, "inputs": inputs, "outputs": outputs,
                         "rtol": 1e-3, "atol": 1e-4})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({size / 2**20:.1f} MiB, {len(manifest)} models)")


def run(args):
    import numpy as np
    folder = Path(args.folder).resolve()
    kiln_run = folder / "bin" / "kiln-run"
    env = dict(os.environ, LD_LIBRARY_PATH=str(folder / "bin") + ":" +
               os.environ.get("LD_LIBRARY_PATH", ""))
    sanitizer = shutil.which("compute-sanitizer") or (
        "/usr/local/cuda/bin/compute-sanitizer"
        if Path("/usr/local/cuda/bin/compute-sanitizer").exists() else None)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "models": []}
    for entry in json.loads((folder / "manifest.json").read_text()):
        work = folder / entry["name"]
        base = [str(kiln_run), str(work / "model.so"), "--json",
                "--output-dir", str(work / "out")]
        for name, path in entry["inputs"].items():
            base += ["--input", f"{name}={work / path}"]
        record = {"name": entry["name"], "status": "not run"}
        proc = subprocess.run(base + ["--warmup", "5", "--repeat", str(args.repeat)],
                              capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0:
            record.update(status="error", error=proc.stderr.strip()[-2000:])
        else:
            report = json.loads(proc.stdout)
            record.update(median_ms=report["median_ms"], min_ms=report["min_ms"])
            worst = []
            for name, path in entry["outputs"].items():
                want = np.load(work / path)
                have = np.load(report["outputs"][name])
                bad = ~np.isclose(have, want, rtol=entry["rtol"], atol=entry["atol"],
                                  equal_nan=True)
                worst.append({"output": name, "mismatches": int(bad.sum()),
                              "max_abs_error": float(np.max(np.abs(
                                  have.astype(np.float64) - want))) if want.size else 0.0})
            record["outputs"] = worst
            record["status"] = "pass" if all(w["mismatches"] == 0 for w in worst) \
                else "mismatch"
        for tool in ("memcheck", "racecheck"):
            if not sanitizer:
                record[tool] = "not run: no compute-sanitizer"
                continue
            check = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "9",
                                    *base], capture_output=True, text=True, env=env,
                                   timeout=600)
            record[tool] = "clean" if check.returncode == 0 else \
                f"exit {check.returncode}: " + check.stdout[-1500:]
        print(json.dumps(record), flush=True)
        results["models"].append(record)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="compile and write the references (here)")
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", required=True)
    p.add_argument("--gpu-arch", default="sm_80,sm_90,sm_90a")
    p.add_argument("--emulation", action="store_true",
                   help="also emulation images, to try the battery here with "
                        "KILN_CUDA_DRIVER=build/lib/libkiln_cuda_emulator.so")
    p.set_defaults(fn=prepare)
    r = sub.add_parser("run", help="run on the GPU machine")
    r.add_argument("folder")
    r.add_argument("--out", required=True)
    r.add_argument("--repeat", type=int, default=50)
    r.set_defaults(fn=run)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
