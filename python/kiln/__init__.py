"""Kiln: an ahead-of-time compiler for deep learning models.

    import kiln
    path = kiln.compile("model.onnx")          # -> a shared object
    model = kiln.load(path)
    outputs = model.run({"x": x})              # numpy in, numpy out
    kiln.tune("model.onnx", "model.tuning.jsonl", trials=64)
    kiln.compile("model.onnx", tuning_db="model.tuning.jsonl")

See docs/python.md.
"""

from . import _kiln
from ._compile import ModelCheck, check, compile
from ._errors import CompileError, InvalidInputError, KilnError, ModelError
from ._model import Model, SymbolInfo, TensorInfo, load
from .prune import PruneReport, prune
from .quantize import QuantizationReport, quantize
from .tune import tune

__version__ = _kiln.__version__

__all__ = [
    "CompileError",
    "InvalidInputError",
    "KilnError",
    "Model",
    "ModelCheck",
    "ModelError",
    "PruneReport",
    "QuantizationReport",
    "SymbolInfo",
    "TensorInfo",
    "check",
    "compile",
    "load",
    "prune",
    "quantize",
    "tune",
    "__version__",
]
