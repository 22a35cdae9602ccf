#!/usr/bin/python3
"""Regenerates the libFuzzer seed corpora tests/fuzz/corpus/<target>/ from small real inputs.

  /usr/bin/python3 tests/fuzz/make_seeds.py [--out tests/fuzz/corpus]

Seeds are valid (or interestingly invalid) files a fuzzer mutates from:
  model_file/   tiny Pola-PVT and Pola-Swin model files written by tests/reference (make_case.py),
                and an int8 copy of the PVT one (I8 weights with their scales)
  checkpoint/   the same tiny models as torch.save zips (wrapped, bare) and safetensors (F64, F16)
  torch_pickle/ the data.pkl of those zips, plus pickles that name os.system / builtins.exec
  npy/          arrays written by numpy (float32 in all three header versions, and refusable ones)
  image/        tiny pictures written by PIL in every format the decoder handles
and tests/fuzz/regressions/<target>/: inputs that once exposed bugs, replayed by every build.
Needs Debian's python3-torch, python3-numpy and python3-pil (run with /usr/bin/python3).
The generated files are committed; rerun this only when a format changes. Every corpus stays
far below 1 MB so that fuzzing starts fast.
"""
import argparse
import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "reference")
sys.path.insert(0, REFERENCE)

import safetensors_io  # noqa: E402

# Four stages (the reference supports exactly four), every width as small as the rules allow,
# so each seed is a few tens of kB: a spatial reduction in PVT, shifted windows with a mask and
# both attention types in Swin.
TINY_PVT = dict(family="pvt", img_size=16, in_chans=3, num_classes=5, embed_dims=[4, 8, 8, 8],
                depths=[1, 1, 1, 1], num_heads=[1, 2, 2, 2], mlp_ratios=[2, 1, 1, 1],
                attn_types=["L", "L", "L", "L"], alpha=4, kernel_size=3,
                patch_sizes=[2, 2, 2, 2], sr_ratios=[2, 1, 1, 1])
TINY_SWIN = dict(family="swin", img_size=32, in_chans=3, num_classes=4, embed_dims=[4, 8, 16, 32],
                 depths=[2, 1, 2, 1], num_heads=[1, 2, 2, 4], mlp_ratios=[1, 1, 1, 1],
                 attn_types=["L", "L", "S", "S"], alpha=4, kernel_size=3,
                 patch_size=4, window_size=4, window_size_softmax=2)


def make_case(cfg, out_dir):
    """Model file + wrapped/bare/safetensors checkpoints of a random model of `cfg`."""
    subprocess.run([sys.executable, os.path.join(REFERENCE, "make_case.py"), "--config", json.dumps(cfg),
                    "--seed", "3", "--batch", "1", "--out", out_dir, "--checkpoints", "all", "--float32"],
                   check=True, stdout=subprocess.DEVNULL)


def data_pkl(pth_path):
    with zipfile.ZipFile(pth_path) as z:
        name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        return z.read(name)


class CallsSystem:
    """Unpickling this with Python's pickle would run os.system; our reader must not."""

    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/pola_fuzz_pwned",))


class CallsExec:
    def __reduce__(self):
        return (exec, ("import os; os.system('true')",))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def model_and_checkpoint_seeds(out, work):
    for name, cfg in (("tiny_pvt", TINY_PVT), ("tiny_swin", TINY_SWIN)):
        d = os.path.join(work, name)
        make_case(cfg, d)
        # Both format versions: version 2 (checksums, what the tools write now) and version 1 (what
        # older files are, and what the hostile-input fixtures edit without re-sealing).
        shutil.copy(os.path.join(d, "model.pola"), os.path.join(out, "model_file", name + "_v2.pola"))
        tensors, meta = safetensors_io.load_file(os.path.join(d, "model.pola"))
        for key in ("checksum_algorithm", "tensor_checksums", "header_checksum"):
            meta.pop(key)
        meta["format_version"] = "1"
        safetensors_io.save_file(os.path.join(out, "model_file", name + ".pola"), tensors, meta)
        shutil.copy(os.path.join(d, "checkpoint_bare.pth"), os.path.join(out, "checkpoint", name + "_bare.pth"))
        shutil.copy(os.path.join(d, "checkpoint.safetensors"), os.path.join(out, "checkpoint", name + ".safetensors"))
        write(os.path.join(out, "torch_pickle", name + "_bare.pkl"), data_pkl(os.path.join(d, "checkpoint_bare.pth")))
        if name == "tiny_pvt":  # the wrapped form adds optimizer state and a config object
            shutil.copy(os.path.join(d, "checkpoint_wrapped.pth"), os.path.join(out, "checkpoint", name + "_wrapped.pth"))
            write(os.path.join(out, "torch_pickle", name + "_wrapped.pkl"),
                  data_pkl(os.path.join(d, "checkpoint_wrapped.pth")))
            tensors, meta = safetensors_io.load_file(os.path.join(d, "checkpoint.safetensors"))
            half = {k: np.asarray(v).astype(np.float16) for k, v in tensors.items()}
            safetensors_io.save_file(os.path.join(out, "checkpoint", name + "_f16.safetensors"), half, meta)


def torch_view_seeds(out, work):
    """Strided, offset, half and integer tensors: the view arithmetic of torch_checkpoint.cpp."""
    import torch
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = {"t": base.t(), "row": base[2], "half": base.to(torch.float16)[1:, ::2], "ints": torch.arange(5),
           "scalar": torch.tensor(1.5), "empty": torch.zeros(0, 3), "n": 7}
    path = os.path.join(work, "views.pth")
    torch.save(obj, path)
    shutil.copy(path, os.path.join(out, "checkpoint", "views.pth"))
    write(os.path.join(out, "torch_pickle", "views.pkl"), data_pkl(path))
    write(os.path.join(out, "torch_pickle", "calls_system.pkl"), pickle.dumps({"model": CallsSystem()}, protocol=2))
    write(os.path.join(out, "torch_pickle", "calls_exec.pkl"), pickle.dumps([CallsExec(), {1: (2, 3.5)}], protocol=4))


def npy_seeds(out):
    def save(name, arr, version=None):
        buf = io.BytesIO()
        if version is None:
            np.save(buf, arr)
        else:
            np.lib.format.write_array(buf, arr, version=version)
        write(os.path.join(out, "npy", name), buf.getvalue())

    rng = np.random.default_rng(0)
    image = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    save("nchw_f32.npy", image)
    save("nchw_f32_v2.npy", image, version=(2, 0))
    save("nchw_f32_v3.npy", image, version=(3, 0))
    save("scalar_f32.npy", np.float32(2.5).reshape(()))
    save("empty_f32.npy", np.zeros((0, 3), np.float32))
    save("fortran_f32.npy", np.asfortranarray(rng.standard_normal((3, 2)).astype(np.float32)))
    save("big_endian_f32.npy", image.astype(">f4"))
    save("f64.npy", image.astype(np.float64))


def image_seeds(out):
    rng = np.random.default_rng(1)
    rgb = Image.fromarray(rng.integers(0, 256, (5, 7, 3), dtype=np.uint8), "RGB")
    d = os.path.join(out, "image")
    os.makedirs(d, exist_ok=True)
    rgb.save(os.path.join(d, "rgb.png"))
    rgb.convert("RGBA").save(os.path.join(d, "rgba.png"))
    rgb.convert("L").save(os.path.join(d, "grey.png"))
    rgb.convert("LA").save(os.path.join(d, "grey_alpha.png"))
    pal = rgb.convert("P", palette=Image.ADAPTIVE, colors=4)
    pal.save(os.path.join(d, "palette_transparent.png"), transparency=1)
    pal.save(os.path.join(d, "palette.gif"), transparency=2)
    grey16 = Image.fromarray(rng.integers(0, 1024, (4, 6), dtype=np.uint16).astype(np.int32), "I")
    grey16.save(os.path.join(d, "grey16.png"))
    rgb.save(os.path.join(d, "rgb.jpg"), quality=60)
    rgb.convert("L").save(os.path.join(d, "grey_progressive.jpg"), quality=60, progressive=True)
    rgb.save(os.path.join(d, "rgb.bmp"))
    pal.save(os.path.join(d, "palette.bmp"))
    rgb.save(os.path.join(d, "rgb.tga"))
    rgb.save(os.path.join(d, "rgb.ppm"))
    rgb.convert("L").save(os.path.join(d, "grey.pgm"))


def regression_inputs(regressions):
    """Inputs that exposed bugs (since fixed), replayed by every build (fuzz.replay_*):
    a Swin model whose config implies 100 GB of activations, one whose softmax bias table
    expands to gigabytes, a config integer written as 1e300, and checkpoints whose shapes
    overflowed config detection or implied a million blocks."""
    sys.path.insert(0, os.path.join(HERE, "..", "security"))
    import hostile_inputs as H
    cases = {
        "model_file/swin_one_token_windows_100GB_arena.pola": H.swin_one_token_windows(),
        "model_file/swin_softmax_table_1GB.pola": H.swin_huge_softmax_window(window=128),
        "model_file/img_size_1e300.pola": H.model_with_config_text(
            "tiny_pvt.pola", lambda t: t.replace('"img_size": 16', '"img_size": 1e300')),
        "checkpoint/block_index_999999.safetensors": H.safetensors_checkpoint_with(
            {"block1.999999.norm1.weight": np.zeros(4)}),
    }
    header, body = H.split_safetensors(H.seed("checkpoint", "tiny_swin.safetensors"))
    key = next(k for k in header if k.endswith("attn_mask"))
    begin = header[key]["data_offsets"][0]
    header[key].update(shape=[2 ** 62, 2 ** 62, 0], data_offsets=[begin, begin])
    cases["checkpoint/attn_mask_2pow62_windows.safetensors"] = H.join_safetensors(header, body)
    for name, data in cases.items():
        write(os.path.join(regressions, name), data)


def int8_model_seed(out):
    """model_file/tiny_pvt_int8.pola: the tiny PVT seed with its dense weights (rank >= 2, not the
    depthwise `dwc` kernels) stored as I8, each with its per-row F32 `_scale` and an `.input_scale`
    beside it (weights/FORMAT.md, "I8 tensors"), so the fuzzer starts from the scale rules. Version 1
    like tiny_pvt.pola: without checksums most mutations reach those rules."""
    tensors, meta = safetensors_io.load_file(os.path.join(out, "model_file", "tiny_pvt.pola"))
    floats, ints = {}, {}
    for name, w in tensors.items():
        if not (name.endswith(".weight") and w.ndim >= 2 and ".dwc." not in name):
            floats[name] = w
            continue
        rows = w.reshape(w.shape[0], -1)
        scale = np.abs(rows).max(axis=1) / 127
        scale[scale == 0] = 1  # an all-zero row: any positive scale gives q = 0
        ints[name] = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8).reshape(w.shape)
        floats[name + "_scale"] = scale.astype(np.float32)
        floats[name[:-len(".weight")] + ".input_scale"] = np.array([0.05], dtype=np.float32)
    meta["quantization"] = json.dumps({"weights": "int8 symmetric, per output channel",
                                       "activations": "int8 symmetric, per tensor, static (calibrated)",
                                       "calibration": "none (fuzz seed)", "images": 0})
    # F32 first, then I8, as the writer lays them out (F32 data must stay 4-byte aligned).
    safetensors_io.save_file(os.path.join(out, "model_file", "tiny_pvt_int8.pola"), {**floats, **ints}, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = ap.parse_args()
    for target in ("model_file", "checkpoint", "torch_pickle", "npy", "image"):
        shutil.rmtree(os.path.join(args.out, target), ignore_errors=True)
        os.makedirs(os.path.join(args.out, target))
    with tempfile.TemporaryDirectory(prefix="pola_seeds_") as work:
        model_and_checkpoint_seeds(args.out, work)
        int8_model_seed(args.out)
        torch_view_seeds(args.out, work)
    npy_seeds(args.out)
    image_seeds(args.out)
    regression_inputs(os.path.join(HERE, "regressions"))
    for target in sorted(os.listdir(args.out)):
        files = os.listdir(os.path.join(args.out, target))
        size = sum(os.path.getsize(os.path.join(args.out, target, f)) for f in files)
        print(f"{target}: {len(files)} seeds, {size / 1024:.1f} kB")


if __name__ == "__main__":
    main()
