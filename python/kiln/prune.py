"""kiln.prune: structured pruning of convolution filters by L1 norm.

Removes whole output channels of convolutions, and everything that reads
them: a BatchNormalization's parameters, the input channels of the next
convolution, the per-channel constants of elementwise ops, the columns of a
classifier behind Flatten or GlobalAveragePool. Channels that an Add joins,
or that a depthwise convolution carries through, are one set: a residual
block's branches lose the same channels, chosen by the summed L1 norms of
every filter that writes them. A Concat keeps each input's own channels.

Channels that reach something pruning cannot follow (a graph output, a
Reshape, a grouped convolution, an op it does not know) are kept whole, and
the report says where. The result is a valid, smaller ONNX model; nothing is
retrained (distillation and fine-tuning are outside Kiln: docs/
quantization.md).
"""

import dataclasses
import os
import time

import numpy as np

# Ops whose output channel i depends on input channel i alone, which pruning
# passes through: unary elementwise and pooling ops (their other inputs, if
# any, are scalars).
PASS_THROUGH = {
    "Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish",
    "Tanh", "Elu", "Selu", "Celu", "Gelu", "Mish", "Softplus", "Softsign",
    "Identity", "Dropout", "MaxPool", "AveragePool", "GlobalAveragePool",
    "GlobalMaxPool", "LpPool", "GlobalLpPool", "Abs", "Neg", "Exp", "Log",
    "Sqrt", "Erf", "Cast", "Pad",
}
# Elementwise ops of two or more inputs: channel tensors are joined, a
# per-channel constant is pruned along.
ELEMENTWISE = {"Add", "Sum", "Mul", "Sub", "Div", "Max", "Min", "Mean"}


@dataclasses.dataclass
class PruneReport:
    """What kiln.prune removed, and what it cost and gained."""
    sparsity: float
    pruned: dict          # conv node -> (channels before, after)
    kept: list            # reasons channels were kept whole
    flops_before: int
    flops_after: int
    params_before: int
    params_after: int
    seconds: float
    speedup: float = None  # Kiln's measured fp32 speed-up, with measure=True

    def __str__(self):
        lines = [f"kiln.prune: sparsity {self.sparsity:g}, "
                 f"{len(self.pruned)} convolution(s) pruned",
                 f"FLOPs  {self.flops_before / 1e6:10.2f} M -> "
                 f"{self.flops_after / 1e6:10.2f} M "
                 f"({self.flops_after / max(1, self.flops_before):.0%})",
                 f"params {self.params_before / 1e6:10.3f} M -> "
                 f"{self.params_after / 1e6:10.3f} M "
                 f"({self.params_after / max(1, self.params_before):.0%})"]
        if self.speedup:
            lines.append(f"Kiln fp32 speed-up: {self.speedup:.2f}x")
        for reason in self.kept:
            lines.append("kept whole: " + reason)
        return "\n".join(lines)


def prune(model, output, sparsity=0.3, method="l1", measure=False,
          num_threads=None):
    """Prunes `sparsity` of each prunable set of convolution channels of
    `model`, writes the smaller model to `output` and returns a PruneReport.

    Args:
      model: a path to an .onnx file, or an onnx.ModelProto (NCHW
        convolutions).
      output: the path of the pruned .onnx model.
      sparsity: the fraction of each set's channels to remove, in [0, 1).
      method: "l1", the L1 norm of each filter (the only one so far).
      measure: compile both models with Kiln and time them (median of
        several runs) for the report's speed-up.
      num_threads: threads of those runs.

    Raises:
      ValueError: a bad argument, or a model whose structure pruning cannot
        follow anywhere (the message says where the channels went).
    """
    import onnx
    from onnx import numpy_helper
    start = time.monotonic()
    if method != "l1":
        raise ValueError(f"kiln.prune: unknown method {method!r}; expected 'l1'")
    if not 0.0 <= float(sparsity) < 1.0:
        raise ValueError(f"kiln.prune: sparsity must be in [0, 1), not {sparsity!r}")
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    model = onnx.shape_inference.infer_shapes(model)
    original = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    arrays = {name: numpy_helper.to_array(t) for name, t in inits.items()}
    shapes = _shapes(model)

    plan = _Plan(graph, arrays, shapes)
    plan.trace()
    if not plan.prunable_convs():
        raise ValueError("kiln.prune: no convolution can be pruned: "
                         + ("; ".join(plan.kept) or "the model has none"))
    keep = plan.choose(float(sparsity))
    pruned = plan.apply(keep)
    for name, array in plan.arrays.items():
        if name in inits:
            inits[name].CopyFrom(numpy_helper.from_array(array, name))
    # Outputs keep their channels (they are fenced); the rest is inferred
    # again.
    del graph.value_info[:]
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    output = os.fspath(output)
    onnx.save(model, output)
    report = PruneReport(
        sparsity=float(sparsity), pruned=pruned, kept=plan.kept,
        flops_before=_flops(original), flops_after=_flops(model),
        params_before=_params(original), params_after=_params(model),
        seconds=time.monotonic() - start)
    if measure:
        report.speedup = _measure(original, model, num_threads)
    return report


def _shapes(model):
    shapes = {}
    for value in list(model.graph.input) + list(model.graph.value_info) + \
            list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None
                              for d in dims]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


class _Plan:
    """Channel sets (union-find over the channels of every convolution's
    output), what each tensor's channel axis holds, and who reads it."""

    def __init__(self, graph, arrays, shapes):
        self.graph, self.arrays, self.shapes = graph, arrays, shapes
        self.parent = {}       # channel id -> parent (union-find)
        self.channels = {}     # tensor -> list of channel ids along axis 1
        self.writers = {}      # channel id -> [(conv node, filter index)]
        self.readers = []      # (kind, node, input index, tensor) to rewrite
        self.fenced = set()    # channel ids that must stay
        self.kept = []
        self.convs = {}        # conv node name -> its output channel ids
        self.next_id = 0

    # -- union-find ---------------------------------------------------------
    def new(self, count):
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        for i in ids:
            self.parent[i] = i
        return ids

    def find(self, i):
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a

    def fence(self, tensor, why):
        """Keeps every channel of `tensor` (and those joined to them)."""
        ids = self.channels.get(tensor) or []
        if any(i not in self.fenced for i in ids):
            self.kept.append(why)
        self.fenced.update(ids)

    def fenced_roots(self):
        return {self.find(i) for i in self.fenced}

    # -- tracing -------------------------------------------------------------
    def trace(self):
        consumers = {}
        for node in self.graph.node:
            for i, name in enumerate(node.input):
                consumers.setdefault(name, []).append((node, i))
        for index, node in enumerate(self.graph.node):
            if not node.name:
                node.name = f"{node.op_type}#{index}"
            self.visit(node)
        for value in self.graph.output:
            self.fence(value.name, f"'{value.name}' is a graph output")

    def is_const(self, name):
        return name in self.arrays

    def visit(self, node):
        op = node.op_type
        ins = [n for n in node.input]
        channel_inputs = [i for i, n in enumerate(ins) if n in self.channels]
        describe = f"node '{node.name}' ({op})"
        if op == "Conv":
            group = next((a.i for a in node.attribute if a.name == "group"), 1)
            w = self.arrays.get(ins[1]) if len(ins) > 1 else None
            if w is None or w.ndim != 4:
                for i in channel_inputs:
                    self.fence(ins[i], describe + " has non-constant weights")
                return
            c_out, c_in_per_group = w.shape[0], w.shape[1]
            x = ins[0]
            if group == 1:
                if x in self.channels:
                    self.readers.append(("conv_in", node, 0, x))
                ids = self.new(c_out)
                for f, i in enumerate(ids):
                    self.writers[i] = [(node, f)]
                self.channels[node.output[0]] = ids
                self.convs[node.name] = ids
            elif group == c_out and c_in_per_group == 1 and x in self.channels \
                    and len(self.channels[x]) == c_out:
                # Depthwise: channel i in, channel i out.
                ids = self.channels[x]
                for f, i in enumerate(ids):
                    self.writers.setdefault(i, []).append((node, f))
                self.readers.append(("depthwise", node, 0, x))
                self.channels[node.output[0]] = list(ids)
            else:
                if x in self.channels:
                    self.fence(x, describe + " is a grouped convolution")
                # Its own outputs are kept whole too: not tracked.
            return
        if op == "BatchNormalization" and ins and ins[0] in self.channels:
            if not all(self.is_const(n) for n in ins[1:5]):
                self.fence(ins[0], describe + " has non-constant parameters")
                return
            self.readers.append(("per_channel", node, 0, ins[0]))
            self.channels[node.output[0]] = list(self.channels[ins[0]])
            return
        if op in PASS_THROUGH and channel_inputs == [0]:
            if op == "PRelu" and ins[1] in self.arrays and \
                    self.arrays[ins[1]].size > 1:
                self.readers.append(("elementwise_const", node, 1, ins[0]))
            if op == "Pad" and len(ins) > 1 and ins[1] and ins[1] in self.arrays:
                pads = self.arrays[ins[1]]
                if pads.size >= 4 and (pads[1] != 0 or pads[1 + pads.size // 2] != 0):
                    self.fence(ins[0], describe + " pads channels")
                    return
            self.channels[node.output[0]] = list(self.channels[ins[0]])
            return
        if op in ELEMENTWISE and channel_inputs:
            first = self.channels[ins[channel_inputs[0]]]
            for i in channel_inputs[1:]:
                other = self.channels[ins[i]]
                if len(other) != len(first):
                    for j in channel_inputs:
                        self.fence(ins[j], describe + " broadcasts channels")
                    return
                for a, b in zip(first, other):
                    self.union(a, b)
            rank = len(self.shapes.get(node.output[0]) or [])
            for i, name in enumerate(ins):
                if i in channel_inputs:
                    continue
                if not self.is_const(name) or not _per_channel(self.arrays[name], rank,
                                                              len(first)):
                    if self.is_const(name) and self.arrays[name].size == 1:
                        continue
                    if self.is_const(name) and _broadcasts_channels(
                            self.arrays[name], rank):
                        continue
                    for j in channel_inputs:
                        self.fence(ins[j], describe + f" reads '{name}' across channels")
                    return
                self.readers.append(("elementwise_const", node, i, ins[channel_inputs[0]]))
            self.channels[node.output[0]] = list(first)
            return
        if op == "Concat" and channel_inputs:
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            rank = len(self.shapes.get(node.output[0]) or [])
            if (axis % rank if rank else axis) != 1 or \
                    len(channel_inputs) != len(ins):
                for i in channel_inputs:
                    self.fence(ins[i], describe + " does not join channels alone")
                return
            ids = []
            for name in ins:
                ids += self.channels[name]
            self.channels[node.output[0]] = ids
            return
        if op in ("Flatten", "Reshape") and channel_inputs == [0]:
            # [N, C, H, W] -> [N, C*H*W]: each channel's features in a row.
            shape = self.shapes.get(ins[0]) or []
            out = self.shapes.get(node.output[0]) or []
            spatial = int(np.prod(shape[2:])) if len(shape) >= 2 and \
                all(d is not None for d in shape[1:]) else None
            if spatial is None or len(out) != 2 or \
                    out[1] != len(self.channels[ins[0]]) * spatial:
                self.fence(ins[0], describe + " mixes channels with the batch")
                return
            self.channels[node.output[0]] = [i for i in self.channels[ins[0]]
                                             for _ in range(spatial)]
            return
        if op == "Gemm" and channel_inputs == [0]:
            attrs = {a.name: a for a in node.attribute}
            if (attrs.get("transA") and attrs["transA"].i) or \
                    not self.is_const(ins[1]):
                self.fence(ins[0], describe + " does not read features as columns")
                return
            self.readers.append(("gemm_in", node, 1, ins[0]))
            return
        if op == "MatMul" and channel_inputs == [0] and self.is_const(ins[1]) and \
                len(self.shapes.get(ins[0]) or []) == 2:
            self.readers.append(("matmul_in", node, 1, ins[0]))
            return
        for i in channel_inputs:
            self.fence(ins[i], describe + " is an op pruning does not follow")

    # -- choosing and rewriting -----------------------------------------------
    def prunable_convs(self):
        fenced = self.fenced_roots()
        return [name for name, ids in self.convs.items()
                if any(self.find(i) not in fenced for i in ids)]

    def choose(self, sparsity):
        """The channel ids to keep: per set of joined convolution outputs,
        all but the `sparsity` of classes with the smallest summed L1."""
        fenced = self.fenced_roots()
        score = {}
        for i, writers in self.writers.items():
            root = self.find(i)
            for node, f in writers:
                w = self.arrays[node.input[1]]
                score[root] = score.get(root, 0.0) + float(np.abs(w[f]).sum())
        # Sets of classes: the conv outputs, joined by the union-find.
        groups = {}
        for ids in self.convs.values():
            roots = [self.find(i) for i in ids]
            key = min(roots)
            groups.setdefault(key, set()).update(roots)
        # Joined outputs (a residual chain) have the same classes.
        merged = {frozenset(roots) for roots in groups.values()}
        removed = set()
        for roots in merged:
            if roots & fenced:
                continue
            ordered = sorted(roots, key=lambda r: score.get(r, 0.0))
            count = int(len(ordered) * sparsity)
            count = min(count, len(ordered) - 1)  # a set never empties
            removed.update(ordered[:count])
        return lambda i: self.find(i) not in removed

    def apply(self, keep):
        """Slices every weight and parameter; returns {conv: (before, after)}."""
        arrays = self.arrays
        pruned = {}
        sliced = set()

        def take(name, axis, mask):
            # Each axis of a weight once: a convolution's filters (axis 0)
            # and input channels (axis 1) are both cut.
            if (name, axis) in sliced or name not in arrays:
                return
            arrays[name] = np.compress(mask, arrays[name], axis=axis)
            sliced.add((name, axis))

        for name, ids in self.convs.items():
            mask = np.array([keep(i) for i in ids])
            node = next(n for n in self.graph.node if n.name == name)
            take(node.input[1], 0, mask)
            if len(node.input) > 2 and node.input[2]:
                take(node.input[2], 0, mask)
            if mask.sum() != len(ids):
                pruned[name] = (len(ids), int(mask.sum()))
        for kind, node, index, tensor in self.readers:
            mask = np.array([keep(i) for i in self.channels[tensor]])
            if kind == "conv_in":
                take(node.input[1], 1, mask)
            elif kind == "depthwise":
                take(node.input[1], 0, mask)
                if len(node.input) > 2 and node.input[2]:
                    take(node.input[2], 0, mask)
                for a in node.attribute:
                    if a.name == "group":
                        a.i = int(mask.sum())
            elif kind == "per_channel":
                for name in node.input[1:5]:
                    take(name, 0, mask)
            elif kind == "elementwise_const":
                name = node.input[index]
                value = arrays[name]
                rank = len(self.shapes.get(node.output[0]) or [])
                take(name, value.ndim - (rank - 1), mask)
            elif kind == "gemm_in":
                attrs = {a.name: a for a in node.attribute}
                axis = 1 if attrs.get("transB") and attrs["transB"].i else 0
                features = np.array([keep(i) for i in self.channels[node.input[0]]])
                take(node.input[1], axis, features)
            elif kind == "matmul_in":
                features = np.array([keep(i) for i in self.channels[node.input[0]]])
                take(node.input[1], 0, features)
        return pruned


def _per_channel(value, rank, channels):
    """Whether a constant broadcast against a rank-`rank` NCHW tensor has
    one value per channel: shape [C,1,..] (rank - 1 dims) or [1,C,1,..]."""
    shape = list(value.shape)
    if len(shape) == rank:
        return len(shape) >= 2 and shape[1] == channels and \
            all(d == 1 for i, d in enumerate(shape) if i != 1)
    if len(shape) == rank - 1:
        return len(shape) >= 1 and shape[0] == channels and \
            all(d == 1 for d in shape[1:])
    return False


def _broadcasts_channels(value, rank):
    """A constant with size 1 along the channel axis after broadcasting."""
    shape = [1] * (rank - value.ndim) + list(value.shape)
    return len(shape) >= 2 and shape[1] == 1


def _flops(model):
    """2 x multiply-adds of the convolutions and matrix products."""
    import onnx
    model = onnx.shape_inference.infer_shapes(model)
    shapes = _shapes(model)
    total = 0
    for node in model.graph.node:
        if node.op_type == "Conv":
            out = shapes.get(node.output[0]) or []
            w = shapes.get(node.input[1]) or []
            if out and w and all(d for d in out) and all(d for d in w):
                total += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
        elif node.op_type in ("Gemm", "MatMul"):
            out = shapes.get(node.output[0]) or []
            a = shapes.get(node.input[0]) or []
            if out and a and all(d for d in out) and all(d for d in a):
                attrs = {x.name: x.i for x in node.attribute if x.type == 2}
                k = a[0] if attrs.get("transA") else a[-1]
                total += 2 * int(np.prod(out)) * int(k)
    return total


def _params(model):
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


def _measure(before, after, num_threads, runs=20):
    """Kiln's fp32 median time of `before` over that of `after`."""
    import tempfile
    from ._compile import compile as kiln_compile
    from ._model import load
    workdir = tempfile.mkdtemp(prefix="kiln-prune-")
    models = [load(kiln_compile(m, os.path.join(workdir, f"{i}.so")),
                   num_threads=num_threads) for i, m in enumerate((before, after))]
    rng = np.random.default_rng(0)
    feeds = []
    for info in models[0].inputs:
        shape = [1 if d is None else d for d in info.shape]
        feeds.append(rng.standard_normal(shape).astype(info.dtype)
                     if info.dtype.kind == "f" else np.zeros(shape, info.dtype))
    times = [[], []]
    for _ in range(3):
        for m in models:
            m.run(feeds)
    for _ in range(runs):  # interleaved, against a noisy machine
        for i, m in enumerate(models):
            t0 = time.perf_counter()
            m.run(feeds)
            times[i].append(time.perf_counter() - t0)
    return float(np.median(times[0]) / np.median(times[1]))
