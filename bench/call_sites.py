"""What recording call sites at launch costs a call (issue 56): ``CompiledFxGraph.__call__``
as tracking wraps it (``capture.call_recording``) against the same call unwrapped, in one
tracked process, the profiler off and on.

Two workloads, compiled once on the reference backend under tracking:

* **per-op eager loop**: torch-spyre's eager pattern, a Python kernel registered with the
  dispatcher for a custom op, running a reused one-op ``torch.compile``; a model calls it from
  four lines, so every op is one call into a compiled graph;
* **whole graph**: one compiled MLP called per step.

Each round times a block of steps with the wrapper, then without it (the order reversed
every other round, so drift lands on both), swapping the class attribute the session
patched; a row is the median of the rounds' ratios, with their range. With the profiler on
it records CPU ops without stacks (``with_stack=False``: the cheapest profile, so the
recording's share is at its largest). Target: at most 1.01x on the eager loop with the
profiler on; off, the wrapper pays one check of the profiler's flag per call.

With the profiler on, each round also times a wrapper that only enters a range named as long
as the recorded ones, with no frame walk, against the same call unwrapped: the floor any
design keeping a range per call pays, printed under the table (reported, not judged).
``python -m bench.call_sites [--quick]`` runs this section alone; ``make bench`` runs it
after the warm-start section.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from bench.section import section_main

SECTION = 12
TARGET = 1.01
WORKLOADS = ("per-op eager loop", "whole graph")
PROFILER = ("off", "on")


class Plan(msgspec.Struct, frozen=True):
    rounds: int
    steps: int  # model calls per timed block


FULL = Plan(rounds=21, steps=1000)
QUICK = Plan(rounds=2, steps=5)


class Results(msgspec.Struct):
    #: workload -> profiler -> per round (wrapped seconds, unwrapped seconds) of one block
    blocks: dict[str, dict[str, list[tuple[float, float]]]]
    calls_per_step: dict[str, int]
    steps: int
    #: workload -> per round (range-only seconds, unwrapped seconds), the profiler on
    floor: dict[str, list[tuple[float, float]]] = msgspec.field(default_factory=dict)


def _workloads(torch: Any) -> tuple[dict[str, Callable[[], Any]], dict[str, int], Any]:
    """The two workloads as step functions, each compiled once by its first call; the
    dispatcher's library, kept alive while they run."""
    compiled: dict[str, Any] = {}

    def mul_kernel(x: Any, y: Any) -> Any:  # torch-spyre's compile_once, in short
        if "mul" not in compiled:
            compiled["mul"] = torch.compile(torch.ops.aten.mul.Tensor, dynamic=False)
        return compiled["mul"](x, y)

    library = torch.library.Library("spyre_bench_call_sites", "DEF")
    library.define("mul(Tensor x, Tensor y) -> Tensor")
    library.impl("mul", mul_kernel, "CPU")
    op = torch.ops.spyre_bench_call_sites.mul
    x, y = torch.randn(16, 16), torch.randn(16, 16)

    def eager_step() -> Any:
        a = op(x, y)
        b = op(a, y)
        c = op(b, x)
        return op(c, a)

    mlp = torch.compile(
        torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16)), dynamic=False
    )

    def graph_step() -> Any:
        return mlp(x)

    return {"per-op eager loop": eager_step, "whole graph": graph_step}, {WORKLOADS[0]: 4, WORKLOADS[1]: 1}, library


@contextlib.contextmanager
def _installed(cls: Any, call: Callable[[Any], Any]) -> Iterator[None]:
    """``cls.__call__`` made by ``call`` from Inductor's own, for the block, then the session's again."""
    wrapped = cls.__dict__["__call__"]
    cls.__call__ = call(wrapped.__wrapped__)
    try:
        yield
    finally:
        cls.__call__ = wrapped


def _plain(original: Any) -> Any:
    return original


def _range_only(original: Any) -> Any:
    """The floor: a range per call, named as long as a recorded one, no frame looked for."""
    from torch._C._profiler import _RecordFunctionFast

    from spyre_provenance.model import call_sites

    name = call_sites.name(__file__, 1, "eager_step")

    def __call__(graph: Any, inputs: Any) -> Any:
        with _RecordFunctionFast(name):
            return original(graph, inputs)

    return __call__


def _block(step: Callable[[], Any], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - start


def run(plan: Plan, progress: Callable[[str], None] = lambda _: None) -> Results:
    import torch

    import spyre_provenance

    blocks: dict[str, dict[str, list[tuple[float, float]]]] = {w: {p: [] for p in PROFILER} for w in WORKLOADS}
    floor: dict[str, list[tuple[float, float]]] = {w: [] for w in WORKLOADS}
    with (
        tempfile.TemporaryDirectory(prefix="spyre-bench-call-sites-") as out,
        spyre_provenance.tracking("reference", out_dir=str(Path(out) / "out")),
    ):
        steps, calls, library = _workloads(torch)
        try:
            for step in steps.values():
                step()  # compiles
                _block(step, plan.steps)  # warm
            for i in range(plan.rounds):
                for workload, step in steps.items():
                    for profiler in PROFILER:
                        blocks[workload][profiler].append(_pair(torch, step, plan.steps, profiler, first=i % 2 == 0))
                        progress(f"call sites: round {i + 1}/{plan.rounds} {workload}, profiler {profiler}")
                    floor[workload].append(_pair(torch, step, plan.steps, "on", first=i % 2 == 0, timed=_range_only))
        finally:
            library._destroy()
    return Results(blocks, calls, plan.steps, floor)


def _pair(
    torch: Any,
    step: Callable[[], Any],
    steps: int,
    profiler: str,
    *,
    first: bool,
    timed: Callable[[Any], Any] | None = None,
) -> tuple[float, float]:
    """One block with the session's wrapper (or the ``__call__`` ``timed`` makes from
    Inductor's) and one without, ``first`` saying which runs first; under the profiler when
    it is on."""
    from torch._inductor.output_code import CompiledFxGraph

    on = profiler == "on"
    active = (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if on else contextlib.nullcontext()
    )
    measured = contextlib.nullcontext() if timed is None else _installed(CompiledFxGraph, timed)
    with active:
        if first:
            with measured:
                wrapped = _block(step, steps)
        with _installed(CompiledFxGraph, _plain):
            plain = _block(step, steps)
        if not first:
            with measured:
                wrapped = _block(step, steps)
    return wrapped, plain


def _ratios(rows: list[tuple[float, float]]) -> list[float]:
    return [wrapped / plain for wrapped, plain in rows]


def render_section(results: Results, number: int = SECTION) -> str:
    lines = [
        f"#### {number}. Call sites recorded at launch: a call with the wrapper against the same call without",
        "",
        "| workload | profiler | time, recorded / plain (median, range) | per call, added | target | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for workload in WORKLOADS:
        calls = results.calls_per_step[workload] * results.steps
        for profiler in PROFILER:
            rows = results.blocks[workload][profiler]
            ratios = _ratios(rows)
            added = statistics.median((w - p) / calls for w, p in rows) * 1e6
            median = statistics.median(ratios)
            judged = workload == WORKLOADS[0] and profiler == "on"
            target, verdict = (f"<= {TARGET:g}x", "ok" if median <= TARGET else "OVER") if judged else ("reported", "")
            lines.append(
                f"| {workload}, {len(rows)} rounds of {calls} calls | {profiler} | {median:.3f}x"
                f" ({min(ratios):.3f}-{max(ratios):.3f}) | {added:+.2f} us | {target} | {verdict} |"
            )
    return "\n".join([*lines, "", *_floor_lines(results)]) + "\n"


def _floor_lines(results: Results) -> list[str]:
    """What the range alone costs, beside the rows: the part of the judged row no faster
    walk can remove."""
    if not results.floor:
        return []
    parts = []
    for workload, rows in results.floor.items():
        calls = results.calls_per_step[workload] * results.steps
        added = statistics.median((w - p) / calls for w, p in rows) * 1e6
        parts.append(f"{workload} {statistics.median(_ratios(rows)):.3f}x ({added:+.2f} us a call)")
    return [
        "Floor, the profiler on: a range alone (torch's `_RecordFunctionFast`, a name as long, no frame"
        f" looked for) against the same call unwrapped: {'; '.join(parts)}.",
        "",
    ]


def verdict(results: Results) -> str:
    """The judged row against its target, in the words the other sections' verdicts use."""
    ratio = statistics.median(_ratios(results.blocks[WORKLOADS[0]]["on"]))
    met = "**met**" if ratio <= TARGET else "**not met**"
    return f"{met} ({WORKLOADS[0]}, profiler on: {ratio:.3f}x, target <= {TARGET:g}x)"


def main(argv: list[str] | None = None) -> int:
    def render(lines: list[str], results: Results) -> str:
        lines.append(render_section(results).rstrip("\n"))
        return verdict(results)

    return section_main(
        argv,
        prog="python -m bench.call_sites",
        description=__doc__.splitlines()[0],
        run=run,
        render_section=render,
        quick=QUICK,
        full=FULL,
    )


if __name__ == "__main__":
    raise SystemExit(main())
