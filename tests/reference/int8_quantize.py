#!/usr/bin/python3
"""Python twin of `pola quantize`: post-training int8 quantization of a float model file.

  int8_quantize.py --model M.pola --calibration DATA -o OUT.pola [--images 256] [--split train]
                   [--batch 32] [--threads 1]

DATA: a .npy batch (N, C, H, W) float32, already preprocessed (as `pola run` takes it); or a
directory holding an IDX pair `<split>-images-idx3-ubyte[.gz]` (+ labels, unused), preprocessed
from the model's `preprocess` metadata (PIL, as tests/training/fashion_reference.py does); or a
folder of image files (every file below it, sorted by path). The first --images are used.

Calibration runs the float model (float64 reference, no quantization anywhere) over those images
and records max|x| of every quantized layer's input over all of them (all tokens, all channels);
input_scale = float32(max|x| / 127). Weights: int8_fake_quant.quantize_weight (per output channel).
The output keeps every tensor and metadata entry of the input; each quantized layer's `.weight`
becomes I8 and gains `.weight_scale` F32 (out,) and `.input_scale` F32 (1,); metadata `quantization`
(JSON) is added; the checksums are rewritten (model_integrity.seal, format version 2). F32 tensors
come first (the input's, in its order, then the scales in model order), then the I8 weights in
model order, so every F32 tensor stays 4-byte aligned as FORMAT.md asks.

Quantized layers (`quantized_layer_names`): every linear layer of attention and MLP, i.e.
  PVT:  block{s}.{j}.attn.qg, .attn.kv, .attn.proj, .mlp.fc1, .mlp.fc2
  Swin: layers.{i}.blocks.{j}.attn.qkvg (L) / .attn.qkv (S), .attn.proj, .mlp.fc1, .mlp.fc2,
        layers.{i}.downsample.reduction (patch merging, no bias)
= every nn.Linear of the reference but `head`. Not quantized: patch_embed*.proj and PVT's
attn.sr (convolutions: add_patch_conv in engine/models), attn.dwc, `head`, norms, tables.
"""
import argparse
import gzip
import json
import os
import re
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import model_integrity  # noqa: E402
import safetensors_io  # noqa: E402
from int8_fake_quant import QMAX, input_scale_of, intercept_linear_inputs, quantize_weight  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402

QUANTIZED_PATTERNS = {
    "pvt": re.compile(r"block[1-4]\.\d+\.(attn\.(qg|kv|proj)|mlp\.(fc1|fc2))"),
    "swin": re.compile(r"layers\.\d+\.(blocks\.\d+\.(attn\.(qkvg|qkv|proj)|mlp\.(fc1|fc2))|downsample\.reduction)"),
}
SCHEME = {
    "scheme": "w8a8_static",
    "weights": "int8 symmetric, per output channel: scale = max|W[o,:]|/127, q = clip(rint(W/scale), -127, 127)",
    "activations": "int8 symmetric, per tensor, static: scale = max|x| over the calibration images / 127",
}
IDX_IMAGE_FILES = ("{split}-images-idx3-ubyte.gz", "{split}-images-idx3-ubyte")
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".pgm", ".pnm", ".tga", ".tif", ".tiff", ".webp")


def quantized_layer_names(model):
    """Prefixes of the layers to quantize, in model order. Derived by the name rule above and
    checked against the module types: exactly the nn.Linear modules other than `head`."""
    family = model.cfg["family"]
    if family not in QUANTIZED_PATTERNS:
        raise ValueError(f"int8 quantization is defined for pvt and swin, not {family!r}")
    by_rule = [n for n, _ in model.named_modules() if QUANTIZED_PATTERNS[family].fullmatch(n)]
    by_type = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "head"]
    if by_rule != by_type:
        raise RuntimeError(f"the name rule and the linear layers disagree: rule-only "
                           f"{sorted(set(by_rule) - set(by_type))[:5]}, linear-only {sorted(set(by_type) - set(by_rule))[:5]}")
    return by_rule


def read_idx_images(directory, split):
    """uint8 (n, rows, cols) of `<split>-images-idx3-ubyte[.gz]` in `directory`."""
    for pattern in IDX_IMAGE_FILES:
        path = os.path.join(directory, pattern.format(split=split))
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                blob = f.read()
            zero, kind, ndim = struct.unpack(">HBB", blob[:4])
            if zero != 0 or kind != 0x08 or ndim != 3:
                raise ValueError(f"{path}: not an IDX file of unsigned-byte images")
            dims = struct.unpack(">3I", blob[4:16])
            return np.frombuffer(blob, np.uint8, offset=16, count=int(np.prod(dims))).reshape(dims)
    return None


def load_calibration(path, preprocess, images=256, split="train"):
    """float32 (n, C, H, W): the first `images` calibration images of `path` (see the module doc)."""
    if os.path.isfile(path) and path.endswith(".npy"):
        x = np.load(path)
        if x.ndim != 4:
            raise ValueError(f"{path}: calibration batch of shape {x.shape}, expected (N, C, H, W)")
        return np.ascontiguousarray(x[:images], dtype=np.float32)
    if not os.path.isdir(path):
        raise ValueError(f"{path}: neither a .npy batch nor a directory")
    sys.path.insert(0, os.path.join(HERE, "..", "training"))
    from PIL import Image
    from fashion_reference import preprocess_pil
    pixels = read_idx_images(path, split)
    if pixels is not None:
        return np.stack([preprocess_pil(Image.fromarray(p, mode="L"), preprocess) for p in pixels[:images]])
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names
                   if f.lower().endswith(IMAGE_EXTENSIONS))
    if not files:
        raise ValueError(f"{path}: no IDX pair of split {split!r} and no image files")
    return np.stack([preprocess_pil(Image.open(f), preprocess) for f in files[:images]])


def calibrate(model, prefixes, images, batch=32, dtype=torch.float64):
    """{prefix: max|x| (float)} of each layer's input over all images, the float model running."""
    amax = {p: 0.0 for p in prefixes}

    def record(p, x):
        amax[p] = max(amax[p], float(x.detach().abs().max()))
        return x

    for i in range(0, len(images), batch):
        with intercept_linear_inputs(model, prefixes, record):
            run(model, torch.from_numpy(np.ascontiguousarray(images[i:i + batch])), dtype=dtype)
    return amax


def quantized_tensors(tensors, prefixes, amax):
    """The output file's tensors in order: the F32 ones of the input (in its order), then the
    scales (model order), then the I8 weights (model order)."""
    missing = [p for p in prefixes if p + ".weight" not in tensors]
    if missing:
        raise ValueError(f"layers without a weight in the file: {missing[:5]}")
    chosen = {p + ".weight" for p in prefixes}
    out = {name: a for name, a in tensors.items() if name not in chosen}
    int8 = {}
    for p in prefixes:
        q, scale = quantize_weight(tensors[p + ".weight"])
        out[p + ".weight_scale"] = scale
        out[p + ".input_scale"] = np.array([input_scale_of(amax[p])], np.float32)
        int8[p + ".weight"] = q
    out.update(int8)
    return out


def quantize_file(src, dst, calibration, images=256, split="train", batch=32, source_name=None,
                  dtype=torch.float64):
    """Writes the int8 model file `dst` from the float model file `src`. calibration: a path (see
    load_calibration) or a float32 array; dtype: of the calibration runs (float64: the reference).
    Returns {"layers": [...], "images": n, "amax": {...}}."""
    with open(src, "rb") as f:
        blob = f.read()
    header = json.loads(blob[8:8 + int.from_bytes(blob[:8], "little")])
    dtypes = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
    not_f32 = sorted(k for k, d in dtypes.items() if d != "F32")
    if not_f32:
        raise ValueError(f"{src}: only an all-F32 model file can be quantized ({not_f32[0]} is {dtypes[not_f32[0]]})")
    tensors, meta = safetensors_io.load_file(src)
    if meta.get("format") != "polaformer":
        raise ValueError(f"{src}: not a polaformer model file")
    if "quantization" in meta:
        raise ValueError(f"{src}: already quantized")
    cfg = json.loads(meta["config"])
    model = build_model(cfg).to(torch.float64)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    if unexpected or any(k.rsplit(".", 1)[-1] not in ("relative_position_index", "attn_mask") for k in missing):
        raise ValueError(f"{src}: tensors do not match the config (missing {missing[:3]}, unexpected {unexpected[:3]})")
    if isinstance(calibration, np.ndarray):
        x = np.ascontiguousarray(calibration[:images], dtype=np.float32)
        source_name = source_name or "array"
    else:
        x = load_calibration(calibration, json.loads(meta["preprocess"]), images, split)
        source_name = source_name or os.path.basename(os.path.normpath(calibration))
    if len(x) == 0:
        raise ValueError("no calibration images")
    prefixes = quantized_layer_names(model)
    amax = calibrate(model, prefixes, x, batch, dtype)
    out_meta = {k: v for k, v in meta.items()
                if k not in ("checksum_algorithm", "tensor_checksums", "header_checksum")}
    out_meta["quantization"] = json.dumps(dict(SCHEME, calibration={"images": int(len(x)), "source": source_name},
                                               layers=len(prefixes)))
    model_integrity.save_model_file(dst, quantized_tensors(tensors, prefixes, amax), out_meta)
    return {"layers": prefixes, "images": int(len(x)), "amax": amax}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", "-m", required=True)
    ap.add_argument("--calibration", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--images", type=int, default=256)
    ap.add_argument("--split", default="train")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = quantize_file(args.model, args.output, args.calibration, args.images, args.split, args.batch)
    scales = [input_scale_of(a) for a in report["amax"].values()]
    print(f"wrote {args.output}: {len(report['layers'])} int8 layers, calibrated on {report['images']} images; "
          f"input scales {min(scales):.3g}..{max(scales):.3g} (max|x| / {QMAX})")


if __name__ == "__main__":
    main()
