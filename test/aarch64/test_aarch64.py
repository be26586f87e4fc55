"""AArch64 end to end, under user-mode QEMU.

Models are compiled on the host with `kiln-compile --target=aarch64`
($KILN_BUILD_DIR/bin/kiln-compile, default build/), run with the cross-built
AArch64 kiln-run ($KILN_AARCH64_BUILD_DIR, default build-aarch64; see
docs/aarch64.md) under `qemu-aarch64 -L /usr/aarch64-linux-gnu`, and every
output is compared with onnxruntime on the host (rtol 1e-3, atol 1e-4).

Skipped, with the reason, when qemu-aarch64, the cross sysroot, the AArch64
kiln-run or the host kiln-compile is missing. A model the compiler refuses
FAILS with the compiler's message: these are the models Kiln must deploy.

  KILN_BUILD_DIR=build pytest test/aarch64
  KILN_AARCH64_CONFORMANCE_SHARD=0/20 pytest test/aarch64 -k conformance
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KILN_BUILD_DIR", ROOT / "build")).resolve()
AARCH64_BUILD = Path(os.environ.get("KILN_AARCH64_BUILD_DIR",
                                    ROOT / "build-aarch64")).resolve()
SYSROOT = Path(os.environ.get("KILN_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu"))
LLVM_BIN = Path("/usr/lib/llvm-22/bin")
KILN_COMPILE = BUILD / "bin" / "kiln-compile"
RTOL, ATOL = 1e-3, 1e-4
# Every N-th ONNX node test (see test_conformance_share_under_qemu).
CONFORMANCE_SHARD = os.environ.get("KILN_AARCH64_CONFORMANCE_SHARD", "0/40")

sys.path.insert(0, str(ROOT / "tools" / "models"))


def _aarch64_kiln_run():
    """The cross-built kiln-run: bin/ in a full layout, tools/kiln-run/ in a
    KILN_RUNTIME_ONLY build."""
    for candidate in (AARCH64_BUILD / "bin" / "kiln-run",
                      AARCH64_BUILD / "tools" / "kiln-run" / "kiln-run"):
        if candidate.is_file():
            return candidate
    return None


def _is_aarch64_elf(path):
    with open(path, "rb") as f:
        header = f.read(20)
    # ELF magic, then e_machine (little endian) at offset 18: 183 = EM_AARCH64.
    return header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183


def _missing():
    qemu = shutil.which("qemu-aarch64")
    if not qemu:
        return "qemu-aarch64 not found (apt-get install qemu-user)"
    if not (SYSROOT / "lib" / "ld-linux-aarch64.so.1").exists():
        return f"no AArch64 sysroot at {SYSROOT} (apt-get install libc6-dev-arm64-cross)"
    run = _aarch64_kiln_run()
    if run is None:
        return (f"no cross-built kiln-run in {AARCH64_BUILD} (configure it with "
                f"-DKILN_RUNTIME_ONLY=ON -DCMAKE_TOOLCHAIN_FILE="
                f"cmake/aarch64-linux-gnu.cmake; see docs/aarch64.md)")
    if not _is_aarch64_elf(run):
        return f"{run} is not an AArch64 executable"
    if not KILN_COMPILE.exists():
        return f"no host kiln-compile at {KILN_COMPILE} (set KILN_BUILD_DIR)"
    return None


_MISSING = _missing()
if _MISSING is not None and os.environ.get("KILN_REQUIRE_AARCH64"):
    # tools/test.sh sets it: there, setup installed all of this, so a
    # missing piece is a failure, not a skip.
    raise RuntimeError("the AArch64 tests cannot run: " + _MISSING)
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=str(_MISSING))
QEMU = [shutil.which("qemu-aarch64") or "qemu-aarch64", "-L", str(SYSROOT)]
KILN_RUN = _aarch64_kiln_run()


class ToolError(Exception):
    """A tool exited non-zero; the message is its standard error."""


def _call(args, timeout=600):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise ToolError(proc.stderr.strip() or
                        f"{args[0]} exited with {proc.returncode}")
    return proc.stdout


def compile_for_aarch64(model, workdir, *extra):
    """kiln-compile --target=aarch64 on the host; returns the .so path."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "model.onnx"
    onnx.save(model, str(path))
    so = workdir / "model.so"
    try:
        _call([KILN_COMPILE, path, "-o", so, "--target=aarch64", *extra])
    except ToolError as error:
        lines = str(error).splitlines()
        if len(lines) > 12:  # an IR dump after the message
            lines = lines[:12] + [f"... ({len(lines) - 12} more lines)"]
        pytest.fail(f"kiln-compile --target=aarch64 {' '.join(extra)} refused "
                    f"{model.graph.name}:\n" + "\n".join(lines), pytrace=False)
    return so


def run_under_qemu(so, feeds, workdir, cpu=None):
    """The AArch64 kiln-run on `so` under QEMU; returns {name: array}."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    qemu = QEMU + (["-cpu", cpu] if cpu else [])
    args = qemu + [KILN_RUN, so, "--json", "--output-dir", workdir / "outputs"]
    for i, (name, value) in enumerate(feeds.items()):
        path = workdir / f"input{i}.npy"
        np.save(path, np.ascontiguousarray(value))
        args += ["--input", f"{name}={path}"]
    result = json.loads(_call(args))
    return {name: np.load(path) for name, path in result["outputs"].items()}


def onnxruntime_outputs(model, feeds):
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def assert_matches_onnxruntime(model, feeds, workdir, *compile_args, cpu=None):
    so = compile_for_aarch64(model, workdir, *compile_args)
    got = run_under_qemu(so, feeds, workdir, cpu)
    want = onnxruntime_outputs(model, feeds)
    assert set(got) == set(want), f"outputs {sorted(got)}, expected {sorted(want)}"
    for name, expected in want.items():
        have = got[name]
        assert have.dtype == expected.dtype, f"{name}: {have.dtype} vs {expected.dtype}"
        assert have.shape == expected.shape, f"{name}: {have.shape} vs {expected.shape}"
        np.testing.assert_allclose(have, expected, rtol=RTOL, atol=ATOL, err_msg=name)
    return so


# --------------------------------------------------------------------------
# Small models built here.

def _model(name, nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, producer_name="kiln-aarch64-tests",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _const(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def conv_model(seed=0):
    """Conv 8->16 channels, 3x3, padded, with bias, then Relu: 1x8x16x16."""
    rng = np.random.default_rng(seed)
    w = _const("w", rng.normal(0, 0.2, (16, 8, 3, 3)))
    b = _const("b", rng.normal(0, 0.1, (16,)))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    return _model("aarch64_conv", nodes,
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])],
                  [w, b])


def matmul_model(seed=0, m=32, k=64, n=32):
    """MatMul [m,k] x [k,n] with a constant right-hand side."""
    rng = np.random.default_rng(seed)
    w = _const("w", rng.normal(0, 0.2, (k, n)))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")]
    return _model("aarch64_matmul", nodes,
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                  [w])


def upsampling_model(seed=0):
    """A decoder-style block: ConvTranspose (stride 2), nearest and linear
    Resize (x2), and a Concat of the three along channels. 1x4x8x8 in,
    1x11x16x16 out."""
    rng = np.random.default_rng(seed)
    w = _const("deconv.w", rng.normal(0, 0.3, (4, 3, 3, 3)))
    b = _const("deconv.b", rng.normal(0, 0.1, (3,)))
    scales = _const("scales", [1.0, 1.0, 2.0, 2.0])
    nodes = [
        helper.make_node("ConvTranspose", ["x", "deconv.w", "deconv.b"], ["t"],
                         name="deconv", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("Resize", ["x", "", "scales"], ["u"], name="resize.nearest",
                         mode="nearest"),
        helper.make_node("Resize", ["x", "", "scales"], ["v"], name="resize.linear",
                         mode="linear", coordinate_transformation_mode="half_pixel"),
        helper.make_node("Concat", ["t", "u", "v"], ["y"], name="concat", axis=1),
    ]
    return _model("aarch64_upsampling", nodes,
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 11, 16, 16])],
                  [w, b, scales])


def _feeds(model, seed=0):
    from common import random_inputs
    return random_inputs(model, seed)


# --------------------------------------------------------------------------
# Numerics under QEMU.

def test_cnn_matches_onnxruntime(tmp_path):
    import kiln_cnn
    model = kiln_cnn.build()
    assert_matches_onnxruntime(model, kiln_cnn.feeds(model), tmp_path)


def test_transformer_encoder_matches_onnxruntime(tmp_path):
    import transformer_encoder
    model = transformer_encoder.build(layers=2, hidden=64, heads=4, seq=16, vocab=200)
    assert_matches_onnxruntime(model, transformer_encoder.feeds(model), tmp_path)


def test_convtranspose_resize_concat_matches_onnxruntime(tmp_path):
    model = upsampling_model()
    assert_matches_onnxruntime(model, _feeds(model), tmp_path)


@pytest.mark.parametrize("build", [conv_model, matmul_model], ids=["conv", "matmul"])
def test_neon_model_matches_onnxruntime(tmp_path, build):
    model = build()
    assert_matches_onnxruntime(model, _feeds(model), tmp_path)


# --------------------------------------------------------------------------
# Code generation for AArch64.

FMLA_VECTOR = re.compile(r"\bfmla\s+v\d+\.(4s|2s)\b")
SVE_INSTRUCTION = re.compile(r"\b(ptrue|whilelo|ld1w|st1w)\b|\bz\d+\.s\b")


def disassemble(so):
    objdump = LLVM_BIN / "llvm-objdump"
    return _call([objdump if objdump.exists() else "llvm-objdump", "-d", so])


@pytest.mark.parametrize("build", [conv_model, matmul_model], ids=["conv", "matmul"])
def test_object_holds_neon_vector_fmas(tmp_path, build):
    so = compile_for_aarch64(build(), tmp_path)
    text = disassemble(so)
    assert "file format elf64-littleaarch64" in text, text[:300]
    fmlas = FMLA_VECTOR.findall(text)
    assert fmlas, (f"no NEON vector FMA (fmla vN.4s) in {build.__name__}'s "
                   f"AArch64 code; fmla lines: "
                   f"{[l for l in text.splitlines() if 'fmla' in l][:5]}")


def test_sve_model_compiles_runs_and_requires_sve(tmp_path):
    model = matmul_model()
    feeds = _feeds(model)
    # QEMU's default CPU ("max") implements SVE.
    so = assert_matches_onnxruntime(model, feeds, tmp_path, "--features=+sve")
    # Neoverse N1 has no SVE: the runtime's HWCAP check must refuse the model.
    with pytest.raises(ToolError, match="sve"):
        run_under_qemu(so, feeds, tmp_path / "n1", cpu="neoverse-n1")


SVE_FMLA = re.compile(r"\bfmla\s+z\d+\.s\b")


def test_sve_vector_length_specific_code(tmp_path):
    """--sve-vector-bits=256 makes 256-bit vectors and register blocks that
    LLVM lowers to SVE (fmla zN.s, not NEON's fmla vN.4s). The model runs
    where the SVE vector length is 256 bits, and the runtime refuses it on a
    CPU with 512-bit vectors, where its code would compute garbage."""
    model = conv_model()
    feeds = _feeds(model)
    flags = ("--cpu=neoverse-v1", "--sve-vector-bits=256")
    so = compile_for_aarch64(model, tmp_path, *flags)
    text = disassemble(so)
    assert SVE_FMLA.search(text), [l for l in text.splitlines() if "fmla" in l][:5]
    assert not FMLA_VECTOR.search(text), "NEON FMAs left in the SVE-256 code"
    # QEMU's vector length in bytes.
    assert_matches_onnxruntime(model, feeds, tmp_path, *flags,
                               cpu="max,sve-default-vector-length=32")
    with pytest.raises(ToolError, match=r"sve-vector-bits=256"):
        run_under_qemu(so, feeds, tmp_path / "vl512",
                       cpu="max,sve-default-vector-length=64")


def _needed_libraries(so):
    readelf = LLVM_BIN / "llvm-readelf"
    text = _call([readelf if readelf.exists() else "llvm-readelf", "-d", so])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", text)


def test_openmp_threads_match_single_thread(tmp_path):
    """AArch64 models are multithreaded through LLVM's OpenMP runtime
    (libomp5-19:arm64, which tools/setup.sh puts into the cross sysroot):
    two threads give the same numbers as one and as onnxruntime.
    --no-openmp gives a model that does not need libomp at all."""
    model = conv_model()
    feeds = _feeds(model)
    so = compile_for_aarch64(model, tmp_path / "omp")
    assert "libomp.so.5" in _needed_libraries(so)
    want = onnxruntime_outputs(model, feeds)
    for threads in (1, 2):
        workdir = tmp_path / f"threads{threads}"
        workdir.mkdir()
        args = QEMU + [KILN_RUN, so, "--json", "--threads", threads,
                       "--output-dir", workdir / "outputs"]
        for i, (name, value) in enumerate(feeds.items()):
            np.save(workdir / f"input{i}.npy", value)
            args += ["--input", f"{name}={workdir / f'input{i}.npy'}"]
        result = json.loads(_call(args, timeout=300))
        assert result["threads"] == threads
        got = np.load(result["outputs"]["y"])
        np.testing.assert_allclose(got, want["y"], rtol=RTOL, atol=ATOL)

    single = compile_for_aarch64(model, tmp_path / "single", "--no-openmp")
    assert "libomp.so.5" not in _needed_libraries(single)
    assert_matches_onnxruntime(model, feeds, tmp_path / "single", "--no-openmp")


def test_cpu_feature_check_reads_hwcaps(tmp_path):
    """--cpu=neoverse-n1 code needs ARMv8.2 features (LSE atomics, dot
    product...) that a Cortex-A53 lacks: it runs on an emulated N1 and is
    refused on an emulated A53, before any of its code runs."""
    model = matmul_model()
    feeds = _feeds(model)
    so = assert_matches_onnxruntime(model, feeds, tmp_path, "--cpu=neoverse-n1",
                                    cpu="neoverse-n1")
    with pytest.raises(ToolError, match=r"requires CPU feature '[a-z0-9.-]+'"):
        run_under_qemu(so, feeds, tmp_path / "a53", cpu="cortex-a53")


# --------------------------------------------------------------------------
# A share of the ONNX node tests under QEMU.

def test_conformance_share_under_qemu(tmp_path):
    """Every N-th ONNX node test that passes on the host must pass on AArch64.

    tools/conformance.py takes a build folder holding bin/kiln-compile and
    bin/kiln-run; an AArch64 "build folder" of two wrapper scripts makes it
    compile with --target=aarch64 and run under QEMU."""
    conformance = ROOT / "tools" / "conformance.py"
    if not conformance.exists():
        pytest.skip("tools/conformance.py is missing")
    wrappers = tmp_path / "aarch64" / "bin"
    wrappers.mkdir(parents=True)
    scripts = {
        "kiln-compile": f'exec "{KILN_COMPILE}" --target=aarch64 "$@"\n',
        "kiln-run": "exec " + " ".join(f'"{a}"' for a in QEMU + [str(KILN_RUN)])
                    + ' "$@"\n',
    }
    for name, body in scripts.items():
        path = wrappers / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def run(build, json_path, *selection):
        command = [sys.executable, str(conformance), "--build", str(build),
                   "--jobs", "2", "--quiet", "--json", str(json_path), *selection]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=1500)
        assert json_path.exists(), (f"{' '.join(command)} exited "
                                    f"{proc.returncode}:\n{proc.stdout[-3000:]}"
                                    f"\n{proc.stderr[-3000:]}")
        return {r["name"]: r for r in json.loads(json_path.read_text())["results"]}

    start = time.monotonic()
    host = run(BUILD, tmp_path / "host.json", "--shard", CONFORMANCE_SHARD)
    passing = sorted(n for n, r in host.items() if r["status"] == "pass")
    if not passing:
        pytest.skip(f"no test of shard {CONFORMANCE_SHARD} passes on the host")
    arm = run(tmp_path / "aarch64", tmp_path / "aarch64.json",
              "--filter", "^(" + "|".join(map(re.escape, passing)) + ")$")
    elapsed = time.monotonic() - start
    bad = [f"{n}: {arm[n]['status'] if n in arm else 'not run'}: "
           f"{arm.get(n, {}).get('reason', '')}"
           for n in passing if arm.get(n, {}).get("status") != "pass"]
    print(f"shard {CONFORMANCE_SHARD}: {len(host)} node tests, {len(passing)} pass "
          f"on the host, {len(passing) - len(bad)} of them under QEMU "
          f"({elapsed:.0f} s)")
    assert not bad, (f"{len(bad)} of the {len(passing)} node tests passing on the "
                     f"host do not pass on AArch64:\n" + "\n".join(bad))


# --------------------------------------------------------------------------
# Int8 on AArch64's dot products (issue 20).

@pytest.mark.parametrize("cpu,instruction", [
    ("generic", None), ("neoverse-n1", "sdot"), ("neoverse-v1", "usdot")])
@pytest.mark.parametrize("name", ["conv", "mlp"])
def test_int8_dot_products_match_onnxruntime(tmp_path, name, cpu, instruction):
    """Quantised convolutions (onnxruntime's quantize_static, QDQ) and matrix
    products (quantize_dynamic) compute in 8-bit integers on NEON's dot
    products: usdot (u8 x s8) where the CPU has i8mm (Neoverse V1), sdot
    (s8 x s8, on the bytes less 128 plus the weights' sum times 128) where
    it has only dotprod (Neoverse N1); in f32 on a generic ARMv8 CPU. Each
    within one quantisation step of onnxruntime's output (the conv stack), or
    within onnxruntime's own rounding (the dynamically quantised MLP), as
    on x86 (test/python/test_qlinear.py)."""
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from test_qlinear import conv_stack, mlp, output_step, quantize_with_onnxruntime
    rng = np.random.default_rng(5)
    path = tmp_path / "q.onnx"
    if name == "conv":
        shape = (1, 3, 21, 21)
        quantize_with_onnxruntime(
            conv_stack(), path, "QDQ",
            [rng.standard_normal(shape).astype(np.float32) for _ in range(4)])
    else:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        shape = (3, 10, 40)
        onnx.save(mlp(), tmp_path / "float.onnx")
        quantize_dynamic(str(tmp_path / "float.onnx"), str(path),
                         weight_type=QuantType.QInt8)
    model = onnx.load(str(path))
    feeds = {"x": rng.standard_normal(shape).astype(np.float32)}
    so = compile_for_aarch64(model, tmp_path / "build", f"--cpu={cpu}")
    text = disassemble(so)
    for mnemonic in ("sdot", "usdot"):
        count = len(re.findall(rf"\b{mnemonic}\s+v\d+\.4s", text))
        assert (count > 0) == (mnemonic == instruction), (mnemonic, count)
    output = "y" if name == "mlp" else "c4"
    got = run_under_qemu(so, feeds, tmp_path / "run", cpu="max")[output]
    want = onnxruntime_outputs(model, feeds)[output]
    if name == "conv":
        assert np.abs(got.astype(np.float64) - want).max() <= 1.001 * output_step(model)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * np.abs(want).max())


def test_bf16_precision_on_bfdot(tmp_path):
    """--precision=bf16 on a CPU with BF16 (Neoverse V1): the matmuls run on
    bfdot, within bf16's rounding of fp32 onnxruntime; a CPU without BF16
    (Neoverse N1) is refused at compile time."""
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from test_qlinear import mlp
    model = mlp()
    rng = np.random.default_rng(9)
    feeds = {"x": rng.standard_normal((3, 10, 40)).astype(np.float32)}
    so = compile_for_aarch64(model, tmp_path / "v1", "--cpu=neoverse-v1",
                             "--precision=bf16")
    assert re.search(r"\bbfdot\s+v\d+\.4s", disassemble(so))
    got = run_under_qemu(so, feeds, tmp_path / "run", cpu="max")["y"]
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(got, want, rtol=0, atol=0.02 * np.abs(want).max())
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ToolError, match="needs a CPU with bf16 dot products"):
        _call([KILN_COMPILE, path, "-o", tmp_path / "n1.so", "--target=aarch64",
               "--cpu=neoverse-n1", "--precision=bf16"])
