"""Does the compiled output match eager: the tolerances, and past them a float64 run of
eager as the judge, by Dynamo's own accuracy rule.

``check`` takes the compiled outputs (then gradients) and eager's, as flat lists of
tensors in the same order, and, only when the tolerance is missed, asks for the float64
run (``compile.tracked`` makes it). torch is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

# Compiled code may reorder floating-point sums; these bound what "matches eager" means.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


class PrecisionCheck(msgspec.Struct, frozen=True):
    """The compiled output against a float64 run of eager, where it missed the tolerance,
    by Dynamo's own accuracy rule (``torch._dynamo.utils.same`` with an fp64 reference),
    per tensor: the compiled RMSE from float64 at most ``multiplier`` times eager's own
    (2; 3 for half precision, fewer than 1000 elements or a 1x1 feature map, where noise
    dominates), plus a tenth of the tolerance. The figures are the tensor where the
    compiled output is furthest from float64 relative to eager."""

    within: bool
    compiled_rmse: float  # of the worst tensor, against float64
    eager_rmse: float  # eager's own at that tensor, against float64
    multiplier: float  # the rule's multiplier at that tensor
    eager_max_error: float  # the largest difference between eager and float64 over all tensors


class NumericsCheck(msgspec.Struct, frozen=True):
    """The compiled output against eager's."""

    matches: bool
    max_abs_error: float
    #: past the tolerance: the float64 judgement (None: within it, or no float64 run)
    precision: PrecisionCheck | None
    output_scale: float  # the largest magnitude of eager's outputs and gradients


def check(got: list[Any], reference: list[Any], float64: Callable[[], list[Any] | None]) -> NumericsCheck:
    """``got`` against ``reference`` within the tolerance of their dtype, scaled by the
    outputs' magnitude; past it (a bug, or a model that amplifies rounding: train-mode
    BatchNorm over two values), ``float64()`` (eager in float64; None when the model cannot
    run so) tells the two apart."""
    error = max(
        (max_abs_diff(a, b) for a, b in zip(got, reference, strict=False)), default=0.0
    )  # uneven: `matches` below judges the lengths
    tolerance = max((TOLERANCE.get(str(t.dtype).replace("torch.", ""), 0.0) for t in reference), default=0.0)
    matches = len(got) == len(reference) and error <= max(tolerance, TOLERANCE["float32"]) * max(1.0, _scale(reference))
    precision = None
    if not matches and len(got) == len(reference):
        precision = _precision(got, reference, float64())
        matches = precision is not None and precision.within
    return NumericsCheck(matches, error, precision, _scale(reference) if reference else 0.0)


def _precision(got: list[Any], reference: list[Any], truth: list[Any] | None) -> PrecisionCheck | None:
    """None without a float64 run of the same shape (then the tolerance's verdict stands)."""
    import torch

    if truth is None or len(truth) != len(got):
        return None
    worst, within, eager_max = (0.0, 0.0, 2.0), True, 0.0
    for mine, eager, exact in zip(got, reference, truth, strict=True):
        if not (mine.is_floating_point() and exact.is_floating_point()) or mine.shape != exact.shape:
            if not torch.equal(mine, eager):
                return None
            continue
        compiled_rmse, eager_rmse, multiplier = _rmse(mine, exact), _rmse(eager, exact), _multiplier(eager)
        eager_max = max(eager_max, max_abs_diff(eager, exact))
        slack = TOLERANCE.get(str(eager.dtype).replace("torch.", ""), TOLERANCE["float32"]) / 10
        if compiled_rmse > multiplier * eager_rmse + slack:
            within = False
        if compiled_rmse / (multiplier * eager_rmse + slack) >= worst[0] / (worst[2] * worst[1] + slack):
            worst = (compiled_rmse, eager_rmse, multiplier)
    return PrecisionCheck(within, worst[0], worst[1], worst[2], eager_max)


def _multiplier(tensor: Any) -> float:
    """Dynamo's ``same``: noise dominates small tensors, 1x1 maps and half precision."""
    import torch

    small = tensor.numel() < 1000 or (tensor.ndim == 4 and tensor.shape[-1] == tensor.shape[-2] == 1)
    return 3.0 if small or tensor.dtype in (torch.float16, torch.bfloat16) else 2.0


def _rmse(a: Any, b: Any) -> float:
    return float((a.double() - b.double()).pow(2).mean().sqrt()) if a.numel() else 0.0


def max_abs_diff(a: Any, b: Any) -> float:
    if a.shape != b.shape:
        return float("inf")
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _scale(tensors: list[Any]) -> float:
    return max((float(t.float().abs().max()) for t in tensors if t.numel()), default=1.0)
