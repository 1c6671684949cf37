"""What tracking costs a program, warm and cold (issue 54), measured the way py-spy, nsys,
scalene and viztracer report a tracer: what collection costs the program apart from what
writing the report costs after it.

Two programs (``bench/warm_child.py``): the zoo's Granite, one compiled inference call, and a
tiny GPT-2's compiled forward plus an 8-token ``generate``. Each in three arms, fresh
processes: ``plain``; ``env``, ``SPYRE_PROVENANCE_OUT=DIR`` alone; ``run``, ``spyre-provenance
run --out DIR --``. Each with a **cold** Inductor cache (a fresh, empty
``TORCHINDUCTOR_CACHE_DIR`` per run) and a **warm** one (one dir per arm, warmed by one run of
that arm before the rounds: tracked entries are keyed apart from untracked ones, so each arm
starts from its own).

Rows:

* **the program's own process tree**: wall from the program's process creation to its exit
  and CPU of it and what it reaped, as the program itself reports them (``SPYRE_BENCH_TIMES``),
  ``env`` and ``run`` against ``plain``. Target: at most 1.02x, wall and CPU.
* **run's end**: ``run``'s whole wall minus its program's (the launcher's start, the
  summary, the tlparse pages and the viewer page), in seconds and as a share of the program.

Runs go in rounds, one run of each arm per round, the order reversed every other round, so
drift on the shared machine lands on every arm alike; a row is the median of the rounds'
ratios, with their range. ``python -m bench.warm_start [--rounds N] [--caches warm]`` runs this
section alone; ``make bench`` runs it after the attach section.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

CHILD = Path(__file__).resolve().parent / "warm_child.py"
PROGRAMS = ("granite", "generate")
CACHES = ("warm", "cold")
ARMS = ("plain", "env", "run")
ROUNDS = 6
TARGET = 1.02
SECTION = 11


class Measure(msgspec.Struct):
    wall: float  # the program's own process tree, creation to exit (it reports it)
    cpu: float  # CPU of the program and what it reaped (it reports it)
    outer: float  # wall around the whole command, the parent's clock (run: launcher and end too)


class Results(msgspec.Struct):
    #: program -> cache -> arm -> one measure per round, in round order
    runs: dict[str, dict[str, dict[str, list[Measure]]]]

    def ratios(self, program: str, cache: str, arm: str, measure: str) -> list[float]:
        rows = self.runs[program][cache]
        return [getattr(a, measure) / getattr(p, measure) for a, p in zip(rows[arm], rows["plain"], strict=True)]

    def ends(self, program: str, cache: str) -> list[float]:
        return [m.outer - m.wall for m in self.runs[program][cache]["run"]]


def _env(cache: Path, times: Path, extra: dict[str, str]) -> dict[str, str]:
    """The environment of section 10's runs (no trace, no tracking unless an arm adds it)."""
    from bench.attach_overhead import _env as attach_env

    return attach_env(
        {"TORCHINDUCTOR_CACHE_DIR": str(cache), "SPYRE_BENCH_TIMES": str(times), "PYTHONHASHSEED": "0", **extra}
    )


def _one(program: str, arm: str, cache: Path, scratch: Path) -> Measure:
    times, out = scratch / "times.json", scratch / "out"
    child = [sys.executable, str(CHILD), program]
    argv, extra = child, {}
    if arm == "env":
        extra = {"SPYRE_PROVENANCE_OUT": str(out)}
    elif arm == "run":
        argv = [sys.executable, "-m", "spyre_provenance", "run", "--out", str(out), "--", *child]
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=_env(cache, times, extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    outer = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv}: exit {done.returncode}: {done.stderr[-2000:]}")
    reported = json.loads(times.read_text())
    return Measure(reported["wall"], reported["cpu"], outer)


def run(rounds: int, progress: Callable[[str], None] = lambda _: None, caches: tuple[str, ...] = CACHES) -> Results:
    from bench.whole_process import compile_bytecode

    compile_bytecode()  # as pip install does: no tracked process compiles the hook's source
    runs: dict[str, dict[str, dict[str, list[Measure]]]] = {}
    with tempfile.TemporaryDirectory(prefix="spyre-bench-warm-") as root:
        for program in PROGRAMS:
            runs[program] = {cache: {arm: [] for arm in ARMS} for cache in caches}
            warm = {arm: Path(root) / f"{program}-{arm}-cache" for arm in ARMS}
            for arm in ARMS:  # each arm's own warm cache, written by that arm
                with tempfile.TemporaryDirectory(dir=root) as scratch:
                    _one(program, arm, warm[arm], Path(scratch))
            for i in range(rounds):
                for cache in caches:
                    for arm in ARMS if i % 2 == 0 else ARMS[::-1]:
                        with tempfile.TemporaryDirectory(dir=root) as scratch:
                            where = warm[arm] if cache == "warm" else Path(scratch) / "cache"
                            measure = _one(program, arm, where, Path(scratch))
                        runs[program][cache][arm].append(measure)
                        progress(f"warm start: {program} {cache} round {i + 1}/{rounds} {arm} {measure.wall:.2f}s")
    return Results(runs)


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}x ({min(values):.3f}-{max(values):.3f})"


def render_section(results: Results, number: int = SECTION) -> str:
    lines = [
        f"#### {number}. What tracking costs a program, warm and cold: its own process tree, and `run`'s end apart",
        "",
        "| program, cache | arm | wall, tracked / plain (median, range) | CPU, tracked / plain | target | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for program in PROGRAMS:
        for cache in results.runs[program]:
            rows = results.runs[program][cache]
            for arm in ("env", "run"):
                wall, cpu = (results.ratios(program, cache, arm, m) for m in ("wall", "cpu"))
                ok = statistics.median(wall) <= TARGET and statistics.median(cpu) <= TARGET
                lines.append(
                    f"| {program}, {cache}, {len(wall)} rounds | {arm} | {_cell(wall)} | {_cell(cpu)}"
                    f" | <= {TARGET:g}x | {'ok' if ok else 'OVER'} |"
                )
            plain = statistics.median(m.wall for m in rows["plain"])
            end = statistics.median(results.ends(program, cache))
            lines.append(
                f"| {program}, {cache} | `run`'s end | +{end:.2f} s after the program"
                f" ({end / plain:.0%} of its {plain:.1f} s) | | reported | |"
            )
    return "\n".join([*lines, ""]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.warm_start", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds per program and cache (default {ROUNDS})")
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    parser.add_argument(
        "--caches", type=lambda text: tuple(text.split(",")), default=CACHES, help="warm, cold or both (default)"
    )
    args = parser.parse_args(argv)
    if not args.caches or not set(args.caches) <= set(CACHES):
        parser.error(f"--caches: of {', '.join(CACHES)}")
    start = time.perf_counter()
    progress = lambda m: print(f"[bench {time.perf_counter() - start:6.0f}s] {m}", file=sys.stderr)  # noqa: E731
    results = run(args.rounds, progress, args.caches)
    if args.json:
        args.json.write_bytes(msgspec.json.encode(results))
    sys.stdout.write(render_section(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
