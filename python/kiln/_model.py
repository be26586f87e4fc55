"""kiln.load and kiln.Model: run a compiled model on numpy arrays."""

import os
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from . import _kiln
from ._errors import InvalidInputError, KilnError


class TensorInfo(NamedTuple):
    """One input or output of a compiled model.

    ``dtype`` is a numpy dtype; a bf16 tensor, which numpy cannot hold, is
    described (and passed) as uint16 arrays of its raw bits. In ``shape`` a
    symbolic dimension (one that each run chooses, within the bounds of
    ``Model.symbols``) is None; ``dims`` names it, and is None for a static
    dimension.
    """
    name: str
    dtype: np.dtype
    shape: tuple
    dims: tuple = ()


class SymbolInfo(NamedTuple):
    """A symbolic dimension: its name and the bounds of its size.

    ``data_dependent`` is True for a size that the run decides from the data
    (an output of NonZero, Compress, Unique or NonMaxSuppression: ``run()``
    returns arrays of the sizes it decided), False for one the inputs give.
    """
    name: str
    min: int
    max: int
    data_dependent: bool = False


class Model:
    """A compiled model opened by kiln.load.

    Runs on one Model are serialised (they share its scratch memory); to run
    in parallel, load the model once per thread. The GIL is released while
    a model runs.
    """

    def __init__(self, path, num_threads=None):
        self._path = os.fspath(path)
        self._model = _kiln.runtime.Model(
            self._path, 0 if num_threads is None else int(num_threads))
        self._inputs = [TensorInfo(n, d, s, dims)
                        for n, d, s, _, dims in self._model.inputs]
        self._outputs = [TensorInfo(n, d, s, dims)
                         for n, d, s, _, dims in self._model.outputs]
        self._symbols = [SymbolInfo(*entry) for entry in self._model.symbols]
        self._input_index = {info.name: i for i, info in enumerate(self._inputs)}

    @property
    def path(self):
        """The path the model was loaded from."""
        return self._path

    @property
    def inputs(self):
        """A list of TensorInfo, one per input, in the model's order."""
        return list(self._inputs)

    @property
    def outputs(self):
        """A list of TensorInfo, one per output, in the model's order."""
        return list(self._outputs)

    @property
    def symbols(self):
        """A list of SymbolInfo, one per symbolic dimension (none for a model
        of static shapes): each run may give it any size from ``min`` to
        ``max``, the same in every input that names it, or, for a
        data-dependent one, decides it."""
        return list(self._symbols)

    @property
    def num_threads(self):
        """Threads each run uses; settable (1 to 4096, else ValueError)."""
        self._check_open()
        return self._model.num_threads

    @num_threads.setter
    def num_threads(self, value):
        self._check_open()
        self._model.num_threads = int(value)

    @property
    def target_triple(self):
        """The target the model was compiled for, e.g. "x86_64-unknown-linux-gnu"."""
        return self._model.target_triple

    @property
    def cpu(self):
        """The CPU the model's code was tuned for."""
        return self._model.cpu

    @property
    def device(self):
        """Where the model runs: "cpu", or "cuda" for a model compiled with
        target="nvptx" (its inputs and outputs are still numpy arrays)."""
        return self._model.device

    def run(self, feeds):
        """Runs the model once and returns {output name: numpy array}.

        ``feeds`` is a dict {input name: array} naming every input exactly
        once, or a list (tuple) of arrays in the order of ``inputs``. Each
        array must have exactly the input's dtype and shape (no conversion
        is made: a wrong one raises InvalidInputError), but for a symbolic
        dimension: any size within its bounds, the same wherever it is
        named. A non-contiguous array is copied. The outputs are fresh arrays
        owned by the caller, of this run's shapes. A sequence input (compiled
        as inputs NAME[0], NAME[1], ...) may be given as a list under NAME;
        a sequence output comes as outputs NAME[0], NAME[1], ...
        """
        self._check_open()
        if isinstance(feeds, Mapping):
            feeds = self._expand_sequences(feeds)
            unknown = [name for name in feeds if name not in self._input_index]
            if unknown:
                raise InvalidInputError(
                    "unknown input(s) " + ", ".join(repr(n) for n in unknown)
                    + "; the model's inputs are " + self._names(self._inputs))
            missing = [i.name for i in self._inputs if i.name not in feeds]
            if missing:
                raise InvalidInputError(
                    "missing input(s) " + ", ".join(repr(n) for n in missing))
            ordered = [feeds[info.name] for info in self._inputs]
        elif isinstance(feeds, (list, tuple)):
            if len(feeds) != len(self._inputs):
                raise InvalidInputError(
                    f"expected {len(self._inputs)} input(s) "
                    f"({self._names(self._inputs)}), got {len(feeds)}")
            ordered = list(feeds)
        else:
            raise TypeError("Model.run: feeds must be a dict {name: array} or "
                            f"a list of arrays, not {type(feeds).__name__}")
        results = self._model.run(ordered)
        return {info.name: array for info, array in zip(self._outputs, results)}

    __call__ = run

    def _expand_sequences(self, feeds):
        """`feeds` with each list given for a sequence input spread over
        its tensors NAME[0], NAME[1], ..."""
        expanded = {}
        for name, value in feeds.items():
            if name in self._input_index or not isinstance(value, (list, tuple)):
                expanded[name] = value
                continue
            length = 0
            while f"{name}[{length}]" in self._input_index:
                length += 1
            if not length:
                raise InvalidInputError(
                    f"unknown input {name!r}; the model's inputs are "
                    + self._names(self._inputs))
            if length != len(value):
                raise InvalidInputError(
                    f"input {name!r}: a sequence of {len(value)} tensors, but "
                    f"the model was compiled for {length} ({name}[0], ...)")
            expanded.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        return expanded


    def close(self):
        """Unloads the model now (waiting for a run in progress); later
        calls raise KilnError. Loaded models are also closed when collected."""
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        def describe(infos):
            def dims(info):
                names = info.dims or (None,) * len(info.shape)
                return "[" + ",".join(name or str(size) for size, name
                                      in zip(info.shape, names)) + "]"
            return ", ".join(f"{i.name}: {i.dtype} {dims(i)}" for i in infos)
        return (f"<kiln.Model {self._path!r} inputs=({describe(self._inputs)}) "
                f"outputs=({describe(self._outputs)})>")

    def _check_open(self):
        if self._model.closed:
            raise KilnError(f"the model {self._path!r} is closed")

    @staticmethod
    def _names(infos):
        return ", ".join(repr(i.name) for i in infos)


def load(path, num_threads=None):
    """Opens a model compiled by kiln.compile (a .so) and returns a Model.

    ``num_threads`` is the number of threads each run uses: by default the
    KILN_NUM_THREADS environment variable, else the number of CPUs.
    Raises ModelError if the file is missing or is not a Kiln model this
    runtime and this CPU can run. Opening a model runs its code: load only
    models you trust.
    """
    return Model(path, num_threads)
