"""Kiln: an ahead-of-time compiler for deep learning models.

    import kiln
    path = kiln.compile("model.onnx")          # -> a shared object
    model = kiln.load(path)
    outputs = model.run({"x": x})              # numpy in, numpy out

See docs/python.md.
"""

from . import _kiln
from ._compile import compile
from ._errors import CompileError, InvalidInputError, KilnError, ModelError
from ._model import Model, TensorInfo, load

__version__ = _kiln.__version__

__all__ = [
    "CompileError",
    "InvalidInputError",
    "KilnError",
    "Model",
    "ModelError",
    "TensorInfo",
    "compile",
    "load",
    "__version__",
]
