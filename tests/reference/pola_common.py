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
