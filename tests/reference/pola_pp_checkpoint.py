#!/usr/bin/python3
"""PolaFormer++ checkpoints in the authors' layout (SPEC-polaformerpp 3.3), for converter tests.

One torch.save file holding
  model           raw weights (no `module.` prefix)
  state_dict_ema  EMA weights, same keys; every entry blended, buffers included (T14)
  optimizer, lr_scheduler, max_accuracy, max_accuracy_e, epoch
  config          a yacs CfgNode (MODEL.TYPE polabX, MODEL.NAME pola_bX_patch4_224, ...)

The config pickles as `yacs.config.CfgNode`, as the authors' files do, so loading the whole file
needs that class importable. Without yacs installed, `yacs_stand_in()` provides a minimal module
for the duration of a save or load (and `load_pp_checkpoint` uses it).

The EMA weights are the raw weights blended with a second random draw (ema = (1-b)*raw + b*other,
b = 0.05 by default), so the two copies give clearly different logits: a converter that picks the
wrong copy fails a parity test.

  /usr/bin/python3 pola_pp_checkpoint.py --arch pola_pp_b0 --seed 1 --out /tmp/pp/max_ema_acc.pth \
      [--logits --batch 2 --size 224 224]
writes the checkpoint and, with --logits, input.npy, logits_model.npy and logits_ema.npy beside it
(float64 reference logits of the raw and of the EMA weights).
"""
import argparse
import contextlib
import importlib
import os
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pola_pp_config import PP_TYPES  # noqa: E402

YACS_MODULE = "yacs.config"


class CfgNode(dict):
    """Stand-in for yacs.config.CfgNode: a dict with attribute access and the same instance
    state (__immutable__, __deprecated_keys__, __renamed_keys__, __new_allowed__)."""

    def __init__(self, init_dict=None, key_list=None, new_allowed=False):
        super().__init__()
        for k, v in (init_dict or {}).items():
            self[k] = CfgNode(v) if isinstance(v, dict) else v
        self.__dict__["__immutable__"] = False
        self.__dict__["__deprecated_keys__"] = set()
        self.__dict__["__renamed_keys__"] = {}
        self.__dict__["__new_allowed__"] = new_allowed

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def freeze(self):
        self.__dict__["__immutable__"] = True
        for v in self.values():
            if isinstance(v, CfgNode):
                v.freeze()
        return self


CfgNode.__module__ = YACS_MODULE
CfgNode.__qualname__ = "CfgNode"


def _real_yacs():
    try:
        return importlib.import_module(YACS_MODULE).CfgNode
    except ImportError:
        return None


@contextlib.contextmanager
def yacs_stand_in():
    """Make `yacs.config.CfgNode` importable (our stand-in) unless real yacs is installed."""
    if _real_yacs() is not None:
        yield _real_yacs()
        return
    saved = {k: sys.modules.get(k) for k in ("yacs", YACS_MODULE)}
    pkg, mod = types.ModuleType("yacs"), types.ModuleType(YACS_MODULE)
    mod.CfgNode = CfgNode
    pkg.config = mod
    sys.modules["yacs"], sys.modules[YACS_MODULE] = pkg, mod
    try:
        yield CfgNode
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def training_config(cls, cfg, arch):
    """A config shaped like the authors' config.py after their pola_bX.yaml was merged."""
    model_type, model_name = PP_TYPES.get(arch, ("polapp_custom", arch))
    node = cls({
        "BASE": [""],
        "DATA": {"BATCH_SIZE": 256, "DATA_PATH": "", "DATASET": "imagenet", "IMG_SIZE": cfg["img_size"],
                 "INTERPOLATION": "bicubic", "ZIP_MODE": False, "CACHE_MODE": "part",
                 "PIN_MEMORY": True, "NUM_WORKERS": 8},
        "MODEL": {"TYPE": model_type, "NAME": model_name, "RESUME": "", "NUM_CLASSES": cfg["num_classes"],
                  "DROP_RATE": 0.0, "DROP_PATH_RATE": 0.1, "LABEL_SMOOTHING": 0.1},
        "TRAIN": {"START_EPOCH": 0, "EPOCHS": 300, "WARMUP_EPOCHS": 20, "WEIGHT_DECAY": 0.05,
                  "BASE_LR": 5e-4, "WARMUP_LR": 5e-7, "MIN_LR": 1e-7, "CLIP_GRAD": 5.0,
                  "AUTO_RESUME": True, "USE_CHECKPOINT": False,
                  "LR_SCHEDULER": {"NAME": "cosine", "DECAY_EPOCHS": 30, "DECAY_RATE": 0.1},
                  "OPTIMIZER": {"NAME": "adamw", "EPS": 1e-8, "BETAS": (0.9, 0.999), "MOMENTUM": 0.9}},
        "AUG": {"MIXUP": 0.8, "CUTMIX": 1.0, "CUTMIX_MINMAX": None},
        "TEST": {"CROP": True},
        "AMP": False, "OUTPUT": f"output/{model_name}/default", "TAG": "default", "SAVE_FREQ": 1,
        "PRINT_FREQ": 100, "SEED": 0, "EVAL_MODE": False, "THROUGHPUT_MODE": False, "LOCAL_RANK": 0,
    })
    node.freeze()
    return node


def ema_state_dict(model, seed, blend=0.05):
    """EMA-like weights: every floating entry (buffers included) blended towards a second random
    draw of the same architecture; num_batches_tracked lags, as an EMA of an int counter does."""
    from polaformer_ref import build_model
    from randomize import randomize
    other = build_model(model.cfg)
    randomize(other, int(seed) + 1000)
    raw, far = model.state_dict(), other.state_dict()
    ema = {}
    for k, v in raw.items():
        if v.dtype.is_floating_point:
            mixed = (1.0 - blend) * v.double() + blend * far[k].double()
            ema[k] = mixed.to(v.dtype)
        else:
            ema[k] = (v.double() * 0.9999).floor().to(v.dtype)
    return ema


def save_pp_checkpoint(path, model, arch, seed=0, epoch=300, blend=0.05):
    """Write the authors' layout; returns the (raw, ema) state dicts written."""
    from save_checkpoint import _optimizer_state
    raw = {k: v.detach().clone() for k, v in model.state_dict().items()}
    ema = ema_state_dict(model, seed, blend)
    with yacs_stand_in() as cls:
        torch.save({
            "model": raw,
            "optimizer": _optimizer_state(model, seed),
            "lr_scheduler": {"last_epoch": epoch, "base_lrs": [5e-4], "t_initial": 300, "warmup_t": 20,
                             "_step_count": epoch + 1},
            "max_accuracy": 76.5,
            "max_accuracy_e": 76.9,
            "epoch": epoch,
            "config": training_config(cls, model.cfg, arch),
            "state_dict_ema": ema,
        }, path)
    return raw, ema


def load_pp_checkpoint(path):
    """torch.load of the whole file, with yacs.config.CfgNode resolvable."""
    with yacs_stand_in():
        return torch.load(path, map_location="cpu")


def main():
    from polaformer_ref import build_model, get_config, run
    from randomize import random_input, randomize
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", required=True, help="pola_pp_b0..b5 or reduced_pp_*")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="checkpoint path, e.g. .../max_ema_acc.pth")
    ap.add_argument("--blend", type=float, default=0.05)
    ap.add_argument("--logits", action="store_true", help="also write input.npy, logits_model.npy, logits_ema.npy")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, nargs=2, metavar=("H", "W"))
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import numpy as np
    cfg = get_config(args.arch)
    model = build_model(cfg)
    randomize(model, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    _, ema = save_pp_checkpoint(args.out, model, args.arch, args.seed, blend=args.blend)
    print(f"wrote {args.out}")
    if args.logits:
        out_dir = os.path.dirname(os.path.abspath(args.out))
        x = random_input(cfg, args.batch, args.seed, tuple(args.size) if args.size else None)
        np.save(os.path.join(out_dir, "input.npy"), x.numpy())
        np.save(os.path.join(out_dir, "logits_model.npy"), run(model, x)[0].numpy())
        model.load_state_dict(ema)
        np.save(os.path.join(out_dir, "logits_ema.npy"), run(model, x)[0].numpy())
        print(f"wrote input.npy, logits_model.npy, logits_ema.npy in {out_dir}")


if __name__ == "__main__":
    main()
