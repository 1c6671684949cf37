"""Whole-process overhead: what a user's tracked compile costs, start of ``python`` to exit.

``compile_overhead`` times compiles inside one warm process, so it leaves out what only a
fresh process pays: importing the hook, setting up its validators, the first call of every
code path. Here each run is its own ``python`` process doing one thing, from interpreter
start to exit (imports, model, ``torch.compile``, the first call, a backward for the
training rows, interpreter teardown):

* arm A: ``with spyre_provenance.tracking("inductor"):`` around the compile;
* arm B: upstream tracking alone, ``torch._inductor.config.trace.provenance_tracking_level = 1``.

Every run gets a fresh, empty ``TORCHINDUCTOR_CACHE_DIR`` and runs with Inductor's FX-graph
cache and AOTAutograd's cache forced off (``TORCHINDUCTOR_FX_GRAPH_CACHE=0``,
``TORCHINDUCTOR_AUTOGRAD_CACHE=0``) in both arms, as the hook turns them off while it
tracks; no ``TORCH_TRACE``, no ``TORCH_LOGS``. Runs go in pairs, the order alternating
(AB, BA, AB, ...), so drift on the machine lands on both arms alike; a pair's ratio is
A / B, and the row reports the median of the pairs' ratios and their range.

Wall time is the parent's clock around the child; CPU time is what ``getrusage`` says the
child and everything it reaped (the compile workers, the C++ compilers) used, so it is the
work without the time lost waiting for a core. The child also reports its own phases
(imports, entering and leaving tracking, compile and first call), which say where a
difference goes.

``python -m bench.whole_process [--pairs N] [--quick]`` runs this section
alone; ``whole_process_child`` is one run (what the parent starts).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

import msgspec

from bench.whole_process_child import ROWS

ARMS = ("A", "B")
ARM_NAMES = {"A": 'spyre_provenance.tracking("inductor")', "B": "upstream `provenance_tracking_level = 1` alone"}
#: Pairs per row in ``make bench`` (each run is a whole compile with a cold kernel cache,
#: 20-100 s here); ``--pairs`` or ``SPYRE_BENCH_PAIRS`` for more.
PAIRS = 2
PAIRS_ENV = "SPYRE_BENCH_PAIRS"
TARGET = 1.03
SECTION = 6  # its number in make bench's table


FULL = ("4-step residual", "4-step residual, training", "granite, training")
QUICK = ("tiny, training",)  # the smoke run: both graphs of a training compile, in seconds


class ProcessRun(msgspec.Struct):
    wall: float  # seconds, interpreter start to exit, the parent's clock
    cpu: float  # seconds of CPU, the child and what it reaped
    phases: dict[str, float]  # the child's own clock, per phase
    hook_self: float  # arm A: importing and enabling the hook, its two seams, disabling it


class RowResult(msgspec.Struct):
    label: str
    graphs: int
    call_sites: int
    post_grad_nodes: int  # every node of the post-grad graphs but their inputs
    runs: dict[str, list[ProcessRun]]  # arm -> one per pair, in pair order

    def ratios(self, measure: str) -> list[float]:
        """A / B of every pair, ``measure`` being ``wall`` or ``cpu``."""
        return [getattr(a, measure) / getattr(b, measure) for a, b in zip(self.runs["A"], self.runs["B"], strict=True)]

    def median(self, arm: str, measure: str) -> float:
        return statistics.median(getattr(run, measure) for run in self.runs[arm])

    def phase_gap(self, phase: str) -> float:
        """Median seconds A spent in ``phase`` minus B's (0 for a phase one arm lacks)."""
        return statistics.median(
            a.phases.get(phase, 0.0) - b.phases.get(phase, 0.0)
            for a, b in zip(self.runs["A"], self.runs["B"], strict=True)
        )


class WholeProcessResults(msgspec.Struct):
    rows: list[RowResult]
    pairs: int
    bytecode: bool  # this package's modules had their bytecode cached, as torch's has


def compile_bytecode() -> bool:
    """Write this package's bytecode (``__pycache__``, git-ignored), as ``pip install`` of a
    wheel does and as Python does on first import unless ``PYTHONDONTWRITEBYTECODE`` is set.

    torch's bytecode was written when it was installed; an editable install under
    ``PYTHONDONTWRITEBYTECODE=1`` (this machine's setting) has none for this package, so
    every arm A process would compile the hook's ~6k lines of source again (100-170 ms
    here), a cost of the checkout, not of tracking. Returns whether the hook's bytecode is
    there (False: a read-only install without it; the section says so).
    """
    import compileall
    import importlib.util
    from pathlib import Path

    import spyre_provenance

    package = Path(spyre_provenance.__file__).parent
    compileall.compile_dir(package, quiet=2)
    hook_source = package / "capture" / "hook.py"
    return Path(importlib.util.cache_from_source(str(hook_source))).is_file()


def pairs_from_env(default: int) -> int:
    text = os.environ.get(PAIRS_ENV, "")
    return int(text) if text.strip() else default


# --- the parent: start the children, pair them ----------------------------------------------


def _child_env(cache_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG")}
    env.update(
        TORCHINDUCTOR_CACHE_DIR=cache_dir,
        TORCHINDUCTOR_FX_GRAPH_CACHE="0",
        TORCHINDUCTOR_AUTOGRAD_CACHE="0",
        PYTHONHASHSEED="0",
    )
    return env


def run_once(row_name: str, arm: str) -> tuple[ProcessRun, dict]:
    """One child process; (its times, what it reported)."""
    with tempfile.TemporaryDirectory(prefix="spyre-bench-cache-") as cache_dir:
        command = [sys.executable, "-m", "bench.whole_process_child", arm, row_name]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=_child_env(cache_dir))
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"whole-process run {row_name} {arm} failed: {done.stderr.strip()[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    phases = dict(report["phases"])
    phases["interpreter start and exit"] = wall - sum(phases.values())  # what the child's clock misses
    hook_self = phases["enter tracking"] + report["in_seams"] + phases["leave tracking"] if arm == "A" else 0.0
    return ProcessRun(wall, cpu, phases, hook_self), report


def run(
    row_names: Sequence[str],
    pairs: int,
    progress: Callable[[str], None] = lambda _: None,
    *,
    bytecode: bool = True,
) -> WholeProcessResults:
    """``bytecode=False`` (the quick run) leaves the package's ``__pycache__`` alone."""
    bytecode = compile_bytecode() if bytecode else False
    results = []
    for row_name in row_names:
        runs: dict[str, list[ProcessRun]] = {arm: [] for arm in ARMS}
        shape = None
        for pair in range(pairs):
            order = ARMS if pair % 2 == 0 else ARMS[::-1]
            for arm in order:
                measured, report = run_once(row_name, arm)
                runs[arm].append(measured)
                if arm == "A":
                    shape = report["shape"]
                progress(f"whole process: {row_name} pair {pair + 1}/{pairs} {arm} {measured.wall:.2f}s")
        assert shape is not None
        graphs, call_sites, post_grad_nodes = shape
        results.append(RowResult(ROWS[row_name].label, graphs, call_sites, post_grad_nodes, runs))
    return WholeProcessResults(results, pairs, bytecode)


# --- the table ----------------------------------------------------------------------------


def render_section(lines: list[str], results: WholeProcessResults, number: int) -> str:
    """Append the section's markdown to ``lines``; returns its verdict line."""
    add = lines.append
    add(f"#### {number}. Whole-process overhead: a fresh `python` per run, A/B in interleaved pairs")
    add("")
    bytecode = (
        "cached for both (compiled first, as `pip install` does)"
        if results.bytecode
        else ("not cached for this package: arm A compiles the hook's source in every run")
    )
    add(
        f"Each run is one process from interpreter start to exit: imports, the model, `torch.compile` and its "
        f"first call (and a backward in training), teardown. A = `{ARM_NAMES['A']}`, B = {ARM_NAMES['B']}. "
        "Every run: a fresh `TORCHINDUCTOR_CACHE_DIR`, FX-graph and AOTAutograd caches forced off, no TORCH_TRACE; "
        f"bytecode {bytecode}. A/B: median of the pairs' own ratios, lowest-highest after it. CPU: the child "
        "and the compile workers and C++ compilers it reaped. Hook's own time: in arm A, importing and enabling "
        "the hook, its two seams, disabling it (median, and as a share of B's wall time). "
        "A - B by phase: median difference, by the child's own clock."
    )
    add("")
    add(
        "| model | graphs | call sites | post-grad nodes | pairs | A wall (s) | B wall (s) | A/B wall | A/B CPU "
        "| hook's own time | A - B by phase |"
    )
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    summary = []
    for row in results.rows:
        wall, cpu = row.ratios("wall"), row.ratios("cpu")
        own = statistics.median(run.hook_self for run in row.runs["A"])
        share = own / row.median("B", "wall")
        gaps = ", ".join(f"{name} {row.phase_gap(name) * 1000:+.0f} ms" for name in row.runs["A"][0].phases)
        add(
            f"| {row.label} | {row.graphs} | {row.call_sites} | {row.post_grad_nodes} | {len(wall)} | "
            f"{row.median('A', 'wall'):.2f} | {row.median('B', 'wall'):.2f} | "
            f"{statistics.median(wall):.3f} ({min(wall):.2f}-{max(wall):.2f}) | "
            f"{statistics.median(cpu):.3f} ({min(cpu):.2f}-{max(cpu):.2f}) | "
            f"{own * 1000:.0f} ms ({100 * share:.1f}%) | {gaps} |"
        )
        summary.append((row.label, statistics.median(wall), statistics.median(cpu), share, min(wall), min(cpu)))
    add("")
    figures = "; ".join(
        f"{label} wall {w:.3f}, CPU {c:.3f}, the hook's own time {100 * share:.1f}%"
        for label, w, c, share, *_ in summary
    )
    detail = f"whole process A/B <= {TARGET} wall and CPU, median of {results.pairs} pair(s): {figures}"
    if all(w <= TARGET and c <= TARGET for _, w, c, *_ in summary):
        return f"**met** ({detail})"
    # As in section 1: a miss the pairs' own spread covers, while the hook's own time is
    # well inside the target, is noise these pairs cannot resolve; say so, with the numbers.
    if all(1 + share <= TARGET and low_w <= TARGET and low_c <= TARGET for *_, share, low_w, low_c in summary):
        return (
            f"**met on the hook's own time; wall and CPU inconclusive** ({detail}; the pairs' ratios vary "
            f"more than the target's {100 * (TARGET - 1):.0f}%: more pairs with --pairs or ${PAIRS_ENV})"
        )
    return f"**not met** ({detail})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.whole_process", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=None, help=f"pairs per row (default {PAIRS}, or ${PAIRS_ENV})")
    parser.add_argument("--quick", action="store_true", help="the tiny rows, one pair")
    parser.add_argument("--rows", nargs="+", choices=sorted(ROWS), help=f"rows to run (default: {', '.join(FULL)})")
    parser.add_argument("--json", help="also write the raw measurements here")
    args = parser.parse_args(argv)
    pairs = args.pairs or pairs_from_env(1 if args.quick else PAIRS)
    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[bench {time.perf_counter() - start:6.0f}s] {message}", file=sys.stderr, flush=True)

    load = os.getloadavg()[0]
    rows = args.rows or (QUICK if args.quick else FULL)
    results = run(rows, pairs, progress, bytecode=not args.quick)
    lines: list[str] = []
    verdict = render_section(lines, results, SECTION)
    if args.json:
        with open(args.json, "wb") as fh:
            fh.write(msgspec.json.encode(results))
    print("\n".join(lines))
    print(f"- {verdict}")
    print(f"\n1-minute load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
