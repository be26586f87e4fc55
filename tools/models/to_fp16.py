#!/usr/bin/env python3
"""An f32 ONNX model converted to half precision, as deployment converters
(onnxconverter-common's float16 conversion) emit one: float initializers,
Constant and ConstantOfShape values, graph inputs, outputs and value_info,
and Casts to float become f16. Integer tensors are left alone.

  python tools/models/to_fp16.py resnet50.onnx resnet50_fp16.onnx

The conversion is the plain one, without a block list: a model whose float
constants meet f16 values in ops that compare types (some exporters' masks)
may not convert; onnxruntime refuses such a result as Kiln does.
"""

import argparse

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper


def to_half_tensor(tensor):
    values = numpy_helper.to_array(tensor).astype(np.float16)
    return numpy_helper.from_array(values, tensor.name)


def convert(model):
    graph = model.graph
    for i, tensor in enumerate(graph.initializer):
        if tensor.data_type == TensorProto.FLOAT:
            graph.initializer[i].CopyFrom(to_half_tensor(tensor))
    for value in list(graph.input) + list(graph.output) + list(graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    for node in graph.node:
        for attribute in node.attribute:
            if node.op_type == "Cast" and attribute.name == "to" and \
                    attribute.i == TensorProto.FLOAT:
                attribute.i = TensorProto.FLOAT16
            if node.op_type in ("Constant", "ConstantOfShape") and \
                    attribute.name == "value" and \
                    attribute.t.data_type == TensorProto.FLOAT:
                attribute.t.CopyFrom(to_half_tensor(attribute.t))
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    args = parser.parse_args()
    onnx.save(convert(onnx.load(args.input)), args.output)


if __name__ == "__main__":
    main()
