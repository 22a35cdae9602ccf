#!/usr/bin/python3
"""The aarch64 build answers as the x86-64 build does (run under qemu-user).

  check_arm64.py --x86 build/apps/pola --arm64 build-arm64/pola-qemu --workdir DIR
                 [--rtol 1e-5] [--eval-images 1000]

For each shipped Fashion-MNIST model (models/*.pola):
  1. the shipped sample images, preprocessed once (x86 `pola preprocess -m`), run by both builds
     (`pola run`): logits within rtol x max|logit| of x86's and the same top class per image;
  2. `pola classify --json` on the sample files: the same top-1 class per image from both builds;
  3. `pola eval` on the first N Fashion-MNIST test images: the same number correct, per class.
The aarch64 build computes with NEON kernels and its own fp32 GEMM, the x86 one with AVX-512/AVX2
kernels and oneDNN: the sums run in other orders, so the logits differ in the last bits and the
tolerance is relative, as in parity. Exit 0 when every check passes, 1 otherwise.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FASHION = "/usr/share/datasets/fashion-mnist"


def call(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    return p.stdout


def sample_batch(x86, model, samples, out_dir):
    """The samples preprocessed as the model prescribes, stacked into one NCHW batch."""
    rows = []
    for k, path in enumerate(samples):
        one = os.path.join(out_dir, f"sample{k}.npy")
        call([x86, "preprocess", "-m", model, path, "-o", one])
        rows.append(np.load(one))
    batch = os.path.join(out_dir, "samples.npy")
    np.save(batch, np.concatenate(rows, axis=0).astype(np.float32))
    return batch


def top1_per_image(pola, model, samples):
    lines = call([pola, "classify", "-m", model, "--json", "-k", "1", "--threads", "2"] + samples).splitlines()
    return [json.loads(line)["top"][0]["index"] for line in lines if line.strip()]


def check_model(args, model, samples, out_dir):
    failures = []
    name = os.path.basename(model)
    batch = sample_batch(args.x86, model, samples, out_dir)
    logits = {}
    for tag, pola in (("x86", args.x86), ("arm64", args.arm64)):
        out = os.path.join(out_dir, f"logits_{tag}.npy")
        call([pola, "run", "-m", model, "-i", batch, "-o", out, "--threads", "2"])
        logits[tag] = np.load(out).astype(np.float64)
    a, b = logits["x86"], logits["arm64"]
    rel = float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30))
    same_top = bool(np.all(a.argmax(1) == b.argmax(1)))
    print(f"{name}: logits of {a.shape[0]} samples: max |arm64 - x86| = {rel:.3e} x max|logit| "
          f"(tolerance {args.rtol:.0e}), same top class: {same_top}")
    if not rel <= args.rtol:
        failures.append(f"{name}: logits differ by {rel:.3e} x max|logit| > {args.rtol:.0e}")
    if not same_top:
        failures.append(f"{name}: top classes differ: x86 {a.argmax(1).tolist()} arm64 {b.argmax(1).tolist()}")

    top_x86, top_arm = top1_per_image(args.x86, model, samples), top1_per_image(args.arm64, model, samples)
    print(f"{name}: classify top-1 of {len(samples)} files: x86 {top_x86} arm64 {top_arm}")
    if top_x86 != top_arm or len(top_x86) != len(samples):
        failures.append(f"{name}: classify top-1 differs: x86 {top_x86} arm64 {top_arm}")

    evals = {}
    for tag, pola in (("x86", args.x86), ("arm64", args.arm64)):
        out = call([pola, "eval", "-m", model, "-d", FASHION, "--limit", str(args.eval_images), "--json",
                    "--threads", "2"])
        evals[tag] = json.loads(out)
    ex, ea = evals["x86"], evals["arm64"]
    per_class = lambda e: [round((c["top1_accuracy"] or 0) * c["images"]) for c in e["per_class"]]
    print(f"{name}: eval on {ex['images']} test images: x86 {ex['correct_top1']} correct, "
          f"arm64 {ea['correct_top1']} correct")
    if ex["images"] != args.eval_images or ea["images"] != args.eval_images:
        failures.append(f"{name}: eval saw {ex['images']} / {ea['images']} images, not {args.eval_images}")
    if ex["correct_top1"] != ea["correct_top1"] or per_class(ex) != per_class(ea):
        failures.append(f"{name}: eval differs: x86 {ex['correct_top1']} correct {per_class(ex)}, "
                        f"arm64 {ea['correct_top1']} correct {per_class(ea)}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--x86", required=True, help="the x86-64 pola")
    ap.add_argument("--arm64", required=True, help="the aarch64 pola, runnable here (a qemu wrapper)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--eval-images", type=int, default=1000)
    args = ap.parse_args()
    samples = sorted(glob.glob(os.path.join(ROOT, "models", "samples", "*.png")))
    models = sorted(glob.glob(os.path.join(ROOT, "models", "*.pola")))
    if not samples or not models:
        print("ERROR: no models/*.pola or models/samples/*.png", file=sys.stderr)
        return 1
    print(call([args.arm64, "--version"]).strip())
    failures = []
    for model in models:
        out_dir = os.path.join(args.workdir, os.path.splitext(os.path.basename(model))[0])
        os.makedirs(out_dir, exist_ok=True)
        try:
            failures += check_model(args, model, samples, out_dir)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failures.append(f"{os.path.basename(model)}: {e}")
    for f in failures:
        print("FAIL:", f)
    print("arm64 agreement:", "all checks passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
