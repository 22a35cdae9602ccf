#!/usr/bin/python3
"""`pola run` / `pola features` at input sizes other than the model's own.

The model is the CLI fixture (reduced_pvt_sr: 72 x 72, sides must be multiples of 8). Checks:
  - a size that is no multiple is refused (exit 1) with the nearest valid sizes and --pad named
    (an option of the command, not "pola --pad"), and for image files --size at the padded size;
  - --pad gives exactly what the same images padded with zeros at the bottom / right give;
  - `pola features` writes stage<i>.npy (NCHW, strides of the model) and pooled.npy, only the
    stages asked for, the same values whichever stages are asked for; image files at their own
    size (refused unless --pad), resized by --size, and one size per batch;
  - argument mistakes (--input and images, --size with --input, bad --stages) exit 1 with a message.
Values against the PyTorch reference are the parity tests' job (tests/parity, *_features cases).

  /usr/bin/python3 check_features.py --pola build/apps/pola [--keep DIR]
"""
import os
import re
import sys

import numpy as np

from cli_fixtures import check, exit_status, fixture_work, pola, pola_ok

def files(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def main():
    with fixture_work("pola_features_") as (args, work, f):
        rng = np.random.default_rng(21)
        odd = os.path.join(work, "odd.npy")          # 66 x 90: no multiple of 8
        x = rng.standard_normal((2, 3, 66, 90)).astype(np.float32)
        np.save(odd, x)
        padded = os.path.join(work, "padded.npy")    # the same, padded by hand to 72 x 96
        np.save(padded, np.pad(x, ((0, 0), (0, 0), (0, 6), (0, 6))))

        r = pola(args, "run", "-m", f["model"], "-i", odd, "-o", os.path.join(work, "l.npy"))
        check(r.returncode == 1, "run refuses 66x90 with exit 1")
        check(f"{odd}: input size 66x90" in r.stderr and "height 64 or 72" in r.stderr and
              "width 88 or 96" in r.stderr and "--pad" in r.stderr and "pola --pad" not in r.stderr,
              f"the message names the file, the nearest sizes and --pad: {r.stderr.strip()}")

        pola_ok(args, "run", "-m", f["model"], "-i", odd, "--pad", "-o", os.path.join(work, "l_pad.npy"))
        pola_ok(args, "run", "-m", f["model"], "-i", padded, "-o", os.path.join(work, "l_hand.npy"))
        a, b = np.load(os.path.join(work, "l_pad.npy")), np.load(os.path.join(work, "l_hand.npy"))
        check(a.shape == (2, 21) and np.array_equal(a, b), "run --pad = zeros at the bottom and right")

        all_dir = os.path.join(work, "all")
        pola_ok(args, "features", "-m", f["model"], "-i", odd, "--pad", "-o", all_dir)
        check(files(all_dir) == ["pooled.npy", "stage1.npy", "stage2.npy", "stage3.npy", "stage4.npy"],
              f"every stage and the pooled embedding by default: {files(all_dir)}")
        shapes = [np.load(os.path.join(all_dir, f"stage{i}.npy")).shape for i in range(1, 5)]
        check(shapes == [(2, 32, 18, 24), (2, 48, 18, 24), (2, 96, 18, 24), (2, 64, 9, 12)],
              f"NCHW stage shapes at 72x96 (patches 4,1,1,2): {shapes}")
        check(np.load(os.path.join(all_dir, "pooled.npy")).shape == (2, 64), "pooled (batch, channels)")
        check(all(np.load(os.path.join(all_dir, n)).dtype == np.float32 for n in files(all_dir)), "float32")

        one_dir = os.path.join(work, "one")
        pola_ok(args, "features", "-m", f["model"], "-i", padded, "--stages", "2", "-o", one_dir)
        check(files(one_dir) == ["stage2.npy"], f"--stages 2 writes stage2 only: {files(one_dir)}")
        check(np.array_equal(np.load(os.path.join(one_dir, "stage2.npy")), np.load(os.path.join(all_dir, "stage2.npy"))),
              "stage 2 alone equals stage 2 of the full run")
        pola_ok(args, "features", "-m", f["model"], "-i", padded, "--stages", "1", "--pooled", "-o", one_dir)
        check(np.array_equal(np.load(os.path.join(one_dir, "pooled.npy")), np.load(os.path.join(all_dir, "pooled.npy"))),
              "--pooled with stage 1 gives the same pooled embedding")

        auto_dir = os.path.join(work, "auto")  # bf16 where it is faster than fp32 on this CPU, else fp32
        pola_ok(args, "features", "-m", f["model"], "-i", padded, "--stages", "4", "--precision", "auto", "-o", auto_dir)
        a, b = np.load(os.path.join(auto_dir, "stage4.npy")), np.load(os.path.join(all_dir, "stage4.npy"))
        # auto is fp32 (then bit-equal) or bf16 (then within the bf16 gate of max|logit|, 3e-2, and
        # not equal: bf16 ran), as `pola --version` says it picks here.
        picked = re.search(r"precision auto = (\w+)", pola_ok(args, "--version").stdout).group(1)
        rel = np.abs(a - b).max() / np.abs(b).max()
        if picked == "fp32":
            check(a.shape == b.shape and np.array_equal(a, b), "--precision auto picks fp32 here: bit-equal features")
        else:
            check(a.shape == b.shape and 0 < rel <= 3e-2,
                  f"--precision auto picks bf16 here: features within 3e-2 of fp32's, not equal (rel {rel:.3g})")

        img_dir = os.path.join(work, "img")
        r = pola(args, "features", "-m", f["model"], f["photo"], "-o", img_dir)  # chelsea: 300 x 451
        check(r.returncode == 1 and "input size 300x451" in r.stderr, f"an image at its own size is checked: {r.stderr.strip()}")
        check("--size 304x456" in r.stderr and "--pad" in r.stderr and "pola --pad" not in r.stderr,
              f"... and the message offers --size 304x456 (the padded size) or --pad: {r.stderr.strip()}")
        pola_ok(args, "features", "-m", f["model"], f["photo"], "--pad", "--stages", "1", "-o", img_dir)
        check(np.load(os.path.join(img_dir, "stage1.npy")).shape == (1, 32, 76, 114), "--pad: 304x456 -> 76x114")
        pola_ok(args, "features", "-m", f["model"], f["photo"], f["photo2"], "--size", "64x96", "--stages", "4",
               "-o", img_dir)
        check(np.load(os.path.join(img_dir, "stage4.npy")).shape == (2, 64, 8, 12), "--size 64x96 for two images")
        r = pola(args, "features", "-m", f["model"], f["photo"], f["photo2"], "--pad", "-o", img_dir)
        check(r.returncode == 1 and "one size" in r.stderr, f"images of different sizes need --size: {r.stderr.strip()}")

        for argv, want in [
            (["-i", padded, f["photo"]], "either --input"),
            (["-i", padded, "--size", "64x96"], "--size resizes image files"),
            (["-i", padded, "--stages", "0"], "--stages 0"),
            (["-i", padded, "--stages", "2,2"], "listed twice"),
            ([f["photo"], "--size", "64by96"], "--size 64by96"),
        ]:
            r = pola(args, "features", "-m", f["model"], *argv, "-o", os.path.join(work, "bad"))
            check(r.returncode == 1 and want in r.stderr, f"features {' '.join(argv[-2:])}: exit 1, '{want}'")
    if exit_status():
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
