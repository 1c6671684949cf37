"""What switching tracking on from outside costs (issue 45), side by side in fresh processes:

* **start-up**: ``python -c pass`` with ``SPYRE_PROVENANCE_OUT`` set against the same without
  it: what every process of an environment with the variable set pays, torch never imported
  (the ``.pth`` line, ``spyre_provenance_startup``, the import watcher). Target: under 10 ms.
* **run**: ``spyre-provenance run -- python bench/attach_child.py`` (a Granite training step,
  every page written at the end) against ``python bench/attach_child.py``, whole process.
  Target: at most 1.01x.

The run rows are fair to both sides: every run gets a fresh, empty
``TORCHINDUCTOR_CACHE_DIR`` (a cold start for every arm, each compiling everything and
writing its cache entries; ``bench.warm_start`` measures warm starts), no ``TORCH_TRACE`` or
``TORCH_LOGS``, and this package's bytecode compiled first, as ``pip install`` does (else
every tracked process would compile the hook's source again, a cost of the checkout).

More arms say where the difference goes, each the same program: ``trace``,
``TORCH_TRACE=DIR INDUCTOR_PROVENANCE=1``, the flow torch-spyre's debugging guide gives its
users (torch's structured log and upstream's provenance, pages by tlparse by hand), so
``run`` - ``trace`` is what this project costs beyond it; ``upstream``,
``INDUCTOR_PROVENANCE=1`` alone (upstream's own provenance tracking, which tracking turns
on: stack traces recorded per node, the graph-pass observers), and ``env``,
``SPYRE_PROVENANCE_OUT=DIR`` alone (tracking in the process, without ``run``'s launcher and
its summary and pages at the end). ``run`` - ``env`` is the launcher and the end;
``env`` - ``upstream`` is this project's own work in the process (the hook, its files,
torch's structured log, which the process had not); the log's own share is what torch
itself counts in its ``compilation_metrics`` (``structured_logging_overhead_us``).

Runs go in rounds, one run per arm, the order reversed every other round, so drift on the
shared machine lands on every arm alike; a row reports the median of the rounds' ratios
(or differences) and their range. Wall time is the parent's clock around the child; CPU
time is what ``getrusage`` says the child and everything it reaped used (the compile
workers, the C++ compilers, tlparse): the work without the time lost waiting for a core.
``python -m bench.attach_overhead [--pairs N] [--startup-pairs N]`` runs this section alone.
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
from collections.abc import Callable
from pathlib import Path

import msgspec

CHILD = Path(__file__).resolve().parent / "attach_child.py"
STARTUP_TARGET_MS = 10.0
RUN_TARGET = 1.01
STARTUP_PAIRS = 40
RUN_PAIRS = 3
SECTION = 10  # its number in make bench's table, after compare's
#: The run rows' arms, in a round's order (reversed every other round): each difference the
#: section reports but one (upstream - plain) is of arms run next to each other, so the
#: machine's load, which drifts over minutes here, lands on both sides of it alike.
ARMS = ("plain", "trace", "run", "env", "upstream")
ARM_NAMES = {
    "plain": "`python bench/attach_child.py`",
    "trace": "`TORCH_TRACE=DIR INDUCTOR_PROVENANCE=1`",
    "upstream": "`INDUCTOR_PROVENANCE=1` alone",
    "env": "`SPYRE_PROVENANCE_OUT=DIR` alone",
    "run": "`spyre-provenance run --out DIR --`",
}


class RunMeasure(msgspec.Struct):
    wall: float  # seconds, start to exit, the parent's clock
    cpu: float  # seconds of CPU, the child and what it reaped
    logging: float = 0.0  # seconds torch counted for its structured log (env and run arms)


class AttachResults(msgspec.Struct):
    startup_ms: list[float]  # with the variable minus without, per pair
    runs: dict[str, list[RunMeasure]]  # arm -> one per round, in round order
    bytecode: bool = True  # this package's bytecode was compiled first

    def ratios(self, arm: str, measure: str = "wall") -> list[float]:
        """``arm`` / plain of every round, ``measure`` being ``wall`` or ``cpu``."""
        return [
            getattr(a, measure) / getattr(p, measure) for a, p in zip(self.runs[arm], self.runs["plain"], strict=True)
        ]

    def gap(self, arm: str, base: str, measure: str = "wall") -> float:
        """Median seconds ``arm`` took more than ``base``, round by round."""
        pairs = zip(self.runs[arm], self.runs[base], strict=True)
        return statistics.median(getattr(a, measure) - getattr(b, measure) for a, b in pairs)


def _env(extra: dict[str, str]) -> dict[str, str]:
    dropped = ("TORCH_TRACE", "TORCH_LOGS", "TORCH_COMPILE_DEBUG", "SPYRE_PROVENANCE_OUT", "INDUCTOR_PROVENANCE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(extra)
    return env


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child to its exit; raises on a failed child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv}: exit {done.returncode}: {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def startup(pairs: int) -> list[float]:
    """Milliseconds the variable adds to a torch-free process, one value per pair."""
    gaps = []
    with tempfile.TemporaryDirectory(prefix="spyre-bench-startup-") as out:
        armed, plain = _env({"SPYRE_PROVENANCE_OUT": out}), _env({})
        argv = [sys.executable, "-c", "pass"]
        for _ in range(3):  # the file cache warm for both
            _timed(argv, armed), _timed(argv, plain)
        for pair in range(pairs):
            if pair % 2 == 0:
                a, b = _timed(argv, armed)[0], _timed(argv, plain)[0]
            else:
                b, a = _timed(argv, plain)[0], _timed(argv, armed)[0]
            gaps.append((a - b) * 1000)
        assert not os.listdir(out), "a torch-free process left a folder"
    return gaps


def _arm(arm: str, scratch: Path) -> tuple[list[str], dict[str, str]]:
    env = _env({"TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor"), "PYTHONHASHSEED": "0"})
    child = [sys.executable, str(CHILD)]
    if arm == "upstream":
        env["INDUCTOR_PROVENANCE"] = "1"
    elif arm == "trace":  # where logging_overhead finds it: out/<folder>/trace/*.log
        env.update(TORCH_TRACE=str(scratch / "out" / "torch" / "trace"), INDUCTOR_PROVENANCE="1")
    elif arm == "env":
        env["SPYRE_PROVENANCE_OUT"] = str(scratch / "out")
    elif arm == "run":
        return [sys.executable, "-m", "spyre_provenance", "run", "--out", str(scratch / "out"), "--", *child], env
    return child, env


def logging_overhead(out: Path) -> float:
    """Seconds torch counted for its structured log in the processes of ``out`` (each
    compile's ``compilation_metrics`` and ``bwd_compilation_metrics`` record), 0 when none."""
    total = 0
    for log in out.glob("*/trace/*.log"):
        with open(log, "rb") as fh:
            for raw in fh:
                if raw.startswith(b"\t") or b"compilation_metrics" not in raw[:300]:
                    continue
                envelope = json.loads(raw[raw.index(b"{") :])
                metrics = next(iter(envelope.values()), None)
                if isinstance(metrics, dict):
                    total += metrics.get("structured_logging_overhead_us") or 0
    return total / 1e6


def run_rows(pairs: int, progress: Callable[[str], None], arms: tuple[str, ...] = ARMS) -> dict[str, list[RunMeasure]]:
    runs: dict[str, list[RunMeasure]] = {arm: [] for arm in arms}
    for pair in range(pairs):
        for arm in arms if pair % 2 == 0 else arms[::-1]:
            with tempfile.TemporaryDirectory(prefix="spyre-bench-run-") as scratch:
                wall, cpu = _timed(*_arm(arm, Path(scratch)))
                runs[arm].append(RunMeasure(wall, cpu, logging_overhead(Path(scratch) / "out")))
            progress(f"attach: run round {pair + 1}/{pairs} {arm} {wall:.2f}s wall, {cpu:.2f}s CPU")
    return runs


def run(
    pairs: int, startup_pairs: int, progress: Callable[[str], None] = lambda _: None, arms: tuple[str, ...] = ARMS
) -> AttachResults:
    from bench.whole_process import compile_bytecode

    bytecode = compile_bytecode()
    gaps = startup(startup_pairs)
    progress(f"attach: start-up {statistics.median(gaps):.2f} ms")
    return AttachResults(gaps, run_rows(pairs, progress, arms), bytecode)


def render_section(results: AttachResults, number: int) -> str:
    gap = statistics.median(results.startup_ms)
    wall, cpu = results.ratios("run"), results.ratios("run", "cpu")
    ratio = statistics.median(wall)
    runs = results.runs
    lines = [
        f"#### {number}. Switched on from outside: `SPYRE_PROVENANCE_OUT` and `run`, fresh processes in interleaved rounds",
        "",
        "| row | with | without | with / without (median, range) | target | verdict |",
        "|---|---|---|---|---|---|",
        f"| start-up of a torch-free process (`python -c pass`), {len(results.startup_ms)} pairs | variable set | unset"
        f" | +{gap:.2f} ms ({min(results.startup_ms):+.2f} to {max(results.startup_ms):+.2f}) | < {STARTUP_TARGET_MS:g} ms"
        f" | {'ok' if gap < STARTUP_TARGET_MS else 'OVER'} |",
        f"| Granite training step, whole process, {len(wall)} rounds, wall"
        f" | `run --` {statistics.median(r.wall for r in runs['run']):.1f} s"
        f" | plain {statistics.median(r.wall for r in runs['plain']):.1f} s"
        f" | {ratio:.3f}x ({min(wall):.3f}-{max(wall):.3f}) | <= {RUN_TARGET:g}x | {'ok' if ratio <= RUN_TARGET else 'OVER'} |",
        f"| the same, CPU (the child and what it reaped)"
        f" | {statistics.median(r.cpu for r in runs['run']):.1f} s | {statistics.median(r.cpu for r in runs['plain']):.1f} s"
        f" | {statistics.median(cpu):.3f}x ({min(cpu):.3f}-{max(cpu):.3f}) | <= {RUN_TARGET:g}x"
        f" | {'ok' if statistics.median(cpu) <= RUN_TARGET else 'OVER'} |",
        "",
    ]
    breakdown = _breakdown(results)
    if breakdown:
        lines += [*breakdown, ""]
    if not results.bytecode:
        lines += ["This package's bytecode was not cached: each tracked process compiled the hook's source.", ""]
    return "\n".join(lines) + "\n"


def _breakdown(results: AttachResults) -> list[str]:
    """Where `run`'s extra time goes: the arms' differences, median per round, wall and CPU;
    no lines where the arms run make none of them."""

    def both(arm: str, base: str) -> str:
        return f"{results.gap(arm, base):+.2f} s wall, {results.gap(arm, base, 'cpu'):+.2f} s CPU"

    runs = results.runs
    lines: list[str] = []
    if "trace" in runs:
        logged = statistics.median(r.logging for r in runs["trace"])
        lines += [
            f"- torch-spyre's documented flow, torch's structured log and upstream's provenance (trace - plain):"
            f" {both('trace', 'plain')}; torch counts {logged:.2f} s of it for its structured log",
            f"- `run` beyond that flow, its pages written (run - trace): {both('run', 'trace')}",
        ]
    if "upstream" in runs and "env" in runs:
        logged = statistics.median(r.logging for r in runs["env"])
        lines += [
            f"- upstream's own provenance tracking (upstream - plain): {both('upstream', 'plain')}",
            f"- tracking in the process beyond it (env - upstream): {both('env', 'upstream')};"
            f" torch counts {logged:.2f} s of it for its structured log",
            f"- `run`'s launcher and its summary and pages at the end (run - env): {both('run', 'env')}",
        ]
    if not lines:  # plain and run alone, or arms that make no difference the section names
        return []
    names = ", ".join(f"{arm} = {name}" for arm, name in ARM_NAMES.items() if arm in runs)
    return [f"Where it goes (median differences per round; {names}):", "", *lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.attach_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=RUN_PAIRS, help=f"rounds of the run rows (default {RUN_PAIRS})")
    parser.add_argument("--startup-pairs", type=int, default=STARTUP_PAIRS)
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    parser.add_argument(
        "--arms",
        type=lambda text: tuple(text.split(",")),
        default=ARMS,
        help="the run rows' arms, comma-separated, plain and run among them (default: all five; plain,run alone"
        " gives twice the rounds of the target's ratio in the same time, without the breakdown)",
    )
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    if not {"plain", "run"} <= set(args.arms) or not set(args.arms) <= set(ARMS):
        parser.error(f"--arms: plain and run, and only of {', '.join(ARMS)}")
    arms = tuple(arm for arm in ARMS if arm in args.arms)  # the rounds' order is ARMS'
    results = run(args.pairs, args.startup_pairs, lambda m: print(m, file=sys.stderr, flush=True), arms)
    if args.json:
        args.json.write_bytes(msgspec.json.encode(results))
    sys.stdout.write(render_section(results, SECTION))
    print(f"1-minute load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
