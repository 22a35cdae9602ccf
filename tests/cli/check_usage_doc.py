#!/usr/bin/python3
"""Runs the examples of README.md, so the documentation cannot drift from the tools.

Fenced blocks whose info string is `sh test` are run, in order, as one bash script
(`set -euo pipefail`) in a scratch directory that looks like the top of a built checkout:
`build` -> the build tree, `examples` -> the source's examples, `models` -> the repository's
models (or, while those are not there yet, stand-ins with the same names made by the PyTorch
reference), with the build's `pola` first on PATH. Blocks `c test FILE` / `cpp test FILE` are
written to FILE first, so the shell blocks can compile them. Plain `sh` blocks are shown only.

  /usr/bin/python3 check_usage_doc.py --doc README.md --build BUILD --source SRC --pola PATH [--keep DIR]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)(?: +(.*))?$")
MODELS = ("fashion_pola_pvt", "fashion_pola_swin")
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]


def fenced_blocks(path):
    """[(line number, language, [words after it], text)] of every fenced block."""
    blocks, current = [], None
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            m = FENCE.match(line.rstrip("\n"))
            if current is None and m and m.group(1):
                current = (number, m.group(1), (m.group(2) or "").split(), [])
            elif current is not None and line.rstrip("\n") == "```":
                blocks.append((current[0], current[1], current[2], "".join(current[3])))
                current = None
            elif current is not None:
                current[3].append(line)
    if current is not None:
        sys.exit(f"{path}:{current[0]}: unterminated code block")
    return blocks


def stand_in_models(models_dir):
    """Small random models and sample images with the shipped names, for a checkout where
    models/ is not there yet. Their answers are meaningless; the commands still run."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    import numpy as np
    from PIL import Image
    from export_model import export_model
    from make_case import build_case_model

    preprocess = {"input_size": 32, "resize": 32, "crop": 32, "interpolation": "bicubic", "mean": [0.29],
                  "std": [0.35], "channels": 1}
    common = dict(img_size=32, in_chans=1, num_classes=10, alpha=4, kernel_size=5)
    configs = {
        "fashion_pola_pvt": dict(common, family="pvt", embed_dims=[16, 32, 48, 64], depths=[1, 1, 1, 1],
                                 num_heads=[1, 2, 2, 4], mlp_ratios=[2, 2, 2, 2], attn_types=["L"] * 4,
                                 patch_sizes=[4, 2, 2, 2], sr_ratios=[1, 1, 1, 1]),
        "fashion_pola_swin": dict(common, family="swin", embed_dims=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                                  num_heads=[1, 2, 4, 4], mlp_ratios=[2, 2, 2, 2], attn_types=["L", "L", "S", "S"],
                                  patch_size=4, window_size=56, window_size_softmax=7),
    }
    os.makedirs(os.path.join(models_dir, "samples"), exist_ok=True)
    for name in MODELS:
        path = os.path.join(models_dir, f"{name}.pola")
        if not os.path.exists(path):
            model = build_case_model(configs[name], seed=7)
            export_model(path, model.state_dict(), configs[name], arch=name, preprocess=preprocess,
                         classes=FASHION_CLASSES)
    rng = np.random.default_rng(7)
    for k, c in enumerate(FASHION_CLASSES):
        slug = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in c.lower())
        Image.fromarray(rng.integers(0, 256, (28, 28), dtype=np.uint8), mode="L").save(
            os.path.join(models_dir, "samples", f"{k:04d}_{slug}.png"))


def main():
    ap = argparse.ArgumentParser()
    for a in ("--doc", "--build", "--source", "--pola"):
        ap.add_argument(a, required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    blocks = fenced_blocks(args.doc)
    with tempfile.TemporaryDirectory(prefix="pola_usage_doc_") as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        for name, target in (("build", args.build), ("examples", os.path.join(args.source, "examples")),
                             ("tests", os.path.join(args.source, "tests"))):
            if not os.path.lexists(os.path.join(work, name)):
                os.symlink(os.path.abspath(target), os.path.join(work, name))
        repo_models = os.path.join(args.source, "models")
        shipped = all(os.path.exists(os.path.join(repo_models, f"{m}.pola")) for m in MODELS) and \
            glob.glob(os.path.join(repo_models, "samples", "*.png"))
        if shipped:
            if not os.path.lexists(os.path.join(work, "models")):
                os.symlink(repo_models, os.path.join(work, "models"))
        else:
            print("models/ is not complete yet: using stand-in models and samples")
            stand_in_models(os.path.join(work, "models"))

        script = ["set -euo pipefail"]
        for line, lang, words, text in blocks:
            if words[:1] == ["test"] and lang in ("c", "cpp"):
                with open(os.path.join(work, words[1]), "w") as f:
                    f.write(text)
            elif words[:1] == ["test"] and lang == "sh":
                script += [f"echo '--- {os.path.basename(args.doc)}:{line}' >&2", text]
        ran = sum(1 for _, lang, words, _ in blocks if lang == "sh" and words[:1] == ["test"])
        env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(args.pola)) + os.pathsep + os.environ["PATH"])
        r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            sys.exit(f"FAIL: the block after the last '---' marker above exited {r.returncode}")
        print(f"ok   {ran} shell blocks of {args.doc} ran")


if __name__ == "__main__":
    main()
