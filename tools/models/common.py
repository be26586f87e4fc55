"""Shared helpers of the model builders in tools/models/.

Every builder makes an ONNX model with fixed, seeded random weights, so that two
runs give byte-identical files, and exposes the same command line:
  python tools/models/NAME.py -o OUT.onnx [--check] [builder options]
--check runs the model with onnxruntime on seeded random inputs and prints the
shape and range of every output.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ONNX opset and IR version of the models built here: opset 17 has
# LayerNormalization; IR 8 is read by every onnxruntime and by Kiln's importer.
OPSET = 17
IR_VERSION = 8


class GraphBuilder:
    """Collects nodes and initializers with unique, readable names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self._count = {}

    def name(self, hint):
        n = self._count.get(hint, 0)
        self._count[hint] = n + 1
        return hint if n == 0 else f"{hint}_{n}"

    def const(self, hint, array):
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def normal(self, hint, shape, std, mean=0.0):
        value = self.rng.normal(mean, std, size=shape).astype(np.float32)
        return self.const(hint, value)

    def uniform(self, hint, shape, low, high):
        value = self.rng.uniform(low, high, size=shape).astype(np.float32)
        return self.const(hint, value)

    def op(self, op_type, inputs, hint=None, outputs=1, **attrs):
        base = self.name(hint or op_type.lower())
        outs = [base] if outputs == 1 else [f"{base}_out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=base,
                                           **attrs))
        return outs[0] if outputs == 1 else outs

    def conv_bn(self, x, cin, cout, kernel, stride=1, group=1, hint="conv"):
        """Conv (He-initialised, no bias) + BatchNormalization with mild statistics."""
        fan_in = cin // group * kernel * kernel
        w = self.normal(f"{hint}.weight", (cout, cin // group, kernel, kernel),
                        np.sqrt(2.0 / fan_in))
        y = self.op("Conv", [x, w], hint, kernel_shape=[kernel, kernel],
                    strides=[stride, stride], pads=[kernel // 2] * 4, group=group)
        scale = self.uniform(f"{hint}.bn.scale", (cout,), 0.7, 1.1)
        bias = self.normal(f"{hint}.bn.bias", (cout,), 0.1)
        mean = self.normal(f"{hint}.bn.mean", (cout,), 0.1)
        var = self.uniform(f"{hint}.bn.var", (cout,), 0.8, 1.5)
        return self.op("BatchNormalization", [y, scale, bias, mean, var],
                       f"{hint}.bn", epsilon=1e-5)

    def model(self, name, inputs, outputs, doc=""):
        graph = helper.make_graph(self.nodes, name, inputs, outputs,
                                  initializer=self.initializers, doc_string=doc)
        model = helper.make_model(graph, producer_name="kiln-models",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


def tensor_info(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, list(shape))


def random_inputs(model, seed=0, int_high=None):
    """Seeded inputs for every graph input: N(0,1) floats, integers in [0, int_high)."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in inits:
            continue
        tensor = value.type.tensor_type
        shape = [d.dim_value for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, int_high or 2, size=shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def check_with_onnxruntime(model, feeds):
    import onnxruntime
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for name, value in zip(names, session.run(names, feeds)):
        print(f"{name}: {value.dtype} {list(value.shape)} min {value.min():.4g} "
              f"max {value.max():.4g} mean {value.mean():.4g} std {value.std():.4g}")


def main(build, feeds_for, add_arguments=None, description=""):
    """The builders' shared command line: build(args) -> ModelProto."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="where to write the .onnx model")
    parser.add_argument("--check", action="store_true",
                        help="run the model with onnxruntime and print its outputs")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    model = build(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(args.output))
    size = args.output.stat().st_size
    print(f"wrote {args.output} ({size / 1e6:.2f} MB, {len(model.graph.node)} nodes)")
    if args.check:
        check_with_onnxruntime(model, feeds_for(model))
    return 0


def symbolic_batch(model, name="batch"):
    """`model` (any batch) with a symbolic batch: the first dimension of every
    graph input and output becomes the dim_param `name`, and every constant
    Reshape target that names the batch in first place copies it instead (0),
    as exporters write a model with a dynamic batch. Shapes are inferred
    again."""
    from onnx import shape_inference
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    batch = None
    for value in list(graph.input) + list(graph.output):
        if value.name in inits:
            continue
        dims = value.type.tensor_type.shape.dim
        if dims:
            if batch is None and dims[0].HasField("dim_value"):
                batch = dims[0].dim_value
            dims[0].Clear()
            dims[0].dim_param = name
    tensors = {t.name: t for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Reshape" and node.input[1] in tensors:
            shape = numpy_helper.to_array(tensors[node.input[1]]).copy()
            if shape.size and shape[0] == batch:
                shape[0] = 0
                tensors[node.input[1]].CopyFrom(
                    numpy_helper.from_array(shape, node.input[1]))
    del graph.value_info[:]
    model = shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    return model


def tools_models_on_path():
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)


__all__ = ["GraphBuilder", "TensorProto", "tensor_info", "random_inputs",
           "check_with_onnxruntime", "main", "OPSET", "IR_VERSION"]
