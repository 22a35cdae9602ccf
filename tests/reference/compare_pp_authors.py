#!/usr/bin/python3
"""Compare the PolaPP reference (pola_pp.py) with the authors' model, both in float64.

The authors' file is NOT in this repository: take `polaformer++/models/pola.py` from
github:ZacharyMeng/PolaFormerPP and pass its path, e.g.

  git -C <mirror> show HEAD:polaformer++/models/pola.py > /tmp/polapp_authors/pola.py
  OMP_NUM_THREADS=1 nice -n 19 /usr/bin/python3 tests/reference/compare_pp_authors.py \
      --authors /tmp/polapp_authors/pola.py [--case pola_pp_b0:224x224 --case pola_pp_b2:65x97 ...]

Their imports of timm, fvcore and einops are satisfied by stand-ins written to a temporary
directory (DropPath = identity, as at inference; trunc_normal_, register_model, _cfg; the fvcore
and einops names are imported but unused by the forward pass and raise if called).

Per case: one randomized state_dict (randomize.py) is loaded strictly into both models; logits
and intermediates are compared as max|a - b| / max|b| (b = the authors'): the stem output, every
block, every stage's features before downsampling and after it. Then the two fail
demonstrations on the same case: the reference with RoPE on the denominator too
(trap pp_rope_denominator), and the reference loaded with the checkpoint's EMA weights instead of
the raw ones (pola_pp_checkpoint.ema_state_dict), each against the authors' logits.
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pola_pp_checkpoint import ema_state_dict  # noqa: E402
from polaformer_ref import build_model, get_config, run  # noqa: E402
from randomize import random_input, randomize  # noqa: E402

STAND_INS = {
    "timm/__init__.py": "",
    "timm/models/__init__.py": "",
    "timm/models/layers.py": (
        "import torch\n"
        "class DropPath(torch.nn.Identity):\n"
        "    def __init__(self, drop_prob=0.0):\n"
        "        super().__init__()\n"
        "def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):\n"
        "    with torch.no_grad():\n"
        "        return tensor.normal_(mean, std).clamp_(mean + a * std, mean + b * std)\n"),
    "timm/models/registry.py": "def register_model(fn):\n    return fn\n",
    "timm/models/vision_transformer.py": "def _cfg(**kwargs):\n    return dict(kwargs)\n",
    "fvcore/__init__.py": "",
    "fvcore/nn/__init__.py": (
        "def FlopCountAnalysis(*a, **k):\n    raise NotImplementedError('stand-in')\n"
        "def flop_count_table(*a, **k):\n    raise NotImplementedError('stand-in')\n"),
    "einops/__init__.py": "def rearrange(*a, **k):\n    raise NotImplementedError('stand-in')\n",
    "einops/layers/__init__.py": "",
    "einops/layers/torch.py": (
        "import torch\n"
        "class Rearrange(torch.nn.Module):\n"
        "    def __init__(self, *a, **k):\n"
        "        raise NotImplementedError('stand-in')\n"),
}


def load_authors_module(path, stand_in_dir):
    for rel, text in STAND_INS.items():
        full = os.path.join(stand_in_dir, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    sys.path.insert(0, stand_in_dir)
    spec = importlib.util.spec_from_file_location("authors_pola", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max()).item()


def authors_run(model, x):
    """Logits and intermediates named like the reference's dumps (tokens (B, N, C))."""
    dumps = {}

    def keep(name):
        def hook(_module, _inputs, output):
            dumps[name] = output.detach().flatten(2).transpose(1, 2).clone()
        return hook

    def keep_input(name):
        def hook(_module, inputs):
            dumps[name] = inputs[0].detach().flatten(2).transpose(1, 2).clone()
        return hook

    handles = [model.patch_embed.register_forward_hook(keep("patch_embed"))]
    for i, layer in enumerate(model.layers):
        for j, block in enumerate(layer.blocks):
            handles.append(block.register_forward_hook(keep(f"layers.{i}.blocks.{j}")))
        if layer.downsample is not None:
            handles.append(layer.downsample.register_forward_pre_hook(keep_input(f"layers.{i}.features")))
            handles.append(layer.downsample.register_forward_hook(keep(f"layers.{i}.downsample")))
        else:
            handles.append(layer.register_forward_hook(keep(f"layers.{i}.features")))
    try:
        with torch.no_grad():
            logits = model(x)
    finally:
        for h in handles:
            h.remove()
    return logits, dumps


def compare_case(authors, arch, size, seed, batch):
    cfg = get_config(arch)
    ref = build_model(cfg)
    randomize(ref, seed)
    state = ref.state_dict()
    theirs = getattr(authors, "POLA_b" + arch.rsplit("_b", 1)[1])()
    theirs.load_state_dict(state, strict=True)            # same keys, shapes and buffers
    theirs = theirs.double().eval()
    x = random_input(cfg, batch, seed, size)
    t0 = time.time()
    mine, dumps = run(ref, x, dump=True)
    t1 = time.time()
    their_logits, their_dumps = authors_run(theirs, x.double())
    t2 = time.time()
    common = [k for k in their_dumps if k in dumps]
    assert len(common) == len(their_dumps), sorted(set(their_dumps) - set(dumps))
    inter = {k: rel(dumps[k], their_dumps[k]) for k in common}
    worst = max(inter, key=inter.get)
    stage = {k: v for k, v in inter.items() if k.endswith(".features")}
    out = {
        "logits": rel(mine, their_logits), "intermediates": len(common),
        "worst_intermediate": (worst, inter[worst]), "stages": stage,
        "max_logit": their_logits.abs().max().item(), "t_ref": t1 - t0, "t_authors": t2 - t1,
    }
    # Fail demonstrations, against the authors' logits.
    out["trap_rope_denominator"] = rel(run(ref, x, traps=["pp_rope_denominator"])[0], their_logits)
    ref.load_state_dict(ema_state_dict(ref, seed))
    out["ema_instead_of_raw"] = rel(run(ref, x)[0], their_logits)
    # The authors' model in float32 (their own precision) for scale.
    out["authors_float32"] = rel(theirs.float()(x).detach(), their_logits)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--authors", required=True, help="path to the authors' polaformer++/models/pola.py")
    ap.add_argument("--case", action="append", default=[],
                    help="ARCH:HxW (default: pola_pp_b0:224x224, pola_pp_b0:77x50, "
                         "pola_pp_b2:224x224, pola_pp_b2:65x97, pola_pp_b4:96x80)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cases = args.case or ["pola_pp_b0:224x224", "pola_pp_b0:77x50", "pola_pp_b2:224x224",
                          "pola_pp_b2:65x97", "pola_pp_b4:96x80"]
    worst_logits = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        authors = load_authors_module(args.authors, tmp)
        for case in cases:
            arch, size = case.split(":")
            h, w = (int(t) for t in size.split("x"))
            r = compare_case(authors, arch, (h, w), args.seed, args.batch)
            worst_logits = max(worst_logits, r["logits"])
            stages = " ".join(f"{v:.1e}" for v in r["stages"].values())
            print(f"{arch} {h}x{w} batch {args.batch} seed {args.seed}: logits rel {r['logits']:.2e} "
                  f"(max|logit| {r['max_logit']:.2f}); {r['intermediates']} intermediates, worst "
                  f"{r['worst_intermediate'][1]:.2e} ({r['worst_intermediate'][0]}); stage features {stages}; "
                  f"[ref {r['t_ref']:.1f}s, authors {r['t_authors']:.1f}s]")
            print(f"    fail demos vs the authors: RoPE on the denominator {r['trap_rope_denominator']:.2e}, "
                  f"EMA weights for raw {r['ema_instead_of_raw']:.2e}; "
                  f"(authors' float32 vs float64: {r['authors_float32']:.1e})", flush=True)
    print(f"worst logits rel diff {worst_logits:.2e}")
    sys.exit(0 if worst_logits < 1e-12 else 1)


if __name__ == "__main__":
    main()
