#!/usr/bin/python3
"""bf16 logits stay close to fp32 on randomized official configs, and BF16 model files work.

  check_bf16_logits.py --pola build/apps/pola --archs pola_pvt_tiny,pola_swin_t --workdir DIR
                       [--tolerance 3e-2] [--batch 2]

For every arch: a model with random weights (tests/reference/randomize.py) and a random input;
`pola run --precision bf16` must give logits within tolerance * max|fp32 logit| of
`--precision fp32` (issue 19's gate), both for the F32 model file and for its
`pola convert --dtype bf16` copy; the copy run at fp32 (weights widened at load) too.
For the first arch the BF16 file itself is checked: weight matrices (not the depthwise kernels) are the round-to-nearest-even
bf16 of the F32 values (computed here with numpy, independently of the C++ writer), every other
tensor is unchanged, the checksums verify (tests/reference/model_integrity.py), `pola info` shows
the stored dtype, the file is about half the size, and a flipped bit is refused.
Skipped (exit 77) on a CPU without AMX-BF16 or AVX512-BF16.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import model_integrity  # noqa: E402
import safetensors_io  # noqa: E402
from export_model import export_model  # noqa: E402
from pola_config import get_config  # noqa: E402
from polaformer_ref import build_model  # noqa: E402
from precision_common import pola, skip_without_native_bf16  # noqa: E402
from randomize import random_input, randomize  # noqa: E402


def bf16_rne(x):
    """float32 array -> float32 values rounded to bf16 by round-to-nearest-even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32)


def run_logits(binary, model, inp, out, precision):
    pola(binary, "run", "-m", model, "-i", inp, "-o", out, "--precision", precision, "--threads", "2")
    return np.load(out)


def check_bf16_file(binary, f32_path, bf16_path, failures):
    f32, _ = safetensors_io.load_file(f32_path)
    b16, _ = safetensors_io.load_file(bf16_path)
    with open(bf16_path, "rb") as f:
        blob = f.read()
    header = json.loads(blob[8:8 + int.from_bytes(blob[:8], "little")])
    stored = {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}
    n_bf16 = 0
    for name, a in f32.items():
        matrix = name.endswith(".weight") and not name.endswith(".dwc.weight") and a.ndim >= 2
        want_dtype = "BF16" if matrix else "F32"
        if stored[name] != want_dtype:
            failures.append(f"{name}: stored as {stored[name]}, expected {want_dtype}")
        want = bf16_rne(a) if matrix else a
        if not np.array_equal(b16[name], want):
            failures.append(f"{name}: stored values differ from the {'bf16 RNE' if matrix else 'F32'} of the source")
        n_bf16 += matrix
    model_integrity.verify(bf16_path)  # raises on a checksum mismatch
    ratio = os.path.getsize(bf16_path) / os.path.getsize(f32_path)
    info = pola(binary, "info", bf16_path).stdout
    print(f"  BF16 file: {n_bf16} weight matrices as BF16, size {ratio:.3f} of F32; info: "
          + next((l.strip() for l in info.splitlines() if "stored as" in l), "(no 'stored as' line)"))
    if "stored as   BF16" not in info:
        failures.append("pola info does not show the BF16 storage")
    if ratio > 0.55:
        failures.append(f"the BF16 file is {ratio:.3f} of the F32 one (expected about half)")
    # A flipped bit in the last tensor (BF16 data comes last) must be refused by its checksum.
    bad = os.path.join(os.path.dirname(bf16_path), "damaged.pola")
    with open(bad, "wb") as f:
        f.write(blob[:-3] + bytes([blob[-3] ^ 0x01]) + blob[-2:])
    proc = pola(binary, "info", bad, check=False)
    if proc.returncode != 1 or "checksum" not in proc.stderr:
        failures.append(f"a damaged BF16 file was not refused by its checksum: rc {proc.returncode} {proc.stderr!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--archs", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--tolerance", type=float, default=3e-2, help="of max|fp32 logit| (issue 19: 3e-2)")
    ap.add_argument("--batch", type=int, default=2)
    args = ap.parse_args()
    skip_without_native_bf16(args.pola)
    torch.set_num_threads(2)
    failures = []
    for i, arch in enumerate(args.archs.split(",")):
        d = os.path.join(args.workdir, arch)
        os.makedirs(d, exist_ok=True)
        cfg = get_config(arch)
        model = build_model(cfg)
        randomize(model, seed=19)
        f32_path, bf16_path, inp = (os.path.join(d, n) for n in ("model.pola", "model_bf16.pola", "input.npy"))
        export_model(f32_path, model.state_dict(), cfg, arch=arch)
        del model
        np.save(inp, random_input(cfg, args.batch, 19).numpy())
        pola(args.pola, "convert", f32_path, "-o", bf16_path, "--dtype", "bf16")
        ref = run_logits(args.pola, f32_path, inp, os.path.join(d, "fp32.npy"), "fp32")
        scale = float(np.abs(ref).max())
        for label, path, precision in (("bf16", f32_path, "bf16"), ("bf16, BF16 file", bf16_path, "bf16"),
                                       ("fp32, BF16 file", bf16_path, "fp32")):
            got = run_logits(args.pola, path, inp, os.path.join(d, "out.npy"), precision)
            err = float(np.abs(got - ref).max()) / scale
            agree = float(np.mean(got.argmax(1) == ref.argmax(1)))
            print(f"{arch} {label}: max|logit - fp32| / max|fp32 logit| = {err:.2e} (max|logit| {scale:.3g}), "
                  f"top-1 agreement {agree:.2f}")
            if not err <= args.tolerance:
                failures.append(f"{arch} {label}: relative logit error {err:.3e} > {args.tolerance:g}")
        if i == 0:
            check_bf16_file(args.pola, f32_path, bf16_path, failures)
        for n in ("model.pola", "model_bf16.pola", "damaged.pola"):
            if os.path.exists(os.path.join(d, n)):
                os.remove(os.path.join(d, n))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
