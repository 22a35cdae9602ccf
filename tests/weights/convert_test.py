"""End-to-end test of `pola convert` / `pola info` against real torch.save files.

Builds small PolaFormer models with the PyTorch reference (tests/reference), saves them the ways
released checkpoints come (wrapped with optimizer state and a pickled custom-class config, bare,
safetensors), converts each with the `pola` binary, and checks the output with the independent
safetensors reader below (struct + json + numpy only, nothing shared with the C++ code): exact
layout, metadata, and tensors bit-equal to the checkpoint's. Also: --arch checks, tampered state
dicts, a non-PolaFormer checkpoint, a legacy torch file, and malicious pickles that would run code.

Run with Debian's interpreter (torch 1.13 lives there):
  /usr/bin/python3 tests/weights/convert_test.py --pola build/apps/pola [--workdir DIR] [--keep]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

import model_integrity  # noqa: E402
from pola_config import get_config  # noqa: E402
from polaformer_ref import build_model  # noqa: E402
from randomize import randomize  # noqa: E402
from save_checkpoint import save_checkpoints  # noqa: E402

DROPPED_SUFFIXES = (".relative_position_index", ".attn_mask")
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


# ---------------------------------------------------------------- independent reader

def read_model_file(path):
    """Strict reader of FORMAT.md: returns (metadata dict, {name: np.ndarray}, names in file order)."""
    blob = open(path, "rb").read()
    assert len(blob) >= 8, "file shorter than 8 bytes"
    (n,) = struct.unpack("<Q", blob[:8])
    assert 8 + n <= len(blob), "header length beyond the file"
    assert n % 8 == 0, f"header length {n} not a multiple of 8"
    text = blob[8:8 + n]
    assert text == text.rstrip(b" ") + b" " * (len(text) - len(text.rstrip(b" "))), "padding is not spaces"
    pairs_seen = []
    header = json.loads(text.decode("utf-8"), object_pairs_hook=lambda p: pairs_seen.append(p) or dict(p))
    top_keys = [k for k, _ in pairs_seen[-1]]
    assert len(top_keys) == len(set(top_keys)), "duplicate names in header"
    meta = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()), "metadata not str->str"
    data = blob[8 + n:]
    tensors, end_prev = {}, 0
    names = [k for k in top_keys if k != "__metadata__"]
    for name in sorted(names, key=lambda k: header[k]["data_offsets"][0]):
        e = header[name]
        assert set(e) == {"dtype", "shape", "data_offsets"}, f"{name}: keys {sorted(e)}"
        assert e["dtype"] == "F32", f"{name}: dtype {e['dtype']}"
        begin, end = e["data_offsets"]
        assert begin == end_prev, f"{name}: gap or overlap at {begin} (previous end {end_prev})"
        count = int(np.prod(e["shape"], dtype=np.int64)) if e["shape"] else 1
        assert end - begin == 4 * count, f"{name}: {end - begin} bytes for shape {e['shape']}"
        assert (8 + n + begin) % 4 == 0, f"{name}: misaligned"
        tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=begin).reshape(e["shape"])
        end_prev = end
    assert end_prev == len(data), f"{len(data) - end_prev} trailing bytes after the last tensor"
    return meta, tensors, names


def run_pola(pola, *args):
    r = subprocess.run([pola, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


# ---------------------------------------------------------------- cases

def imagenet_names():
    from torchvision.models._meta import _IMAGENET_CATEGORIES
    return list(_IMAGENET_CATEGORIES)


def check_converted(out, state_dict, cfg, arch, label):
    try:
        meta, tensors, names = read_model_file(out)
    except AssertionError as e:
        check(False, f"{label}: output violates the format: {e}")
        return
    check(set(meta) == {"format", "format_version", "arch", "config", "preprocess", "classes", "checksum_algorithm",
                        "tensor_checksums", "header_checksum"}, f"{label}: metadata keys {sorted(meta)}")
    check(meta.get("format") == "polaformer" and meta.get("format_version") == "2", f"{label}: format/version")
    try:
        model_integrity.verify(out)  # the C++ writer's checksums, recomputed independently
        check(True, f"{label}: checksums verify")
    except ValueError as e:
        check(False, f"{label}: {e}")
    check(meta.get("arch") == arch, f"{label}: arch {meta.get('arch')} != {arch}")
    check(json.loads(meta.get("config", "{}")) == cfg, f"{label}: config {meta.get('config')} != {cfg}")
    pre = json.loads(meta.get("preprocess", "{}"))
    want_resize = 384 if cfg["img_size"] == 384 else round(cfg["img_size"] * 256 / 224)
    check(pre.get("input_size") == cfg["img_size"] and pre.get("crop") == cfg["img_size"]
          and pre.get("resize") == want_resize and pre.get("interpolation") == "bicubic"
          and pre.get("channels") == cfg["in_chans"], f"{label}: preprocess {pre}")
    if cfg["in_chans"] == 3:
        check(pre.get("mean") == [0.485, 0.456, 0.406] and pre.get("std") == [0.229, 0.224, 0.225],
              f"{label}: mean/std {pre}")
    classes = json.loads(meta.get("classes", "[]"))
    if cfg["num_classes"] == 1000:
        check(classes == imagenet_names(), f"{label}: classes are not the ImageNet-1k names")
    else:
        check(classes == [f"class_{i}" for i in range(cfg["num_classes"])], f"{label}: classes {classes[:3]}...")
    expected = {k: v for k, v in state_dict.items() if not k.endswith(DROPPED_SUFFIXES)}
    check(set(names) == set(expected), f"{label}: names differ: missing {sorted(set(expected) - set(names))[:5]}, "
                                       f"extra {sorted(set(names) - set(expected))[:5]}")
    for k, v in expected.items():
        if k in tensors:
            ref = v.detach().to(torch.float32).contiguous().numpy()
            check(tensors[k].shape == ref.shape and np.array_equal(tensors[k].view(np.uint32), ref.view(np.uint32)),
                  f"{label}: tensor {k} differs")


def test_models(pola, work):
    # Reduced variants cover custom patch sizes, spatial reduction, 1-channel input, clipped windows,
    # shifted blocks with masks and S-first stage orders; one full preset covers arch naming.
    for name in ["reduced_pvt_basic", "reduced_pvt_sr", "reduced_swin_basic", "reduced_swin_windows",
                 "reduced_swin_mixed", "pola_pvt_tiny"]:
        cfg = get_config(name)
        model = build_model(cfg)
        randomize(model, 5)
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        paths = save_checkpoints(d, model, cfg, name, ["wrapped", "bare", "safetensors"], 5)
        arch = name if name.startswith("pola_") else "custom"
        sd = model.state_dict()
        for ckpt in paths:
            label = f"{name}/{os.path.basename(ckpt)}"
            out = os.path.join(d, "out.pola")
            args = ["convert", ckpt, "-o", out] + (["--arch", arch] if arch != "custom" else [])
            rc, log = run_pola(pola, *args)
            check(rc == 0, f"{label}: convert exit {rc}: {log}")
            if rc == 0:
                check_converted(out, sd, cfg, arch, label)
                rc, info = run_pola(pola, "info", "--json", out)
                check(rc == 0, f"{label}: info exit {rc}: {info}")
                if rc == 0:
                    j = json.loads(info)
                    n_params = sum(v.numel() for k, v in sd.items() if not k.endswith(DROPPED_SUFFIXES))
                    check(j["arch"] == arch and j["parameters"] == n_params and j["config"] == cfg
                          and j["format_version"] == "2" and j["file_bytes"] == os.path.getsize(out),
                          f"{label}: info {j}")
            print("ok" if rc == 0 else "FAILED", label)
        if name == "reduced_pvt_basic":
            test_tampered(pola, d, sd)
        if name == "pola_pvt_tiny":
            rc, log = run_pola(pola, "convert", paths[1], "-o", os.path.join(d, "x.pola"), "--arch", "pola_pvt_small")
            check(rc == 1 and "depths" in log and not os.path.exists(os.path.join(d, "x.pola")),
                  f"--arch mismatch: exit {rc}: {log}")
            rc, log = run_pola(pola, "convert", paths[1], "-o", os.path.join(d, "x.pola"), "--arch", "resnet50")
            check(rc == 1 and "not a known architecture" in log, f"--arch unknown: exit {rc}: {log}")


def test_tampered(pola, d, sd):
    """Missing, extra and mis-shaped tensors are all listed, and nothing is written."""
    bad = dict(sd)
    del bad["head.bias"]
    bad["block1.0.attn.qg.weight"] = bad["block1.0.attn.qg.weight"][:, :-1].clone()
    bad["cls_token"] = torch.zeros(1, 1, 48)
    path = os.path.join(d, "tampered.pth")
    torch.save(bad, path)
    out = os.path.join(d, "tampered.pola")
    rc, log = run_pola(pola, "convert", path, "-o", out)
    check(rc == 1 and "head.bias" in log and "cls_token" in log and "block1.0.attn.qg.weight" in log
          and not os.path.exists(out), f"tampered: exit {rc}: {log}")
    print("ok tampered state dict refused")


def test_foreign_and_legacy(pola, work):
    import torchvision
    path = os.path.join(work, "resnet18.pth")
    torch.save(torchvision.models.resnet18().state_dict(), path)
    rc, log = run_pola(pola, "convert", path, "-o", os.path.join(work, "r.pola"))
    check(rc == 1 and "not a PolaFormer checkpoint" in log, f"resnet18: exit {rc}: {log}")
    legacy = os.path.join(work, "legacy.pth")
    torch.save({"w": torch.zeros(2)}, legacy, _use_new_zipfile_serialization=False)
    rc, log = run_pola(pola, "convert", legacy, "-o", os.path.join(work, "l.pola"))
    check(rc == 1 and "_use_new_zipfile_serialization=True" in log, f"legacy: exit {rc}: {log}")
    print("ok foreign and legacy checkpoints refused")


class Evil:
    """Pickles as a call: unpickling it with Python's pickle runs `func(arg)`."""

    def __init__(self, func, arg):
        self.func, self.arg = func, arg

    def __reduce__(self):
        return (self.func, (self.arg,))


def test_malicious(pola, work):
    marker = os.path.join(work, "PWNED")
    cmd = f"touch {marker}"
    code = f"open({marker!r}, 'w').close()"
    cfg = get_config("reduced_swin_basic")
    sd = build_model(cfg).state_dict()
    cases = {
        "root_os_system": Evil(os.system, cmd),
        "root_exec": Evil(exec, code),
        "beside_model": {"model": sd, "config": Evil(os.system, cmd), "x": Evil(exec, code)},
        "inside_state_dict": {**sd, "evil": Evil(os.system, cmd)},
    }
    for name, obj in cases.items():
        path = os.path.join(work, f"evil_{name}.pth")
        torch.save(obj, path)
        with zipfile.ZipFile(path) as z:
            pkl = next(z.read(n) for n in z.namelist() if n.endswith("/data.pkl"))
        check(b"system" in pkl or b"exec" in pkl, f"{name}: the pickle does not name the function")
        # Sensitivity: Python's own unpickler does run it, so the file really is malicious.
        if name == "root_os_system":
            subprocess.run([sys.executable, "-c", f"import torch; torch.load({path!r})"], capture_output=True)
            check(os.path.exists(marker), "torch.load did not run the payload: the malicious test file is not malicious")
            if os.path.exists(marker):
                os.remove(marker)
        out = os.path.join(work, f"evil_{name}.pola")
        rc, log = run_pola(pola, "convert", path, "-o", out)
        check(not os.path.exists(marker), f"{name}: the payload ran!")
        check(rc in (0, 1), f"{name}: exit {rc} (crash?): {log}")
        check((rc == 0) == os.path.exists(out), f"{name}: exit {rc} but output exists={os.path.exists(out)}")
        if name == "beside_model":
            check(rc == 0, f"{name}: the real model beside the payload should convert: {log}")
        if name.startswith("root") or name == "inside_state_dict":
            check(rc == 1, f"{name}: should be refused: {log}")
        print(f"ok malicious {name}: exit {rc}, payload not run")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pola", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="pola_convert_test_")
    os.makedirs(work, exist_ok=True)
    try:
        test_models(args.pola, work)
        test_foreign_and_legacy(args.pola, work)
        test_malicious(args.pola, work)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("all conversion checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
