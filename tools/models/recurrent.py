#!/usr/bin/env python3
"""Recurrent models with seeded random weights, laid out as PyTorch exports them.

--lstm-tagger (the default): a sequence tagger. input_ids [batch, seq] (int64)
-> embeddings (Gather) -> Transpose to [seq, batch, emb] -> LSTM -> Squeeze ->
LSTM -> Squeeze -> MatMul + Add to tag scores -> Transpose back: scores
[batch, seq, tags]. Two stacked layers, as torch.nn.LSTM(num_layers=2)
exports them (gates i, o, f, c; biases W_b and R_b; zero initial states).

--gru-encoder: a bidirectional GRU over features [batch, seq, features]
(Transpose to [seq, batch, features] -> GRU with linear_before_reset = 1, as
torch.nn.GRU exports -> Transpose [batch, seq, 2, hidden] -> Reshape):
states [batch, seq, 2 * hidden].

Weights are uniform in [-1/sqrt(hidden), 1/sqrt(hidden)], PyTorch's default.

  python tools/models/recurrent.py -o lstm_tagger.onnx [--check]
  python tools/models/recurrent.py --gru-encoder -o gru_encoder.onnx
"""

import numpy as np

from common import GraphBuilder, TensorProto, main, random_inputs, tensor_info

LSTM_TAGGER = dict(batch=1, seq=64, vocab=5000, emb=128, hidden=256, tags=20)
GRU_ENCODER = dict(batch=1, seq=64, features=80, hidden=256)


def recurrent_weights(g, hint, gates, inputs, hidden, directions):
    bound = 1.0 / np.sqrt(hidden)
    w = g.uniform(f"{hint}.W", (directions, gates * hidden, inputs), -bound, bound)
    r = g.uniform(f"{hint}.R", (directions, gates * hidden, hidden), -bound, bound)
    b = g.uniform(f"{hint}.B", (directions, 2 * gates * hidden), -bound, bound)
    return w, r, b


def lstm_tagger(c, seed):
    g = GraphBuilder(seed)
    table = g.normal("embeddings", (c["vocab"], c["emb"]), 1.0)
    x = g.op("Gather", [table, "input_ids"], "embed", axis=0)      # [b, s, e]
    x = g.op("Transpose", [x], "to_time_major", perm=[1, 0, 2])    # [s, b, e]
    size = c["emb"]
    axis1 = g.const("axis1", np.array([1], np.int64))
    for layer in range(2):
        w, r, b = recurrent_weights(g, f"lstm{layer}", 4, size, c["hidden"], 1)
        y = g.op("LSTM", [x, w, r, b], f"lstm{layer}", outputs=3,
                 hidden_size=c["hidden"])[0]                       # [s, 1, b, h]
        x = g.op("Squeeze", [y, axis1], f"lstm{layer}.squeeze")    # [s, b, h]
        size = c["hidden"]
    proj = g.normal("tags.weight", (c["hidden"], c["tags"]), 1.0 / np.sqrt(c["hidden"]))
    bias = g.normal("tags.bias", (c["tags"],), 0.1)
    y = g.op("Add", [g.op("MatMul", [x, proj], "tags.matmul"), bias], "tags")
    g.op("Transpose", [y], "scores", perm=[1, 0, 2])
    return g.model(
        "lstm_tagger",
        [tensor_info("input_ids", TensorProto.INT64, (c["batch"], c["seq"]))],
        [tensor_info("scores", TensorProto.FLOAT, (c["batch"], c["seq"], c["tags"]))],
        doc="2-layer LSTM tagger, seeded random weights: " +
            ", ".join(f"{k} {v}" for k, v in c.items()))


def gru_encoder(c, seed):
    g = GraphBuilder(seed)
    x = g.op("Transpose", ["features"], "to_time_major", perm=[1, 0, 2])
    w, r, b = recurrent_weights(g, "gru", 3, c["features"], c["hidden"], 2)
    y = g.op("GRU", [x, w, r, b], "gru", outputs=2, hidden_size=c["hidden"],
             direction="bidirectional", linear_before_reset=1)[0]   # [s, 2, b, h]
    y = g.op("Transpose", [y], "to_batch_major", perm=[2, 0, 1, 3])  # [b, s, 2, h]
    shape = g.const("merge", np.array([0, 0, -1], np.int64))
    g.op("Reshape", [y, shape], "states")
    return g.model(
        "gru_encoder",
        [tensor_info("features", TensorProto.FLOAT, (c["batch"], c["seq"], c["features"]))],
        [tensor_info("states", TensorProto.FLOAT, (c["batch"], c["seq"], 2 * c["hidden"]))],
        doc="bidirectional GRU encoder, seeded random weights: " +
            ", ".join(f"{k} {v}" for k, v in c.items()))


def build(args=None, seed=0, gru=None, **sizes):
    gru = getattr(args, "gru_encoder", False) if gru is None else gru
    c = dict(GRU_ENCODER if gru else LSTM_TAGGER)
    for key in c:
        value = sizes.get(key, getattr(args, key, None))
        if value is not None:
            c[key] = value
    model = gru_encoder(c, seed) if gru else lstm_tagger(c, seed)
    if not gru:
        model.metadata_props.add(key="vocab", value=str(c["vocab"]))
    return model


def add_arguments(parser):
    parser.add_argument("--gru-encoder", action="store_true",
                        help="the bidirectional GRU encoder instead of the LSTM tagger")
    for key in sorted(set(LSTM_TAGGER) | set(GRU_ENCODER)):
        parser.add_argument(f"--{key}", type=int, default=None,
                            help=f"(tagger {LSTM_TAGGER.get(key, '-')}, "
                                 f"encoder {GRU_ENCODER.get(key, '-')})")


def feeds(model, seed=0):
    props = {p.key: p.value for p in model.metadata_props}
    return random_inputs(model, seed, int_high=int(props.get("vocab", 2)))


if __name__ == "__main__":
    raise SystemExit(main(build, feeds, add_arguments, __doc__.split("\n\n")[0]))
