"""Pola-PVT backbone and classifier (SPEC section 4). Module names equal the checkpoint keys."""
import torch
import torch.nn as nn

from pola_attention import PvtPolaAttention
from pola_common import Mlp, layer_norm, resize_grid
from pola_config import stage_resolutions


class PatchEmbed(nn.Module):
    EPS = 1e-5  # SPEC 2: PVT patch-embedding norms use 1e-5

    def __init__(self, in_chans, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, dim, patch, stride=patch)
        self.norm = nn.LayerNorm(dim, eps=self.EPS)

    def forward(self, img, ctx):
        x = self.proj(img)
        height, width = x.shape[-2:]
        eps = 1e-6 if ctx.has("pvt_embed_eps_1e6") else self.EPS
        return layer_norm(self.norm, x.flatten(2).transpose(1, 2), eps), height, width


class PvtBlock(nn.Module):
    EPS = 1e-6  # SPEC 2: PVT block norms use 1e-6

    def __init__(self, dim, heads, mlp_ratio, height, width, sr_ratio, alpha, kernel_size):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=self.EPS)
        self.attn = PvtPolaAttention(dim, heads, height, width, sr_ratio, alpha, kernel_size)
        self.norm2 = nn.LayerNorm(dim, eps=self.EPS)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x, height, width, ctx, name):
        eps = 1e-5 if ctx.has("pvt_block_eps_1e5") else self.EPS
        x = x + self.attn(layer_norm(self.norm1, x, eps), height, width, ctx)
        ctx.record(f"{name}.attn", x)
        x = x + self.mlp(layer_norm(self.norm2, x, eps), ctx)
        ctx.record(name, x)
        return x


class PolaPVT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        dims, res = cfg["embed_dims"], stage_resolutions(cfg)
        self.checkpoint_res = res  # grids of the stored pos_embed tables
        in_ch = cfg["in_chans"]
        for i in range(4):
            s = i + 1  # key names are 1-based
            setattr(self, f"patch_embed{s}", PatchEmbed(in_ch, dims[i], cfg["patch_sizes"][i]))
            setattr(self, f"pos_embed{s}", nn.Parameter(torch.zeros(1, res[i] * res[i], dims[i])))
            blocks = nn.ModuleList(
                PvtBlock(dims[i], cfg["num_heads"][i], cfg["mlp_ratios"][i], res[i], res[i],
                         cfg["sr_ratios"][i], cfg["alpha"], cfg["kernel_size"])
                for _ in range(cfg["depths"][i]))
            setattr(self, f"block{s}", blocks)
            in_ch = dims[i]
        # Present in checkpoints, never applied by the reference (SPEC 4).
        self.norm = nn.LayerNorm(dims[3], eps=1e-6)
        self.head = nn.Linear(dims[3], cfg["num_classes"])

    def forward(self, img, ctx):
        x = img
        b = img.shape[0]
        for s in range(1, 5):
            tokens, height, width = getattr(self, f"patch_embed{s}")(x, ctx)
            ctx.record(f"patch_embed{s}", tokens)
            # Another input size: the table is resized to the stage's grid.
            native = self.checkpoint_res[s - 1]
            tokens = tokens + resize_grid(getattr(self, f"pos_embed{s}"), (native, native), (height, width))
            ctx.record(f"pos_embed{s}", tokens)
            for j, block in enumerate(getattr(self, f"block{s}")):
                tokens = block(tokens, height, width, ctx, f"block{s}.{j}")
            x = tokens.transpose(1, 2).reshape(b, -1, height, width)
        if ctx.has("pvt_final_norm"):
            tokens = self.norm(tokens)
        pooled = tokens.mean(dim=1)
        ctx.record("pool", pooled)
        logits = self.head(pooled)
        ctx.record("head", logits)
        return logits
