#!/usr/bin/python3
"""`pola preprocess` on bad inputs: exit code 1 (bad input), a message naming
the offending file and the problem, and no output file left behind.

Usage: cli_errors.py --pola build/apps/pola
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def png_header_only(w, h):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="pola_pre_cli_")
    text = os.path.join(d, "notes.jpg")
    with open(text, "w") as f:
        f.write("not an image\n")
    huge = os.path.join(d, "huge.png")
    with open(huge, "wb") as f:
        f.write(png_header_only(50000, 50000))
    out = os.path.join(d, "x.npy")
    missing = os.path.join(d, "missing.png")
    # Real files of formats the decoder does not read, written by PIL: named, not "unknown format".
    from PIL import Image
    unsupported = {"TIFF": os.path.join(d, "photo.tif"), "WebP": os.path.join(d, "photo.webp")}
    for path in unsupported.values():
        Image.new("RGB", (16, 8), (200, 30, 40)).save(path)

    cases = [  # (arguments, text the error must contain)
        ([missing, "-o", out], [missing, "cannot open"]),
        ([text, "-o", out], [text, "not an image"]),
        ([huge, "-o", out], [huge, "claims to be 50000x50000"]),
        ([huge, "-o", out, "--size", "300", "--resize", "256"], ["crop 300 is larger than resize 256"]),
        ([huge, "-o", out, "--spec", '{"channels": 2}'], ["'channels' must be 1 or 3"]),
        ([huge, "-o", out, "--spec", "@" + missing], [missing]),
        ([huge, "-o", out, "--spec", "{}", "--size", "224"], ["cannot be combined"]),
    ] + [([path, "-o", out], [path, f"a {name} image", "not supported", "PNG"]) for name, path in unsupported.items()]
    failures = []
    for argv, needles in cases:
        r = subprocess.run([args.pola, "preprocess"] + argv, capture_output=True, text=True)
        msg = r.stderr.strip()
        ok = r.returncode == 1 and all(n in msg for n in needles) and not os.path.exists(out)
        print(f"{'ok  ' if ok else 'FAIL'} rc={r.returncode} {' '.join(argv[:1] + argv[3:])!s:60.60s} | {msg}")
        if not ok:
            failures.append(argv)
    shutil.rmtree(d)
    if failures:
        print(f"FAILED: {len(failures)} case(s)")
        return 1
    print(f"OK: {len(cases)} bad inputs refused with exit code 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
