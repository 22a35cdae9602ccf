"""End-to-end test of `pola convert` on a PolaFormer++ checkpoint in the authors' layout.

A randomized pola_pp_b0 (non-trivial BatchNorm statistics, perturbed RoPE angles) is saved as the
authors save it (tests/reference/pola_pp_checkpoint.py: `model` raw, `state_dict_ema` EMA, optimizer,
a pickled yacs config) and converted with the default, --weights raw and --weights ema. The model
files are read with the independent reader tests/reference/safetensors_io.py and checked against
a numpy float64 fold of the checkpoint's own tensors:
  * every BatchNorm is gone (no BN entry, no num_batches_tracked), folded into the conv before it;
  * the folded conv weights/biases equal the numpy fold to within 2 float32 ulps, and a folded conv
    applied by torch equals conv + eval BatchNorm (torch's own batch_norm) in float64;
  * every other tensor is bit-equal to the checkpoint's; the used RoPE angle buffer is kept (F32),
    the unused one dropped;
  * default == --weights raw (same bytes), raw != ema, and ema's folded values and buffers come
    from state_dict_ema (T14): a fold of the EMA weights with the raw statistics does not match;
  * re-converting a model file keeps every tensor bit for bit;
  * --dtype bf16 stores dense conv and linear weights BF16, depthwise kernels and angles F32;
  * --weights ema is refused for a plain state dict, a training checkpoint without
    state_dict_ema and a model file; a negative running_var is refused naming the tensor.

  /usr/bin/python3 tests/weights/convert_pp_test.py --pola build/apps/pola [--workdir DIR]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import model_integrity  # noqa: E402
import safetensors_io  # noqa: E402
from pola_pp_checkpoint import save_pp_checkpoint  # noqa: E402
from polaformer_ref import build_model, get_config  # noqa: E402
from randomize import randomize  # noqa: E402

ARCH = "pola_pp_b0"
BN_EPS = 1e-5  # SPEC-polaformerpp T6
# (conv prefix, BatchNorm prefix): SPEC-polaformerpp 2.2, 2.3, 2.9.
FOLDS = [(f"patch_embed.proj.{i}", f"patch_embed.proj.{i + 1}") for i in (0, 3, 6, 9)] + \
        [(f"layers.{i}.downsample.reduction", f"layers.{i}.downsample.norm") for i in range(3)] + [("proj", "norm")]
BN_ENTRIES = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
# b0's attention per stage: polarity linear (uses RoPE_linear) in 0-1, softmax (uses RoPE) in 2-3.
UNUSED_ANGLES = ["layers.0.RoPE.angle", "layers.1.RoPE.angle", "layers.2.RoPE_linear.angle",
                 "layers.3.RoPE_linear.angle"]
DEPTHWISE_SUFFIXES = (".pos.weight", ".attn.lepe.weight", ".ffn.dwconv.weight")
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run_pola(pola, *args):
    r = subprocess.run([pola, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def numpy_sd(sd):
    return {k: v.detach().numpy() for k, v in sd.items()}


def fold(sd, stats=None):
    """The file a converter should write from state dict `sd` (numpy), BatchNorms folded in float64.
    `stats`: take running_mean/var from this state dict instead (a wrong fold, for the T14 check)."""
    stats = stats or sd
    out = {k: v for k, v in sd.items()
           if k not in UNUSED_ANGLES and not any(k.startswith(bn + ".") for _, bn in FOLDS)}
    for conv, bn in FOLDS:
        s = sd[bn + ".weight"].astype(np.float64) / np.sqrt(stats[bn + ".running_var"].astype(np.float64) + BN_EPS)
        w = sd[conv + ".weight"].astype(np.float64) * s[:, None, None, None]
        b = (sd[conv + ".bias"].astype(np.float64) - stats[bn + ".running_mean"]) * s + sd[bn + ".bias"]
        out[conv + ".weight"], out[conv + ".bias"] = w.astype(np.float32), b.astype(np.float32)
    return out


def within_ulps(got, want, ulps=2):
    """|got - want| <= ulps float32 spacings of want: the fold rounds once from double; an FMA in
    the C++ may change the last bit."""
    return got.shape == want.shape and bool(np.all(np.abs(got.astype(np.float64) - want) <=
                                                   ulps * np.spacing(np.abs(want).astype(np.float32))))


def read(path, label):
    try:
        model_integrity.verify(path)
        tensors, meta = safetensors_io.load_file(path)
        return tensors, meta
    except (ValueError, AssertionError) as e:
        check(False, f"{label}: unreadable model file: {e}")
        return None, None


def check_file(path, sd, label):
    """The model file at `path` is the fold of numpy state dict `sd`."""
    tensors, _ = read(path, label)
    if tensors is None:
        return None
    want = fold(sd)
    bn_like = [k for k in tensors if k.endswith((".running_mean", ".running_var", ".num_batches_tracked"))
               or any(k.startswith(bn + ".") for _, bn in FOLDS)]
    check(not bn_like, f"{label}: BatchNorm tensors in the model file: {bn_like[:5]}")
    check(set(tensors) == set(want), f"{label}: names differ: missing {sorted(set(want) - set(tensors))[:5]}, "
                                     f"extra {sorted(set(tensors) - set(want))[:5]}")
    folded = {c + e for c, _ in FOLDS for e in (".weight", ".bias")}
    for k, v in want.items():
        if k not in tensors:
            continue
        if k in folded:
            check(within_ulps(tensors[k], v), f"{label}: folded {k} differs from the numpy fold "
                                              f"(max |diff| {np.max(np.abs(tensors[k] - v))})")
        else:
            check(tensors[k].dtype == np.float32 and np.array_equal(tensors[k].view(np.uint32), v.view(np.uint32)),
                  f"{label}: {k} is not the checkpoint's tensor bit for bit")
    for k in ("layers.0.RoPE_linear.angle", "layers.2.RoPE.angle"):
        check(k in tensors and tensors[k].dtype == np.float32, f"{label}: used angle buffer {k} missing or not F32")
    return tensors


def check_fold_semantics(tensors, sd, label):
    """A folded conv must compute conv + eval BatchNorm (torch's batch_norm, not our formula)."""
    gen = torch.Generator().manual_seed(7)
    for conv, bn in FOLDS:
        w = torch.from_numpy(sd[conv + ".weight"]).double()
        x = torch.randn(2, w.shape[1], 9, 9, generator=gen, dtype=torch.float64)
        pad = w.shape[-1] // 2
        ref = F.batch_norm(F.conv2d(x, w, torch.from_numpy(sd[conv + ".bias"]).double(), padding=pad),
                           torch.from_numpy(sd[bn + ".running_mean"]).double(),
                           torch.from_numpy(sd[bn + ".running_var"]).double(),
                           torch.from_numpy(sd[bn + ".weight"]).double(), torch.from_numpy(sd[bn + ".bias"]).double(),
                           training=False, eps=BN_EPS)
        got = F.conv2d(x, torch.from_numpy(tensors[conv + ".weight"]).double(),
                       torch.from_numpy(tensors[conv + ".bias"]).double(), padding=pad)
        err = float((got - ref).abs().max() / ref.abs().max())
        check(err < 1e-5, f"{label}: folded {conv} does not compute conv + {bn} (relative error {err:.2e})")


def make_checkpoint(work):
    """The authors' layout, with RoPE angles perturbed so raw and EMA angle buffers differ."""
    cfg = get_config(ARCH)
    model = build_model(cfg)
    randomize(model, 11)
    with torch.no_grad():
        for name, buf in model.named_buffers():
            if name.endswith(".angle"):
                buf.mul_(1.03)
    path = os.path.join(work, "max_ema_acc.pth")
    raw, ema = save_pp_checkpoint(path, model, ARCH, seed=11)
    return path, numpy_sd(raw), numpy_sd(ema)


def test_weights_choice(pola, work, ckpt, raw, ema):
    outs = {}
    for label, extra in [("default", []), ("raw", ["--weights", "raw"]), ("ema", ["--weights", "ema"])]:
        out = os.path.join(work, f"{label}.pola")
        rc, log = run_pola(pola, "convert", ckpt, "-o", out, "--arch", ARCH, *extra)
        check(rc == 0, f"{label}: convert exit {rc}: {log}")
        if rc != 0:
            continue
        outs[label] = out
        if label == "ema":
            check("converted the EMA weights ('state_dict_ema')" in log, f"ema: the notes do not say so: {log}")
        else:
            check("converted the raw weights ('model'); --weights ema picks 'state_dict_ema'" in log,
                  f"{label}: the notes do not say which weights: {log}")
        check("8 BatchNorms folded" in log, f"{label}: report does not count the folds: {log}")
        tensors = check_file(out, ema if label == "ema" else raw, label)
        if tensors is not None:
            check_fold_semantics(tensors, ema if label == "ema" else raw, label)
        print("ok" if not FAILURES else "FAILED so far", label)
    if len(outs) != 3:
        return outs
    same = open(outs["default"], "rb").read() == open(outs["raw"], "rb").read()
    check(same, "default and --weights raw wrote different files")
    check(open(outs["raw"], "rb").read() != open(outs["ema"], "rb").read(), "raw and ema wrote the same file")
    # T14: the EMA file's folds use the EMA statistics, and its angles are the EMA's.
    got, _ = safetensors_io.load_file(outs["ema"])
    mixed = fold(ema, stats=raw)
    wrong = fold(raw)
    for conv, _ in FOLDS:
        for e in (".weight", ".bias"):
            k = conv + e
            check(not within_ulps(got[k], mixed[k]), f"ema: {k} matches a fold with the raw BatchNorm statistics")
            check(not within_ulps(got[k], wrong[k]), f"ema: {k} matches the raw fold")
    for k in ("layers.0.RoPE_linear.angle", "layers.3.RoPE.angle"):
        check(not np.array_equal(raw[k], ema[k]), f"test setup: raw and EMA {k} are equal")
        check(np.array_equal(got[k], ema[k]), f"ema: {k} is not state_dict_ema's")
    print("ok default == raw != ema; EMA folds and buffers from state_dict_ema")
    return outs


def test_reconvert_and_info(pola, work, outs, raw):
    src = outs["raw"]
    again = os.path.join(work, "again.pola")
    rc, log = run_pola(pola, "convert", src, "-o", again)
    check(rc == 0, f"re-convert: exit {rc}: {log}")
    if rc == 0:
        a, _ = safetensors_io.load_file(src)
        b, _ = safetensors_io.load_file(again)
        check(set(a) == set(b) and all(np.array_equal(a[k].view(np.uint32), b[k].view(np.uint32)) for k in a),
              "re-converting the model file changed its tensors")
        check("BatchNorms folded" not in log, f"re-convert folded again: {log}")
    rc, log = run_pola(pola, "convert", src, "-o", os.path.join(work, "x.pola"), "--weights", "ema")
    check(rc == 1 and src in log and "state_dict_ema" in log and not os.path.exists(os.path.join(work, "x.pola")),
          f"--weights ema on a model file: exit {rc}: {log}")
    rc, info = run_pola(pola, "info", "--json", src)
    check(rc == 0, f"info: exit {rc}: {info}")
    if rc == 0:
        j = json.loads(info)
        n = sum(v.size for v in fold(raw).values())
        check(j["arch"] == ARCH and j["parameters"] == n and j["config"]["family"] == "pp", f"info: {j}")
    print("ok re-convert and info")


def test_bf16(pola, work, ckpt):
    out = os.path.join(work, "bf16.pola")
    rc, log = run_pola(pola, "convert", ckpt, "-o", out, "--dtype", "bf16")
    check(rc == 0, f"bf16: exit {rc}: {log}")
    if rc != 0:
        return
    blob = open(out, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__")
    for k, e in header.items():
        dense = k.endswith(".weight") and len(e["shape"]) >= 2 and not k.endswith(DEPTHWISE_SUFFIXES)
        check(e["dtype"] == ("BF16" if dense else "F32"), f"bf16: {k} {e['shape']} stored {e['dtype']}")
    print("ok bf16: dense weights BF16, depthwise kernels and angles F32")


def test_refusals(pola, work, raw):
    plain = os.path.join(work, "plain.pth")
    torch.save({k: torch.from_numpy(v) for k, v in raw.items()}, plain)
    out = os.path.join(work, "refused.pola")
    rc, log = run_pola(pola, "convert", plain, "-o", out, "--weights", "ema")
    check(rc == 1 and plain in log and "state_dict_ema" in log and "plain state dict" in log
          and not os.path.exists(out), f"--weights ema on a plain state dict: exit {rc}: {log}")
    rc, log = run_pola(pola, "convert", plain, "-o", out)
    check(rc == 0, f"plain state dict, raw: exit {rc}: {log}")
    if os.path.exists(out):
        os.remove(out)
    wrapped = os.path.join(work, "no_ema.pth")
    torch.save({"model": {k: torch.from_numpy(v) for k, v in raw.items()}, "epoch": 3}, wrapped)
    rc, log = run_pola(pola, "convert", wrapped, "-o", out, "--weights", "ema")
    check(rc == 1 and wrapped in log and "model, epoch" in log and not os.path.exists(out),
          f"--weights ema without state_dict_ema: exit {rc}: {log}")
    bad = {k: torch.from_numpy(v.copy()) for k, v in raw.items()}
    bad["layers.1.downsample.norm.running_var"][5] = -0.25
    neg = os.path.join(work, "negative_var.pth")
    torch.save(bad, neg)
    rc, log = run_pola(pola, "convert", neg, "-o", out)
    check(rc == 1 and neg in log and "layers.1.downsample.norm.running_var" in log and "negative" in log
          and not os.path.exists(out), f"negative running_var: exit {rc}: {log}")
    rc, log = run_pola(pola, "convert", "--help")
    check(rc == 0 and "--weights" in log and "raw (default" in log, f"convert --help: {log}")
    print("ok refusals and help")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    torch.set_num_threads(1)
    work = args.workdir or tempfile.mkdtemp(prefix="pola_convert_pp_test_")
    os.makedirs(work, exist_ok=True)
    try:
        ckpt, raw, ema = make_checkpoint(work)
        outs = test_weights_choice(args.pola, work, ckpt, raw, ema)
        if "raw" in outs:
            test_reconvert_and_info(args.pola, work, outs, raw)
        test_bf16(args.pola, work, ckpt)
        test_refusals(args.pola, work, raw)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("all PolaFormer++ conversion checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
