#!/usr/bin/python3
"""`pola attention-map` against the PyTorch reference (tests/reference).

For small PVT (with spatial reduction) and Swin (with real and shifted windows) models this
runs the reference on the very input the engine saw (`pola preprocess` with the model's
spec), records the reference's own polarity features of the chosen block (q_sim, q_opp, phi_k
from pola_attention.polarity_features: after the positional encoding, softplus(scale) and the
power), and computes the row of the attention matrix of one query from them in float64:

  A_sim[j] = q_sim . phi_k[j] / sum_j' q_sim . phi_k[j'],  A_opp likewise with q_opp,
  map = mean over heads of (A_sim + A_opp) / 2, placed on the block's key grid
  (for Swin: on the window's tokens, found by rolling and partitioning a token-index grid
  with the reference's own window functions; 0 elsewhere).

Checks: the engine's --npy map sums to 1, equals the reference map, the PNG has the
expected size, `-o map.jpg` writes a JPEG (decoded by PIL) of the same picture, `-o map.webp`
is refused before anything is written, and bad --block / --query values exit 1 naming the
problem.

  /usr/bin/python3 check_attention_map.py --pola build/apps/pola [--keep DIR]
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import zlib

import numpy as np
import torch

REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")
sys.path.insert(0, REFERENCE)

import pola_attention  # noqa: E402
import safetensors_io  # noqa: E402
from make_case import make_case  # noqa: E402
from pola_config import get_config, stage_resolutions  # noqa: E402
from pola_swin import window_and_shift, window_partition  # noqa: E402
from polaformer_ref import build_model, run  # noqa: E402

from cli_fixtures import pola_ok  # noqa: E402

# (arch, seed, [(block, (x, y) query pixel), ...]); queries include corners so shifted
# windows that wrap around the grid edge are covered.
CASES = [
    ("reduced_pvt_sr", 5, [("block1.0", (0, 0)), ("block1.1", (40, 17)), ("block2.0", (71, 71)),
                           ("block3.0", (10, 50)), ("block4.0", (33, 33))]),
    ("reduced_swin_windows", 6, [("layers.0.blocks.0", (30, 70)), ("layers.0.blocks.1", (0, 0)),
                                 ("layers.0.blocks.1", (95, 95)), ("layers.0.blocks.1", (50, 40)),
                                 ("layers.1.blocks.1", (20, 90))]),
]


def write_photo(path):
    import skimage.data
    import skimage.io
    skimage.io.imsave(path, skimage.data.chelsea(), check_contrast=False)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    return struct.unpack(">II", head[16:24])


def load_reference(model_path):
    tensors, meta = safetensors_io.load_file(model_path)
    cfg = json.loads(meta["config"])
    model = build_model(cfg)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    assert not unexpected, unexpected
    assert all(m.rsplit(".", 1)[-1] in ("attn_mask", "relative_position_index") for m in missing), missing
    return model, cfg, meta


def capture_features(model, x, block):
    """The reference's (q_sim, q_opp, phi_k) of `block` for input x (float64)."""
    attn = model.get_submodule(block + ".attn")
    seen, active = {}, [False]
    original = pola_attention.polarity_features

    def recording(q, k, p):
        out = original(q, k, p)
        if active[0]:
            seen["features"] = [t.detach().clone() for t in out]
        return out

    pre = attn.register_forward_pre_hook(lambda *_: active.__setitem__(0, True))
    post = attn.register_forward_hook(lambda *_: active.__setitem__(0, False))
    pola_attention.polarity_features = recording
    try:
        run(model, torch.from_numpy(x), dtype=torch.float64)
    finally:
        pola_attention.polarity_features = original
        pre.remove()
        post.remove()
    return seen["features"]


def row_weights(q_feat, phi_k):
    """(h, 2d) query features, (h, n, 2d) key features -> (h, n) normalised weights."""
    scores = torch.einsum("hc,hnc->hn", q_feat, phi_k)
    return scores / scores.sum(dim=-1, keepdim=True)


def reference_map(cfg, features, block, qx, qy):
    q_sim, q_opp, phi_k = features                 # (S, h, tokens, 2d), S = images or windows
    stage = int(block[5]) - 1 if cfg["family"] == "pvt" else int(block.split(".")[1])
    R = stage_resolutions(cfg)[stage]
    ty, tx = qy * R // cfg["img_size"], qx * R // cfg["img_size"]
    if cfg["family"] == "pvt":
        i = ty * R + tx
        w = (row_weights(q_sim[0, :, i], phi_k[0]) + row_weights(q_opp[0, :, i], phi_k[0])) / 2
        side = int(round(phi_k.shape[2] ** 0.5))
        return w.mean(0).reshape(side, side).numpy()
    window, shift = window_and_shift(R, cfg["window_size"], int(block.split(".")[-1]))
    # Which original token sits at each (window, position) slot: roll + partition an index grid.
    ids = torch.arange(R * R, dtype=torch.float64).reshape(1, R, R, 1)
    if shift:
        ids = torch.roll(ids, shifts=(-shift, -shift), dims=(1, 2))
    slots = window_partition(ids, window).squeeze(-1).long()    # (nW, w*w)
    win, pos = [int(v) for v in torch.nonzero(slots == ty * R + tx)[0]]
    w = (row_weights(q_sim[win, :, pos], phi_k[win]) + row_weights(q_opp[win, :, pos], phi_k[win])) / 2
    full = np.zeros(R * R)
    full[slots[win].numpy()] = w.mean(0).numpy()
    return full.reshape(R, R)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pola", required=True)
    ap.add_argument("--keep", help="work in this directory and keep it")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="pola_attention_map_") as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        photo = os.path.join(work, "chelsea.png")
        write_photo(photo)
        worst = 0.0
        for arch, seed, queries in CASES:
            case = os.path.join(work, arch)
            make_case(case, get_config(arch), arch=arch, seed=seed, batch=1)
            model_path = os.path.join(case, "model.pola")
            model, cfg, meta = load_reference(model_path)
            x_path = os.path.join(case, "photo.npy")
            pola_ok(args, "preprocess", photo, "--spec", meta["preprocess"], "-o", x_path)
            x = np.load(x_path)
            for block, (qx, qy) in queries:
                png, npy = os.path.join(case, f"{block}_{qx}_{qy}.png"), os.path.join(case, f"{block}_{qx}_{qy}.npy")
                pola_ok(args, "attention-map", "-m", model_path, photo, "--block", block, "--query", f"{qx},{qy}",
                     "-o", png, "--npy", npy, "--zoom", "2", "--threads", "1")
                got = np.load(npy).astype(np.float64)
                want = reference_map(cfg, capture_features(model, x, block), block, qx, qy)
                where = f"{arch} {block} query ({qx},{qy})"
                assert got.shape == want.shape, f"{where}: map shape {got.shape}, reference {want.shape}"
                assert abs(got.sum() - 1) < 1e-5, f"{where}: map sums to {got.sum()}"
                # Engine q, k are float32 and raised to powers up to 5: relative error ~1e-5 per weight.
                err = np.abs(got - want).max() / want.max()
                worst = max(worst, err)
                assert err < 1e-4, f"{where}: max |engine - reference| / max = {err:.3g}"
                assert png_size(png) == (2 * cfg["img_size"],) * 2, f"{where}: PNG size {png_size(png)}"
                print(f"ok  {where}: keys {got.size}, max weight {want.max():.4f}, rel. error {err:.2e}")
        # The output's extension picks the format: a real JPEG for .jpg, the same picture as the PNG.
        from PIL import Image
        pvt_model = os.path.join(work, "reduced_pvt_sr", "model.pola")
        same = ["-m", pvt_model, photo, "--block", "block2.0", "--query", "20,30", "--zoom", "3", "--threads", "1"]
        png, jpg = os.path.join(work, "map.png"), os.path.join(work, "map.JPG")
        pola_ok(args, "attention-map", *same, "-o", png)
        pola_ok(args, "attention-map", *same, "-o", jpg)
        with open(jpg, "rb") as f:
            assert f.read(3) == b"\xff\xd8\xff", f"{jpg}: does not start like a JPEG"
        with Image.open(jpg) as j, Image.open(png) as p:
            assert j.format == "JPEG" and j.size == p.size, (j.format, j.size, p.size)
            diff = np.abs(np.asarray(j.convert("RGB"), np.float64) - np.asarray(p.convert("RGB"), np.float64))
        assert diff.mean() < 3, f"the JPEG differs from the PNG by {diff.mean():.2f} levels on average"
        print(f"ok  -o map.JPG: a JPEG of the PNG's picture (mean difference {diff.mean():.2f} levels)")
        webp = os.path.join(work, "map.webp")
        r = pola_ok(args, "attention-map", *same, "-o", webp, expect=1)
        assert r.stderr.startswith("pola: error: " + webp) and "PNG" in r.stderr and "JPEG" in r.stderr, r.stderr
        assert not os.path.exists(webp), f"{webp} written although refused"
        print("ok  -o map.webp: refused, naming the formats written")

        # Refusals name what is wrong.
        out = os.path.join(work, "bad.png")
        r = pola_ok(args, "attention-map", "-m", pvt_model, photo, "--block", "block9.0", "--query", "1,1", "-o", out,
                 expect=1)
        assert "block9.0" in r.stderr and "block1.0" in r.stderr, r.stderr
        r = pola_ok(args, "attention-map", "-m", pvt_model, photo, "--block", "block1.99999999999999999999",
                 "--query", "1,1", "-o", out, expect=1)
        assert "no such block" in r.stderr, r.stderr
        r = pola_ok(args, "attention-map", "-m", pvt_model, photo, "--block", "block1.0", "--query", "72,0", "-o", out,
                 expect=1)
        assert "outside" in r.stderr, r.stderr
        r = pola_ok(args, "attention-map", "-m", pvt_model, photo, "--block", "block1.0", "--query", "3;4", "-o", out,
                 expect=1)
        assert "X,Y" in r.stderr, r.stderr
        print(f"attention-map matches the reference (worst relative error {worst:.2e})")


if __name__ == "__main__":
    main()
