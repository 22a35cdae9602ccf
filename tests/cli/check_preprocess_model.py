#!/usr/bin/python3
"""`pola preprocess --model M IMAGE -o X.npy` applies the model file's own preprocessing.

Two models that differ only in their metadata mean/std (the second made by `pola convert --mean
--std`) must give, for the same image:
  - a uniform-colour image: exactly (value / 255 - mean) / std per channel, computed here from the
    mean and std read out of each model file (resizing and cropping a uniform image changes
    nothing, so this is the whole pipeline by hand);
  - a photo: tensors related by x_b = (x_a * std_a + mean_a - mean_b) / std_b, and different;
and a wrong model file or --model combined with --spec/--size exits 1 naming the problem.

  /usr/bin/python3 check_preprocess_model.py --pola build/apps/pola [--keep DIR]
"""
import json
import os
import sys

import numpy as np
import skimage.io

from cli_fixtures import check, exit_status, fixture_work, pola

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import safetensors_io  # noqa: E402  (independent reader: struct + json + numpy)

COLOUR = (200, 100, 50)  # any RGB; distinct per channel so a channel swap shows


def preprocess_of(path):
    return json.loads(safetensors_io.load_file(path)[1]["preprocess"])


def per_channel(values):
    return np.asarray(values, np.float64).reshape(1, -1, 1, 1)


def preprocessed(args, model, image, out):
    r = pola(args, "preprocess", "--model", model, image, "-o", out)
    check(r.returncode == 0, f"pola preprocess --model {os.path.basename(model)} {os.path.basename(image)} exits 0"
                             + ("" if r.returncode == 0 else f" (exit {r.returncode}: {r.stderr.strip()[:300]})"))
    return np.load(out).astype(np.float64) if r.returncode == 0 else None


def main():
    with fixture_work("pola_preprocess_model_") as (args, work, f):
        model_a = f["model"]
        model_b = os.path.join(work, "other_norm.pola")
        r = pola(args, "convert", model_a, "-o", model_b, "--mean", "0.2,0.3,0.4", "--std", "0.5,0.25,0.125")
        if r.returncode != 0:
            sys.exit(f"FAIL: pola convert --mean --std: exit {r.returncode}\n{r.stderr}")
        pre_a, pre_b = preprocess_of(model_a), preprocess_of(model_b)
        check(pre_a["mean"] != pre_b["mean"] and pre_a["std"] != pre_b["std"], "the two models' mean/std differ")
        crop = pre_a["crop"]

        uniform = os.path.join(work, "uniform.png")
        skimage.io.imsave(uniform, np.broadcast_to(np.uint8(COLOUR), (61, 97, 3)).copy(), check_contrast=False)
        for name, model, pre in (("A", model_a, pre_a), ("B", model_b, pre_b)):
            x = preprocessed(args, model, uniform, os.path.join(work, f"uniform_{name}.npy"))
            if x is None:
                continue
            want = np.broadcast_to((per_channel(COLOUR) / 255 - per_channel(pre["mean"])) / per_channel(pre["std"]),
                                   (1, 3, crop, crop))
            check(x.shape == want.shape and np.abs(x - want).max() < 1e-5,
                  f"model {name}: uniform image = (value/255 - mean)/std of its metadata"
                  + (f" (got {x.shape}, {x.reshape(3, -1)[:, 0]}, want {want.reshape(3, -1)[:, 0]})"
                     if x.shape != want.shape or np.abs(x - want).max() >= 1e-5 else ""))

        xa = preprocessed(args, model_a, f["photo"], os.path.join(work, "photo_A.npy"))
        xb = preprocessed(args, model_b, f["photo"], os.path.join(work, "photo_B.npy"))
        if xa is not None and xb is not None:
            want_b = (xa * per_channel(pre_a["std"]) + per_channel(pre_a["mean"]) - per_channel(pre_b["mean"])) \
                / per_channel(pre_b["std"])
            check(np.abs(xb - want_b).max() < 1e-4, "photo: model B's tensor is model A's renormalized with B's mean/std")
            check(np.abs(xb - xa).max() > 0.1, "photo: the two models give different tensors")

        out = os.path.join(work, "x.npy")
        for why, argv, words in [
            ("missing model", ["--model", f["missing"], f["photo"]], [f["missing"]]),
            ("random bytes as model", ["--model", f["random"], f["photo"]], [f["random"]]),
            ("--model with --size", ["--model", model_a, "--size", "72", f["photo"]], ["--model", "--size", "combined"]),
            ("--model with --spec", ["--model", model_a, "--spec", json.dumps(pre_a), f["photo"]], ["--model", "--spec", "combined"]),
        ]:
            r = pola(args, "preprocess", *argv, "-o", out)
            ok = r.returncode == 1 and all(w in r.stderr for w in words) and "internal error" not in r.stderr
            check(ok, f"refused: {why}" + ("" if ok else f" (exit {r.returncode}: {r.stderr.strip()[:300]})"))
    if exit_status():
        sys.exit(1)
    print("all preprocess --model checks passed")


if __name__ == "__main__":
    main()
