#!/usr/bin/env python3
"""Kiln against onnxruntime, IREE and TVM on whole models, side by side in one run.

For each model, batch size and thread count, every engine compiles the same
ONNX file and runs the same seeded inputs at the same thread count, each in a
process of its own (one engine's thread pool or crash cannot disturb
another), and the harness prints one row per engine: the median latency,
its ratio to onnxruntime's (below 1 is faster), the achieved GFLOP/s (the
model's FLOPs: multiply-adds of Conv, ConvTranspose, Gemm and MatMul counted
twice, from the ONNX graph), its share of the machine's measured peak, the
peak resident memory of the process that ran the model (wait4's
ru_maxrss, through a small launcher: see LAUNCHER), the compile time,
and whether the outputs agree with onnxruntime's (rtol 1e-3, atol 1e-4;
for f16 outputs rtol 1e-2 and atol 2^-10 of the largest magnitude).

  .venv/bin/python tools/benchmark.py --models squeezenet mobilenetv2 bert_base \\
      --batch 1 --threads 1 2 --markdown bench.md --svg bench.svg

The engines and how they are run:
  kiln         kiln-compile (timed), then kiln-run --threads T --json
  kiln-before  kiln from --build-before (an earlier commit's build), for a
               change's before and after in one interleaved run
  kiln-bf16    the same with --precision=bf16 (bf16 operands, f32
               accumulation; its outputs column is its error against fp32)
  onnxruntime  an InferenceSession with intra_op_num_threads=T (its creation
               is the "compile" time)
  iree         iree-import-onnx (with --opset-version 17 for older models:
               IREE lowers only recent versions of some operators), then
               iree-compile for the llvm-cpu backend
               and the host CPU with IREE's data tiling on (timed together;
               without --iree-opt-data-tiling a 1024x1024 matmul ran at 30% of
               onnxruntime's speed, with it at par); run by iree.runtime's
               local-task driver with --task_topology_max_group_count=T
  tvm          the Relax ONNX frontend, untuned, built with tvm.compile for
               llvm with the host CPU (timed); run by the Relax VM with
               TVM_NUM_THREADS=T
IREE and TVM live in a separate environment, .venv-bench, made by
`tools/setup.sh --bench`; without it they are reported as not installed,
with that command. An engine that cannot compile or run a model gets a row
saying so, with the line of its output that says "error" (or its last). A
peer whose runs would take longer than --time-budget seconds gets one
warm-up and fewer timed runs (at least 3), as a note under the table says.
A batch other than 1 rebuilds the transformer models at that batch and
rewrites the others' batch dimension (inputs and constant Reshape targets),
except in a file whose inputs already have that batch (the zoo exported
with tools/models/zoo.py --batch), which runs as it is.

The peak: tools/peak_fma.c (register-resident vector FMA chains, one
pthread per thread) is built with clang -O2 -march=native and run five
times per thread count before the first model and after each one; the best
rate seen is the peak, so a busy moment of a shared machine does not lower
it. Progress, one line per step with its result, goes to stderr; the
table, against the final peak, to stdout at the end.

With --busy-core, each thread count runs twice, engines interleaved as
always: as it is, then while another process spins on the last CPU (a
shared machine's neighbour); those rows say "busy core" and compare with
onnxruntime's under the same load.

Models are names of tools/models builders (kiln_cnn, transformer, bert_base,
mobilenetv2, and the light_* models: resnet50, squeezenet, inception_v1,
vgg19, ...) or .onnx paths; a name with -qdq or -qop appended is that model
quantised to int8 by onnxruntime's quantize_static (per channel, after its
pre-processing) in the QDQ or QOperator format, and one with -dyn appended
is that model quantised by its quantize_dynamic (int8 weights, activations
quantised at run time); every engine runs the same quantised file. These
machines are shared and noisy: compare medians from one run.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tools" / "models"
BUILDERS = {
    "kiln_cnn": ["kiln_cnn.py"],
    "transformer": ["transformer_encoder.py"],
    "bert_base": ["transformer_encoder.py", "--bert-base"],
    "mobilenetv2": ["mobilenetv2.py"],
    "lstm_tagger": ["recurrent.py"],
    "gru_encoder": ["recurrent.py", "--gru-encoder"],
}
# Builders that take the batch themselves (--batch) rather than rebatch's edit.
BATCHED_BUILDERS = {"transformer", "bert_base", "lstm_tagger", "gru_encoder"}
ENGINES = ["kiln", "kiln-before", "kiln-bf16", "kiln-dynamic", "onnxruntime", "iree", "tvm"]
# kiln-dynamic (the same model with a symbolic batch) runs when asked for.
DEFAULT_ENGINES = ["kiln", "onnxruntime", "iree", "tvm"]
PEERS = {"iree": "iree.runtime", "tvm": "tvm"}
SETUP_BENCH = "tools/setup.sh --bench"
RTOL, ATOL = 1e-3, 1e-4


def log(message):
    print(f"benchmark: {message}", file=sys.stderr, flush=True)


def one_line(text, limit=160):
    """The most telling line of an error output, shortened for a table cell:
    the first line that says "error" (without its file:line:column prefix),
    else the last line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return "no message"
    pick = next((line for line in lines if "error" in line.lower()), lines[-1])
    pick = re.sub(r"^\S+:\d+:\d+: ", "", pick).replace("|", "/")
    return pick if len(pick) <= limit else pick[:limit - 3] + "..."


# -- Processes --------------------------------------------------------------

# Runs a command and writes the peak RSS (KiB) of that command alone to the
# file argv[1]. Linux copies a parent's high-water RSS into a child at fork,
# so wait4 on a child of this (large) harness would report the harness's
# size: a small interpreter in between forks the command from a fresh,
# small process instead (its own few MB are the floor of the figure).
LAUNCHER = """import os, sys
out, args = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execvp(args[0], args)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(args, log_path, timeout, env=None):
    """Runs `args` with stdout and stderr into `log_path`; returns (exit
    code, wall seconds, peak RSS of the command in MB, output text)."""
    rss_path = Path(str(log_path) + ".rss")
    rss_path.unlink(missing_ok=True)
    start = time.perf_counter()
    with open(log_path, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(rss_path),
                                 *map(str, args)],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        except BaseException:  # interrupted: leave no engine running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        if code is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.perf_counter() - start
    text = Path(log_path).read_text(errors="replace")
    rss = int(rss_path.read_text()) / 1024 if rss_path.exists() else 0.0
    if code is None:
        return 124, wall, rss, f"timed out after {timeout} s"
    return code, wall, rss, text


def worker_command(python, engine, step, **options):
    args = [str(python), str(Path(__file__).resolve()), "--worker", engine, "--step", step]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


# -- Models -----------------------------------------------------------------

def quantize_model(path, out, quant_format, seed=0):
    """`path` quantised to int8 by onnxruntime's quantize_static, as a
    deployment team would: its pre-processing first, per-channel int8
    weights, uint8 activations, 8 seeded random calibration samples;
    quant_format "QDQ" or "QOperator"."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = out.with_suffix(".pre.onnx")
    model = onnx.load(str(path))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:  # per-channel DequantizeLinear needs opset 13
        import onnx.version_converter
        model = onnx.version_converter.convert_version(model, 13)
        path = out.with_suffix(".opset13.onnx")
        onnx.save(model, str(path))
    quant_pre_process(str(path), str(pre), skip_symbolic_shape=True)
    model = onnx.load(str(pre))
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(8):
        sample = {}
        for value in model.graph.input:
            shape = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
            sample[value.name] = rng.standard_normal(shape).astype(np.float32)
        feeds.append(sample)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter(feeds)

        def get_next(self):
            return next(self.samples, None)

    quantize_static(str(pre), str(out), Reader(),
                    quant_format=getattr(QuantFormat, quant_format),
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)


def build_model(name, batch, workdir):
    """The model's .onnx file at `batch`; raises RuntimeError if it cannot.
    A name ending in -qdq or -qop is the model quantised by onnxruntime in
    that format (quantize_model); one ending in -dyn, by onnxruntime's
    quantize_dynamic (int8 weights, activations quantised at run time)."""
    import onnx
    if name.endswith("-dyn"):
        base = build_model(name[:-len("-dyn")], batch, workdir)
        out = workdir / f"{name}_b{batch}.onnx"
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            quantize_dynamic(str(base), str(out), weight_type=QuantType.QInt8)
        except Exception as error:  # noqa: BLE001 - any failure is a cell
            raise RuntimeError(one_line(error)) from error
        return out
    for suffix, quant_format in (("-qdq", "QDQ"), ("-qop", "QOperator")):
        if name.endswith(suffix):
            base = build_model(name[:-len(suffix)], batch, workdir)
            out = workdir / f"{name}_b{batch}.onnx"
            try:
                quantize_model(base, out, quant_format)
            except Exception as error:  # noqa: BLE001 - any failure is a cell
                raise RuntimeError(one_line(error)) from error
            return out
    if name.endswith(".onnx"):
        path = Path(name)
        stem = path.stem
    else:
        stem = name
        path = workdir / f"{name}.onnx"
        if name in BUILDERS:
            script, *extra = BUILDERS[name]
            if name in BATCHED_BUILDERS:
                extra += ["--batch", str(batch)]
            args = [sys.executable, str(MODELS / script), "-o", str(path), *extra]
        else:
            args = [sys.executable, str(MODELS / "light_models.py"), name, "-o", str(path)]
        proc = subprocess.run(args, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(one_line(proc.stderr))
        if name in BATCHED_BUILDERS:
            return path
    model = onnx.load(str(path))
    if has_batch(model, batch) or (batch == 1 and not symbolic_first(model)):
        return path
    model = rebatch(model, batch)
    out = workdir / f"{stem}_b{batch}.onnx"
    onnx.save(model, str(out))
    return out


def input_dims(model):
    """The shape (its dims) of each graph input that is not a weight."""
    weights = {t.name for t in model.graph.initializer}
    return [value.type.tensor_type.shape.dim for value in model.graph.input
            if value.name not in weights]


def has_batch(model, batch):
    """Whether every input of `model` already leads with `batch` (a file
    exported at that batch, as tools/models/zoo.py --batch writes)."""
    return all(d and d[0].dim_value == batch for d in input_dims(model))


def symbolic_first(model):
    """Whether an input of `model` leads with a symbolic size (a model
    exported with a dynamic batch axis)."""
    return any(d and not d[0].HasField("dim_value") for d in input_dims(model))


def rebatch(model, batch):
    """`model` with batch `batch` instead of 1 or a symbolic one (a model
    exported with a dynamic batch axis): every graph input's first
    dimension, the first entry of constant Reshape targets that is 1, and
    the shapes inferred again."""
    import onnx
    from onnx import numpy_helper, shape_inference
    graph = model.graph
    for dims in input_dims(model):
        if dims and (dims[0].dim_value == 1 or not dims[0].HasField("dim_value")):
            dims[0].dim_value = batch
    inits = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Reshape" and node.input[1] in inits:
            shape = numpy_helper.to_array(inits[node.input[1]]).copy()
            if shape.size and shape[0] == 1:
                shape[0] = batch
                inits[node.input[1]].CopyFrom(numpy_helper.from_array(shape, node.input[1]))
    del graph.value_info[:]
    for value in graph.output:
        value.type.tensor_type.ClearField("shape")
    model = shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    return model


def count_flops(model):
    """2 x multiply-adds of the convolutions and matrix products."""
    import numpy as np
    from onnx import shape_inference
    model = shape_inference.infer_shapes(model)
    shapes = {}
    for value in list(model.graph.value_info) + list(model.graph.input) + \
            list(model.graph.output):
        shapes[value.name] = [d.dim_value for d in value.type.tensor_type.shape.dim]
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


def save_inputs(model, directory):
    """Seeded inputs as directory/<i>.npy, in graph order; returns the names."""
    import numpy as np
    sys.path.insert(0, str(MODELS))
    from common import random_inputs
    feeds = random_inputs(model, seed=0, int_high=100)
    directory.mkdir(parents=True, exist_ok=True)
    for i, value in enumerate(feeds.values()):
        np.save(directory / f"{i}.npy", np.ascontiguousarray(value))
    (directory / "names.json").write_text(json.dumps(list(feeds)))
    return list(feeds)


def load_inputs(directory):
    import numpy as np
    names = json.loads((Path(directory) / "names.json").read_text())
    return names, [np.load(Path(directory) / f"{i}.npy") for i in range(len(names))]


def save_outputs(values, directory):
    import numpy as np
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for i, value in enumerate(values):
        np.save(directory / f"{i}.npy", np.asarray(value))


def compare_outputs(got_dir, expected_dir):
    """"match", or "DIFFER (max abs error E, relative R, cosine C)" (the
    largest error, and relative to the reference's largest magnitude, and
    the smallest cosine similarity of an output with its reference), or why
    they cannot be compared."""
    import numpy as np
    expected = sorted(Path(expected_dir).glob("*.npy"), key=lambda p: int(p.stem))
    worst = relative = 0.0
    cosine = 1.0
    for path in expected:
        other = Path(got_dir) / path.name
        if not other.exists():
            return f"output {path.stem} missing"
        want, got = np.load(path), np.load(other)
        if want.shape != got.shape:
            if want.size != got.size:
                return f"output {path.stem}: shape {list(got.shape)}, expected {list(want.shape)}"
            got = got.reshape(want.shape)
        rtol, atol = RTOL, ATOL
        if want.dtype == np.float16:
            # f16 keeps 11 bits: an output step is 2^-10 of its magnitude,
            # and two engines that round at different points differ by a
            # few steps.
            rtol = 1e-2
            atol = max(ATOL, 2.0 ** -10 * float(np.max(np.abs(want), initial=0)))
        if not np.allclose(got.astype(np.float64), want.astype(np.float64),
                           rtol=rtol, atol=atol):
            a, b = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
            error = float(np.max(np.abs(a - b)))
            worst = max(worst, error)
            relative = max(relative, error / max(float(np.max(np.abs(b))), 1e-30))
            norms = np.linalg.norm(a) * np.linalg.norm(b)
            if norms > 0:
                cosine = min(cosine, float(a @ b / norms))
    if worst == 0.0:
        return "match"
    return (f"DIFFER (max abs error {worst:.2g}, relative {relative:.2g}, "
            f"cosine {cosine:.6f})")


# -- The machine's peak -------------------------------------------------------

def measure_peak(threads_list, workdir, repeats=5):
    """{threads: GFLOP/s} of tools/peak_fma.c, best of `repeats` runs."""
    clang = shutil.which("clang") or "/usr/lib/llvm-22/bin/clang"
    exe = workdir / "peak_fma"
    # -mprefer-vector-width=512: clang's tuning for Intel's AVX-512 server
    # cores would split the 64-byte vectors in two, and half the peak.
    proc = subprocess.run([clang, "-O2", "-march=native", "-mprefer-vector-width=512",
                           "-ffp-contract=fast", "-pthread",
                           str(ROOT / "tools" / "peak_fma.c"), "-o", str(exe)],
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError("cannot build tools/peak_fma.c: " + one_line(proc.stderr))
    peaks = {}
    for threads in threads_list:
        best = 0.0
        for _ in range(repeats):
            out = subprocess.run([str(exe), str(threads), "30000000"], check=True,
                                 capture_output=True, text=True).stdout
            best = max(best, float(out.split()[0]))
        peaks[threads] = best
    return peaks


# -- Workers: one engine, one step, in its own process --------------------------

def time_calls(call, warmup, repeat, budget_s, outputs):
    """(median ms, runs) of `call` after `warmup` calls; the first call's
    result is saved in `outputs`. A slow engine gets fewer runs, at least 3,
    when warmup + repeat calls would take longer than `budget_s` (the first
    call, a warm-up, tells)."""
    import numpy as np
    start = time.perf_counter()
    save_outputs(call(), outputs)
    first = time.perf_counter() - start
    if first * (warmup + repeat) > budget_s:
        warmup, repeat = 1, max(3, min(repeat, int(budget_s / first)))
    for _ in range(warmup - 1):
        call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times)), repeat


def worker_onnxruntime(args):
    import onnxruntime
    names, values = load_inputs(args.inputs)
    start = time.perf_counter()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(args.model), options,
                                           providers=["CPUExecutionProvider"])
    compile_s = time.perf_counter() - start
    feeds = dict(zip(names, values))
    outputs = [o.name for o in session.get_outputs()]
    median, runs = time_calls(lambda: session.run(outputs, feeds), args.warmup,
                              args.repeat, args.time_budget, args.outputs)
    return {"median_ms": median, "runs": runs, "compile_s": compile_s}


def iree_module(args):
    import iree.runtime as rt
    rt.flags.parse_flags(f"--task_topology_max_group_count={args.threads}")
    config = rt.Config("local-task")
    context = rt.SystemContext(config=config)
    module = rt.VmModule.copy_buffer(context.instance, Path(args.artifact).read_bytes())
    context.add_vm_module(module)
    entries = [n for n in module.function_names
               if not n.startswith("__") and not n.endswith("$async")]
    if len(entries) != 1:
        raise RuntimeError(f"expected one entry function, found {entries}")
    return rt, config, context.modules[module.name][entries[0]]


def worker_iree(args):
    rt, config, function = iree_module(args)
    names, values = load_inputs(args.inputs)
    device_values = [rt.asdevicearray(config.device, v) for v in values]

    def call():
        result = function(*device_values)
        results = result if isinstance(result, (tuple, list)) else [result]
        return [r.to_host() for r in results]

    median, runs = time_calls(call, args.warmup, args.repeat, args.time_budget,
                              args.outputs)
    return {"median_ms": median, "runs": runs}


def worker_tvm_compile(args):
    import onnx
    import tvm
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.target import codegen
    model = onnx.load(str(args.model))
    start = time.perf_counter()
    module = from_onnx(model, keep_params_in_input=False)
    # "-mcpu=native" in TVM's target syntax: the host CPU as LLVM names it.
    target = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(),
                                "mtriple": codegen.llvm_get_system_triple()})
    executable = tvm.compile(module, target=target)
    executable.export_library(str(args.artifact))
    return {"compile_s": time.perf_counter() - start}


def worker_tvm(args):
    import tvm
    from tvm import relax
    names, values = load_inputs(args.inputs)
    executable = tvm.runtime.load_module(str(args.artifact))
    device = tvm.cpu()
    vm = relax.VirtualMachine(executable, device)
    tensors = [tvm.runtime.tensor(v, device) for v in values]

    def call():
        result = vm["main"](*tensors)
        results = [result] if isinstance(result, tvm.runtime.Tensor) else list(result)
        return [r.numpy() for r in results]

    # The copies to numpy are timed too, as IREE's to_host: both are small.
    median, runs = time_calls(call, args.warmup, args.repeat, args.time_budget,
                              args.outputs)
    return {"median_ms": median, "runs": runs}


def run_worker(args):
    workers = {("onnxruntime", "run"): worker_onnxruntime, ("iree", "run"): worker_iree,
               ("tvm", "compile"): worker_tvm_compile, ("tvm", "run"): worker_tvm}
    args.threads = args.threads[0]
    result = workers[(args.worker, args.step)](args)
    Path(args.result).write_text(json.dumps(result))
    return 0


# -- Engines, from the harness's side ---------------------------------------------

class Engine:
    """Compiles once per model file, runs once per thread count; every step
    is a subprocess measured by run_measured. Results are dicts with
    "error" on failure."""

    def __init__(self, name, options, work):
        self.name, self.options, self.work = name, options, work

    def available(self):
        return None  # or why not

    def compile(self, model, tag):
        return {"compile_s": 0.0}

    def run(self, model, tag, inputs, threads, outputs):
        raise NotImplementedError

    def measured(self, args, tag, step, timeout, env=None):
        logfile = self.work / f"{tag}.{self.name}.{step}.log"
        code, wall, rss, text = run_measured(args, logfile, timeout, env=env)
        return code, wall, rss, text


class Kiln(Engine):
    flags = []

    @property
    def build(self):
        """The Kiln build whose kiln-compile and kiln-run this engine runs."""
        return self.options.build

    def available(self):
        build = self.build
        missing = [t for t in ("kiln-compile", "kiln-run") if not (build / "bin" / t).exists()]
        return f"{', '.join(missing)} not built in {build}" if missing else None

    def compile(self, model, tag):
        so = self.work / f"{tag}.{self.name}.so"
        code, wall, rss, text = self.measured(
            [str(self.build / "bin" / "kiln-compile"), str(model), "-o", str(so),
             *self.flags],
            tag, "compile", self.options.compile_timeout)
        if code:
            return {"error": "compile failed: " + one_line(text)}
        self.artifact = so
        return {"compile_s": wall, "compile_rss_mb": rss}

    def run(self, model, tag, inputs, threads, outputs):
        names = json.loads((inputs / "names.json").read_text())
        args = [str(self.build / "bin" / "kiln-run"), str(self.artifact), "--json",
                "--output-dir", str(outputs / "by-name"), "--threads", str(threads),
                "--warmup", str(self.options.warmup), "--repeat", str(self.options.repeat)]
        for i, name in enumerate(names):
            args += ["--input", f"{name}={inputs / f'{i}.npy'}"]
        code, wall, rss, text = self.measured(args, f"{tag}.t{threads}", "run",
                                              self.options.run_timeout)
        if code:
            return {"error": "run failed: " + one_line(text)}
        import numpy as np
        result = json.loads(text.strip().splitlines()[-1])
        paths = list(result["outputs"].values())  # in the model's output order
        save_outputs([np.load(p) for p in paths], outputs)
        return {"median_ms": result["median_ms"], "runs": result["repeat"], "rss_mb": rss}


class KilnBF16(Kiln):
    """Kiln with --precision=bf16: float convolutions and matmuls on bf16
    operands (f32 accumulation); its outputs column is its error against
    onnxruntime's fp32."""
    flags = ["--precision=bf16"]


class KilnBefore(Kiln):
    """Kiln from another build (--build-before: an earlier commit's), run
    beside the current one so that a change's before and after are
    interleaved with the peers in one run."""

    @property
    def build(self):
        return self.options.build_before

    def available(self):
        if self.options.build_before is None:
            return "no --build-before given"
        return super().available()


class KilnDynamic(Kiln):
    """Kiln on the same model with a symbolic batch (issue 21): the model's
    batch becomes the dim_param "batch" (tools/models/common.py
    symbolic_batch), compiled once for batches 1..64 and run at the
    benchmark's batch, so that its time compares with the static build's."""

    def compile(self, model, tag):
        import onnx
        sys.path.insert(0, str(MODELS))
        from common import symbolic_batch
        dynamic = self.work / f"{tag}.dynamic.onnx"
        try:
            onnx.save(symbolic_batch(onnx.load(str(model))), str(dynamic))
        except Exception as error:  # a model the helper cannot rewrite
            return {"error": "no symbolic batch: " + one_line(error)}
        so = self.work / f"{tag}.kiln-dynamic.so"
        code, wall, rss, text = self.measured(
            [str(self.build / "bin" / "kiln-compile"), str(dynamic), "-o", str(so),
             "--dynamic-dims", "batch=1..64"],
            tag, "compile", self.options.compile_timeout)
        if code:
            return {"error": "compile failed: " + one_line(text)}
        self.artifact = so
        return {"compile_s": wall, "compile_rss_mb": rss}


class PythonWorkerEngine(Engine):
    """An engine whose run step is a worker of this script in `python`."""
    python = sys.executable
    env = {}

    def run(self, model, tag, inputs, threads, outputs):
        result_file = self.work / f"{tag}.t{threads}.{self.name}.json"
        args = worker_command(self.python, self.name, "run", model=model,
                              artifact=getattr(self, "artifact", model), inputs=inputs,
                              outputs=outputs, threads=threads, warmup=self.options.warmup,
                              repeat=self.options.repeat,
                              time_budget=self.options.time_budget, result=result_file)
        env = dict(os.environ, **{k: v.format(threads=threads) for k, v in self.env.items()})
        code, wall, rss, text = self.measured(args, f"{tag}.t{threads}", "run",
                                              self.options.run_timeout, env=env)
        if code:
            return {"error": "run failed: " + one_line(text)}
        result = json.loads(result_file.read_text())
        result["rss_mb"] = rss
        return result


class OnnxRuntime(PythonWorkerEngine):
    """Runs from this script's own environment; no separate compile step."""


class Peer(PythonWorkerEngine):
    """IREE or TVM, from the benchmark environment."""

    def __init__(self, name, options, work):
        super().__init__(name, options, work)
        self.python = options.peer_python

    def available(self):
        if not Path(self.python).exists():
            return f"not installed: run {SETUP_BENCH}"
        check = subprocess.run([str(self.python), "-c", f"import {PEERS[self.name]}"],
                               capture_output=True, text=True)
        if check.returncode:
            return f"not installed ({one_line(check.stderr)}): run {SETUP_BENCH}"
        return None


class Iree(Peer):
    def compile(self, model, tag):
        bindir = Path(self.python).parent
        mlir = self.work / f"{tag}.iree.mlir"
        vmfb = self.work / f"{tag}.iree.vmfb"
        # IREE's ONNX lowering knows the recent versions of each operator
        # (MaxPool from opset 12 on, ...): older models go through its
        # importer's own version converter first.
        import onnx
        opset = next((o.version for o in onnx.load(str(model), load_external_data=False)
                      .opset_import if o.domain in ("", "ai.onnx")), 17)
        upgrade = ["--opset-version", "17"] if opset < 17 else []
        code, wall1, rss1, text = self.measured(
            [str(bindir / "iree-import-onnx"), str(model), *upgrade, "-o", str(mlir)],
            tag, "import", self.options.compile_timeout)
        if code:
            return {"error": "import failed: " + one_line(text)}
        code, wall2, rss2, text = self.measured(
            [str(bindir / "iree-compile"), str(mlir), "--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=llvm-cpu",
             "--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling", "-o", str(vmfb)],
            tag, "compile", self.options.compile_timeout)
        mlir.unlink(missing_ok=True)
        if code:
            return {"error": "compile failed: " + one_line(text)}
        self.artifact = vmfb
        return {"compile_s": wall1 + wall2, "compile_rss_mb": max(rss1, rss2)}


class Tvm(Peer):
    env = {"TVM_NUM_THREADS": "{threads}"}

    def compile(self, model, tag):
        so = self.work / f"{tag}.tvm.so"
        result_file = self.work / f"{tag}.tvm.compile.json"
        args = worker_command(self.python, "tvm", "compile", model=model, artifact=so,
                              result=result_file)
        code, wall, rss, text = self.measured(args, tag, "compile",
                                              self.options.compile_timeout)
        if code:
            return {"error": "compile failed: " + one_line(text)}
        self.artifact = so
        result = json.loads(result_file.read_text())
        return {"compile_s": result["compile_s"], "compile_rss_mb": rss}


ENGINE_CLASSES = {"kiln": Kiln, "kiln-before": KilnBefore, "kiln-bf16": KilnBF16,
                  "kiln-dynamic": KilnDynamic,
                  "onnxruntime": OnnxRuntime,
                  "iree": Iree, "tvm": Tvm}


# -- Report ---------------------------------------------------------------------

HEADER = ("| model | batch | threads | engine | median ms | vs ORT | GFLOP/s | % of peak "
          "| peak RSS MB | compile s | outputs |")


def threads_label(row):
    """The threads column: the count, and whether a core was busy."""
    return f"{row['threads']}, busy core" if row.get("busy_core") else row["threads"]


class BusyCore:
    """While active, another process spins on the last CPU this one may use
    (--busy-core): a shared machine's neighbour, for the engines' thread
    pools to cope with."""

    def __init__(self, active):
        self.active, self.proc = active, None

    def __enter__(self):
        if self.active:
            cpu = max(os.sched_getaffinity(0))
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-c",
                 f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
            time.sleep(0.2)  # it is spinning before the engine starts
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.kill()
            self.proc.wait()


def format_row(row):
    cells = [row["model"], row["batch"], threads_label(row), row["engine"]]
    if "error" in row:
        cells += [row["error"], "-", "-", "-", "-",
                  f"{row['compile_s']:.1f}" if row.get("compile_s") else "-", "-"]
    else:
        ratio = f"{row['ratio']:.2f}" if row.get("ratio") else "-"
        cells += [f"{row['median_ms']:.3f}", ratio, f"{row['gflops']:.1f}",
                  f"{row['peak_pct']:.0f}%", f"{row['rss_mb']:.0f}",
                  f"{row['compile_s']:.1f}", row["outputs"]]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def write_svg(rows, path, engines):
    """Grouped bars of each engine's latency ratio to onnxruntime (log scale)."""
    import math
    groups = []
    for row in rows:
        key = (row["model"], row["batch"], threads_label(row))
        if key not in groups:
            groups.append(key)
    shown = [e for e in engines if e != "onnxruntime"]
    colors = {"kiln": "#d95f02", "kiln-before": "#666666", "kiln-bf16": "#a6761d",
              "kiln-dynamic": "#e6ab02",
              "iree": "#1b9e77",
              "tvm": "#7570b3"}
    ratios = {(r["model"], r["batch"], threads_label(r), r["engine"]): r.get("ratio")
              for r in rows}
    known = [r for r in ratios.values() if r]
    # The log2 range of the axis: at least 1/2 to 2, wide enough for all.
    lo = min([-1] + [math.floor(math.log2(r)) for r in known])
    hi = max([1] + [math.ceil(math.log2(r)) for r in known])
    width_per_group = 18 * len(shown) + 24
    left, top, plot_h = 60, 40, 300
    width = left + width_per_group * len(groups) + 150
    height = top + plot_h + 110
    y = lambda r: top + plot_h * (hi - max(lo, min(hi, math.log2(r)))) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">Latency relative to onnxruntime '
           f'(median, lower is faster; log scale)</text>']
    for e in range(lo, hi + 1):
        yy = y(2.0 ** e)
        label = f"{2.0 ** e:g}" if e >= 0 else f"1/{2 ** -e}"
        stroke = "#000" if e == 0 else "#ddd"
        out.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{width - 150}" y2="{yy:.1f}" '
                   f'stroke="{stroke}"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end">{label}</text>')
    for g, (model, batch, threads) in enumerate(groups):
        x0 = left + g * width_per_group + 12
        for i, engine in enumerate(shown):
            ratio = ratios.get((model, batch, threads, engine))
            x = x0 + 18 * i
            if not ratio:
                out.append(f'<text x="{x + 7}" y="{y(1) - 4:.1f}" text-anchor="middle" '
                           f'fill="{colors.get(engine, "#999")}">x</text>')
                continue
            y1, y0 = sorted((y(ratio), y(1.0)))
            out.append(f'<rect x="{x}" y="{y1:.1f}" width="14" height="{max(y0 - y1, 1):.1f}" '
                       f'fill="{colors.get(engine, "#999")}"><title>{engine} {model} b{batch} '
                       f't{threads}: {ratio:.2f}</title></rect>')
        label_x = x0 + 9 * len(shown)
        out.append(f'<text transform="translate({label_x},{top + plot_h + 12}) rotate(40)">'
                   f'{model} b{batch} t{threads}</text>')
    for i, engine in enumerate(shown):
        ly = top + 20 * i
        out.append(f'<rect x="{width - 130}" y="{ly}" width="12" height="12" '
                   f'fill="{colors.get(engine, "#999")}"/>')
        out.append(f'<text x="{width - 112}" y="{ly + 10}">{engine}</text>')
    out.append(f'<text x="{width - 130}" y="{top + 20 * len(shown) + 10}">x: no result</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


# -- Main -------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["squeezenet", "mobilenetv2", "bert_base"],
                        help="tools/models builders or .onnx files (default: %(default)s)")
    parser.add_argument("--batch", nargs="+", type=int, default=[1],
                        help="batch sizes (default: 1)")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2],
                        help="thread counts (default: 1 2)")
    parser.add_argument("--engines", nargs="+", default=DEFAULT_ENGINES, choices=ENGINES,
                        help="engines to run (default: %(default)s; onnxruntime always "
                             "runs; kiln-dynamic is Kiln with the model's batch symbolic)")
    parser.add_argument("--busy-core", action="store_true",
                        help="run each thread count twice: as it is, then while another "
                             "process spins on the last CPU (contention on a shared "
                             "machine); the rows say 'busy core'")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs (default 3)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs (default 20)")
    parser.add_argument("--time-budget", type=float, default=60,
                        help="seconds of runs per engine and thread count: a slower "
                             "peer gets 1 warm-up and fewer runs, at least 3 (default 60)")
    parser.add_argument("--build", type=Path,
                        default=Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")),
                        help="Kiln's build folder (default: $KILN_BUILD_DIR or build/)")
    parser.add_argument("--build-before", type=Path,
                        help="the build the kiln-before engine runs (an earlier commit's)")
    parser.add_argument("--peer-python", type=Path, default=ROOT / ".venv-bench" / "bin" / "python",
                        help="the Python of IREE and TVM (default: .venv-bench/bin/python)")
    parser.add_argument("--compile-timeout", type=int, default=1800,
                        help="seconds one compile may take (default 1800)")
    parser.add_argument("--run-timeout", type=int, default=900,
                        help="seconds one engine's runs may take (default 900)")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--svg", type=Path, help="draw the ratios to onnxruntime here")
    parser.add_argument("--json", type=Path, help="also write every result here")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    # A worker: one engine, one step, in its own process (used by the harness).
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--step", choices=["compile", "run"], help=argparse.SUPPRESS)
    for name in ("model", "artifact", "inputs", "outputs", "result"):
        parser.add_argument(f"--{name}", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args()


def main():
    args = parse_args()
    if args.worker:
        return run_worker(args)
    # A terminated harness unwinds, so that run_measured stops its engine.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    import onnx

    engines = [e for e in ENGINES if e in args.engines or e == "onnxruntime"]
    work = Path(tempfile.mkdtemp(prefix="kiln-bench-"))
    log(f"work folder {work}; load average {os.getloadavg()[0]:.2f}")
    peaks = measure_peak(args.threads, work)
    log("peak (tools/peak_fma.c, best of 5 so far): " +
        ", ".join(f"{t} thread{'s' if t > 1 else ''} {p:.0f} GFLOP/s" for t, p in peaks.items()))

    status = {}
    instances = {}
    for name in engines:
        instances[name] = ENGINE_CLASSES[name](name, args, work)
        status[name] = instances[name].available()
        if status[name]:
            log(f"{name}: {status[name]}")

    rows = []
    steps = len(args.models) * len(args.batch)
    step = 0
    for model_name in args.models:
        for batch in args.batch:
            step += 1
            base = {"model": Path(model_name).stem if model_name.endswith(".onnx")
                    else model_name, "batch": batch}
            tag = f"{base['model']}_b{batch}"
            log(f"[{step}/{steps}] {tag}: building the model")
            try:
                path = build_model(model_name, batch, work)
                model = onnx.load(str(path))
                flops = count_flops(model)
                inputs = work / f"{tag}.inputs"
                save_inputs(model, inputs)
                del model
            except Exception as error:  # a model that cannot be built is a row
                row = dict(base, threads="-", engine="-",
                           error="cannot build the model: " + one_line(error))
                rows.append(row)
                log(format_row(row))
                continue
            log(f"[{step}/{steps}] {tag}: {flops / 1e9:.2f} GFLOP per run")
            compiled = {}
            for name in engines:
                if status[name]:
                    compiled[name] = {"error": status[name]}
                    continue
                log(f"[{step}/{steps}] {tag}: {name} compiling")
                compiled[name] = instances[name].compile(path, tag)
                message = compiled[name].get("error") or f"{compiled[name]['compile_s']:.1f} s"
                log(f"[{step}/{steps}] {tag}: {name} compile: {message}")
            log(f"[{step}/{steps}] {tag}: load average {os.getloadavg()[0]:.2f}")
            for threads, busy in [(t, b) for t in args.threads
                                  for b in ([False, True] if args.busy_core else [False])]:
                results = {}
                when = " with a busy core" if busy else ""
                for name in ["onnxruntime"] + [e for e in engines if e != "onnxruntime"]:
                    row = dict(base, threads=threads, engine=name,
                               compile_s=compiled[name].get("compile_s"),
                               compile_rss_mb=compiled[name].get("compile_rss_mb"))
                    if busy:
                        row["busy_core"] = True
                    if "error" in compiled[name]:
                        row["error"] = compiled[name]["error"]
                    else:
                        log(f"[{step}/{steps}] {tag}: {name} running, {threads} thread(s)"
                            + when)
                        outputs = work / f"{tag}.t{threads}{'.busy' if busy else ''}.{name}.out"
                        with BusyCore(busy):
                            result = instances[name].run(path, tag, inputs, threads, outputs)
                        row.update(result)
                        if "error" not in row:
                            if name == "onnxruntime":
                                row["compile_s"] = result["compile_s"]
                                row["outputs"] = "reference"
                            elif "error" not in results.get("onnxruntime", {"error": 1}):
                                row["outputs"] = compare_outputs(
                                    outputs, work / f"{tag}.t{threads}"
                                    f"{'.busy' if busy else ''}.onnxruntime.out")
                            else:
                                row["outputs"] = "no reference"
                            row["gflops"] = flops / row["median_ms"] / 1e6
                            ort = results.get("onnxruntime", {})
                            if "median_ms" in ort:
                                row["ratio"] = row["median_ms"] / ort["median_ms"]
                        log(f"[{step}/{steps}] {tag}: {name} {threads} thread(s){when}: " +
                            (row.get("error") or f"{row['median_ms']:.3f} ms"))
                    results[name] = row
                    rows.append(row)
            for name in engines:  # compiled code is not needed past this model
                artifact = getattr(instances[name], "artifact", None)
                if artifact and Path(artifact).exists() and not args.keep:
                    Path(artifact).unlink()
                    instances[name].artifact = None
            again = measure_peak(args.threads, work)
            peaks = {t: max(peaks[t], again[t]) for t in peaks}
    for row in rows:
        if "gflops" in row:
            row["peak_pct"] = 100 * row["gflops"] / peaks[row["threads"]]
    print(HEADER)
    print("|" + "---|" * 11)
    for row in rows:
        print(format_row(row))
    print()
    commandline = "tools/benchmark.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    notes = ["Peak (tools/peak_fma.c, best rate seen): " + ", ".join(
        f"{p:.0f} GFLOP/s on {t} thread{'s' if t > 1 else ''}" for t, p in peaks.items()) + "."]
    notes += [f"{name}: {message}." for name, message in status.items() if message]
    fewer = [f"{r['engine']} on {r['model']} b{r['batch']} t{r['threads']}: {r['runs']}"
             for r in rows if r.get("runs", args.repeat) < args.repeat]
    if fewer:
        notes.append(f"Fewer than {args.repeat} timed runs (--time-budget "
                     f"{args.time_budget:g} s): " + "; ".join(fewer) + ".")
    for note in notes:
        print(note)
    if args.markdown:
        text = [HEADER, "|" + "---|" * 11] + [format_row(r) for r in rows] + [""] + notes
        args.markdown.write_text("\n".join(text) + "\n")
    if args.svg:
        write_svg([r for r in rows if r["engine"] != "-"], args.svg, engines)
    if args.json:
        args.json.write_text(json.dumps({"command": commandline, "peaks": peaks,
                                         "engines": status, "rows": rows}, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        log(f"kept {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
