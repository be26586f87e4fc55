#!/usr/bin/env python3
"""Writes the fuzzing harnesses' seed corpora (test/fuzz/corpus/, committed):

  import/       small ONNX models: random graphs of tools/difftest.py (every
                op family it draws from), control flow (If, Loop), a
                quantized convolution, external data, a newer opset
  model-file/   sealed models compiled by kiln-compile, one with index checks
  tensor-file/  .npy files of several dtypes, ranks and orders, and a
                TensorProto

Usage: test/fuzz/make_corpus.py BUILD_DIR   (kiln-compile from BUILD_DIR/bin)
Deterministic but for the compiled models' bytes, which follow the compiler.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
import difftest  # noqa: E402

CORPUS = HERE / "corpus"


def model(nodes, inputs, outputs, inits=(), opset=18, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def import_corpus(out):
    out.mkdir(parents=True, exist_ok=True)
    kept = 0
    for seed in range(200):
        m, _ = difftest.make_graph(seed)
        data = m.SerializeToString()
        if len(data) <= 8192:
            (out / f"difftest-{seed}.onnx").write_bytes(data)
            kept += 1
        if kept == 24:
            break
    # If on a run-time condition, Loop with a constant trip count.
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then",
                             [], [f32("t", [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else",
                              [], [f32("e", [2])])
    (out / "if.onnx").write_bytes(model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [f32("x", [2]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [f32("y", [2])]).SerializeToString())
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Add", ["acc", "x"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         f32("acc", [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         f32("acc_out", [2])])
    (out / "loop.onnx").write_bytes(model(
        [helper.make_node("Loop", ["n", "t", "a0"], ["y"], body=body)],
        [f32("x", [2]), f32("a0", [2])], [f32("y", [2])],
        [numpy_helper.from_array(np.array(3, np.int64), "n"),
         numpy_helper.from_array(np.array(True), "t")]).SerializeToString())
    # A quantized convolution (QDQ).
    w = np.arange(16, dtype=np.int8).reshape(4, 1, 2, 2)
    (out / "qdq-conv.onnx").write_bytes(model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
         helper.make_node("DequantizeLinear", ["w", "ws"], ["dw"]),
         helper.make_node("Conv", ["dq", "dw"], ["y"])],
        [f32("x", [1, 1, 4, 4])], [f32("y", [1, 4, 3, 3])],
        [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
         numpy_helper.from_array(np.array(3, np.uint8), "z"),
         numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(np.array(0.05, np.float32), "ws")]
    ).SerializeToString())
    # Sequences: a list built in a Loop, then split, mapped, inserted into,
    # erased from and concatenated; a sequence graph input.
    seq_body = helper.make_graph(
        [helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("s_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_sequence_value_info("s_out", TensorProto.FLOAT, None)])
    relu = helper.make_graph([helper.make_node("Relu", ["e"], ["r"])], "map",
                             [f32("e", None)], [f32("r", None)])
    (out / "sequences.onnx").write_bytes(model(
        [helper.make_node("SequenceEmpty", [], ["empty"]),
         helper.make_node("Loop", ["n", "", "empty"], ["built"], body=seq_body),
         helper.make_node("ConcatFromSequence", ["built"], ["stacked"], axis=0,
                          new_axis=1),
         helper.make_node("SplitToSequence", ["stacked", "two"], ["parts"], axis=1),
         helper.make_node("SequenceMap", ["parts"], ["mapped"], body=relu),
         helper.make_node("SequenceInsert", ["mapped", "x2", "zero"], ["more"]),
         helper.make_node("SequenceErase", ["more"], ["fewer"]),
         helper.make_node("SequenceAt", ["xs", "zero"], ["first"]),
         helper.make_node("SequenceLength", ["fewer"], ["count"]),
         helper.make_node("ConcatFromSequence", ["fewer"], ["y"], axis=1)],
        [f32("x", [2]), f32("x2", [3, 2]),
         helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, None)],
        [f32("y", None), f32("first", None),
         helper.make_tensor_value_info("count", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(3, np.int64), "n"),
         numpy_helper.from_array(np.array(2, np.int64), "two"),
         numpy_helper.from_array(np.array(0, np.int64), "zero")]).SerializeToString())
    # Det, an optimiser step (another domain) and a classical-ML operator.
    training = model(
        [helper.make_node("Det", ["m"], ["d"]),
         helper.make_node("Momentum", ["r", "t", "x", "g", "v"], ["x_new", "v_new"],
                          domain="ai.onnx.preview.training", alpha=0.9, beta=0.5,
                          mode="nesterov"),
         helper.make_node("ArrayFeatureExtractor", ["m", "idx"], ["picked"],
                          domain="ai.onnx.ml")],
        [f32("m", [2, 3, 3]), f32("r", []),
         helper.make_tensor_value_info("t", TensorProto.INT64, []),
         f32("x", [4]), f32("g", [4]), f32("v", [4])],
        [f32("d", [2]), f32("x_new", [4]), f32("v_new", [4]), f32("picked", None)],
        [numpy_helper.from_array(np.array([2, 0], np.int64), "idx")])
    training.opset_import.extend([helper.make_opsetid("ai.onnx.preview.training", 1),
                                  helper.make_opsetid("ai.onnx.ml", 3)])
    (out / "det-training-ml.onnx").write_bytes(training.SerializeToString())
    # External data (refused without a folder) and an opset Kiln does not know.
    weights = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    weights.data_location = TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    weights.external_data.add(key="location", value="w.bin")
    (out / "external.onnx").write_bytes(model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], [f32("x", [1, 2])],
        [f32("y", [1, 2])], [weights]).SerializeToString())
    (out / "opset9999.onnx").write_bytes(model(
        [helper.make_node("Relu", ["x"], ["y"])], [f32("x", [3])],
        [f32("y", [3])], opset=9999).SerializeToString())
    # The graph passes that rewrite convolutions and types: a 1-D
    # convolution with an activation, a transposed convolution of stride 2,
    # a 5x5 max pool after a convolution, and an f16 model with a cast and a
    # bitcast.
    rng = np.random.default_rng(3)

    def weight(name, shape, dtype=np.float32):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)
    (out / "conv1d.onnx").write_bytes(model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1], strides=[2]),
         helper.make_node("Relu", ["c"], ["y"])],
        [f32("x", [1, 4, 9])], [f32("y", None)], [weight("w", (6, 4, 3))]).SerializeToString())
    (out / "conv-transpose.onnx").write_bytes(model(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                          pads=[1, 1, 1, 1], output_padding=[1, 0], group=2)],
        [f32("x", [1, 4, 5, 5])], [f32("y", None)],
        [weight("w", (4, 3, 3, 4)), weight("b", (6,))]).SerializeToString())
    (out / "max-pool-5x5.onnx").write_bytes(model(
        [helper.make_node("Conv", ["x", "w"], ["c"]),
         helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[5, 5], pads=[2, 2, 2, 2])],
        [f32("x", [1, 3, 7, 7])], [f32("y", None)], [weight("w", (16, 3, 1, 1))]).SerializeToString())
    f16 = TensorProto.FLOAT16
    (out / "half.onnx").write_bytes(model(
        [helper.make_node("MatMul", ["x", "w"], ["m"]),
         helper.make_node("Cast", ["m"], ["c"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["c"], ["h"], to=f16),
         helper.make_node("BitCast", ["h"], ["y"], to=TensorProto.INT16)],
        [helper.make_tensor_value_info("x", f16, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT16, None)],
        [weight("w", (8, 8), np.float16)], opset=26).SerializeToString())


def model_file_corpus(out, build):
    out.mkdir(parents=True, exist_ok=True)
    compile_ = Path(build) / "bin" / "kiln-compile"
    table = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2),
                                    "table")
    models = {
        "add": model([helper.make_node("Add", ["a", "b"], ["y"])],
                     [f32("a", [2, 3]), f32("b", [2, 3])], [f32("y", [2, 3])]),
        "gather": model(
            [helper.make_node("Gather", ["table", "i"], ["y"], name="lookup")],
            [helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
            [f32("y", [3, 2])], [table]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in models.items():
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(m, path)
            subprocess.run([str(compile_), str(path), "-o", str(out / f"{name}.so")],
                           check=True)


def tensor_file_corpus(out):
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((2, 3)).astype(np.float32),
        "i64": np.arange(6, dtype=np.int64),
        "bool": np.array([True, False, True]),
        "f16": np.ones((1, 2, 2), np.float16),
        "scalar": np.array(3.5, np.float64),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
        "empty": np.zeros((0, 4), np.uint8),
    }
    for name, array in arrays.items():
        np.save(out / f"{name}.npy", array)
    proto = numpy_helper.from_array(rng.standard_normal((2, 2)).astype(np.float32),
                                    "x")
    (out / "tensor.pb").write_bytes(proto.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    import_corpus(CORPUS / "import")
    model_file_corpus(CORPUS / "model-file", sys.argv[1])
    tensor_file_corpus(CORPUS / "tensor-file")


if __name__ == "__main__":
    main()
