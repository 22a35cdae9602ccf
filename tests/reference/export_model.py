"""State dict + config -> our model file (weights/FORMAT.md): safetensors, F32 only, string metadata.

Recomputable buffers (relative_position_index, attn_mask) are dropped; PVT's unused norm.* is kept.
Usable as a library (export_model / write_model_file) or CLI:
  export_model.py --checkpoint CKPT.pth --arch pola_pvt_tiny --out M.pola   (trusted local files only)
"""
import argparse
import json

import numpy as np
import torch

import model_integrity
import safetensors_io
from pola_config import PRESETS, validate_config

RECOMPUTABLE_BUFFERS = ("relative_position_index", "attn_mask")


def default_preprocess(cfg):
    """FORMAT.md preprocess: resize to a square 256/224 * input, center crop (384: no crop)."""
    size = cfg["img_size"]
    resize = size if size >= 384 else int(round(size * 256 / 224))
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    if cfg["in_chans"] == 1:
        # Grey models: one statistic, the mean of ImageNet's three.
        mean, std = [sum(mean) / 3], [sum(std) / 3]
    return {"input_size": size, "resize": resize, "crop": size, "interpolation": "bicubic",
            "mean": mean, "std": std, "channels": cfg["in_chans"]}


def default_classes(cfg):
    return [f"class_{i}" for i in range(cfg["num_classes"])]


def export_tensors(state_dict):
    """{name: float32 numpy} with the recomputable buffers removed."""
    out = {}
    for name, value in state_dict.items():
        if name.rsplit(".", 1)[-1] in RECOMPUTABLE_BUFFERS:
            continue
        tensor = torch.as_tensor(value)
        if not tensor.is_floating_point():
            raise ValueError(f"{name}: non-float tensor {tensor.dtype} would be exported")
        out[name] = tensor.detach().cpu().to(torch.float32).numpy()
    return out


def export_metadata(cfg, arch=None, preprocess=None, classes=None):
    validate_config(cfg)
    classes = default_classes(cfg) if classes is None else list(classes)
    if len(classes) != cfg["num_classes"]:
        raise ValueError(f"{len(classes)} class names for {cfg['num_classes']} classes")
    return {
        "format": "polaformer",
        "format_version": "2",
        "arch": arch if arch in PRESETS else "custom",
        "config": json.dumps(cfg),
        "preprocess": json.dumps(preprocess or default_preprocess(cfg)),
        "classes": json.dumps(classes),
    }


def export_model(path, state_dict, cfg, arch=None, preprocess=None, classes=None):
    model_integrity.save_model_file(path, export_tensors(state_dict), export_metadata(cfg, arch, preprocess, classes))


def read_model_file(path):
    """(tensors, config, metadata) of a model file, with the metadata JSON decoded."""
    tensors, meta = safetensors_io.load_file(path)
    if meta.get("format") != "polaformer":
        raise ValueError(f"{path}: not a polaformer model file")
    return tensors, json.loads(meta["config"]), meta


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="torch.save file (wrapped or bare state dict)")
    ap.add_argument("--arch", help="preset name")
    ap.add_argument("--config", help="config JSON or file (instead of --arch)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    from pola_config import get_config, load_config_arg
    cfg = load_config_arg(args.config) if args.config else get_config(args.arch)
    ckpt = torch.load(args.checkpoint, map_location="cpu")  # our own test files only
    state = ckpt["model"] if isinstance(ckpt, dict) and "model" in ckpt else ckpt
    export_model(args.out, state, cfg, arch=args.arch)
    print(f"wrote {args.out}: {len(export_tensors(state))} tensors")


if __name__ == "__main__":
    main()
