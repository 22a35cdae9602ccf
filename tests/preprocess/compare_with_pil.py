#!/usr/bin/python3
"""Compare `pola preprocess` with the reference pipeline on real photographs.

Reference (SPEC.md section 7): PIL Image.open(f).convert('RGB') ->
resize((R, R), BICUBIC) -> CenterCrop(C) -> ToTensor -> Normalize(mean, std),
through torchvision when it is installed (Debian python3-torchvision), else the
same steps written out with PIL + numpy.

Photographs come from skimage.data (Debian python3-skimage) and are written in
several formats and PIL modes, at non-square sizes, including one smaller than
the resize (so the resize also upsamples). For each case the script prints the
mean and max absolute error of the normalized tensor and fails when
  * the mean absolute error exceeds --bound (0.01 by default), or
  * a losslessly stored image (everything but JPEG) is not bit-identical:
    there decoding is exact, so any difference is a resize/crop/normalize bug.

Usage: compare_with_pil.py --pola build/apps/pola [--keep DIR] [--bound 0.01]
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
from PIL import Image
import skimage.data

try:
    import torch
    from torchvision import transforms

    HAVE_TORCHVISION = True
except ImportError:
    HAVE_TORCHVISION = False

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


# ---------------------------------------------------------------- writers
def png_bytes(samples, bit_depth, color_type):
    """PNG with 16-bit samples, which PIL cannot write for RGB/RGBA/LA."""
    h, w = samples.shape[:2]
    dtype = ">u2" if bit_depth == 16 else "u1"
    raw = b"".join(b"\x00" + samples[y].astype(dtype).tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


def gif_bytes(screen, frame_box, indices, local_palette, global_palette, transparent, bg_index):
    """GIF89a whose first frame covers only frame_box of the screen, with its own
    palette and a transparent index: the cases where stb and PIL disagree unless
    the decoder repaints (engine/preprocess/gif_first_frame.h). LZW data is
    written as 9-bit literal codes with a clear code every 250 pixels, so the
    code width never grows: valid, if uncompressed, GIF."""
    left, top, w, h = frame_box
    codes = []
    flat = indices.reshape(-1).tolist()
    for i in range(0, len(flat), 250):
        codes += [256] + flat[i : i + 250]
    codes.append(257)
    acc = nbits = 0
    lzw = bytearray()
    for c in codes:
        acc |= c << nbits
        nbits += 9
        while nbits >= 8:
            lzw.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    if nbits:
        lzw.append(acc)
    blocks = b"".join(bytes([len(lzw[i : i + 255])]) + bytes(lzw[i : i + 255]) for i in range(0, len(lzw), 255))
    out = b"GIF89a" + struct.pack("<HHBBB", screen[0], screen[1], 0xF7, bg_index, 0) + bytes(global_palette)
    out += b"\x21\xf9\x04\x01\x00\x00" + bytes([transparent]) + b"\x00"
    out += b"\x2c" + struct.pack("<HHHHB", left, top, w, h, 0x87) + bytes(local_palette)
    return out + b"\x08" + blocks + b"\x00\x3b"


def to16(a8, seed):
    """8-bit photo -> 16-bit with a non-trivial low byte."""
    noise = np.random.default_rng(seed).integers(0, 256, a8.shape)
    return a8.astype(np.uint32) * 256 + noise


def make_images(d):
    """Returns [(file name, lossless)] written into directory d."""
    chelsea = skimage.data.chelsea()  # 300x451 RGB
    coffee = skimage.data.coffee()  # 400x600 RGB
    astronaut = skimage.data.astronaut()[:, 40:440]  # 512x400 RGB
    camera = skimage.data.camera()[60:450]  # 390x512 grey
    rocket = skimage.data.rocket()  # 427x640 RGB
    coins = skimage.data.coins()  # 303x384 grey
    hubble = skimage.data.hubble_deep_field()  # 872x1000 RGB
    ihc = skimage.data.immunohistochemistry()[:300, :450]  # 300x450 RGB

    out = []

    def save(name, img, lossless, **kw):
        img.save(os.path.join(d, name), **kw)
        out.append((name, lossless))

    def save_bytes(name, data):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        out.append((name, True))

    save("chelsea_rgb.jpg", Image.fromarray(chelsea), False, quality=90)
    save("hubble_rgb_q75_progressive.jpg", Image.fromarray(hubble), False, quality=75, progressive=True)
    save("coins_grey.jpg", Image.fromarray(coins), False, quality=92)
    # Smaller than the 256 resize: the horizontal and vertical passes upsample.
    save("chelsea_small_rgb.jpg", Image.fromarray(chelsea).resize((200, 133), Image.LANCZOS), False, quality=95)
    alpha = (np.add.outer(np.arange(coffee.shape[0]), np.arange(coffee.shape[1])) % 256).astype(np.uint8)
    save("coffee_rgba.png", Image.fromarray(np.dstack([coffee, alpha]), "RGBA"), True)
    save("camera_grey.png", Image.fromarray(camera), True)
    save("coins_grey_alpha.png", Image.fromarray(np.dstack([coins, coins[::-1]]), "LA"), True)
    save_bytes("astronaut_rgb16.png", png_bytes(to16(astronaut, 1), 16, 2))
    save_bytes("ihc_rgba16.png", png_bytes(np.dstack([to16(ihc, 2), to16(ihc[..., :1], 3)]), 16, 6))
    # PIL opens 16-bit grey as mode "I" and clips it to 0..255 on convert: keep
    # the values low enough that the picture survives partly.
    save_bytes("camera_grey16.png", png_bytes(camera.astype(np.uint32) * 2, 16, 0))
    save("rocket_palette.gif", Image.fromarray(rocket).quantize(256), True)
    # Transparent index in the picture: PIL shows its palette colour.
    quant = Image.fromarray(coffee).quantize(255)
    idx = np.array(quant)
    idx[100:220, 150:400] = 255
    holes = Image.fromarray(idx, "P")
    holes.putpalette(quant.getpalette()[: 255 * 3] + [10, 200, 30])
    save("coffee_transparent.gif", holes, True, transparency=255)
    # First frame smaller than the screen, local palette, background index 5.
    small = Image.fromarray(chelsea[50:250, 100:400]).quantize(255)
    idx = np.array(small)
    idx[20:60, 30:90] = 255
    local = (small.getpalette() + [0] * 768)[: 255 * 3] + [250, 20, 220]
    save_bytes("chelsea_frame_in_screen.gif", gif_bytes((360, 260), (25, 40, 300, 200), idx, local,
                                                       list(reversed(local)), 255, 5))
    save("coffee_palette.png", Image.fromarray(coffee).quantize(64), True)
    save("ihc_rgb.bmp", Image.fromarray(ihc), True)
    save("astronaut_rgb.tga", Image.fromarray(astronaut), True)
    save("hubble_rgb.ppm", Image.fromarray(hubble[:500, :700]), True)
    ppm16 = to16(rocket[:300, :500], 4)
    save_bytes("rocket_rgb16.ppm", b"P6\n500 300\n65535\n" + ppm16.astype(">u2").tobytes())
    return out


# ---------------------------------------------------------------- reference
def reference(path, resize, crop, channels, mean, std):
    img = Image.open(path).convert("RGB" if channels == 3 else "L")
    if HAVE_TORCHVISION:
        t = transforms.Compose(
            [
                transforms.Resize((resize, resize), interpolation=transforms.InterpolationMode.BICUBIC),
                transforms.CenterCrop(crop),
                transforms.ToTensor(),
                transforms.Normalize(mean, std),
            ]
        )
        return t(img).numpy()
    img = img.resize((resize, resize), Image.BICUBIC)
    top = int(round((resize - crop) / 2.0))
    img = img.crop((top, top, top + crop, top + crop))
    x = np.asarray(img, dtype=np.float32).reshape(crop, crop, channels) / np.float32(255)
    x = (x - np.array(mean, np.float32)) / np.array(std, np.float32)
    return x.transpose(2, 0, 1)


def run_pola(pola, image, out, args):
    r = subprocess.run([pola, "preprocess", image, "-o", out] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pola preprocess {image} failed ({r.returncode}): {r.stderr.strip()}")
    return np.load(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True, help="path to the pola executable")
    ap.add_argument("--bound", type=float, default=0.01, help="largest allowed mean absolute error")
    ap.add_argument("--keep", help="write the test images here and keep them")
    args = ap.parse_args()

    d = args.keep or tempfile.mkdtemp(prefix="pola_pre_cmp_")
    os.makedirs(d, exist_ok=True)
    images = make_images(d)
    print(f"reference: {'torchvision ' + __import__('torchvision').__version__ if HAVE_TORCHVISION else 'PIL+numpy'}, "
          f"PIL {Image.__version__}; images in {d}")

    grey_spec = '{"input_size": 224, "resize": 256, "crop": 224, "mean": [0.45], "std": [0.226], "channels": 1}'
    modes = [
        ("224", ["--size", "224"], 256, 224, 3, MEAN, STD),
        ("384", ["--size", "384"], 384, 384, 3, MEAN, STD),
        ("grey", ["--spec", grey_spec], 256, 224, 1, [0.45], [0.226]),
    ]
    failures = []
    print(f"{'image':34s} {'mode':5s} {'source size':>11s} {'MAE':>10s} {'max abs':>9s} {'exact %':>8s}")
    for name, lossless in images:
        path = os.path.join(d, name)
        with Image.open(path) as im:
            size = f"{im.size[0]}x{im.size[1]}"
        for mode, cli, resize, crop, channels, mean, std in modes:
            if mode == "grey" and not name.startswith(("chelsea_rgb", "camera_grey.", "coffee_rgba", "rocket_pal")):
                continue
            got = run_pola(args.pola, path, os.path.join(d, f"{name}.{mode}.npy"), cli)
            want = reference(path, resize, crop, channels, mean, std)
            if got.dtype != np.float32 or got.shape != (1,) + want.shape:
                failures.append(f"{name} [{mode}]: got {got.dtype} {got.shape}, want float32 {(1,) + want.shape}")
                continue
            diff = np.abs(got[0].astype(np.float64) - want.astype(np.float64))
            mae, mx, exact = diff.mean(), diff.max(), 100.0 * (diff == 0).mean()
            print(f"{name:34s} {mode:5s} {size:>11s} {mae:10.2e} {mx:9.2e} {exact:8.3f}")
            if not mae <= args.bound:
                failures.append(f"{name} [{mode}]: MAE {mae:.3g} > {args.bound}")
            if lossless and mx != 0:
                failures.append(f"{name} [{mode}]: lossless source but not bit-identical (max abs {mx:.3g})")
    if not args.keep:
        shutil.rmtree(d)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"OK: {len(images)} images, every MAE <= {args.bound}, lossless sources bit-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
