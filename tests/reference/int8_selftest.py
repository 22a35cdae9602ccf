#!/usr/bin/python3
"""Self-checks of the int8 reference (int8_fake_quant.py) and the Python quantizer
(int8_quantize.py), no engine needed.

  /usr/bin/python3 int8_selftest.py [--only SUBSTRING] [--threads N]

Each check compares the code under test with something computed another way: hand-written
values, a per-element loop with Python's round(), layer inputs caught by module hooks instead of
the F.linear interception, an integer matmul in numpy, the layer table built from the config.
Prints one line per check, then `N passed, M failed`; exits non-zero on any failure.
"""
import argparse
import atexit
import gzip
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import int8_fake_quant  # noqa: E402
import model_integrity  # noqa: E402
import safetensors_io  # noqa: E402
from export_model import export_model  # noqa: E402
from int8_fake_quant import (INT8_TRAPS, QuantizedModel, fake_quant, fake_quant_token,  # noqa: E402
                             input_scale_of, quantize_weight, segments, teacher_forced)
from int8_quantize import load_calibration, quantize_file, quantized_layer_names  # noqa: E402
from polaformer_ref import build_model, get_config, run  # noqa: E402
from pola_swin import WindowSoftmaxAttention  # noqa: E402
from randomize import random_input, randomize  # noqa: E402

# Models covering every quantized layer kind: PVT with spatial reduction (attn.sr stays float),
# Swin with S attention first (F.linear qkv), L windows, patch merging; an odd input size pads
# Swin windows with zero rows (dynamic per-token must give them scale 1, not 0/0).
CASES = [("reduced_pvt_sr", None), ("reduced_swin_mixed", None), ("reduced_swin_windows", (64, 160))]
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def expected_layers(cfg):
    """The quantized layers, written from the config alone (README's rule)."""
    names = []
    if cfg["family"] == "pvt":
        for s in range(1, 5):
            for j in range(cfg["depths"][s - 1]):
                names += [f"block{s}.{j}.attn.{n}" for n in ("qg", "kv", "proj")]
                names += [f"block{s}.{j}.mlp.{n}" for n in ("fc1", "fc2")]
    else:
        for i in range(4):
            for j in range(cfg["depths"][i]):
                pre = f"layers.{i}.blocks.{j}"
                names += [f"{pre}.attn.{'qkvg' if cfg['attn_types'][i] == 'L' else 'qkv'}", f"{pre}.attn.proj",
                          f"{pre}.mlp.fc1", f"{pre}.mlp.fc2"]
            if i < 3:
                names.append(f"layers.{i}.downsample.reduction")
    return names


_made = {}


def case_files(arch, size, snap=False):
    """(dir, cfg) with model.pola (randomized, seed 5), cal.npy (6 images), input.npy (2 images)
    and q.pola (int8_quantize on cal.npy). snap=True first puts every quantized weight on its
    int8 grid with a power-of-two scale (the row's largest |w| set to 127 * 2^k), so the
    weight quantization is exact."""
    key = (arch, size, snap)
    if key in _made:
        return _made[key]
    d = tempfile.mkdtemp(prefix=f"int8_{arch}_")
    atexit.register(shutil.rmtree, d, True)
    cfg = get_config(arch)
    model = build_model(cfg)
    randomize(model, 5)
    if snap:
        with torch.no_grad():
            for p in expected_layers(cfg):
                w = model.get_submodule(p).weight
                amax = w.abs().amax(dim=1, keepdim=True)
                step = torch.exp2(torch.ceil(torch.log2(amax / 127)))
                snapped = torch.round(w / step)
                top = snapped.abs().argmax(dim=1)
                rows = torch.arange(w.shape[0])
                snapped[rows, top] = 127 * torch.sign(snapped[rows, top])
                w.copy_(snapped * step)
    export_model(os.path.join(d, "model.pola"), model.state_dict(), cfg, arch=arch)
    np.save(os.path.join(d, "cal.npy"), random_input(cfg, 6, 11, size).numpy())
    np.save(os.path.join(d, "input.npy"), random_input(cfg, 2, 12, size).numpy())
    quantize_file(os.path.join(d, "model.pola"), os.path.join(d, "q.pola"), os.path.join(d, "cal.npy"), images=256)
    _made[key] = (d, cfg)
    return d, cfg


def float_model(path):
    tensors, meta = safetensors_io.load_file(path)
    model = build_model(json.loads(meta["config"])).to(torch.float64)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    return model


class ModuleInputs:
    """Each layer's raw input, caught by forward pre-hooks on the modules (the Swin S qkv, which
    the reference calls as F.linear, through its attention module's input): a mechanism
    independent of int8_fake_quant's F.linear interception."""

    def __init__(self, model, prefixes):
        self.inputs, self.handles = {}, []
        for p in prefixes:
            parent_name, leaf = p.rsplit(".", 1)
            parent = model.get_submodule(parent_name)
            target = parent if isinstance(parent, WindowSoftmaxAttention) and leaf == "qkv" else model.get_submodule(p)
            self.handles.append(target.register_forward_pre_hook(self._hook(p)))

    def _hook(self, p):
        def hook(module, args):
            self.inputs[p] = args[0].detach().clone()
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


class LinearCalls:
    """Patches F.linear outermost: records (input, weight, bias, output) of every call by weight id."""

    def __init__(self):
        self.calls = {}

    def __enter__(self):
        self.original = F.linear

        def linear(x, w, b=None):
            y = self.original(x, w, b)
            self.calls[id(w)] = (x.detach().clone(), w.detach().clone(), None if b is None else b.detach().clone(),
                                 y.detach().clone())
            return y
        torch.nn.functional.linear = linear
        return self

    def __exit__(self, *exc):
        torch.nn.functional.linear = self.original


@check
def weight_rule_hand_values():
    """Per-channel scales and round-half-to-even against values worked out by hand."""
    k = 2.0 ** -6
    w = np.array([[127 * k, 2.5 * k, 3.5 * k, -2.5 * k, 0.5 * k, -126.5 * k],
                  [0, 0, 0, 0, 0, 0],
                  [-1.0, 0.3, 0, 0, 0, 1.0]], np.float32)
    q, s = quantize_weight(w)
    s1 = np.float32(1.0) / np.float32(127)
    want_q = np.array([[127, 2, 4, -2, 0, -126], [0] * 6, [-127, 38, 0, 0, 0, 127]], np.int8)
    want_s = np.array([k, 1.0, s1], np.float32)
    assert q.dtype == np.int8 and s.dtype == np.float32
    assert np.array_equal(q, want_q), f"q {q.tolist()} != {want_q.tolist()}"
    assert np.array_equal(s, want_s), f"scales {s.tolist()} != {want_s.tolist()}"
    return "ties to even (2.5->2, 3.5->4, -2.5->-2, 0.5->0, -126.5->-126), zero row scale 1, 0.3/(1/127)->38"


@check
def activation_rule_hand_values():
    """Static fake-quant: ties to even, clipping to +-127; scale 1 for max 0; per-token rows."""
    s = 2.0 ** -4
    x = torch.tensor([2.5, 3.5, -2.5, -3.5, 200.0, -200.0, 126.6], dtype=torch.float64) * s
    got = (fake_quant(x, s) / s).tolist()
    assert got == [2, 4, -2, -4, 127, -127, 127], got
    assert input_scale_of(0.0) == 1.0 and input_scale_of(127 * s) == np.float32(s)
    assert input_scale_of(1.0) == np.float32(1.0) / np.float32(127)
    rows = torch.tensor([[0.0, 0.0, 0.0], [1.0, -0.5, 0.25], [-2.0, 1.0, 0.0]], dtype=torch.float64)
    got = fake_quant_token(rows)
    want = torch.tensor([[0, 0, 0], [127, -64, 32], [-127, 64, 0]], dtype=torch.float64) \
        * torch.tensor([[1.0], [1 / 127], [2 / 127]], dtype=torch.float64)
    assert torch.equal(got, want), got
    return "2.5->2, 3.5->4, 200->127; per token: zero row stays 0, -63.5->-64, 31.75->32"


@check
def quantized_layers_are_every_linear_but_head():
    """The layer rule (int8_quantize) equals the table written from the config, for every preset
    and reduced variant of both families; patch embeddings, sr, dwc and head are not in it."""
    from pola_config import PRESETS, REDUCED
    n = 0
    for name in list(PRESETS) + list(REDUCED):
        cfg = get_config(name)
        got = quantized_layer_names(build_model(cfg))
        want = expected_layers(cfg)
        assert sorted(got) == sorted(want), f"{name}: {sorted(set(got) ^ set(want))[:4]}"
        assert not any(("patch_embed" in p) or p.endswith((".sr", ".dwc")) or p == "head" for p in got)
        n += len(got)
    return f"{len(PRESETS) + len(REDUCED)} configs, {n} layers"


@check
def int8_file_layout():
    """int8_quantize's file: checksums verify; I8 exactly for the rule's layers, with F32 scales of
    the right shapes; every other tensor and metadata entry of the float file unchanged; F32 data
    4-byte aligned and before every I8 tensor; `quantization` a JSON object."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        src, dst = os.path.join(d, "model.pola"), os.path.join(d, "q.pola")
        model_integrity.verify(dst)
        a, meta_a = safetensors_io.load_file(src)
        b, meta_b = safetensors_io.load_file(dst)
        with open(dst, "rb") as f:
            blob = f.read()
        n = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8:8 + n])
        header.pop("__metadata__")
        layers = expected_layers(cfg)
        want_names = set(a) | {f"{p}.{s}" for p in layers for s in ("weight_scale", "input_scale")}
        assert set(b) == want_names, sorted(set(b) ^ want_names)[:4]
        for name, e in header.items():
            prefix = name[:-len(".weight")]
            i8 = name.endswith(".weight") and prefix in layers
            assert e["dtype"] == ("I8" if i8 else "F32"), f"{name}: {e['dtype']}"
            if name in a and not i8:
                assert b[name].dtype == np.float32 and np.array_equal(a[name], b[name]), f"{name} changed"
            if i8:
                assert b[name].shape == a[name].shape
                assert b[prefix + ".weight_scale"].shape == (a[name].shape[0],)
                assert b[prefix + ".input_scale"].shape == (1,)
        offsets = sorted((e["data_offsets"][0], e["dtype"]) for e in header.values())
        assert all(o % 4 == 0 for o, t in offsets if t == "F32") and (8 + n) % 8 == 0
        first_i8 = min(o for o, t in offsets if t == "I8")
        assert all(o < first_i8 for o, t in offsets if t == "F32"), "an F32 tensor after an I8 one"
        skip = ("tensor_checksums", "header_checksum", "quantization")
        assert {k: v for k, v in meta_a.items() if k not in skip} == {k: v for k, v in meta_b.items() if k not in skip}
        assert isinstance(json.loads(meta_b["quantization"]), dict)
        notes.append(f"{arch} {len(layers)} I8")
    return ", ".join(notes)


@check
def weights_equal_a_per_element_loop():
    """Every I8 weight and weight scale equals a per-element loop with Python's round() (half to
    even) on the float file's weights."""
    arch, size = CASES[1]
    d, cfg = case_files(arch, size)
    a, _ = safetensors_io.load_file(os.path.join(d, "model.pola"))
    b, _ = safetensors_io.load_file(os.path.join(d, "q.pola"))
    count = 0
    for p in expected_layers(cfg):
        w = a[p + ".weight"]
        for o in range(w.shape[0]):
            row = [float(v) for v in w[o]]
            amax = max(abs(v) for v in row)
            scale = float(np.float32(amax / 127)) if amax else 1.0
            q = [max(-127, min(127, round(v / scale))) for v in row]
            assert float(b[p + ".weight_scale"][o]) == scale, f"{p} row {o} scale"
            assert b[p + ".weight"][o].tolist() == q, f"{p} row {o}"
            count += len(q)
    return f"{arch}: {count} weights"


@check
def input_scales_equal_module_hook_maxima():
    """input_scale = float32(max|x| / 127) with max|x| taken over the calibration images by module
    hooks on the float model (not the F.linear interception the quantizer uses)."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        model = float_model(os.path.join(d, "model.pola"))
        layers = expected_layers(cfg)
        hooks = ModuleInputs(model, layers)
        amax = {p: 0.0 for p in layers}
        cal = np.load(os.path.join(d, "cal.npy"))
        for i in range(len(cal)):       # one image at a time: the maximum is over all of them
            run(model, cal[i:i + 1])
            for p in layers:
                amax[p] = max(amax[p], float(hooks.inputs[p].abs().max()))
        hooks.remove()
        b, _ = safetensors_io.load_file(os.path.join(d, "q.pola"))
        for p in layers:
            want = np.float32(amax[p] / 127)
            got = b[p + ".input_scale"][0]
            assert got == want, f"{arch} {p}: input_scale {got!r}, hooks give {want!r}"
        notes.append(f"{arch} {len(layers)}")
    return "bit-equal: " + ", ".join(notes)


@check
def each_layer_is_an_integer_matmul():
    """Static run of the int8 file: at every quantized layer the GEMM input is on the grid
    clip(rint(x / s_in), -127, 127) of the layer's raw input x (module hooks), and the output
    equals (x_q @ q^T as exact integers) * s_in * s_w + bias computed in numpy from the file."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        qm = QuantizedModel(os.path.join(d, "q.pola"))
        raw, _ = safetensors_io.load_file(os.path.join(d, "q.pola"))
        hooks = ModuleInputs(qm.model, list(qm.layers))
        with LinearCalls() as calls:
            qm.logits(np.load(os.path.join(d, "input.npy")), mode="static")
        hooks.remove()
        worst = 0.0
        clipped = 0
        for p in qm.layers:
            x_in, w, bias, y = calls.calls[id(qm.model.get_submodule(p).weight)]
            s_in = float(raw[p + ".input_scale"][0])
            xq = np.clip(np.rint(hooks.inputs[p].numpy() / s_in), -127, 127)
            clipped += int((np.abs(hooks.inputs[p].numpy() / s_in) > 127.5).sum())
            assert np.array_equal(x_in.numpy(), xq * s_in), f"{arch} {p}: GEMM input is not the quantized raw input"
            q = raw[p + ".weight"].astype(np.int64)
            acc = xq.astype(np.int64).reshape(-1, q.shape[1]) @ q.T
            want = acc * s_in * raw[p + ".weight_scale"].astype(np.float64)
            if p + ".bias" in raw:
                want = want + raw[p + ".bias"].astype(np.float64)
            got = y.numpy().reshape(-1, q.shape[0])
            err = float(np.abs(got - want).max() / np.abs(want).max())
            worst = max(worst, err)
            assert err < 1e-12, f"{arch} {p}: layer output {err:.2e} from the integer computation"
        notes.append(f"{arch} {len(qm.layers)} layers, worst {worst:.1e}, {clipped} inputs clipped")
    return "; ".join(notes)


@check
def dynamic_token_rows_by_numpy():
    """dynamic_token: each GEMM input row is the raw row quantized with max|row|/127 (numpy;
    zero rows of padded Swin windows stay zero)."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        qm = QuantizedModel(os.path.join(d, "q.pola"))
        hooks = ModuleInputs(qm.model, list(qm.layers))
        with LinearCalls() as calls:
            qm.logits(np.load(os.path.join(d, "input.npy")), mode="dynamic_token")
        hooks.remove()
        zero_rows = 0
        for p in qm.layers:
            x = hooks.inputs[p].numpy().reshape(-1, hooks.inputs[p].shape[-1])
            amax = np.abs(x).max(axis=1, keepdims=True)
            s = np.where(amax > 0, amax / 127, 1.0)
            want = np.clip(np.rint(x / s), -127, 127) * s
            got = calls.calls[id(qm.model.get_submodule(p).weight)][0].numpy().reshape(x.shape)
            assert np.array_equal(got, want), f"{arch} {p}"
            zero_rows += int((amax == 0).sum())
        notes.append(f"{arch} ({zero_rows} zero rows)")
    return ", ".join(notes)


@check
def infinite_resolution_limit_is_float():
    """With weights already on their int8 grid (power-of-two scales, so quantizing them is exact),
    float_activations equals the float model bit for bit, and static / dynamic_token with steps
    2^40 / 127 times finer (input scales shrunk to match, clipping at 2^50 steps so nothing is
    clipped) come within 1e-9 of it: the fake quantization is the identity in the limit, so it
    adds nothing but rounding."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size, snap=True)
        x = np.load(os.path.join(d, "input.npy"))
        ref = run(float_model(os.path.join(d, "model.pola")), x)[0].numpy()
        qm = QuantizedModel(os.path.join(d, "q.pola"))
        a, _ = safetensors_io.load_file(os.path.join(d, "model.pola"))
        for p in qm.layers:
            assert np.array_equal(qm.dequantized[p].numpy(), a[p + ".weight"].astype(np.float64)), p
        same = qm.logits(x, mode="float_activations")
        assert np.array_equal(same, ref), f"{arch}: float_activations {rel(same, ref):.2e} from float"
        coarse = rel(qm.logits(x, mode="static"), ref)
        levels = 2.0 ** 40
        saved = int8_fake_quant.QMAX
        try:
            int8_fake_quant.QMAX = 2.0 ** 50
            for layer in qm.layers.values():
                layer["input_scale"] = layer["input_scale"] * (127 / levels)
            fine = {m: rel(qm.logits(x, mode=m), ref) for m in ("static", "dynamic_token")}
        finally:
            int8_fake_quant.QMAX = saved
        assert max(fine.values()) < 1e-9, f"{arch}: {fine}"
        assert coarse > 1e3 * max(fine.values()), f"{arch}: 127 levels {coarse:.2e} vs fine {fine}"
        notes.append(f"{arch}: 127 levels {coarse:.1e}, 2^40 levels {max(fine.values()):.1e}")
    return "; ".join(notes)


@check
def teacher_forcing_reproduces_the_run():
    """int8_fake_quant.teacher_forced, fed a run's own named intermediates, recomputes every
    segment (embeddings, attention and MLP halves, patch merging, head) of that run bit for bit,
    in every mode: the segment cuts and their inputs are right."""
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        qm = QuantizedModel(os.path.join(d, "q.pola"))
        x = np.load(os.path.join(d, "input.npy"))
        for mode in ("static", "dynamic_token", "float_activations"):
            logits, dumps = qm.logits(x, mode=mode, dump=True)
            dumps["logits"] = logits
            again = teacher_forced(qm, dumps, x, mode=mode)
            assert set(again) == {s[3] for s in segments(cfg)}
            for name, a in again.items():
                assert np.array_equal(a.reshape(-1), dumps[name].reshape(-1)), f"{arch} {mode} {name}"
        notes.append(f"{arch} {len(again)} segments")
    return ", ".join(notes)


@check
def float32_run_passes_the_int8_gates():
    """The static reference run in float32 (as the engine computes: roundings within fp32 noise
    of a tie fall either way and flip further ones downstream) passes check_int8_logits.py's
    teacher-forced gates against the float64 reference; both traps fail them. Its logits, not
    teacher forced, are printed for comparison."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "precision"))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity"))
    from check_int8_logits import check_int8_run
    notes = []
    for arch, size in CASES:
        d, cfg = case_files(arch, size)
        qm = QuantizedModel(os.path.join(d, "q.pola"))
        x = np.load(os.path.join(d, "input.npy"))
        logits, dumps = qm.logits(x, mode="static", dtype=torch.float32, dump=True)
        failures = []
        check_int8_run(arch, cfg, qm, x, dumps, logits, 8, failures)
        assert not failures, failures[:3]
        for trap in INT8_TRAPS:
            failures = []
            trapped, tdumps = qm.logits(x, mode="static", traps=[trap], dtype=torch.float32, dump=True)
            check_int8_run(arch, cfg, qm, x, tdumps, trapped, 8, failures)
            assert failures, f"{arch}: a float32 run under trap {trap} passes the gates"
        notes.append(f"{arch}: logits {rel(logits, qm.logits(x, mode='static')):.1e}")
    return "; ".join(notes)


@check
def calibration_sources():
    """load_calibration: a .npy gives its first N images; an IDX directory (gz and plain) the
    first N images preprocessed from the metadata (checked against the formula for a 1:1
    resize: (pixel / 255 - mean) / std)."""
    x = np.arange(5 * 1 * 2 * 3, dtype=np.float32).reshape(5, 1, 2, 3)
    spec = {"input_size": 4, "resize": 4, "crop": 4, "interpolation": "bicubic", "mean": [0.25], "std": [0.5],
            "channels": 1}
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(5, 4, 4), dtype=np.uint8)
    blob = struct.pack(">HBB3I", 0, 8, 3, *pixels.shape) + pixels.tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        assert np.array_equal(load_calibration(os.path.join(tmp, "x.npy"), spec, images=3), x[:3])
        for split, gz in (("train", True), ("t10k", False)):
            path = os.path.join(tmp, f"{split}-images-idx3-ubyte" + (".gz" if gz else ""))
            with (gzip.open if gz else open)(path, "wb") as f:
                f.write(blob)
            got = load_calibration(tmp, spec, images=4, split=split)
            want = ((pixels[:4].astype(np.float32) / np.float32(255) - np.float32(0.25)) / np.float32(0.5))[:, None]
            assert got.shape == (4, 1, 4, 4) and np.abs(got - want).max() < 1e-6, (split, np.abs(got - want).max())
    return ".npy first N; IDX .gz and plain"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    passed = failed = 0
    for fn in CHECKS:
        if args.only not in fn.__name__:
            continue
        start = time.time()
        try:
            note = fn()
            passed += 1
            print(f"PASS {fn.__name__}: {note} [{time.time() - start:.1f}s]", flush=True)
        except Exception as e:
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
