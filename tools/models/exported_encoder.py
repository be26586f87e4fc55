#!/usr/bin/env python3
"""A BERT-style encoder as torch.onnx exports one with dynamic axes.

The same layers as transformer_encoder.py, but written as an exporter
writes a model for any batch and sequence length: every size is read at
run time (Shape -> Gather), the heads are split and merged by Reshapes whose
shapes are Concats of those sizes, the position ids are Range(0, seq), the
token types a Slice of a buffer up to seq expanded to [batch, seq], the
query, key and value one projection sliced in three at offsets computed
from its width, and the attention mask [batch, seq] (int64) becomes an
additive bias (1 - mask) * -10000. Inputs: input_ids and attention_mask
[batch, seq]; output: last_hidden_state [batch, seq, hidden].

With --mha, the attention is torch.nn.MultiheadAttention's as torch.onnx
exports torch.nn.TransformerEncoderLayer(batch_first=True): the sequence
moved first, the batch merged with the heads ([seq, batch * heads, d],
then [batch * heads, seq, d] for the products), the rows [seq * batch,
hidden] for the output projection (a Gemm), the mask expanded to the heads
and merged the same way.

  python tools/models/exported_encoder.py -o encoder.onnx [--check]
  python tools/models/exported_encoder.py -o bert_base.onnx --bert-base
  python tools/models/exported_encoder.py -o mha.onnx --mha
"""

import math

import numpy as np

from common import GraphBuilder, TensorProto, main, random_inputs, tensor_info

SMALL = dict(layers=2, hidden=128, heads=4, vocab=1000, positions=512)
BERT_BASE = dict(layers=12, hidden=768, heads=12, vocab=30522, positions=512)


def i64(*values):
    return np.array(values if len(values) != 1 else values[0], np.int64)


def build(args=None, seed=0, mha=False, **sizes):
    """`sizes` overrides SMALL (or, with args.bert_base, BERT_BASE); `mha`
    (or args.mha) exports the attention as torch.nn.MultiheadAttention's."""
    mha = mha or getattr(args, "mha", False)
    c = dict(BERT_BASE if getattr(args, "bert_base", False) else SMALL)
    for key in c:
        if args is not None and getattr(args, key, None) is not None:
            c[key] = getattr(args, key)
    c.update(sizes)
    g = GraphBuilder(seed)
    hidden, heads = c["hidden"], c["heads"]
    head = hidden // heads

    def size(x, axis):
        return g.op("Gather", [g.op("Shape", [x]), g.const("axis", i64(axis))], axis=0)

    def vector(*entries):
        """A Concat of sizes (scalars) and numbers into a 1-D shape."""
        parts = [g.op("Unsqueeze", [e, g.const("zero", i64([0]))])
                 if isinstance(e, str) else g.const("n", i64([e])) for e in entries]
        return g.op("Concat", parts, axis=0)

    def layer_norm(x, hint):
        return g.op("LayerNormalization",
                    [x, g.uniform(f"{hint}.gamma", (hidden,), 0.8, 1.2),
                     g.normal(f"{hint}.beta", (hidden,), 0.02)], hint=hint, axis=-1,
                    epsilon=1e-12)

    def linear(x, cin, cout, hint):
        y = g.op("MatMul", [x, g.normal(f"{hint}.weight", (cin, cout), 0.02)])
        return g.op("Add", [g.normal(f"{hint}.bias", (cout,), 0.02), y], hint=hint)

    batch, seq = size("input_ids", 0), size("input_ids", 1)
    positions = g.op("Range", [g.const("start", i64(0)),
                               g.op("Cast", [seq], to=TensorProto.INT64),
                               g.const("step", i64(1))])
    positions = g.op("Unsqueeze", [positions, g.const("zero", i64([0]))])
    types = g.op("Slice", [g.const("token_type_buffer", np.zeros((1, c["positions"]), np.int64)),
                           g.const("zero", i64([0])),
                           g.op("Unsqueeze", [seq, g.const("zero", i64([0]))]),
                           g.const("one", i64([1]))])
    types = g.op("Expand", [types, vector(batch, seq)])
    x = g.op("Add", [g.op("Gather", [g.normal("word_embeddings", (c["vocab"], hidden), 0.02),
                                     "input_ids"]),
                     g.op("Gather", [g.normal("position_embeddings", (c["positions"], hidden), 0.02),
                                     positions])])
    x = g.op("Add", [x, g.op("Gather", [g.normal("token_type_embeddings", (2, hidden), 0.02),
                                        types])])
    x = layer_norm(x, "embeddings.norm")
    mask = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const("axes", i64([1, 2]))])],
                to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.const("one_f", np.float32(1)), mask]),
                        g.const("min", np.float32(-10000))])
    def qkv_parts(qkv, each):
        """The projection sliced in three at offsets computed from its
        width, each part then made by each(k, part)."""
        third = g.op("Div", [g.op("Add", [size(qkv, -1), g.const("two", i64(2))]),
                             g.const("three", i64(3))])
        parts = []
        for k in range(3):
            start = g.op("Mul", [third, g.const("k", i64(k))])
            end = g.op("Mul", [third, g.const("k", i64(k + 1))])
            parts.append(each(k, g.op("Slice", [qkv, g.op("Unsqueeze", [start, g.const("zero", i64([0]))]),
                                                g.op("Unsqueeze", [end, g.const("zero", i64([0]))]),
                                                g.const("last", i64([-1]))])))
        return parts

    def mha_attention(x, p):
        """torch.nn.MultiheadAttention's export: the batch merged with the
        heads behind the sequence."""
        xt = g.op("Transpose", [x], perm=[1, 0, 2])
        s_len, b_len = size(xt, 0), size(xt, 1)
        merged = g.op("Mul", [b_len, g.const("heads", i64(heads))])
        q, k, v = qkv_parts(linear(xt, hidden, 3 * hidden, f"{p}.qkv"), lambda k, t: g.op(
            "Transpose", [g.op("Reshape", [t, vector(s_len, merged, head)])], perm=[1, 0, 2]))
        q = g.op("Div", [q, g.const("scale", np.float32(math.sqrt(head)))])
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 2, 1])])
        # The mask [batch, 1, 1, seq] expanded to the heads and merged.
        heads_bias = g.op("Reshape", [g.op("Expand", [bias, vector(batch, heads, 1, seq)]),
                                      vector(merged, 1, seq)])
        probs = g.op("Softmax", [g.op("Add", [scores, heads_bias])], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[1, 0, 2])
        rows = g.op("Reshape", [context, vector(g.op("Mul", [s_len, b_len]), hidden)])
        out = g.op("Gemm", [rows, g.normal(f"{p}.out.weight", (hidden, hidden), 0.02),
                            g.normal(f"{p}.out.bias", (hidden,), 0.02)], transB=1)
        out = g.op("Reshape", [out, vector(s_len, b_len, size(out, 1))])
        return g.op("Transpose", [out], perm=[1, 0, 2])

    for i in range(c["layers"]):
        p = f"layer{i}"
        if mha:
            x = layer_norm(g.op("Add", [x, mha_attention(x, p)]), f"{p}.norm1")
            f = linear(x, hidden, 4 * hidden, f"{p}.up")
            erf = g.op("Erf", [g.op("Div", [f, g.const("sqrt2", np.float32(math.sqrt(2)))])])
            f = g.op("Mul", [g.op("Mul", [f, g.op("Add", [erf, g.const("one_f", np.float32(1))])]),
                             g.const("half", np.float32(0.5))])
            x = layer_norm(g.op("Add", [x, linear(f, 4 * hidden, hidden, f"{p}.down")]),
                           f"{p}.norm2")
            continue
        qkv = linear(x, hidden, 3 * hidden, f"{p}.qkv")
        def split_heads(k, t):
            t = g.op("Reshape", [t, vector(size(t, 0), size(t, 1), heads, -1)])
            return g.op("Transpose", [t], perm=[0, 2, 3, 1] if k == 1 else [0, 2, 1, 3])
        q, kt, v = qkv_parts(qkv, split_heads)
        scores = g.op("Div", [g.op("MatMul", [q, kt]), g.const("scale", np.float32(math.sqrt(head)))])
        probs = g.op("Softmax", [g.op("Add", [scores, bias])], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, vector(batch, seq, -1)])
        x = layer_norm(g.op("Add", [x, linear(context, hidden, hidden, f"{p}.out")]), f"{p}.norm1")
        f = linear(x, hidden, 4 * hidden, f"{p}.up")
        erf = g.op("Erf", [g.op("Div", [f, g.const("sqrt2", np.float32(math.sqrt(2)))])])
        f = g.op("Mul", [g.op("Mul", [f, g.op("Add", [erf, g.const("one_f", np.float32(1))])]),
                         g.const("half", np.float32(0.5))])
        x = layer_norm(g.op("Add", [x, linear(f, 4 * hidden, hidden, f"{p}.down")]), f"{p}.norm2")
    g.op("Identity", [x], hint="last_hidden_state")
    model = g.model("exported_encoder",
                    [tensor_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
                     tensor_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
                    [tensor_info("last_hidden_state", TensorProto.FLOAT,
                                 ["batch", "seq", hidden])])
    model.metadata_props.add(key="vocab", value=str(c["vocab"]))
    return model


def add_arguments(parser):
    parser.add_argument("--bert-base", action="store_true",
                        help="BERT-base sizes: 12 layers, hidden 768, 12 heads, "
                             "vocabulary 30522")
    parser.add_argument("--mha", action="store_true",
                        help="the attention as torch.nn.MultiheadAttention "
                             "exports it (the batch merged with the heads)")
    for key, default in SMALL.items():
        parser.add_argument(f"--{key}", type=int, default=None,
                            help=f"(default {default}; BERT-base {BERT_BASE[key]})")


def feeds(model, seed=0, batch=1, seq=32):
    """input_ids of vocabulary entries and a mask that hides some tokens of
    every sequence but its first."""
    vocab = int({p.key: p.value for p in model.metadata_props}["vocab"])
    rng = np.random.default_rng(seed)
    mask = rng.integers(0, 2, (batch, seq)).astype(np.int64)
    mask[:, 0] = 1
    return {"input_ids": rng.integers(0, vocab, (batch, seq)).astype(np.int64),
            "attention_mask": mask}


if __name__ == "__main__":
    raise SystemExit(main(build, feeds, add_arguments, __doc__.split("\n\n")[0]))
