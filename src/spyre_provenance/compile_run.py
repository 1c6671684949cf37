"""Run one tracked ``torch.compile`` of a model and check it against eager.

The thin torch-side half of ``spyre-provenance compile`` (the command prints and
validates). TORCH_TRACE must be set before torch is imported, so the caller owns that.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.backends import get_backend
from spyre_provenance.hook import GraphResult, tracking

DTYPES = ("float32", "float16", "bfloat16")
# Compiled code may reorder floating-point sums; these bound what "matches eager" means.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


class CompileReport(msgspec.Struct):
    model: str
    backend: str
    dtype: str
    train: bool
    graphs: list[GraphResult]
    matches_eager: bool
    max_abs_error: float


def compile_model(
    spec: str,
    *,
    backend: str = "auto",
    out_dir: Path | None = None,
    dtype: str = "float32",
    train: bool = False,
    label: str | None = None,
    redact_paths: bool = False,
) -> CompileReport:
    """Compile ``spec`` (built-in name or ``PATH.py:FACTORY``) once with tracking on.

    ``label`` (the model's name in ``out_dir``): graph folders are ``graph_<label>_...`` and
    bundles go to ``sdsc/<label>/``, so runs of several models can share ``out_dir``.
    ``redact_paths``: see ``hook.enable``.
    """
    import torch

    from spyre_provenance.examples import load_model

    torch_dtype = getattr(torch, dtype)
    model, inputs = load_model(spec, torch_dtype)
    reference_model = copy.deepcopy(model)
    bundle_dir = None if out_dir is None else out_dir / "sdsc" / label if label else out_dir / "sdsc"
    chosen = get_backend(backend, bundle_dir=bundle_dir)

    torch._dynamo.reset()
    redact: bool | Path = redact_paths
    if redact_paths and ":" in spec:  # the project is the model file's
        redact = Path(spec.split(":", 1)[0]).resolve().parent
    with tracking(chosen, out_dir=out_dir, label=label, redact_paths=redact) as session:
        compiled = torch.compile(model)
        got = _run(compiled, model, inputs, train)
    want = _run(reference_model, reference_model, inputs, train)
    torch._dynamo.reset()

    error = max((_max_abs_diff(a, b) for a, b in zip(got, want)), default=0.0)
    return CompileReport(
        model=spec,
        backend=chosen.name,
        dtype=dtype,
        train=train,
        graphs=session.results,
        matches_eager=error <= TOLERANCE[dtype] * max(1.0, _scale(want)),
        max_abs_error=error,
    )


def _run(fn: Any, module: Any, inputs: tuple[Any, ...], train: bool) -> list[Any]:
    """Outputs (and, when training, the parameter gradients) as a flat list of tensors."""
    import torch

    if not train:
        with torch.no_grad():
            return _flatten(fn(*inputs))
    module.train()
    outputs = _flatten(fn(*inputs), detach=False)  # the loss needs their autograd graph
    loss = sum(o.float().sum() for o in outputs if o.is_floating_point() and o.requires_grad)
    loss.backward()
    return [o.detach() for o in outputs] + [p.grad for p in module.parameters() if p.grad is not None]


def _flatten(value: Any, detach: bool = True) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value.detach() if detach else value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _flatten(item, detach)]
    if isinstance(value, dict):
        return [t for key in sorted(value) for t in _flatten(value[key], detach)]
    return []


def _max_abs_diff(a: Any, b: Any) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _scale(tensors: list[Any]) -> float:
    return max((float(t.float().abs().max()) for t in tensors if t.numel()), default=1.0)
