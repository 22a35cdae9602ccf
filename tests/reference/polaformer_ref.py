"""PyTorch reference of PolaFormer (Pola-PVT and Pola-Swin), written from /work/shared/SPEC.md.

Entry points:
  build_model(cfg)                      -> nn.Module whose state_dict() keys are the checkpoint keys
  run(model, images, traps=(), dump=False, dtype=torch.float64)
                                        -> (logits, {name: intermediate} or None)
  PRESETS / REDUCED / get_config / reduced_variant   (pola_config)
  TRAPS                                  (traps)
"""
import torch

from pola_config import PRESETS, REDUCED, get_config, reduced_variant, validate_config  # noqa: F401
from pola_pvt import PolaPVT
from pola_swin import PolaSwin
from traps import TRAPS, RunContext  # noqa: F401


def build_model(cfg):
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
