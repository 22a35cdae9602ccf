"""The engine's config JSON (model/config_json.cpp) of a tests/reference config.

PVT and Swin reference configs already are the engine's form. A PolaPP one (family "pp",
tests/reference/pola_pp_config.py) differs: one `mlp_ratio` for the engine's per-stage
`mlp_ratios`, the common `alpha` / `kernel_size` keys absent (alpha is unused by PolaPP; its
LePE kernel is 5), and `layer_scale_init`, the training-time init of the gammas, which the
checkpoint's trained gammas replace and no tensor shape reveals, so the engine has no such key.
"""

PP_LEPE_KERNEL = 5  # SPEC-polaformerpp 2.7: attn.lepe is 5x5 in every variant
ENGINE_DEFAULT_ALPHA = 4  # model/model_config.h; unused by PolaPP


def engine_config(cfg):
    if cfg["family"] != "pp":
        return cfg
    return {
        "family": "pp", "img_size": cfg["img_size"], "in_chans": cfg["in_chans"],
        "num_classes": cfg["num_classes"], "embed_dims": list(cfg["embed_dims"]),
        "depths": list(cfg["depths"]), "num_heads": list(cfg["num_heads"]),
        "mlp_ratios": [cfg["mlp_ratio"]] * len(cfg["depths"]), "attn_types": list(cfg["attn_types"]),
        "alpha": ENGINE_DEFAULT_ALPHA, "kernel_size": PP_LEPE_KERNEL, "projection": cfg["projection"],
    }
