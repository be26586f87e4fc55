"""kiln.tune: search each kernel's configuration by measuring real runs.

How it works (docs/tuning.md has the whole story):

1. The compiler lists the model's tunable kernels (``emit="kernels"``):
   each has a signature, a search space of knobs and a standalone module
   holding the kernel alone.
2. Every trial compiles one kernel's module with one candidate
   configuration, checks its output against the default configuration's,
   and times it (warm-up, then the median of repeated samples). Every trial
   is appended to the tuning database at once, so an interrupted run loses
   nothing and a new run skips what is measured already.
3. Candidates come from an evolutionary search: mutations and crossovers of
   the best configurations measured so far, plus a few random ones, ranked
   by a small cost model (ridge regression on configuration features,
   trained on every measurement of this target in the database) before any
   is compiled. Only the most promising of each generation are measured.
4. The default configuration is measured first for every kernel and stays in
   the database, so a kernel's chosen configuration is never slower than its
   default as measured.
5. Finally the whole model is compiled with the defaults and with the
   database and both are timed, interleaved.

Candidates are compiled in parallel worker processes; measurements never
overlap each other or a compilation (on a small machine they would disturb
each other), so each trial's timing has the machine to itself.
"""

import concurrent.futures
import contextlib
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import _kiln
from ._compile import compile as _compile
from ._errors import KilnError
from ._model import load

__all__ = ["tune"]

# Output of a candidate must match the default configuration's this closely.
_RTOL = 1e-3
_ATOL = 1e-3


# --- the tuning database ------------------------------------------------------

def _config_key(config):
    return json.dumps(config, sort_keys=True)


class _Database:
    """The records of a tuning database file, appended to as trials finish."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.records = []
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as e:
                        raise ValueError(
                            f"{self.path}:{number}: not a JSON value ({e.msg}); "
                            "a tuning database holds one JSON object per line"
                        ) from None
                    if (not isinstance(record, dict)
                            or not isinstance(record.get("kernel"), str)
                            or not isinstance(record.get("target"), str)
                            or not isinstance(record.get("config"), dict)):
                        raise ValueError(
                            f"{self.path}:{number}: a record needs \"kernel\" and "
                            "\"target\" strings and a \"config\" object")
                    ms = record.get("ms")
                    if ms is not None and (not isinstance(ms, (int, float))
                                           or isinstance(ms, bool) or ms < 0):
                        raise ValueError(
                            f"{self.path}:{number}: \"ms\" must be a non-negative "
                            "number")
                    self.records.append(record)
        else:
            folder = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(folder):
                raise ValueError(f"kiln.tune: the folder of the tuning database "
                                 f"{self.path!r} does not exist")
        self._measured = {}
        for record in self.records:
            self._index(record)

    def _index(self, record):
        key = (record["kernel"], record["target"], _config_key(record["config"]))
        self._measured.setdefault(key, record)

    def lookup(self, kernel, target, config):
        return self._measured.get((kernel, target, _config_key(config)))

    def trials_of(self, kernel, target):
        return [r for r in self.records
                if r["kernel"] == kernel and r["target"] == target]

    def append(self, record):
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.records.append(record)
        self._index(record)


# --- search space and cost model ----------------------------------------------

class _Space:
    """One kernel's knobs and their values, as the compiler lists them."""

    def __init__(self, space, vector_width):
        self.knobs = {name: list(values) for name, values in sorted(space.items())}
        self.vector_width = vector_width

    def size(self):
        return math.prod(len(v) for v in self.knobs.values())

    def random(self, rng):
        return self.canonical({k: rng.choice(v) for k, v in self.knobs.items()})

    def mutate(self, config, rng):
        child = dict(config) or self.random(rng)
        for name in rng.sample(sorted(self.knobs), k=min(len(self.knobs),
                                                        rng.choice((1, 1, 2)))):
            child[name] = rng.choice(self.knobs[name])
        return self.canonical(child)

    def crossover(self, a, b, rng):
        if not a or not b:
            return self.mutate(a or b, rng)
        return self.canonical({k: (a if rng.random() < 0.5 else b).get(k, v[0])
                               for k, v in self.knobs.items()})

    def nchw(self):
        """Whether the kernel is an NCHW convolution (im2col among its
        algorithms), whose "direct" algorithm is a plain loop nest."""
        return "im2col" in self.knobs.get("algorithm", [])

    def canonical(self, config):
        """One spelling per distinct code: an NCHW convolution's loop
        lowering has no register block, and a block of `vectors` x
        `vector_width` lanes is spelled with the widest vector that gives
        it. (A blocked convolution's "direct" algorithm is register-blocked
        tiles, and Winograd's products are register-blocked too: their
        knobs count.)"""
        config = {k: v for k, v in config.items() if k in self.knobs}
        if "parallel" in config and not config["parallel"]:
            # A loop nest on one thread is not cut into tiles.
            config.pop("tiles", None)
        if self.nchw() and config.get("algorithm") == "direct":
            return {"algorithm": "direct"}
        width, vectors = config.get("vector_width"), config.get("vectors")
        if width is not None and vectors is not None:
            lanes = width * vectors
            for w in sorted(self.knobs.get("vector_width", []), reverse=True):
                if lanes % w == 0 and lanes // w in self.knobs.get("vectors", []):
                    config["vector_width"], config["vectors"] = w, lanes // w
                    break
        return config


def _features(config, kernel):
    """Numbers describing a configuration of a kernel, for the cost model."""
    rows = config.get("rows", 8)
    lanes = config.get("vector_width", kernel["vector_width"]) * config.get("vectors", 2)
    accumulators = rows * max(1, lanes // kernel["vector_width"])
    algorithm = config.get("algorithm", "im2col")
    loops = algorithm == "direct" and kernel.get("nchw", False)
    winograd = algorithm.startswith("winograd-")
    parallel = config.get("parallel", kernel["parallel"])
    size = math.log2(max(kernel["flops"], 2.0))
    # Loop nests (window, elementwise, reduction): their threads and tiles.
    nest = float(kernel.get("kind") in ("window", "elementwise", "reduction"))
    tiles = math.log2(config.get("tiles", 32)) if parallel else 0.0
    return np.array([
        nest, nest * float(bool(parallel)), nest * float(bool(parallel)) * size,
        tiles, tiles * size,
        1.0, float(not config), float(loops), float(winograd),
        float(algorithm == "winograd-6x3"),
        math.log2(rows), math.log2(rows) ** 2,
        math.log2(lanes), math.log2(lanes) ** 2,
        math.log2(config.get("k_tile", 1)),
        float(bool(parallel)), float(bool(parallel)) * size,
        float(accumulators > 24), math.log2(accumulators),
        float(loops) * size, size,
    ])


class _CostModel:
    """Ridge regression of log(time / default time) on configuration
    features, refitted on every measurement of the target."""

    def __init__(self, ridge=1.0):
        self.ridge = ridge
        self.weights = None

    def fit(self, samples):
        if len(samples) < 4:
            self.weights = None
            return
        x = np.stack([f for f, _ in samples])
        y = np.array([t for _, t in samples])
        a = x.T @ x + self.ridge * np.eye(x.shape[1])
        self.weights = np.linalg.solve(a, x.T @ y)

    def predict(self, features):
        if self.weights is None:
            return 0.0
        return float(features @ self.weights)


# --- compiling and measuring --------------------------------------------------

def _compile_candidate(job):
    """Compiles one kernel module with one pinned configuration (in a worker
    process). Returns an error message, or None."""
    module, output, db, record, target, cpu, features = job
    if record is not None:
        with open(db, "w", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
    options = _kiln.compiler.CompileOptions()
    if target:
        options.target = target
    options.cpu = cpu
    options.features = features
    options.tuning_db = db if record is not None else ""
    result = _kiln.compiler.compile_file(module, output, options)
    if not result.ok:
        return result.error
    if record is not None:
        applied = [(c.kernel, json.loads(c.configuration))
                   for c in result.kernel_configs]
        if applied != [(record["kernel"], record["config"])]:
            return ("the compiler did not apply the configuration to the "
                    "kernel: it applied %s" % (applied,))
    return None


# A worker process compiles one candidate; its job comes as JSON in argv.
_WORKER = ("import json, sys\n"
           "from kiln.tune import _compile_candidate\n"
           "print(json.dumps(_compile_candidate(json.loads(sys.argv[1]))))\n")


def _compile_in_worker(job):
    """Compiles a candidate in a fresh Python process, so that a compiler
    crash costs one trial, not the tuner, and the user's main module is never
    imported again (as multiprocessing's spawn would)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(job)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        return f"the compiler's process failed (exit {proc.returncode}): {tail[0]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# The environment variables that place OpenMP's threads; kiln-run's list.
_AFFINITY_VARIABLES = ("OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY",
                       "GOMP_CPU_AFFINITY")


@contextlib.contextmanager
def _threads_bound(num_threads):
    """Binds the OpenMP threads of the models measured inside (one per
    core), as kiln-run does, when more than one runs and the caller placed
    none: OMP_PROC_BIND=spread, restored afterwards. Unbound, Linux starts a
    model's worker thread on the main thread's core, and the two share it
    until the scheduler moves one: the first ~50 ms of every candidate,
    each of which loads OpenMP afresh, ran up to 8x slower (a convolution
    of MobileNetV3-small's default measured at 0.152 ms, 0.017 bound)."""
    threads = num_threads if num_threads else (os.cpu_count() or 1)
    if threads < 2 or any(v in os.environ for v in _AFFINITY_VARIABLES):
        yield
        return
    os.environ["OMP_PROC_BIND"] = "spread"
    try:
        yield
    finally:
        os.environ.pop("OMP_PROC_BIND", None)


def _time_runs(run, feeds, repeats, min_sample_s=0.002):
    """Median milliseconds per run: a warm-up, then `repeats` samples of
    enough runs each to last about `min_sample_s`."""
    start = time.perf_counter()
    run(feeds)
    first = max(time.perf_counter() - start, 1e-7)
    for _ in range(max(2, min(20, int(0.02 / first)))):
        run(feeds)
    inner = max(1, math.ceil(min_sample_s / first))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            run(feeds)
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples) * 1e3


def _random_feeds(model, seed):
    rng = np.random.default_rng(seed)
    feeds = []
    for info in model.inputs:
        if info.dtype.kind == "f":
            feeds.append(rng.standard_normal(info.shape).astype(info.dtype))
        else:
            feeds.append(np.zeros(info.shape, dtype=info.dtype))
    return feeds


class _Progress:
    """A progress bar with the best so far on stderr: one line rewritten
    after each trial on a terminal, a line per tenth of the trials in a log."""

    def __init__(self, total, enabled):
        self.total = total
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.start = time.monotonic()
        self.logged = -1

    def show(self, done, text):
        if not self.enabled:
            return
        if not self.tty:
            step = max(1, self.total // 10)
            if done // step == self.logged and done != self.total:
                return
            self.logged = done // step
        width = 24
        filled = width * done // max(self.total, 1)
        bar = "#" * filled + "." * (width - filled)
        elapsed = time.monotonic() - self.start
        status = (f"kiln.tune [{bar}] {done}/{self.total} trials "
                  f"{elapsed:5.0f}s  {text}")
        sys.stderr.write("\r" + status + "\033[K" if self.tty else status + "\n")
        sys.stderr.flush()

    def line(self, text):
        if self.enabled:
            sys.stderr.write("\r" + text + "\033[K\n" if self.tty else text + "\n")
            sys.stderr.flush()


# --- the tuner ------------------------------------------------------------------

class _Kernel:
    def __init__(self, index, entry, target, folder):
        self.index = index
        self.signature = entry["signature"]
        self.kind = entry["kind"]
        self.count = entry["count"]
        self.nodes = entry["nodes"]
        self.flops = entry["flops"]
        self.target = target
        self.space = _Space(entry["space"], target["vector_width"])
        self.info = {"flops": entry["flops"], "vector_width": target["vector_width"],
                     "parallel": target["parallel"], "kind": entry["kind"],
                     "nchw": self.space.nchw()}
        self.module = os.path.join(folder, f"kernel{index}.mlir")
        with open(self.module, "w", encoding="utf-8") as f:
            f.write(entry["module"])
        self.default_ms = None
        self.reference = None
        self.feeds = None
        self.trials = 0
        self.searched = 0  # trials of configurations other than the default
        self.exhausted = False

    def weight(self):
        """Time this kernel takes in one run of the model, by its default."""
        return (self.default_ms or 0.0) * self.count


class _Tuner:
    def __init__(self, db, kernels, target_key, compile_args, workers,
                 num_threads, repeats, seed, progress, ray_measure):
        self.db = db
        self.kernels = kernels
        self.target_key = target_key
        self.compile_args = compile_args
        self.workers = workers
        self.num_threads = num_threads
        self.repeats = repeats
        self.rng = random.Random(seed)
        self.progress = progress
        self.ray_measure = ray_measure
        self.cost = _CostModel()
        self.folder = None
        self.pool = None
        self.measured = 0
        self.reused = 0
        self.serial = 0

    # Compilation: in parallel worker processes, never during a measurement.
    def compile_all(self, jobs):
        full = [job + self.compile_args for job in jobs]
        if self.pool is None:
            return [_compile_candidate(job) for job in full]
        return list(self.pool.map(_compile_in_worker, full))

    def _paths(self, kernel):
        self.serial += 1
        base = os.path.join(self.folder, f"k{kernel.index}-{self.serial}")
        return base + ".so", base + ".jsonl"

    def _record(self, kernel, config, ms=None, error=None):
        record = {"kernel": kernel.signature, "target": self.target_key,
                  "config": config, "kind": kernel.kind,
                  "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if not config:
            record["default"] = True
        if error is not None:
            record["error"] = error.splitlines()[0][:300] if error else "failed"
        else:
            record["ms"] = round(ms, 6)
        self.db.append(record)
        return record

    def _measure(self, kernel, path, timed=True):
        """Runs a compiled kernel; returns (ms, error). The first output a
        kernel gives (its default build's) is the reference for the others."""
        try:
            model = load(path, num_threads=self.num_threads)
        except KilnError as e:
            return None, str(e)
        with model:
            if kernel.feeds is None:
                kernel.feeds = _random_feeds(model, kernel.index)
            output = model.run(kernel.feeds)
            output = next(iter(output.values()))
            if kernel.reference is None:
                kernel.reference = output
            elif not np.allclose(output, kernel.reference, rtol=_RTOL, atol=_ATOL):
                return None, "wrong results: differs from the default configuration"
            if not timed:
                return None, None
            return _time_runs(model.run, kernel.feeds, self.repeats), None

    def _train(self):
        samples = []
        for kernel in self.kernels:
            if not kernel.default_ms:
                continue
            for r in self.db.trials_of(kernel.signature, self.target_key):
                if r.get("ms") and "error" not in r:
                    samples.append((_features(r["config"], kernel.info),
                                    math.log(r["ms"] / kernel.default_ms)))
        self.cost.fit(samples)

    def _candidates(self, kernel, count):
        """The `count` most promising unmeasured configurations of a kernel."""
        trials = [r for r in self.db.trials_of(kernel.signature, self.target_key)
                  if r.get("ms") is not None and "error" not in r]
        trials.sort(key=lambda r: r["ms"])
        parents = [r["config"] for r in trials[:6]] or [{}]
        seen = {_config_key(r["config"]) for r in
                self.db.trials_of(kernel.signature, self.target_key)}
        pool = {}
        attempts = 0
        while len(pool) < 48 and attempts < 400:
            attempts += 1
            roll = self.rng.random()
            if roll < 0.5:
                config = kernel.space.mutate(self.rng.choice(parents), self.rng)
            elif roll < 0.8 and len(parents) > 1:
                a, b = self.rng.sample(parents, 2)
                config = kernel.space.crossover(a, b, self.rng)
            else:
                config = kernel.space.random(self.rng)
            key = _config_key(config)
            if key not in seen and key not in pool:
                pool[key] = config
        if not pool:
            return []
        ranked = sorted(pool.values(), key=lambda c: self.cost.predict(
            _features(c, kernel.info)))
        chosen = ranked[:count]
        # Keep exploring: one pick in four from anywhere in the pool.
        for i in range(len(chosen)):
            if self.rng.random() < 0.25:
                chosen[i] = self.rng.choice(ranked)
        unique = {_config_key(c): c for c in chosen}
        return list(unique.values())

    def _next_kernel(self):
        live = [k for k in self.kernels if not k.exhausted]
        if not live:
            return None
        # A first round gives every kernel one batch of candidates, heaviest
        # first: a kernel's default says little of what it could gain, and
        # a short tune should not spend itself on the heaviest alone. Then
        # each turn goes by weight, divided among the trials spent.
        fresh = [k for k in live if k.searched == 0]
        if fresh:
            return max(fresh, key=lambda k: k.weight())
        return max(live, key=lambda k: k.weight() / (1 + k.trials))

    def _best_text(self):
        default = sum(k.weight() for k in self.kernels)
        best = 0.0
        for k in self.kernels:
            times = [r["ms"] for r in self.db.trials_of(k.signature, self.target_key)
                     if r.get("ms") is not None and "error" not in r]
            best += (min(times) if times else (k.default_ms or 0.0)) * k.count
        if not best:
            return ""
        return (f"kernels {best:.3f} ms (default {default:.3f} ms, "
                f"x{default / best:.2f})")

    def run_trials(self, budget, deadline, bar):
        """Measures defaults, then searches, until `budget` trials are done or
        the deadline passes."""
        # Defaults first, heaviest kernels first (by flops until measured).
        pending = []
        for kernel in sorted(self.kernels, key=lambda k: -k.flops * k.count):
            record = self.db.lookup(kernel.signature, self.target_key, {})
            if record is not None and record.get("ms") is not None:
                kernel.default_ms = record["ms"]
                self.reused += 1
            else:
                pending.append(kernel)
        # The reference output of a kernel comes from its default build.
        for start in range(0, len(pending), self.workers):
            if self.measured >= budget or time.monotonic() > deadline:
                break
            batch = pending[start:start + self.workers][:budget - self.measured]
            self._run_batch([(k, {}) for k in batch], bar)
        for kernel in self.kernels:
            if kernel.default_ms is None:
                kernel.exhausted = True

        while self.measured < budget and time.monotonic() < deadline:
            self._train()
            kernel = self._next_kernel()
            if kernel is None:
                break
            count = min(self.workers, budget - self.measured)
            configs = self._candidates(kernel, count)
            if not configs:
                kernel.exhausted = True
                continue
            self._run_batch([(kernel, c) for c in configs], bar)

    def _run_batch(self, batch, bar):
        if self.ray_measure is not None:
            results = self.ray_measure(
                [(k.module, k.signature, c) for k, c in batch])
            for (kernel, config), (ms, error) in zip(batch, results):
                self._finish(kernel, config, ms, error, bar)
            return
        jobs = []
        for kernel, config in batch:
            so, db = self._paths(kernel)
            if kernel.reference is None and config:
                # The reference output comes from the default build.
                ref_so, _ = self._paths(kernel)
                error = _compile_candidate(
                    (kernel.module, ref_so, "", None) + self.compile_args)
                if error is None:
                    self._measure(kernel, ref_so, timed=False)
                    os.remove(ref_so)
            record = ({"kernel": kernel.signature, "target": self.target_key,
                       "config": config} if config else None)
            jobs.append((kernel.module, so, db, record))
        errors = self.compile_all(jobs)
        for (kernel, config), job, error in zip(batch, jobs, errors):
            ms = None
            if error is None:
                ms, error = self._measure(kernel, job[1])
            self._finish(kernel, config, ms, error, bar)
            for path in job[1:3]:
                if os.path.exists(path):
                    os.remove(path)

    def _finish(self, kernel, config, ms, error, bar):
        record = self._record(kernel, config, ms, error)
        self.measured += 1
        kernel.trials += 1
        if config:
            kernel.searched += 1
        else:
            if error is not None:
                bar.line(f"kiln.tune: the default build of kernel "
                         f"{kernel.signature!r} failed: {error}")
            else:
                # As recorded (rounded), so that it compares equal with the
                # database's record of the default, as a resumed run reads it.
                kernel.default_ms = record["ms"]
        bar.show(self.measured, self._best_text())


def _ray_measurer(ray_address, num_threads, repeats):
    """Measures candidates as Ray tasks on the cluster at `ray_address`, one
    task per candidate, each holding the CPUs its runs use."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "kiln.tune(ray_address=...) fans measurements out over a Ray "
            "cluster, but Ray is not installed here (pip install 'ray'); "
            "without ray_address, kiln.tune measures on this machine") from None
    if not ray.is_initialized():
        ray.init(address=ray_address)

    def compile_and_time(module_text, signature, config, target_key, compile_args):
        folder = tempfile.mkdtemp(prefix="kiln-tune-")
        try:
            module = os.path.join(folder, "kernel.mlir")
            with open(module, "w", encoding="utf-8") as f:
                f.write(module_text)
            so, db = os.path.join(folder, "k.so"), os.path.join(folder, "k.jsonl")
            record = ({"kernel": signature, "target": target_key, "config": config}
                      if config else None)
            error = _compile_candidate((module, so, db, record) + compile_args)
            if error is not None:
                return None, error
            with load(so, num_threads=num_threads) as model:
                feeds = _random_feeds(model, 0)
                return _time_runs(model.run, feeds, repeats), None
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    remote = ray.remote(num_cpus=num_threads or 1)(compile_and_time)

    def measure(batch, target_key, compile_args):
        texts = []
        for module, signature, config in batch:
            with open(module, encoding="utf-8") as f:
                texts.append((f.read(), signature, config))
        return ray.get([remote.remote(t, s, c, target_key, compile_args)
                        for t, s, c in texts])

    return measure


def tune(model, db_path, trials=64, target=None, workers=None, time_budget=None,
         *, cpu=None, features=None, input_shapes=None, num_threads=None,
         repeats=15, seed=0, progress=True, ray_address=None):
    """Tunes the kernels of a model and records every trial in a database.

    Args:
      model: a path to an .onnx (or graph-dialect .mlir) file, or an
        ``onnx.ModelProto``, as kiln.compile takes it.
      db_path: the tuning database (JSON lines). Created if missing;
        otherwise its records are reused: a configuration measured already
        (for this kernel and target) is not measured again. Pass the same
        file to ``kiln.compile(tuning_db=...)`` or ``kiln-compile
        --tuning-db``.
      trials: how many configurations to compile and measure in this call
        (the default configuration of each kernel counts as one).
      target, cpu, features, input_shapes: as kiln.compile takes them.
      workers: processes compiling candidates in parallel (default: the
        number of CPUs; 1 compiles in this process). Measurements always run
        one at a time, never next to a compilation.
      time_budget: seconds after which no new trial starts (default: none).
        The final whole-model comparison comes on top.
      num_threads: threads each measured run uses (default: the runtime's,
        as kiln.load). Tune with the thread count you deploy with. With more
        than one, the tune sets OMP_PROC_BIND=spread (one thread per core,
        as kiln-run does) unless OMP_PROC_BIND, OMP_PLACES, KMP_AFFINITY or
        GOMP_CPU_AFFINITY is set, and restores the environment after.
      repeats: timed samples per measurement; the median counts.
      seed: seeds the search and the random inputs.
      progress: show a progress line with the best so far on stderr.
      ray_address: measure on a Ray cluster (``ray.init(address=...)``)
        instead of this machine; needs Ray installed.

    Returns:
      A dict: ``default_ms`` (the whole model compiled with defaults),
      ``tuned_ms`` (compiled with the database), ``best_ms`` (the faster of
      the two, so never above ``default_ms``) and ``best`` ("database" or
      "default"), ``speedup`` (default_ms / best_ms), ``default_min_ms`` and
      ``tuned_min_ms`` (the fastest samples), ``trials`` (measured
      now), ``reused`` (defaults found in the database), ``elapsed_s``,
      ``db``, ``target``, and ``kernels``: per kernel its signature, kind,
      count, ONNX nodes, ``default_ms``, ``best_ms``, ``best_config`` and
      the number of trials recorded.

    Raises:
      CompileError: the model does not compile.
      ValueError: a malformed database file or a bad argument.
      ImportError: ``ray_address`` without Ray installed.
    """
    started = time.monotonic()
    trials = int(trials)
    if trials < 0:
        raise ValueError("kiln.tune: trials must be >= 0")
    workers = int(workers) if workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise ValueError("kiln.tune: workers must be >= 1")
    if time_budget is not None and time_budget <= 0:
        raise ValueError("kiln.tune: time_budget must be positive seconds")
    db = _Database(db_path)
    compile_args = (target or "", cpu or "", features or "")
    measure = None
    if ray_address is not None:
        measure = _ray_measurer(ray_address, num_threads, repeats)

    folder = tempfile.mkdtemp(prefix="kiln-tune-")
    pool = None
    bar = _Progress(trials, progress)
    with _threads_bound(num_threads):
        try:
            listing = os.path.join(folder, "kernels.json")
            _compile(model, listing, target=target, cpu=cpu, features=features,
                     input_shapes=input_shapes, emit="kernels")
            with open(listing, encoding="utf-8") as f:
                listed = json.load(f)
            target_key = listed["target"]
            ray_measure = None
            if measure is not None:
                # The nodes compile for the CPU named in the target key, not
                # for their own.
                remote_args = (compile_args[0], cpu or target_key.split("/")[1],
                               compile_args[2])
                ray_measure = lambda batch: measure(batch, target_key, remote_args)  # noqa: E731
            kernels = [_Kernel(i, entry, listed, folder)
                       for i, entry in enumerate(listed["kernels"])]
            if workers > 1 and ray_measure is None:
                # Threads that each wait for a worker process.
                pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
            tuner = _Tuner(db, kernels, target_key, compile_args, workers, num_threads,
                           repeats, seed, progress, ray_measure)
            tuner.folder, tuner.pool = folder, pool
            deadline = started + time_budget if time_budget is not None else math.inf
            bar.show(0, f"{len(kernels)} kernels")
            tuner.run_trials(trials, deadline, bar)
            if pool is not None:
                pool.shutdown()
                pool = None

            bar.line(f"kiln.tune: {tuner.measured} trials, "
                     f"{time.monotonic() - started:.0f}s; comparing the whole model")
            default_ms, tuned_ms, fastest = _compare(
                model, db.path, folder, target, cpu, features, input_shapes,
                num_threads, repeats, seed)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            shutil.rmtree(folder, ignore_errors=True)

    per_kernel = []
    for kernel in kernels:
        records = db.trials_of(kernel.signature, target_key)
        good = [r for r in records if r.get("ms") is not None and "error" not in r]
        best = min(good, key=lambda r: r["ms"]) if good else None
        per_kernel.append({
            "signature": kernel.signature, "kind": kernel.kind,
            "count": kernel.count, "nodes": kernel.nodes,
            "default_ms": kernel.default_ms,
            "best_ms": best["ms"] if best else None,
            "best_config": best["config"] if best else None,
            "trials": len(records),
        })
    best_ms = min(default_ms, tuned_ms)
    report = {
        "default_ms": default_ms, "tuned_ms": tuned_ms, "best_ms": best_ms,
        "best": "database" if tuned_ms <= default_ms else "default",
        "speedup": default_ms / best_ms if best_ms else 1.0,
        "default_min_ms": fastest[0], "tuned_min_ms": fastest[1],
        "trials": tuner.measured, "reused": tuner.reused,
        "elapsed_s": time.monotonic() - started,
        "db": db.path, "target": target_key, "kernels": per_kernel,
    }
    bar.line(f"kiln.tune: default {default_ms:.3f} ms, with the database "
             f"{tuned_ms:.3f} ms (x{default_ms / tuned_ms:.2f})")
    return report


def _compare(model, db_path, folder, target, cpu, features, input_shapes,
             num_threads, repeats, seed):
    """Median ms of the whole model compiled with defaults and with the
    database, timed in alternation so that both see the same machine, and
    the fastest samples of each (less sensitive to other programs)."""
    paths = []
    for name, db in (("default", None), ("tuned", db_path)):
        path = os.path.join(folder, f"model-{name}.so")
        _compile(model, path, target=target, cpu=cpu, features=features,
                 input_shapes=input_shapes, tuning_db=db)
        paths.append(path)
    models = [load(p, num_threads=num_threads) for p in paths]
    try:
        feeds = _random_feeds(models[0], seed)
        samples = ([], [])
        for _ in range(max(5, repeats)):
            for i, m in enumerate(models):
                samples[i].append(_time_runs(m.run, feeds, 3))
        return (statistics.median(samples[0]), statistics.median(samples[1]),
                (min(samples[0]), min(samples[1])))
    finally:
        for m in models:
            m.close()
