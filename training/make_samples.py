#!/usr/bin/python3
"""Write models/samples/: one real Fashion-MNIST test image per class as a PNG.

  /usr/bin/python3 training/make_samples.py

Each sample is the first test image of its class that both shipped models classify correctly
in PyTorch (so the samples demonstrate the models rather than their ~9% of errors); the file
name holds the test-set index and the class: 0003_trouser.png is t10k image 3, a Trouser.
tests/training/test_samples.py checks that the engine classifies them all correctly too.
"""
import os
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import fashion_data  # noqa: E402
from fashion_models import PREPROCESS  # noqa: E402
from export_model import read_model_file  # noqa: E402  (tests/reference)
from polaformer_ref import build_model, run  # noqa: E402

MODEL_NAMES = ("fashion_pola_pvt", "fashion_pola_swin")


def slug(class_name):
    return "".join(c if c.isalnum() or c == "-" else "-" for c in class_name.lower())


def predictions(model_path, x):
    tensors, cfg, _ = read_model_file(model_path)
    model = build_model(cfg)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    # float32 is plenty to pick samples (the tests re-check them in float64 and in the engine).
    return torch.cat([run(model, torch.from_numpy(x[i:i + 500]), dtype=torch.float32)[0]
                      for i in range(0, len(x), 500)]).argmax(1).numpy()


def main():
    torch.set_num_threads(2)
    images, labels = fashion_data.load_split("t10k")
    x = fashion_data.normalize(fashion_data.resize_all(images, PREPROCESS), PREPROCESS)
    right = np.ones(len(labels), bool)
    for name in MODEL_NAMES:
        right &= predictions(os.path.join(REPO, "models", f"{name}.pola"), x) == labels
    out_dir = os.path.join(REPO, "models", "samples")
    os.makedirs(out_dir, exist_ok=True)
    for k, class_name in enumerate(fashion_data.CLASSES):
        index = int(np.flatnonzero((labels == k) & right)[0])
        path = os.path.join(out_dir, f"{index:04d}_{slug(class_name)}.png")
        Image.fromarray(images[index], mode="L").save(path)
        skipped = int(np.sum((labels[:index] == k)))
        print(f"{path}: {class_name}, test image {index} ({skipped} earlier {class_name} images skipped)")


if __name__ == "__main__":
    main()
