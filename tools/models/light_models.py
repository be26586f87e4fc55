#!/usr/bin/env python3
"""The onnx package's light_* models with seeded random weights.

onnx ships ResNet-50, VGG-19, DenseNet-121, Inception v1/v2, ShuffleNet,
SqueezeNet, AlexNet and ZFNet-512 as onnx/backend/test/data/light/*.onnx
(opset 9). Their weights are ConstantOfShape nodes filling every tensor with
0.02, and the few real initializers left (biases, BatchNorm statistics) do not
belong with them, so a numerical comparison on them means little. This script
replaces every float parameter (ConstantOfShape outputs and float
initializers) with a seeded random initializer whose scale follows the
operand it feeds: He-normal for Conv/Gemm weights, small biases, BatchNorm
scale near 1, variance in [0.8, 1.5], means near 0. The last Conv/Gemm (the
classifier) is then scaled so that its outputs, the logits, have a standard
deviation of 2 on the seeded input (measured with onnxruntime): the final
Softmax neither saturates nor flattens, so the comparison sees real values.
The weights stop being graph inputs (IR version 4 and later allow that), so a
compiler can treat them as constants; unused initializers are dropped.

  python tools/models/light_models.py resnet50 -o resnet50.onnx [--check]
  python tools/models/light_models.py --list
"""

import argparse
import os
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from common import check_with_onnxruntime, random_inputs

LIGHT_DIR = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data" / "light"
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]
# Ops that pass a parameter through unchanged on its way to its real consumer.
PASS_THROUGH = {"Unsqueeze", "Reshape", "Identity", "Squeeze"}


def light_path(name):
    return LIGHT_DIR / f"light_{name}.onnx"


def consumers(graph):
    uses = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, index))
    return uses


def role_of(name, uses, depth=0):
    """(op type, operand index, node) of the first real consumer of `name`."""
    for node, index in uses.get(name, []):
        if node.op_type in PASS_THROUGH and index == 0 and depth < 4:
            return role_of(node.output[0], uses, depth + 1)
        return node.op_type, index, node
    return None, None, None


def random_parameter(rng, shape, op, index, node):
    shape = tuple(int(d) for d in shape)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(1, shape[0] if shape else 1)
    if op == "Gemm" and index == 1:
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        fan_in = shape[1] if trans_b else shape[0]
    if op in ("Conv", "Gemm", "MatMul") and index == 1:
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape)
    if op in ("Conv", "Gemm") and index == 2:
        return rng.normal(0, 0.05, shape)
    if op == "BatchNormalization":
        return {1: lambda: rng.uniform(0.7, 1.1, shape),
                2: lambda: rng.normal(0, 0.1, shape),
                3: lambda: rng.normal(0, 0.1, shape),
                4: lambda: rng.uniform(0.8, 1.5, shape)}[index]()
    if op == "Mul":  # a decomposed BatchNorm's scale
        return rng.uniform(0.7, 1.1, shape)
    return rng.normal(0, 0.1, shape)  # Add / Sum biases and anything else


def classifier(graph):
    """The last Conv/Gemm node: the classifier whose outputs are the logits."""
    return [n for n in graph.node if n.op_type in ("Conv", "Gemm")][-1]


def calibrate_classifier(model, logit_std=2.0, seed=0):
    """Scales the classifier's weight and bias so its outputs have `logit_std`."""
    import onnxruntime
    node = classifier(model.graph)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probe.graph.output.add(name=node.output[0])
    session = onnxruntime.InferenceSession(probe.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    logits = session.run([node.output[0]], feeds(model, seed))[0]
    factor = logit_std / max(float(logits.std()), 1e-12)
    for t in model.graph.initializer:
        if t.name in node.input[1:3]:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(factor), t.name))


def randomize(model, seed=0):
    """Returns a copy of `model` with every float parameter random and constant."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    uses = consumers(graph)
    inits = {t.name: t for t in graph.initializer}

    params = {}   # name -> shape, in graph order
    dead = set()  # ConstantOfShape nodes and their shape initializers
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            params[node.output[0]] = numpy_helper.to_array(inits[node.input[0]])
            dead.add(node.input[0])
    for t in graph.initializer:
        if t.name not in dead and t.data_type == onnx.TensorProto.FLOAT:
            params[t.name] = list(t.dims)

    new_inits = []
    for name, shape in params.items():
        op, index, node = role_of(name, uses)
        value = random_parameter(rng, shape, op, index, node)
        new_inits.append(numpy_helper.from_array(value.astype(np.float32), name))
    used = {name for n in graph.node for name in n.input}
    kept_inits = [t for t in graph.initializer
                  if t.name not in dead and t.name not in params and t.name in used]
    kept_nodes = [n for n in graph.node
                  if not (n.op_type == "ConstantOfShape" and n.output[0] in params)]
    constant = set(params) | dead | {t.name for t in kept_inits}
    kept_inputs = [i for i in graph.input if i.name not in constant]

    del graph.node[:]
    graph.node.extend(kept_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept_inits + new_inits)
    del graph.input[:]
    graph.input.extend(kept_inputs)
    out.ir_version = max(out.ir_version, 4)
    onnx.checker.check_model(out)
    calibrate_classifier(out, seed=seed)
    return out


def build(name, seed=0):
    return randomize(onnx.load(str(light_path(name))), seed)


def feeds(model, seed=0):
    return random_inputs(model, seed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", choices=MODELS)
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="run the model with onnxruntime and print its outputs")
    parser.add_argument("--list", action="store_true", help="list the models")
    args = parser.parse_args()
    if args.list:
        for name in MODELS:
            print(f"{name:14} {os.path.getsize(light_path(name)) / 1e3:.0f} kB  "
                  f"{light_path(name)}")
        return 0
    if not args.model or not args.output:
        parser.error("give a model name and -o OUT.onnx (or --list)")
    model = build(args.model, args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(args.output))
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.1f} MB, "
          f"{len(model.graph.node)} nodes)")
    if args.check:
        check_with_onnxruntime(model, feeds(model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
