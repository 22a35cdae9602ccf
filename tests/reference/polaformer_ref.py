"""PyTorch reference of PolaFormer (Pola-PVT and Pola-Swin), written from /work/shared/SPEC.md,
and of PolaFormer++ (PolaPP b0-b5, family "pp"), written from /work/shared/SPEC-polaformerpp.md.

Entry points:
  build_model(cfg)                      -> nn.Module whose state_dict() keys are the checkpoint keys
  run(model, images, traps=(), dump=False, dtype=torch.float64)
                                        -> (logits, {name: intermediate} or None)
  PRESETS / REDUCED / reduced_variant  (pola_config; PVT and Swin only)
  get_config(name)                       a PVT/Swin preset or reduced variant, or a PolaPP one
  PP_PRESETS / PP_REDUCED                (pola_pp_config)
  TRAPS                                  (traps)
"""
import torch

from pola_config import PRESETS, REDUCED, reduced_variant, validate_config  # noqa: F401
from pola_config import get_config as _get_config
from pola_pp import PolaPP
from pola_pp_config import PP_PRESETS, PP_REDUCED, get_pp_config
from pola_pvt import PolaPVT
from pola_swin import PolaSwin
from traps import TRAPS, RunContext  # noqa: F401


def get_config(name):
    if name in PP_PRESETS or name in PP_REDUCED:
        return get_pp_config(name)
    return _get_config(name)


def build_model(cfg):
    if cfg.get("family") == "pp":
        return PolaPP(cfg).eval()      # validates its own config (pola_pp_config)
    validate_config(cfg)
    model = PolaPVT(cfg) if cfg["family"] == "pvt" else PolaSwin(cfg)
    return model.eval()


def run(model, images, traps=(), dump=False, dtype=torch.float64, quadratic_attention=False):
    """Forward pass in `dtype` (float64 by default: the reference is the precision oracle).

    images: (B, C, H, W) tensor or numpy array. Returns logits and, with dump=True, an ordered
    dict of named intermediates in execution order (token tensors (B, N, C))."""
    images = torch.as_tensor(images)
    original_dtype = next(model.parameters()).dtype
    ctx = RunContext(traps=traps, dump=dump, quadratic_attention=quadratic_attention)
    try:
        model.to(dtype)
        with torch.no_grad():
            logits = model(images.to(dtype), ctx)
    finally:
        model.to(original_dtype)
    return logits, ctx.dumps


def parameter_count(model):
    """Learnable parameters (buffers excluded), as papers report them."""
    return sum(p.numel() for p in model.parameters())
