"""Checks the "profile" object of `kiln-run --profile --json` and prints a
summary for FileCheck: the kernel count, the sum of all shares (kernels and
outside) rounded to 2 digits, and the source of the kernel with --flops."""

import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("json")
parser.add_argument("--flops", type=int)
args = parser.parse_args()
with open(args.json) as f:
    profile = json.load(f)["profile"]
kernels = profile["kernels"]
print(f"kernels: {len(kernels)}")
total = sum(k["share"] for k in kernels) + profile["outside_share"]
print(f"shares: {total:.2f}")
for kernel in kernels:
    assert kernel["ms"] >= 0 and 0 <= kernel["share"] <= 1, kernel
    if kernel["flops"] == args.flops:
        print(f"kernel with {args.flops} flops: {kernel['source']}")
