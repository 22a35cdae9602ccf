#!/usr/bin/python3
"""The shipped Fashion-MNIST models keep their accuracy in bf16 (the bf16 accuracy gate).

  check_bf16_fashion.py --pola build/apps/pola [--limit N] [--max-gap 0.1] [--min-agreement 99.5]

For models/fashion_pola_{pvt,swin}.pola on the Fashion-MNIST test set (all 10,000 images unless
--limit): `pola eval --precision bf16` top-1 accuracy within --max-gap percentage points of
`--precision fp32`, and per-image top-1 agreement between the two >= --min-agreement percent.
Skipped (exit 77) on a CPU without AMX-BF16 or AVX512-BF16, or without the dataset
(Debian's dataset-fashion-mnist).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
DATA_DIR = "/usr/share/datasets/fashion-mnist"  # as tests/training/fashion_reference.py
MODELS = [os.path.join(REPO, "models", f"fashion_pola_{f}.pola") for f in ("pvt", "swin")]

from precision_common import SKIP, skip_without_native_bf16  # noqa: E402


def evaluate(pola, model, precision, limit, tmp):
    pred = os.path.join(tmp, f"{precision}.csv")
    cmd = [pola, "eval", "-m", model, "--data", DATA_DIR, "--json", "--predictions", pred, "--threads", "2",
           "--precision", precision]
    if limit:
        cmd += ["--limit", str(limit)]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    with open(pred) as f:
        top1 = [int(r["top1"]) for r in csv.DictReader(f)]
    return report, top1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-gap", type=float, default=0.1, help="percentage points of top-1 accuracy")
    ap.add_argument("--min-agreement", type=float, default=99.5, help="percent of images")
    args = ap.parse_args()
    if not os.path.isdir(DATA_DIR):
        print(f"SKIP: {DATA_DIR} is missing (install dataset-fashion-mnist)")
        return SKIP
    skip_without_native_bf16(args.pola)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            fp32, top_fp32 = evaluate(args.pola, model, "fp32", args.limit, tmp)
            bf16, top_bf16 = evaluate(args.pola, model, "bf16", args.limit, tmp)
            gap = 100 * (bf16["top1_accuracy"] - fp32["top1_accuracy"])
            agree = 100.0 * sum(a == b for a, b in zip(top_fp32, top_bf16)) / len(top_fp32)
            print(f"{os.path.basename(model)} on {fp32['images']} images: top-1 fp32 {100 * fp32['top1_accuracy']:.2f}% "
                  f"bf16 {100 * bf16['top1_accuracy']:.2f}% (gap {gap:+.2f} points), top-1 agreement {agree:.2f}%, "
                  f"{fp32['images_per_second']:.0f} vs {bf16['images_per_second']:.0f} img/s")
            if len(top_fp32) != len(top_bf16) or fp32["images"] != bf16["images"]:
                failures.append(f"{model}: the two runs saw different images")
            if not abs(gap) <= args.max_gap:
                failures.append(f"{model}: bf16 top-1 differs from fp32 by {gap:+.2f} points (> {args.max_gap})")
            if not agree >= args.min_agreement:
                failures.append(f"{model}: bf16 and fp32 agree on only {agree:.2f}% of images (< {args.min_agreement})")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
