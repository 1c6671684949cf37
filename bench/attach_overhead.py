"""What switching tracking on from outside costs (issue 45), side by side in fresh processes:

* **start-up**: ``python -c pass`` with ``SPYRE_PROVENANCE_OUT`` set against the same without
  it: what every process of an environment with the variable set pays, torch never imported
  (the ``.pth`` line, ``plugin.startup``, the import watcher). Target: under 10 ms.
* **run**: ``spyre-provenance run -- python bench/attach_child.py`` (a Granite training step,
  every page written at the end) against ``python bench/attach_child.py``, whole process,
  each run with a fresh ``TORCHINDUCTOR_CACHE_DIR``. Target: at most 1.01x.

Runs go in pairs, the order alternating, so drift lands on both arms alike; a row reports
the median of the pairs' differences (start-up) or ratios (run), and their range.
``python -m bench.attach_overhead [--pairs N] [--startup-pairs N]`` runs this section alone.
"""

from __future__ import annotations

import argparse
import os
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
RUN_PAIRS = 2
SECTION = 10  # its number in make bench's table, after compare's


class AttachResults(msgspec.Struct):
    startup_ms: list[float]  # with the variable minus without, per pair
    run_ratios: list[float]  # run / plain, per pair
    run_walls: list[tuple[float, float]]  # (run, plain) seconds per pair


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_LOGS", "SPYRE_PROVENANCE_OUT")}
    env.update(extra)
    return env


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv}: exit {done.returncode}: {done.stderr[-2000:]}")
    return wall


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
                a, b = _timed(argv, armed), _timed(argv, plain)
            else:
                b, a = _timed(argv, plain), _timed(argv, armed)
            gaps.append((a - b) * 1000)
        assert not os.listdir(out), "a torch-free process left a folder"
    return gaps


def run_rows(pairs: int, progress: Callable[[str], None]) -> list[tuple[float, float]]:
    walls = []
    for pair in range(pairs):
        measured = {}
        for arm in ("run", "plain") if pair % 2 == 0 else ("plain", "run"):
            with tempfile.TemporaryDirectory(prefix="spyre-bench-run-") as scratch:
                env = _env({"TORCHINDUCTOR_CACHE_DIR": str(Path(scratch) / "inductor"), "PYTHONHASHSEED": "0"})
                child = [sys.executable, str(CHILD)]
                argv = (
                    child
                    if arm == "plain"
                    else [
                        sys.executable,
                        "-m",
                        "spyre_provenance",
                        "run",
                        "--out",
                        str(Path(scratch) / "out"),
                        "--",
                        *child,
                    ]
                )
                measured[arm] = _timed(argv, env)
            progress(f"attach: run pair {pair + 1}/{pairs} {arm} {measured[arm]:.2f}s")
        walls.append((measured["run"], measured["plain"]))
    return walls


def run(pairs: int, startup_pairs: int, progress: Callable[[str], None] = lambda _: None) -> AttachResults:
    gaps = startup(startup_pairs)
    progress(f"attach: start-up {statistics.median(gaps):.2f} ms")
    walls = run_rows(pairs, progress)
    return AttachResults(gaps, [r / p for r, p in walls], walls)


def render_section(results: AttachResults, number: int) -> str:
    gap, ratio = statistics.median(results.startup_ms), statistics.median(results.run_ratios)
    lines = [
        f"#### {number}. Switched on from outside: `SPYRE_PROVENANCE_OUT` and `run`, fresh processes in interleaved pairs",
        "",
        "| row | with | without | with / without (median, range) | target | verdict |",
        "|---|---|---|---|---|---|",
        f"| start-up of a torch-free process (`python -c pass`), {len(results.startup_ms)} pairs | variable set | unset"
        f" | +{gap:.2f} ms ({min(results.startup_ms):+.2f} to {max(results.startup_ms):+.2f}) | < {STARTUP_TARGET_MS:g} ms"
        f" | {'ok' if gap < STARTUP_TARGET_MS else 'OVER'} |",
        f"| Granite training step, whole process, {len(results.run_ratios)} pairs"
        f" | `run --` {statistics.median(r for r, _ in results.run_walls):.1f} s"
        f" | plain {statistics.median(p for _, p in results.run_walls):.1f} s"
        f" | {ratio:.3f}x ({min(results.run_ratios):.3f}-{max(results.run_ratios):.3f})"
        f" | <= {RUN_TARGET:g}x | {'ok' if ratio <= RUN_TARGET else 'OVER'} |",
        "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.attach_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=RUN_PAIRS)
    parser.add_argument("--startup-pairs", type=int, default=STARTUP_PAIRS)
    args = parser.parse_args(argv)
    results = run(args.pairs, args.startup_pairs, lambda m: print(m, file=sys.stderr, flush=True))
    sys.stdout.write(render_section(results, 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
