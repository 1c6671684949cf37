"""The audit's overhead: ``compile --audit`` against ``compile``, side by side (issue 15.5).

Both arms are the tracked compile ``compile`` runs (hook on, the reference backend that
``--backend auto`` picks without torch-spyre, SuperDSC bundles written into a scratch
folder), in this process, fresh Inductor caches every run as in ``compile_overhead``, after
one untimed compile per arm (a process's first C++ kernel costs 30-40 s here, once).
``--quick`` runs the tiny extern-only model on stock Inductor instead: no C++ kernel to
build, so the smoke run stays seconds; its numbers mean nothing. The
audit arm also has the probe on and then builds, validates and renders the audit document
(what ``compile --audit`` adds after the compile, the two files' writes aside). Arms
alternate round by round, their order swapped each round. Target: at most 1.05x on the
24-layer stack.
"""

from __future__ import annotations

import contextlib
import gc
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

TARGET = 1.05
ARMS = ("compile", "compile --audit")


#: The probe's methods the compile calls into (its seams); timed in the audit arm.
PROBE_SEAMS = ("pre_grad", "pass_boundary", "call_site", "bundles", "finish")


class AuditResults(msgspec.Struct):
    model: str
    backend: str
    times: dict[str, list[float]]  # arm -> wall seconds, one per round
    cpu: dict[str, list[float]]  # arm -> CPU seconds (this process + its compilers), one per round
    own: list[float]  # the audit arm: seconds inside the probe and the document's making, per round
    stages: int  # stages the audit counted (all graphs)

    def median(self, arm: str) -> float:
        return statistics.median(self.times[arm])

    @property
    def ratio(self) -> float:
        return self.median(ARMS[1]) / self.median(ARMS[0])

    @property
    def cpu_ratio(self) -> float:
        return statistics.median(self.cpu[ARMS[1]]) / statistics.median(self.cpu[ARMS[0]])

    @property
    def own_share(self) -> float:
        """The audit's own time over the compile arm's median: the exact part of the ratio."""
        return statistics.median(self.own) / self.median(ARMS[0])

    def round_ratios(self) -> list[float]:
        return [b / a for a, b in zip(self.times[ARMS[0]], self.times[ARMS[1]], strict=True)]


def _timing_probe(own: list[float]) -> contextlib.AbstractContextManager[None]:
    """Add the time spent in the probe's seams to ``own[0]`` (bench only)."""
    from bench.compile_overhead import timed_methods
    from spyre_provenance.capture.audit_probe import AuditProbe

    return timed_methods(AuditProbe, PROBE_SEAMS, own)


def _cpu_seconds() -> float:
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def compile_once(
    model_name: str, with_audit: bool, scratch: Path, backend_name: str = "reference"
) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, the audit's own seconds, stages audited) of one fresh
    tracked compile (``compile.tracked.compile_tracked``, the compile step of ``compile``, resets
    Dynamo before and after)."""
    from torch._inductor.utils import fresh_cache

    from bench.models import MODELS
    from spyre_provenance.audit import report
    from spyre_provenance.backends import get_backend
    from spyre_provenance.capture.audit_probe import toolchain
    from spyre_provenance.compile.tracked import compile_tracked
    from spyre_provenance.model.layout import Layout

    model, inputs = MODELS[model_name]()
    gc.collect()
    own = [0.0]
    with fresh_cache(), _timing_probe(own):
        start, start_cpu = time.perf_counter(), _cpu_seconds()
        backend = get_backend(backend_name, bundle_dir=Layout(scratch, "bench").bundle_root)
        session, _ = compile_tracked(
            model,
            [inputs],
            backend,
            train=False,
            layout=Layout(scratch, "bench"),
            redact_paths=False,
            keep_run_failure=False,
            audit=with_audit,
        )
        graphs = session.results
        stages = 0
        if with_audit:
            making = time.perf_counter()
            doc = report.make_audit(
                [g.audit for g in graphs],
                model=model_name,
                dtype="float32",
                backend=backend.name,
                train=False,
                toolchain=toolchain(),
                tracking_level=1,
                generated="bench",
            )
            problems = report.check(doc)
            report.to_json_bytes(doc)
            report.render_markdown(doc)
            if problems or not doc.graphs:
                raise RuntimeError(f"{model_name}: the audit failed: {problems or 'no graph audited'}")
            stages = sum(len(g.stages) for g in doc.graphs)
            own[0] += time.perf_counter() - making
        elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - start_cpu
    return elapsed, cpu, own[0], stages


def run(
    model_name: str,
    rounds: int,
    progress: Callable[[str], None] = lambda _: None,
    *,
    backend: str = "reference",
    warmup: str | None = "mlp",
) -> AuditResults:
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
    own: list[float] = []
    stages = 0
    with tempfile.TemporaryDirectory(prefix="spyre-bench-audit-") as scratch:
        if warmup is not None:
            progress(f"audit: warm-up ({warmup}, both arms)")
            for arm in ARMS:
                compile_once(warmup, arm == ARMS[1], Path(scratch), backend)
        for r in range(rounds):
            for arm in ARMS if r % 2 == 0 else ARMS[::-1]:
                elapsed, cpu_seconds, in_audit, counted = compile_once(
                    model_name, arm == ARMS[1], Path(scratch), backend
                )
                times[arm].append(elapsed)
                cpu[arm].append(cpu_seconds)
                if arm == ARMS[1]:
                    own.append(in_audit)
                stages = max(stages, counted)
                progress(f"audit: {model_name} round {r + 1}/{rounds} {arm} {elapsed:.2f}s")
    return AuditResults(model_name, backend, times, cpu, own, stages)


def render_section(lines: list[str], result: AuditResults) -> str:
    """The section's table; returns its verdict line."""
    add = lines.append
    add("#### 5. Audit overhead: `compile --audit` against `compile`, median wall time")
    add("")
    add(
        f"The tracked compile on the {result.backend} backend (fresh Inductor caches every run), arms alternating"
        " round by round; the audit arm also builds, validates and renders the audit_report. Per round: lowest and"
        " highest of the rounds' own ratios (the noise). CPU: ratio of median CPU times. Audit's own time: inside"
        " the probe's seams plus the document's making (median), and as a share of the compile arm's median."
    )
    add("")
    add(
        "| model | rounds | compile (s) | compile --audit (s) | ratio | per round | CPU ratio | audit's own time | stages audited |"
    )
    add("|---|---|---|---|---|---|---|---|---|")
    per_round = result.round_ratios()
    own = statistics.median(result.own)
    add(
        f"| {result.model} | {len(per_round)} | {result.median(ARMS[0]):.2f} | {result.median(ARMS[1]):.2f} | "
        f"{result.ratio:.3f} | {min(per_round):.3f}-{max(per_round):.3f} | {result.cpu_ratio:.3f} | "
        f"{own * 1000:.0f} ms ({result.own_share:.1%}) | {result.stages} |"
    )
    add("")
    detail = (
        f"compile --audit / compile on the {result.model}: wall {result.ratio:.3f}, CPU {result.cpu_ratio:.3f},"
        f" the audit's own time {result.own_share:.1%} of compile; target <= {TARGET}"
    )
    if result.ratio <= TARGET:
        return f"**met** ({detail})"
    if 1 + result.own_share <= TARGET:
        return f"**met on the audit's own time; wall time inconclusive** ({detail})"
    return f"**not met** ({detail})"
