#!/usr/bin/python3
"""PolaFormer++'s dense convs (stem, downsampling) run in bf16 in a bf16 plan, and its logits stay close.

  check_bf16_pp_convs.py --pola build/apps/pola --workdir DIR [--arch reduced_pp_basic] [--tolerance 3e-2]

A randomized model, saved as the authors save it and `pola convert`ed (as parity_pp.py), F32 and
`--dtype bf16` files. `pola bench --precision bf16 --profile --json` must report bf16 for the
convs `patch_embed.proj.3`, `.6`, `patch_embed` and every `layers.i.downsample`, fp32 for the
first (3-channel) conv `patch_embed.proj.0`, and every fp32 plan's nodes fp32. `pola run
--precision bf16` must give logits within tolerance * max|fp32 logit| of fp32 on both files.
Skipped (exit 77) on a CPU without AMX-BF16 or AVX512-BF16.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "parity"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

from pola_pp_checkpoint import save_pp_checkpoint  # noqa: E402
from polaformer_ref import build_model, get_config  # noqa: E402
from precision_common import pola, skip_without_native_bf16  # noqa: E402
from randomize import random_input, randomize  # noqa: E402


def node_precisions(binary, model, precision):
    out = pola(binary, "bench", "-m", model, "--precision", precision, "--profile", "--json", "--runs", "1",
               "--warmup", "0", "--threads", "2").stdout
    return {n["node"]: n["precision"] for n in json.loads(out)["profile"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--arch", default="reduced_pp_basic")
    ap.add_argument("--tolerance", type=float, default=3e-2, help="of max|fp32 logit|")
    args = ap.parse_args()
    skip_without_native_bf16(args.pola)
    os.makedirs(args.workdir, exist_ok=True)
    cfg = get_config(args.arch)
    model = build_model(cfg)
    randomize(model, 1601)
    ckpt, inp = os.path.join(args.workdir, "model.pth"), os.path.join(args.workdir, "input.npy")
    save_pp_checkpoint(ckpt, model, args.arch, 1601)
    np.save(inp, random_input(cfg, 2, 1601).numpy())
    files = {"F32": os.path.join(args.workdir, "model.pola"), "BF16": os.path.join(args.workdir, "model_bf16.pola")}
    pola(args.pola, "convert", ckpt, "-o", files["F32"])
    pola(args.pola, "convert", ckpt, "-o", files["BF16"], "--dtype", "bf16")

    failures = []
    stages = len(cfg["depths"])
    want = {"patch_embed.proj.0": "fp32", "patch_embed.proj.3": "bf16", "patch_embed.proj.6": "bf16",
            "patch_embed": "bf16"}
    want.update({f"layers.{i}.downsample": "bf16" for i in range(stages - 1)})
    for label, path in files.items():
        got = node_precisions(args.pola, path, "bf16")
        for node, p in want.items():
            print(f"{label} file, bf16 plan: {node} runs {got.get(node, 'MISSING')}")
            if got.get(node) != p:
                failures.append(f"{label} file: {node} runs {got.get(node, 'nowhere')} in a bf16 plan, expected {p}")
        not_fp32 = sorted(n for n, p in node_precisions(args.pola, path, "fp32").items() if p != "fp32")
        if not_fp32:
            failures.append(f"{label} file: an fp32 plan has nodes in another precision: {not_fp32}")

        logits = {}
        for precision in ("fp32", "bf16"):
            out = os.path.join(args.workdir, f"{label}_{precision}.npy")
            pola(args.pola, "run", "-m", path, "-i", inp, "-o", out, "--precision", precision, "--threads", "2")
            logits[precision] = np.load(out)
        scale = float(np.abs(logits["fp32"]).max())
        err = float(np.abs(logits["bf16"] - logits["fp32"]).max()) / scale
        print(f"{label} file: bf16 max|logit - fp32| / max|fp32 logit| = {err:.2e}")
        if not err <= args.tolerance:
            failures.append(f"{label} file: bf16 relative logit error {err:.3e} > {args.tolerance:.3e}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
