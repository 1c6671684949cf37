"""``compare`` (issue 46 point 7): two ``--out`` folders of ``kernels`` kernel call sites each,
compared per source line, whole process, against a target of 2 s.

The folders hold what a compile writes where ``compare`` reads it: ``trace/<model>.log``
with the node mapping, the stack traces and the OpSpec artifact (two OpSpecs per call site,
each with a debug handle naming its line) as glog-prefixed records with their MD5. B is A
with one line inserted near the top, a kernel of its own: every later line moves one number
down and every later kernel's suffix one up, so the alignment pairs 10k lines that all moved.
``python -m spyre_provenance compare A B`` (text, and ``--format json``, which validates the
document against its schema before printing it) runs from interpreter start to exit; beside
it ``python -m spyre_provenance --version``, the command line's floor.

``python -m bench.compare [--quick]`` runs this section alone.
"""

from __future__ import annotations

import hashlib
import json
import resource
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

SECTION = 9
TIME_TARGET = 2.0  # seconds, whole process
FULL = {"kernels": 10_000, "runs": 3}
QUICK = {"kernels": 300, "runs": 1}
MODEL = "bench"
SOURCE = "/home/me/model.py"


class Run(msgspec.Struct):
    wall: float  # the parent's clock around the child
    cpu: float  # the child's user + system time: what a machine of its own would wait


class CompareResults(msgspec.Struct):
    kernels: int
    text: list[Run]
    json: list[Run]
    floor: list[Run]

    def median(self, arm: str, field: str = "wall") -> float:
        return statistics.median(getattr(r, field) for r in getattr(self, arm))

    def worst(self, field: str = "wall") -> float:
        return max(self.median("text", field), self.median("json", field))


def write_out(folder: Path, kernels: int, inserted: bool) -> None:
    """A synthetic ``--out`` of one inference graph, one call site per source line; with
    ``inserted``, one more line (and kernel) after the first."""
    lines = [f"layer{i}" for i in range(kernels)]
    if inserted:
        lines.insert(1, "inserted")
    keys: list[str] = []
    traces: dict[str, list[str]] = {}
    specs: dict[str, list[dict[str, object]]] = {}
    handles: dict[str, dict[str, object]] = {}
    mapping: dict[str, object] = {}
    pre_to_post: dict[str, list[str]] = {}
    post_to_pre: dict[str, list[str]] = {}
    for j, name in enumerate(lines):
        key = f"sdsc_fused_{name}_{j}:{j + 1}"
        keys.append(key)
        number = 10 + j
        traces[key] = [f'  File "{SOURCE}", line {number}, in forward\n    x = self.{name}(x)\n']
        specs[key] = []
        for op, space in (("batchmatmul", [8, 64, 64]), ("add", [8, 64])):
            handle = str(int(hashlib.sha256(f"{name} {op}".encode()).hexdigest()[:15], 16))
            source = {"file": SOURCE, "start_line": number, "start_col": 0, "end_line": None, "end_col": None}
            handles[handle] = {
                "source": source,
                "aten_op": "aten.linear.default",
                "ir_chain": [f"{op}_{j}"],
                "fused_from": [],
                "transform_history": [],
            }
            specs[key].append(
                {
                    "op": op,
                    "is_reduction": op == "batchmatmul",
                    "iteration_space": space,
                    "buffer": f"buf{j}",
                    "debug_handle": handle,
                }
            )
        pre_to_post[f"linear_{j}"] = [f"mm_{j}", f"add_{j}"]
        post_to_pre.update({f"mm_{j}": [f"linear_{j}"], f"add_{j}": [f"linear_{j}"]})
    mapping["preToPost"], mapping["postToPre"] = pre_to_post, post_to_pre
    mapping["cppCodeToPost"] = {k: [f"mm_{j}", f"add_{j}"] for j, k in enumerate(keys)}
    mapping["postToCppCode"] = {n: [k] for j, k in enumerate(keys) for n in (f"mm_{j}", f"add_{j}")}
    mapping["version"] = 2.0
    opspecs = {"version": 2, "kernels": specs, "handles": handles, "bundles": {}}
    _write_log(
        Layout(folder, MODEL).trace_log,
        [
            ("inductor_provenance_tracking_node_mappings", mapping),
            ("inductor_provenance_tracking_kernel_stack_traces", traces),
            ("spyre_opspec_debug_handles", opspecs),
        ],
    )


def _write_log(log: Path, docs: list[tuple[str, object]]) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        for name, doc in docs:
            payload = json.dumps(doc)
            envelope = {
                "artifact": {"name": name, "encoding": "json"},
                "frame_id": 0,
                "frame_compile_id": 0,
                "attempt": 0,
                "has_payload": hashlib.md5(payload.encode(), usedforsecurity=False).hexdigest(),
            }
            fh.write(f"V1205 06:46:39.341000 1 torch/_inductor/compile_fx.py:1] {json.dumps(envelope)}\n\t{payload}\n")


def _whole(args: list[str], expected: int) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "spyre_provenance", *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expected:
        raise RuntimeError(f"bench: spyre-provenance {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return Run(wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def run(sizes: dict[str, int], progress: Callable[[str], None]) -> CompareResults:
    with tempfile.TemporaryDirectory(prefix="spyre-bench-compare-") as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        write_out(a, sizes["kernels"], inserted=False)
        write_out(b, sizes["kernels"], inserted=True)
        progress(f"compare: two --out folders of {sizes['kernels']:,} kernels written")
        text, as_json, floor = [], [], []
        for _ in range(sizes["runs"]):
            text.append(_whole(["compare", str(a), str(b)], 1))  # one line inserted: they differ
            as_json.append(_whole(["compare", str(a), str(b), "--format", "json"], 1))
            floor.append(_whole(["--version"], 0))
        progress(f"compare: {sizes['runs']} runs")
    return CompareResults(sizes["kernels"], text, as_json, floor)


def render_section(lines: list[str], result: CompareResults) -> str:
    """The section's table; returns its verdict line."""
    add = lines.append
    add(f"#### {SECTION}. `compare` of two {result.kernels:,}-kernel folders, whole process")
    add("")
    add(
        f"Two synthetic `--out` folders of {result.kernels:,} call sites (two OpSpecs each, one source line each); B has"
        " one line inserted near the top, so every later line moved. Wall: the parent's clock, interpreter start to exit;"
        " CPU: the child's user and system time (on a machine shared with other jobs, what the wall would be alone)."
    )
    add("")
    add("| command | runs | median wall (s) | median CPU (s) |")
    add("|---|---:|---:|---:|")
    arms = (
        ("text", "`spyre-provenance compare A B`"),
        ("json", "`spyre-provenance compare A B --format json`"),
        ("floor", "`spyre-provenance --version` (floor)"),
    )
    for arm, label in arms:
        runs = len(getattr(result, arm))
        add(f"| {label} | {runs} | {result.median(arm):.2f} | {result.median(arm, 'cpu'):.2f} |")
    add("")
    verdict = "met" if result.worst() <= TIME_TARGET else "not met"
    return (
        f"**{verdict}** (compare of two {result.kernels:,}-kernel folders: {result.worst():.2f} s wall,"
        f" target <= {TIME_TARGET} s; {result.worst('cpu'):.2f} s of CPU)"
    )


def main(argv: list[str] | None = None) -> int:
    return section_main(
        argv,
        prog="python -m bench.compare",
        description=__doc__.splitlines()[0],
        run=run,
        render_section=render_section,
        quick=QUICK,
        full=FULL,
    )


if __name__ == "__main__":
    raise SystemExit(main())
