#!/usr/bin/python3
"""The shipped Fashion-MNIST models keep their accuracy in int8 (post-training quantization).

  check_int8_fashion.py --pola build/apps/pola [--images 256] [--limit N] [--max-gap 0.5]
                        [--min-agreement 99] [--workdir DIR]

For models/fashion_pola_{pvt,swin}.pola: `pola quantize --calibration <dataset> --split train
--images 256` (the first 256 training images), then on the Fashion-MNIST test set (all 10,000
images unless --limit) `pola eval --precision int8` of the quantized file against `pola eval
--precision fp32` of the float file: top-1 accuracy within --max-gap percentage points, per-image
top-1 agreement >= --min-agreement percent. The int8 run must show int8 arithmetic: on the first
64 test images (preprocessed by tests/training/fashion_reference.py), `pola run --precision int8`
of the quantized file must differ from its `--precision fp32` run (same weights, no activation
quantization) by at least a tenth of what the float64 reference of the scheme says activation
quantization does there (tests/reference/int8_fake_quant.py, static vs float_activations).
What the float64 reference of the scheme gives on the 10k images (tests/reference/README.md,
int8): top-1 -0.04 (PVT) and +0.04 (Swin) points, agreement 99.76% / 99.72%.
Skipped (exit 77) on a CPU without AMX-INT8, AVX512-VNNI or AVX-VNNI (/proc/cpuinfo), or without
the dataset (Debian's dataset-fashion-mnist).
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))
sys.path.insert(0, os.path.join(REPO, "tests", "training"))
DATA_DIR = "/usr/share/datasets/fashion-mnist"  # as tests/training/fashion_reference.py
MODELS = [os.path.join(REPO, "models", f"fashion_pola_{f}.pola") for f in ("pvt", "swin")]

from precision_common import SKIP, pola, skip_without_int8  # noqa: E402


def evaluate(binary, model, precision, limit, tmp):
    pred = os.path.join(tmp, f"{precision}.csv")
    cmd = [binary, "eval", "-m", model, "--data", DATA_DIR, "--json", "--predictions", pred, "--threads", "2",
           "--precision", precision]
    if limit:
        cmd += ["--limit", str(limit)]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    with open(pred) as f:
        top1 = [int(r["top1"]) for r in csv.DictReader(f)]
    return report, top1


def int8_arithmetic(binary, qpath, tmp, failures):
    """`pola run --precision int8` differs from fp32 on the same file as the scheme says it should."""
    import torch
    from fashion_reference import preprocess_pixels, test_split
    from int8_fake_quant import QuantizedModel
    torch.set_num_threads(2)
    qm = QuantizedModel(qpath)
    pixels, _ = test_split(64)
    x = preprocess_pixels(pixels, json.loads(qm.meta["preprocess"]))
    inp = os.path.join(tmp, "x.npy")
    np.save(inp, x)
    got = {}
    for precision in ("fp32", "int8"):
        out = os.path.join(tmp, f"{precision}.npy")
        pola(binary, "run", "-m", qpath, "-i", inp, "-o", out, "--precision", precision, "--threads", "2")
        got[precision] = np.load(out).astype(np.float64)
    ref_float = qm.logits(x, mode="float_activations")
    scale = float(np.abs(ref_float).max())
    want = float(np.abs(qm.logits(x, mode="static") - ref_float).max()) / scale
    seen = float(np.abs(got["int8"] - got["fp32"]).max()) / scale
    print(f"  {os.path.basename(qpath)}: int8 - fp32 run of the same file {seen:.2e} of max|logit| "
          f"(the float64 reference of the scheme: {want:.2e})")
    if not seen >= 0.1 * want:
        failures.append(f"{qpath}: int8 run only {seen:.2e} from fp32 on the same file (reference {want:.2e}): "
                        "activations were not quantized")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--images", type=int, default=256, help="calibration images (first N of the train split)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-gap", type=float, default=0.5, help="percentage points of top-1 accuracy")
    ap.add_argument("--min-agreement", type=float, default=99.0, help="percent of images")
    ap.add_argument("--workdir", help="keep the quantized files here (default: a temporary directory)")
    args = ap.parse_args()
    if not os.path.isdir(DATA_DIR):
        print(f"SKIP: {DATA_DIR} is missing (install dataset-fashion-mnist)")
        return SKIP
    skip_without_int8("int8 accuracy runs")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or tmp
        os.makedirs(work, exist_ok=True)
        for model in MODELS:
            qpath = os.path.join(work, os.path.basename(model).replace(".pola", "_int8.pola"))
            pola(args.pola, "quantize", "--model", model, "--calibration", DATA_DIR, "--split", "train",
                 "--images", str(args.images), "-o", qpath, "--threads", "2")
            fp32, top_fp32 = evaluate(args.pola, model, "fp32", args.limit, tmp)
            int8, top_int8 = evaluate(args.pola, qpath, "int8", args.limit, tmp)
            gap = 100 * (int8["top1_accuracy"] - fp32["top1_accuracy"])
            agree = 100.0 * sum(a == b for a, b in zip(top_fp32, top_int8)) / len(top_fp32)
            print(f"{os.path.basename(model)} on {fp32['images']} images, calibrated on {args.images}: top-1 fp32 "
                  f"{100 * fp32['top1_accuracy']:.2f}% int8 {100 * int8['top1_accuracy']:.2f}% (gap {gap:+.2f} points), "
                  f"top-1 agreement {agree:.2f}%, {fp32['images_per_second']:.0f} vs {int8['images_per_second']:.0f} img/s")
            if len(top_fp32) != len(top_int8) or fp32["images"] != int8["images"]:
                failures.append(f"{model}: the two runs saw different images")
            if not abs(gap) <= args.max_gap:
                failures.append(f"{model}: int8 top-1 differs from fp32 by {gap:+.2f} points (> {args.max_gap})")
            if not agree >= args.min_agreement:
                failures.append(f"{model}: int8 and fp32 agree on only {agree:.2f}% of images (< {args.min_agreement})")
            int8_arithmetic(args.pola, qpath, tmp, failures)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
