"""The exceptions of the kiln package. Every one derives from KilnError.

They are raised by the Python code and by the extension (src/Runtime.cpp),
and shown as kiln.<name>.
"""


class KilnError(Exception):
    """An error reported by Kiln's compiler or runtime."""


class CompileError(KilnError):
    """The compiler refused the model; the message is the compiler's, one
    line per error, naming the ONNX node (name and op type) where there is one."""


class ModelError(KilnError):
    """A compiled model cannot be opened: a missing file, a file that is not
    a Kiln model, another ABI version, a CPU feature this machine lacks, or,
    for a GPU model, no NVIDIA driver or GPU, or no image for this GPU."""


class InvalidInputError(KilnError, ValueError):
    """The inputs given to Model.run do not match the model: a missing or
    unknown name, a wrong count, a wrong dtype or shape; or an index among
    them is out of range for the gather or scatter that reads it."""


for _error in (KilnError, CompileError, ModelError, InvalidInputError):
    _error.__module__ = "kiln"
del _error
