"""PolaFormer++ (PolaPP b0-b5) classifier, written from /work/shared/SPEC-polaformerpp.md.

Module names equal the checkpoint keys of SPEC-polaformerpp section 3 (patch_embed.proj.N,
layers.i.{RoPE,RoPE_linear}.angle, layers.i.blocks.j.{pos,norm1.norm,attn,norm2.norm,ffn,gamma_*},
layers.i.downsample.{reduction,norm}, proj, norm, head), so the authors' state_dict loads by name.

Layout inside: feature maps are (B, C, H, W); the attention and FFN work on tokens (B, N, C),
token n = r*W + c (row-major). The RoPE sin/cos tables are rebuilt from each stage's actual grid on
every forward, so any input size works (each stride-2 conv gives ceil(x/2)).

Trap flags (traps.PP_TRAPS) make the forward pass commit one documented mistake.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from pola_pp_config import ffn_dim, validate_pp_config
from traps import RunContext

LN_EPS = 1e-6      # LayerNorm2d (spec 2.4, T6)
BN_EPS = 1e-5      # every BatchNorm (spec 2.2, T6)
Z_EPS = 1e-6       # added to the mean-based normaliser (spec 2.7, T2)
ROPE_BASE = 10000


def rope_angles(width):
    """The `angle` buffer for feature width D = `width`: theta_j = 1 / 10000^(j/(m-1)),
    m = D/4, from an inclusive float32 linspace, each value twice in a row (spec 2.6, T7).
    Computed in float32 as the released buffers are; a checkpoint's own values replace it."""
    m = width // 4
    exponents = torch.linspace(0.0, 1.0, m, dtype=torch.float32)
    theta = 1.0 / torch.pow(torch.tensor(float(ROPE_BASE), dtype=torch.float32), exponents)
    return theta.repeat_interleave(2)


class RopeAngles(nn.Module):
    """Holds one stage's `angle` buffer (length D/2) and builds the (N, D) sin/cos tables."""

    def __init__(self, width):
        super().__init__()
        self.register_buffer("angle", rope_angles(width))

    def tables(self, height, width):
        angle = self.angle
        rows = torch.arange(height, dtype=angle.dtype)
        cols = torch.arange(width, dtype=angle.dtype)
        # dims [0, D/2): row index * angle; dims [D/2, D): column index * angle.
        row_part = (rows[:, None] * angle[None, :])[:, None, :].expand(height, width, -1)
        col_part = (cols[:, None] * angle[None, :])[None, :, :].expand(height, width, -1)
        phase = torch.cat([row_part, col_part], dim=-1).reshape(height * width, -1)
        return phase.sin(), phase.cos()


def rotate_pairs(x, sin, cos, halves=False):
    """2-D RoPE: rotate each interleaved pair (2t, 2t+1) of the last dim by its angle.
    x (..., N, D); sin/cos (N, D) with equal entries at 2t and 2t+1.
    halves=True is the trap pp_rope_halves: pairs (t, t + D/2) instead (the 1-D LLaMA layout)."""
    if halves:
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        s, c = sin[:, 0::2], cos[:, 0::2]
        return torch.cat([a * c - b * s, b * c + a * s], dim=-1)
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    s, c = sin[:, 0::2], cos[:, 0::2]
    return torch.stack([a * c - b * s, b * c + a * s], dim=-1).flatten(-2)


def layer_norm_2d(norm, x):
    """Per pixel over the C channels, biased variance, eps 1e-6 (LayerNorm2d)."""
    y = F.layer_norm(x.permute(0, 2, 3, 1), norm.normalized_shape, norm.weight, norm.bias, LN_EPS)
    return y.permute(0, 3, 1, 2)


def to_tokens(x):
    return x.flatten(2).transpose(1, 2)


def to_map(tokens, height, width):
    return tokens.transpose(1, 2).reshape(tokens.shape[0], -1, height, width)


def split_heads(t, heads):
    b, n, c = t.shape
    return t.reshape(b, n, heads, c // heads).transpose(1, 2)        # (B, h, N, d)


def merge_heads(t):
    b, h, n, d = t.shape
    return t.transpose(1, 2).reshape(b, n, h * d)


class NormWrap(nn.Module):
    """Gives the LayerNorm the key prefix `normX.norm` the checkpoints use."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=LN_EPS)


class PolaLinearAttention(nn.Module):
    """Polarity linear attention with RoPE on the numerator (spec 2.7)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.s1 = nn.Parameter(torch.zeros(1, heads, 1, 2 * self.head_dim))
        self.s2 = nn.Parameter(torch.zeros(1, heads, 1, 2 * self.head_dim))
        self.qkvg = nn.Linear(dim, 4 * dim)
        self.lepe = nn.Conv2d(dim, dim, 5, padding=2, groups=dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, height, width, rope, ctx):
        """x: tokens (B, N, C) of the LN1 output; rope: (sin, cos) of width 2d."""
        n = x.shape[1]
        q, k, v, g = self.qkvg(x).chunk(4, dim=-1)
        local = to_tokens(self.lepe(to_map(v, height, width)))          # LePE on the whole V (T5)
        q, k, v = (split_heads(t, self.heads) for t in (q, k, v))
        q_pos, q_neg, k_pos, k_neg = F.relu(q), F.relu(-q), F.relu(k), F.relu(-k)
        sig1, sig2 = torch.sigmoid(self.s1), torch.sigmoid(self.s2)
        phi_same = torch.exp(torch.cat([q_pos, q_neg], dim=-1) * sig1) - 1
        phi_opp = torch.exp(torch.cat([q_neg, q_pos], dim=-1) * sig2) - 1
        psi = torch.exp(torch.cat([k_pos, k_neg], dim=-1)) - 1          # keys: no learnable scale
        sin, cos = rope
        halves = ctx.has("pp_rope_halves")
        psi_rot = rotate_pairs(psi, sin, cos, halves)
        # Normaliser: un-rotated features and the mean (not sum) of psi (T2, T3).
        psi_mean = (psi_rot if ctx.has("pp_rope_denominator") else psi).mean(dim=-2, keepdim=True)
        root = math.sqrt(1.0 / n)
        half = self.head_dim // 2
        paths = []
        for phi, v_part in ((phi_same, v[..., :half]), (phi_opp, v[..., half:])):
            phi_rot = rotate_pairs(phi, sin, cos, halves)
            z = (phi_rot if ctx.has("pp_rope_denominator") else phi) @ psi_mean.transpose(-2, -1)
            kv = (psi_rot.transpose(-2, -1) * root) @ (v_part * root)       # (2d, d/2) = sum/N
            paths.append((phi_rot @ kv) * (1.0 / (z + Z_EPS)))
        attn = merge_heads(torch.cat(paths, dim=-1))
        return self.proj((attn + local) * g)                              # gate without activation


class SoftmaxAttention(nn.Module):
    """Global softmax attention with RoPE on q and k, LePE and output gate (spec 2.8)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkvo = nn.Linear(dim, 4 * dim)
        self.lepe = nn.Conv2d(dim, dim, 5, padding=2, groups=dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, height, width, rope, ctx):
        q, k, v, o = self.qkvo(x).chunk(4, dim=-1)
        local = to_tokens(self.lepe(to_map(v, height, width)))
        q, k, v = (split_heads(t, self.heads) for t in (q, k, v))
        sin, cos = rope
        halves = ctx.has("pp_rope_halves")
        q = rotate_pairs(q, sin, cos, halves) * self.head_dim ** -0.5   # scale q after RoPE (T8)
        k = rotate_pairs(k, sin, cos, halves)
        attn = merge_heads(torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v)
        return self.proj((attn + local) * o)


class ConvFFN(nn.Module):
    """fc1 -> exact GELU -> (+ depthwise 3x3 of itself) -> fc2 (spec 2.5)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden)

    def forward(self, x, height, width):
        u = to_map(F.gelu(self.fc1(x)), height, width)
        u = u + self.dwconv(u)
        return self.fc2(to_tokens(u))


class PolaPPBlock(nn.Module):
    def __init__(self, attn_type, dim, heads, hidden, gamma_init):
        super().__init__()
        self.attn_type = attn_type
        self.gamma_1 = nn.Parameter(torch.full((1, dim, 1, 1), float(gamma_init)))
        self.gamma_2 = nn.Parameter(torch.full((1, dim, 1, 1), float(gamma_init)))
        self.norm1 = NormWrap(dim)
        self.attn = PolaLinearAttention(dim, heads) if attn_type == "L" else SoftmaxAttention(dim, heads)
        self.norm2 = NormWrap(dim)
        self.ffn = ConvFFN(dim, hidden)
        self.pos = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)

    def forward(self, x, rope, rope_linear, ctx):
        height, width = x.shape[-2:]
        x = x + self.pos(x)                                               # conditional position conv
        table = rope_linear if self.attn_type == "L" else rope
        a = self.attn(to_tokens(layer_norm_2d(self.norm1.norm, x)), height, width, table, ctx)
        x = x + self.gamma_1 * to_map(a, height, width)
        f = self.ffn(to_tokens(layer_norm_2d(self.norm2.norm, x)), height, width)
        return x + self.gamma_2 * to_map(f, height, width)


class Downsample(nn.Module):
    def __init__(self, dim, out_dim):
        super().__init__()
        self.reduction = nn.Conv2d(dim, out_dim, 3, stride=2, padding=1)
        self.norm = nn.BatchNorm2d(out_dim, eps=BN_EPS)

    def forward(self, x):
        return self.norm(self.reduction(x))


class Stage(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        dim, heads = cfg["embed_dims"][i], cfg["num_heads"][i]
        d = dim // heads
        self.RoPE = RopeAngles(d)              # softmax blocks: width d  -> angle (d/2,)
        self.RoPE_linear = RopeAngles(2 * d)   # linear blocks:  width 2d -> angle (d,)
        self.blocks = nn.ModuleList(
            PolaPPBlock(cfg["attn_types"][i], dim, heads, ffn_dim(cfg, i), cfg["layer_scale_init"][i])
            for _ in range(cfg["depths"][i]))
        if i < 3:
            self.downsample = Downsample(dim, cfg["embed_dims"][i + 1])

    def forward(self, x, ctx, name):
        height, width = x.shape[-2:]
        rope = self.RoPE.tables(height, width)
        rope_linear = self.RoPE_linear.tables(height, width)
        for j, block in enumerate(self.blocks):
            x = block(x, rope, rope_linear, ctx)
            ctx.record(f"{name}.blocks.{j}", to_tokens(x))
        ctx.record(f"{name}.features", to_tokens(x))   # backbone output (before downsampling)
        if hasattr(self, "downsample"):
            x = self.downsample(x)
            ctx.record(f"{name}.downsample", to_tokens(x))
        return x


class Stem(nn.Module):
    """patch_embed.proj: 4 convs k3 (strides 2,1,1,2) with BN, GELU after the first three."""

    def __init__(self, in_chans, dim):
        super().__init__()
        s = dim // 2
        layers = []
        for k, (cin, cout, stride) in enumerate([(in_chans, s, 2), (s, s, 1), (s, s, 1), (s, dim, 2)]):
            layers += [nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.BatchNorm2d(cout, eps=BN_EPS)]
            if k < 3:
                layers.append(nn.GELU())
        self.proj = nn.Sequential(*layers)


class PolaPP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        validate_pp_config(cfg)
        self.cfg = cfg
        dims, p = cfg["embed_dims"], cfg["projection"]
        self.patch_embed = Stem(cfg["in_chans"], dims[0])
        self.layers = nn.ModuleList(Stage(cfg, i) for i in range(4))
        self.proj = nn.Conv2d(dims[3], p, 1)
        self.norm = nn.BatchNorm2d(p, eps=BN_EPS)
        self.head = nn.Conv2d(p, cfg["num_classes"], 1)

    def forward(self, img, ctx=None):
        ctx = ctx or RunContext()
        x = self.patch_embed.proj(img)
        ctx.record("patch_embed", to_tokens(x))
        for i, stage in enumerate(self.layers):
            x = stage(x, ctx, f"layers.{i}")
        x = self.norm(self.proj(x))
        x = x * torch.sigmoid(x)                                       # Swish before the pool
        pooled = x.mean(dim=(2, 3), keepdim=True)
        ctx.record("pool", pooled.flatten(1))
        logits = self.head(pooled).flatten(1)
        ctx.record("head", logits)
        return logits


def build_pp_model(cfg):
    return PolaPP(cfg).eval()
