"""One tracked ``torch.compile`` of a model, checked against eager.

``tracked_compile`` is the one way this project compiles with tracking on (the ``compile``
command through ``compile_model``, the pytest plugin directly). ``compile_model`` runs the
eager reference first, on copies of the model and its inputs: a model that fails in eager
mode, or a training run with nothing to differentiate, is refused before anything is
compiled or written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.backends import get_backend
from spyre_provenance.backends.base import Backend
from spyre_provenance.capture.hook import tracking
from spyre_provenance.model.records import GraphResult

# Compiled code may reorder floating-point sums; these bound what "matches eager" means.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
AS_BUILT = "as built"  # the dtype label of a file model compiled without --dtype


class NotCompilable(Exception):
    """The model cannot be compiled the way it was asked for; ``str(exc)`` is one line."""


class RunFailed(Exception):
    """torch.compile finished (the session recorded its graphs, their artifacts are
    written) but running the compiled code failed: on several ranks, a collective whose
    peer went away. ``graphs`` are the recorded graphs, ``str(exc)`` the error in one line."""

    def __init__(self, graphs: list[GraphResult], error: BaseException) -> None:
        text = str(error).strip()
        super().__init__(f"{type(error).__name__}: {text.splitlines()[0] if text else '(no message)'}")
        self.graphs = graphs


class LoadedModel(msgspec.Struct):
    spec: str
    model: Any
    inputs: tuple[Any, ...]
    dtype: str  # "float32", ... or AS_BUILT


class CompileReport(msgspec.Struct):
    model: str
    backend: str
    dtype: str
    train: bool
    graphs: list[GraphResult]
    matches_eager: bool
    max_abs_error: float
    #: set when the compile finished but its run failed (``RunFailed``): no eager comparison
    run_error: str | None = None
    tracking_level: int = 0  # Inductor's provenance_tracking_level during the compile (audit only)


def load(spec: str, dtype: str | None = None) -> LoadedModel:
    """The model of ``spec`` (built-in name or ``PATH.py:FACTORY``) in ``dtype``; None keeps
    a file model's own dtypes (float32 for the built-in ones). Raises ModelLoadError."""
    import torch

    from spyre_provenance.examples import EXAMPLES, RANKED_EXAMPLES, load_model

    if dtype is None and (spec in EXAMPLES or spec in RANKED_EXAMPLES):
        dtype = "float32"
    model, inputs = load_model(spec, None if dtype is None else getattr(torch, dtype))
    return LoadedModel(spec, model, inputs, dtype or AS_BUILT)


def check_trainable(loaded: LoadedModel) -> None:
    """``--train`` needs a parameter or an input that requires grad: NotCompilable if not."""
    import torch

    if any(p.requires_grad for p in loaded.model.parameters()):
        return
    if any(isinstance(x, torch.Tensor) and x.requires_grad for x in loaded.inputs):
        return
    raise NotCompilable(
        "--train needs something to differentiate: the model has no parameter that requires grad"
        " and no input requires grad (return inputs with requires_grad=True from the factory)"
    )


def run_eager(loaded: LoadedModel, *, train: bool = False) -> list[Any]:
    """The eager reference: outputs (and gradients, when training) of copies of the model
    and its inputs, in train or eval mode. Raises NotCompilable when there is nothing to
    differentiate or the model fails."""
    if train:
        check_trainable(loaded)
    loaded.model.train(train)
    model, inputs = copy.deepcopy(loaded.model), _copies(loaded.inputs)
    try:
        return _run(model, model, inputs, train)
    except NotCompilable:
        raise
    except Exception as exc:  # the user's model: one line, never a traceback
        raise NotCompilable(f"the model fails in eager mode: {type(exc).__name__}: {exc}") from None


def compile_model(
    loaded: LoadedModel,
    reference: list[Any] | None = None,
    *,
    backend: str = "auto",
    out_dir: Path | None = None,
    train: bool = False,
    label: str | None = None,
    redact_paths: bool = False,
    kernel_cache: bool = False,
    keep_run_failure: bool = False,
    audit: bool = False,
) -> CompileReport:
    """Compile ``loaded`` once with tracking on and compare with the eager ``reference``
    (``run_eager``'s result for the same ``train``; run here when None).

    ``label`` (the model's name in ``out_dir``): graph folders are ``graph_<label>_...`` and
    bundles go to ``sdsc/<label>/``, so runs of several models can share ``out_dir``.
    ``redact_paths``: see ``hook.enable``. ``kernel_cache``: the reference backend keeps its
    bundles as torch-spyre's kernel cache does (``ReferenceBackend.kernel_cache``).
    ``keep_run_failure`` (a rank of ``compile --ranks``): when the compile finished but its
    run failed, report that (``run_error``) instead of raising, so its artifacts are kept.
    ``audit``: each graph also gets its provenance audit (``GraphResult.audit``).
    """

    if reference is None:
        reference = run_eager(loaded, train=train)
    loaded.model.train(train)
    bundle_dir = None if out_dir is None else out_dir / "sdsc" / label if label else out_dir / "sdsc"
    chosen = get_backend(backend, bundle_dir=bundle_dir, kernel_cache=kernel_cache)

    redact: bool | Path = redact_paths
    if redact_paths and ":" in loaded.spec:  # the project is the model file's
        redact = Path(loaded.spec.split(":", 1)[0]).resolve().parent
    try:
        session, got = _tracked(
            loaded.model, loaded.inputs, chosen, train=train, out_dir=out_dir, label=label, redact_paths=redact,
            keep_run_failure=keep_run_failure, audit=audit,
        )
    except RunFailed as exc:
        return CompileReport(
            model=loaded.spec, backend=chosen.name, dtype=loaded.dtype, train=train, graphs=exc.graphs,
            matches_eager=False, max_abs_error=float("nan"), run_error=str(exc),
        )
    graphs = session.results

    error = max((_max_abs_diff(a, b) for a, b in zip(got, reference)), default=0.0)
    tolerance = max((TOLERANCE.get(str(t.dtype).replace("torch.", ""), 0.0) for t in reference), default=0.0)
    return CompileReport(
        model=loaded.spec,
        backend=chosen.name,
        dtype=loaded.dtype,
        train=train,
        graphs=graphs,
        matches_eager=len(got) == len(reference)
        and error <= max(tolerance, TOLERANCE["float32"]) * max(1.0, _scale(reference)),
        max_abs_error=error,
        tracking_level=session.probe.tracking_level if session.probe is not None else 0,
    )


def tracked_compile(
    model: Any,
    inputs: tuple[Any, ...],
    backend: Backend,
    *,
    train: bool = False,
    out_dir: Path | None = None,
    label: str | None = None,
    redact_paths: bool | Path = False,
    keep_run_failure: bool = False,
    audit: bool = False,
) -> tuple[list[GraphResult], list[Any]]:
    """The one tracked compile (``compile``'s and the pytest plugin's): ``torch.compile`` of
    ``model`` called once on ``inputs`` with tracking on (under ``no_grad``, or with a
    backward through every output that requires grad when ``train``). Returns the graphs
    the session saw, and the outputs (then gradients) as a flat list of tensors.

    ``keep_run_failure``: raise RunFailed when the session recorded graphs and the error is
    not one of compiling (Dynamo wraps every compile error in its own exception types): the
    compiled code failed as it ran."""
    session, got = _tracked(
        model, inputs, backend, train=train, out_dir=out_dir, label=label, redact_paths=redact_paths,
        keep_run_failure=keep_run_failure, audit=audit,
    )
    return session.results, got


def _tracked(
    model: Any,
    inputs: tuple[Any, ...],
    backend: Backend,
    *,
    train: bool,
    out_dir: Path | None,
    label: str | None,
    redact_paths: bool | Path,
    keep_run_failure: bool,
    audit: bool,
) -> tuple[Any, list[Any]]:
    """``tracked_compile``, returning the whole session (its audit probe included)."""
    import torch
    from torch._dynamo.exc import TorchDynamoException

    torch._dynamo.reset()  # a cached compile of the same code would generate no kernels
    session = None
    try:
        with tracking(backend, out_dir=out_dir, label=label, redact_paths=redact_paths, audit=audit) as session:
            got = _run(torch.compile(model), model, inputs, train)
    except Exception as exc:
        compiling = isinstance(exc, (TorchDynamoException, NotCompilable))
        if not keep_run_failure or session is None or not session.results or compiling:
            raise
        raise RunFailed(list(session.results), exc) from exc
    finally:
        torch._dynamo.reset()
    return session, got


def _copies(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh tensors for the eager run: the gradients of inputs must not add up."""
    import torch

    return tuple(
        x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else copy.deepcopy(x)
        for x in inputs
    )


def _run(fn: Any, module: Any, inputs: tuple[Any, ...], train: bool) -> list[Any]:
    """Outputs and, when training, the gradients of the parameters and of the inputs that
    require grad, as a flat list of tensors."""
    import torch

    if not train:
        with torch.no_grad():
            return _flatten(fn(*inputs))
    outputs = _flatten(fn(*inputs), detach=False)  # the loss needs their autograd graph
    differentiable = [o for o in outputs if o.is_floating_point() and o.requires_grad]
    if not differentiable:
        raise NotCompilable("--train: no output of the model depends on something that requires grad")
    sum(o.float().sum() for o in differentiable).backward()
    leaves = [*module.parameters(), *(x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad)]
    return [o.detach() for o in outputs] + [t.grad for t in leaves if t.grad is not None]


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
    if a.shape != b.shape:
        return float("inf")
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _scale(tensors: list[Any]) -> float:
    return max((float(t.float().abs().max()) for t in tensors if t.numel()), default=1.0)
