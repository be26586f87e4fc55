"""kiln.compile: an ONNX model to a shared object (or an intermediate stage);
kiln.check: what of a model Kiln does not support, without compiling it."""

import atexit
import dataclasses
import os
import shutil
import tempfile

from . import _kiln
from ._errors import CompileError

# The file suffix of each stage that `emit` names (the stages themselves are
# the compiler's: _kiln.compiler.option_values("emit")).
_SUFFIXES = {"imported": ".mlir", "graph": ".mlir", "linalg": ".mlir",
             "llvm": ".mlir", "llvm-ir": ".ll", "asm": ".s", "obj": ".o",
             "so": ".so", "kernels": ".json", "ptx": ".ptx"}
# kiln.compile's keyword options, each a field of _kiln.compiler.CompileOptions,
# with the Python type it takes.
_OPTIONS = {"optimize_graph": bool, "conv_algorithm": str, "openmp": bool,
            "sve_vector_bits": int, "layout": str, "layout_block": int,
            "batch_split": str, "precision": str, "gpu_arch": str,
            "cuda_path": str,
            "gpu_emulation": bool, "gpu_implicit_gemm": bool}

_temp_dir = None


def _temporary_output(emit):
    """A fresh path in a folder of this process, removed when Python exits."""
    global _temp_dir
    if _temp_dir is None:
        _temp_dir = tempfile.mkdtemp(prefix="kiln-")
        atexit.register(shutil.rmtree, _temp_dir, ignore_errors=True)
    fd, path = tempfile.mkstemp(suffix=_SUFFIXES.get(emit, ""), prefix="model-",
                                dir=_temp_dir)
    os.close(fd)
    return path


def compile(model, output=None, target=None, cpu=None, features=None,
            input_shapes=None, emit="so", tuning_db=None, dynamic_dims=None,
            sequence_shapes=None, **options):
    """Compiles an ONNX model with Kiln and returns the path of the result.

    Args:
      model: a path (str or os.PathLike) to an .onnx file (or a .mlir file in
        Kiln's graph dialect), or an ``onnx.ModelProto``. A ModelProto must
        hold its weights: its external data, if any, is refused (save it to a
        file and pass the path instead).
      output: where to write the result. By default a fresh file in a
        temporary folder of this process, deleted when Python exits: pass
        ``output`` to keep the result.
      target: "x86-64" (the default), "aarch64", or "nvptx" (NVIDIA GPUs,
        with x86-64 host code; docs/gpu.md).
      cpu: an LLVM CPU name; by default the host CPU for the host's
        architecture, a generic CPU for another.
      features: LLVM features to add or remove, e.g. "+avx2,-avx512f".
      input_shapes: {input name: shape} giving symbolic dimensions static
        values.
      sequence_shapes: {sequence input name: [shape, ...]}, the shapes of
        the tensors of a sequence input, one per tensor: Kiln compiles a
        sequence's length and shapes into the model, which then takes the
        tensors as inputs NAME[0], NAME[1], ... (Model.run also takes a list
        for NAME); a sequence output gives outputs NAME[0], NAME[1], ...
      dynamic_dims: {dimension name: (min, max)} keeps the symbolic
        dimension of that name (the model's dim_param) symbolic within those
        bounds; {name: size} gives it a static size in every input. A
        symbolic batch that leads every input stays symbolic without it,
        within 1..1024; another symbolic dimension needs a size or bounds.
        A name may also be a size that a shape operand read at run time
        decides, "<output>_<dimension>" ("y_1"): max bounds it
        (docs/runtime.md, "Shape operands read at run time").
        kiln.load(...).symbols lists a model's symbolic dimensions.
      emit: the stage to write: "so" (a model for kiln.load, the default),
        "obj", "asm", "ptx" (nvptx: the kernels' PTX, each architecture's),
        "llvm-ir" (LLVM IR with the model ABI), "llvm" (the
        LLVM dialect at the end of the pass pipeline), "linalg", "graph" or
        "imported" (the graph dialect before any pass); or "kernels", the
        model's tunable kernels and their search spaces as JSON.
      tuning_db: a tuning database (a path, JSON lines, as kiln.tune writes
        it): each kernel with a record for this target is compiled with the
        configuration of its fastest record, the others with the defaults.
        A malformed file, or a configuration outside a kernel's search
        space, raises CompileError naming the file and line.
      **options: ``optimize_graph`` (bool, default True) runs the graph-level
        optimisations. ``conv_algorithm`` (str, default "auto": a cost model
        of the target) is every convolution's algorithm: "im2col", "direct",
        "winograd-2x3", "winograd-4x3" or "winograd-6x3"; ``conv_algorithms``
        ({ONNX node name: algorithm}) sets single layers. ``openmp`` (bool,
        default True) makes multithreaded code. ``sve_vector_bits`` (int,
        AArch64 with SVE) specialises the code for one SVE vector length.
        ``layout`` (str): "blocked" runs convolutions, pools and the ops
        between them in the blocked layout NCHWc, with ``layout_block`` (int,
        default 0: the target's fp32 vector width) channels per block;
        "nc1hwc0" is the same layout with 16 channels per block unless
        ``layout_block`` says otherwise; "nchw" keeps them in NCHW; "auto"
        (the default) is blocked. ``batch_split`` (str): "auto" (the
        default) runs a batch above 1 as one sample at a time where the
        batch's activations outgrow the cache and outweigh the weights,
        "on" wherever every op treats the samples apart, "off" never
        (docs/performance.md, "Batch splitting"). ``precision`` (str):
        "fp32" (the default) or "bf16": float convolutions and matrix
        products with bf16 operands and f32 accumulation, on the CPU's bf16
        dot products (x86 AVX512-BF16, AArch64 BF16; docs/quantization.md).
        For the nvptx target:
        ``gpu_arch`` (str, default "sm_80,sm_90"), the GPU architectures;
        ``cuda_path`` (str), the CUDA toolkit's root (default $CUDA_HOME,
        $CUDA_PATH, then /usr/local/cuda); ``gpu_emulation`` (bool) adds
        host code of the kernels, which the CUDA driver emulator runs;
        ``gpu_implicit_gemm`` (bool, default False) makes convolutions
        implicit GEMMs (docs/gpu.md).

    Returns:
      The output path, as a str.

    Raises:
      CompileError: the compiler refused the model; the message is the
        compiler's.
      ValueError: an unknown ``emit`` stage, ``layout`` or ``batch_split``
        (the message lists the valid values).
      TypeError: an unknown option or a model of an unsupported type.

    The GIL is released while compiling: other Python threads keep running,
    and several threads may compile at once.
    """
    unknown = sorted(set(options) - set(_OPTIONS) - {"conv_algorithms"})
    if unknown:
        raise TypeError("kiln.compile: unknown option(s) " + ", ".join(unknown))
    if emit not in _kiln.compiler.option_values("emit"):
        raise ValueError(f"kiln.compile: unknown emit stage {emit!r}; expected "
                         "one of " + ", ".join(_kiln.compiler.option_values("emit")))
    settings = _kiln.compiler.CompileOptions()
    try:
        for name, kind in _OPTIONS.items():
            if name in options:
                setattr(settings, name, kind(options[name]))
        settings.conv_algorithms = {
            str(k): str(v) for k, v in dict(options.get("conv_algorithms", {})).items()}
        settings.emit = emit
    except ValueError as error:
        raise ValueError(f"kiln.compile: {error}") from None
    if target:
        settings.target = target
    settings.cpu = cpu or ""
    settings.features = features or ""
    settings.input_shapes = {name: [int(d) for d in shape]
                             for name, shape in (input_shapes or {}).items()}
    settings.sequence_shapes = {
        name: [[int(d) for d in shape] for shape in shapes]
        for name, shapes in (sequence_shapes or {}).items()}
    settings.dynamic_dims = _dynamic_dims(dynamic_dims)
    settings.tuning_db = os.fspath(tuning_db) if tuning_db is not None else ""
    output = os.fspath(output) if output is not None else _temporary_output(emit)
    result = _compile(model, output, settings)
    if not result.ok:
        raise CompileError(result.error)
    return output


def _dynamic_dims(dims):
    """{name: (min, max) or size} as the compiler's {name: (min, max)}."""
    result = {}
    for name, value in (dims or {}).items():
        bounds = (value, value) if isinstance(value, int) else tuple(value)
        if len(bounds) != 2:
            raise ValueError(f"kiln.compile: dynamic_dims[{name!r}] must be a "
                             f"size or (min, max), not {value!r}")
        result[str(name)] = (int(bounds[0]), int(bounds[1]))
    return result


def _compile(model, output, settings):
    """Runs the compiler on a path or a ModelProto; returns its CompileResult."""
    if isinstance(model, (str, os.PathLike)):
        return _kiln.compiler.compile_file(os.fspath(model), output, settings)
    if hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        # An onnx.ModelProto, without importing onnx here.
        return _kiln.compiler.compile_onnx_bytes(model.SerializeToString(), "",
                                                 output, settings)
    raise TypeError("kiln.compile: model must be a path or an "
                    f"onnx.ModelProto, not {type(model).__name__}")


@dataclasses.dataclass(frozen=True)
class ModelCheck:
    """What kiln.check found. True when Kiln supports the model.

    Attributes:
      ok: Kiln imports the whole model (a compile may still fail later, e.g.
        on a shape it cannot make static).
      nodes: nodes of the main graph; opset: its ai.onnx opset (0: none).
      unsupported: {op type: [node names]} for the operators Kiln does not
        import ("domain.OpType" outside ai.onnx), in the order of their
        first node.
      errors: every other problem, one message each, naming its node:
        attribute values and types Kiln does not support, a malformed model.
      unchecked: nodes not checked because an input comes from a node that
        failed.
      report: all of it for a person (``str(check)``), as
        ``kiln-compile --check`` prints it.
    """
    ok: bool
    nodes: int
    opset: int
    unsupported: dict
    errors: list
    unchecked: int
    report: str

    def __bool__(self):
        return self.ok

    def __str__(self):
        return self.report


def check(model, input_shapes=None):
    """Checks an ONNX model for what Kiln does not support, without compiling.

    Reads the model and imports it as a compile would, going on past each
    problem to list them all: unsupported operators (grouped by op type),
    attribute values, element types, an opset newer than Kiln knows. Quick
    (no code is generated), for screening a model zoo.

    Args:
      model: a path to an .onnx file, or an ``onnx.ModelProto``.
      input_shapes: {input name: shape}, as for kiln.compile.

    Returns:
      A ModelCheck, true when Kiln supports the model.

    Raises:
      TypeError: a model of an unsupported type.
    """
    settings = _kiln.compiler.CompileOptions()
    settings.input_shapes = {name: [int(d) for d in shape]
                             for name, shape in (input_shapes or {}).items()}
    if isinstance(model, (str, os.PathLike)):
        result = _kiln.compiler.check_file(os.fspath(model), settings)
    elif hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        result = _kiln.compiler.check_onnx_bytes(model.SerializeToString(), "",
                                                 settings)
    else:
        raise TypeError("kiln.check: model must be a path or an "
                        f"onnx.ModelProto, not {type(model).__name__}")
    return ModelCheck(ok=result.ok, nodes=result.nodes, opset=result.opset,
                      unsupported={op.op_type: list(op.nodes)
                                   for op in result.unsupported},
                      errors=list(result.errors), unchecked=result.unchecked,
                      report=result.report)
