#!/usr/bin/python3
"""`pola eval` reports what PyTorch measures, on every input layout it accepts.

  test_eval_cli.py --pola build/apps/pola [--limit 1000]

For each shipped model, on the first --limit Fashion-MNIST test images:
  1. `pola eval --data <IDX dir> --split t10k --limit N --json --predictions P.csv` (the engine
     preprocesses the raw IDX pixels itself) reports top-1 / top-5 within 0.05 points of the
     PyTorch reference on PIL-preprocessed inputs, and its per-image top-1 agrees with PyTorch's
     on >= 99.9% of images;
  2. the same images written as PNGs into an ImageFolder tree give exactly the IDX run's
     predictions (same pixels, same pipeline), and so does a labels file naming classes;
  3. bad input (missing directory, wrong number of class folders) exits with status 1.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

import fashion_reference as fr
from test_agreement import MAX_ACCURACY_GAP, MIN_AGREEMENT


def pola_eval(pola, model, data, tmp, *extra):
    pred_path = os.path.join(tmp, "predictions.csv")
    out = subprocess.run([pola, "eval", "--model", model, "--data", data, "--json", "--predictions", pred_path,
                          "--threads", "2", *extra], check=True, capture_output=True, text=True)
    with open(pred_path) as f:
        rows = list(csv.DictReader(f))
    return json.loads(out.stdout), np.array([int(r["top1"]) for r in rows]), np.array([int(r["label"]) for r in rows])


def write_image_folder(root, images, labels, classes):
    """One folder per class whose sorted order is the class order (zero-padded index prefix)."""
    for k, name in enumerate(classes):
        os.makedirs(os.path.join(root, f"{k:02d}_{fr.slug(name)}"), exist_ok=True)
    for i, (pixels, label) in enumerate(zip(images, labels)):
        Image.fromarray(pixels, mode="L").save(os.path.join(root, f"{label:02d}_{fr.slug(classes[label])}",
                                                            f"{i:05d}.png"))


def check_model(pola, path, limit):
    failures = []
    model = fr.ShippedModel(path)
    images, labels = fr.test_split(limit)
    ref = model.logits(fr.preprocess_pixels(images, model.preprocess))
    ref_top1 = 100.0 * np.mean(ref.argmax(1) == labels)
    ref_top5 = 100.0 * np.mean(fr.top_k_hits(ref, labels, 5))
    with tempfile.TemporaryDirectory() as tmp:
        # 1. IDX pair.
        report, idx_pred, idx_labels = pola_eval(pola, path, fr.DATA_DIR, tmp, "--split", "t10k", "--limit", str(limit))
        agree = 100.0 * np.mean(idx_pred == ref.argmax(1))
        print(f"{model.arch}: pola eval top-1 {100 * report['top1_accuracy']:.2f}% top-5 {100 * report['topk_accuracy']:.2f}% | PyTorch top-1 "
              f"{ref_top1:.2f}% top-5 {ref_top5:.2f}% | agreement {agree:.2f}% | {report['images_per_second']:.0f} img/s")
        if report["images"] != limit or not np.array_equal(idx_labels, labels):
            failures.append(f"{model.arch}: eval saw {report['images']} images / other labels than the IDX files hold")
        if abs(100 * report["top1_accuracy"] - ref_top1) > MAX_ACCURACY_GAP or abs(100 * report["topk_accuracy"] - ref_top5) > MAX_ACCURACY_GAP:
            failures.append(f"{model.arch}: eval top-1/top-5 {100 * report['top1_accuracy']:.2f}/{100 * report['topk_accuracy']:.2f} vs "
                            f"PyTorch {ref_top1:.2f}/{ref_top5:.2f}")
        if agree < MIN_AGREEMENT:
            failures.append(f"{model.arch}: eval top-1 agrees with PyTorch on only {agree:.2f}%")
        if abs(100 * report["top1_accuracy"] - 100.0 * np.mean(idx_pred == labels)) > 1e-9:
            failures.append(f"{model.arch}: reported top-1 does not match its own predictions file")
        total_confused = sum(p["count"] for p in report["most_confused"])
        if total_confused > limit - report["correct_top1"]:
            failures.append(f"{model.arch}: confusion summary counts more errors than there are")

        # 2. The same pixels as PNG files: ImageFolder tree, then a labels file with class names.
        folder = os.path.join(tmp, "folder")
        write_image_folder(folder, images, labels, model.classes)
        _, folder_pred, folder_labels = pola_eval(pola, path, folder, tmp)
        # The tree lists images class by class; map back to test-set order through the file names.
        order = np.argsort(np.concatenate([np.flatnonzero(labels == k) for k in range(len(model.classes))]))
        if not (np.array_equal(folder_pred[order], idx_pred) and np.array_equal(folder_labels[order], labels)):
            failures.append(f"{model.arch}: ImageFolder predictions differ from the IDX run on the same pixels")
        labels_file = os.path.join(tmp, "labels.txt")
        subset = range(0, limit, 7)
        with open(labels_file, "w") as f:
            f.write("# path<TAB>class name\n")
            for i in subset:
                f.write(f"{labels[i]:02d}_{fr.slug(model.classes[labels[i]])}/{i:05d}.png\t{model.classes[labels[i]]}\n")
        _, list_pred, list_labels = pola_eval(pola, path, folder, tmp, "--labels", labels_file)
        if not (np.array_equal(list_pred, idx_pred[list(subset)]) and np.array_equal(list_labels, labels[list(subset)])):
            failures.append(f"{model.arch}: labels-file predictions differ from the IDX run")

        # 3. Bad input exits 1 with a message.
        os.makedirs(os.path.join(tmp, "two_classes", "a"))
        os.makedirs(os.path.join(tmp, "two_classes", "b"))
        for bad in (os.path.join(tmp, "missing"), os.path.join(tmp, "two_classes")):
            r = subprocess.run([pola, "eval", "--model", path, "--data", bad], capture_output=True, text=True)
            if r.returncode != 1 or "error" not in r.stderr:
                failures.append(f"{model.arch}: eval --data {bad} exited {r.returncode}: {r.stderr.strip()}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--models", nargs="+", default=fr.MODELS)
    args = ap.parse_args()
    torch.set_num_threads(2)
    failures = []
    for path in args.models:
        failures += check_model(args.pola, path, args.limit)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
