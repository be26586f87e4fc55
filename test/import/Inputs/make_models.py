#!/usr/bin/env python3
"""Writes the ONNX models that the importer's unit tests read.

Usage: make_models.py OUTPUT_DIR

The models are made with the onnx package (as exporters make them, at its
newest IR version and opset) so that the tests see real serialized files, not
only the ones the C++ tests build field by field:

  convnet.onnx + convnet.weights  Conv, Relu, Add of a Constant, Gemm; the
                                  weights in an external data file
  inline.onnx                     the same with every weight inside the model
  truncated.onnx                  inline.onnx cut in half
  not_a_model.onnx                a text file
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model():
    conv_w = (np.arange(4 * 3 * 3 * 3, dtype=np.float32) * 0.01).reshape(4, 3, 3, 3)
    conv_b = np.linspace(-1, 1, 4, dtype=np.float32)
    fc_w = (np.arange(10 * 256, dtype=np.float32) / 1000).reshape(10, 256)
    fc_b = np.ones(10, dtype=np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("Constant", [], ["k"], name="shift",
                         value=numpy_helper.from_array(np.float32(0.5))),
        helper.make_node("Add", ["r", "k"], ["y"], name="add1"),
        helper.make_node("Gemm", ["v", "fc.w", "fc.b"], ["z"], name="fc",
                         transB=1, alpha=2.0),
    ]
    graph = helper.make_graph(
        nodes, "convnet",
        inputs=[
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8]),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 256]),
        ],
        outputs=[
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 10]),
        ],
        initializer=[
            numpy_helper.from_array(conv_w, "conv.w"),
            numpy_helper.from_array(conv_b, "conv.b"),
            numpy_helper.from_array(fc_w, "fc.w"),
            numpy_helper.from_array(fc_b, "fc.b"),
        ],
    )
    model = helper.make_model(graph)
    onnx.checker.check_model(model)
    return model


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    model = make_model()
    inline = model.SerializeToString()
    with open(os.path.join(out, "inline.onnx"), "wb") as f:
        f.write(inline)
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(inline[: len(inline) // 2])
    with open(os.path.join(out, "not_a_model.onnx"), "w") as f:
        f.write("This is not an ONNX model.\n")
    onnx.save_model(model, os.path.join(out, "convnet.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="convnet.weights", size_threshold=0)
    with open(os.path.join(out, "models.stamp"), "w") as f:
        f.write("onnx %s\n" % onnx.__version__)


if __name__ == "__main__":
    main()
