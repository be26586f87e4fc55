#!/usr/bin/env python3
"""Tunes models with kiln.tune, from their defaults, and reports what changed.

For each model: a fresh tuning database (or --db-dir's, reused), a tune of
--time-budget seconds at --threads threads, then the whole model with the
defaults against the database (kiln.tune's own alternated comparison). The
report lists each model's times and gain, and the kernels whose fastest
configuration differs from the default, by kind, with their gain alone.

Usage (with the venv's python, PYTHONPATH=build/python):
  tools/tune_report.py zoo/regnet_y_400mf.onnx zoo/mobilenet_v3_small.onnx \\
      --time-budget 600 --threads 2 --json tune.json

Run it on a quiet machine: the tuner measures one candidate at a time, and
anything else running makes its times meaningless.
"""

import argparse
import collections
import json
import os
import sys
import tempfile
from pathlib import Path

import kiln


def changed_kernels(report):
    """The kernels whose best configuration is not the default, fastest
    gain (default / best, alone) first."""
    changed = []
    for kernel in report["kernels"]:
        if kernel["best_config"] and kernel["default_ms"] and kernel["best_ms"] \
                and kernel["best_ms"] < kernel["default_ms"]:
            changed.append(dict(kernel, gain=kernel["default_ms"] / kernel["best_ms"]))
    return sorted(changed, key=lambda k: -k["gain"] * k["count"] * k["default_ms"])


def kernels_summed(report):
    """The kernels' times alone, each times its count: (default, best) ms."""
    default = best = 0.0
    for k in report["kernels"]:
        if k["default_ms"]:
            default += k["default_ms"] * k["count"]
            best += min(k["best_ms"] or k["default_ms"], k["default_ms"]) * k["count"]
    return default, best


def markdown(results):
    lines = ["| model | kernels (by kind) | trials | kernels alone, summed: default -> "
             "best ms | whole model: default ms | tuned ms | gain "
             "| kernels changed (by kind) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, report in results.items():
        kinds = collections.Counter(k["kind"] for k in report["kernels"])
        changed = collections.Counter(k["kind"] for k in changed_kernels(report))
        alone = kernels_summed(report)
        lines.append(
            f"| {name} | {len(report['kernels'])} "
            f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}) "
            f"| {report['trials']} | {alone[0]:.3f} -> {alone[1]:.3f} "
            f"| {report['default_ms']:.3f} | {report['tuned_ms']:.3f} "
            f"| {report['default_ms'] / report['tuned_ms']:.2f} "
            f"| {sum(changed.values())} "
            f"({', '.join(f'{k} {n}' for k, n in sorted(changed.items())) or '-'}) |")
    lines.append("")
    for name, report in results.items():
        top = changed_kernels(report)[:5]
        if not top:
            continue
        lines.append(f"{name}: the largest changes (alone, default -> best ms):")
        for k in top:
            lines.append(f"- {k['kind']} x{k['count']} ({k['nodes'][0]}): "
                         f"{k['default_ms']:.4f} -> {k['best_ms']:.4f} "
                         f"({k['gain']:.2f}x) with {json.dumps(k['best_config'], sort_keys=True)}")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--time-budget", type=float, default=600,
                        help="seconds of tuning per model (default 600)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of every measured run (default 2)")
    parser.add_argument("--trials", type=int, default=100000,
                        help="at most this many trials per model")
    parser.add_argument("--db-dir", type=Path,
                        help="keep each model's database here (default: a "
                             "temporary folder, so every tune starts from the defaults)")
    parser.add_argument("--json", type=Path, help="write every report here")
    args = parser.parse_args(argv)

    temporary = None
    if args.db_dir is None:
        temporary = tempfile.TemporaryDirectory(prefix="kiln-tune-")
        args.db_dir = Path(temporary.name)
    args.db_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for model in args.models:
        name = model.stem
        print(f"== {name}: tuning for {args.time_budget:.0f} s at {args.threads} "
              f"thread(s)", file=sys.stderr, flush=True)
        report = kiln.tune(model, args.db_dir / f"{name}.jsonl", trials=args.trials,
                           time_budget=args.time_budget, num_threads=args.threads,
                           progress=True)
        results[name] = report
        if args.json:
            args.json.write_text(json.dumps(results, indent=1, default=str))
    print(markdown(results))
    if temporary is not None:
        temporary.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
