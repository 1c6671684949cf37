"""One measurement in a fresh process: wall time and peak memory of one step.

``python -m bench.probe '{"op": ..., "refs": ..., "path": ..., "inner": ...}'``
prints one JSON object. A fresh process per measurement keeps one step's garbage and heap
growth out of the next one's numbers, and makes peak RSS mean something:

peak memory = the process's peak resident set during the step (``VmHWM``, reset just before
the step through ``/proc/self/clear_refs``) minus its resident set before the step. For the
validation steps "before" is before the file is read, so the peak includes the file's bytes
(what validating a file costs); for the build it is with the KernelRecords and the
pre/post relation already in memory, so it includes the bytes the build produces.

Ops: ``build`` (records -> build_node_mappings -> to_json_bytes; writes ``path``),
``loads`` (json.loads), ``loads_nogc`` (json.loads with the cyclic GC paused, as the fast
path pauses it), ``fast`` and ``full`` (schemas.validate_bytes without and with full=True).
"""

from __future__ import annotations

import gc
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

OPS = ("build", "loads", "loads_nogc", "fast", "full")


def _status(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakMemory:
    """Peak resident memory of a step above the resident memory before it (Linux)."""

    def __init__(self) -> None:
        gc.collect()
        self.before = _status("VmRSS")
        self.method = "VmHWM"
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
                clear.write("5")  # resets VmHWM to the current RSS
        except OSError:
            self.method = "ru_maxrss"  # not resettable: the peak may predate the step
        if self.before is None:
            self.method = "unavailable"

    def peak(self) -> int | None:
        if self.method == "unavailable" or self.before is None:
            return None
        high = _status("VmHWM") if self.method == "VmHWM" else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return None if high is None else max(0, high - self.before)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    op, path, inner = spec["op"], Path(spec["path"]), int(spec.get("inner", 1))
    if op not in OPS:
        raise SystemExit(f"unknown op {op!r}")
    if op == "build":
        return _build(int(spec["refs"]), path, inner)
    return _validate(op, path, inner)


def _build(refs: int, path: Path, inner: int) -> dict[str, Any]:
    from bench import synthetic
    from spyre_provenance.links import mapping

    records = synthetic.records(refs)
    pre_to_post, post_to_pre = synthetic.relation(refs)
    times, build_times = [], []
    memory = PeakMemory()
    peak = None
    for _ in range(inner):
        start = time.perf_counter()
        document = mapping.build_node_mappings(records, pre_to_post, post_to_pre)
        built = time.perf_counter()
        data = mapping.to_json_bytes(document)
        end = time.perf_counter()
        if peak is None:
            peak = memory.peak()
        times.append(end - start)
        build_times.append(built - start)
        del document
        if len(times) < inner:
            del data
    path.write_bytes(data)
    return {
        "seconds": statistics.median(times),
        "build_seconds": statistics.median(build_times),
        "size": len(data),
        "peak": peak,
        "memory_method": memory.method,
    }


def _validate(op: str, path: Path, inner: int) -> dict[str, Any]:
    from spyre_provenance.base import process
    from spyre_provenance.validate import schemas

    def step(data: bytes) -> Any:
        if op == "loads":
            return json.loads(data)
        if op == "loads_nogc":
            with process.gc_paused():
                return json.loads(data)
        report = schemas.validate_bytes(data, full=op == "full")
        if not report.ok:  # the benchmark's input is valid: anything else is a bug
            raise SystemExit(f"{op}: synthetic mapping reported invalid: {report.problems[:3]}")
        return report

    memory = PeakMemory()
    data = path.read_bytes()
    times, peak = [], None
    for _ in range(inner):
        start = time.perf_counter()
        result = step(data)
        times.append(time.perf_counter() - start)
        del result
        if peak is None:
            peak = memory.peak()
    return {"seconds": statistics.median(times), "size": len(data), "peak": peak, "memory_method": memory.method}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(json.dumps(run(json.loads(args[0]))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
