"""kiln.compile: an ONNX model to a shared object (or an intermediate stage)."""

import atexit
import os
import shutil
import tempfile

from . import _kiln
from ._errors import CompileError

# The file suffix of each stage that `emit` names.
_SUFFIXES = {"graph": ".mlir", "linalg": ".mlir", "llvm": ".ll", "asm": ".s",
             "obj": ".o", "so": ".so", "kernels": ".json"}

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
            input_shapes=None, emit="so", tuning_db=None, **options):
    """Compiles an ONNX model with Kiln and returns the path of the result.

    Args:
      model: a path (str or os.PathLike) to an .onnx file (or a .mlir file in
        Kiln's graph dialect), or an ``onnx.ModelProto``. A ModelProto must
        hold its weights: its external data, if any, is refused (save it to a
        file and pass the path instead).
      output: where to write the result. By default a fresh file in a
        temporary folder of this process, deleted when Python exits: pass
        ``output`` to keep the result.
      target: "x86-64" (the default), "aarch64" or "nvptx".
      cpu: an LLVM CPU name; by default the host CPU for the host's
        architecture, a generic CPU for another.
      features: LLVM features to add or remove, e.g. "+avx2,-avx512f".
      input_shapes: {input name: shape} giving symbolic dimensions static
        values (a compiled model has static shapes).
      emit: the stage to write: "so" (a model for kiln.load, the default),
        "obj", "asm", "llvm", "linalg" or "graph"; or "kernels", the
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
        (docs/performance.md, "Batch splitting").

    Returns:
      The output path, as a str.

    Raises:
      CompileError: the compiler refused the model; the message is the
        compiler's.
      ValueError: an unknown ``emit`` stage.
      TypeError: an unknown option or a model of an unsupported type.

    The GIL is released while compiling: other Python threads keep running,
    and several threads may compile at once.
    """
    optimize_graph = bool(options.pop("optimize_graph", True))
    codegen = dict(
        conv_algorithm=str(options.pop("conv_algorithm", "auto")),
        conv_algorithms={str(k): str(v)
                         for k, v in dict(options.pop("conv_algorithms", {})).items()},
        openmp=bool(options.pop("openmp", True)),
        sve_vector_bits=int(options.pop("sve_vector_bits", 0)),
        layout=str(options.pop("layout", "auto")),
        layout_block=int(options.pop("layout_block", 0)),
        batch_split=str(options.pop("batch_split", "auto")))
    if options:
        raise TypeError("kiln.compile: unknown option(s) "
                        + ", ".join(sorted(options)))
    if emit not in _SUFFIXES:
        raise ValueError(f"kiln.compile: unknown emit stage {emit!r}; expected "
                         "one of " + ", ".join(_SUFFIXES))
    output = os.fspath(output) if output is not None else _temporary_output(emit)
    kwargs = dict(
        target=target or "", cpu=cpu or "", features=features or "", emit=emit,
        input_shapes={name: [int(d) for d in shape]
                      for name, shape in (input_shapes or {}).items()},
        optimize_graph=optimize_graph,
        tuning_db=os.fspath(tuning_db) if tuning_db is not None else "",
        **codegen)

    if isinstance(model, (str, os.PathLike)):
        result = _kiln.compiler.compile_file(os.fspath(model), output, **kwargs)
    elif hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        # An onnx.ModelProto, without importing onnx here.
        result = _kiln.compiler.compile_onnx_bytes(model.SerializeToString(), "",
                                                   output, **kwargs)
    else:
        raise TypeError("kiln.compile: model must be a path or an "
                        f"onnx.ModelProto, not {type(model).__name__}")
    if not result.ok:
        raise CompileError(result.error)
    return output
