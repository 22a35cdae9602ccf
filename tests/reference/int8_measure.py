#!/usr/bin/python3
"""The measurement that chose the int8 activation scheme, on the shipped Fashion-MNIST models.

  int8_measure.py [--models models/fashion_pola_pvt.pola,models/fashion_pola_swin.pola]
                  [--calibration-images 256,1024] [--limit 10000] [--float32] [--threads 2]
                  [--workdir DIR] [--json OUT.json]

For each model: the float model's top-1 on the first --limit test images (float64 reference of
the F32 file), then the int8 file int8_quantize.py makes from the first N training images (for
each N of --calibration-images) run by int8_fake_quant.py as
  static         static per-tensor activations (the scheme), one row per N
  dynamic_token  dynamic per-token activations (no calibration; the weights are the same)
  weights_only   int8 weights, float activations
with top-1 accuracy, top-1 agreement with the float model and max|logit - float| / max|float logit|.
Preprocessing: the model's `preprocess` metadata through PIL (tests/training/fashion_reference.py).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "training"))

from fashion_reference import DATA_DIR, ShippedModel, preprocess_pixels, test_split  # noqa: E402
from int8_fake_quant import QuantizedModel  # noqa: E402
from int8_quantize import quantize_file  # noqa: E402


def float_logits(model, x, dtype, batch):
    from polaformer_ref import run
    out = [run(model.model, torch.from_numpy(x[i:i + batch]), dtype=dtype)[0] for i in range(0, len(x), batch)]
    return torch.cat(out).to(torch.float64).numpy()


def summary(logits, ref, labels):
    return {"top1": float((logits.argmax(1) == labels).mean() * 100),
            "agreement": float((logits.argmax(1) == ref.argmax(1)).mean() * 100),
            "max_rel_diff": float(np.abs(logits - ref).max() / np.abs(ref).max())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(os.path.join(REPO, "models", f"fashion_pola_{f}.pola")
                                                 for f in ("pvt", "swin")))
    ap.add_argument("--calibration-images", default="256,1024")
    ap.add_argument("--limit", type=int, default=10000)
    ap.add_argument("--float32", action="store_true", help="run the references in float32 (default float64)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=250)
    ap.add_argument("--workdir", help="keep the int8 files here (default: a temporary directory)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dtype = torch.float32 if args.float32 else torch.float64
    counts = [int(n) for n in args.calibration_images.split(",")]
    pixels, labels = test_split(args.limit)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        for path in args.models.split(","):
            name = os.path.splitext(os.path.basename(path))[0]
            fm = ShippedModel(path)
            x = preprocess_pixels(pixels, fm.preprocess)
            start = time.time()
            ref = float_logits(fm, x, dtype, args.batch)
            rows = {"float": summary(ref, ref, labels)}
            print(f"{name}: float top-1 {rows['float']['top1']:.2f}% on {len(x)} images "
                  f"[{time.time() - start:.0f}s]", flush=True)
            for i, n in enumerate(counts):
                qpath = os.path.join(workdir, f"{name}_int8_cal{n}.pola")
                quantize_file(path, qpath, DATA_DIR, images=n, split="train")
                qm = QuantizedModel(qpath)
                modes = [("static", f"static_cal{n}")]
                if i == 0:
                    modes += [("dynamic_token", "dynamic_token"), ("float_activations", "weights_only")]
                for mode, label in modes:
                    start = time.time()
                    rows[label] = summary(qm.logits(x, mode=mode, dtype=dtype, batch=args.batch), ref, labels)
                    r = rows[label]
                    print(f"{name} {label}: top-1 {r['top1']:.2f}% ({r['top1'] - rows['float']['top1']:+.2f}), "
                          f"agreement {r['agreement']:.2f}%, max|logit diff| {r['max_rel_diff']:.2e} of max|logit| "
                          f"[{time.time() - start:.0f}s]", flush=True)
            results[name] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"limit": args.limit, "dtype": str(dtype), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
