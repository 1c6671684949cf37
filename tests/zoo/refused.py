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


# --- a training compile whose backward the backend refuses, after its forward compiled ---------


@torch.library.custom_op("spyre_provenance_tests::half_square", mutates_args=())
def half_square(x: Tensor) -> Tensor:
    return x * x * 0.5


@half_square.register_fake
def _(x: Tensor) -> Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("spyre_provenance_tests::half_square_backward", mutates_args=())
def half_square_backward(x: Tensor, grad: Tensor) -> Tensor:
    return x * grad


@half_square_backward.register_fake
def _(x: Tensor, grad: Tensor) -> Tensor:
    return torch.empty_like(x)


def _half_square_grad(ctx, grad: Tensor) -> Tensor:
    (x,) = ctx.saved_tensors
    return torch.ops.spyre_provenance_tests.half_square_backward(x, grad)


def _save_input(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0])


half_square.register_autograd(_half_square_grad, setup_context=_save_input)


def refuse_half_square_backward() -> None:
    """The backend refuses the backward's op, as torch-spyre refuses a backward's layouts:
    an Inductor lowering that raises. The forward, compiled first, has no such op; the
    backward's post-grad graph is logged before lowering fails."""
    from torch._inductor.lowering import register_lowering

    @register_lowering(torch.ops.spyre_provenance_tests.half_square_backward.default)
    def _refused(x, grad):
        raise NotImplementedError("this backend refuses half_square_backward")


class BackwardRefused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.ops.spyre_provenance_tests.half_square(torch.relu(self.fc1(x)))
        return self.fc2(h).sum(dim=1).exp()


def backward_refused():
    """Linear, ReLU, a custom op, Linear, sum, exp: its backward fails to compile
    (``refuse_half_square_backward`` installed), its forward compiles into three kernels."""
    torch.manual_seed(0)
    return BackwardRefused(), (torch.randn(4, 16),)
