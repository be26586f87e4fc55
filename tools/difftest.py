#!/usr/bin/env python3
"""Differential testing of Kiln against onnxruntime on random ONNX graphs.

Each seed makes one random, valid ONNX graph from operators Kiln supports:
elementwise ops with numpy broadcasting, matrix products, convolution chains
(the channel counts and 3x3 kernels that take the blocked layout and
Winograd), pooling, normalisation, reductions, softmax, shape ops, gathers,
casts between f32, f16 and the integers. Kiln compiles and runs it; its
outputs must equal onnxruntime's in dtype and shape, and in value within

    |kiln - ort| <= atol + rtol * |ort|,  rtol = 1e-3,
    atol = 1e-4 * max(1, max |ort|)        (f32; f16: 1e-2 and 1e-2)

(integers and booleans exactly; NaN where onnxruntime has NaN). A graph
that onnxruntime itself refuses is not counted. A mismatch, a compile error
or a crash is a finding: the tool prints the seed, and with --save-failures
writes the model and its inputs there, to be kept as a regression test
(test/python/difftest/, which test_differential.py runs).

Usage:
  tools/difftest.py --count 300                 seeds 0..299, 2 processes
  tools/difftest.py --start 1000 --count 10000 --jobs 2 --save-failures out/
  tools/difftest.py --seed 42 --save-failures out/   one graph, kept
Prints a line per 100 graphs, then a summary; exits 1 on any finding.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
OPSET = 18

F32, F16, I32, I64, BOOL = (TensorProto.FLOAT, TensorProto.FLOAT16,
                            TensorProto.INT32, TensorProto.INT64,
                            TensorProto.BOOL)
NP = {F32: np.float32, F16: np.float16, I32: np.int32, I64: np.int64,
      BOOL: np.bool_}


class Value:
    """A tensor of the graph. `exact`: its elements are the same in any
    correct implementation (inputs, integers, data movement, max/min/relu
    of exact values), so that an op whose result jumps (a comparison,
    Floor, a cast to an integer) may take it; after float arithmetic two
    correct implementations differ in the last bits, and a jump there
    would be a difference that is no bug."""

    def __init__(self, name, shape, dtype, exact=False):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.exact = exact or dtype not in (F32, F16)


class Graph:
    """A graph under construction: the values made so far and their uses."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inputs, self.inits, self.values = [], [], [], []
        self.feeds = {}
        self.used = set()
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def input(self, shape, dtype=F32):
        value = Value(self.name("x"), shape, dtype, exact=True)
        self.inputs.append(helper.make_tensor_value_info(value.name, dtype,
                                                         list(shape)))
        if dtype in (F32, F16):
            data = self.rng.standard_normal(shape)
        elif dtype == BOOL:
            data = self.rng.integers(0, 2, size=shape)
        else:
            data = self.rng.integers(-20, 20, size=shape)
        self.feeds[value.name] = np.asarray(data).astype(NP[dtype])
        self.values.append(value)
        return value

    def const(self, array, prefix="c"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, inputs, shape, dtype, **attrs):
        exact = op in EXACT_OPS and all(
            v.exact for v in inputs if isinstance(v, Value))
        out = Value(self.name("v"), shape, dtype, exact)
        names = [v.name if isinstance(v, Value) else v for v in inputs]
        for v in inputs:
            if isinstance(v, Value):
                self.used.add(v.name)
        self.nodes.append(helper.make_node(op, names, [out.name],
                                           name=f"{op.lower()}{self.count}",
                                           **attrs))
        self.values.append(out)
        return out

    def pick(self, accept=lambda v: True):
        """A value to consume, recent ones more likely."""
        choices = [v for v in self.values if accept(v)]
        if not choices:
            return None
        weights = np.arange(1, len(choices) + 1, dtype=np.float64) ** 2
        return choices[self.rng.choice(len(choices), p=weights / weights.sum())]


def is_float(v):
    return v.dtype in (F32, F16)


# Ops whose result is exact when their inputs are (see Value).
EXACT_OPS = {"Relu", "Abs", "Neg", "Max", "Min", "Identity", "Transpose",
             "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Concat", "Slice",
             "Gather", "Where", "Cast", "Floor", "Ceil", "Round", "Sign",
             "Clip", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin",
             "Greater", "Less", "Equal", "GreaterOrEqual"}
# Ops whose result jumps: they take exact inputs only.
JUMPS = {"Floor", "Ceil", "Round", "Sign"}


def broadcast_shape(rng, shape):
    """A shape that broadcasts against `shape`: some dims 1, some dropped
    from the front."""
    out = [d if rng.random() < 0.6 else 1 for d in shape]
    drop = rng.integers(0, len(out) + 1) if rng.random() < 0.3 else 0
    return tuple(out[drop:])


# Generators: each takes the graph and adds one node (or a few), or
# returns None when no input fits. Pad, Expand and Tile, transposed
# convolutions, Resize, instance normalisation and attention blocks too.

def unary(g):
    x = g.pick(is_float)
    if x is None:
        return None
    op = g.rng.choice(["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Erf",
                       "Softplus", "HardSigmoid", "LeakyRelu", "Elu", "Selu",
                       "Floor", "Ceil", "Round", "Sqrt", "Log", "Reciprocal",
                       "Clip", "Identity", "Sign", "Sin", "Cos", "Gelu",
                       "HardSwish", "Mish"])
    if op in JUMPS and not x.exact:
        op = "Relu"
    if op in ("Sqrt", "Log", "Reciprocal"):
        # Keep to their domain: |x| + 0.5.
        a = g.node("Abs", [x], x.shape, x.dtype)
        half = g.const(np.array(0.5, dtype=NP[x.dtype]))
        x = g.node("Add", [a, half], x.shape, x.dtype)
    if op == "Exp":
        lim = g.const(np.array(-20, NP[x.dtype])), g.const(np.array(5, NP[x.dtype]))
        x = g.node("Clip", [x, *lim], x.shape, x.dtype)
    if op == "Clip":
        lo, hi = sorted(g.rng.uniform(-1.5, 1.5, size=2))
        return g.node("Clip", [x, g.const(np.array(lo, NP[x.dtype])),
                               g.const(np.array(hi, NP[x.dtype]))],
                      x.shape, x.dtype)
    if op == "LeakyRelu":
        return g.node(op, [x], x.shape, x.dtype,
                      alpha=float(g.rng.uniform(0.01, 0.3)))
    if op == "Gelu" and OPSET < 20:
        op = "Tanh"
    return g.node(op, [x], x.shape, x.dtype)


def binary(g):
    x = g.pick()
    if x is None or x.dtype == BOOL:
        return None
    ops = ["Add", "Sub", "Mul", "Max", "Min"]
    if is_float(x):
        ops += ["Div", "PRelu"]
    op = g.rng.choice(ops)
    # The other operand: a value of a broadcastable shape, else a constant.
    other_shape = broadcast_shape(g.rng, x.shape)
    y = g.pick(lambda v: v.dtype == x.dtype and v.shape == other_shape
               and v.name != x.name)
    if y is None or op in ("Div", "PRelu"):
        data = g.rng.standard_normal(other_shape)
        if op == "Div":
            data = np.sign(data + 1e-3) * (np.abs(data) + 0.5)
        if not is_float(x):
            data = g.rng.integers(-9, 10, size=other_shape)
        y = g.const(np.asarray(data).astype(NP[x.dtype]))
    shape = np.broadcast_shapes(x.shape, other_shape)
    if op == "PRelu":
        # PRelu broadcasts its slope to the input (unidirectionally).
        shape = x.shape
    if g.rng.random() < 0.5 or op in ("Div", "PRelu"):
        return g.node(op, [x, y], shape, x.dtype)  # never divides by x
    return g.node(op, [y, x], shape, x.dtype)


def compare(g):
    x = g.pick(lambda v: v.dtype in (F32, I32, I64) and v.exact)
    if x is None:
        return None
    op = g.rng.choice(["Greater", "Less", "Equal", "GreaterOrEqual"])
    threshold = g.const(np.array(0, NP[x.dtype]))
    mask = g.node(op, [x, threshold], x.shape, BOOL)
    if g.rng.random() < 0.7:
        other = g.const(np.asarray(g.rng.standard_normal(x.shape[-1:]))
                        .astype(NP[x.dtype]))
        return g.node("Where", [mask, x, other], x.shape, x.dtype)
    return g.node("Cast", [mask], x.shape, F32, to=F32)


def cast(g):
    x = g.pick(lambda v: v.dtype in (F32, I32, I64))
    if x is None:
        return None
    if is_float(x):
        to = g.rng.choice([F16, I32, I64]) if x.exact else F16
        if to != F16:
            # Integral values in range (Cast truncates, as Floor does not).
            x = g.node("Floor", [x], x.shape, F32)
            x = g.node("Mul", [x, g.const(np.array(3, np.float32))], x.shape,
                       F32)
        return g.node("Cast", [x], x.shape, int(to), to=int(to))
    return g.node("Cast", [x], x.shape, F32, to=F32)


def matmul(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) >= 1)
    if x is None:
        return None
    k = x.shape[-1]
    n = int(g.rng.choice([1, 3, 8, 16, 17, 32, 40]))
    w = g.const((g.rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32),
                "w")
    if len(x.shape) == 2 and g.rng.random() < 0.4:
        b = g.const(g.rng.standard_normal((n,)).astype(np.float32), "b")
        return g.node("Gemm", [x, w, b], (x.shape[0], n), F32,
                      alpha=float(g.rng.choice([1.0, 0.5])))
    return g.node("MatMul", [x, w], x.shape[:-1] + (n,), F32)


def conv_out(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def conv(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 4
               and min(v.shape[2:]) >= 3)
    if x is None:
        return None
    n, c, h, w = x.shape
    kernel = int(g.rng.choice([1, 3, 3, 5]))
    stride = int(g.rng.choice([1, 1, 2]))
    dilation = int(g.rng.choice([1, 1, 1, 2]))
    pad = int(g.rng.integers(0, kernel // 2 + 1))
    if kernel > 1 and g.rng.random() < 0.15:
        # A segmentation head's atrous convolution: dilated about as much as
        # the map is wide, padded to keep its size, so that most taps read
        # only padding (the tiles' tap bounds, kiln-cpu-tile-and-vectorize).
        dilation = int(g.rng.integers(2, max(3, min(h, w))))
        pad = dilation * (kernel // 2)
    oh = conv_out(h, kernel, stride, pad, dilation)
    ow = conv_out(w, kernel, stride, pad, dilation)
    if oh < 1 or ow < 1:
        return None
    depthwise = c > 1 and g.rng.random() < 0.2
    group = c if depthwise else 1
    m = c if depthwise else int(g.rng.choice([4, 8, 16, 24, 32, 48]))
    divisors = [d for d in range(2, c) if c % d == 0]
    if not depthwise and divisors and g.rng.random() < 0.25:
        # Grouped (ResNeXt, RegNet): groups of whole blocks, narrower groups
        # that the blocked layout merges, and groups it cannot.
        group = int(g.rng.choice(divisors))
        m = c * int(g.rng.choice([1, 1, 2]))
    weight = g.rng.standard_normal((m, c // group, kernel, kernel)) \
        / np.sqrt(c // group * kernel * kernel)
    inputs = [x, g.const(weight.astype(np.float32), "w")]
    if g.rng.random() < 0.7:
        inputs.append(g.const(g.rng.standard_normal(m).astype(np.float32), "b"))
    y = g.node("Conv", inputs, (n, m, oh, ow), F32,
               kernel_shape=[kernel, kernel], strides=[stride, stride],
               pads=[pad] * 4, dilations=[dilation, dilation], group=group)
    after = g.rng.random()
    if after < 0.3:
        return g.node("Relu", [y], y.shape, F32)
    if after < 0.45:
        scale = g.const(g.rng.uniform(0.5, 1.5, m).astype(np.float32), "s")
        bias = g.const(g.rng.standard_normal(m).astype(np.float32), "b")
        mean = g.const(g.rng.standard_normal(m).astype(np.float32), "m")
        var = g.const(g.rng.uniform(0.5, 2, m).astype(np.float32), "var")
        return g.node("BatchNormalization", [y, scale, bias, mean, var],
                      y.shape, F32)
    return y


def image(g):
    """A new NCHW input, for the convolution chains."""
    c = int(g.rng.choice([1, 3, 4, 8, 16, 32]))
    size = int(g.rng.integers(5, 20))
    return g.input((int(g.rng.choice([1, 1, 2])), c, size,
                    int(g.rng.integers(5, 20)) if g.rng.random() < 0.3 else size))


def pool(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 4
               and min(v.shape[2:]) >= 2)
    if x is None:
        return None
    n, c, h, w = x.shape
    op = g.rng.choice(["MaxPool", "AveragePool", "GlobalAveragePool",
                       "GlobalMaxPool"])
    if op.startswith("Global"):
        return g.node(op, [x], (n, c, 1, 1), F32)
    kernel = int(g.rng.integers(2, min(h, w, 3) + 1))
    stride = int(g.rng.choice([1, 2]))
    pad = int(g.rng.integers(0, kernel // 2 + 1))
    oh, ow = (conv_out(h, kernel, stride, pad, 1),
              conv_out(w, kernel, stride, pad, 1))
    attrs = dict(kernel_shape=[kernel, kernel], strides=[stride, stride],
                 pads=[pad] * 4)
    if op == "AveragePool":
        attrs["count_include_pad"] = int(g.rng.integers(0, 2))
    return g.node(op, [x], (n, c, oh, ow), F32, **attrs)


def reduce(g):
    x = g.pick(lambda v: is_float(v) and len(v.shape) >= 1)
    if x is None:
        return None
    rank = len(x.shape)
    op = g.rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                       "ReduceL2", "ReduceSumSquare"])
    count = int(g.rng.integers(1, rank + 1))
    axes = sorted(g.rng.choice(rank, size=count, replace=False).tolist())
    keep = int(g.rng.integers(0, 2))
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)
                  if keep or i not in axes)
    return g.node(op, [x, g.const(np.array(axes, np.int64), "axes")], shape,
                  x.dtype, keepdims=keep)


def normalize(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) >= 1)
    if x is None:
        return None
    rank = len(x.shape)
    choice = g.rng.random()
    if choice < 0.4:
        axis = int(g.rng.integers(-rank, rank))
        return g.node(g.rng.choice(["Softmax", "LogSoftmax"]), [x], x.shape,
                      F32, axis=axis)
    axis = int(g.rng.integers(0, rank))
    norm_shape = x.shape[axis:]
    scale = g.const(g.rng.uniform(0.5, 1.5, norm_shape).astype(np.float32))
    bias = g.const(g.rng.standard_normal(norm_shape).astype(np.float32))
    return g.node("LayerNormalization", [x, scale, bias], x.shape, F32,
                  axis=axis)


def transpose(g):
    x = g.pick(lambda v: len(v.shape) >= 2)
    if x is None:
        return None
    perm = g.rng.permutation(len(x.shape)).tolist()
    return g.node("Transpose", [x], tuple(x.shape[p] for p in perm), x.dtype,
                  perm=perm)


def reshape(g):
    x = g.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return None
    size = int(np.prod(x.shape))
    choice = g.rng.random()
    if choice < 0.3:
        axis = int(g.rng.integers(0, len(x.shape) + 1))
        outer = int(np.prod(x.shape[:axis]))
        return g.node("Flatten", [x], (outer, size // outer), x.dtype,
                      axis=axis)
    if choice < 0.5:
        axis = int(g.rng.integers(0, len(x.shape) + 1))
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        return g.node("Unsqueeze", [x, g.const(np.array([axis], np.int64))],
                      shape, x.dtype)
    # Split the elements into a new shape of up to 4 dimensions.
    factors = [d for d in range(2, 9) if size % d == 0]
    shape = []
    rest = size
    while factors and len(shape) < 3 and g.rng.random() < 0.7:
        f = int(g.rng.choice([d for d in factors if rest % d == 0] or [1]))
        if f == 1:
            break
        shape.append(f)
        rest //= f
    shape.append(rest)
    target = list(shape)
    if g.rng.random() < 0.4:
        target[int(g.rng.integers(0, len(target)))] = -1
    return g.node("Reshape", [x, g.const(np.array(target, np.int64), "shape")],
                  tuple(shape), x.dtype)


def concat(g):
    x = g.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return None
    axis = int(g.rng.integers(0, len(x.shape)))
    others = [v for v in g.values if v.dtype == x.dtype and len(v.shape) ==
              len(x.shape) and all(a == b for i, (a, b) in
                                   enumerate(zip(v.shape, x.shape)) if i != axis)]
    parts = [x] + [others[i] for i in g.rng.choice(
        len(others), size=min(len(others), int(g.rng.integers(1, 3))),
        replace=False)]
    shape = list(x.shape)
    shape[axis] = sum(v.shape[axis] for v in parts)
    return g.node("Concat", parts, tuple(shape), x.dtype, axis=axis)


def slice_(g):
    x = g.pick(lambda v: len(v.shape) >= 1 and max(v.shape) >= 2)
    if x is None:
        return None
    axis = int(np.argmax(x.shape)) if g.rng.random() < 0.5 else \
        int(g.rng.integers(0, len(x.shape)))
    size = x.shape[axis]
    step = int(g.rng.choice([1, 1, 2, -1]))
    if step > 0:
        start = int(g.rng.integers(-size, size))
        end = int(g.rng.integers(start % size + 1, size + 2))
        length = len(range(size)[slice(start, end, step)])
    else:
        start, end = -1, -size - 1
        length = size
    if length < 1:
        return None
    shape = list(x.shape)
    shape[axis] = length
    return g.node("Slice", [x, g.const(np.array([start], np.int64)),
                            g.const(np.array([end], np.int64)),
                            g.const(np.array([axis], np.int64)),
                            g.const(np.array([step], np.int64))],
                  tuple(shape), x.dtype)


def gather(g):
    x = g.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return None
    axis = int(g.rng.integers(0, len(x.shape)))
    size = x.shape[axis]
    count = tuple(int(d) for d in g.rng.integers(1, 4, size=g.rng.integers(0, 3)))
    indices = g.rng.integers(-size, size, size=count).astype(np.int64)
    shape = x.shape[:axis] + count + x.shape[axis + 1:]
    return g.node("Gather", [x, g.const(indices, "i")], shape, x.dtype,
                  axis=axis)


def pad(g):
    x = g.pick(lambda v: len(v.shape) >= 1 and v.dtype != BOOL)
    if x is None:
        return None
    rank = len(x.shape)
    pads = g.rng.integers(0, 3, size=2 * rank)
    mode = str(g.rng.choice(["constant", "reflect", "edge"]))
    if mode == "reflect":
        pads = np.minimum(pads, np.tile(np.array(x.shape) - 1, 2))
    shape = tuple(int(d + pads[i] + pads[i + rank]) for i, d in enumerate(x.shape))
    inputs = [x, g.const(pads.astype(np.int64), "pads")]
    if mode == "constant":
        inputs.append(g.const(np.array(1.5 if is_float(x) else 2, NP[x.dtype])))
    return g.node("Pad", inputs, shape, x.dtype, mode=mode)


def expand_tile(g):
    x = g.pick(lambda v: 1 <= len(v.shape) <= 3)
    if x is None:
        return None
    if g.rng.random() < 0.5:
        reps = g.rng.integers(1, 4, size=len(x.shape))
        shape = tuple(int(d * r) for d, r in zip(x.shape, reps))
        return g.node("Tile", [x, g.const(reps.astype(np.int64), "reps")],
                      shape, x.dtype)
    target = tuple(int(g.rng.integers(2, 5)) if d == 1 else d for d in x.shape)
    if g.rng.random() < 0.5:
        target = (int(g.rng.integers(1, 4)),) + target
    return g.node("Expand", [x, g.const(np.array(target, np.int64), "shape")],
                  target, x.dtype)


def conv_transpose(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 4
               and max(v.shape[2:]) <= 16)
    if x is None:
        return None
    n, c, h, w = x.shape
    kernel = int(g.rng.choice([2, 3, 4]))
    stride = int(g.rng.choice([1, 2]))
    pad = int(g.rng.integers(0, kernel // 2 + 1))
    m = int(g.rng.choice([4, 8, 16]))
    weight = g.rng.standard_normal((c, m, kernel, kernel)) / np.sqrt(c * kernel * kernel)
    oh = (h - 1) * stride - 2 * pad + kernel
    ow = (w - 1) * stride - 2 * pad + kernel
    if oh < 1 or ow < 1:
        return None
    return g.node("ConvTranspose", [x, g.const(weight.astype(np.float32), "w")],
                  (n, m, oh, ow), F32, kernel_shape=[kernel, kernel],
                  strides=[stride, stride], pads=[pad] * 4)


def resize(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 4
               and max(v.shape[2:]) <= 16)
    if x is None:
        return None
    mode = str(g.rng.choice(["nearest", "linear"]))
    scale = float(g.rng.choice([2.0, 0.5, 1.5]))
    shape = x.shape[:2] + tuple(int(np.floor(d * scale)) for d in x.shape[2:])
    if min(shape[2:]) < 1:
        return None
    roi = g.const(np.array([], np.float32), "roi")
    scales = g.const(np.array([1, 1, scale, scale], np.float32), "scales")
    attrs = {"mode": mode}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
        attrs["coordinate_transformation_mode"] = "asymmetric"
    return g.node("Resize", [x, roi, scales], shape, F32, **attrs)


def instance_norm(g):
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 4
               and v.shape[2] * v.shape[3] > 1)
    if x is None:
        return None
    c = x.shape[1]
    return g.node("InstanceNormalization",
                  [x, g.const(g.rng.uniform(0.5, 1.5, c).astype(np.float32)),
                   g.const(g.rng.standard_normal(c).astype(np.float32))],
                  x.shape, F32)


def attention(g):
    """softmax(q k^T / sqrt(d)) v on a [batch, seq, d] value."""
    x = g.pick(lambda v: v.dtype == F32 and len(v.shape) == 3)
    if x is None:
        return None
    b, s, d = x.shape
    k = g.node("Transpose", [x], (b, d, s), F32, perm=[0, 2, 1])
    scores = g.node("MatMul", [x, k], (b, s, s), F32)
    scaled = g.node("Mul", [scores, g.const(np.array(1 / np.sqrt(d), np.float32))],
                    (b, s, s), F32)
    weights = g.node("Softmax", [scaled], (b, s, s), F32, axis=-1)
    return g.node("MatMul", [weights, x], (b, s, d), F32)


def tensor(g):
    """A new input of rank 1 to 4."""
    rank = int(g.rng.integers(1, 5))
    dtype = F32 if g.rng.random() < 0.85 else int(g.rng.choice([I32, I64]))
    return g.input(tuple(int(d) for d in g.rng.integers(1, 9, size=rank)),
                   dtype)


GENERATORS = [(unary, 4), (binary, 5), (compare, 1), (cast, 1), (matmul, 2),
              (conv, 4), (pool, 1.5), (reduce, 1.5), (normalize, 1.5),
              (transpose, 1.5), (reshape, 1.5), (concat, 1), (slice_, 1),
              (gather, 1), (pad, 1), (expand_tile, 1), (conv_transpose, 1),
              (resize, 1), (instance_norm, 0.5), (attention, 1),
              (tensor, 0.5), (image, 0.3)]


def make_graph(seed):
    """The random graph of `seed`: (model, feeds)."""
    rng = np.random.default_rng(seed)
    g = Graph(rng)
    if rng.random() < 0.5:
        image(g)
    else:
        tensor(g)
    if rng.random() < 0.3:
        tensor(g)
    weights = np.array([w for _, w in GENERATORS])
    for _ in range(int(rng.integers(2, 12))):
        for _attempt in range(10):
            gen = GENERATORS[rng.choice(len(GENERATORS),
                                        p=weights / weights.sum())][0]
            if gen(g) is not None:
                break
    # Outputs: the values nothing consumed (inputs aside), at most three.
    fed = {i.name for i in g.inputs}
    free = [v for v in g.values if v.name not in g.used and v.name not in fed]
    if not free:
        free = [unary(g) or g.node("Identity", [g.values[-1]],
                                   g.values[-1].shape, g.values[-1].dtype)]
    outputs = free[-3:]
    graph = helper.make_graph(
        g.nodes, f"difftest_{seed}", g.inputs,
        [helper.make_tensor_value_info(v.name, v.dtype, list(v.shape))
         for v in outputs], g.inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model, g.feeds


def tolerances(dtype):
    return (1e-2, 1e-2) if dtype == np.float16 else (1e-3, 1e-4)


def mismatch(name, got, want):
    """Why `got` differs from `want`, or None."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return (f"{name}: {got.dtype}{list(got.shape)} where onnxruntime gives "
                f"{want.dtype}{list(want.shape)}")
    if want.dtype.kind not in "f":
        bad = got != want
    else:
        rtol, atol = tolerances(want.dtype)
        w = want.astype(np.float64)
        k = got.astype(np.float64)
        finite = np.isfinite(w)
        scale = max(1.0, float(np.max(np.abs(w[finite]), initial=0.0)))
        with np.errstate(invalid="ignore"):
            bad = np.where(finite, np.abs(k - w) > atol * scale + rtol * np.abs(w),
                           ~((np.isnan(w) & np.isnan(k)) | (w == k)))
    if not np.any(bad):
        return None
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{name}: {int(np.sum(bad))} of {bad.size} elements differ, first "
            f"at {list(at)}: kiln {got[at]!r}, onnxruntime {want[at]!r}")


def check(model, feeds, workdir):
    """Compiles and runs `model` with Kiln and onnxruntime: None if they
    agree, "skip" if onnxruntime refuses it, else what differs."""
    import kiln
    import onnxruntime as ort

    try:
        onnx.checker.check_model(model, full_check=True)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        want = session.run(None, feeds)
    except Exception:  # noqa: BLE001 - the generator made an invalid graph
        return "skip"
    try:
        path = kiln.compile(model, os.path.join(workdir, "model.so"))
        with kiln.load(path) as compiled:
            got = compiled.run(feeds)
    except Exception as error:  # noqa: BLE001 - a finding
        return f"{type(error).__name__}: {str(error).strip()[:2000]}"
    problems = []
    for out, w in zip(model.graph.output, want):
        problem = mismatch(out.name, np.asarray(got[out.name]), np.asarray(w))
        if problem:
            problems.append(problem)
    return "; ".join(problems) or None


def run_seed(seed):
    model, feeds = make_graph(seed)
    with tempfile.TemporaryDirectory(prefix="kiln-difftest-") as workdir:
        return seed, check(model, feeds, workdir), len(model.graph.node)


def run_alone(seed):
    """One seed in a process of its own: a crash is its exit status."""
    proc = subprocess.run([sys.executable, __file__, "--seed", str(seed),
                           "--quiet"], capture_output=True, text=True)
    if proc.returncode < 0:
        return f"crash: signal {-proc.returncode}: {proc.stderr.strip()[-500:]}"
    return None


def save(seed, problem, directory):
    model, feeds = make_graph(seed)
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, directory / f"seed{seed}.onnx")
    np.savez(directory / f"seed{seed}.npz", **feeds)
    (directory / f"seed{seed}.txt").write_text(problem + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=300, help="graphs")
    parser.add_argument("--seed", type=int, help="run this one seed")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    parser.add_argument("--save-failures", type=Path,
                        help="write each failing model, inputs and finding")
    parser.add_argument("--json", type=Path, help="write the summary")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    if args.seed is not None:
        # One graph, in this process (run_alone's way to find a crash).
        seed, problem, _ = run_seed(args.seed)
        if problem and problem != "skip":
            print(f"seed {seed}: {problem}")
            if args.save_failures:
                save(seed, problem, args.save_failures)
            return 1
        return 0
    seeds = list(range(args.start, args.start + args.count))
    findings, skipped, nodes = {}, 0, 0
    start = time.monotonic()
    pending = list(seeds)
    done = 0
    while pending:
        with concurrent.futures.ProcessPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(run_seed, s): s for s in pending}
            pending = []
            try:
                for future in concurrent.futures.as_completed(futures):
                    seed, problem, n = future.result()
                    futures.pop(future)
                    done += 1
                    nodes += n
                    if problem == "skip":
                        skipped += 1
                    elif problem:
                        findings[seed] = problem
                        if not args.quiet:
                            print(f"seed {seed}: {problem}", flush=True)
                    if not args.quiet and done % 100 == 0:
                        print(f"{done}/{len(seeds)} graphs, {len(findings)} "
                              f"findings, {time.monotonic() - start:.0f} s",
                              flush=True)
            except concurrent.futures.process.BrokenProcessPool:
                # A worker died: find the seed that kills a process alone.
                for future, seed in futures.items():
                    crash = run_alone(seed)
                    if crash:
                        done += 1
                        findings[seed] = crash
                        print(f"seed {seed}: {crash}", flush=True)
                    else:
                        pending.append(seed)
    for seed, problem in sorted(findings.items()):
        if args.save_failures:
            save(seed, problem, args.save_failures)
    ran = len(seeds) - skipped
    summary = {"graphs": len(seeds), "compared": ran, "skipped": skipped,
               "nodes": nodes, "findings": {str(k): v for k, v in
                                            sorted(findings.items())},
               "seconds": round(time.monotonic() - start, 1)}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    if not args.quiet or findings:
        print(f"difftest: {ran} graphs compared ({nodes} nodes), "
              f"{len(findings)} findings, {skipped} refused by onnxruntime, "
              f"{summary['seconds']} s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
