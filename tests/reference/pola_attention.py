"""Polarity-aware linear attention (SPEC section 3), shared by Pola-PVT and Pola-Swin.

Tensors are batched: tokens (B, N, C); per-head tensors (B, h, N, d) with channel c = head*d + j.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from pola_common import layer_norm, resize_grid

DENOMINATOR_EPS = 1e-6


def relu_pow(u, p):
    """relu(u)^p for fractional p; 0 stays exactly 0 (SPEC 8), no log of non-positive values."""
    positive = u > 0
    safe = torch.where(positive, u, torch.ones_like(u))
    return torch.where(positive, torch.exp(p * torch.log(safe)), torch.zeros_like(u))


def polarity_features(q, k, p):
    """q_sim = [pos(q), neg(q)], q_opp = [neg(q), pos(q)], phi_k = [pos(k), neg(k)] (each 2d wide)."""
    q_pos, q_neg = relu_pow(q, p), relu_pow(-q, p)
    k_pos, k_neg = relu_pow(k, p), relu_pow(-k, p)
    q_sim = torch.cat([q_pos, q_neg], dim=-1)
    q_opp = torch.cat([q_neg, q_pos], dim=-1)
    phi_k = torch.cat([k_pos, k_neg], dim=-1)
    return q_sim, q_opp, phi_k


def linear_attention(q_sim, q_opp, phi_k, v, eps_on_sum=False, eps=None):
    """SPEC 3 step 7, O(N d^2): state built from keys once, then one pass over queries.

    q_*: (B, h, N, 2d); phi_k: (B, h, n, 2d); v: (B, h, n, d). Returns (B, h, N, d).
    eps_on_sum is the trap `denominator_eps_outside_mean`: unscaled sums, eps added to a sum;
    eps replaces DENOMINATOR_EPS (the trap `denominator_eps_1e5`).
    """
    eps = DENOMINATOR_EPS if eps is None else eps
    n = phi_k.shape[-2]
    half = v.shape[-1] // 2
    v1, v2 = v[..., :half], v[..., half:]
    phi_k_t = phi_k.transpose(-2, -1)
    if eps_on_sum:
        kv1, kv2 = phi_k_t @ v1, phi_k_t @ v2
        kstat = phi_k.sum(dim=-2, keepdim=True)
    else:
        # Exactly as the reference groups it: both factors scaled by n^-0.5.
        inv_sqrt_n = n ** -0.5
        kv1 = (phi_k_t * inv_sqrt_n) @ (v1 * inv_sqrt_n)
        kv2 = (phi_k_t * inv_sqrt_n) @ (v2 * inv_sqrt_n)
        kstat = phi_k.mean(dim=-2, keepdim=True)
    z_sim = 1.0 / ((q_sim * kstat).sum(dim=-1, keepdim=True) + eps)
    z_opp = 1.0 / ((q_opp * kstat).sum(dim=-1, keepdim=True) + eps)
    x_sim = (q_sim @ kv1) * z_sim
    x_opp = (q_opp @ kv2) * z_opp
    return torch.cat([x_sim, x_opp], dim=-1)


def quadratic_attention(q_sim, q_opp, phi_k, v):
    """The same function written as explicit (N x n) attention: weights phi_q phi_k^T / n,
    normalised by their row sum / n + eps. Used only to self-check linear_attention."""
    n = phi_k.shape[-2]
    half = v.shape[-1] // 2
    v1, v2 = v[..., :half], v[..., half:]
    out = []
    for q_feat, v_half in ((q_sim, v1), (q_opp, v2)):
        weights = (q_feat @ phi_k.transpose(-2, -1)) / n
        out.append((weights @ v_half) / (weights.sum(dim=-1, keepdim=True) + DENOMINATOR_EPS))
    return torch.cat(out, dim=-1)


def split_heads(x, heads):
    b, n, c = x.shape
    return x.reshape(b, n, heads, c // heads).transpose(1, 2)


def merge_heads(x):
    b, h, n, d = x.shape
    return x.transpose(1, 2).reshape(b, n, h * d)


class PolaAttentionCore(nn.Module):
    """Parameters and computation common to both families' L attention.

    Subclasses create the projections and call `attend(q, k, v, g, height, width, ctx, key_grid)`,
    where q, g: (B, N, C) over an height x width token grid and k, v: (B, n, C).
    """

    def _init_core(self, dim, num_heads, key_grid, alpha, kernel_size):
        head_dim = dim // num_heads
        self.dim, self.num_heads, self.head_dim, self.alpha = dim, num_heads, head_dim, alpha
        self.proj = nn.Linear(dim, dim)
        # One depthwise conv of head_dim channels shared by all heads (SPEC 3).
        self.dwc = nn.Conv2d(head_dim, head_dim, kernel_size, padding=kernel_size // 2, groups=head_dim)
        self.power = nn.Parameter(torch.zeros(1, num_heads, 1, head_dim))
        self.scale = nn.Parameter(torch.zeros(1, 1, dim))
        self.key_grid = key_grid  # the (h, w) grid of keys the stored encoding was made for
        self.positional_encoding = nn.Parameter(torch.zeros(1, key_grid[0] * key_grid[1], dim))

    def exponent(self, ctx):
        if ctx.has("power_no_sigmoid"):
            return (1 + self.alpha * self.power).clamp(1.0, 1.0 + self.alpha)
        return 1 + self.alpha * torch.sigmoid(self.power)

    def channel_scale(self, ctx):
        return self.scale if ctx.has("scale_no_softplus") else F.softplus(self.scale)

    def local_branch(self, v, height, width, ctx):
        """dwc over v viewed per head as a head_dim-channel image; v: (B, N, C) -> (B, N, C)."""
        b, n, c = v.shape
        h, d = self.num_heads, self.head_dim
        if ctx.has("dwc_head_interleaved"):
            img = v.reshape(b, n, d, h).permute(0, 3, 2, 1)           # channel c = j*h + head
        else:
            img = v.reshape(b, n, h, d).permute(0, 2, 3, 1)           # channel c = head*d + j
        dwc_bias = None if ctx.has("dwc_no_bias") else self.dwc.bias
        out = F.conv2d(img.reshape(b * h, d, height, width), self.dwc.weight, dwc_bias, padding=self.dwc.padding,
                       groups=self.dwc.groups).reshape(b, h, d, n)
        if ctx.has("dwc_head_interleaved"):
            return out.permute(0, 3, 2, 1).reshape(b, n, c)
        return out.permute(0, 3, 1, 2).reshape(b, n, c)

    def attend(self, q, k, v, g, height, width, ctx, key_grid):
        """key_grid: the (h, w) grid of k at this input size; the encoding is resized to it."""
        b, n_query, _ = q.shape
        n_key = k.shape[1]
        if not ctx.has("kv_no_positional_encoding"):
            k = k + resize_grid(self.positional_encoding, self.key_grid, key_grid)
        s = self.channel_scale(ctx)
        q, k = q / s, k / s
        p = self.exponent(ctx)
        heads = self.num_heads
        q_sim, q_opp, phi_k = polarity_features(split_heads(q, heads), split_heads(k, heads), p)
        v_heads = split_heads(v, heads)
        if ctx.quadratic_attention:
            attn = quadratic_attention(q_sim, q_opp, phi_k, v_heads)
        else:
            attn = linear_attention(q_sim, q_opp, phi_k, v_heads,
                                    eps_on_sum=ctx.has("denominator_eps_outside_mean"),
                                    eps=1e-5 if ctx.has("denominator_eps_1e5") else None)
        attn = merge_heads(attn)
        if n_key != n_query:
            # Spatial reduction: stretch v from n to N tokens, 1-D linear, align_corners=False.
            v_line = v.transpose(1, 2)                                     # (B, C, n)
            v = F.interpolate(v_line, size=n_query, mode="linear", align_corners=False).transpose(1, 2)
        local = self.local_branch(v, height, width, ctx)
        if ctx.has("gate_before_dwc"):
            return self.proj(attn * g + local)
        return self.proj((attn + local) * g)


class PvtPolaAttention(PolaAttentionCore):
    """PVT L attention: qg and kv projections, optional spatial reduction (sr, norm)."""

    def __init__(self, dim, num_heads, height, width, sr_ratio, alpha, kernel_size):
        super().__init__()
        self.qg = nn.Linear(dim, 2 * dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.sr_ratio = sr_ratio
        if sr_ratio > 1:
            self.sr = nn.Conv2d(dim, dim, sr_ratio, stride=sr_ratio)
            self.norm = nn.LayerNorm(dim, eps=1e-5)
        self._init_core(dim, num_heads, (height // sr_ratio, width // sr_ratio), alpha, kernel_size)

    def forward(self, x, height, width, ctx):
        b, n, c = x.shape
        q, g = self.qg(x).chunk(2, dim=-1)
        key_grid = (height, width)
        if self.sr_ratio > 1:
            img = x.transpose(1, 2).reshape(b, c, height, width)
            reduced = self.sr(img)
            key_grid = tuple(reduced.shape[-2:])
            kv_in = layer_norm(self.norm, reduced.flatten(2).transpose(1, 2),
                               1e-6 if ctx.has("pvt_sr_eps_1e6") else 1e-5)
        else:
            kv_in = x
        k, v = self.kv(kv_in).chunk(2, dim=-1)
        return self.attend(q, k, v, g, height, width, ctx, key_grid)


class SwinPolaAttention(PolaAttentionCore):
    """Swin L attention inside one window of window x window tokens: one qkvg projection."""

    def __init__(self, dim, num_heads, window, alpha, kernel_size):
        super().__init__()
        self.qkvg = nn.Linear(dim, 4 * dim)
        self.window = window
        self._init_core(dim, num_heads, (window, window), alpha, kernel_size)

    def forward(self, x, ctx, mask=None, window_hw=None):
        # L blocks take no shift mask (SPEC 5 / brief): attention per window only.
        # window_hw: the (h, w) window at this input size (default: the stored one).
        wh, ww = window_hw or (self.window, self.window)
        q, k, v, g = self.qkvg(x).chunk(4, dim=-1)
        return self.attend(q, k, v, g, wh, ww, ctx, (wh, ww))
