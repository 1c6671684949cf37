"""The program the README's first example tracks: a small model and one torch.compile, with
nothing of spyre-provenance in it (``regen_outputs.py`` copies it into its scratch folder)."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(64, 128)
        self.down = nn.Linear(128, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.up(x))
        return self.down(h) + x


torch.manual_seed(0)
model = torch.compile(Block())
with torch.no_grad():
    y = model(torch.randn(8, 64))
print("output", tuple(y.shape))
