"""Builders of hostile input files for tests/security/hostile_cli.py.

Every builder returns bytes. Valid starting points are the committed fuzz seeds
(tests/fuzz/corpus: a tiny Pola-PVT and Pola-Swin model file, their torch.save and
safetensors checkpoints, small .npy arrays and images), so no PyTorch is needed here.
"""
import io
import json
import os
import pickle
import random
import struct
import sys
import zipfile
import zlib


import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "fuzz", "corpus")
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import safetensors_io  # noqa: E402


def seed(target, name):
    with open(os.path.join(CORPUS, target, name), "rb") as f:
        return f.read()


# ---------------------------------------------------------------- safetensors / model files

def split_safetensors(data):
    """(header dict, data area bytes) of a well-formed safetensors file."""
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def join_safetensors(header, body, pad=True):
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


def model_with_config(base, **changes):
    """The seed model file with config keys replaced (tensors unchanged)."""
    header, body = split_safetensors(seed("model_file", base))
    cfg = json.loads(header["__metadata__"]["config"])
    cfg.update(changes)
    header["__metadata__"]["config"] = json.dumps(cfg)
    return join_safetensors(header, body)


def model_with_config_text(base, transform):
    """The seed model file with its config JSON text rewritten by `transform` (for non-JSON values)."""
    header, body = split_safetensors(seed("model_file", base))
    header["__metadata__"]["config"] = transform(header["__metadata__"]["config"])
    return join_safetensors(header, body)


def model_with_metadata(base, **changes):
    header, body = split_safetensors(seed("model_file", base))
    for k, v in changes.items():
        if v is None:
            header["__metadata__"].pop(k, None)
        else:
            header["__metadata__"][k] = v
    return join_safetensors(header, body)


def model_with_header_edit(base, edit):
    header, body = split_safetensors(seed("model_file", base))
    edit(header)
    return join_safetensors(header, body)


def model_file(config, tensors, preprocess=None, classes=None):
    """A model file written from scratch: config dict and {name: float32 array}."""
    meta = {"format": "polaformer", "format_version": "1", "arch": "custom", "config": json.dumps(config),
            "classes": json.dumps(classes or [f"class_{i}" for i in range(config["num_classes"])])}
    if preprocess is not None:
        meta["preprocess"] = json.dumps(preprocess)
    return safetensors_io.encode({k: np.asarray(v, np.float32) for k, v in tensors.items()}, meta)


def swin_one_token_windows(img=32768):
    """A consistent Swin model file of a few hundred bytes of weights: polarity windows of one
    token make the positional encoding tiny while img^2 = 2^30 tokens imply ~100 GB of
    activations, which the engine must refuse before allocating its arena."""
    dim = 2
    cfg = dict(family="swin", img_size=img, in_chans=1, num_classes=1, embed_dims=[dim], depths=[1],
               num_heads=[1], mlp_ratios=[1], attn_types=["L"], alpha=4, kernel_size=3, patch_size=1,
               window_size=1, window_size_softmax=1)
    z = np.zeros
    b = "layers.0.blocks.0."
    tensors = {"patch_embed.proj.weight": z((dim, 1, 1, 1)), "patch_embed.proj.bias": z(dim),
               "patch_embed.norm.weight": z(dim), "patch_embed.norm.bias": z(dim),
               b + "norm1.weight": z(dim), b + "norm1.bias": z(dim),
               b + "attn.qkvg.weight": z((4 * dim, dim)), b + "attn.qkvg.bias": z(4 * dim),
               b + "attn.proj.weight": z((dim, dim)), b + "attn.proj.bias": z(dim),
               b + "attn.dwc.weight": z((dim, 1, 3, 3)), b + "attn.dwc.bias": z(dim),
               b + "attn.power": z((1, 1, 1, dim)), b + "attn.scale": z((1, 1, dim)),
               b + "attn.positional_encoding": z((1, 1, dim)),
               b + "norm2.weight": z(dim), b + "norm2.bias": z(dim),
               b + "mlp.fc1.weight": z((dim, dim)), b + "mlp.fc1.bias": z(dim),
               b + "mlp.fc2.weight": z((dim, dim)), b + "mlp.fc2.bias": z(dim),
               "norm.weight": z(dim), "norm.bias": z(dim), "head.weight": z((1, dim)), "head.bias": z(1)}
    return model_file(cfg, tensors)


def swin_huge_softmax_window(window=256):
    """A consistent one-block softmax Swin stage whose window covers 256x256 tokens: its
    (2w-1)^2 bias table is 1 MB in the file but expands to heads x t x t = 17 GB."""
    img, dim = 4 * window, 2
    cfg = dict(family="swin", img_size=img, in_chans=1, num_classes=2, embed_dims=[dim], depths=[1],
               num_heads=[1], mlp_ratios=[1], attn_types=["S"], alpha=4, kernel_size=3, patch_size=4,
               window_size=56, window_size_softmax=window)
    z = np.zeros
    b = "layers.0.blocks.0."
    tensors = {"patch_embed.proj.weight": z((dim, 1, 4, 4)), "patch_embed.proj.bias": z(dim),
               "patch_embed.norm.weight": z(dim), "patch_embed.norm.bias": z(dim),
               b + "norm1.weight": z(dim), b + "norm1.bias": z(dim),
               b + "attn.qkv.weight": z((3 * dim, dim)), b + "attn.qkv.bias": z(3 * dim),
               b + "attn.proj.weight": z((dim, dim)), b + "attn.proj.bias": z(dim),
               b + "attn.relative_position_bias_table": z(((2 * window - 1) ** 2, 1)),
               b + "norm2.weight": z(dim), b + "norm2.bias": z(dim),
               b + "mlp.fc1.weight": z((dim, dim)), b + "mlp.fc1.bias": z(dim),
               b + "mlp.fc2.weight": z((dim, dim)), b + "mlp.fc2.bias": z(dim),
               "norm.weight": z(dim), "norm.bias": z(dim), "head.weight": z((2, dim)), "head.bias": z(2)}
    return model_file(cfg, tensors)


# ---------------------------------------------------------------- checkpoints

def torch_zip(pkl, storages=None, compress=False):
    """A torch.save-style zip: archive/data.pkl plus archive/data/<key> entries."""
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            z.writestr("archive/data/" + key, data)
    return buf.getvalue()


class _Calls:
    """Pickles as a call of `func(*args)`; Python's unpickler would run it, ours must not."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def pickle_calling(func, args, marker_key="model"):
    return pickle.dumps({marker_key: _Calls(func, args)}, protocol=2)


def deep_list_pickle(depth):
    """[[[...]]] nested `depth` deep, built on the stack (EMPTY_LIST then APPEND)."""
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


def deep_mark_pickle(depth):
    return b"\x80\x02" + b"(" * depth + b"t" * depth + b"."


def zip_bomb_pickle():
    """A 64 MB pickle of zeros that deflates to ~64 kB, claimed as data.pkl."""
    return torch_zip(b"\0" * (64 << 20), compress=True)


def safetensors_checkpoint_with(extra):
    """The tiny PVT safetensors checkpoint plus extra (name -> float32 array) tensors."""
    tensors, meta = safetensors_io.decode(seed("checkpoint", "tiny_pvt.safetensors"))
    tensors.update({k: np.asarray(v, np.float32) for k, v in extra.items()})
    return safetensors_io.encode(tensors, meta)


# ---------------------------------------------------------------- .npy

def npy(header_dict_text, body=b"", version=1):
    text = header_dict_text.encode("latin1")
    pre = len(text) + (10 if version == 1 else 12) + 1
    text += b" " * (-pre % 64) + b"\n"
    length = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + body


def npy_array(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


# ---------------------------------------------------------------- images

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header_only(w, h, depth=8, colour=2):
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))


def png_bomb(w=20000, h=20000):
    """A valid grey PNG of w x h zeros whose IDAT is a few hundred kB: decodable only by
    allocating w*h bytes, so it must be refused from the header."""
    row = b"\0" * (w + 1)
    comp = zlib.compressobj(1)  # fast: 400 MB of zeros
    idat = b"".join(comp.compress(row) for _ in range(h)) + comp.flush()
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b""))


def jpeg_header_only(w, h):
    sof = struct.pack(">BHHB", 8, h, w, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8" + b"\xff\xc0" + struct.pack(">H", len(sof) + 2) + sof + b"\xff\xd9"


def bmp_header(w, h, bpp=24):
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, bpp, 0, 0, 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(info) + 16, 0, 0, 14 + len(info)) + info + b"\0" * 16


def gif_header(w, h):
    return b"GIF89a" + struct.pack("<HHBBB", w, h, 0, 0, 0) + b",\0\0\0\0" + struct.pack("<HH", w, h) + b"\0\x02\x02\x44\x01\0;"


def random_bytes(n, rng_seed):
    return random.Random(rng_seed).randbytes(n)
