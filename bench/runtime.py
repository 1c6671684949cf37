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
* annotate --summary with stacks (issue 46): an eager run's trace as ``with_stack=True``
  writes it (``write_eager_trace``: per launch the Python frames, the compiled region, the
  kernel event of a per-op graph and CPU ops around, ``events`` events in all), summarized
  against an ``--out`` of per-op graphs (``write_eager_out``), arm E, against arm B' (``json.load``
  + ``json.dump`` of that same file), side by side: E/B' time <= 1.5, peak memory <= 1.
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
from typing import Any

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
_EAGER_SUMMARY = """
import resource, sys, time
from spyre_provenance.runtime import index, time_summary
start = time.perf_counter()
summary = time_summary.summarize(sys.argv[1], index.build([sys.argv[2]]))
assert summary.stacks and summary.per_op_events == summary.timed_events > 0 and not summary.unplaced, summary.unplaced
assert all(r.placed_by == "launch" for r in summary.lines), summary.lines[:1]
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
    eager: list[ArmRun] = msgspec.field(default_factory=list)  # --summary of an eager trace with stacks (issue 46)
    eager_plain: list[ArmRun] = msgspec.field(default_factory=list)  # json.load + json.dump of that trace
    eager_bytes: int = 0

    def _plain(self, arm: str) -> list[ArmRun]:
        """The arm ``arm`` is measured against: json.load + json.dump of its own trace."""
        return self.eager_plain if arm == "eager" else self.plain

    def time_ratio(self, arm: str = "annotate") -> float:
        runs = getattr(self, arm)
        return statistics.median(a.wall for a in runs) / statistics.median(b.wall for b in self._plain(arm))

    def memory_ratio(self, arm: str = "annotate") -> float:
        return max(a.peak_kib for a in getattr(self, arm)) / max(b.peak_kib for b in self._plain(arm))


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


#: the eager trace's ops, each one per-op graph (issue 46: torch-spyre's eager mode)
EAGER_OPS = ("mm", "add", "relu", "mul")
EAGER_FUNCTIONS = 8  # the user's functions launching them, in model.py
EAGER_DEPTH = 3  # Python frames per launch below the user's function (dispatch, torch, the region's)


def _record(fh: Any, name: str, doc: Any, compile_id: int, payload: str | None = None) -> None:
    """One TORCH_TRACE record, glog-prefixed, with its payload's MD5 (a JSON artifact, or
    ``inductor_output_code`` when ``payload`` is given)."""
    text = payload if payload is not None else json.dumps(doc)
    envelope: dict[str, Any] = (
        {"inductor_output_code": {"filename": f"/tmp/c{compile_id}.py"}}
        if payload is not None
        else {"artifact": {"name": name, "encoding": "json"}}
    )
    envelope.update(frame_id=0, frame_compile_id=compile_id, attempt=0)
    envelope["has_payload"] = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
    body = "".join(f"\t{line}\n" for line in text.splitlines()) or "\t\n"
    fh.write(f"V1205 06:46:39.341000 1 torch/_inductor/compile_fx.py:1] {json.dumps(envelope)}\n{body}")


def write_eager_out(folder: Path) -> None:
    """A synthetic ``--out`` of one per-op graph per op of ``EAGER_OPS`` (compile ``0/<g>``), as
    torch-spyre's eager mode makes them: one ATen call, its kernel, the first caller's frame."""
    log = Layout(folder, MODEL).trace_log
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        for g, op in enumerate(EAGER_OPS):
            key, aten = f"sdsc_fused_{op}_0:1", f"aten.{op}.{'Tensor' if op in ('add', 'mul') else 'default'}"
            node = f"{op}_{aten.rsplit('.', 1)[1].lower()}"
            mapping = {
                "preToPost": {node: [op]},
                "postToPre": {op: [node]},
                "cppCodeToPost": {key: [op]},
                "postToCppCode": {op: [key]},
                "version": 2.0,
            }
            trace = f'  File "/home/me/model.py", line {20 + g}, in layer{g}\n    x = ops.{op}(x)\n'
            _record(fh, "inductor_provenance_tracking_node_mappings", mapping, g)
            _record(fh, "inductor_provenance_tracking_kernel_stack_traces", {key: [trace]}, g)
            code = f"# AOT ID: ['{g}_inference']\ndef call(args):\n    # Original ATen: [{aten}]\n    # [Provenance debug handles] {key}\n    pass"
            _record(fh, "", None, g, payload=code)


def write_eager_trace(path: Path, events: int) -> tuple[int, int]:
    """A trace as ``export_chrome_trace`` writes an eager run profiled ``with_stack=True``: per
    launch, the user's function, the dispatch and torch frames (``python_function`` events,
    parents named), the compiled region and its kernel event (``graph_<g>_...``), and CPU ops
    around; about one event in ten a kernel's. Returns (file size, kernel events)."""
    per_launch = 2 + EAGER_DEPTH + 5  # region + kernel, the frames, five CPU ops
    launches = max(1, events // per_launch)
    ts, pid, python_id = 1000.0, 4242, 1
    with open(path, "w") as fh:
        fh.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n  "traceEvents": [\n')
        root = {"ph": "X", "cat": "python_function", "name": "model.py(90): <module>", "pid": pid, "tid": pid}
        root.update(ts=ts - 1, dur=launches * 20.0 + 2, args={"Python id": 0, "Python parent id": None})
        fh.write("  " + json.dumps(root))
        for i in range(launches):
            g, function = i % len(EAGER_OPS), i % EAGER_FUNCTIONS
            frames = [f"model.py({10 + function}): layer{function}", "per_op.py(21): dispatch"]
            frames += [f"torch/_dynamo/eval_frame.py({1076 + d}): wrapper{d}" for d in range(EAGER_DEPTH - 2)]
            out = []
            parent = 0
            for depth, name in enumerate(frames):
                args = {"Python id": python_id, "Python parent id": parent}
                out.append(
                    {"ph": "X", "cat": "python_function", "name": name, "ts": ts + depth, "dur": 18.0 - 2 * depth}
                )
                out[-1].update(pid=pid, tid=pid, args=args)
                parent, python_id = python_id, python_id + 1
            region = {"ph": "X", "cat": "cpu_op", "name": f"Torch-Compiled Region: 0/{g}", "ts": ts + 8, "dur": 6.0}
            kernel = {"ph": "X", "cat": "cpu_op", "name": f"graph_{g}_sdsc_fused_{EAGER_OPS[g]}_0", "ts": ts + 9}
            kernel["dur"] = 0.75
            out += [region, kernel]
            out += [
                {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": ts + 10 + k, "dur": 0.5} for k in range(5)
            ]
            for event in out[len(frames) :]:
                event.update(pid=pid, tid=pid, args={"External id": i, "Record function id": 0})
            fh.write("".join(",\n  " + json.dumps(e) for e in out))
            ts += 20.0
        fh.write('\n],\n  "traceName": "eager.pt.trace.json"\n}\n')
    return path.stat().st_size, launches


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
        eager, eager_plain, eager_bytes = _eager_pairs(root, sizes, progress)
        big = root / "big"
        names = write_out(big, sizes["kernels"])
        lookups, floors = [], []
        for _ in range(sizes["lookups"]):
            lookups.append(_whole(["lookup", f"graph_0_{names[len(names) // 2]}", "--in", str(big)]))
            floors.append(_whole(["--version"]))
        progress(f"runtime: lookup on {sizes['kernels']:,} kernels")
    return RuntimeResults(
        sizes["events"],
        size,
        sizes["kernels"],
        annotated,
        plain,
        lookups,
        floors,
        summary,
        eager,
        eager_plain,
        eager_bytes,
    )


def _eager_pairs(
    root: Path, sizes: dict[str, int], progress: Callable[[str], None]
) -> tuple[list[ArmRun], list[ArmRun], int]:
    """Arm E (the summary with stacks of an eager trace) and B' (json.load + json.dump of the
    same file), alternating."""
    out, trace = root / "eager-out", root / "eager.json"
    write_eager_out(out)
    size, _ = write_eager_trace(trace, sizes["events"])
    progress(f"runtime: eager trace with stacks, {sizes['events']:,} events ({size / 2**20:.0f} MiB) written")
    eager, plain = [], []
    for pair in range(sizes["pairs"]):
        for arm in ("E", "B") if pair % 2 == 0 else ("B", "E"):
            if arm == "E":
                eager.append(_child(_EAGER_SUMMARY, str(trace), str(out)))
            else:
                plain.append(_child(_PLAIN, str(trace), str(out), str(root / "b-eager.json")))
        progress(f"runtime: eager summary pair {pair + 1}/{sizes['pairs']}")
    return eager, plain, size


_ARM_NAMES = {
    "annotate": "annotate",
    "summary": "annotate --summary",
    "eager": "annotate --summary of an eager trace with stacks",
}


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
        ("E annotate --summary, eager trace with stacks", result.eager),
        ("B' json.load + json.dump of the eager trace", result.eager_plain),
    ]
    for label, runs in [(label, runs) for label, runs in arms if runs]:
        add(
            f"| {label} | {len(runs)} | {statistics.median(r.wall for r in runs):.2f} | "
            f"{statistics.median(r.work for r in runs):.2f} | {max(r.peak_kib for r in runs) / 1024:.0f} |"
        )
    add(f"| A/B | | {result.time_ratio():.3f} | | {result.memory_ratio():.3f} |")
    if result.summary:
        add(f"| S/B | | {result.time_ratio('summary'):.3f} | | {result.memory_ratio('summary'):.3f} |")
    if result.eager:
        add(f"| E/B' | | {result.time_ratio('eager'):.3f} | | {result.memory_ratio('eager'):.3f} |")
        add("")
        add(
            f"E: an eager run's trace profiled `with_stack=True` ({result.events:,} events,"
            f" {result.eager_bytes / 2**20:.0f} MiB: Python frames, per-op kernel events, CPU ops), each per-op"
            " launch placed at the user's function by its stack; B' is json.load + json.dump of that same file."
        )
    add("")
    add("| command | kernels | runs | median wall (s) |")
    add("|---|---:|---:|---:|")
    add(
        f"| `spyre-provenance lookup NAME --in OUT` | {result.kernels:,} | {len(result.lookup)} | {statistics.median(result.lookup):.2f} |"
    )
    add(f"| `spyre-provenance --version` (floor) | | {len(result.floor)} | {statistics.median(result.floor):.2f} |")
    add("")
    measured = ["annotate"] + (["summary"] if result.summary else []) + (["eager"] if result.eager else [])
    time_ok = all(result.time_ratio(arm) <= TIME_TARGET for arm in measured)
    memory_ok = all(result.memory_ratio(arm) <= MEMORY_TARGET for arm in measured)
    detail = (
        "; ".join(
            f"{_ARM_NAMES[arm]} / (json.load + json.dump) on {result.events:,} events:"
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
