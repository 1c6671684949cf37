"""The tracked ``torch.compile`` of a model, checked against eager.

``compile_model`` is the compile step of ``compile.job.compile_request`` (the door every
entry point goes through). It runs the eager reference first (``compile.eager``, on copies
of the model and its inputs): a model that fails in eager mode, or a training run with
nothing to differentiate, is refused before anything is compiled or written. Whether the
compiled output matches eager is ``compile.numerics``'s to say.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.backends.base import Backend
from spyre_provenance.capture import inductor, trace_log
from spyre_provenance.capture.tracking import start, until_disabled
from spyre_provenance.compile import numerics
from spyre_provenance.compile.eager import (
    LoadedModel,
    NotCompilable,
    copies,
    float64_run,
    run_calls,
    run_eager,
)
from spyre_provenance.compile.numerics import PrecisionCheck
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import COMPARED_FALLBACK_RANDOM, COMPARED_TRACKED
from spyre_provenance.model.records import GraphResult


class RunFailed(Exception):
    """torch.compile finished (the session recorded its graphs, their artifacts are
    written) but running the compiled code failed: on several ranks, a collective whose
    peer went away. ``graphs`` are the recorded graphs, ``str(exc)`` the error in one line."""

    def __init__(self, graphs: list[GraphResult], error: BaseException) -> None:
        text = str(error).strip()
        super().__init__(f"{type(error).__name__}: {text.splitlines()[0] if text else '(no message)'}")
        self.graphs = graphs


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
    compared: str = COMPARED_TRACKED  # what matches_eager compared: COMPARED_TRACKED or COMPARED_FALLBACK_RANDOM
    calls: int = 1  # how many times the model was called (each with its own inputs)
    #: past the tolerance: the compiled output against a float64 eager run (None: not run,
    #: or the model cannot run in float64)
    precision: PrecisionCheck | None = None
    output_scale: float = 0.0  # the largest magnitude of eager's outputs and gradients

    @property
    def torch_spyre_kernels(self) -> int | None:
        """On the ``spyre`` backend, how many call sites are kernels torch-spyre's own
        scheduling defined (the adapter kept their OpSpecs); None on other backends. Zero
        means Inductor compiled the model with its own kernels: torch-spyre's compile_fx
        wrapper engages only for tensors on device ``spyre``."""
        if self.backend != "spyre":
            return None
        return sum(1 for g in self.graphs for r in g.records if not r.is_extern and r.opspecs is not None)

    @property
    def random_ops(self) -> list[Any]:
        """The ops of the compiled graphs that draw random numbers, once each."""
        return list(dict.fromkeys(op for g in self.graphs for op in g.random_ops))


def compile_model(
    loaded: LoadedModel,
    reference: list[Any] | None = None,
    *,
    backend: Backend,
    layout: Layout | None = None,
    train: bool = False,
    redact_paths: bool = False,
    keep_run_failure: bool = False,
    audit: bool = False,
    after_run: Callable[[Callable[[], object]], None] | None = None,
) -> CompileReport:
    """Compile ``loaded`` once with tracking on and compare with the eager ``reference``
    (``run_eager``'s result for the same ``train``; run here when None).

    ``backend``: the compile's one instance, built with its own options (its bundle folder,
    ``layout.bundle_root``; the reference backend's kernel cache); the eager comparison of a
    graph that draws random numbers compiles on it again, writing nothing.
    ``layout``: where the graph folders go (``graph_<label>_...``), so runs of several models
    can share one ``--out``; None: nothing written.
    ``redact_paths``: see ``tracking.enable``.
    ``keep_run_failure`` (a rank of ``compile --ranks``): when the compile finished but its
    run failed, report that (``run_error``) instead of raising, so its artifacts are kept.
    ``audit``: each graph also gets its provenance audit (``GraphResult.audit``).
    ``after_run``: called once after the tracked run, still tracking, with a function that
    runs the same compiled model on the same calls again (``compile --profile`` profiles it).
    """
    if reference is None:
        reference = run_eager(loaded, train=train)
    loaded.module.train(train)
    # as the eager run found them: the tracked run updates buffers (BatchNorm's statistics)
    pristine = copy.deepcopy(loaded.module)
    try:
        session, got = compile_tracked(
            loaded.module,
            loaded.calls,
            backend,
            train=train,
            layout=layout,
            redact_paths=_redaction(loaded, redact_paths),
            keep_run_failure=keep_run_failure,
            audit=audit,
            after_run=after_run,
        )
    except RunFailed as exc:
        return _report(loaded, backend, train, exc.graphs, run_error=str(exc))
    return _compared_with_eager(loaded, backend, train, session, got, pristine, reference)


def _redaction(loaded: LoadedModel, redact_paths: bool) -> bool | Path:
    """``tracking.enable``'s ``redact_paths``: a file model's project is its file's folder."""
    if redact_paths and ":" in loaded.model:
        return Path(loaded.model.split(":", 1)[0]).resolve().parent
    return redact_paths


def _compared_with_eager(
    loaded: LoadedModel,
    backend: Backend,
    train: bool,
    session: Any,
    got: list[Any],
    pristine: Any,
    reference: list[Any],
) -> CompileReport:
    """The report of a compile whose run finished: its outputs against eager's (those of
    a second, untracked compile with ATen's random numbers when a graph draws any), and
    past the tolerance against a float64 eager run of the ``pristine`` model."""
    graphs = session.results
    compared = COMPARED_TRACKED
    if any(g.random_ops for g in graphs):
        calls = [copies(call) for call in loaded.calls]
        got = _fallback_random_run(copy.deepcopy(pristine), calls, backend, train)
        compared = COMPARED_FALLBACK_RANDOM
    compared_with = numerics.check(
        got, reference, lambda: float64_run(pristine, [copies(call) for call in loaded.calls], train)
    )
    return _report(
        loaded,
        backend,
        train,
        graphs,
        matches_eager=compared_with.matches,
        max_abs_error=compared_with.max_abs_error,
        tracking_level=session.probe.tracking_level if session.probe is not None else 0,
        compared=compared,
        precision=compared_with.precision,
        output_scale=compared_with.output_scale,
    )


def _report(
    loaded: LoadedModel, backend: Backend, train: bool, graphs: list[GraphResult], **found: Any
) -> CompileReport:
    """A ``CompileReport`` of ``loaded`` on ``backend``; without ``found``, that of a run that
    failed (no eager comparison)."""
    found.setdefault("matches_eager", False)
    found.setdefault("max_abs_error", float("nan"))
    return CompileReport(
        model=loaded.model,
        backend=backend.name,
        dtype=loaded.dtype,
        train=train,
        graphs=graphs,
        calls=len(loaded.calls),
        **found,
    )


def _fallback_random_run(model: Any, calls: list[tuple[Any, ...]], chosen: Backend, train: bool) -> list[Any]:
    """Outputs of a second compile of the untouched model on the same backend, untracked
    and unlogged, with ``fallback_random``: its random ops call ATen as eager does, so
    from the same seed they draw the same numbers and a difference left is the kernels'.
    The tracked compile, the one the pages show, keeps Inductor's own random numbers."""
    import torch

    model.train(train)
    torch._dynamo.reset()
    chosen.install(None)
    try:  # the tracked compile's own backend, writing no bundle and no cache entry
        with chosen.writing_nothing(), inductor.fallback_random(), trace_log.off():
            model, calls = _placed(chosen, model, calls)
            return _on_cpu(run_calls(torch.compile(model, backend=chosen.compiler()), model, calls, train))
    finally:
        chosen.uninstall()
        torch._dynamo.reset()


def compile_tracked(
    model: Any,
    calls: list[tuple[Any, ...]],
    backend: Backend,
    *,
    train: bool,
    layout: Layout | None,
    redact_paths: bool | Path,
    keep_run_failure: bool,
    audit: bool,
    after_run: Callable[[Callable[[], object]], None] | None = None,
) -> tuple[Any, list[Any]]:
    """``torch.compile`` of ``model`` called on each of ``calls`` in order, with tracking on
    (under ``no_grad``, or with a backward through every output that requires grad when
    ``train``). Returns the session (its graphs, its audit probe) and the outputs (then
    gradients) of every call as one flat list of tensors.

    ``keep_run_failure``: raise RunFailed when the session recorded graphs and the error is
    not one of compiling (Dynamo wraps every compile error in its own exception types): the
    compiled code failed as it ran."""
    import torch
    from torch._dynamo.exc import TorchDynamoException

    torch._dynamo.reset()  # a cached compile of the same code would generate no kernels
    model, calls = _placed(backend, model, calls)
    session = None
    try:
        with until_disabled(start(backend, layout=layout, redact_paths=redact_paths, audit=audit)) as session:
            compiled = torch.compile(model, backend=backend.compiler())
            before = _State(model, calls) if after_run is not None else None
            got = _on_cpu(run_calls(compiled, model, calls, train))
            if after_run is not None and before is not None:
                again = before.restore(model)  # before the profiler starts: no copies in its trace
                after_run(lambda: _rerun(compiled, model, again, train))
    except Exception as exc:
        compiling = isinstance(exc, (TorchDynamoException, NotCompilable))
        if not keep_run_failure or session is None or not session.results or compiling:
            raise
        raise RunFailed(list(session.results), exc) from exc
    finally:
        torch._dynamo.reset()
    return session, got


class _State:
    """The model and its calls as the compile's first run found them: each call's inputs,
    every parameter and buffer (a KV cache), and the plain attributes of every submodule
    (a step counter), so a second run sees what the first did and recompiles nothing."""

    def __init__(self, model: Any, calls: list[tuple[Any, ...]]) -> None:
        self.calls = [copies(call) for call in calls]
        self.tensors = {name: t.detach().clone() for name, t in [*model.named_parameters(), *model.named_buffers()]}
        self.attributes = [
            (module, {k: v for k, v in vars(module).items() if isinstance(v, (bool, int, float, str, type(None)))})
            for module in model.modules()
        ]

    def restore(self, model: Any) -> list[tuple[Any, ...]]:
        """Put the model back as it was; fresh copies of the calls' inputs."""
        import torch

        live = dict([*model.named_parameters(), *model.named_buffers()])
        with torch.no_grad():
            for name, saved in self.tensors.items():
                live[name].copy_(saved)
        for module, attributes in self.attributes:
            for key, value in attributes.items():
                setattr(module, key, value)
        return [copies(call) for call in self.calls]


def _rerun(compiled: Any, model: Any, calls: list[tuple[Any, ...]], train: bool) -> list[Any]:
    """The compiled model once more on the compile's own inputs (``compile --profile``),
    restored by ``_State.restore`` to the state its first run started from; a run that would
    need another compile fails (torch's ``fail_on_recompile`` stance) instead of profiling
    graphs the compile never had."""
    import torch

    with torch.compiler.set_stance("fail_on_recompile"):
        return run_calls(compiled, model, calls, train)


def _placed(backend: Backend, model: Any, calls: list[tuple[Any, ...]]) -> tuple[Any, list[tuple[Any, ...]]]:
    """``backend.place``: the model and its calls on the backend's device (torch-spyre:
    ``spyre``); NotCompilable, one line, when the device cannot hold them."""
    from spyre_provenance.backends.spyre import DeviceUnavailable

    try:
        return backend.place(model, calls)
    except DeviceUnavailable as exc:
        raise NotCompilable(str(exc)) from None


def _on_cpu(tensors: list[Any]) -> list[Any]:
    """Outputs and gradients where eager's are, to compare them."""
    return [t.cpu() for t in tensors]
