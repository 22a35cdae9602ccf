#!/usr/bin/python3
"""Fixture of the C API tests, written where the C programs can read it without a .npy parser:

  DIR/model.pola    a 3-channel 72 x 72 PVT with spatial reduction, 21 classes (PyTorch reference)
  DIR/input.f32     3 images, float32 NCHW, raw little-endian
  DIR/logits.f32    the reference's logits for them (3 x 21), raw float32
  DIR/photo.png     a real photograph (skimage's chelsea), 451 x 300
  DIR/photo_rgb.u8, photo_rgba.u8   its pixels, HWC RGB and RGBA
  DIR/not_a_model.txt  a text file

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
    # The same pixels decoded, for pola_model_preprocess_pixels: HWC RGB, and
    # RGBA with an arbitrary alpha that preparing must ignore (PIL drops it).
    photo.astype(np.uint8).tofile(os.path.join(out, "photo_rgb.u8"))
    alpha = np.random.default_rng(SEED).integers(0, 256, photo.shape[:2] + (1,), dtype=np.uint8)
    np.concatenate([photo, alpha], axis=2).tofile(os.path.join(out, "photo_rgba.u8"))
    with open(os.path.join(out, "not_a_model.txt"), "w") as f:
        f.write("this is not a model\n")
    print(f"{out}: {ARCH} seed {SEED}, {BATCH} images")


if __name__ == "__main__":
    main()
