"""Pieces shared by both families."""
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    """fc1 -> exact (erf) GELU -> fc2 (SPEC 2)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x, ctx):
        approximate = "tanh" if ctx.has("gelu_tanh") else "none"
        return self.fc2(F.gelu(self.fc1(x), approximate=approximate))


def layer_norm(norm, x, eps):
    """Apply LayerNorm module `norm` with an explicit eps, so trap flags can swap the eps."""
    return F.layer_norm(x, norm.normalized_shape, norm.weight, norm.bias, eps)


def resize_grid(table, grid, new_grid):
    """A learned token-grid table (1, h0*w0, C) resized bilinearly to new_grid = (h, w), as the
    authors resize pos_embed (F.interpolate, mode="bilinear", align_corners=False). The table
    itself when the grids agree (the checkpoint's own input size)."""
    (h0, w0), (h, w) = grid, new_grid
    if (h0, w0) == (h, w):
        return table
    c = table.shape[-1]
    img = table.reshape(1, h0, w0, c).permute(0, 3, 1, 2)
    img = F.interpolate(img, size=(h, w), mode="bilinear", align_corners=False)
    return img.permute(0, 2, 3, 1).reshape(1, h * w, c)
