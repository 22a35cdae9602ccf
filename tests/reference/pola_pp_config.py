"""PolaFormer++ (PolaPP) configurations, written from /work/shared/SPEC-polaformerpp.md section 1.

Kept apart from pola_config.PRESETS on purpose: the PVT/Swin presets feed the exporter
(weights/FORMAT.md), make_case.py and the parity suites, none of which know this family yet.

A config is a plain dict:
  family "pp", img_size, in_chans, num_classes, embed_dims[4], depths[4], num_heads[4],
  mlp_ratio (one value, 3.5 in every released variant), attn_types[4] ("L" polarity linear
  attention, "S" global softmax attention; released: L, L, S, S), projection (head width P),
  layer_scale_init[4] (the gamma init values; the checkpoint holds the trained ones).
"""
import copy

PP_KEYS = ("family", "img_size", "in_chans", "num_classes", "embed_dims", "depths", "num_heads",
           "mlp_ratio", "attn_types", "projection", "layer_scale_init")


def _pp(dims, depths, heads, projection=2048, gamma=(1.0, 1.0, 1.0, 1.0)):
    return {
        "family": "pp", "img_size": 224, "in_chans": 3, "num_classes": 1000,
        "embed_dims": list(dims), "depths": list(depths), "num_heads": list(heads),
        "mlp_ratio": 3.5, "attn_types": ["L", "L", "S", "S"], "projection": projection,
        "layer_scale_init": list(gamma),
    }


# SPEC-polaformerpp section 1 table.
PP_PRESETS = {
    "pola_pp_b0": _pp([32, 64, 128, 384], [2, 2, 2, 2], [1, 2, 4, 12]),
    "pola_pp_b1": _pp([32, 64, 192, 384], [2, 2, 4, 2], [1, 2, 6, 12]),
    "pola_pp_b2": _pp([64, 128, 256, 512], [2, 2, 6, 2], [1, 2, 4, 8]),
    "pola_pp_b3": _pp([64, 128, 320, 512], [3, 5, 9, 3], [1, 2, 5, 8]),
    "pola_pp_b4": _pp([96, 192, 384, 512], [4, 6, 12, 6], [1, 2, 6, 8], gamma=(1, 1, 1e-6, 1e-6)),
    "pola_pp_b5": _pp([96, 192, 448, 640], [4, 7, 19, 8], [1, 2, 7, 10], projection=2560,
                      gamma=(1e-6,) * 4),
}

# Parameter counts the spec measured on the authors' model (section 1, "params (counted)").
PP_PARAMS = {"pola_pp_b0": 7_548_712, "pola_pp_b1": 9_227_496, "pola_pp_b2": 16_450_664,
             "pola_pp_b3": 27_145_896, "pola_pp_b4": 49_798_792, "pola_pp_b5": 97_773_000}

# Config TYPE / model name in the authors' yacs config (SPEC-polaformerpp section 1).
PP_TYPES = {f"pola_pp_b{i}": (f"polab{i}", f"pola_b{i}_patch4_224") for i in range(6)}

# Small models for fast self-checks; every code path of the released family, plus odd grids.
PP_REDUCED = {
    # One block per stage; head dims 8 (the smallest that keeps d % 4 == 0 with d/4 = 2 angles),
    # 12 and 16; an input of 40 gives grids 10, 5, 3, 2 (ceil at the odd sizes).
    "reduced_pp_basic": dict(_pp([16, 24, 48, 64], [1, 1, 1, 1], [2, 2, 4, 4], projection=96),
                             img_size=40, num_classes=17),
    # Two blocks per stage, stem width 8, mixed attention order (S in stage 1, L in stage 4).
    "reduced_pp_mixed": dict(_pp([16, 32, 48, 64], [2, 2, 2, 1], [1, 2, 3, 2], projection=80),
                             img_size=48, num_classes=11, attn_types=["S", "L", "S", "L"]),
}


def get_pp_config(name):
    if name in PP_PRESETS:
        return copy.deepcopy(PP_PRESETS[name])
    if name in PP_REDUCED:
        return copy.deepcopy(PP_REDUCED[name])
    raise KeyError(f"unknown PolaPP architecture {name!r}; known: {sorted(PP_PRESETS) + sorted(PP_REDUCED)}")


def ffn_dim(cfg, stage):
    return int(cfg["mlp_ratio"] * cfg["embed_dims"][stage])


def validate_pp_config(cfg):
    if cfg.get("family") != "pp":
        raise ValueError(f"not a PolaPP config: family {cfg.get('family')!r}")
    if set(cfg) != set(PP_KEYS):
        raise ValueError(f"PolaPP config keys: missing {sorted(set(PP_KEYS) - set(cfg))}, "
                         f"extra {sorted(set(cfg) - set(PP_KEYS))}")
    for k in ("embed_dims", "depths", "num_heads", "attn_types", "layer_scale_init"):
        if len(cfg[k]) != 4:
            raise ValueError(f"{k} must have 4 entries")
    if cfg["embed_dims"][0] % 2:
        raise ValueError("the stem width is C1/2: C1 must be even")
    for i, (c, h, t) in enumerate(zip(cfg["embed_dims"], cfg["num_heads"], cfg["attn_types"])):
        if c % h:
            raise ValueError(f"stage {i}: dim {c} not divisible by {h} heads")
        if (c // h) % 4:
            # Both RoPE tables hold d/4 (softmax) or 2d/4 (linear) angles, each used for a row
            # half and a column half of interleaved pairs: d must be a multiple of 4.
            raise ValueError(f"stage {i}: head dim {c // h} must be divisible by 4 (2-D RoPE)")
        if t not in ("L", "S"):
            raise ValueError(f"stage {i}: attention type {t!r} (L or S)")
    return cfg
