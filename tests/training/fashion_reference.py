"""The PyTorch side of the shipped Fashion-MNIST models' tests.

Written independently of training/: the IDX reader and the preprocessing here follow only the
model file's own `preprocess` metadata (FORMAT.md), so a model whose metadata does not describe
how it was trained would show up as an accuracy drop against its training log, and an engine
that preprocesses differently would show up as disagreement.
"""
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "reference"))

from export_model import read_model_file  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"   # Debian package dataset-fashion-mnist
MODELS = [os.path.join(REPO, "models", f"fashion_pola_{family}.pola") for family in ("pvt", "swin")]
RECOMPUTED_BUFFERS = ("relative_position_index", "attn_mask")


def read_idx_u8(path):
    with gzip.open(path, "rb") as f:
        blob = f.read()
    _, kind, ndim = struct.unpack(">HBB", blob[:4])
    assert kind == 0x08, f"{path}: not unsigned bytes"
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    return np.frombuffer(blob, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def test_split(limit=None):
    """First `limit` test images (uint8 (n, 28, 28)) and labels: the deterministic CI sample."""
    images = read_idx_u8(os.path.join(DATA_DIR, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx_u8(os.path.join(DATA_DIR, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    n = len(labels) if limit is None else limit
    return images[:n], labels[:n]


def png_roundtrip(pixels):
    """The pixels a PNG file of this grey image holds, through PIL's encoder and decoder."""
    buf = io.BytesIO()
    Image.fromarray(pixels, mode="L").save(buf, format="PNG")
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("L"))


def preprocess_pil(img, spec):
    """FORMAT.md `preprocess` on a PIL image, the torchvision way: convert, square bicubic resize,
    center crop (torchvision's rounding), ToTensor (/255), Normalize; float32 (C, H, W)."""
    img = img.convert("L" if spec["channels"] == 1 else "RGB")
    img = img.resize((spec["resize"], spec["resize"]), Image.BICUBIC)
    top = int(round((spec["resize"] - spec["crop"]) / 2.0))
    img = img.crop((top, top, top + spec["crop"], top + spec["crop"]))
    x = np.asarray(img, dtype=np.uint8).astype(np.float32) / np.float32(255)
    x = x.reshape(spec["crop"], spec["crop"], spec["channels"]).transpose(2, 0, 1)
    mean = np.asarray(spec["mean"], np.float32)[:, None, None]
    std = np.asarray(spec["std"], np.float32)[:, None, None]
    return (x - mean) / std


def preprocess_pixels(images_u8, spec):
    return np.stack([preprocess_pil(Image.fromarray(p, mode="L"), spec) for p in images_u8])


class ShippedModel:
    """A .pola file read back with safetensors_io and run by the PyTorch reference."""

    def __init__(self, path):
        self.path = path
        tensors, self.config, meta = read_model_file(path)
        self.arch = meta["arch"]
        self.preprocess = json.loads(meta["preprocess"])
        self.classes = json.loads(meta["classes"])
        self.model = build_model(self.config)
        missing, unexpected = self.model.load_state_dict(
            {k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
        assert not unexpected, f"{path}: tensors the reference does not know: {unexpected}"
        bad = [k for k in missing if k.rsplit(".", 1)[-1] not in RECOMPUTED_BUFFERS]
        assert not bad, f"{path}: tensors missing from the file: {bad}"

    def logits(self, x, batch=250):
        """float64 reference logits (the precision oracle) for float32 NCHW inputs."""
        out = [run(self.model, torch.from_numpy(x[i:i + batch]))[0] for i in range(0, len(x), batch)]
        return torch.cat(out).numpy()


def engine_logits(pola, model_path, x, threads=2, batch=2000):
    """`pola run` logits, in chunks (pola run takes at most 4096 images per call)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(0, len(x), batch):
            np.save(os.path.join(tmp, "x.npy"), np.ascontiguousarray(x[i:i + batch], np.float32))
            subprocess.run([pola, "run", "--model", model_path, "--input", os.path.join(tmp, "x.npy"),
                            "--output", os.path.join(tmp, "y.npy"), "--threads", str(threads)], check=True)
            out.append(np.load(os.path.join(tmp, "y.npy")))
    return np.concatenate(out)


def top_k_hits(logits, labels, k):
    """Whether each label is among the k highest logits (stable order: lower index wins ties)."""
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return (order == labels[:, None]).any(axis=1)


def slug(class_name):
    """File-name form of a class name: 'T-shirt/top' -> 't-shirt-top', 'Ankle boot' -> 'ankle-boot'."""
    return "".join(c if c.isalnum() or c == "-" else "-" for c in class_name.lower())
