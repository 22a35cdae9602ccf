"""Wrapped training checkpoint -> our model file, with Fashion-MNIST's preprocess and classes.

Uses tests/reference/export_model.py for the tensors and metadata. Its `arch` falls back to
"custom" for names that are not ImageNet presets; the model file may carry any arch string,
so we record the real name (fashion_pola_pvt / fashion_pola_swin) instead.

  /usr/bin/python3 training/export_fashion.py --checkpoint training/runs/fashion_pola_pvt.pth \
      --name fashion_pola_pvt --out models/fashion_pola_pvt.pola
"""
import argparse

import torch

import fashion_models  # noqa: F401  (puts tests/reference on sys.path)
import model_integrity
from export_model import export_metadata, export_tensors
from fashion_data import CLASSES
from fashion_models import PREPROCESS, config_for


def export_checkpoint(checkpoint_path, name, out_path):
    ckpt = torch.load(checkpoint_path, map_location="cpu")  # our own training output
    state = ckpt["model"] if isinstance(ckpt, dict) and "model" in ckpt else ckpt
    cfg = config_for(name)
    metadata = export_metadata(cfg, arch=name, preprocess=PREPROCESS, classes=CLASSES)
    metadata["arch"] = name
    tensors = export_tensors(state)
    model_integrity.save_model_file(out_path, tensors, metadata)
    return len(tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--name", required=True, choices=sorted(fashion_models.CONFIGS))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n = export_checkpoint(args.checkpoint, args.name, args.out)
    print(f"wrote {args.out}: {n} tensors")


if __name__ == "__main__":
    main()
