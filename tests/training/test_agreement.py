#!/usr/bin/python3
"""The engine's accuracy on Fashion-MNIST equals PyTorch's, image by image, for both shipped models.

  test_agreement.py --pola build/apps/pola [--limit 1000] [--models M.pola ...]
                    [--perturb-reference TENSOR]

For the first --limit test images (CI: 1000; the full set with --limit 10000): each 28x28 image
is stored as a PNG and decoded again with PIL (lossless, so these are the pixels a PNG of it
holds), preprocessed with PIL from the model file's `preprocess` metadata, and the same float32
tensor is given to the PyTorch reference (float64, weights read from the .pola) and to
`pola run`. Checks: every logit within 2e-5 of max|logit| of PyTorch's (the engine sits near
1e-6 of it; a classifier can keep its top classes while its logits go wrong), |top-1(engine) -
top-1(PyTorch)| <= 0.05 points and the two top-1 predictions agree on >= 99.9% of images.

--perturb-reference adds noise to one tensor of the PyTorch model only; the test must then
fail (this is how its sensitivity was proven, see models/README.md).
"""
import argparse
import sys

import numpy as np
import torch

import fashion_reference as fr

MAX_ACCURACY_GAP = 0.05      # percentage points
MIN_AGREEMENT = 99.9         # percent of images with the same top-1
MAX_LOGIT_ERROR = 2e-5       # of max|logit|, every logit of every image


def perturb(model, name, seed=0):
    tensor = dict(model.named_parameters())[name]
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        tensor.add_(torch.randn(tensor.shape, generator=gen, dtype=tensor.dtype) * tensor.std() * 0.5)


def check_model(pola, path, limit, threads, perturb_name=None):
    model = fr.ShippedModel(path)
    if perturb_name:
        perturb(model.model, perturb_name)
    images, labels = fr.test_split(limit)
    png_pixels = np.stack([fr.png_roundtrip(p) for p in images])
    assert np.array_equal(png_pixels, images), "PNG round trip changed pixels"
    x = fr.preprocess_pixels(png_pixels, model.preprocess)
    ref = model.logits(x)
    eng = fr.engine_logits(pola, path, x, threads)
    assert eng.shape == ref.shape, (eng.shape, ref.shape)
    acc_ref = 100.0 * np.mean(ref.argmax(1) == labels)
    acc_eng = 100.0 * np.mean(eng.argmax(1) == labels)
    top5_ref = 100.0 * np.mean(fr.top_k_hits(ref, labels, 5))
    top5_eng = 100.0 * np.mean(fr.top_k_hits(eng, labels, 5))
    agree = 100.0 * np.mean(ref.argmax(1) == eng.argmax(1))
    print(f"{model.arch}: {len(labels)} images  top-1 PyTorch {acc_ref:.2f}%  engine {acc_eng:.2f}%  "
          f"top-5 PyTorch {top5_ref:.2f}%  engine {top5_eng:.2f}%  top-1 agreement {agree:.2f}%  "
          f"max |logit diff| {np.abs(ref - eng).max():.2e}")
    failures = []
    logit_err = float(np.abs(ref - eng).max()) / float(np.abs(ref).max())
    print(f"{model.arch}: max |logit diff| / max |logit| = {logit_err:.2e} (gate {MAX_LOGIT_ERROR:.0e})")
    if not logit_err <= MAX_LOGIT_ERROR:
        failures.append(f"{model.arch}: logits {logit_err:.2e} of max|logit| from PyTorch's > {MAX_LOGIT_ERROR:.0e}")
    if abs(acc_ref - acc_eng) > MAX_ACCURACY_GAP:
        failures.append(f"{model.arch}: accuracy gap {abs(acc_ref - acc_eng):.2f} points > {MAX_ACCURACY_GAP}")
    if agree < MIN_AGREEMENT:
        failures.append(f"{model.arch}: top-1 agreement {agree:.2f}% < {MIN_AGREEMENT}%")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--models", nargs="+", default=fr.MODELS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--perturb-reference", metavar="TENSOR")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    failures = []
    for path in args.models:
        failures += check_model(args.pola, path, args.limit, args.threads, args.perturb_reference)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
