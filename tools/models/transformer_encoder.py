#!/usr/bin/env python3
"""A BERT-style transformer encoder with seeded random weights.

input_ids [batch, seq] (int64) -> word embeddings (Gather) + position
embeddings -> LayerNormalization -> N layers of: multi-head self-attention
(MatMul+Add projections, Reshape/Transpose into heads, scaled Q.K^T, Softmax,
context MatMul, Transpose/Reshape back, output projection), residual Add,
LayerNormalization, feed-forward MatMul -> Gelu (0.5*x*(1+Erf(x/sqrt 2))) ->
MatMul, residual Add, LayerNormalization. Output: last_hidden_state
[batch, seq, hidden].

Defaults are small (2 layers, hidden 128, 4 heads, sequence 32, vocabulary
1000); --bert-base gives BERT-base's sizes (12 layers, hidden 768, 12 heads,
sequence 128, vocabulary 30522) for benchmarks.

  python tools/models/transformer_encoder.py -o encoder.onnx [--check]
  python tools/models/transformer_encoder.py -o bert_base.onnx --bert-base
"""

import math

import numpy as np

from common import GraphBuilder, TensorProto, main, random_inputs, tensor_info

SMALL = dict(layers=2, hidden=128, heads=4, seq=32, vocab=1000, batch=1)
BERT_BASE = dict(layers=12, hidden=768, heads=12, seq=128, vocab=30522, batch=1)


def linear(g, x, cin, cout, hint):
    # BERT initialises with std 0.02 at width 768; keep that output scale at any width.
    w = g.normal(f"{hint}.weight", (cin, cout), 0.02 * math.sqrt(768 / cin))
    b = g.normal(f"{hint}.bias", (cout,), 0.02)
    return g.op("Add", [g.op("MatMul", [x, w], f"{hint}.matmul"), b], hint)


def layer_norm(g, x, hidden, hint):
    scale = g.uniform(f"{hint}.weight", (hidden,), 0.8, 1.2)
    bias = g.normal(f"{hint}.bias", (hidden,), 0.05)
    return g.op("LayerNormalization", [x, scale, bias], hint, axis=-1,
                epsilon=1e-12)


def gelu(g, x, hint):
    """Gelu as BERT exports it: 0.5 * x * (1 + erf(x / sqrt(2)))."""
    y = g.op("Div", [x, g.sqrt2], f"{hint}.div")
    y = g.op("Add", [g.op("Erf", [y], f"{hint}.erf"), g.one], f"{hint}.add")
    y = g.op("Mul", [x, y], f"{hint}.mul")
    return g.op("Mul", [y, g.half], hint)


def attention(g, x, c, hint):
    batch, seq, hidden, heads = c["batch"], c["seq"], c["hidden"], c["heads"]
    head = hidden // heads
    split = g.const(f"{hint}.split_heads", np.array([batch, seq, heads, head], np.int64))
    merge = g.const(f"{hint}.merge_heads", np.array([batch, seq, hidden], np.int64))

    def heads_of(name, perm):
        y = linear(g, x, hidden, hidden, f"{hint}.{name}")
        y = g.op("Reshape", [y, split], f"{hint}.{name}.reshape")
        return g.op("Transpose", [y], f"{hint}.{name}.transpose", perm=perm)

    q = heads_of("query", [0, 2, 1, 3])          # [b, h, s, d]
    k = heads_of("key", [0, 2, 3, 1])            # [b, h, d, s]
    v = heads_of("value", [0, 2, 1, 3])          # [b, h, s, d]
    scores = g.op("MatMul", [q, k], f"{hint}.scores")
    scale = g.const(f"{hint}.scale", np.array(math.sqrt(head), np.float32))
    scores = g.op("Div", [scores, scale], f"{hint}.scaled")
    probs = g.op("Softmax", [scores], f"{hint}.softmax", axis=-1)
    ctx = g.op("MatMul", [probs, v], f"{hint}.context")
    ctx = g.op("Transpose", [ctx], f"{hint}.context.transpose", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, merge], f"{hint}.context.reshape")
    return linear(g, ctx, hidden, hidden, f"{hint}.output")


def build(args=None, seed=0, **sizes):
    c = dict(BERT_BASE if getattr(args, "bert_base", False) else SMALL)
    for key in SMALL:
        value = sizes.get(key, getattr(args, key, None))
        if value is not None:
            c[key] = value
    if c["hidden"] % c["heads"]:
        raise ValueError("hidden must be a multiple of heads")
    g = GraphBuilder(seed)
    g.sqrt2 = g.const("gelu.sqrt2", np.array(math.sqrt(2.0), np.float32))
    g.one = g.const("gelu.one", np.array(1.0, np.float32))
    g.half = g.const("gelu.half", np.array(0.5, np.float32))
    hidden = c["hidden"]

    words = g.normal("embeddings.word", (c["vocab"], hidden), 0.5)
    positions = g.normal("embeddings.position", (c["seq"], hidden), 0.5)
    x = g.op("Gather", [words, "input_ids"], "embeddings.gather", axis=0)
    x = g.op("Add", [x, positions], "embeddings.add")
    x = layer_norm(g, x, hidden, "embeddings.norm")
    for i in range(c["layers"]):
        hint = f"layer{i}"
        x = layer_norm(g, g.op("Add", [x, attention(g, x, c, f"{hint}.attention")],
                               f"{hint}.attention.residual"),
                       hidden, f"{hint}.attention.norm")
        y = gelu(g, linear(g, x, hidden, 4 * hidden, f"{hint}.ffn.up"), f"{hint}.gelu")
        y = linear(g, y, 4 * hidden, hidden, f"{hint}.ffn.down")
        x = layer_norm(g, g.op("Add", [x, y], f"{hint}.ffn.residual"), hidden,
                       f"{hint}.ffn.norm")
    g.op("Identity", [x], "last_hidden_state")
    shape = (c["batch"], c["seq"])
    model = g.model(
        "transformer_encoder",
        [tensor_info("input_ids", TensorProto.INT64, shape)],
        [tensor_info("last_hidden_state", TensorProto.FLOAT, shape + (hidden,))],
        doc="BERT-style encoder, seeded random weights: " +
            ", ".join(f"{k} {v}" for k, v in c.items()))
    model.metadata_props.add(key="vocab", value=str(c["vocab"]))
    return model


def any_sequence_length(model):
    """`model` (build's) as exporters write one for any sequence length:
    the reshapes into heads and back copy the batch and the sequence (shape
    entries 0), the position embeddings are gathered by a `position_ids`
    input [1, seq], and input_ids and the output name the sequence `seq`.
    The position table's rows bound the sequence."""
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    for init in graph.initializer:
        if init.name.endswith(".split_heads") or init.name.endswith(".merge_heads"):
            shape = numpy_helper.to_array(init).copy()
            shape[:2] = 0
            init.CopyFrom(numpy_helper.from_array(shape, init.name))
    for node in graph.node:
        if node.name == "embeddings.add":
            node.input[1] = "embeddings.position_rows"
    graph.node.insert(0, helper.make_node(
        "Gather", ["embeddings.position", "position_ids"],
        ["embeddings.position_rows"], name="embeddings.position_gather", axis=0))
    graph.input.append(helper.make_tensor_value_info(
        "position_ids", TensorProto.INT64, [1, "seq"]))
    graph.input[0].type.tensor_type.shape.dim[1].dim_param = "seq"
    graph.output[0].type.tensor_type.shape.dim[1].dim_param = "seq"
    del graph.value_info[:]
    onnx.checker.check_model(model)
    return model


def add_arguments(parser):
    parser.add_argument("--bert-base", action="store_true",
                        help="BERT-base sizes: 12 layers, hidden 768, 12 heads, "
                             "sequence 128, vocabulary 30522")
    for key, default in SMALL.items():
        parser.add_argument(f"--{key}", type=int, default=None,
                            help=f"(default {default}; BERT-base {BERT_BASE[key]})")


def feeds(model, seed=0):
    vocab = int({p.key: p.value for p in model.metadata_props}["vocab"])
    return random_inputs(model, seed, int_high=vocab)


if __name__ == "__main__":
    raise SystemExit(main(build, feeds, add_arguments, __doc__.split("\n\n")[0]))
