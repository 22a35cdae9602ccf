"""Fashion-MNIST from the Debian package (IDX files), preprocessed exactly as the model file says.

The pipeline is FORMAT.md's `preprocess` with channels 1: the 28x28 grey image goes through
PIL's bicubic resize to `resize` x `resize`, a center crop to `crop`, /255 and normalisation.
The engine's preprocessing replicates PIL byte for byte, so doing the resize with PIL here
(and nowhere else) is what makes the shipped model see in C++ what it saw in training.
"""
import gzip
import os
import struct

import numpy as np
from PIL import Image

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
SPLITS = ("train", "t10k")


def read_idx(path):
    """numpy uint8 array of an IDX file (gzip or plain): magic 0 0 0x08 ndim, big-endian dims."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        blob = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", blob[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(f">{ndim}I", blob[4:4 + 4 * ndim])
    data = np.frombuffer(blob, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes for dims {dims}")
    return data.reshape(dims)


def idx_path(data_dir, split, kind):
    """kind 'images' (idx3) or 'labels' (idx1); the .gz file or an unpacked copy."""
    name = f"{split}-{kind}-idx{3 if kind == 'images' else 1}-ubyte"
    for candidate in (name + ".gz", name):
        path = os.path.join(data_dir, candidate)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name}[.gz] not found in {data_dir}")


def load_split(split, data_dir=DEFAULT_DIR):
    """(images uint8 (n, 28, 28), labels int64 (n,))."""
    images = read_idx(idx_path(data_dir, split, "images"))
    labels = read_idx(idx_path(data_dir, split, "labels")).astype(np.int64)
    if len(images) != len(labels):
        raise ValueError(f"{split}: {len(images)} images but {len(labels)} labels")
    return images, labels


def center_crop_offset(size, crop):
    # torchvision CenterCrop: int(round((size - crop) / 2.0)), Python's round (half to even).
    return int(round((size - crop) / 2.0))


def resize_and_crop(pixels, preprocess):
    """28x28 uint8 -> crop x crop uint8 through PIL, as the engine does it."""
    img = Image.fromarray(pixels, mode="L").resize((preprocess["resize"],) * 2, Image.BICUBIC)
    out = np.asarray(img)
    top = center_crop_offset(preprocess["resize"], preprocess["crop"])
    crop = preprocess["crop"]
    return out[top:top + crop, top:top + crop]


def resize_all(images, preprocess):
    return np.stack([resize_and_crop(p, preprocess) for p in images])


def normalize(pixels_u8, preprocess):
    """uint8 (n, H, W) -> float32 (n, 1, H, W), in torchvision's order: x/255, then (x-mean)/std,
    all in float32 (the engine evaluates the same expression in float32)."""
    x = pixels_u8.astype(np.float32) / np.float32(255)
    x = (x - np.float32(preprocess["mean"][0])) / np.float32(preprocess["std"][0])
    return x[:, None, :, :]


def cached_resized_split(split, preprocess, cache_dir, data_dir=DEFAULT_DIR):
    """Resized (not yet normalised) uint8 images + labels, computed once and cached as .npz."""
    key = f"{split}_r{preprocess['resize']}_c{preprocess['crop']}.npz"
    path = os.path.join(cache_dir, key)
    if os.path.exists(path):
        with np.load(path) as z:
            return z["images"], z["labels"]
    images, labels = load_split(split, data_dir)
    resized = resize_all(images, preprocess)
    os.makedirs(cache_dir, exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, images=resized, labels=labels)
    os.replace(tmp, path)
    return resized, labels
