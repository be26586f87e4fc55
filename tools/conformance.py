#!/usr/bin/env python3
"""Runs ONNX's backend node tests through Kiln and classifies each one.

For every node test of the installed onnx package
(onnx.backend.test.loader.load_model_tests(kind="node")): write the model to a
temporary folder, compile it with kiln-compile, run each data set with kiln-run
and compare every output with the test's expected output at the test's
tolerances (NaNs compare equal; dtype and shape must match exactly).

Classes:
  pass         every output of every data set matches
  fail         wrong numbers, dtype or shape, or kiln-run reported an error
  unsupported  kiln-compile refused the model with a clean error
               ("kiln-compile: error: ..."), e.g. unsupported ONNX operators
  crash        kiln-compile or kiln-run died from a signal, timed out, or
               exited without a clean error line: always a bug

Kiln reads most shape-determining operands at run time, within bounds
known when compiling (docs/runtime.md). A graph input that feeds one Kiln
compiles as structure (a Loop's trip count, a sequence position, Col2Im's
shapes: SHAPE_OPERANDS), or a bounded one whose output the model declares
no static shape for (BOUNDED_SHAPE_OPERANDS), is frozen into an
initializer holding the test's own value; the summary says how many tests
ran that way.

Usage (with the venv's python):
  tools/conformance.py                         # all node tests, 2 processes
  tools/conformance.py --shard 0/4 --check     # every 4th test, as CI does
  tools/conformance.py --write-expected-failures test/conformance/expected-failures.txt
  tools/conformance.py --gpu-emulation         # the nvptx target, on the
                                               # CUDA driver emulator

With --gpu-emulation each model is compiled with --target=nvptx
--gpu-arch=sm_80,sm_90a --gpu-emulation and run by kiln-run through the CUDA driver emulator
(KILN_CUDA_DRIVER=<build>/lib/libkiln_cuda_emulator.so), each block's threads
in shuffled order (KILN_EMULATOR_ORDER, unless set). Its expected failures are
the CPU's list plus test/conformance/expected-failures-gpu.txt, the tests that
fail on the GPU only (each with its reason); --write-expected-failures then
writes only those.
"""

import argparse
import collections
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXPECTED = ROOT / "test" / "conformance" / "expected-failures.txt"
DEFAULT_EXPECTED_GPU = ROOT / "test" / "conformance" / "expected-failures-gpu.txt"
# kiln-compile's target options: the CPU's defaults, or the emulated GPU's.
COMPILE_FLAGS = []

# Operands (by input index) that decide an output's shape or an axis, or that
# Kiln compiles as constants (Resize's roi). An integer/bool graph input
# feeding one of them is frozen into an initializer.
SHAPE_OPERANDS = {
    "Col2Im": (1, 2),
    "MaxUnpool": (2,), "DFT": (1,),
    "STFT": (1, 3), "MelWeightMatrix": (0, 1, 2, 3, 4),
    # Positions in a sequence and the split of SplitToSequence decide which
    # tensors a sequence holds, which Kiln resolves at compile time.
    "SequenceAt": (1,), "SequenceInsert": (2,), "SequenceErase": (1,),
    "SplitToSequence": (1,),
    # A Loop's trip count and condition decide how many iterations Kiln
    # unrolls, and the length of its scan outputs.
    "Loop": (0, 1),
}

# Operands that Kiln reads at run time where it can bound the sizes they
# decide: from the node output's shape as the model declares it (a graph
# output or a value_info of static sizes). Where the model declares none (an
# intermediate value of an `_expanded` function) they are frozen like the
# operands above. Reshape's, Squeeze's and Unsqueeze's are never frozen: the
# input's size bounds theirs.
BOUNDED_SHAPE_OPERANDS = {"Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,),
                          "Range": (0, 1, 2), "Pad": (1, 3), "OneHot": (1,),
                          "CenterCropPad": (1,), "HannWindow": (0,),
                          "HammingWindow": (0,), "BlackmanWindow": (0,),
                          "Resize": (1, 2, 3), "Upsample": (1,),
                          "AffineGrid": (1,)}

# Float operands that still decide a shape (Resize's and Upsample's scales):
# frozen like the integer ones; and a float operand of BOUNDED_SHAPE_OPERANDS
# (Range's bounds, OneHot's depth) where the model declares no bound.
FLOAT_SHAPE_OPERANDS = {
                        # Compiled as constants, like Resize's roi.
                        "MelWeightMatrix": (3, 4)}

# ml_dtypes' narrow types (what numpy_helper gives for ONNX's 8-, 4- and 2-bit
# types): one element per byte, the code in the low bits, as in Kiln's ABI.
NARROW_FLOATS = {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
                 "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn"}
NARROW_INTS = {"int4", "uint4", "int2", "uint2"}

# Element types kiln-run reads and writes (.npy); bf16 travels as u2 bits, the
# narrow types as their u1 bytes.
KILN_RUN_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32",
                   "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                   "bfloat16"} | NARROW_FLOATS | NARROW_INTS


def default_build():
    return Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build"))


def load_node_tests():
    import onnx.backend.test.loader as loader
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = loader.load_model_tests(kind="node")
    return sorted(cases, key=lambda c: c.name)


def select(cases, pattern=None, shard=None, limit=None):
    """The deterministic share of `cases` to run: filter, then shard, then limit."""
    if pattern:
        rx = re.compile(pattern)
        cases = [c for c in cases if rx.search(c.name)]
    if shard:
        index, count = shard
        cases = [c for i, c in enumerate(cases) if i % count == index]
    if limit is not None:
        cases = cases[:limit]
    return cases


# --------------------------------------------------------------------------
# One test.


def to_array(value):
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (list, tuple, dict)) or value is None:
        return value  # a sequence, map or absent optional: not a tensor
    return np.asarray(value)


def load_model(case):
    if case.model is not None:
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        return model
    return onnx.load(os.path.join(case.model_dir, "model.onnx"))


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def subgraph_reads(node):
    """The names read by the nodes of `node`'s subgraphs (any depth)."""
    names = []
    for attr in node.attribute:
        graphs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
        for graph in graphs:
            for inner in graph.node:
                names += [n for n in inner.input if n]
                names += subgraph_reads(inner)
    return names


def shape_like_inputs(model, operands=None, computed=None):
    """Names of graph inputs a shape-determining operand is computed from.

    An operand that is a graph input counts; so does one computed from graph
    inputs by other nodes (a window function's expanded form casts its size
    before its Range): every graph input it depends on decides a shape too,
    whatever its type (a float Range bound cast to a Loop's trip count), and
    also goes into `computed`.
    """
    operands = SHAPE_OPERANDS if operands is None else operands
    computed = set() if computed is None else computed
    names = {i.name for i in graph_inputs(model)}
    producer = {out: node for node in model.graph.node for out in node.output}
    found, seen = set(), set()

    def visit(name, direct):
        if name in seen:
            return
        seen.add(name)
        if name in names:
            found.add(name)
            if not direct:
                computed.add(name)
        elif name in producer:
            node = producer[name]
            # Shape and Size read their input's shape, not its values;
            # CastLike reads only its second input's type.
            if node.op_type in ("Shape", "Size"):
                return
            operands = list(node.input[:1] if node.op_type == "CastLike"
                            else node.input)
            # An If, Loop or Scan also reads outer values inside its bodies.
            operands += subgraph_reads(node)
            for operand in operands:
                if operand:
                    visit(operand, False)

    declared = set()
    for info in list(model.graph.output) + list(model.graph.value_info):
        tensor = info.type.tensor_type
        if tensor.HasField("shape") and all(
                d.HasField("dim_value") for d in tensor.shape.dim):
            declared.add(info.name)
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        indices = operands.get(node.op_type, ())
        if node.output[0] not in declared:
            indices += BOUNDED_SHAPE_OPERANDS.get(node.op_type, ())
        for index in indices:
            if index < len(node.input) and node.input[index]:
                visit(node.input[index], True)
    return found


def freeze(model, values):
    """Turns graph inputs `values` ({name: array}) into initializers."""
    kept = [i for i in model.graph.input if i.name not in values]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    for name, value in values.items():
        model.graph.initializer.append(numpy_helper.from_array(value, name))


def first_error_line(stderr, tool):
    """The first "TOOL: error: ..." line without its prefix, else None."""
    prefix = f"{tool}: error: "
    for line in stderr.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def looks_crashed(stderr):
    markers = ("Stack dump", "LLVM ERROR", "Assertion", "PLEASE submit a bug",
               "terminate called", "Segmentation fault", "AddressSanitizer")
    return any(m in stderr for m in markers)


class Outcome(Exception):
    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def call(args, timeout, tool, workdir):
    """Runs a tool; returns stdout, or raises Outcome(crash|...) on trouble."""
    try:
        proc = subprocess.run([str(a) for a in args], capture_output=True,
                              text=True, errors="replace", timeout=timeout,
                              cwd=workdir)
    except subprocess.TimeoutExpired:
        raise Outcome("crash", f"{tool} timed out after {timeout} s")
    stderr = proc.stderr.replace(str(workdir) + "/", "")
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        tail = stderr.strip().splitlines()[:1]
        raise Outcome("crash", f"{tool} died from {sig}"
                      + (f": {tail[0][:200]}" if tail else ""))
    if proc.returncode != 0:
        message = first_error_line(stderr, tool)
        if message is None or looks_crashed(stderr):
            tail = stderr.strip().splitlines()[:1]
            raise Outcome("crash", f"{tool} exited {proc.returncode} without a "
                          f"clean error" + (f": {tail[0][:200]}" if tail else ""))
        return None, message
    return proc.stdout, None


def save_input(path, value):
    if value.dtype.name == "bfloat16":
        value = value.view(np.uint16)
    if value.dtype.name in NARROW_FLOATS | NARROW_INTS:
        value = value.view(np.uint8)
    # Not np.ascontiguousarray: it turns a 0-d (scalar) input into shape (1,).
    np.save(path, np.array(value, order="C", copy=True))


def compare(name, have, want, rtol, atol):
    """None when `have` matches `want`, else why not."""
    if want.dtype.name == "bfloat16" and have.dtype == np.uint16:
        have = have.view(want.dtype)
    if want.dtype.name in NARROW_FLOATS | NARROW_INTS and have.dtype == np.uint8:
        have = have.view(want.dtype)
    if have.dtype != want.dtype:
        return f"output {name}: dtype {have.dtype}, expected {want.dtype}"
    if have.shape != want.shape:
        return f"output {name}: shape {have.shape}, expected {want.shape}"
    if want.dtype.name in NARROW_INTS:  # exact, on the codes
        have, want = have.view(np.uint8), want.view(np.uint8)
    if (want.dtype.kind in "fc" or want.dtype.name == "bfloat16"
            or want.dtype.name in NARROW_FLOATS):
        a = have.astype(np.float64) if want.dtype.kind != "c" else have
        b = want.astype(np.float64) if want.dtype.kind != "c" else want
        with np.errstate(invalid="ignore"):
            close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            bad = int((~close).sum())
            i = tuple(int(k) for k in np.argwhere(~close)[0])
            return (f"output {name}: {bad}/{close.size} values differ "
                    f"(at {i}: {a[i]!r} vs {b[i]!r}; rtol {rtol}, atol {atol})")
        return None
    if not np.array_equal(have, want):
        bad = int((have != want).sum())
        return f"output {name}: {bad}/{want.size} values differ"
    return None


def run_case(case, build, timeout, keep_dir=None):
    """Classifies one node test; returns a result dict."""
    start = time.monotonic()
    result = {"name": case.name, "status": "pass", "reason": "", "frozen": [],
              "ops": []}
    workdir = Path(tempfile.mkdtemp(prefix="kiln-conf-"))
    try:
        model = load_model(case)
        result["ops"] = sorted({n.op_type for n in model.graph.node})
        inputs = graph_inputs(model)
        computed = set()  # graph inputs a shape operand is computed from
        shape_like = shape_like_inputs(model, computed=computed)
        float_shape_like = shape_like_inputs(model, FLOAT_SHAPE_OPERANDS)
        compiled = {}  # frozen values -> (so path) per distinct freeze
        for ds_index, (ds_inputs, ds_outputs) in enumerate(case.data_sets):
            values = [to_array(v) for v in ds_inputs]
            want = [to_array(v) for v in ds_outputs]
            named = dict(zip((i.name for i in inputs), values))
            frozen = {n: v for n, v in named.items()
                      if n in shape_like and isinstance(v, np.ndarray)
                      and (v.dtype.kind in "iub" or n in float_shape_like
                           or n in computed)}
            result["frozen"] = sorted(frozen)
            # A sequence input's length and shapes are compiled in: the
            # model takes its tensors as NAME[0], NAME[1], ...
            for n, v in named.items():
                if v is None:
                    raise Outcome("unsupported", f"runner: input {n} is an "
                                  f"absent optional; Kiln compiles optional "
                                  f"inputs as present")
            sequences = {n: [to_array(e) for e in v] for n, v in named.items()
                         if isinstance(v, list)}
            sequence_flags = [
                f"--sequence-shape={n}=" + ",".join(
                    "x".join(str(d) for d in e.shape) or "scalar" for e in v)
                for n, v in sorted(sequences.items())]
            key = tuple((n, v.dtype.str, v.shape, v.tobytes())
                        for n, v in sorted(frozen.items())) + tuple(sequence_flags)
            if key not in compiled:
                variant = load_model(case)
                if frozen:
                    freeze(variant, frozen)
                sub = workdir / f"m{len(compiled)}"
                sub.mkdir()
                onnx.save(variant, str(sub / "model.onnx"))
                command = [build / "bin" / "kiln-compile", "model.onnx",
                           "-o", "model.so", *COMPILE_FLAGS, *sequence_flags]
                _, error = call(command, timeout, "kiln-compile", sub)
                # Kiln keeps only a leading batch symbolic: a model with
                # another symbolic dimension compiles at the test's sizes.
                fixed = [f"--input-shape={i.name}=" + "x".join(
                             str(d) for d in named[i.name].shape)
                         for i in inputs
                         if i.type.HasField("tensor_type")
                         and isinstance(named.get(i.name), np.ndarray)
                         and i.name not in frozen
                         and any(not d.HasField("dim_value")
                                 for d in i.type.tensor_type.shape.dim)]
                if error is not None and fixed:
                    _, retry_error = call(command + fixed, timeout,
                                          "kiln-compile", sub)
                    error = error if retry_error is not None else None
                if error is not None:
                    raise Outcome("unsupported", error)
                compiled[key] = sub / "model.so"
            so = compiled[key]
            feeds = {}
            for n, v in named.items():
                if n in sequences:
                    feeds.update({f"{n}[{i}]": e
                                  for i, e in enumerate(sequences[n])})
                elif n not in frozen:
                    feeds[n] = v
            args = [build / "bin" / "kiln-run", so, "--json", "--threads", "1",
                    "--output-dir", workdir / f"out{ds_index}"]
            for i, (name, value) in enumerate(feeds.items()):
                if not isinstance(value, np.ndarray):
                    raise Outcome("fail", f"runner: input {name} is a "
                                  f"{type(value).__name__}, not a tensor; "
                                  f"kiln-compile should have refused the model")
                if value.dtype.name not in KILN_RUN_DTYPES:
                    raise Outcome("fail", f"runner: input {name} has dtype "
                                  f"{value.dtype}, which kiln-run cannot read")
                path = workdir / f"in{ds_index}_{i}.npy"
                save_input(path, value)
                args += ["--input", f"{name}={path}"]
            stdout, error = call(args, timeout, "kiln-run", workdir)
            if error is not None:
                raise Outcome("fail", f"kiln-run: {error}")
            outputs = json.loads(stdout)["outputs"]
            for out, expected in zip(model.graph.output, want):
                if isinstance(expected, list):
                    # A sequence output: its tensors NAME[0], NAME[1], ...
                    if f"{out.name}[{len(expected)}]" in outputs:
                        raise Outcome("fail", f"output {out.name}: a sequence "
                                      f"longer than {len(expected)}")
                    pairs = [(f"{out.name}[{i}]", to_array(e))
                             for i, e in enumerate(expected)]
                elif isinstance(expected, np.ndarray):
                    pairs = [(out.name, expected)]
                else:
                    raise Outcome("fail", f"output {out.name} is a "
                                  f"{type(expected).__name__}, not a tensor")
                for name, value in pairs:
                    if name not in outputs:
                        raise Outcome("fail", f"output {name} missing from "
                                      f"kiln-run's outputs")
                    have = np.load(outputs[name], allow_pickle=False)
                    why = compare(name, have, value, case.rtol, case.atol)
                    if why:
                        raise Outcome("fail", why)
    except Outcome as outcome:
        result["status"] = outcome.status
        result["reason"] = outcome.reason
    except Exception as error:  # the runner's own trouble: report, don't hide
        result["status"] = "fail"
        result["reason"] = f"runner: {type(error).__name__}: {error}"
    finally:
        if keep_dir:
            shutil.copytree(workdir, Path(keep_dir) / case.name,
                            dirs_exist_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    result["reason"] = " ".join(result["reason"].split())[:300]
    result["seconds"] = round(time.monotonic() - start, 2)
    return result


# --------------------------------------------------------------------------
# Many tests.

_CASES = []
_ARGS = None


def _worker(index):
    return run_case(_CASES[index], _ARGS.build, _ARGS.timeout, _ARGS.keep)


def read_expected(path):
    """{name: reason} from an expected-failure list."""
    entries = {}
    if not path or not Path(path).exists():
        return entries
    for line in Path(path).read_text().splitlines():
        name, _, reason = line.partition("#")
        name = name.strip()
        if name:
            entries[name] = reason.strip()
    return entries


EXPECTED_HEADER = """\
# ONNX node tests that Kiln does not pass yet, one per line, with the reason
# from the classification (status: first line of the error).
# Generated by: tools/conformance.py --write-expected-failures FILE
# `tools/conformance.py --check` fails when a test not listed here does not
# pass, or when a listed test now passes: the list only shrinks.
"""


def write_expected(path, results, all_names, besides=()):
    """Rewrites the list: entries of the tests run are replaced, others kept;
    a test in `besides` (another list that also applies) is not written."""
    entries = read_expected(path)
    for r in results:
        entries.pop(r["name"], None)
        if r["status"] != "pass" and r["name"] not in besides:
            entries[r["name"]] = f"{r['status']}: {r['reason']}"
    known = set(all_names)
    lines = [f"{n}  # {entries[n]}" for n in sorted(entries) if n in known]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(EXPECTED_HEADER + "\n".join(lines) + "\n")
    return len(lines)


def op_of_unsupported(reason):
    """The operators named by an "unsupported ONNX operators" error, which
    groups its nodes by op type: "LSTM \u00d72 ('a', 'b'), ScatterND ..."."""
    return re.findall(r"([A-Za-z0-9_.]+) \u00d7\d+", reason)


_SCHEMA_NAMES = None


def primary_op(result):
    """The operator a node test is about: its only node's op type, else the
    longest ONNX operator name that the test's name starts with (test_reduce_
    sum_keepdims_expanded -> ReduceSum), else its first few op types."""
    global _SCHEMA_NAMES
    if len(result["ops"]) == 1:
        return result["ops"][0]
    if _SCHEMA_NAMES is None:
        _SCHEMA_NAMES = sorted({s.name for s in onnx.defs.get_all_schemas()},
                               key=len, reverse=True)
    flat = result["name"].removeprefix("test_").replace("_", "").lower()
    for op in _SCHEMA_NAMES:
        if flat.startswith(op.lower()):
            return op
    return "/".join(result["ops"][:3]) or "?"


def summarize(results, total_tests, elapsed, jobs):
    counts = collections.Counter(r["status"] for r in results)
    frozen = sum(1 for r in results if r["frozen"])
    n = len(results)
    print()
    print(f"ran {n} of {total_tests} ONNX node tests in {elapsed:.0f} s "
          f"({jobs} processes)")
    print("  " + ", ".join(f"{counts[k]} {k}" for k in
                           ("pass", "fail", "unsupported", "crash")))
    if n:
        print(f"  pass rate over the tests run: {100 * counts['pass'] / n:.1f}%")
    print(f"  pass rate over all {total_tests} node tests: "
          f"{100 * counts['pass'] / total_tests:.1f}%"
          + ("" if n == total_tests else " (partial run: untested count as not passing)"))
    print(f"  {frozen} tests ran with shape-like integer inputs frozen into "
          f"initializers")
    by_op = collections.Counter()
    for r in results:
        if r["status"] == "unsupported":
            ops = op_of_unsupported(r["reason"]) if "unsupported ONNX operators" in r["reason"] else []
            for op in set(ops) or {f"{primary_op(r)} (other error)"}:
                by_op[("unsupported", op)] += 1
        elif r["status"] in ("fail", "crash"):
            by_op[(r["status"], primary_op(r))] += 1
    if by_op:
        print("  most common reasons (status, operator: tests):")
        for (status, op), k in by_op.most_common(20):
            print(f"    {status:11} {op}: {k}")
    crashes = [r for r in results if r["status"] == "crash"]
    if crashes:
        print()
        print(f"!!! {len(crashes)} CRASHES: each one is a bug "
              f"(reproduce with --filter '^NAME$' --keep DIR):")
        for r in crashes:
            print(f"!!!   {r['name']}: {r['reason']}")
    return counts


def check(results, expected):
    """Lines describing unexpected results; empty when the check passes."""
    problems = []
    for r in results:
        listed = r["name"] in expected
        if r["status"] != "pass" and not listed:
            problems.append(f"unexpected {r['status']}: {r['name']}: {r['reason']}")
        elif r["status"] == "pass" and listed:
            problems.append(f"now passes, remove it from the list: {r['name']}")
    return problems


def parse_shard(text):
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if not m or int(m.group(1)) >= int(m.group(2)):
        raise argparse.ArgumentTypeError("--shard expects I/N with 0 <= I < N")
    return int(m.group(1)), int(m.group(2))


def main(argv=None):
    global _CASES, _ARGS
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=default_build(),
                        help="build folder holding bin/kiln-compile and "
                             "bin/kiln-run (default: $KILN_BUILD_DIR or build/)")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--filter", help="run the tests whose name matches REGEX")
    parser.add_argument("--shard", type=parse_shard,
                        help="I/N: run every N-th test starting at I (sorted by name)")
    parser.add_argument("--limit", type=int, help="run at most N tests")
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds per tool call (default 60)")
    parser.add_argument("--json", type=Path, help="write per-test results here")
    parser.add_argument("--expected-failures", type=Path, default=None,
                        help=f"expected-failure list (default for --check: "
                             f"{DEFAULT_EXPECTED.relative_to(ROOT)})")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a test not in the list does not pass, "
                             "or a listed test passes")
    parser.add_argument("--write-expected-failures", type=Path, metavar="FILE",
                        help="update FILE with the non-passing tests of this run")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each test's model, inputs and outputs in DIR/NAME")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only tests that do not pass")
    parser.add_argument("--gpu-emulation", action="store_true",
                        help="compile for the nvptx target with emulation and "
                             "run on the CUDA driver emulator")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()
    for tool in ("kiln-compile", "kiln-run"):
        if not (args.build / "bin" / tool).exists():
            parser.error(f"{args.build / 'bin' / tool} does not exist (--build)")
    if args.gpu_emulation:
        emulator = args.build / "lib" / "libkiln_cuda_emulator.so"
        if not emulator.exists():
            parser.error(f"{emulator} does not exist (--build)")
        # Hopper's arch-specific target too: every kernel passes ptxas for
        # sm_80 and sm_90a, or the compile fails.
        COMPILE_FLAGS[:] = ["--target=nvptx", "--gpu-arch=sm_80,sm_90a",
                            "--gpu-emulation"]
        os.environ["KILN_CUDA_DRIVER"] = str(emulator)
        os.environ.setdefault("KILN_EMULATOR_ORDER", "shuffle")
    if args.check and args.expected_failures is None:
        args.expected_failures = DEFAULT_EXPECTED

    all_cases = load_node_tests()
    cases = select(all_cases, args.filter, args.shard, args.limit)
    _CASES, _ARGS = cases, args
    print(f"{len(cases)} of {len(all_cases)} ONNX node tests (onnx "
          f"{onnx.__version__}), {args.jobs} processes, build {args.build}"
          + (", nvptx on the CUDA driver emulator" if args.gpu_emulation else ""),
          flush=True)

    start = time.monotonic()
    results = []
    width = len(str(len(cases)))
    context = multiprocessing.get_context("fork")
    with context.Pool(max(1, args.jobs)) as pool:
        for r in pool.imap_unordered(_worker, range(len(cases))):
            results.append(r)
            if args.quiet and r["status"] == "pass":
                continue
            line = (f"[{len(results):>{width}}/{len(cases)}] {r['status']:11} "
                    f"{r['name']} ({r['seconds']:.1f} s)")
            if r["status"] != "pass":
                line += f": {r['reason'][:160]}"
            print(line, flush=True)
    elapsed = time.monotonic() - start
    results.sort(key=lambda r: r["name"])

    summarize(results, len(all_cases), elapsed, args.jobs)
    if args.json:
        args.json.write_text(json.dumps(
            {"onnx": onnx.__version__, "total_node_tests": len(all_cases),
             "seconds": round(elapsed, 1), "results": results}, indent=1) + "\n")
    # On the GPU, the CPU's failures and the GPU's own.
    cpu_expected = read_expected(DEFAULT_EXPECTED) if args.gpu_emulation else {}
    if args.write_expected_failures:
        n = write_expected(args.write_expected_failures, results,
                           [c.name for c in all_cases], besides=cpu_expected)
        print(f"wrote {n} expected failures to {args.write_expected_failures}")
    if args.check:
        expected = read_expected(args.expected_failures)
        if args.gpu_emulation:
            expected = {**cpu_expected, **expected,
                        **read_expected(DEFAULT_EXPECTED_GPU)}
        problems = check(results, expected)
        if problems:
            print()
            print(f"conformance check FAILED ({len(problems)}), against "
                  f"{args.expected_failures}:")
            for p in problems:
                print("  " + p)
            return 1
        print(f"conformance check passed against {args.expected_failures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
