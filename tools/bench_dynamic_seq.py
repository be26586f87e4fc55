#!/usr/bin/env python3
"""Dynamic against static builds of a BERT-style encoder (issue 21).

Builds tools/models/transformer_encoder.py's encoder for any sequence
length (any_sequence_length) or, with --model exported, the encoder as
torch.onnx exports one with dynamic axes (tools/models/exported_encoder.py:
sizes read with Shape), compiles it once with `--dynamic-dims
seq=1..MAX` and once per measured length with that length fixed, and times
both beside onnxruntime on one thread each, the three interleaved, in
rounds; prints each one's median of its rounds' medians and the ratios.

    .venv/bin/python tools/bench_dynamic_seq.py --hidden 256 --layers 2 --seq 128
    .venv/bin/python tools/bench_dynamic_seq.py --model exported --bert-base \
        --seq 128 384
    .venv/bin/python tools/bench_dynamic_seq.py --model exported --bert-base \
        --seq 128 --batch 2 8
    .venv/bin/python tools/bench_dynamic_seq.py --model exported --mha \
        --bert-base --seq 128 --batch 1 4

With --mha (the exported model only), the attention is
torch.nn.MultiheadAttention's export (exported_encoder.py --mha: the batch
merged with the heads behind the sequence).

With --batch (the exported model only), the dynamic build also takes the
batch at run time (`batch=1..MAX_BATCH`) and each batch size is measured
against a static build of that batch and sequence length.

Needs the build's Python module (build/python) on PYTHONPATH."""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "models"))
import exported_encoder  # noqa: E402
import transformer_encoder  # noqa: E402


def median_ms(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["encoder", "exported"], default="encoder")
    parser.add_argument("--bert-base", action="store_true",
                        help="BERT-base's sizes: 12 layers, hidden 768, 12 heads")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=None,
                        help="default: hidden / 64")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, nargs="+", default=[128])
    parser.add_argument("--max-seq", type=int, default=512)
    parser.add_argument("--batch", type=int, nargs="+", default=None,
                        help="batch sizes (exported model): the dynamic build "
                             "reads the batch too")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--mha", action="store_true",
                        help="torch.nn.MultiheadAttention's export of the attention "
                             "(--model exported)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kiln-bench-dynamic-seq"))
    args = parser.parse_args()
    if args.mha and args.model != "exported":
        parser.error("--mha needs --model exported")

    import kiln
    import onnx
    import onnxruntime as ort

    args.work.mkdir(parents=True, exist_ok=True)
    if args.bert_base:
        args.hidden, args.layers, args.heads = 768, 12, 12
    heads = args.heads or max(1, args.hidden // 64)
    if args.model == "exported":
        model = exported_encoder.build(layers=args.layers, hidden=args.hidden,
                                       heads=heads, vocab=1000,
                                       positions=args.max_seq, mha=args.mha)
        dims = {"batch": (1, args.max_batch) if args.batch else 1}
    else:
        if args.batch:
            parser.error("--batch needs --model exported")
        model = transformer_encoder.any_sequence_length(transformer_encoder.build(
            seq=args.max_seq, layers=args.layers, hidden=args.hidden,
            heads=heads, vocab=1000))
        dims = {}
    onnx.save(model, args.work / "encoder.onnx")
    print(f"compiling the dynamic build ({dims}, seq=1..{args.max_seq})", flush=True)
    dynamic = kiln.load(kiln.compile(model, args.work / "dynamic.so",
                                     dynamic_dims={**dims, "seq": (1, args.max_seq)}),
                        num_threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(args.work / "encoder.onnx"), options)
    rng = np.random.default_rng(0)
    print("| batch x tokens | dynamic (ms) | static (ms) | onnxruntime (ms) "
          "| dynamic / static | dynamic / onnxruntime |")
    print("|---|---|---|---|---|---|")
    for batch, seq in [(b, s) for b in (args.batch or [1]) for s in args.seq]:
        static = kiln.load(kiln.compile(model, args.work / f"static{batch}x{seq}.so",
                                        dynamic_dims={**dims, "batch": batch, "seq": seq}
                                        if args.model == "exported"
                                        else {"seq": seq}),
                           num_threads=1)
        if args.model == "exported":
            feeds = exported_encoder.feeds(model, seed=seq, batch=batch, seq=seq)
        else:
            feeds = {"input_ids": rng.integers(0, 1000, (1, seq)).astype(np.int64),
                     "position_ids": np.arange(seq, dtype=np.int64)[None]}
        want = session.run(None, feeds)[0]
        got = dynamic.run(feeds)["last_hidden_state"]
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
        times = {"dynamic": [], "static": [], "ort": []}
        for _ in range(args.rounds):  # interleaved
            times["dynamic"].append(median_ms(lambda: dynamic.run(feeds), args.repeat))
            times["static"].append(median_ms(lambda: static.run(feeds), args.repeat))
            times["ort"].append(median_ms(lambda: session.run(None, feeds), args.repeat))
        d, s, o = (statistics.median(times[k]) for k in ("dynamic", "static", "ort"))
        print(f"| {batch} x {seq} | {d:.3f} | {s:.3f} | {o:.3f} | {d / s:.2f} | {d / o:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
