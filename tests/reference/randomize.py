"""Seeded random parameters that exercise every code path of a PolaFormer model.

Trained-looking initialisations (zeros, ones, power=0) would hide mistakes: a zero positional
encoding cannot reveal a missing add, power=0 gives every channel the same exponent, a unit
LayerNorm cannot reveal swapped parameters. So every tensor gets spread, both signs and sizes that
keep activations O(1) through deep models.

Options (all default to the "typical" model; the trap cases use them to make a mistake visible):
  embed_gain     multiplies the patch-embedding conv weights: small values make the conv output
                 variance small, so the patch-embedding LayerNorm eps matters.
  residual_gain  multiplies everything written into the residual stream (patch-embedding norm
                 affine, pos_embed, attention proj, fc2, Swin's patch-merging reduction): small
                 values make the eps of the norms that read the stream matter.
  sr_gain        multiplies PVT's spatial-reduction conv (weights and bias): small values make the
                 variance into its LayerNorm small, so that norm's eps matters.
  tiny_query_head  in every L attention, head 0's query projection is scaled by this factor
                 (0 = off), so q_sim . kmean is near the 1e-6 denominator eps.
  mlp_gain, fc1_bias_shift, fc2_gain
                 fc1 weight gain, a constant added to fc1 biases, fc2 weight gain. Pre-activations
                 near -3 (where tanh-GELU is off by 4e-4 on a value of -4e-3) and a large fc2 gain
                 make the GELU form visible in the logits.
"""
import math

import torch
import torch.nn as nn

from pola_attention import PolaAttentionCore
from pola_swin import WindowSoftmaxAttention

DEFAULT_OPTIONS = {"embed_gain": 1.0, "residual_gain": 1.0, "tiny_query_head": 0.0, "mlp_gain": 1.0,
                   "fc1_bias_shift": 0.0, "fc2_gain": 1.0, "sr_gain": 1.0}


def _uniform(gen, shape, low, high):
    return torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low


def _normal(gen, shape, std):
    return torch.randn(shape, generator=gen, dtype=torch.float64) * std


def _inverse_softplus(y):
    return torch.log(torch.expm1(y))


def _scale_parameter(gen, shape):
    """softplus(scale) uniform in 0.3..3, but |scale| >= ~0.2 so the raw value is never near 0
    (the scale_no_softplus trap divides by it)."""
    target = _uniform(gen, shape, 0.3, 3.0)
    near_zero = (target > 0.55) & (target < 0.85)            # softplus(0) = 0.69
    target = torch.where(near_zero, target + 0.6, target)
    return _inverse_softplus(target)


def _set(param, value):
    with torch.no_grad():
        param.copy_(value.to(param.dtype))


def _linear(gen, layer, gain=1.0, bias_std=0.1):
    fan_in = layer.weight.shape[1]
    _set(layer.weight, _normal(gen, layer.weight.shape, gain / math.sqrt(fan_in)))
    if layer.bias is not None:
        _set(layer.bias, _normal(gen, layer.bias.shape, bias_std * gain))


def _conv(gen, conv, gain=1.0, input_scale=1.0):
    """input_scale: typical magnitude of the conv input; weights are divided by it so the
    input-dependent part of the output is not swamped by the bias."""
    fan_in = conv.weight[0].numel()
    _set(conv.weight, _normal(gen, conv.weight.shape, gain / (input_scale * math.sqrt(fan_in))))
    _set(conv.bias, _normal(gen, conv.bias.shape, 0.1 * gain))


def _layer_norm(gen, norm, gain=1.0):
    _set(norm.weight, gain * _uniform(gen, norm.weight.shape, 0.6, 1.4)
         * torch.where(_uniform(gen, norm.weight.shape, 0, 1) < 0.05, -1.0, 1.0))  # a few negative
    _set(norm.bias, _normal(gen, norm.bias.shape, 0.2 * gain))


def _is_patch_embed(name):
    return name.startswith("patch_embed")


# PolaFormer++ (family "pp"): its own options. tiny_query_head as above (head 0 of every L
# attention gets a near-zero query, so phi . mean(psi) is near the 1e-6 eps).
PP_DEFAULT_OPTIONS = {"tiny_query_head": 0.0}


def _batch_norm(gen, bn):
    """Eval-mode BN with statistics that are far from (0, 1): a missing or misapplied BN shows."""
    shape = bn.weight.shape
    _set(bn.weight, _uniform(gen, shape, 0.6, 1.4) * torch.where(_uniform(gen, shape, 0, 1) < 0.05, -1.0, 1.0))
    _set(bn.bias, _normal(gen, shape, 0.2))
    _set(bn.running_mean, _normal(gen, shape, 0.3))
    _set(bn.running_var, _uniform(gen, shape, 0.4, 2.5))
    with torch.no_grad():
        bn.num_batches_tracked.fill_(int(torch.randint(1, 10 ** 6, (1,), generator=gen)))


def _randomize_pp(model, gen, opt):
    """PolaPP: every conv/linear/norm/BN plus s1, s2 (sigmoid spans ~0.05..0.95, different for
    s1 and s2 and per channel) and layer-scale gammas 0.15..0.6 with a few negative channels.
    The branch gains (gammas < 1, the conditional position conv at 0.3) keep the residual stream
    O(1) through b5's 38 blocks. The RoPE `angle` buffers are left as computed (a constant of the
    architecture; the checkpoint stores the same values)."""
    from pola_pp import PolaLinearAttention, PolaPPBlock
    done = set()
    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if isinstance(module, nn.Linear):
            _linear(gen, module)
        elif isinstance(module, nn.Conv2d):
            _conv(gen, module, gain=0.3 if leaf == "pos" else 1.0)
        elif isinstance(module, nn.LayerNorm):
            _layer_norm(gen, module)
        elif isinstance(module, nn.BatchNorm2d):
            _batch_norm(gen, module)
        elif isinstance(module, PolaLinearAttention):
            _set(module.s1, _uniform(gen, module.s1.shape, -3.0, 3.0))
            _set(module.s2, _uniform(gen, module.s2.shape, -3.0, 3.0))
        elif isinstance(module, PolaPPBlock):
            for gamma in (module.gamma_1, module.gamma_2):
                sign = torch.where(_uniform(gen, gamma.shape, 0, 1) < 0.1, -1.0, 1.0)
                _set(gamma, _uniform(gen, gamma.shape, 0.15, 0.6) * sign)
        else:
            continue
        done.update(id(p) for p in module.parameters(recurse=False))
    if opt["tiny_query_head"]:
        for module in model.modules():
            if isinstance(module, PolaLinearAttention):
                with torch.no_grad():   # q is the first C outputs of qkvg; head 0 is its first d rows
                    module.qkvg.weight[: module.head_dim] *= opt["tiny_query_head"]
                    module.qkvg.bias[: module.head_dim] *= opt["tiny_query_head"]
    missed = [n for n, p in model.named_parameters() if id(p) not in done]
    if missed:
        raise RuntimeError(f"randomize left parameters untouched: {missed[:5]}")
    return opt


def randomize(model, seed, **options):
    """Overwrite every parameter of `model` deterministically from `seed`; returns the options."""
    if model.cfg["family"] == "pp":
        unknown = set(options) - set(PP_DEFAULT_OPTIONS)
        if unknown:
            raise KeyError(f"unknown PolaPP randomization options {sorted(unknown)}")
        return _randomize_pp(model, torch.Generator().manual_seed(int(seed)), dict(PP_DEFAULT_OPTIONS, **options))
    unknown = set(options) - set(DEFAULT_OPTIONS)
    if unknown:
        raise KeyError(f"unknown randomization options {sorted(unknown)}")
    opt = dict(DEFAULT_OPTIONS, **options)
    gen = torch.Generator().manual_seed(int(seed))
    residual = opt["residual_gain"]
    done = set()

    def mark(module):
        done.update(id(p) for p in module.parameters(recurse=False))

    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if isinstance(module, nn.Linear):
            if leaf in ("proj", "reduction"):  # Swin's patch merging writes a new residual stream
                _linear(gen, module, gain=residual)
            elif leaf == "fc2":
                _linear(gen, module, gain=residual * opt["fc2_gain"])
            elif leaf == "head" and model.cfg["family"] == "pvt":
                # Undo residual_gain so the logits stay O(1) and input-dependent rather than
                # dominated by the head bias (Swin's final LayerNorm does that itself).
                _linear(gen, module, gain=1.0 / residual)
                with torch.no_grad():
                    module.bias *= residual
            elif leaf == "fc1":
                _linear(gen, module, gain=opt["mlp_gain"])
                with torch.no_grad():
                    module.bias += opt["fc1_bias_shift"]
            else:
                _linear(gen, module)
        elif isinstance(module, nn.Conv2d):
            if _is_patch_embed(name):
                # Later PVT stages embed the residual stream, whose scale is residual_gain.
                later_pvt_stage = model.cfg["family"] == "pvt" and not name.startswith("patch_embed1")
                _conv(gen, module, opt["embed_gain"], residual if later_pvt_stage else 1.0)
            elif leaf == "sr":
                _conv(gen, module, opt["sr_gain"])
            else:
                _conv(gen, module)
        elif isinstance(module, nn.LayerNorm):
            # The patch-embedding norm's output goes straight into the residual stream (PVT:
            # every stage's; Swin: the first, later stages start from patch merging).
            in_residual = _is_patch_embed(name)
            _layer_norm(gen, module, residual if in_residual else 1.0)
        elif isinstance(module, PolaAttentionCore):
            # Exponent p = 1 + alpha*sigmoid(power) spans (1, 1+alpha): power in [-6, 6].
            _set(module.power, _uniform(gen, module.power.shape, -6.0, 6.0))
            _set(module.scale, _scale_parameter(gen, module.scale.shape))
            _set(module.positional_encoding, _normal(gen, module.positional_encoding.shape, 0.5))
        elif isinstance(module, WindowSoftmaxAttention):
            _set(module.relative_position_bias_table,
                 _normal(gen, module.relative_position_bias_table.shape, 1.0))
        else:
            continue
        mark(module)

    for name, param in model.named_parameters(recurse=False):
        if name.startswith("pos_embed"):
            _set(param, _normal(gen, param.shape, 0.5 * residual))
            done.add(id(param))

    if opt["tiny_query_head"]:
        for module in model.modules():
            if isinstance(module, PolaAttentionCore):
                proj = module.qg if hasattr(module, "qg") else module.qkvg
                with torch.no_grad():   # q is the first C outputs; head 0 is its first d rows
                    proj.weight[: module.head_dim] *= opt["tiny_query_head"]
                    proj.bias[: module.head_dim] *= opt["tiny_query_head"]

    missed = [n for n, p in model.named_parameters() if id(p) not in done]
    if missed:
        raise RuntimeError(f"randomize left parameters untouched: {missed[:5]}")
    return opt


def random_input(cfg, batch, seed, size=None):
    """Float32 NCHW images, roughly like normalised pixels (unit Gaussian); size = (H, W),
    default the model's own img_size."""
    gen = torch.Generator().manual_seed(int(seed) + 7919)
    height, width = size or (cfg["img_size"], cfg["img_size"])
    shape = (batch, cfg["in_chans"], height, width)
    return torch.randn(shape, generator=gen, dtype=torch.float32)


def input_dependence(logits):
    """max over images of max|logits[b] - logits[0]| / max|logits| (0 for a single image)."""
    logits = torch.as_tensor(logits, dtype=torch.float64)
    return ((logits - logits[:1]).abs().max() / logits.abs().max()).item()


def logits_look_healthy(logits):
    """Finite, not collapsed, and not dominated by one class (softmax top-1 < 0.9 per image)."""
    logits = torch.as_tensor(logits, dtype=torch.float64)
    if not torch.isfinite(logits).all():
        return False, "non-finite logits"
    spread = logits.std(dim=-1)
    if (spread <= 1e-6 * logits.abs().max()).any():
        return False, "logits collapsed to one value"
    top = logits.softmax(dim=-1).max(dim=-1).values
    if (top > 0.9).any():
        return False, f"one class dominates (top-1 probability {top.max():.3f})"
    return True, f"logit std {spread.min():.3g}..{spread.max():.3g}, top-1 prob <= {top.max():.3f}"
