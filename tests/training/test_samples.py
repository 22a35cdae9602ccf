#!/usr/bin/python3
"""The shipped sample PNGs (models/samples/NNNN_<class>.png) are what their names say, and the
engine classifies each of them correctly with both shipped models.

  test_samples.py --pola build/apps/pola

Per sample: its pixels equal Fashion-MNIST test image NNNN (so it is real, unaltered data);
`pola preprocess --spec <the model's preprocess>` on the PNG gives exactly the tensor PIL +
the metadata give; `pola run` on those tensors puts the named class first for every sample,
and so does the PyTorch reference.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

import fashion_reference as fr

SAMPLES = os.path.join(fr.REPO, "models", "samples")


def parse_sample(path, classes):
    index, name = os.path.splitext(os.path.basename(path))[0].split("_", 1)
    by_slug = {fr.slug(c): k for k, c in enumerate(classes)}
    assert name in by_slug, f"{path}: '{name}' is not a class of the model"
    return int(index), by_slug[name]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    args = ap.parse_args()
    torch.set_num_threads(2)
    paths = sorted(glob.glob(os.path.join(SAMPLES, "*.png")))
    failures = []
    if len(paths) < 10:
        failures.append(f"expected at least 10 samples in {SAMPLES}, found {len(paths)}")
    test_images, test_labels = fr.test_split()
    for model_path in fr.MODELS:
        model = fr.ShippedModel(model_path)
        parsed = [parse_sample(p, model.classes) for p in paths]
        labels = np.array([label for _, label in parsed])
        if sorted(set(labels)) != list(range(len(model.classes))):
            failures.append(f"samples do not cover every class: {sorted(set(labels))}")
        x = np.stack([fr.preprocess_pil(Image.open(p), model.preprocess) for p in paths])
        with tempfile.TemporaryDirectory() as tmp:
            for (index, label), p, xi in zip(parsed, paths, x):
                if not (np.array_equal(np.asarray(Image.open(p).convert("L")), test_images[index])
                        and test_labels[index] == label):
                    failures.append(f"{p}: not test image {index} of class {label}")
                out = os.path.join(tmp, "x.npy")
                subprocess.run([args.pola, "preprocess", p, "-o", out, "--spec", json.dumps(model.preprocess)],
                               check=True)
                if not np.array_equal(np.load(out)[0], xi):
                    failures.append(f"{p}: pola preprocess differs from PIL + metadata")
        eng = fr.engine_logits(args.pola, model_path, x).argmax(1)
        ref = model.logits(x).argmax(1)
        for p, label, e, r in zip(paths, labels, eng, ref):
            print(f"{model.arch}: {os.path.basename(p)}: engine {model.classes[e]!r}, PyTorch {model.classes[r]!r}")
            if e != label or r != label:
                failures.append(f"{model.arch}: {os.path.basename(p)} classified as {model.classes[e]!r} (engine), "
                                f"{model.classes[r]!r} (PyTorch)")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
