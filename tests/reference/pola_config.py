"""Model configurations: the eight released presets, reduced variants and validation.

A config is a plain dict with exactly the keys of weights/FORMAT.md's `config`
object, so the same dict is what the exporter writes into the model file.
"""
import copy
import json

COMMON_KEYS = ("family", "img_size", "in_chans", "num_classes", "embed_dims", "depths",
               "num_heads", "mlp_ratios", "attn_types", "alpha", "kernel_size")
PVT_KEYS = COMMON_KEYS + ("patch_sizes", "sr_ratios")
SWIN_KEYS = COMMON_KEYS + ("patch_size", "window_size", "window_size_softmax")


def _pvt(depths):
    return {
        "family": "pvt", "img_size": 224, "in_chans": 3, "num_classes": 1000,
        "embed_dims": [64, 128, 320, 512], "depths": list(depths), "num_heads": [1, 2, 5, 8],
        "mlp_ratios": [8, 8, 4, 4], "attn_types": ["L", "L", "L", "L"], "alpha": 4,
        "kernel_size": 5, "patch_sizes": [4, 2, 2, 2], "sr_ratios": [1, 1, 1, 1],
    }


def _swin(base_dim, depths, heads, img_size=224, window=56):
    return {
        "family": "swin", "img_size": img_size, "in_chans": 3, "num_classes": 1000,
        "embed_dims": [base_dim * 2 ** i for i in range(4)], "depths": list(depths),
        "num_heads": list(heads), "mlp_ratios": [4, 4, 4, 4], "attn_types": ["L", "L", "S", "S"],
        "alpha": 4, "kernel_size": 5, "patch_size": 4, "window_size": window,
        # SPEC 5: S blocks use window 7, or 12 when the L window exceeds 56.
        "window_size_softmax": 12 if window > 56 else 7,
    }


# SPEC section 1.
PRESETS = {
    "pola_pvt_tiny": _pvt([2, 2, 2, 2]),
    "pola_pvt_small": _pvt([3, 4, 6, 3]),
    "pola_pvt_medium": _pvt([3, 4, 18, 3]),
    "pola_pvt_large": _pvt([3, 8, 27, 3]),
    "pola_swin_t": _swin(96, [2, 2, 6, 2], [3, 6, 12, 24]),
    "pola_swin_s": _swin(96, [2, 2, 18, 2], [3, 6, 12, 24]),
    "pola_swin_b": _swin(128, [2, 2, 18, 2], [4, 8, 16, 32]),
    "pola_swin_b_384": _swin(128, [2, 2, 18, 2], [4, 8, 16, 32], img_size=384, window=96),
}

# Small models that still exercise every code path the spec describes in general.
REDUCED = {
    # One block per stage, odd head counts, token counts that are no multiple of 16
    # (30x30, 15x15, 5x5), patch sizes that are not [4,2,2,2], a 1-channel input.
    "reduced_pvt_basic": dict(_pvt([1, 1, 1, 1]), img_size=60, in_chans=1, num_classes=37,
                              embed_dims=[48, 48, 96, 60], num_heads=[3, 1, 2, 5],
                              mlp_ratios=[2, 3, 2, 1], patch_sizes=[2, 2, 3, 1], sr_ratios=[1, 1, 1, 1]),
    # Spatial reduction (n = N/r^2 keys, v interpolated back to N tokens): r=2 in stages 1
    # and 3, r=3 in stage 2; two blocks in stage 1. Stage grids 18,18,18,9.
    "reduced_pvt_sr": dict(_pvt([2, 1, 1, 1]), img_size=72, num_classes=21,
                           embed_dims=[32, 48, 96, 64], num_heads=[1, 3, 2, 2],
                           mlp_ratios=[2, 2, 2, 2], patch_sizes=[4, 1, 1, 2], sr_ratios=[2, 3, 2, 1]),
    # One block per stage, all stages attend globally.
    "reduced_swin_basic": dict(_swin(24, [1, 1, 1, 1], [3, 3, 6, 6], img_size=64, window=56),
                               num_classes=19, window_size_softmax=7),
    # Stage resolutions 24,12,6,3. L window 6: stages 1-2 have 16 resp. 4 real windows and
    # shifted odd blocks (no mask for L). S window 3: stage 3 has 4 windows, shifted with the
    # -100 mask; stage 4 (3x3) is covered by one window, so no shift.
    "reduced_swin_windows": dict(_swin(24, [2, 2, 2, 2], [3, 2, 3, 4], img_size=96, window=6),
                                 num_classes=23, window_size_softmax=3, mlp_ratios=[2, 3, 2, 2]),
    # Mixed attention types per stage (S first): stage 1 S with 16 windows, shifted with a mask;
    # stage 2 L with 4 windows (one block, no shift); stage 3 L covered by one window.
    "reduced_swin_mixed": dict(_swin(16, [2, 1, 2, 1], [2, 2, 4, 4], img_size=64, window=4),
                               num_classes=10, attn_types=["S", "L", "L", "S"],
                               window_size_softmax=4, mlp_ratios=[2, 2, 2, 2]),
}


def get_config(name):
    """A deep copy of a preset or named reduced variant."""
    if name in PRESETS:
        return copy.deepcopy(PRESETS[name])
    if name in REDUCED:
        return copy.deepcopy(REDUCED[name])
    raise KeyError(f"unknown architecture {name!r}; known: {sorted(PRESETS) + sorted(REDUCED)}")


def reduced_variant(base, **overrides):
    """A config derived from `base` (name or dict) with some keys replaced, validated."""
    cfg = get_config(base) if isinstance(base, str) else copy.deepcopy(base)
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise KeyError(f"not config keys: {sorted(unknown)}")
    cfg.update(copy.deepcopy(overrides))
    validate_config(cfg)
    return cfg


def load_config_arg(text_or_path):
    """--config accepts inline JSON or a path to a JSON file."""
    text = text_or_path.strip()
    if not text.startswith("{"):
        with open(text_or_path) as f:
            text = f.read()
    cfg = json.loads(text)
    validate_config(cfg)
    return cfg


def stage_resolutions(cfg):
    """Token grid side per stage (square inputs only)."""
    if cfg["family"] == "pvt":
        res, out = cfg["img_size"], []
        for p in cfg["patch_sizes"]:
            if res % p:
                raise ValueError(f"resolution {res} not divisible by patch size {p}")
            res //= p
            out.append(res)
        return out
    res = cfg["img_size"] // cfg["patch_size"]
    return [res // 2 ** i for i in range(4)]


def validate_config(cfg):
    fam = cfg.get("family")
    if fam not in ("pvt", "swin"):
        raise ValueError(f"family must be pvt or swin, got {fam!r}")
    keys = PVT_KEYS if fam == "pvt" else SWIN_KEYS
    if set(cfg) != set(keys):
        raise ValueError(f"config keys differ from FORMAT.md: missing {sorted(set(keys) - set(cfg))}, "
                         f"extra {sorted(set(cfg) - set(keys))}")
    per_stage = ["embed_dims", "depths", "num_heads", "mlp_ratios", "attn_types"]
    per_stage += ["patch_sizes", "sr_ratios"] if fam == "pvt" else []
    n_stages = len(cfg["depths"])
    if n_stages != 4:
        raise ValueError("exactly 4 stages are supported")
    for k in per_stage:
        if len(cfg[k]) != n_stages:
            raise ValueError(f"{k} must have {n_stages} entries")
    if cfg["kernel_size"] % 2 != 1:
        raise ValueError("kernel_size must be odd (padding k//2 keeps the size)")
    res = stage_resolutions(cfg)
    for i, (c, h, t) in enumerate(zip(cfg["embed_dims"], cfg["num_heads"], cfg["attn_types"])):
        if c % h:
            raise ValueError(f"stage {i}: dim {c} not divisible by {h} heads")
        if t not in ("L", "S") or (fam == "pvt" and t != "L"):
            raise ValueError(f"stage {i}: attention type {t!r} not allowed for {fam}")
        if t == "L" and (c // h) % 2:
            raise ValueError(f"stage {i}: head dim {c // h} must be even (v is split in halves)")
    if fam == "pvt":
        for i, r in enumerate(cfg["sr_ratios"]):
            if r < 1 or res[i] % r:
                raise ValueError(f"stage {i}: resolution {res[i]} not divisible by sr_ratio {r}")
    else:
        if cfg["img_size"] % cfg["patch_size"]:
            raise ValueError("img_size not divisible by patch_size")
        r0 = cfg["img_size"] // cfg["patch_size"]
        if r0 % 8:
            raise ValueError("Swin needs img_size/patch_size divisible by 8 (three patch mergings)")
        if cfg["embed_dims"] != [cfg["embed_dims"][0] * 2 ** i for i in range(4)]:
            raise ValueError("Swin embed_dims must double per stage")
        for i, t in enumerate(cfg["attn_types"]):
            w = cfg["window_size"] if t == "L" else cfg["window_size_softmax"]
            if res[i] > w and res[i] % w:
                raise ValueError(f"stage {i}: resolution {res[i]} not divisible by window {w}")
    return cfg
