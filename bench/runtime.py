"""Run time (issue 26): ``annotate`` against plain ``json.load`` + ``json.dump``, and
``lookup``'s whole-process time, each measured in fresh child processes.

* annotate: a synthetic torch.profiler trace of ``events`` events (one in ten a kernel event
  ``graph_0_sdsc_fused_k<j>_<j>`` of a synthetic ``--out``), written once; arm A annotates
  it (``runtime.annotate``, streaming), arm B is what a script without streaming does:
  ``json.load`` of the file then ``json.dump`` of the document. Both in their own
  ``python``, in alternating pairs (AB, BA, ...); wall time measured by the parent, peak
  memory as the child's own ``getrusage(RUSAGE_SELF).ru_maxrss`` (interpreter and imports
  included in both). Targets: A/B time <= 1.5, A/B peak memory <= 1.
* annotate --summary (issue 38): the per-line summary of the same trace
  (``runtime.time_summary``, one streaming pass), arm S, against the same arm B, with the
  same targets: S/B time <= 1.5, S/B peak memory <= 1.
* lookup: ``python -m spyre_provenance lookup NAME --in OUT`` on an ``--out`` whose
  TORCH_TRACE log records ``kernels`` kernel call sites (one graph), from interpreter start
  to exit; beside it ``python -m spyre_provenance --version``, the command line's floor.

The synthetic ``--out`` holds what a compile writes where lookup reads it: ``trace/<model>.log``
with the node mapping and the stack traces as glog-prefixed records with their MD5.

``python -m bench.runtime [--quick]`` runs this section alone.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from bench.section import section_main
from spyre_provenance.model.layout import Layout

SECTION = 7
TIME_TARGET = 1.5
MEMORY_TARGET = 1.0
FULL = {"events": 1_000_000, "kernels": 10_000, "pairs": 2, "lookups": 3}
QUICK = {"events": 20_000, "kernels": 500, "pairs": 1, "lookups": 1}
MODEL = "bench"

_ANNOTATE = """
import resource, sys, time
from spyre_provenance.runtime import annotate, index
start = time.perf_counter()
summary = annotate.annotate(sys.argv[1], index.build([sys.argv[2]]), sys.argv[3])
assert summary.annotated == summary.kernel_events > 0, summary
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
_SUMMARY = """
import resource, sys, time
from spyre_provenance.runtime import index, time_summary
start = time.perf_counter()
summary = time_summary.summarize(sys.argv[1], index.build([sys.argv[2]]))
assert summary.attributed == summary.timed_events > 0 and summary.lines, summary.timed_events
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
_PLAIN = """
import json, resource, sys, time
start = time.perf_counter()
with open(sys.argv[1]) as fh:
    doc = json.load(fh)
with open(sys.argv[3], "w") as fh:
    json.dump(doc, fh)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


class ArmRun(msgspec.Struct):
    wall: float  # parent's clock around the child
    work: float  # the child's own clock around the work (imports left out)
    peak_kib: int


class RuntimeResults(msgspec.Struct):
    events: int
    trace_bytes: int
    kernels: int
    annotate: list[ArmRun]
    plain: list[ArmRun]
    lookup: list[float]
    floor: list[float]
    summary: list[ArmRun] = msgspec.field(default_factory=list)  # annotate --summary (issue 38)

    def time_ratio(self, arm: str = "annotate") -> float:
        runs = getattr(self, arm)
        return statistics.median(a.wall for a in runs) / statistics.median(b.wall for b in self.plain)

    def memory_ratio(self, arm: str = "annotate") -> float:
        return max(a.peak_kib for a in getattr(self, arm)) / max(b.peak_kib for b in self.plain)


def write_out(folder: Path, kernels: int) -> list[str]:
    """A synthetic ``--out`` of one inference graph with ``kernels`` call sites; their names."""
    names = [f"sdsc_fused_k{j}_{j}" for j in range(kernels)]
    keys = [f"{n}:{i + 1}" for i, n in enumerate(names)]
    post = {k: [f"mm_{i}", f"add_{i}"] for i, k in enumerate(keys)}
    mapping = {
        "preToPost": {f"linear_{i}": post[k] for i, k in enumerate(keys)},
        "postToPre": {n: [f"linear_{i}"] for i, k in enumerate(keys) for n in post[k]},
        "cppCodeToPost": post,
        "postToCppCode": {n: [k] for k in keys for n in post[k]},
        "version": 2.0,
    }
    traces = {
        k: [f'  File "/home/me/model.py", line {10 + i}, in forward\n    x = self.layer{i}(x)\n']
        for i, k in enumerate(keys)
    }
    log = Layout(folder, MODEL).trace_log
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        for name, doc in (
            ("inductor_provenance_tracking_node_mappings", mapping),
            ("inductor_provenance_tracking_kernel_stack_traces", traces),
        ):
            payload = json.dumps(doc)
            envelope = {
                "artifact": {"name": name, "encoding": "json"},
                "frame_id": 0,
                "frame_compile_id": 0,
                "attempt": 0,
                "has_payload": hashlib.md5(payload.encode(), usedforsecurity=False).hexdigest(),
            }
            fh.write(f"V1205 06:46:39.341000 1 torch/_inductor/compile_fx.py:1] {json.dumps(envelope)}\n\t{payload}\n")
    return names


def write_trace(path: Path, events: int, names: list[str]) -> int:
    """A trace shaped as ``export_chrome_trace`` writes it, one in ten events a kernel's."""
    with open(path, "w") as fh:
        fh.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n  "traceEvents": [\n')
        for i in range(events):
            name = (
                f"graph_0_{names[i // 10 % len(names)]}"
                if i % 10 == 0
                else ("aten::addmm", "aten::relu", "aten::t")[i % 3]
            )
            event = {
                "ph": "X",
                "cat": "cpu_op",
                "name": name,
                "pid": 4242,
                "tid": 4242,
                "ts": 1000.5 + i,
                "dur": 0.75,
                "args": {"External id": i, "Record function id": 0, "Ev Idx": i},
            }
            fh.write(("  " if i == 0 else ",\n  ") + json.dumps(event))
        fh.write('\n],\n  "traceName": "bench.pt.trace.json"\n}\n')
    return path.stat().st_size


def _child(code: str, *args: str) -> ArmRun:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"bench child failed: {done.stderr[-2000:]}")
    work, peak = done.stdout.split()
    return ArmRun(wall, float(work), int(peak))


def _whole(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "spyre_provenance", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:  # a lookup that found nothing timed nothing worth a figure
        raise RuntimeError(f"bench: spyre-provenance {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return wall


def run(sizes: dict[str, int], progress: Callable[[str], None]) -> RuntimeResults:
    with tempfile.TemporaryDirectory(prefix="spyre-bench-runtime-") as tmp:
        root = Path(tmp)
        out = root / "out"
        names = write_out(out, 100)
        trace = root / "trace.json"
        size = write_trace(trace, sizes["events"], names)
        progress(f"runtime: trace of {sizes['events']:,} events ({size / 2**20:.0f} MiB) written")
        annotated, plain, summary = [], [], []
        for pair in range(sizes["pairs"]):
            order = ("A", "S", "B") if pair % 2 == 0 else ("B", "S", "A")
            for arm in order:
                if arm == "A":
                    annotated.append(_child(_ANNOTATE, str(trace), str(out), str(root / "a.json")))
                elif arm == "S":
                    summary.append(_child(_SUMMARY, str(trace), str(out)))
                else:
                    plain.append(_child(_PLAIN, str(trace), str(out), str(root / "b.json")))
            progress(f"runtime: annotate pair {pair + 1}/{sizes['pairs']}")
        big = root / "big"
        names = write_out(big, sizes["kernels"])
        lookups, floors = [], []
        for _ in range(sizes["lookups"]):
            lookups.append(_whole(["lookup", f"graph_0_{names[len(names) // 2]}", "--in", str(big)]))
            floors.append(_whole(["--version"]))
        progress(f"runtime: lookup on {sizes['kernels']:,} kernels")
    return RuntimeResults(sizes["events"], size, sizes["kernels"], annotated, plain, lookups, floors, summary)


def render_section(lines: list[str], result: RuntimeResults) -> str:
    """The section's tables; returns its verdict line."""
    add = lines.append
    add(f"#### {SECTION}. Run time: `annotate` against `json.load` + `json.dump`, `lookup` whole process")
    add("")
    add(
        f"A synthetic torch.profiler trace, {result.events:,} events ({result.trace_bytes / 2**20:.0f} MiB), one in ten a"
        " kernel event to annotate. A = `annotate` (streaming), B = `json.load` then `json.dump` of the same file;"
        " each run a fresh `python`, pairs alternating. Wall: the parent's clock (interpreter start to exit);"
        " work: the child's clock around the work; peak: the child's `ru_maxrss`."
    )
    add("")
    add("| arm | runs | wall (s) | work (s) | peak RSS (MiB) |")
    add("|---|---:|---:|---:|---:|")
    arms = [
        ("A annotate", result.annotate),
        ("S annotate --summary", result.summary),
        ("B json.load + json.dump", result.plain),
    ]
    for label, runs in [(label, runs) for label, runs in arms if runs]:
        add(
            f"| {label} | {len(runs)} | {statistics.median(r.wall for r in runs):.2f} | "
            f"{statistics.median(r.work for r in runs):.2f} | {max(r.peak_kib for r in runs) / 1024:.0f} |"
        )
    add(f"| A/B | | {result.time_ratio():.3f} | | {result.memory_ratio():.3f} |")
    if result.summary:
        add(f"| S/B | | {result.time_ratio('summary'):.3f} | | {result.memory_ratio('summary'):.3f} |")
    add("")
    add("| command | kernels | runs | median wall (s) |")
    add("|---|---:|---:|---:|")
    add(
        f"| `spyre-provenance lookup NAME --in OUT` | {result.kernels:,} | {len(result.lookup)} | {statistics.median(result.lookup):.2f} |"
    )
    add(f"| `spyre-provenance --version` (floor) | | {len(result.floor)} | {statistics.median(result.floor):.2f} |")
    add("")
    measured = ["annotate", "summary"] if result.summary else ["annotate"]
    time_ok = all(result.time_ratio(arm) <= TIME_TARGET for arm in measured)
    memory_ok = all(result.memory_ratio(arm) <= MEMORY_TARGET for arm in measured)
    detail = (
        "; ".join(
            f"{'annotate --summary' if arm == 'summary' else 'annotate'} / (json.load + json.dump) on {result.events:,} events:"
            f" time {result.time_ratio(arm):.3f} (target <= {TIME_TARGET}), peak memory {result.memory_ratio(arm):.3f}"
            f" (target <= {MEMORY_TARGET})"
            for arm in measured
        )
        + f"; lookup on {result.kernels:,} kernels {statistics.median(result.lookup):.2f} s whole process"
    )
    verdict = "met" if time_ok and memory_ok else "not met"
    return f"**{verdict}** ({detail})"


def main(argv: list[str] | None = None) -> int:
    return section_main(
        argv,
        prog="python -m bench.runtime",
        description=__doc__.splitlines()[0],
        run=run,
        render_section=render_section,
        quick=QUICK,
        full=FULL,
    )


if __name__ == "__main__":
    raise SystemExit(main())
