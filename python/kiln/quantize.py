"""kiln.quantize: post-training int8 quantisation by calibration.

Takes a float ONNX model and calibration samples, and writes a QDQ ONNX model:
the model with QuantizeLinear/DequantizeLinear pairs around the inputs of its
convolutions and matrix products, int8 weights (per output channel, or per
tensor) and int32 biases behind DequantizeLinear. The result is a standard
ONNX model: Kiln compiles it, and onnxruntime (or any other QDQ consumer)
runs it too.

Kiln itself runs the steps (docs/quantization.md), on one model it compiles
once: the float model beside its int8 twin, whose activation scales are
inputs of the model.

1. Calibration, on the float model's activations: "minmax" takes each
   tensor's range; "percentile" cuts its tails at a percentile of a
   histogram; "entropy" picks the clipping threshold whose 8-bit histogram
   loses the least information (KL divergence), as TensorRT does.
2. Errors, with the calibrated scales: each quantised layer's output in the
   twin against float (cosine similarity, largest absolute error), what its
   quantised input had lost already, and the model's outputs. A layer that
   itself loses more than ``max_loss`` of cosine stays float.
3. The QDQ model is written. Where layers stay float (and ``evaluate``), it
   is compiled and its outputs measured again.

Activations are uint8 with a zero point (ranges from calibration, always
holding 0); weights int8, symmetric ([-127, 127], zero point 0); biases
int32 with the scale of input times weight.
"""

import dataclasses
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping

import numpy as np

from ._compile import compile as kiln_compile
from ._errors import KilnError
from ._model import load

QUANTIZED_OPS = ("Conv", "MatMul", "Gemm")
METHODS = ("minmax", "percentile", "entropy")
ENTROPY_BINS = 2048
PERCENTILE_BINS = 4096


@dataclasses.dataclass
class TensorRange:
    """A quantised activation: its calibrated range, scale and zero point."""
    name: str
    min: float
    max: float
    scale: float
    zero_point: int


@dataclasses.dataclass
class LayerReport:
    """One convolution or matrix product: how it was quantised, and its
    output's error in the int8 model against the float model on the
    calibration samples (cosine similarity, largest absolute error), with
    the cosine its quantised input had."""
    node: str
    op_type: str
    input: str
    input_scale: float
    input_zero_point: int
    weight_scales: tuple  # (min, max) over the output channels
    input_cosine: float
    cosine: float
    max_error: float
    kept_float: bool


@dataclasses.dataclass
class QuantizationReport:
    """What kiln.quantize did: every layer, every activation's range, and
    (with evaluate) each model output's error against float."""
    method: str
    per_channel: bool
    samples: int
    layers: list
    tensors: list
    outputs: dict  # output name -> {"cosine": c, "max_error": e}
    max_loss: float
    seconds: float
    # Seconds per step: "compile", "calibrate", "layers" (and "write",
    # "evaluate" where layers stay float).
    steps: dict = dataclasses.field(default_factory=dict)
    @property
    def kept_float(self):
        """The layers left in float (each lost more than max_loss)."""
        return [layer.node for layer in self.layers if layer.kept_float]

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=1)

    def __str__(self):
        steps = ", ".join(f"{k} {v:.1f}" for k, v in self.steps.items())
        lines = [f"kiln.quantize: {self.method}, "
                 f"{'per channel' if self.per_channel else 'per tensor'}, "
                 f"{self.samples} samples, {self.seconds:.1f} s ({steps})",
                 f"{'layer':40} {'op':7} {'in scale':>10} {'zp':>4} "
                 f"{'w scale min..max':>21} {'in cos':>9} {'cosine':>9} {'max err':>9}"]
        for layer in self.layers:
            lo, hi = layer.weight_scales
            lines.append(
                f"{layer.node[:40]:40} {layer.op_type:7} {layer.input_scale:10.4g} "
                f"{layer.input_zero_point:4d} {lo:10.3g}..{hi:<9.3g} "
                f"{layer.input_cosine:9.6f} {layer.cosine:9.6f} {layer.max_error:9.4g}"
                + ("  float" if layer.kept_float else ""))
        if self.kept_float:
            lines.append(f"{len(self.kept_float)} layer(s) stay float (each lost more "
                         f"than {self.max_loss:g} of cosine): "
                         + ", ".join(self.kept_float))
        for name, error in self.outputs.items():
            lines.append(f"output {name}: cosine {error['cosine']:.6f}, "
                         f"max error {error['max_error']:.4g}")
        return "\n".join(lines)


def quantize(model, calibration, output, method="minmax", per_channel=True,
             percentile=99.99, max_loss=0.01, op_types=QUANTIZED_OPS,
             report_samples=16, evaluate=True, num_threads=None):
    """Quantises `model` to int8 from `calibration`, writes the QDQ model to
    `output`, and returns a QuantizationReport.

    Args:
      model: a path to an .onnx file, or an onnx.ModelProto.
      calibration: an iterable of samples, each a dict {input name: array}
        naming every input, or (for a model of one input) an array.
      output: the path of the QDQ .onnx model to write.
      method: "minmax", "percentile" or "entropy".
      per_channel: int8 weights with a scale per output channel (else one
        per tensor).
      percentile: the percentile of |x| kept by method="percentile".
      max_loss: a layer whose output's cosine similarity to float falls by
        more than this fraction below its quantised input's stays float (1
        quantises every layer, a negative value none).
      op_types: the operators to quantise (those with constant weights).
      report_samples: the samples (the first ones) on which the per-layer
        and output errors are measured.
      evaluate: where layers stay float, compile the QDQ model written and
        measure its outputs again (else they are those of the model with
        every layer quantised).
      num_threads: threads of the runs (default: the runtime's).

    Raises:
      ValueError: a bad argument, or a calibration sample of the wrong
        inputs, dtype or shape (the message names the sample).
    """
    onnx, numpy_helper = _onnx()
    start = time.monotonic()
    if method not in METHODS:
        raise ValueError(f"kiln.quantize: unknown method {method!r}; expected "
                         + ", ".join(METHODS))
    if not 50.0 < float(percentile) <= 100.0:
        raise ValueError("kiln.quantize: percentile must be in (50, 100], not "
                         f"{percentile!r}")
    if isinstance(model, (str, os.PathLike)):
        model = onnx.load(os.fspath(model))
    model = _opset13(onnx, model)
    model = onnx.shape_inference.infer_shapes(model)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    samples = [_check_sample(i, sample, inputs)
               for i, sample in enumerate(calibration)]
    if not samples:
        raise ValueError("kiln.quantize: no calibration samples")

    layers = _quantizable(graph, inits, set(op_types))
    if not layers:
        raise ValueError("kiln.quantize: the model has no " + ", ".join(op_types)
                         + " with constant weights to quantise")
    types = _value_types(model)
    activations = sorted({layer.input for layer in layers})
    workdir = tempfile.mkdtemp(prefix="kiln-quantize-")

    # One compiled model does it all: the float model beside its int8 twin
    # (each quantised layer on its activation quantised with a scale and
    # zero point given as inputs, and on its int8 weights), each float
    # activation's smallest and largest value, each layer's output in both.
    weights = {layer.node.name: _quantize_weights(layer, inits, per_channel,
                                                  numpy_helper)
               for layer in layers}
    analysis = _analysis_model(model, layers, activations, weights, types)
    steps = {}
    mark = time.monotonic()

    def step(name):
        nonlocal mark
        now = time.monotonic()
        steps[name] = steps.get(name, 0.0) + now - mark
        mark = now

    runner = _Runner(analysis, os.path.join(workdir, "analysis"), num_threads)
    step("compile")
    neutral = _scale_feeds({name: TensorRange(name, 0.0, 0.0, 1.0, 0)
                            for name in activations})

    # 1. Calibration, on the float model's activations.
    lows = {name: math.inf for name in activations}
    highs = {name: -math.inf for name in activations}
    histograms = {name: _Histogram(ENTROPY_BINS if method == "entropy"
                                   else PERCENTILE_BINS) for name in activations}
    for sample in samples:
        values = runner.run({**sample, **neutral})
        for name in activations:
            value = values[name]
            lows[name] = min(lows[name], float(value.min()))
            highs[name] = max(highs[name], float(value.max()))
            if method != "minmax":
                histograms[name].add(value)
    if method != "minmax":
        for name in activations:
            lows[name], highs[name] = _clip(histograms[name], method, percentile,
                                            lows[name], highs[name])
    ranges = {name: _activation_range(name, lows[name], highs[name])
              for name in activations}
    step("calibrate")

    # 2. Each layer's output in the int8 twin against float, and what its
    # quantised input already lost; the model's outputs the same way.
    scales = _scale_feeds(ranges)
    errors = {layer.node.name: _ErrorStats() for layer in layers}
    input_errors = {name: _ErrorStats() for name in activations}
    measured = samples[:max(1, report_samples)]
    names = [o.name for o in graph.output]
    output_errors = {name: _ErrorStats() for name in names}
    for sample in measured:
        values = runner.run({**sample, **scales})
        for layer in layers:
            out = layer.node.output[0]
            errors[layer.node.name].add(values[out], values[out + _INT8])
        for name in activations:
            input_errors[name].add(values[name], values[name + _INT8 + "/dq"])
        for name in names:
            output_errors[name].add(values[name], values[name + _INT8])
    step("layers")

    # 3. The QDQ model, with the layers that quantise badly left in float.
    result = onnx.ModelProto.FromString(model.SerializeToString())
    quantized = []
    reports = []
    for layer in layers:
        stats = errors[layer.node.name]
        before = input_errors[layer.input].cosine
        # What the layer loses itself: its output's cosine against what its
        # quantised input had.
        keep = stats.cosine < before * (1.0 - max_loss)
        w = weights[layer.node.name]
        rng = ranges[layer.input]
        reports.append(LayerReport(
            node=layer.node.name, op_type=layer.node.op_type, input=layer.input,
            input_scale=rng.scale, input_zero_point=rng.zero_point,
            weight_scales=(float(w.scales.min()), float(w.scales.max())),
            input_cosine=before, cosine=stats.cosine, max_error=stats.max_error,
            kept_float=keep))
        if not keep:
            quantized.append(layer)
    _insert_qdq(result.graph, quantized, ranges, weights)
    del result.graph.value_info[:]
    result = onnx.shape_inference.infer_shapes(result)
    onnx.checker.check_model(result)
    output = os.fspath(output)
    onnx.save(result, output)

    # The outputs with every layer quantised, as measured above; where some
    # stay float, the model written is compiled and measured again.
    outputs = {name: e for name, e in output_errors.items()}
    if len(quantized) < len(layers) and evaluate:
        step("write")
        candidate = _Runner(result, os.path.join(workdir, "int8"), num_threads)
        step("compile")
        reference = _Runner(model, os.path.join(workdir, "float"), num_threads)
        step("compile")
        outputs = {name: _ErrorStats() for name in names}
        for sample in measured:
            want, got = reference.run(sample), candidate.run(sample)
            for name in names:
                outputs[name].add(want[name], got[name])
        step("evaluate")
    outputs = {name: {"cosine": e.cosine, "max_error": e.max_error}
               for name, e in outputs.items()}
    return QuantizationReport(
        method=method, per_channel=per_channel, samples=len(samples),
        layers=reports, tensors=[ranges[name] for name in activations],
        outputs=outputs, max_loss=max_loss,
        seconds=time.monotonic() - start, steps=steps)


def _opset13(onnx, model):
    """`model` at ai.onnx opset 13 or later, where DequantizeLinear has its
    per-axis scales."""
    opset = next((o.version for o in model.opset_import
                  if o.domain in ("", "ai.onnx")), 0)
    if opset >= 13:
        return model
    from onnx import version_converter
    try:
        return version_converter.convert_version(model, 13)
    except Exception as error:
        raise ValueError(f"kiln.quantize: the model is at opset {opset}, and "
                         "per-axis DequantizeLinear needs opset 13; "
                         f"onnx.version_converter could not convert it: {error}"
                         ) from None


def _onnx():
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise ImportError("kiln.quantize needs the onnx package "
                          "(pip install onnx)") from None
    return onnx, numpy_helper


# -- Samples -------------------------------------------------------------------

def _check_sample(index, sample, inputs):
    """`sample` as {name: array}, checked against the model's inputs."""
    from onnx import helper
    if not isinstance(sample, Mapping):
        if len(inputs) != 1:
            raise ValueError(f"kiln.quantize: calibration sample {index} is an "
                             f"array, but the model has {len(inputs)} inputs: "
                             "give a dict {input name: array}")
        sample = {inputs[0].name: sample}
    names = {i.name for i in inputs}
    if set(sample) != names:
        raise ValueError(f"kiln.quantize: calibration sample {index} gives "
                         f"{sorted(sample)}, but the model's inputs are "
                         f"{sorted(names)}")
    checked = {}
    for info in inputs:
        value = np.asarray(sample[info.name])
        tensor = info.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") else None
                for d in tensor.shape.dim]
        if value.dtype != dtype:
            raise ValueError(f"kiln.quantize: calibration sample {index}: input "
                             f"'{info.name}' is {value.dtype}, the model's is "
                             f"{np.dtype(dtype)}")
        if value.ndim != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, value.shape)):
            shape = "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
            raise ValueError(f"kiln.quantize: calibration sample {index}: input "
                             f"'{info.name}' has shape {list(value.shape)}, the "
                             f"model's is {shape}")
        checked[info.name] = np.ascontiguousarray(value)
    return checked


# -- The model -----------------------------------------------------------------

@dataclasses.dataclass
class _Layer:
    node: object
    input: str   # the activation
    weight: str  # an initializer
    bias: str    # an initializer, or ""
    axis: int    # the weight's output-channel axis


def _quantizable(graph, inits, op_types):
    """The nodes of `op_types` with a float activation and constant float
    weights (and bias)."""
    from onnx import TensorProto
    floats = {name for name, t in inits.items() if t.data_type == TensorProto.FLOAT}
    layers = []
    for i, node in enumerate(graph.node):
        if node.op_type not in op_types or len(node.input) < 2:
            continue
        if not node.name:
            node.name = f"{node.op_type}#{i}"
        x, w = node.input[0], node.input[1]
        bias = node.input[2] if len(node.input) > 2 else ""
        if x in inits or w not in floats or (bias and bias not in floats):
            continue
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "Conv":
            axis = 0
        elif node.op_type == "Gemm":
            if attrs.get("transA") and attrs["transA"].i:
                continue
            if (attrs.get("alpha") and attrs["alpha"].f != 1.0) or \
                    (attrs.get("beta") and attrs["beta"].f != 1.0):
                continue
            axis = 0 if attrs.get("transB") and attrs["transB"].i else 1
        else:  # MatMul: a 2-D weight, columns are the outputs
            if len(inits[w].dims) != 2:
                continue
            axis = 1
        if bias and node.op_type != "Conv" and node.op_type != "Gemm":
            bias = ""
        if bias and len(inits[bias].dims) != 1:
            bias = ""  # a Gemm bias that broadcasts otherwise stays float
        layers.append(_Layer(node, x, w, bias, axis))
    return layers


def _value_types(model):
    """Every value's TypeProto: inputs, outputs, and inferred value_info."""
    types = {}
    for value in list(model.graph.input) + list(model.graph.value_info) + \
            list(model.graph.output):
        types[value.name] = value.type
    return types


# The inputs of the analysis model that give an activation's scale and zero
# point.
_SCALE, _ZERO = "kiln_calibrate/scale/", "kiln_calibrate/zero_point/"


def _scale_feeds(ranges):
    """The analysis model's scale and zero-point inputs for `ranges`."""
    feeds = {}
    for name, rng in ranges.items():
        feeds[_SCALE + name] = np.array(rng.scale, np.float32)
        feeds[_ZERO + name] = np.array(rng.zero_point, np.uint8)
    return feeds


# The int8 twin's names: the float model's, with this suffix.
_INT8 = "/kiln_int8"


def _analysis_model(model, layers, activations, weights, types):
    """The float model beside its int8 twin, with as outputs: each
    activation, and its quantised form in the twin (name + _INT8 + "/dq"), each layer's
    output in both, and the model's outputs in both (name + _INT8). In the
    twin every node is copied on the twin's values; a quantised layer reads
    its activation through QuantizeLinear/DequantizeLinear with the scale
    and zero point of two new inputs, and its int8 weights (its bias stays
    float, a difference below a quantisation step)."""
    import onnx
    from onnx import TensorProto, helper
    analysis = onnx.ModelProto.FromString(model.SerializeToString())
    graph = analysis.graph
    outputs = {o.name for o in graph.output}
    shared = {t.name for t in graph.initializer} | {i.name for i in graph.input}

    def output(name, type_proto=None, elem_type=None):
        if name in outputs:
            return
        value = graph.output.add()
        value.name = name
        if type_proto is not None:
            value.type.CopyFrom(type_proto)
        else:
            value.type.tensor_type.elem_type = elem_type
            value.type.tensor_type.shape.SetInParent()
        outputs.add(name)

    def typed(name):
        if types.get(name) is None:
            raise ValueError(f"kiln.quantize: no type is known for tensor '{name}' "
                             "(shape inference could not type it)")
        return types[name]

    def twin(name):
        return name if name in shared or not name else name + _INT8

    by_node = {layer.node.name: layer for layer in layers}
    float_nodes = list(graph.node)
    for name in activations:
        graph.input.extend([
            helper.make_tensor_value_info(_SCALE + name, TensorProto.FLOAT, []),
            helper.make_tensor_value_info(_ZERO + name, TensorProto.UINT8, [])])
        output(name, typed(name))
    quantized_inputs = {}
    for node in float_nodes:
        layer = by_node.get(node.name)
        if layer is not None and layer.input not in quantized_inputs:
            dq = layer.input + _INT8 + "/dq"
            graph.node.extend([
                helper.make_node("QuantizeLinear",
                                 [twin(layer.input), _SCALE + layer.input,
                                  _ZERO + layer.input],
                                 [layer.input + _INT8 + "/q"],
                                 name=layer.input + _INT8 + "/QuantizeLinear"),
                helper.make_node("DequantizeLinear",
                                 [layer.input + _INT8 + "/q", _SCALE + layer.input,
                                  _ZERO + layer.input],
                                 [dq], name=layer.input + _INT8 + "/DequantizeLinear")])
            quantized_inputs[layer.input] = dq
            output(dq, typed(layer.input))
        if layer is not None:
            # Its int8 weights behind DequantizeLinear. (Dequantised here
            # they would be constants that Kiln folds and packs as the float
            # model's: faster runs, but a compile longer by more than the
            # runs gain.)
            weight, _ = _dq_weights(graph, layer, None, weights[node.name], _INT8,
                                    with_bias=False)
        copy = graph.node.add()
        copy.CopyFrom(node)
        copy.name = node.name + _INT8
        for i, name in enumerate(node.input):
            copy.input[i] = twin(name)
        for i, name in enumerate(node.output):
            copy.output[i] = twin(name)
        if layer is not None:
            copy.input[0] = quantized_inputs[layer.input]
            copy.input[1] = weight
            out = node.output[0]
            output(out, typed(out))
            output(out + _INT8, typed(out))
    for value in model.graph.output:
        output(value.name + _INT8, value.type)
    return analysis


class _Runner:
    """`model` compiled by Kiln, run one sample at a time."""

    def __init__(self, model, path, num_threads):
        self.model = load(kiln_compile(model, path + ".so"), num_threads=num_threads)

    def run(self, feeds):
        return self.model.run(feeds)


# -- Ranges --------------------------------------------------------------------

class _Histogram:
    """Histograms of a tensor's positive values and of its negative values'
    magnitudes over [0, top], in one pass: where a value outgrows `top`,
    `top` doubles and each pair of bins merges. Zeros are only counted (the
    zero point holds them exactly: a ReLU's half of zeros would otherwise
    pull an entropy threshold down). At most `SAMPLED` values of each run
    are counted, evenly strided: plenty for the tails of 100 runs, at a
    bounded cost."""
    SAMPLED = 1 << 18

    def __init__(self, bins):
        self.bins = bins
        self.top = 0.0
        self.positive = np.zeros(bins, np.int64)
        self.negative = np.zeros(bins, np.int64)
        self.zeros = 0

    def add(self, value):
        flat = value.ravel()
        if flat.size > self.SAMPLED:
            flat = flat[::-(-flat.size // self.SAMPLED)]
        peak = float(np.abs(flat).max()) if flat.size else 0.0
        if self.top == 0.0:
            self.top = peak or 1.0
        while peak > self.top:
            for counts in (self.positive, self.negative):
                merged = counts.reshape(-1, 2).sum(axis=1)
                counts[:] = 0
                counts[:self.bins // 2] = merged
            self.top *= 2.0
        for counts, part in ((self.positive, flat[flat > 0]),
                             (self.negative, -flat[flat < 0])):
            counts += np.histogram(part, bins=self.bins, range=(0.0, self.top))[0]
        self.zeros += int(flat.size - np.count_nonzero(flat))

    def edges(self):
        return np.linspace(0.0, self.top, self.bins + 1)


def _clip(histogram, method, percentile, low, high):
    """The clipped range of a tensor from its histogram and exact range."""
    edges = histogram.edges()
    if method == "percentile":
        total = histogram.positive.sum() + histogram.negative.sum() + histogram.zeros
        tail = total * (100.0 - percentile) / 100.0

        def cut(counts, extreme):
            # The smallest magnitude with at most `tail` values above it.
            above = np.cumsum(counts[::-1])[::-1]  # values in bin i and up
            index = int(np.argmax(above <= tail)) if (above <= tail).any() else len(counts)
            return min(extreme, float(edges[index]))
        hi = cut(histogram.positive, max(high, 0.0)) if high > 0 else high
        lo = -cut(histogram.negative, max(-low, 0.0)) if low < 0 else low
        return lo, hi
    counts = histogram.positive + histogram.negative
    if counts.sum() == 0:
        return low, high
    # 255 steps over [0, t] for a tensor that is never negative, 127 a side
    # for one that is.
    threshold = _entropy_threshold(counts, histogram.top, 255 if low >= 0.0 else 128)
    return max(low, -threshold), min(high, threshold)


def _entropy_threshold(histogram, top, levels=128):
    """The |x| threshold whose quantisation to `levels` levels keeps the
    histogram closest to the original (KL divergence)."""
    histogram = histogram.astype(np.float64)
    bins = len(histogram)
    width = top / bins
    nonzero = (histogram != 0).astype(np.float64)
    best, best_kl = bins, math.inf
    for cut in range(levels, bins + 1, 16):
        p = histogram[:cut].copy()
        p[cut - 1] += histogram[cut:].sum()  # the clipped tail lands on the edge
        total = p.sum()
        if total == 0:
            continue
        # q: the first `cut` bins merged into `levels` buckets, each spread
        # back evenly over its non-empty bins.
        starts = (np.arange(levels) * cut) // levels
        sums = np.add.reduceat(histogram[:cut], starts)
        counts = np.add.reduceat(nonzero[:cut], starts)
        spread = np.divide(sums, counts, out=np.zeros(levels), where=counts > 0)
        q = np.repeat(spread, np.diff(np.append(starts, cut))) * nonzero[:cut]
        q_sum = q.sum()
        if q_sum == 0:
            continue
        p /= total
        q /= q_sum
        mask = p > 0
        kl = float(np.sum(p[mask] * np.log(p[mask] / np.maximum(q[mask], 1e-12))))
        if kl < best_kl:
            best, best_kl = cut, kl
    return (best + 0.5) * width


def _activation_range(name, low, high):
    """uint8 with a zero point, over [low, high] stretched to hold 0."""
    low, high = min(low, 0.0), max(high, 0.0)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"kiln.quantize: tensor '{name}' is not finite on the "
                         "calibration samples")
    scale = (high - low) / 255.0
    if scale <= 0.0 or not math.isfinite(scale):
        scale = 1.0  # a tensor that is always 0
    zero_point = int(np.clip(round(-low / scale), 0, 255))
    return TensorRange(name, float(low), float(high), float(np.float32(scale)),
                       zero_point)


# -- Quantised weights and nodes -----------------------------------------------

@dataclasses.dataclass
class _Weights:
    values: np.ndarray  # int8
    scales: np.ndarray  # float32, one per output channel (or one)
    axis: int
    bias: np.ndarray    # float32, or None


def _quantize_weights(layer, inits, per_channel, numpy_helper):
    w = numpy_helper.to_array(inits[layer.weight]).astype(np.float32)
    if per_channel:
        other = tuple(a for a in range(w.ndim) if a != layer.axis)
        top = np.abs(w).max(axis=other) if other else np.abs(w)
    else:
        top = np.array([np.abs(w).max()], np.float32)
    scales = (top / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0  # an all-zero channel
    shape = [1] * w.ndim
    if per_channel:
        shape[layer.axis] = -1
    q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    bias = (numpy_helper.to_array(inits[layer.bias]).astype(np.float32)
            if layer.bias else None)
    return _Weights(q, scales, layer.axis, bias)


def _qdq_activation(graph, name, rng, suffix):
    """QuantizeLinear -> DequantizeLinear of activation `name`; returns the
    dequantised tensor's name."""
    from onnx import TensorProto, helper
    base = name + suffix
    graph.initializer.extend([
        helper.make_tensor(base + "/scale", TensorProto.FLOAT, [], [rng.scale]),
        helper.make_tensor(base + "/zero_point", TensorProto.UINT8, [], [rng.zero_point])])
    graph.node.extend([
        helper.make_node("QuantizeLinear", [name, base + "/scale", base + "/zero_point"],
                         [base + "/quantized"], name=base + "/QuantizeLinear"),
        helper.make_node("DequantizeLinear",
                         [base + "/quantized", base + "/scale", base + "/zero_point"],
                         [base + "/dequantized"], name=base + "/DequantizeLinear")])
    return base + "/dequantized"


def _dq_weights(graph, layer, rng, w, suffix, with_bias=True):
    """The int8 weight and int32 bias initializers behind DequantizeLinear;
    returns the names of the dequantised weight and bias ("" for none)."""
    from onnx import numpy_helper, helper
    base = layer.node.name + suffix
    per_channel = w.scales.size > 1
    axis = {"axis": w.axis} if per_channel else {}
    scales = w.scales if per_channel else w.scales.reshape([])
    graph.initializer.extend([
        numpy_helper.from_array(w.values, base + "/weight_quantized"),
        numpy_helper.from_array(scales.astype(np.float32), base + "/weight_scale"),
        numpy_helper.from_array(np.zeros(scales.shape, np.int8), base + "/weight_zero_point")])
    graph.node.append(helper.make_node(
        "DequantizeLinear", [base + "/weight_quantized", base + "/weight_scale",
                             base + "/weight_zero_point"],
        [base + "/weight"], name=base + "/weight/DequantizeLinear", **axis))
    if w.bias is None or not with_bias:
        return base + "/weight", ""
    bias_scales = (np.float32(rng.scale) * w.scales).astype(np.float32)
    if not per_channel:
        bias_scales = np.full(w.bias.shape, bias_scales[0], np.float32)
    q = np.clip(np.round(w.bias / bias_scales), -2**31, 2**31 - 1).astype(np.int32)
    graph.initializer.extend([
        numpy_helper.from_array(q, base + "/bias_quantized"),
        numpy_helper.from_array(bias_scales, base + "/bias_scale"),
        numpy_helper.from_array(np.zeros(q.shape, np.int32), base + "/bias_zero_point")])
    graph.node.append(helper.make_node(
        "DequantizeLinear", [base + "/bias_quantized", base + "/bias_scale",
                             base + "/bias_zero_point"],
        [base + "/bias"], name=base + "/bias/DequantizeLinear", axis=0))
    return base + "/weight", base + "/bias"


def _insert_qdq(graph, layers, ranges, weights):
    """Rewrites `graph` so that each layer of `layers` reads the QDQ of its
    activation (one pair per activation, shared by its quantised readers),
    its int8 weight and its int32 bias; nodes stay in topological order."""
    from onnx import helper
    by_node = {layer.node.name: layer for layer in layers}
    activation_names = {}
    used_weights = {}
    old = list(graph.node)
    del graph.node[:]
    # The QDQ and DQ nodes of a layer go right before it.
    for node in old:
        layer = by_node.get(node.name)
        if layer is None:
            graph.node.append(node)
            continue
        scratch = helper.make_graph([], "scratch", [], [])
        if layer.input not in activation_names:
            activation_names[layer.input] = _qdq_activation(
                scratch, layer.input, ranges[layer.input], "/kiln_q")
        weight, bias = _dq_weights(scratch, layer, ranges[layer.input],
                                   weights[node.name], "/kiln_q")
        graph.node.extend(scratch.node)
        graph.initializer.extend(scratch.initializer)
        node.input[0] = activation_names[layer.input]
        node.input[1] = weight
        if bias:
            node.input[2] = bias
        used_weights[layer.weight] = used_weights.get(layer.weight, 0) + 1
        if layer.bias:
            used_weights[layer.bias] = used_weights.get(layer.bias, 0) + 1
        graph.node.append(node)
    # Float weights that no node reads any more go.
    read = {name for node in graph.node for name in node.input}
    keep = [t for t in graph.initializer if t.name in read or
            t.name not in used_weights]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    inputs = [i for i in graph.input if i.name in read or
              i.name not in used_weights]
    del graph.input[:]
    graph.input.extend(inputs)


class _ErrorStats:
    """Cosine similarity and largest absolute error, over samples."""

    def __init__(self):
        self.dot = self.norm_a = self.norm_b = 0.0
        self.max_error = 0.0

    def add(self, want, got):
        a = np.asarray(want, np.float64).ravel()
        b = np.asarray(got, np.float64).ravel()
        self.dot += float(a @ b)
        self.norm_a += float(a @ a)
        self.norm_b += float(b @ b)
        if a.size:
            self.max_error = max(self.max_error, float(np.abs(a - b).max()))

    @property
    def cosine(self):
        if self.norm_a == 0.0 and self.norm_b == 0.0:
            return 1.0
        return self.dot / math.sqrt(max(self.norm_a * self.norm_b, 1e-300))


def load_calibration(folder):
    """The calibration samples in `folder`, in name order: each ``.npy``
    file one sample of a model of one input, each ``.npz`` file one sample
    with its arrays named after the inputs. Returns (samples, file names).

    Raises:
      ValueError: the folder is missing, holds no sample, or mixes the two.
    """
    if not os.path.isdir(folder):
        raise ValueError(f"kiln.quantize: calibration folder {folder!r} does not exist")
    files = sorted(f for f in os.listdir(folder) if f.endswith((".npy", ".npz")))
    if not files:
        raise ValueError(f"kiln.quantize: calibration folder {folder!r} holds no "
                         ".npy or .npz file")
    if len({os.path.splitext(f)[1] for f in files}) > 1:
        raise ValueError(f"kiln.quantize: calibration folder {folder!r} mixes .npy "
                         "and .npz files; use one kind")
    samples = []
    for name in files:
        path = os.path.join(folder, name)
        try:
            if name.endswith(".npy"):
                samples.append(np.load(path, allow_pickle=False))
            else:
                with np.load(path, allow_pickle=False) as archive:
                    samples.append({key: archive[key] for key in archive.files})
        except (OSError, ValueError) as error:
            raise ValueError(f"kiln.quantize: calibration file {path!r} cannot be "
                             f"read: {error}") from error
    return samples, files


def main(argv=None):
    """``python -m kiln.quantize model.onnx out.onnx --calibration DIR``:
    what ``kiln-compile --quantize=int8`` runs. The report goes to standard
    error; a bad argument or sample exits 1 with its message."""
    import argparse
    import re
    import sys
    parser = argparse.ArgumentParser(
        prog="python -m kiln.quantize",
        description="Quantise an ONNX model to int8 (a QDQ model) from "
                    "calibration samples.")
    parser.add_argument("model", help="the float .onnx model")
    parser.add_argument("output", help="where to write the QDQ .onnx model")
    parser.add_argument("--calibration", required=True,
                        help="a folder of .npy (one-input models) or .npz "
                             "samples, taken in name order")
    parser.add_argument("--method", default="minmax", choices=METHODS)
    parser.add_argument("--per-tensor", action="store_true",
                        help="one weight scale per tensor (default: per channel)")
    parser.add_argument("--report-samples", type=int, default=16)
    args = parser.parse_args(argv)
    try:
        samples, files = load_calibration(args.calibration)
        report = quantize(args.model, samples, args.output, method=args.method,
                          per_channel=not args.per_tensor,
                          report_samples=args.report_samples)
    except (ValueError, OSError, KilnError) as error:
        message = str(error)
        # Name the file behind a sample number.
        found = re.search(r"calibration sample (\d+)", message)
        if found and int(found.group(1)) < len(files):
            message += f" (file {files[int(found.group(1))]!r})"
        print(message, file=sys.stderr)
        return 1
    print(report, file=sys.stderr)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
