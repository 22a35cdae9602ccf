#!/usr/bin/python3
"""Nothing silently wrong: damaged model files, NaN/Inf weights and inputs.

Each case is a file made here from the shipped model (format version 2, with checksums):
- one bit flipped in the header (a preprocessing value) and one in a weight (a sign bit in a
  position embedding, an exponent bit elsewhere): refused, naming the header resp. the tensor;
- two tensors whose data overlap (header re-sealed, so only the layout check can catch it);
- a NaN weight in an otherwise valid file: refused at load and by `pola convert`, naming the
  tensor and the index;
- NaN and Inf pixels in a .npy input: refused with the count and the first index, and let through
  with --allow-nonfinite;
- a version-1 file (no checksums) still runs, with a one-line warning;
- a header of a million entries is refused within a time bound that only a quadratic parser
  (ordered JSON objects: 40k entries took 4.5 s) would exceed.

  /usr/bin/python3 check_integrity.py --pola build/apps/pola --models models
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import model_integrity  # noqa: E402
import safetensors_io  # noqa: E402

failures = []


def pola(args, *argv, timeout=120):
    return subprocess.run([args.pola, *argv], capture_output=True, text=True, timeout=timeout)


def check(ok, label, r=None):
    print(("ok   " if ok else "FAIL ") + label)
    if not ok:
        failures.append(label + (f": exit {r.returncode}; stderr: {r.stderr.strip()[:400]}" if r else ""))


def refused(r, *needles):
    return r.returncode == 1 and all(n in r.stderr for n in needles) and "internal" not in r.stderr


def layout(path):
    """(header length, header text, data start) of a model file."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    return blob, n, blob[8:8 + n].decode()


def flip_bit(src, dst, offset, bit):
    blob = bytearray(open(src, "rb").read())
    blob[offset] ^= 1 << bit
    open(dst, "wb").write(bytes(blob))


def tensor_offset(path, name):
    blob, n, text = layout(path)
    return 8 + n + json.loads(text)[name]["data_offsets"][0]


def damaged_files(args, model, work, image):
    blob, n, text = layout(model)
    # A preprocessing value in the header: "mean":[0.2878...] -> flip a bit of one digit.
    at = 8 + text.index('\\"mean\\"') + 10
    bad = os.path.join(work, "header_flip.pola")
    flip_bit(model, bad, at, 0)
    for argv in (["info", bad], ["classify", "-m", bad, image]):
        r = pola(args, *argv)
        check(refused(r, bad, "header fails its checksum"), f"{argv[0]}: a bit flipped in the header is refused", r)
    cases = [("pos_embed1", 3, 7, "a sign bit in a position embedding"),
             ("head.weight", 10, 6, "an exponent bit of a weight")]
    for name, index, bit, why in cases:
        bad = os.path.join(work, f"flip_{name}.pola")
        flip_bit(model, bad, tensor_offset(model, name) + 4 * index + 3, bit)
        r = pola(args, "classify", "-m", bad, image)
        check(refused(r, bad, f"tensor '{name}' fails its checksum"), f"{why}: refused, naming {name}", r)


def overlapping_tensors(args, model, work):
    tensors, meta = safetensors_io.load_file(model)
    blob = model_integrity.seal(tensors, meta)
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    names = [k for k in header if k != "__metadata__"]
    a, b = names[0], names[1]
    # b starts inside a (same size, so every other check holds); the checksums are re-made
    # for the new layout, so only the overlap check can refuse it.
    size_b = header[b]["data_offsets"][1] - header[b]["data_offsets"][0]
    start = header[a]["data_offsets"][0]
    header[b]["data_offsets"] = [start, start + size_b]
    meta = dict(header.pop("__metadata__"))
    data = blob[8 + n:]
    sums = json.loads(meta["tensor_checksums"])
    sums[b] = __import__("xxhash").xxh3_64(data[start:start + size_b]).hexdigest()
    meta["tensor_checksums"] = json.dumps(sums, separators=(",", ":"))
    meta["header_checksum"] = model_integrity.PLACEHOLDER
    text = json.dumps({"__metadata__": meta, **header}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    at = text.index(model_integrity.KEY) + len(model_integrity.KEY)
    text = text[:at] + __import__("xxhash").xxh3_64(text).hexdigest().encode() + text[at + 16:]
    bad = os.path.join(work, "overlap.pola")
    open(bad, "wb").write(struct.pack("<Q", len(text)) + text + data)
    r = pola(args, "info", bad)
    check(refused(r, bad, "overlap", a, b), f"tensors {a} and {b} overlapping: refused", r)


def nan_weight(args, model, work, image):
    tensors, meta = safetensors_io.load_file(model)
    tensors["head.bias"] = tensors["head.bias"].copy()
    tensors["head.bias"][4] = np.nan
    bad = os.path.join(work, "nan_weight.pola")
    model_integrity.save_model_file(bad, tensors, meta)  # valid checksums: the data itself is the problem
    r = pola(args, "classify", "-m", bad, image)
    check(refused(r, bad, "'head.bias'", "index 4", "nan"), "a NaN weight is refused at load, naming tensor and index", r)
    r = pola(args, "convert", bad, "-o", os.path.join(work, "converted.pola"))
    check(refused(r, "'head.bias'", "index 4") and not os.path.exists(os.path.join(work, "converted.pola")),
          "convert refuses a NaN weight, naming tensor and index, and writes nothing", r)


def nonfinite_inputs(args, model, work, image):
    x = os.path.join(work, "x.npy")
    r = pola(args, "preprocess", "-m", model, image, "-o", x)
    check(r.returncode == 0, "preprocess the fixture input", r)
    base = np.load(x)
    for value, label in ((np.nan, "NaN"), (np.inf, "Inf"), (-np.inf, "-Inf")):
        bad = base.copy()
        bad[0, 0, 5, 7] = value
        bad[0, 0, 6, 0] = value
        path = os.path.join(work, f"input_{label}.npy")
        np.save(path, bad)
        out = os.path.join(work, "logits.npy")
        r = pola(args, "run", "-m", model, "-i", path, "-o", out)
        first = 5 * bad.shape[3] + 7
        check(refused(r, path, "2 non-finite values", f"index {first}", "row 5, column 7"),
              f"a {label} pixel in the input is refused with the count and the first index", r)
        r = pola(args, "run", "-m", model, "-i", path, "-o", out, "--allow-nonfinite")
        check(r.returncode == 0, f"--allow-nonfinite lets the {label} input through", r)


def version_one(args, model, work, image):
    tensors, meta = safetensors_io.load_file(model)
    for k in ("checksum_algorithm", "tensor_checksums", "header_checksum"):
        meta.pop(k)
    meta["format_version"] = "1"
    old = os.path.join(work, "v1.pola")
    safetensors_io.save_file(old, tensors, meta)
    r = pola(args, "classify", "-m", old, image)
    warnings = [l for l in r.stderr.splitlines() if "warning" in l]
    check(r.returncode == 0 and len(warnings) == 1 and "no checksums" in warnings[0] and old in warnings[0],
          "a version-1 file (no checksums) runs, with one warning line naming it", r)
    meta["format_version"] = "2"
    fake = os.path.join(work, "v2_without_checksums.pola")
    safetensors_io.save_file(fake, tensors, meta)
    r = pola(args, "info", fake)
    check(refused(r, fake, "requires checksums"), "version 2 without checksums is refused", r)


def huge_header(args, work):
    entry = '"t%d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    text = ("{" + ",".join(entry % i for i in range(1_000_000)) + "}").encode()
    text += b" " * (-len(text) % 8)
    path = os.path.join(work, "million.pola")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
    t0 = time.monotonic()
    r = pola(args, "info", path, timeout=600)
    seconds = time.monotonic() - t0
    print(f"     a header of 1,000,000 entries ({len(text) >> 20} MB) was answered in {seconds:.1f} s")
    check(refused(r, path, "more than 100000 tensors") and seconds < 60,
          "a million-entry header is refused by the entry limit, in well under a minute", r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    model = os.path.join(args.models, "fashion_pola_pvt.pola")
    image = os.path.join(args.models, "samples", "0002_trouser.png")
    with tempfile.TemporaryDirectory(prefix="pola_integrity_") as work:
        damaged_files(args, model, work, image)
        overlapping_tensors(args, model, work)
        nan_weight(args, model, work, image)
        nonfinite_inputs(args, model, work, image)
        version_one(args, model, work, image)
        huge_header(args, work)
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("all integrity checks passed")


if __name__ == "__main__":
    main()
