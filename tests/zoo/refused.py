"""Models ``compile`` must refuse, fail on cleanly or find wanting (tests/hardening/test_compile_refusals.py)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Trig(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return torch.sin(x) * torch.cos(x)


def nothing_to_differentiate():
    """No parameter, and the input does not require grad: ``--train`` has nothing to do."""
    return Trig(), (torch.randn(4, 8),)


_CALLS = {"n": 0}


@torch.compiler.disable
def _second_call_fails(y: Tensor) -> Tensor:
    _CALLS["n"] += 1
    if _CALLS["n"] > 1:
        raise RuntimeError("this model refuses to be compiled")
    return y


class FailsCompiled(nn.Module):
    """Runs once eagerly (``compile``'s reference run); in the compiled run it fails after
    its first graph was compiled and run, so the run has begun writing (a graph folder,
    the TORCH_TRACE log) when it fails."""

    def forward(self, x: Tensor) -> Tensor:
        y = _second_call_fails(torch.relu(x) + 1)
        return y * 2


def fails_compiled():
    _CALLS["n"] = 0
    return FailsCompiled(), (torch.randn(4, 8),)


class CompiledDiffers(nn.Module):
    """Computes something else once compiled (a real mismatch, not a kernel bug of the
    tool's), and draws random numbers: the fair comparison with eager (a second compile
    with fallback_random) must still find it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: Tensor) -> Tensor:
        h = self.drop(self.fc(x))
        return h * 2 if torch.compiler.is_compiling() else h


def compiled_differs():
    torch.manual_seed(0)
    return CompiledDiffers(), (torch.randn(4, 8),)
