"""Small models the tests copy as a user's own file (``PATH.py:FACTORY``).

Where the file sits is what those tests are about (the same model moved two lines lower, a
file in another user's home, a folder of its own per run), so they write ``SOURCE``, this
module's own text, to a place of their own. Each compiles in a few seconds.
"""

from __future__ import annotations

from pathlib import Path

import torch

#: this file's text, for the tests that write the models somewhere of their own
SOURCE = Path(__file__).read_text()


class Tiny(torch.nn.Module):
    """Two kernels on stock Inductor (an extern mm and a fused pointwise)."""

    def forward(self, x, w):
        return torch.relu(x @ w) * 2


def tiny():
    torch.manual_seed(0)
    return Tiny(), (torch.randn(8, 16), torch.randn(16, 4))


class SummedBlock(torch.nn.Module):
    """A linear layer, relu and a reduction: kernels with several OpSpecs and a pool line."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)

    def forward(self, x):
        return torch.relu(self.fc(x)).sum(dim=1)


def summed_block():
    torch.manual_seed(0)
    return SummedBlock(), (torch.randn(4, 16),)


class SoftmaxBlock(torch.nn.Module):
    """A linear layer, relu and softmax (the torch-spyre stand-in's bundle tests)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)

    def forward(self, x):
        return torch.softmax(torch.relu(self.fc(x)), dim=-1)


def softmax_block():
    torch.manual_seed(0)
    return SoftmaxBlock(), (torch.randn(4, 16),)
