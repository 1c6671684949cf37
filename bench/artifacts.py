"""Validation and build throughput, peak memory, and scaling, on synthetic mappings.

For each size (node references, see ``synthetic``) the mapping is built by the project's
builder into a temporary folder, then validated; every step runs in a fresh process
(``probe``), ``OUTER`` times, the steps interleaved, and the median time is reported (the
median of ``inner`` repetitions inside each process for the small sizes, where one run is
too short to time). Peak memory is the largest of the ``OUTER`` measurements.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

FULL_SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 4_000)
OUTER = 3
QUICK_OUTER = 1
#: The JSON Schema path is timed up to this many references; at 1M it takes about a minute.
FULL_SCHEMA_MAX = 100_000
STEPS = ("build", "loads", "loads_nogc", "fast", "full")


class Measured(msgspec.Struct):
    seconds: list[float]
    peaks: list[int | None]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def peak(self) -> int | None:
        known = [p for p in self.peaks if p is not None]
        return max(known) if known else None


class SizeResult(msgspec.Struct):
    refs: int
    kernels: int
    size: int  # bytes of the mapping on disk
    steps: dict[str, Measured]  # step -> measurements (absent: not run at this size)
    build_only: list[float]  # build_node_mappings alone, without to_json_bytes
    memory_method: str


class ArtifactResults(msgspec.Struct):
    sizes: list[SizeResult]
    outer: int
    full_schema_max: int


def _inner(step: str, refs: int) -> int:
    if step == "full":
        return max(1, 10_000 // refs)
    return max(1, min(20, 100_000 // refs))


def _probe(spec: dict) -> dict:
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(
        [sys.executable, "-m", "bench.probe", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"probe {spec['op']} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def run(
    sizes: Sequence[int],
    outer: int,
    full_schema_max: int,
    progress: Callable[[str], None] = lambda _: None,
    *,
    repeat: bool = True,
) -> ArtifactResults:
    """``repeat=False``: one timing per process at every size (the quick run)."""
    from bench import synthetic

    results = []
    with tempfile.TemporaryDirectory(prefix="spyre-bench-") as tmp:
        for refs in sizes:
            path = Path(tmp) / f"inductor_provenance_tracking_node_mappings_{refs}.json"
            steps = [s for s in STEPS if s != "full" or refs <= full_schema_max]
            measured = {s: Measured([], []) for s in steps}
            build_only: list[float] = []
            size, method = 0, "unavailable"
            for round_ in range(outer):
                for step in steps:
                    out = _probe(
                        {"op": step, "refs": refs, "path": str(path), "inner": _inner(step, refs) if repeat else 1}
                    )
                    measured[step].seconds.append(out["seconds"])
                    measured[step].peaks.append(out["peak"])
                    size, method = out["size"], out["memory_method"]
                    if step == "build":
                        build_only.append(out["build_seconds"])
                    progress(f"artifacts: {refs:,} refs round {round_ + 1}/{outer} {step} {out['seconds']:.3f}s")
            path.unlink(missing_ok=True)
            kernels = synthetic.sizes(refs)[0]
            results.append(SizeResult(refs, kernels, size, measured, build_only, method))
    return ArtifactResults(sizes=results, outer=outer, full_schema_max=full_schema_max)
