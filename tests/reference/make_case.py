#!/usr/bin/python3
"""Generate one test case: a random model file, a random input and the reference outputs.

  /usr/bin/python3 make_case.py (--arch NAME | --config JSON_OR_FILE) --seed S --batch B --out DIR
                                [--trap FLAG]... [--dump] [--checkpoints wrapped,bare,safetensors]
                                [--rand '{"residual_gain": 0.03}'] [--float32]

Writes DIR/model.pola, DIR/input.npy (float32 NCHW), DIR/logits.npy (float32 (B, classes)),
DIR/case.json (everything needed to replay the case), with --dump DIR/dump/<name>.npy for every
named intermediate, and with --checkpoints the requested torch.save / safetensors copies.
The reference runs in float64 (the precision oracle) unless --float32; outputs are stored as
float32. --trap makes the *reference* commit a documented mistake (traps.py); the model file
is the same either way.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from export_model import export_model  # noqa: E402
from pola_config import PRESETS, REDUCED, get_config, load_config_arg, validate_config  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402
from randomize import randomize, random_input  # noqa: E402
from save_checkpoint import CHECKPOINT_FORMS, save_checkpoints  # noqa: E402
from traps import TRAPS, check_traps  # noqa: E402


def build_case_model(cfg, seed, rand_options=None):
    model = build_model(cfg)
    randomize(model, seed, **(rand_options or {}))
    return model


def write_outputs(out_dir, logits, dumps=None):
    np.save(os.path.join(out_dir, "logits.npy"), logits.to(torch.float32).numpy())
    if dumps is not None:
        dump_dir = os.path.join(out_dir, "dump")
        os.makedirs(dump_dir, exist_ok=True)
        for name, tensor in dumps.items():
            np.save(os.path.join(dump_dir, f"{name}.npy"), tensor.to(torch.float32).numpy())


def make_case(out_dir, cfg, arch="custom", seed=0, batch=1, traps=(), dump=False, rand_options=None,
              checkpoints=(), dtype=torch.float64, size=None):
    """Build, randomize, export and run one case (input of size = (H, W), default img_size).
    Returns (model, input tensor, logits, dumps)."""
    validate_config(cfg)
    traps = check_traps(traps)
    os.makedirs(out_dir, exist_ok=True)
    model = build_case_model(cfg, seed, rand_options)
    export_model(os.path.join(out_dir, "model.pola"), model.state_dict(), cfg, arch=arch)
    images = random_input(cfg, batch, seed, size)
    np.save(os.path.join(out_dir, "input.npy"), images.numpy())
    logits, dumps = run(model, images, traps=traps, dump=dump, dtype=dtype)
    write_outputs(out_dir, logits, dumps)
    save_checkpoints(out_dir, model, cfg, arch, checkpoints, seed)
    with open(os.path.join(out_dir, "case.json"), "w") as f:
        json.dump({"arch": arch, "config": cfg, "seed": seed, "batch": batch, "traps": sorted(traps),
                   "rand_options": rand_options or {}, "dtype": str(dtype),
                   "size": list(images.shape[-2:])}, f, indent=1)
    return model, images, logits, dumps


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--arch", help=f"one of {sorted(PRESETS) + sorted(REDUCED)}")
    src.add_argument("--config", help="config JSON (FORMAT.md keys) inline or a file path")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trap", action="append", default=[], choices=sorted(TRAPS),
                    help="reference commits this mistake (repeatable)")
    ap.add_argument("--dump", action="store_true", help="also write dump/<name>.npy intermediates")
    ap.add_argument("--checkpoints", default="",
                    help=f"comma list of {sorted(CHECKPOINT_FORMS)} (or 'all') to write as well")
    ap.add_argument("--rand", default="{}", help="randomization options as JSON (see randomize.py)")
    ap.add_argument("--float32", action="store_true", help="run the reference in float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--size", help="input HxW (default: the model's img_size)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.arch:
        cfg, arch = get_config(args.arch), args.arch
    else:
        cfg, arch = load_config_arg(args.config), "custom"
    forms = [f for f in args.checkpoints.split(",") if f]
    if forms == ["all"]:
        forms = list(CHECKPOINT_FORMS)
    for f in forms:
        if f not in CHECKPOINT_FORMS:
            sys.exit(f"unknown checkpoint form {f!r}; known: {sorted(CHECKPOINT_FORMS)}")
    _, _, logits, dumps = make_case(args.out, cfg, arch=arch, seed=args.seed, batch=args.batch,
                                    traps=args.trap, dump=args.dump, rand_options=json.loads(args.rand),
                                    checkpoints=forms,
                                    dtype=torch.float32 if args.float32 else torch.float64,
                                    size=tuple(int(v) for v in args.size.split("x")) if args.size else None)
    print(f"{args.out}: {arch} seed {args.seed} batch {args.batch} traps {args.trap or 'none'} "
          f"-> logits {tuple(logits.shape)}, argmax {logits.argmax(-1).tolist()}"
          + (f", {len(dumps)} intermediates" if dumps else ""))


if __name__ == "__main__":
    main()
