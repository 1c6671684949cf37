"""Compile overhead: (A) hook on, (B) upstream provenance tracking alone, (C) tracking off.

Every run is one ``torch.compile(model)(*inputs)`` under ``torch.no_grad()``, timed from
just before tracking is switched on to just after the first call returns, in this process,
after ``torch._dynamo.reset()``, inside ``torch._inductor.utils.fresh_cache()`` (a fresh,
empty ``TORCHINDUCTOR_CACHE_DIR`` and cleared in-memory kernel caches), so every run
generates and C++-compiles every kernel. All three arms run with Inductor's FX-graph cache
and AOTAutograd's cache switched off, as the hook switches them off while tracking: with
fresh cache dirs they could only miss, and turning them off in B and C too keeps the arms
doing the same work apart from the hook (no cache-key hashing or entry writing in one arm
only). Arms are interleaved round by round, their order rotated each round (ABC, BCA,
CAB, ...), so drift on the machine lands on every arm alike.

(A) ``spyre_provenance.tracking("inductor")``: stock Inductor, the hook raises
``provenance_tracking_level`` from 0 to 1 itself. (B) level 1, no hook. (C) level 0.
A warm-up compile in arm A first pays every one-time cost (imports, the compile workers,
the schema validators) outside the measurement.

Two less noisy views of the same runs go with the wall times. CPU time: this process's
plus that of the compiler processes it ran and reaped during the run (``getrusage`` self
and children), i.e. the work a compile does, C++ compiles included, without the time lost
waiting for a core that other processes on the machine hold. And the hook's own time,
measured in arm A directly: the time spent inside its two seams (``Session._record`` per
call site, ``Session._finish_graph`` per graph) plus enable and disable, summed per run:
the part of A - B the hook can be blamed for.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import resource
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import msgspec

from spyre_provenance.base.patches import Patches

ARMS = ("A", "B", "C")
ARM_NAMES = {"A": "hook on", "B": "upstream level 1", "C": "tracking off"}


class ModelResult(msgspec.Struct):
    model: str
    graphs: int
    call_sites: int
    post_grad_nodes: int
    times: dict[str, list[float]]  # arm -> wall seconds, one per round
    cpu: dict[str, list[float]]  # arm -> CPU seconds (this process + its compilers), one per round
    hook_self: list[float]  # arm A: seconds spent inside the hook, one per round

    def median(self, arm: str) -> float:
        return statistics.median(self.times[arm])

    def ratio(self, top: str, bottom: str) -> float:
        return self.median(top) / self.median(bottom)

    def cpu_ratio(self, top: str, bottom: str) -> float:
        return statistics.median(self.cpu[top]) / statistics.median(self.cpu[bottom])

    def round_ratios(self, top: str, bottom: str) -> list[float]:
        return [a / b for a, b in zip(self.times[top], self.times[bottom], strict=True)]


class CompileResults(msgspec.Struct):
    models: list[ModelResult]
    one_time_hook_import: float  # seconds: import jsonschema + build the validators


@contextlib.contextmanager
def _arm(arm: str, hook_time: list[float]) -> Iterator[object]:
    import torch._functorch.config as functorch_config
    from torch._inductor import config

    level = 1 if arm == "B" else 0  # A: the hook raises it to 1 itself
    with (
        config.patch({"fx_graph_cache": False, "trace.provenance_tracking_level": level}),
        functorch_config.patch(enable_autograd_cache=False),
    ):
        if arm != "A":
            yield None
            return
        from spyre_provenance.capture import tracking

        start = time.perf_counter()
        session = tracking.enable("inductor")
        hook_time[0] += time.perf_counter() - start
        try:
            yield session
        finally:
            start = time.perf_counter()
            tracking.disable()
            hook_time[0] += time.perf_counter() - start


@contextlib.contextmanager
def timed_methods(owner: type, names: Sequence[str], total: list[float]) -> Iterator[None]:
    """Add the time spent in ``owner``'s methods ``names`` to ``total[0]`` while the block
    runs (bench only: the methods are wrapped, then restored)."""

    def timed(method: Callable) -> Callable:
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                total[0] += time.perf_counter() - start

        return wrapper

    with Patches() as patches:
        for name in names:
            patches.wrap(owner, name, timed)
        yield


def _timing_hook_seams(hook_time: list[float]) -> contextlib.AbstractContextManager[None]:
    """Add the time spent in the hook's two seams to ``hook_time[0]`` (bench only)."""
    from spyre_provenance.capture import hook

    return timed_methods(hook.Session, ("_record", "_finish_graph"), hook_time)


def compile_once(model_name: str, arm: str) -> tuple[float, float, float, object]:
    """(wall seconds, CPU seconds, hook seconds, the hook's session or None) of one fresh
    compile; CPU counts this process and the compiler processes it reaped meanwhile."""
    import torch
    from torch._inductor.utils import fresh_cache

    from bench.models import MODELS

    model, inputs = MODELS[model_name]()
    torch._dynamo.reset()
    gc.collect()
    hook_time = [0.0]
    with fresh_cache(), torch.no_grad(), _timing_hook_seams(hook_time):
        start, start_cpu = time.perf_counter(), _cpu_seconds()
        with _arm(arm, hook_time) as session:
            torch.compile(model)(*inputs)
        elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - start_cpu
    torch._dynamo.reset()
    return elapsed, cpu, hook_time[0], session


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _check_session(model_name: str, session: object) -> tuple[int, int, int]:
    """(graphs, call sites, post-grad nodes) the hook mapped; refuses a run where it did not."""
    results = getattr(session, "results", [])
    if not results:
        raise RuntimeError(f"{model_name}: the hook recorded no graph in arm A")
    sites = nodes = 0
    for graph in results:
        if graph.node_mappings is None or graph.diagnostics.faults:
            raise RuntimeError(f"{model_name}: the hook failed in arm A: {graph.diagnostics.faults}")
        sites += len(graph.records)
        nodes += len(graph.node_mappings.postToCppCode)
    return len(results), sites, nodes


def one_time_hook_import() -> float:
    """What a process's first tracked compile pays once: jsonschema and the validators."""
    from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS
    from spyre_provenance.validate import schemas

    start = time.perf_counter()
    schemas._validator(NODE_MAPPINGS, 2)
    schemas._validator(KERNEL_STACK_TRACES, 2)
    return time.perf_counter() - start


def run(
    models: Sequence[str],
    rounds: Mapping[str, int],
    warmup: str | None,
    progress: Callable[[str], None] = lambda _: None,
) -> CompileResults:
    one_time = one_time_hook_import()
    if warmup is not None:
        progress(f"compile: warm-up ({warmup}, arm A)")
        compile_once(warmup, "A")
    results = []
    for model_name in models:
        times: dict[str, list[float]] = {arm: [] for arm in ARMS}
        cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
        hook_self: list[float] = []
        shape = None
        for r in range(rounds[model_name]):
            order = ARMS[r % 3 :] + ARMS[: r % 3]
            for arm in order:
                elapsed, cpu_seconds, in_hook, session = compile_once(model_name, arm)
                times[arm].append(elapsed)
                cpu[arm].append(cpu_seconds)
                if arm == "A":
                    hook_self.append(in_hook)
                    shape = _check_session(model_name, session)
                progress(f"compile: {model_name} round {r + 1}/{rounds[model_name]} {arm} {elapsed:.2f}s")
        assert shape is not None
        graphs, sites, nodes = shape
        results.append(ModelResult(model_name, graphs, sites, nodes, times, cpu, hook_self))
    return CompileResults(models=results, one_time_hook_import=one_time)
