"""An RMSNorm before a linear, as FMS writes it (``layernorm.py``: ``x = self.weight * x``),
on a batch of sequences: the case of issue 55 point 6. torch-spyre main's handle of the
multiply names the linear (``aten.linear`` and its line): the linear's no-op ``expand`` of
its input re-points the multiply's ``origin_node``. On a 2-D input each op keeps its own."""

from __future__ import annotations

import torch
from torch import Tensor, nn

WIDTH = 64  # one stick of fp16 elements
SEED = 0


class RMSNormLinear(nn.Module):
    def __init__(self, dim: int = WIDTH) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        x = self.weight * x
        return self.proj(x)


def batched():
    """``[batch, tokens, hidden]``: the multiply's handle names the linear."""
    torch.manual_seed(SEED)
    return RMSNormLinear(), (torch.randn(2, 8, WIDTH),)


def flat():
    """``[tokens, hidden]``: every handle names its own op and line."""
    torch.manual_seed(SEED)
    return RMSNormLinear(), (torch.randn(8, WIDTH),)
