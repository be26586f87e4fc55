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
import re
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
    import recurrent
    import transformer_encoder
    from test_gpu import small_feeds, small_model

    def matmul(n):
        g = onnx.helper
        return g.make_model(g.make_graph(
            [g.make_node("MatMul", ["a", "b"], ["c"])], f"matmul{n}",
            [g.make_tensor_value_info(x, onnx.TensorProto.FLOAT, [n, n]) for x in "ab"],
            [g.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [n, n])]),
            opset_imports=[g.make_opsetid("", 17)], ir_version=8)

    def matmul_feeds(model):
        n = model.graph.input[0].type.tensor_type.shape.dim[0].dim_value
        rng = np.random.default_rng(0)
        # Multiples of 1/8 in [-1, 1): exact products, and files that compress.
        return {x: (rng.integers(-8, 8, (n, n)) / 8).astype(np.float32) for x in "ab"}

    def reductions():
        # A global average pool at batch 8 (a warp per channel), an attention
        # Softmax over 128 keys (a warp per row) and a LayerNormalization
        # over 768 (a block per row).
        g = onnx.helper
        f = onnx.TensorProto.FLOAT
        width = 768
        scale = onnx.numpy_helper.from_array(
            np.linspace(0.5, 1.5, width, dtype=np.float32), "scale")
        bias = onnx.numpy_helper.from_array(
            np.linspace(-1, 1, width, dtype=np.float32), "bias")
        return g.make_model(g.make_graph(
            [g.make_node("GlobalAveragePool", ["x"], ["pooled"]),
             g.make_node("Softmax", ["s"], ["probs"], axis=-1),
             g.make_node("LayerNormalization", ["t", "scale", "bias"], ["normed"],
                         axis=-1)],
            "reductions",
            [g.make_tensor_value_info("x", f, [8, 2048, 7, 7]),
             g.make_tensor_value_info("s", f, [12, 128, 128]),
             g.make_tensor_value_info("t", f, [1024, width])],
            [g.make_tensor_value_info("pooled", f, [8, 2048, 1, 1]),
             g.make_tensor_value_info("probs", f, [12, 128, 128]),
             g.make_tensor_value_info("normed", f, [1024, width])], [scale, bias]),
            opset_imports=[g.make_opsetid("", 17)], ir_version=8)

    def gather(n):
        # An embedding lookup of n run-time indices: their range reduced by a
        # block, then the check (issue 23's index checks on the GPU).
        g = onnx.helper
        table = onnx.numpy_helper.from_array(
            (np.arange(50 * 8, dtype=np.float32) / 8).reshape(50, 8), "table")
        return g.make_model(g.make_graph(
            [g.make_node("Gather", ["table", "ids"], ["y"], name="lookup")],
            f"gather{n}", [g.make_tensor_value_info("ids", onnx.TensorProto.INT64, [n])],
            [g.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [n, 8])], [table]),
            opset_imports=[g.make_opsetid("", 17)], ir_version=8)

    def gather_feeds(model):
        n = model.graph.input[0].type.tensor_type.shape.dim[0].dim_value
        return {"ids": np.random.default_rng(0).integers(-50, 50, n).astype(np.int64)}

    def reductions_feeds(model):
        rng = np.random.default_rng(0)
        return {i.name: (rng.integers(-8, 8, [d.dim_value for d in
                                              i.type.tensor_type.shape.dim]) / 8)
                .astype(np.float32) for i in model.graph.input}

    # name: (model, feeds, extra kiln-compile flags, options). "sanitize": run
    # compute-sanitizer on it (slow: small models only); "profile": record the
    # per-kernel times. The weights are rounded to 16 levels (coarse_weights)
    # so that the folder, shipped as one .tar.xz, fits the 64 MiB a call
    # carries; the references are computed with the same weights.
    models = {
        "small": (small_model, lambda m: small_feeds(), [], {"sanitize"}),
        # Only an sm_80 cubin and PTX: a Hopper GPU must JIT the PTX.
        "small_ptx_fallback": (small_model, lambda m: small_feeds(),
                               ["--gpu-arch=sm_80"], {"sanitize"}),
        "reductions": (reductions, reductions_feeds, [], {"sanitize", "profile"}),
        # Good indices, then one out of range (the run must fail naming it).
        "gather_checked": (lambda: gather(600), gather_feeds, [],
                           {"sanitize", "profile", "bad_index"}),
        "matmul1024": (lambda: matmul(1024), matmul_feeds, [], {"profile"}),
        "matmul2048": (lambda: matmul(2048), matmul_feeds, [], {"profile"}),
        "kiln_cnn": (lambda: coarse_weights(kiln_cnn.build()), kiln_cnn.feeds, [],
                     {"sanitize"}),
        "transformer_encoder": (lambda: coarse_weights(transformer_encoder.build()),
                                transformer_encoder.feeds, [],
                                {"sanitize", "profile"}),
        "light_squeezenet": (lambda: coarse_weights(light_models.build("squeezenet")),
                             light_models.feeds, [], {"profile"}),
        "mobilenetv2": (lambda: coarse_weights(mobilenetv2.build()), mobilenetv2.feeds,
                        [], {"profile"}),
        "light_shufflenet": (lambda: coarse_weights(light_models.build("shufflenet")),
                             light_models.feeds, [], {"profile"}),
        "light_resnet50": (lambda: coarse_weights(light_models.build("resnet50")),
                           light_models.feeds, [], {"profile"}),
        # Recurrences: each layer's steps on one block of threads.
        "lstm_tagger": (lambda: coarse_weights(recurrent.build()), recurrent.feeds,
                        [], {"sanitize", "profile"}),
        "gru_encoder": (lambda: coarse_weights(recurrent.build(gru=True)),
                        recurrent.feeds, [], {"sanitize", "profile"}),
    }
    if args.only:
        models = {k: v for k, v in models.items() if re.fullmatch(args.only, k)}
    # Architectures of tools/models/zoo.py, exported here (zoo.py -o DIR):
    # image, clip or token inputs drawn from a seed, weights coarsened.
    for name in args.zoo_models:
        def zoo_model(name=name):
            return coarse_weights(onnx.load(str(Path(args.zoo) / f"{name}.onnx")))

        def zoo_feeds(model):
            rng = np.random.default_rng(0)
            feeds = {}
            for i in model.graph.input:
                shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
                if i.type.tensor_type.elem_type == onnx.TensorProto.INT64:
                    feeds[i.name] = rng.integers(0, 1000, shape).astype(np.int64)
                else:
                    feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
            return feeds
        models[f"zoo_{name}"] = (zoo_model, zoo_feeds, [], {"profile", "zoo"})
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "bin").mkdir(parents=True)
    build = Path(args.build).resolve()
    shutil.copy2(build / "bin" / "kiln-run", out / "bin")
    # The runtime by its soname, which kiln-run asks for.
    shutil.copy2(build / "lib" / "libkiln_runtime.so.1", out / "bin")
    shutil.copy2(Path(__file__), out / "gpu_battery.py")
    manifest = []
    for name, (build_model, feeds_of, flags, options) in models.items():
        print(f"preparing {name}", flush=True)
        model = build_model()
        feeds = feeds_of(model)
        folder = out / name
        folder.mkdir()
        onnx.save(model, str(folder / "model.onnx"))
        subprocess.run([str(build / "bin" / "kiln-compile"), str(folder / "model.onnx"),
                        "--target=nvptx", f"--gpu-arch={args.gpu_arch}",
                        *(["--gpu-emulation"] if args.emulation else []), *flags,
                        *args.flag,
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
        entry = {"name": name, "inputs": inputs, "outputs": outputs,
                 "rtol": 1e-3, "atol": 1e-3 if "zoo" in options else 1e-4,
                 "options": sorted(options)}
        if "bad_index" in options:
            # The first input with one index past the table's 50 rows.
            first = next(iter(feeds))
            bad = feeds[first].copy()
            bad[len(bad) // 2] = 50
            np.save(folder / "bad_input.npy", bad)
            entry["bad"] = {"input": first, "file": "bad_input.npy",
                            "error": "index 50 is out of range [-50, 49]"}
        # (Deep networks of random weights add up more rounding.)
        manifest.append(entry)
    if args.conformance_per_op:
        manifest += prepare_conformance(out, build, args.conformance_per_op,
                                        args.conformance_filter)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    archive = out.with_name(out.name + ".tar.xz")
    subprocess.run(["tar", "-cJf", str(archive), "-C", str(out.parent), out.name],
                   check=True, env=dict(os.environ, XZ_OPT="-T0 -6"))
    print(f"wrote {out} ({size / 2**20:.1f} MiB, {len(manifest)} models) and "
          f"{archive} ({archive.stat().st_size / 2**20:.1f} MiB)")


# Output types the comparison here handles as numpy does (no bfloat16,
# float8 or 4-bit codes).
PLAIN_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64", "bool"}


def _conformance_case(item):
    """Runs one ONNX node test on the emulator, keeping its files."""
    import conformance
    case, build, keep = item
    return conformance.run_case(case, build, 300, keep)


def prepare_conformance(out, build, per_op, pattern=None):
    """The first `per_op` passing ONNX node tests of each operator (one
    data set, plain output types; only those whose names `pattern` finds,
    when given), compiled for the GPU, run here on the emulator; their
    inputs and ONNX's expected outputs. Returns manifest entries."""
    import multiprocessing
    import tempfile
    import numpy as np
    sys.path.insert(0, str(ROOT / "tools"))
    import conformance
    emulator = build / "lib" / "libkiln_cuda_emulator.so"
    conformance.COMPILE_FLAGS[:] = ["--target=nvptx", "--gpu-arch=sm_80,sm_90",
                                    "--gpu-emulation"]
    os.environ["KILN_CUDA_DRIVER"] = str(emulator)
    os.environ.setdefault("KILN_EMULATOR_ORDER", "shuffle")
    failing = set(conformance.read_expected(conformance.DEFAULT_EXPECTED))
    per = {}
    chosen = []
    for case in conformance.load_node_tests():
        if case.name in failing or len(case.data_sets) != 1 or \
                (pattern and not re.search(pattern, case.name)):
            continue
        model = conformance.load_model(case)
        op = conformance.primary_op(
            {"name": case.name, "ops": sorted({n.op_type for n in model.graph.node})})
        if per.get(op, 0) >= per_op:
            continue
        want = [conformance.to_array(v) for v in case.data_sets[0][1]]
        if not all(isinstance(w, np.ndarray) and w.dtype.name in PLAIN_DTYPES
                   for w in want):
            continue
        per[op] = per.get(op, 0) + 1
        chosen.append(case)
    print(f"conformance subset: {len(chosen)} tests of {len(per)} operators",
          flush=True)
    keep = Path(tempfile.mkdtemp(prefix="kiln-battery-"))
    with multiprocessing.Pool(os.cpu_count()) as pool:
        results = pool.map(_conformance_case, [(c, build, keep) for c in chosen])
    entries = []
    for case, result in zip(chosen, results):
        if result["status"] != "pass" or not (keep / case.name / "m0").is_dir() \
                or (keep / case.name / "m1").exists():
            continue
        model = conformance.load_model(case)
        values, outputs = case.data_sets[0]
        names = [i.name for i in conformance.graph_inputs(model)][:len(values)]
        feeds = [n for n in names if n not in result["frozen"]]
        folder = out / "conformance" / case.name
        folder.mkdir(parents=True)
        shutil.copy2(keep / case.name / "m0" / "model.so", folder / "model.so")
        inputs = {}
        for i, name in enumerate(feeds):
            shutil.copy2(keep / case.name / f"in0_{i}.npy", folder / f"input{i}.npy")
            inputs[name] = f"input{i}.npy"
        refs = {}
        for i, (output, value) in enumerate(zip(model.graph.output, outputs)):
            np.save(folder / f"reference{i}.npy", conformance.to_array(value))
            refs[output.name] = f"reference{i}.npy"
        entries.append({"name": f"conformance/{case.name}", "inputs": inputs,
                        "outputs": refs, "rtol": case.rtol, "atol": case.atol,
                        "options": ["conformance"]})
    shutil.rmtree(keep, ignore_errors=True)
    print(f"conformance subset: {len(entries)} tests written", flush=True)
    return entries


def coarse_weights(model, levels=16):
    """Rounds every large float initializer to `levels` values, so that the
    compiled .so compresses about eightfold; the timing does not depend on
    the values and the reference is made with the same weights."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    for i, init in enumerate(model.graph.initializer):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        w = numpy_helper.to_array(init)
        if w.size < 4096:
            continue
        step = float(np.abs(w).max()) / (levels / 2 - 0.5) or 1.0
        w = (np.floor(w / step) + 0.5) * step
        model.graph.initializer[i].CopyFrom(
            numpy_helper.from_array(w.astype(np.float32), init.name))
    return model


def compare_outputs(entry, work, report):
    """Per output: mismatching elements and the largest error."""
    import numpy as np
    worst = []
    for name, path in entry["outputs"].items():
        want = np.load(work / path)
        have = np.load(report["outputs"][name])
        if have.shape != want.shape:
            worst.append({"output": name, "mismatches": int(want.size) or 1,
                          "shape": [list(have.shape), list(want.shape)]})
            continue
        bad = ~np.isclose(have, want, rtol=entry["rtol"], atol=entry["atol"],
                          equal_nan=True)
        with np.errstate(invalid="ignore"):  # inf - inf where both are inf
            error = float(np.nanmax(np.abs(have.astype(np.float64) - want))) \
                if want.size and not np.isnan(want).all() else 0.0
        worst.append({"output": name, "mismatches": int(bad.sum()),
                      "max_abs_error": error})
    return worst


def run_conformance(folder, tests, kiln_run, env):
    """The conformance subset, several processes at a time: pass, mismatch
    or error per test, and the counts."""
    from concurrent.futures import ThreadPoolExecutor

    def one(entry):
        work = folder / entry["name"]
        args = [str(kiln_run), str(work / "model.so"), "--json", "--output-dir",
                str(work / "out")]
        for name, path in entry["inputs"].items():
            args += ["--input", f"{name}={work / path}"]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, env=env,
                                  timeout=120)
        except subprocess.TimeoutExpired:
            return {"name": entry["name"], "status": "error", "error": "timed out"}
        if proc.returncode != 0:
            return {"name": entry["name"], "status": "error",
                    "error": proc.stderr.strip()[-500:]}
        try:
            worst = compare_outputs(entry, work, json.loads(proc.stdout))
        except Exception as error:  # report, never hide
            return {"name": entry["name"], "status": "error",
                    "error": f"{type(error).__name__}: {error}"}
        ok = all(w["mismatches"] == 0 for w in worst)
        return {"name": entry["name"], "status": "pass" if ok else "mismatch",
                **({} if ok else {"outputs": worst})}

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        records = list(pool.map(one, tests))
    counts = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = {"tests": len(tests), "counts": counts,
               "seconds": round(time.monotonic() - started, 1),
               "not_passed": [r for r in records if r["status"] != "pass"]}
    print(json.dumps({"conformance": {k: v for k, v in summary.items()
                                      if k != "not_passed"},
                      "not_passed": [r["name"] for r in summary["not_passed"]]}),
          flush=True)
    return summary


def environment():
    """What the GPU machine is: GPU, driver, toolkit."""
    info = {}
    for key, cmd in {
            "gpu": ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                    "clocks.max.sm,compute_cap", "--format=csv,noheader"],
            "ptxas": ["ptxas", "--version"],
            "sanitizer": ["compute-sanitizer", "--version"]}.items():
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            info[key] = (proc.stdout or proc.stderr).strip().splitlines()[-1:]
        except (OSError, subprocess.TimeoutExpired) as error:
            info[key] = f"not available: {error}"
    return info


def run(args):
    import numpy as np
    folder = Path(args.folder).resolve()
    kiln_run = folder / "bin" / "kiln-run"
    env = dict(os.environ, LD_LIBRARY_PATH=str(folder / "bin") + ":" +
               os.environ.get("LD_LIBRARY_PATH", ""))
    sanitizer = shutil.which("compute-sanitizer") or (
        "/usr/local/cuda/bin/compute-sanitizer"
        if Path("/usr/local/cuda/bin/compute-sanitizer").exists() else None)
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "environment": environment(), "models": []}
    print(json.dumps(results["environment"]), flush=True)
    pattern = re.compile(args.only) if args.only else None
    manifest = json.loads((folder / "manifest.json").read_text())
    tests = [e for e in manifest if "conformance" in e.get("options", [])]
    if tests and not (pattern and not pattern.fullmatch("conformance")):
        results["conformance"] = run_conformance(folder, tests, kiln_run, env)
    for entry in manifest:
        if pattern and not pattern.fullmatch(entry["name"]) or entry in tests:
            continue
        work = folder / entry["name"]
        options = set(entry.get("options", []))
        so = work / "model.so"
        base = [str(kiln_run), str(so), "--json", "--output-dir", str(work / "out")]
        for name, path in entry["inputs"].items():
            base += ["--input", f"{name}={work / path}"]
        record = {"name": entry["name"], "status": "not run"}
        started = time.monotonic()
        try:
            proc = subprocess.run(base + ["--warmup", "5", "--repeat", str(args.repeat)],
                                  capture_output=True, text=True, env=env, timeout=300)
        except subprocess.TimeoutExpired:
            proc = None
            record.update(status="error", error="timed out after 300 s")
        record["seconds"] = round(time.monotonic() - started, 2)
        if proc is not None and proc.returncode != 0:
            record.update(status="error", error=proc.stderr.strip()[-2000:])
        elif proc is not None:
            report = json.loads(proc.stdout)
            record.update(median_ms=report["median_ms"], min_ms=report["min_ms"])
            worst = compare_outputs(entry, work, report)
            record["outputs"] = worst
            record["status"] = "pass" if all(w["mismatches"] == 0 for w in worst) \
                else "mismatch"
            if "profile" in options:
                prof = subprocess.run(base + ["--warmup", "2", "--repeat", "10",
                                              "--profile"],
                                      capture_output=True, text=True, env=env,
                                      timeout=300)
                if prof.returncode == 0:
                    p = json.loads(prof.stdout)["profile"]
                    kernels = sorted(p["kernels"], key=lambda k: -k["ms"])
                    record["profile"] = {"total_ms": p["total_ms"],
                                         "outside_ms": p["outside_ms"],
                                         "kernels": len(kernels),
                                         "slowest": kernels[:12]}
                else:
                    record["profile"] = "error: " + prof.stderr.strip()[-500:]
        if "bad" in entry and record["status"] == "pass":
            # The bad index fails the run with its message; the inputs are
            # otherwise the good ones.
            bad = entry["bad"]
            args_bad = [str(kiln_run), str(so), "--output-dir", str(work / "out_bad")]
            for name, path in entry["inputs"].items():
                chosen = bad["file"] if name == bad["input"] else path
                args_bad += ["--input", f"{name}={work / chosen}"]
            failed = subprocess.run(args_bad, capture_output=True, text=True, env=env,
                                    timeout=300)
            ok = failed.returncode == 1 and bad["error"] in failed.stderr
            record["bad_index"] = "refused" if ok else \
                f"exit {failed.returncode}: {failed.stderr.strip()[-500:]}"
            if not ok:
                record["status"] = "mismatch"
        for tool in ("memcheck", "racecheck"):
            if "sanitize" not in options:
                continue
            if args.no_sanitizers:
                record[tool] = "not run: --no-sanitizers"
                continue
            if not sanitizer:
                record[tool] = "not run: no compute-sanitizer"
                continue
            check = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "9",
                                    *base], capture_output=True, text=True, env=env,
                                   timeout=300)
            record[tool] = "clean" if check.returncode == 0 else \
                f"exit {check.returncode}: " + (check.stdout + check.stderr)[-1500:]
        line = {k: v for k, v in record.items() if k != "profile"}
        print(json.dumps(line)[:600], flush=True)
        results["models"].append(record)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


def peers(args):
    """PyTorch eager and torch.compile on the same GPU, batch 1, float32 with
    TF32 off (Kiln computes in float32 FMA), timed like kiln-run: input from
    the host, output back to the host, with CUDA events; and cuBLAS SGEMM."""
    import torch
    import torchvision
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
               "models": []}

    def median_ms(fn, warmup=10, repeat=args.repeat):
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeat):
            start, stop = torch.cuda.Event(enable_timing=True), \
                torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return sorted(times)[len(times) // 2]

    nets = {"mobilenetv2": torchvision.models.mobilenet_v2,
            "light_squeezenet": torchvision.models.squeezenet1_0,
            "light_resnet50": torchvision.models.resnet50}
    pattern = re.compile(args.only) if args.only else None
    # (record name, a function making the network and its input)
    todo = [(name, lambda make=make: (make(), torch.randn(1, 3, 224, 224)))
            for name, make in nets.items()
            if not (pattern and not pattern.fullmatch(name))]
    sys.path.insert(0, str(ROOT / "tools" / "models"))  # run from the repository

    def zoo_net(name):
        import zoo
        torch.manual_seed(0)
        net, shape = zoo.MODELS[name]()
        return net, (torch.randint(0, 1000, shape) if len(shape) == 2
                     else torch.randn(*shape))
    todo += [(f"zoo_{name}", lambda name=name: zoo_net(name)) for name in args.zoo]
    began = time.monotonic()
    for name, make in todo:
        net, x = make()
        net = net.eval().cuda()
        record = {"name": name}
        with torch.no_grad():
            record["eager_ms"] = median_ms(lambda: net(x.cuda()).cpu())
            if time.monotonic() - began < args.compile_budget:
                started = time.monotonic()
                try:
                    compiled = torch.compile(net)
                    record["compile_ms"] = median_ms(lambda: compiled(x.cuda()).cpu())
                    record["compile_seconds"] = round(time.monotonic() - started, 1)
                except Exception as error:  # report, never hide
                    record["compile_error"] = f"{type(error).__name__}: {error}"[:500]
            else:
                record["compile_ms"] = "not run: --compile-budget spent"
        print(json.dumps(record), flush=True)
        results["models"].append(record)
    for n in (1024, 2048, 4096):
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        ms = median_ms(lambda: a @ b)
        record = {"name": f"sgemm{n}", "cublas_ms": ms,
                  "tflops": 2 * n ** 3 / ms / 1e9}
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
    p.add_argument("--only", help="a regular expression: only the models it matches")
    p.add_argument("--zoo", default="zoo", metavar="DIR",
                   help="where tools/models/zoo.py wrote its models")
    p.add_argument("--zoo-models", nargs="*", default=[], metavar="NAME",
                   help="zoo models to add (zoo_NAME), as DIR/NAME.onnx")
    p.add_argument("--flag", action="append", default=[], metavar="FLAG",
                   help="one more kiln-compile flag for every model (e.g. "
                        "--flag=--gpu-implicit-gemm); repeatable")
    p.add_argument("--conformance-per-op", type=int, default=1, metavar="N",
                   help="also the first N passing ONNX node tests of each "
                        "operator (default 1; 0: none)")
    p.add_argument("--conformance-filter", metavar="REGEX",
                   help="only the node tests whose names REGEX finds")
    p.set_defaults(fn=prepare)
    r = sub.add_parser("run", help="run on the GPU machine")
    r.add_argument("folder")
    r.add_argument("--out", required=True)
    r.add_argument("--repeat", type=int, default=50)
    r.add_argument("--only", help="a regular expression: only the models it matches")
    r.add_argument("--no-sanitizers", action="store_true",
                   help="skip compute-sanitizer (a second timing pass)")
    r.set_defaults(fn=run)
    t = sub.add_parser("peers", help="PyTorch on the GPU machine, for comparison")
    t.add_argument("--out", required=True)
    t.add_argument("--repeat", type=int, default=50)
    t.add_argument("--only", help="a regular expression: only the models it matches")
    t.add_argument("--zoo", nargs="*", default=[], metavar="NAME",
                   help="tools/models/zoo.py's architectures to time too, "
                        "eager and (within --compile-budget) torch.compile")
    t.add_argument("--compile-budget", type=float, default=300, metavar="S",
                   help="seconds after which no more torch.compile is tried")
    t.set_defaults(fn=peers)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
