#!/usr/bin/python3
"""Self-checks of the PyTorch reference and its tooling (no engine needed).

  /usr/bin/python3 selftest.py [--only SUBSTRING] [--threads N]

Every check compares two independently computed things, so each can fail. Prints one line per
check, then `N passed, M failed`; exits non-zero on any failure.
"""
import argparse
import io
import json
import os
import pickletools
import sys
import tempfile
import time
import traceback
import zipfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import safetensors_io  # noqa: E402
from dump_names import expected_dump_names  # noqa: E402
from export_model import export_model, read_model_file  # noqa: E402
from pola_attention import linear_attention, polarity_features, quadratic_attention  # noqa: E402
from pola_swin import SwinBlock, shift_mask  # noqa: E402
from pola_pp import rope_angles, rotate_pairs  # noqa: E402
from pola_pp_checkpoint import load_pp_checkpoint, save_pp_checkpoint  # noqa: E402
from pola_pp_config import PP_PARAMS, PP_PRESETS, PP_REDUCED  # noqa: E402
from polaformer_ref import PRESETS, REDUCED, build_model, get_config, parameter_count, run  # noqa: E402
from randomize import input_dependence, logits_look_healthy, random_input, randomize  # noqa: E402
from save_checkpoint import save_checkpoints  # noqa: E402
from spec_state_dict import compare_state_dict, expected_pp_shapes  # noqa: E402
from trap_cases import TRAP_BATCH, TRAP_CASES, TRAP_MARGIN, trap_case_seed  # noqa: E402
from traps import PP_TRAPS, TRAPS  # noqa: E402

PARITY_RTOL = 1e-4      # the parity criterion: max|diff| <= 1e-4 * max|logit|
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def rel_diff(a, b):
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    return ((a - b).abs().max() / b.abs().max()).item()


def random_model(name, seed=1, **options):
    cfg = get_config(name)
    model = build_model(cfg)
    randomize(model, seed, **options)
    return cfg, model


# ---------------------------------------------------------------- attention algebra

@check
def linear_attention_equals_quadratic_form():
    """SPEC 3 step 7 computed in O(N) equals the explicit (phi_q phi_k^T)-normalised form."""
    gen = torch.Generator().manual_seed(5)
    for n_query, n_key, heads, d in [(7, 7, 2, 4), (45, 12, 3, 8), (10, 1, 1, 2), (33, 33, 4, 16)]:
        q = torch.randn(2, heads, n_query, d, generator=gen, dtype=torch.float64)
        k = torch.randn(2, heads, n_key, d, generator=gen, dtype=torch.float64)
        v = torch.randn(2, heads, n_key, d, generator=gen, dtype=torch.float64)
        p = 1 + 4 * torch.rand(1, heads, 1, d, generator=gen, dtype=torch.float64)
        q[0, 0, 0] *= 1e-3  # a near-zero query row, where the eps matters
        feats = polarity_features(q, k, p)
        fast, slow = linear_attention(*feats, v), quadratic_attention(*feats, v)
        err = rel_diff(fast, slow)
        assert err < 1e-12, f"N={n_query} n={n_key}: O(N) vs quadratic rel diff {err:.2e}"
    return "4 shapes, rel diff < 1e-12"


@check
def model_logits_same_with_quadratic_attention():
    """Whole models: L attention in O(N) form vs quadratic form, every reduced variant."""
    worst = 0.0
    for name in REDUCED:
        cfg, model = random_model(name, tiny_query_head=0.01)
        x = random_input(cfg, 2, 1)
        fast, _ = run(model, x)
        slow, _ = run(model, x, quadratic_attention=True)
        worst = max(worst, rel_diff(fast, slow))
    assert worst < 1e-10, f"rel diff {worst:.2e}"
    return f"{len(REDUCED)} variants, worst rel diff {worst:.1e}"


@check
def polarity_features_reference_values():
    """relu(u)^p keeps 0 at 0 and matches u**p for u > 0 (SPEC 8)."""
    u = torch.tensor([-2.0, -1e-30, 0.0, 1e-30, 0.5, 3.0], dtype=torch.float64)
    p = torch.tensor(2.7, dtype=torch.float64)
    q_sim, q_opp, phi = polarity_features(u[None], u[None], p)
    want_pos = torch.where(u > 0, u.clamp(min=0) ** p, torch.zeros_like(u))
    want_neg = torch.where(u < 0, (-u).clamp(min=0) ** p, torch.zeros_like(u))
    for got, want in ((q_sim[0], torch.cat([want_pos, want_neg])), (q_opp[0], torch.cat([want_neg, want_pos]))):
        assert torch.equal(got == 0, want == 0), "zeros must stay exact zeros"
        assert torch.allclose(got, want, rtol=1e-12, atol=0), (got, want)
    assert torch.isfinite(phi).all()
    return "ok"


# ---------------------------------------------------------------- layout and sizes

@check
def state_dict_matches_spec_layout():
    """All presets and reduced variants: keys, shapes and dtypes exactly as SPEC 6 implies."""
    for name in list(PRESETS) + list(REDUCED):
        problems = compare_state_dict(get_config(name), build_model(get_config(name)).state_dict())
        assert not problems, f"{name}: {problems[:6]}"
    return f"{len(PRESETS)} presets + {len(REDUCED)} reduced"


@check
def parameter_counts_match_spec():
    """SPEC 1 (rounded to 0.1 M)."""
    want = {"pola_pvt_tiny": 12.9, "pola_pvt_small": 23.2, "pola_swin_t": 29.3, "pola_swin_s": 50.6}
    got = {n: parameter_count(build_model(get_config(n))) for n in want}
    bad = {n: c for n, c in got.items() if abs(c / 1e6 - want[n]) > 0.05}
    assert not bad, f"counts off: {bad}"
    return ", ".join(f"{n} {c / 1e6:.3f}M" for n, c in got.items())


@check
def swin_windows_shifts_and_masks():
    """Window/shift rules of SPEC 5 on the presets and the mask against an independent rule."""
    model = build_model(get_config("pola_swin_t"))
    layout = [[(b.window, b.shift) for b in stage.blocks] for stage in model.layers]
    assert layout[0] == [(56, 0)] * 2 and layout[1] == [(28, 0)] * 2, layout[:2]
    assert layout[2] == [(7, 0), (7, 3)] * 3 and layout[3] == [(7, 0)] * 2, layout[2:]
    model384 = build_model(get_config("pola_swin_b_384"))
    assert [b.window for b in model384.layers[0].blocks] == [96, 96]
    assert [(b.window, b.shift) for b in model384.layers[2].blocks[:2]] == [(12, 0), (12, 6)]
    assert model384.layers[3].blocks[1].shift == 0
    # Region of a coordinate after the shift: 0 below R-w, 1 below R-s, else 2.
    for r, w, s in [(14, 7, 3), (8, 4, 2), (6, 3, 1)]:
        mask = shift_mask(r, r, w, s)
        n_w = r // w

        def region(c):
            return 0 if c < r - w else (1 if c < r - s else 2)
        for win in range(n_w * n_w):
            wy, wx = divmod(win, n_w)
            labels = [(region(wy * w + t // w), region(wx * w + t % w)) for t in range(w * w)]
            for a in range(w * w):
                for b in range(w * w):
                    want = 0.0 if labels[a] == labels[b] else -100.0
                    assert mask[win, a, b].item() == want, (r, w, s, win, a, b)
    block = SwinBlock(16, 2, 2, 8, "S", 4, 1, 4, 5)
    assert block.attn.relative_position_index.dtype == torch.int64
    return "swin_t / swin_b_384 layout and masks ok"


@check
def relative_position_index_formula():
    """(dy + w - 1) * (2w - 1) + (dx + w - 1), (dy, dx) = query - key, row-major tokens."""
    w = 3
    index = build_model(get_config("reduced_swin_windows")).layers[2].blocks[0].attn.relative_position_index
    for qi in range(w * w):
        for ki in range(w * w):
            dy, dx = qi // w - ki // w, qi % w - ki % w
            assert index[qi, ki].item() == (dy + w - 1) * (2 * w - 1) + (dx + w - 1)
    return "ok"


# ---------------------------------------------------------------- randomization and forward

@check
def randomization_is_seeded_and_spans_ranges():
    cfg, a = random_model("reduced_swin_windows", seed=4)
    _, b = random_model("reduced_swin_windows", seed=4)
    _, c = random_model("reduced_swin_windows", seed=5)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa), "same seed differs"
    differing = [k for k in sa if sa[k].dtype.is_floating_point and not torch.equal(sa[k], sc[k])]
    floats = [k for k in sa if sa[k].dtype.is_floating_point and "attn_mask" not in k]
    assert set(floats) <= set(differing), f"seed-independent: {set(floats) - set(differing)}"
    powers = torch.cat([m.power.flatten() for m in a.modules() if hasattr(m, "power")])
    p = 1 + 4 * torch.sigmoid(powers)
    assert p.min() < 1.1 and p.max() > 4.9, f"p spans {p.min():.2f}..{p.max():.2f}"
    scales = torch.nn.functional.softplus(torch.cat([m.scale.flatten() for m in a.modules() if hasattr(m, "scale")]))
    assert 0.29 < scales.min() < 0.5 and 2.5 < scales.max() < 3.01, f"softplus(scale) {scales.min()}..{scales.max()}"
    for k, v in sa.items():
        if v.dtype.is_floating_point and "attn_mask" not in k:
            assert v.abs().max() > 0, f"{k} all zero"
    return f"p {p.min():.2f}..{p.max():.2f}, softplus(scale) {scales.min():.2f}..{scales.max():.2f}"


@check
def logits_healthy_for_reduced_and_full_models():
    notes = []
    for name in list(REDUCED) + ["pola_pvt_tiny", "pola_swin_t"]:
        cfg, model = random_model(name, seed=2)
        x = random_input(cfg, 2, 2)
        logits, _ = run(model, x)
        ok, why = logits_look_healthy(logits)
        assert ok, f"{name}: {why}"
        dependence = input_dependence(logits)
        assert dependence > 1e-2, f"{name}: logits barely depend on the input ({dependence:.1e})"
        if name.startswith("pola"):
            notes.append(f"{name}: {why}")
    return "; ".join(notes)


@check
def batch_equals_single_images():
    for name in REDUCED:
        cfg, model = random_model(name, seed=3)
        x = random_input(cfg, 3, 3)
        batched, _ = run(model, x)
        single = torch.cat([run(model, x[i:i + 1])[0] for i in range(3)])
        assert rel_diff(batched, single) < 1e-12, name
    return "ok"


@check
def float32_reference_within_parity_tolerance():
    """The float64 oracle and a float32 run agree far inside the 1e-4 criterion."""
    worst = 0.0
    for name in REDUCED:
        cfg, model = random_model(name, seed=6)
        x = random_input(cfg, 2, 6)
        worst = max(worst, rel_diff(run(model, x, dtype=torch.float32)[0], run(model, x)[0]))
    assert worst < PARITY_RTOL / 10, f"{worst:.2e}"
    return f"worst {worst:.1e}"


@check
def dump_names_and_shapes():
    for name in REDUCED:
        cfg, model = random_model(name)
        x = random_input(cfg, 2, 0)
        logits, dumps = run(model, x, dump=True)
        assert list(dumps) == expected_dump_names(cfg), f"{name}: {list(dumps)[:5]}"
        assert torch.equal(dumps["head"], logits)
        for k, v in dumps.items():
            assert v.shape[0] == 2 and (v.dim() == 3 or k in ("pool", "head")), (k, v.shape)
    return "ok"


@check
def every_trap_changes_logits():
    """Each trap moves the logits by >= TRAP_MARGIN x the parity tolerance on its case."""
    seen, worst = set(), []
    for k, (trap, arch, options) in enumerate(TRAP_CASES):
        for seed in (trap_case_seed(k), 11):   # the mismatch suite's model, and one more
            cfg, model = random_model(arch, seed=seed, **options)
            x = random_input(cfg, TRAP_BATCH, seed)
            ref, _ = run(model, x)
            ok, why = logits_look_healthy(ref)
            assert ok, f"{arch} {options}: {why}"
            assert input_dependence(ref) > 1e-2, f"{arch} {options}: logits barely depend on the input"
            trapped, _ = run(model, x, traps=[trap])
            d = rel_diff(trapped, ref)
            assert d >= TRAP_MARGIN * PARITY_RTOL, f"{trap} on {arch} seed {seed}: rel change only {d:.2e}"
            worst.append((d, trap))
        seen.add(trap)
    assert seen == set(TRAPS)
    d, trap = min(worst)
    return f"{len(TRAPS)} flags / {len(TRAP_CASES)} cases; smallest change {d:.1e} ({trap})"


@check
def traps_leave_unrelated_models_alone():
    """A family-specific trap must not touch the other family (guards against flags leaking)."""
    cfg, model = random_model("reduced_pvt_basic")
    x = random_input(cfg, 1, 0)
    ref, _ = run(model, x)
    for trap in [t for t in TRAPS if t.startswith("swin_")]:
        assert torch.equal(run(model, x, traps=[trap])[0], ref), trap
    cfg, model = random_model("reduced_swin_basic")
    x = random_input(cfg, 1, 0)
    ref, _ = run(model, x)
    for trap in [t for t in TRAPS if t.startswith("pvt_")]:
        assert torch.equal(run(model, x, traps=[trap])[0], ref), trap
    return "ok"


# ---------------------------------------------------------------- files

@check
def safetensors_round_trip_and_rejects_corruption():
    gen = np.random.default_rng(0)
    tensors = {"a": gen.standard_normal((3, 5)).astype(np.float32), "b.idx": np.arange(7, dtype=np.int64),
               "empty": np.zeros((0, 4), np.float32), "scalar": np.array(2.5, np.float64),
               "u": gen.integers(0, 255, (2, 3, 4)).astype(np.uint8)}
    meta = {"format": "polaformer", "note": "ünïcode"}
    blob = safetensors_io.encode(tensors, meta)
    (n,) = np.frombuffer(blob[:8], "<u8")
    assert n % 8 == 0, "header not padded to 8"
    back, meta_back = safetensors_io.decode(blob)
    assert meta_back == meta and list(back) == list(tensors)
    for k in tensors:
        assert back[k].dtype == tensors[k].dtype and np.array_equal(back[k], tensors[k]), k
    header = json.loads(blob[8:8 + int(n)])
    bad = []
    bad.append(blob[:-1])                                              # truncated data
    bad.append(blob[:8 + int(n) - 3])                                  # truncated header
    h = dict(header, a=dict(header["a"], shape=[3, 6]))                # shape/bytes mismatch
    bad.append(_reheader(blob, int(n), h))
    h = dict(header, a=dict(header["a"], dtype="Q9"))                  # unknown dtype
    bad.append(_reheader(blob, int(n), h))
    dup = blob[8:8 + int(n)].decode().rstrip().replace('"b.idx"', '"a"', 1).encode()
    bad.append(_reheader(blob, int(n), None, raw=dup))                 # duplicate names
    for i, b in enumerate(bad):
        try:
            safetensors_io.decode(b)
        except safetensors_io.SafetensorsError:
            continue
        raise AssertionError(f"corruption {i} accepted")
    return f"{len(tensors)} tensors round-trip, {len(bad)} corruptions rejected"


def _reheader(blob, n, header, raw=None):
    text = raw if raw is not None else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return np.array([len(text)], "<u8").tobytes() + text + blob[8 + n:]


@check
def exported_model_file_round_trip():
    """Exporter -> independent reader -> rebuilt model gives the same logits; FORMAT.md rules."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ["reduced_swin_windows", "reduced_pvt_sr"]:
            cfg, model = random_model(name, seed=8)
            path = os.path.join(tmp, f"{name}.pola")
            export_model(path, model.state_dict(), cfg, arch=name)
            tensors, cfg_back, meta = read_model_file(path)
            assert cfg_back == cfg, "config changed"
            assert meta["format_version"] == "2" and meta["arch"] == "custom"
            assert all(isinstance(v, str) for v in meta.values())
            assert len(json.loads(meta["classes"])) == cfg["num_classes"]
            assert json.loads(meta["preprocess"])["crop"] == cfg["img_size"]
            state = model.state_dict()
            dropped = {k for k in state if k.endswith(("relative_position_index", "attn_mask"))}
            assert set(tensors) == set(state) - dropped, "tensor set differs"
            assert all(t.dtype == np.float32 for t in tensors.values())
            if cfg["family"] == "swin":
                assert dropped, "test case should contain recomputable buffers"
            rebuilt = build_model(cfg)
            missing, unexpected = rebuilt.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()},
                                                          strict=False)
            assert set(missing) == dropped and not unexpected
            x = random_input(cfg, 2, 8)
            assert torch.equal(run(rebuilt, x)[0], run(model, x)[0]), "logits differ after round trip"
        preset_path = os.path.join(tmp, "tiny.pola")
        cfg = get_config("pola_pvt_tiny")
        model = build_model(cfg)
        export_model(preset_path, model.state_dict(), cfg, arch="pola_pvt_tiny")
        tensors, _, meta = read_model_file(preset_path)
        assert meta["arch"] == "pola_pvt_tiny" and "norm.weight" in tensors, "PVT norm.* must be kept"
        assert json.loads(meta["preprocess"])["resize"] == 256
    return "ok"


@check
def checkpoint_forms_load_back():
    with tempfile.TemporaryDirectory() as tmp:
        cfg, model = random_model("reduced_swin_windows", seed=9)
        arch = "reduced_swin_windows"
        paths = save_checkpoints(tmp, model, cfg, arch, ["wrapped", "bare", "safetensors"], seed=9)
        state = model.state_dict()
        wrapped = torch.load(paths[0])
        assert set(wrapped) == {"model", "optimizer", "lr_scheduler", "epoch", "max_accuracy", "config"}
        assert type(wrapped["config"]).__name__ == "CfgNode" and wrapped["epoch"] == 3
        assert len(wrapped["optimizer"]["state"]) == len(list(model.parameters()))
        for k, v in state.items():
            assert torch.equal(wrapped["model"][k], v), f"wrapped {k}"
        # The pickle must name our custom class, so a plain unpickler cannot build it.
        with zipfile.ZipFile(paths[0]) as z:
            pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
        globals_seen = _pickle_globals(pkl)
        assert ("training_config", "CfgNode") in globals_seen, sorted(globals_seen)
        bare = torch.load(paths[1])
        assert list(bare) == list(state) and all(torch.equal(bare[k], state[k]) for k in state)
        tensors, _ = safetensors_io.load_file(paths[2])
        assert set(tensors) == set(state)
        idx = [k for k in tensors if k.endswith("relative_position_index")]
        assert idx and all(tensors[k].dtype == np.int64 for k in idx)
        assert all(np.array_equal(tensors[k], state[k].numpy()) for k in state)
    return "wrapped (custom CfgNode in pickle), bare, safetensors"


def _pickle_globals(pkl):
    """(module, name) pairs a pickle imports; handles GLOBAL and STACK_GLOBAL."""
    found, strings = set(), []
    for op, arg, _ in pickletools.genops(io.BytesIO(pkl)):
        if op.name == "GLOBAL":
            found.add(tuple(arg.split(" ", 1)))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add((strings[-2], strings[-1]))
    return found


# ---------------------------------------------------------------- PolaFormer++ (pola_pp.py)

@check
def pp_state_dict_and_parameter_counts():
    """Keys/shapes/dtypes vs SPEC-polaformerpp 3 (independent table), parameter counts vs 1."""
    notes = []
    for name in list(PP_PRESETS) + list(PP_REDUCED):
        cfg = get_config(name)
        floats, _ = expected_pp_shapes(cfg)
        counted = sum(int(np.prod(shape)) for k, shape in floats.items() if not k.endswith(
            ("running_mean", "running_var", ".angle")))
        if name in PP_PARAMS:
            assert counted == PP_PARAMS[name], f"{name}: {counted} != {PP_PARAMS[name]}"
        if name in ("pola_pp_b4", "pola_pp_b5"):
            continue   # large; their table is checked above, the model builder on the others
        model = build_model(cfg)
        problems = compare_state_dict(cfg, model.state_dict())
        assert not problems, f"{name}: {problems[:5]}"
        if name in PP_PARAMS:
            assert parameter_count(model) == PP_PARAMS[name], name
            notes.append(f"{name[5:]} {parameter_count(model)}")
    return ", ".join(notes) + "; b4/b5 by table"


@check
def pp_rope_against_spec_formulas():
    """Angle buffer = 1/10000^linspace(0,1,D/4) (float32, each twice); the rotation equals the
    complex product per interleaved pair; <R_n a, R_m b> depends only on the 2-D offset."""
    gen = torch.Generator().manual_seed(3)
    for width in (8, 12, 32, 64, 128):
        m = width // 4
        theta = [1.0 / 10000.0 ** (j / (m - 1)) if m > 1 else 1.0 for j in range(m)]
        got = rope_angles(width)
        want = torch.tensor(theta, dtype=torch.float64).repeat_interleave(2)
        assert got.dtype == torch.float32 and (got.double() - want).abs().max() < 1e-7, width
    model = build_model(get_config("reduced_pp_basic")).double()   # tables in float64
    rope = model.layers[0].RoPE_linear
    height, width = 5, 7
    sin, cos = rope.tables(height, width)
    dim = sin.shape[1]
    a = torch.randn(height * width, dim, generator=gen, dtype=torch.float64)
    rotated = rotate_pairs(a, sin, cos)
    angle = rope.angle.double()
    for n in (0, 8, 34):
        r, c = divmod(n, width)
        phase = torch.cat([r * angle, c * angle])[0::2]
        z = torch.complex(a[n, 0::2], a[n, 1::2]) * torch.polar(torch.ones_like(phase), phase)
        assert torch.allclose(rotated[n, 0::2], z.real) and torch.allclose(rotated[n, 1::2], z.imag), n
    u, w = (torch.randn(dim, generator=gen, dtype=torch.float64) for _ in range(2))
    gram = rotate_pairs(u.expand(height * width, dim), sin, cos) @ rotate_pairs(w.expand(height * width, dim), sin, cos).T
    for n, m, n2, m2 in ((8, 0, 9, 1), (20, 13, 27, 20), (3, 30, 4, 31)):   # equal (dr, dc) offsets
        assert abs(gram[n, m] - gram[n2, m2]) < 1e-12, (n, m)
    assert abs(gram[17, 17] - u @ w) < 1e-12 and abs(gram[8, 0] - gram[0, 8]) > 1e-6
    return "angles, pair rotation, relative-offset property"


def _pp_linear_attention_explicit(attn, x, height, width, sin, cos):
    """SPEC-polaformerpp 2.7 in its formula form: an explicit N x N kernel per head and path."""
    n, c = x.shape[1], x.shape[2]
    h, d = attn.heads, attn.head_dim
    y = x @ attn.qkvg.weight.T + attn.qkvg.bias
    q, k, v, g = y[..., :c], y[..., c:2 * c], y[..., 2 * c:3 * c], y[..., 3 * c:]
    lepe = torch.nn.functional.conv2d(v.transpose(1, 2).reshape(-1, c, height, width), attn.lepe.weight,
                                      attn.lepe.bias, padding=2, groups=c).flatten(2).transpose(1, 2)
    out = torch.zeros_like(v)
    for t in range(h):
        qt, kt, vt = (u[..., t * d:(t + 1) * d] for u in (q, k, v))
        pos, neg = qt.clamp(min=0), (-qt).clamp(min=0)
        s1, s2 = torch.sigmoid(attn.s1[0, t, 0]), torch.sigmoid(attn.s2[0, t, 0])
        psi = torch.exp(torch.cat([kt.clamp(min=0), (-kt).clamp(min=0)], -1)) - 1
        for phi, vp, lo in ((torch.exp(torch.cat([pos, neg], -1) * s1) - 1, vt[..., :d // 2], 0),
                            (torch.exp(torch.cat([neg, pos], -1) * s2) - 1, vt[..., d // 2:], d // 2)):
            kernel = rotate_pairs(phi, sin, cos) @ rotate_pairs(psi, sin, cos).transpose(1, 2) / n
            z = phi @ psi.mean(dim=1).unsqueeze(-1)
            out[..., t * d + lo:t * d + lo + d // 2] = (kernel @ vp) / (z + 1e-6)
    return ((out + lepe) * g) @ attn.proj.weight.T + attn.proj.bias


@check
def pp_linear_attention_equals_explicit_kernel():
    """The O(N) module equals the explicit sum over token pairs (rotated numerator, un-rotated
    mean-based normaliser + 1e-6), per head and polarity path."""
    worst = 0.0
    for name, (height, width) in (("reduced_pp_basic", (6, 5)), ("reduced_pp_mixed", (4, 7))):
        model = build_model(get_config(name)).double()
        randomize(model, 12)
        model.double()
        stage = next(i for i, t in enumerate(model.cfg["attn_types"]) if t == "L")
        attn = model.layers[stage].blocks[0].attn
        sin, cos = model.layers[stage].RoPE_linear.tables(height, width)
        x = torch.randn(2, height * width, model.cfg["embed_dims"][stage], dtype=torch.float64,
                        generator=torch.Generator().manual_seed(1))
        from traps import RunContext
        fast = attn(x, height, width, (sin, cos), RunContext())
        slow = _pp_linear_attention_explicit(attn, x, height, width, sin, cos)
        worst = max(worst, rel_diff(fast, slow))
    assert worst < 1e-12, f"{worst:.2e}"
    return f"rel diff {worst:.1e}"


@check
def pp_logits_healthy_any_size_and_batch():
    """Reduced variants and b0: healthy, input-dependent logits at square and odd sizes; a batch
    equals its images run one by one; float32 within the parity tolerance."""
    notes = []
    for name, size in (("reduced_pp_basic", None), ("reduced_pp_basic", (33, 50)),
                       ("reduced_pp_mixed", (47, 29)), ("pola_pp_b0", (77, 50))):
        cfg, model = random_model(name, seed=2)
        x = random_input(cfg, 3, 2, size)
        logits, _ = run(model, x)
        ok, why = logits_look_healthy(logits)
        assert ok, f"{name} {size}: {why}"
        assert input_dependence(logits) > 1e-2, f"{name} {size}: logits barely depend on the input"
        single = torch.cat([run(model, x[i:i + 1])[0] for i in range(3)])
        assert rel_diff(logits, single) < 1e-12, f"{name} {size}: batch != single"
        f32 = rel_diff(run(model, x, dtype=torch.float32)[0], logits)
        assert f32 < PARITY_RTOL / 10, f"{name} {size}: float32 {f32:.2e}"
        notes.append(f"{name[-5:] if name.startswith('reduced') else name[5:]} {size or 'native'} f32 {f32:.0e}")
    return "; ".join(notes)


@check
def pp_traps_change_logits():
    """Each PolaPP trap moves the logits by >= TRAP_MARGIN x the parity tolerance; the PVT/Swin
    traps leave PolaPP alone and the PolaPP traps leave PVT/Swin alone."""
    out = []
    for name in ("reduced_pp_basic", "reduced_pp_mixed"):
        cfg, model = random_model(name, seed=21)
        x = random_input(cfg, 2, 21)
        ref, _ = run(model, x)
        for trap in PP_TRAPS:
            d = rel_diff(run(model, x, traps=[trap])[0], ref)
            assert d >= TRAP_MARGIN * PARITY_RTOL, f"{trap} on {name}: {d:.2e}"
            out.append(d)
        for trap in TRAPS:
            assert torch.equal(run(model, x, traps=[trap])[0], ref), f"{trap} touched {name}"
    for name in ("reduced_pvt_basic", "reduced_swin_mixed"):
        cfg, model = random_model(name)
        x = random_input(cfg, 1, 0)
        ref, _ = run(model, x)
        for trap in PP_TRAPS:
            assert torch.equal(run(model, x, traps=[trap])[0], ref), f"{trap} touched {name}"
    return f"{len(PP_TRAPS)} flags; smallest change {min(out):.1e}"


@check
def pp_checkpoint_layout_loads_back():
    """The authors' layout: model + state_dict_ema (+ optimizer, ...) and a pickled
    yacs.config.CfgNode; both weight sets load strictly and give clearly different logits."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, model = random_model("reduced_pp_basic", seed=8)
        path = os.path.join(tmp, "max_ema_acc.pth")
        raw, ema = save_pp_checkpoint(path, model, "reduced_pp_basic", seed=8)
        with zipfile.ZipFile(path) as z:
            pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
        assert ("yacs.config", "CfgNode") in _pickle_globals(pkl), sorted(_pickle_globals(pkl))
        try:
            torch.load(path)
            yacs_needed = False
        except ModuleNotFoundError:
            yacs_needed = True
        ckpt = load_pp_checkpoint(path)
        assert set(ckpt) == {"model", "state_dict_ema", "optimizer", "lr_scheduler", "max_accuracy",
                             "max_accuracy_e", "epoch", "config"}, sorted(ckpt)
        assert ckpt["config"].MODEL.NUM_CLASSES == cfg["num_classes"]
        assert list(ckpt["model"]) == list(ckpt["state_dict_ema"]) == list(model.state_dict())
        assert not any(k.startswith("module.") for k in ckpt["model"])
        x = random_input(cfg, 2, 8)
        logits = {}
        for which in ("model", "state_dict_ema"):
            fresh = build_model(cfg)
            fresh.load_state_dict(ckpt[which], strict=True)
            logits[which] = run(fresh, x)[0]
        assert torch.equal(logits["model"], run(model, x)[0])
        d = rel_diff(logits["state_dict_ema"], logits["model"])
        assert d >= TRAP_MARGIN * PARITY_RTOL, f"EMA vs raw only {d:.2e}"
        for k, v in ckpt["state_dict_ema"].items():
            if v.dtype.is_floating_point and not k.endswith(".angle"):
                assert not torch.equal(v, ckpt["model"][k]), f"EMA {k} equals raw"
    return f"EMA vs raw logits {d:.2f}; plain torch.load {'needs yacs' if yacs_needed else 'works (yacs installed)'}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run checks whose name contains this")
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
        except Exception as e:  # report and continue with the other checks
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
