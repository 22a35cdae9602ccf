"""Pola-Swin backbone and classifier (SPEC section 5). Module names equal the checkpoint keys."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from pola_attention import SwinPolaAttention
from pola_common import Mlp, layer_norm
from pola_config import stage_resolutions

SHIFT_MASK_VALUE = -100.0


def window_and_shift(resolution, window, block_index):
    """SPEC 5: a stage that fits in the window is one window without shift; otherwise odd
    blocks shift by w/2."""
    if resolution <= window:
        return resolution, 0
    return window, (window // 2 if block_index % 2 else 0)


def run_window(height, width, window, block_index):
    """The window at an input size other than the checkpoint's: `window` is the one the stored
    tables were made for. A stage that fits in it is one (height x width) window without shift;
    otherwise the grid is padded (bottom / right) to a multiple of the window, as Swin's detection
    backbone does, and odd blocks shift by w/2. Returns ((wh, ww), shift, (padded_h, padded_w))."""
    if height <= window and width <= window:
        return (height, width), 0, (height, width)
    padded = (-(-height // window) * window, -(-width // window) * window)
    return (window, window), (window // 2 if block_index % 2 else 0), padded


def relative_position_index(window, key_minus_query=False, window_hw=None):
    """(t, t) int64 for a window of window_hw = (wh, ww) tokens (default window x window):
    (dy + w - 1) * (2w - 1) + (dx + w - 1), (dy, dx) = query - key, w = `window` (the table's)."""
    wh, ww = window_hw or (window, window)
    ys, xs = torch.meshgrid(torch.arange(wh), torch.arange(ww), indexing="ij")
    coords = torch.stack([ys.flatten(), xs.flatten()])          # (2, N), row-major tokens
    rel = coords[:, :, None] - coords[:, None, :]                # [.., query, key]
    if key_minus_query:
        rel = -rel
    rel = rel + (window - 1)
    return (rel[0] * (2 * window - 1) + rel[1]).to(torch.int64)


def window_partition(x, wh, ww=None):
    """(B, H, W, C) -> (B * nW, wh*ww, C), windows row-major, tokens row-major inside."""
    ww = ww or wh
    b, h, w, c = x.shape
    x = x.reshape(b, h // wh, wh, w // ww, ww, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, wh * ww, c)


def window_reverse(windows, wh, ww, h, w):
    c = windows.shape[-1]
    x = windows.reshape(-1, h // wh, w // ww, wh, ww, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, h, w, c)


def shift_mask(height, width, w, shift):
    """(nW, w*w, w*w) over a (padded) height x width grid: 0 within a region of the 3x3 split
    used by Swin, -100 across regions."""
    region = torch.zeros(1, height, width, 1)
    bands = (slice(0, -w), slice(-w, -shift), slice(-shift, None))
    label = 0
    for rows in bands:
        for cols in bands:
            region[:, rows, cols, :] = label
            label += 1
    ids = window_partition(region, w).squeeze(-1)                # (nW, w*w)
    differs = ids[:, None, :] != ids[:, :, None]
    return torch.where(differs, torch.tensor(SHIFT_MASK_VALUE), torch.tensor(0.0))


class WindowSoftmaxAttention(nn.Module):
    """Classic Swin window attention (the S block)."""

    def __init__(self, dim, num_heads, window):
        super().__init__()
        self.num_heads, self.window = num_heads, window
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, num_heads))
        self.register_buffer("relative_position_index", relative_position_index(window))

    def forward(self, x, ctx, mask=None, window_hw=None):
        """window_hw: the (h, w) window at this input size (default: the stored one); a smaller
        window reads the offsets it has from the stored table."""
        bw, n, c = x.shape
        h, d = self.num_heads, self.head_dim
        qkv_bias = None if ctx.has("swin_qkv_no_bias") else self.qkv.bias
        q, k, v = F.linear(x, self.qkv.weight, qkv_bias).reshape(bw, n, 3, h, d).permute(2, 0, 3, 1, 4)
        scale = c ** -0.5 if ctx.has("swin_softmax_scale_dim") else d ** -0.5
        scores = (q * scale) @ k.transpose(-2, -1)
        native = window_hw in (None, (self.window, self.window))
        index = self.relative_position_index if native else relative_position_index(self.window, window_hw=window_hw)
        if ctx.has("swin_rel_bias_key_minus_query"):
            index = relative_position_index(self.window, key_minus_query=True, window_hw=window_hw)
        bias = self.relative_position_bias_table[index.reshape(-1)].reshape(n, n, h).permute(2, 0, 1)
        if not ctx.has("swin_no_rel_bias"):
            scores = scores + bias.unsqueeze(0)
        if mask is not None:
            n_windows = mask.shape[0]
            scores = scores.reshape(bw // n_windows, n_windows, h, n, n) + mask.to(scores)[None, :, None]
            scores = scores.reshape(bw, h, n, n)
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    def __init__(self, dim, heads, mlp_ratio, resolution, attn_type, window_cfg, block_index, alpha,
                 kernel_size):
        super().__init__()
        self.resolution, self.attn_type = resolution, attn_type
        self.window, self.shift = window_and_shift(resolution, window_cfg, block_index)
        # Trap `swin_shift_when_window_covers`: the configured w/2 shift kept for a covered stage.
        covered_odd = resolution <= window_cfg and block_index % 2 == 1
        self.trap_shift = window_cfg // 2 if covered_odd else self.shift
        self.norm1 = nn.LayerNorm(dim, eps=1e-5)
        if attn_type == "L":
            self.attn = SwinPolaAttention(dim, heads, self.window, alpha, kernel_size)
        else:
            self.attn = WindowSoftmaxAttention(dim, heads, self.window)
        self.norm2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        if self.shift > 0:
            # SPEC 6: shifted blocks carry the mask as a buffer (recomputable, so not exported).
            self.register_buffer("attn_mask", shift_mask(resolution, resolution, self.window, self.shift))
        self.window_cfg, self.block_index = window_cfg, block_index

    def forward(self, x, height, width, ctx, name):
        b, length, c = x.shape
        if (height, width) == (self.resolution, self.resolution):   # the checkpoint's own size
            (wh, ww), shift, (ph, pw) = (self.window, self.window), self.shift, (height, width)
            if ctx.has("swin_shift_when_window_covers"):
                shift = self.trap_shift
        else:
            (wh, ww), shift, (ph, pw) = run_window(height, width, self.window, self.block_index)
        shortcut = x
        eps = 1e-6 if ctx.has("swin_block_eps_1e6") else 1e-5
        x = layer_norm(self.norm1, x, eps).reshape(b, height, width, c)
        if (ph, pw) != (height, width):
            x = F.pad(x, (0, 0, 0, pw - width, 0, ph - height))   # zeros after norm1, bottom / right
        if shift:
            x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
        mask = None
        if self.attn_type == "S" and shift > 0 and not ctx.has("swin_no_shift_mask"):
            native = shift == self.shift and (ph, pw) == (self.resolution, self.resolution)
            mask = self.attn_mask if native else shift_mask(ph, pw, wh, shift)
        x = self.attn(window_partition(x, wh, ww), ctx, mask, window_hw=(wh, ww))
        x = window_reverse(x, wh, ww, ph, pw)
        if shift:
            x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
        x = x[:, :height, :width]
        x = shortcut + x.reshape(b, length, c)
        ctx.record(f"{name}.attn", x)
        x = x + self.mlp(layer_norm(self.norm2, x, eps), ctx)
        ctx.record(name, x)
        return x


class PatchMerging(nn.Module):
    def __init__(self, dim, resolution):
        super().__init__()
        self.resolution = resolution
        self.norm = nn.LayerNorm(4 * dim, eps=1e-5)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x, height, width, ctx):
        b, _, c = x.shape
        x = x.reshape(b, height, width, c)
        x00, x10 = x[:, 0::2, 0::2], x[:, 1::2, 0::2]   # first index is the row
        x01, x11 = x[:, 0::2, 1::2], x[:, 1::2, 1::2]
        parts = [x00, x01, x10, x11] if ctx.has("swin_merge_order") else [x00, x10, x01, x11]
        x = torch.cat(parts, dim=-1).reshape(b, -1, 4 * c)
        return self.reduction(layer_norm(self.norm, x, 1e-6 if ctx.has("swin_merge_eps_1e6") else 1e-5))


class SwinStage(nn.Module):
    def __init__(self, cfg, i, resolution):
        super().__init__()
        dim, attn_type = cfg["embed_dims"][i], cfg["attn_types"][i]
        window_cfg = cfg["window_size"] if attn_type == "L" else cfg["window_size_softmax"]
        self.blocks = nn.ModuleList(
            SwinBlock(dim, cfg["num_heads"][i], cfg["mlp_ratios"][i], resolution, attn_type, window_cfg,
                      j, cfg["alpha"], cfg["kernel_size"])
            for j in range(cfg["depths"][i]))
        self.downsample = PatchMerging(dim, resolution) if i < 3 else None


class SwinPatchEmbed(nn.Module):
    def __init__(self, in_chans, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, patch, stride=patch)
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, img, ctx):
        eps = 1e-6 if ctx.has("swin_embed_eps_1e6") else 1e-5
        return layer_norm(self.norm, self.proj(img).flatten(2).transpose(1, 2), eps)


class PolaSwin(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        res = stage_resolutions(cfg)
        self.patch_embed = SwinPatchEmbed(cfg["in_chans"], cfg["embed_dims"][0], cfg["patch_size"])
        self.layers = nn.ModuleList(SwinStage(cfg, i, res[i]) for i in range(4))
        self.norm = nn.LayerNorm(cfg["embed_dims"][3], eps=1e-5)
        self.head = nn.Linear(cfg["embed_dims"][3], cfg["num_classes"])

    def forward(self, img, ctx):
        x = self.patch_embed(img, ctx)
        patch = self.cfg["patch_size"]
        height, width = img.shape[-2] // patch, img.shape[-1] // patch
        ctx.record("patch_embed", x)
        for i, stage in enumerate(self.layers):
            for j, block in enumerate(stage.blocks):
                x = block(x, height, width, ctx, f"layers.{i}.blocks.{j}")
            if stage.downsample is not None:
                x = stage.downsample(x, height, width, ctx)
                height, width = height // 2, width // 2
                ctx.record(f"layers.{i}.downsample", x)
        x = layer_norm(self.norm, x, 1e-6 if ctx.has("swin_final_eps_1e6") else 1e-5)
        ctx.record("norm", x)
        pooled = x.mean(dim=1)
        ctx.record("pool", pooled)
        logits = self.head(pooled)
        ctx.record("head", logits)
        return logits
