"""A model file is checked before the loader maps it: a truncated, damaged or
foreign file is refused with a clear error, never a crash of the process
that loads it (issue 23: a quarter of a model used to kill kiln-run with
SIGSEGV inside dlopen)."""

import platform
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln
from kiln_testing import KILN_RUN, ROOT

sys.path.insert(0, str(ROOT / "tools"))
import seal_model  # noqa: E402


def tiny_model():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph(
        [node], "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "tiny.so"
    kiln.compile(tiny_model(), path, openmp=False)
    return path.read_bytes()


def test_every_truncation_point_is_refused(model_bytes, tmp_path):
    path = tmp_path / "cut.so"
    refused = 0
    for size in range(len(model_bytes)):
        path.write_bytes(model_bytes[:size])
        with pytest.raises(kiln.ModelError) as error:
            kiln.load(path)
        message = str(error.value)
        assert ("is truncated or damaged" in message
                or "not a shared object (no ELF header)" in message), (size, message)
        refused += 1
    assert refused == len(model_bytes)
    # The whole file still loads and runs.
    path.write_bytes(model_bytes)
    y = kiln.load(path).run({"x": np.array([-1, 2, -3, 4], np.float32)})["y"]
    np.testing.assert_array_equal(y, [0, 2, 0, 4])


def test_truncated_model_in_kiln_run(model_bytes, tmp_path):
    path = tmp_path / "quarter.so"
    path.write_bytes(model_bytes[:len(model_bytes) // 4])
    proc = subprocess.run([str(KILN_RUN), "--info", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith(f"kiln-run: error: model '{path}' is truncated or "
                                  "damaged: "), proc.stderr


def test_damage_inside_is_caught_by_the_checksum(model_bytes, tmp_path):
    # One bit of the producer string, in the middle of the file: the
    # structure is intact, the checksum kiln-compile recorded is not.
    data = bytearray(model_bytes)
    at = data.index(b"kiln 0.1.0")
    data[at] ^= 0x01
    path = tmp_path / "flipped.so"
    path.write_bytes(bytes(data))
    with pytest.raises(kiln.ModelError,
                       match="its checksum does not match what kiln-compile recorded"):
        kiln.load(path)
    # The seal itself damaged.
    data = bytearray(model_bytes)
    data[-12] ^= 0x80  # in the recorded checksum
    path.write_bytes(bytes(data))
    with pytest.raises(kiln.ModelError, match="checksum does not match"):
        kiln.load(path)
    # Bytes appended after the seal.
    path.write_bytes(model_bytes + b"\0" * 7)
    with pytest.raises(kiln.ModelError, match="does not end in a whole Kiln seal"):
        kiln.load(path)


def test_a_model_without_a_seal_is_refused(model_bytes, tmp_path):
    """A damaged section table once made a sealed model look like one of a
    Kiln before seals, which the runtime took on its structure alone, and
    dlopen crashed in its relocations (found by the model-file fuzzer; the
    input is in test/fuzz/regressions/model-file/). Every model must be
    sealed now."""
    path = tmp_path / "unsealed.so"
    path.write_bytes(model_bytes[:-32])
    with pytest.raises(kiln.ModelError,
                       match="does not end in a whole Kiln seal .* must be recompiled"):
        kiln.load(path)
    assert seal_model.is_sealed(model_bytes)
    assert seal_model.seal(model_bytes[:-32]) == model_bytes


def test_damaged_program_headers(model_bytes, tmp_path):
    # e_phoff (bytes 32-39) pointing past the end of the file: the checksum
    # finds it, and in a file sealed after the damage, the structure check.
    data = bytearray(model_bytes[:-32])
    data[32:40] = (len(data) + 4096).to_bytes(8, "little")
    path = tmp_path / "damaged.so"
    path.write_bytes(bytes(data) + model_bytes[-32:])
    with pytest.raises(kiln.ModelError, match="checksum does not match"):
        kiln.load(path)
    path.write_bytes(seal_model.seal(bytes(data)))
    with pytest.raises(kiln.ModelError, match="program header table lies past the end"):
        kiln.load(path)


@pytest.mark.skipif(platform.machine() != "x86_64",
                    reason="compiles for AArch64 to have a foreign model")
def test_model_for_another_machine(tmp_path):
    path = kiln.compile(tiny_model(), tmp_path / "arm.so", target="aarch64",
                        openmp=False)
    with pytest.raises(kiln.ModelError,
                       match="was compiled for AArch64, but this machine is x86-64"):
        kiln.load(path)
