#!/usr/bin/python3
"""Fixture of the C API tests, written where the C programs can read it without a .npy parser:

  DIR/model.pola    a 3-channel 72 x 72 PVT with spatial reduction, 21 classes (PyTorch reference)
  DIR/input.f32     3 images, float32 NCHW, raw little-endian
  DIR/logits.f32    the reference's logits for them (3 x 21), raw float32
  DIR/photo.png     a real photograph (skimage's chelsea), 451 x 300
  DIR/photo_rgb.u8, photo_rgba.u8   its pixels, HWC RGB and RGBA
  DIR/not_a_model.txt  a text file
  DIR/sized/...     the same model at another input size: sized_input.f32 (2 images of
                    3 x 64 x 96), sized_logits.f32, stage{1..4}.f32 (NCHW features: the reference's
                    last block of each stage), pooled.f32, shapes.txt (one "C H W" line per stage)

  /usr/bin/python3 make_api_fixture.py --out DIR
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from make_case import make_case  # noqa: E402
from pola_config import get_config  # noqa: E402

ARCH, SEED, BATCH = "reduced_pvt_sr", 21, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    _, images, logits, _ = make_case(out, get_config(ARCH), arch=ARCH, seed=SEED, batch=BATCH)
    images.numpy().astype("<f4").tofile(os.path.join(out, "input.f32"))
    logits.numpy().astype("<f4").tofile(os.path.join(out, "logits.f32"))
    import skimage.data
    import skimage.io
    import numpy as np
    photo = skimage.data.chelsea()  # 300 x 451 x 3
    skimage.io.imsave(os.path.join(out, "photo.png"), photo, check_contrast=False)
    # The same pixels decoded, for pola_model_preprocess_batch's pixels: HWC RGB, and
    # RGBA with an arbitrary alpha that preparing must ignore (PIL drops it).
    photo.astype(np.uint8).tofile(os.path.join(out, "photo_rgb.u8"))
    alpha = np.random.default_rng(SEED).integers(0, 256, photo.shape[:2] + (1,), dtype=np.uint8)
    np.concatenate([photo, alpha], axis=2).tofile(os.path.join(out, "photo_rgba.u8"))
    with open(os.path.join(out, "not_a_model.txt"), "w") as f:
        f.write("this is not a model\n")
    write_sized_fixture(os.path.join(out, "sized"))
    print(f"{out}: {ARCH} seed {SEED}, {BATCH} images")


SIZED = (64, 96)


def write_sized_fixture(out):
    """The model at a non-square size, with the reference's stage outputs as NCHW features."""
    from dump_names import stage_output_names
    cfg = get_config(ARCH)
    _, images, logits, dumps = make_case(out, cfg, arch=ARCH, seed=SEED, batch=2, dump=True, size=SIZED)
    images.numpy().astype("<f4").tofile(os.path.join(out, "sized_input.f32"))
    logits.numpy().astype("<f4").tofile(os.path.join(out, "sized_logits.f32"))
    shapes = []
    for i, name in enumerate(stage_output_names(cfg), start=1):
        tokens = dumps[name].numpy()                                   # (B, N, C)
        b, n, c = tokens.shape
        stride = int(round((SIZED[0] * SIZED[1] / n) ** 0.5))
        h, w = SIZED[0] // stride, SIZED[1] // stride
        tokens.transpose(0, 2, 1).reshape(b, c, h, w).astype("<f4").tofile(os.path.join(out, f"stage{i}.f32"))
        shapes.append(f"{c} {h} {w}")
    dumps["pool"].numpy().astype("<f4").tofile(os.path.join(out, "pooled.f32"))
    with open(os.path.join(out, "shapes.txt"), "w") as f:
        f.write("\n".join(shapes) + "\n")


if __name__ == "__main__":
    main()
