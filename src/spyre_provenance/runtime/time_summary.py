"""Where a profiled run's kernel time went, by source line and by module
(``spyre-provenance annotate TRACE --from OUT --summary``).

Each timed kernel event is placed in its call site by ``runtime.attribution`` (the same
rule ``annotate`` follows); its ``dur`` then counts under:

- every **source line** of the call site: the innermost frame of each of its stack traces
  that is the user's (not torch's, not the standard library's). A kernel fused from
  several lines counts under each of them, so line shares may add up past 100%;
- every **module** call around it: the user's outer frames of the same traces (the line
  that called the submodule, ``x = self.block(x)``), inclusive as a profiler's call tree.

Forward (inference too) and backward are apart; rows come heaviest first, each with its
calls, total, share of all timed kernel time, and the kernels under it. Which events are
timed, one kind only so no time counts twice: torch-spyre's device kernel events (a
``provenance_key``, or ``cat`` ``kernel``) when the trace has any, else the device
timeline's ``<bundle folder> Cmpt Exec`` (IBM's trace analyzer), else the CPU kernel
events (Inductor's ``graph_<i>_`` kernel profiling). CPU spans, preparation and DMA events
are never counted. Events that could not be placed are counted apart (``unattributed``).

The trace is read once, event by event (``trace_stream``); only the timed events' few
fields are kept until the end. Pure: no torch.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.model import kernel_keys
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.frames import frames as stack_frames
from spyre_provenance.model.frames import is_user_frame
from spyre_provenance.model.kernel_keys import KEY_RE, key_of_event
from spyre_provenance.runtime import attribution, kernel_names, trace_stream
from spyre_provenance.runtime.index import KernelIndex, Site

SUMMARY_VERSION = 1
#: the kinds of timed event, in the order one is preferred over the next
DEVICE, TIMELINE, CPU = "device kernel events", "device timeline Cmpt Exec events", "CPU kernel events"
TIME_SOURCES = (DEVICE, TIMELINE, CPU)
NO_LINE = "(no source line)"
LISTED_ROWS = 20  # text: rows per table


class KernelTime(msgspec.Struct, frozen=True):
    kernel: str
    call_site: str
    graph: str  # "<model> <compile id> <graph kind>"
    calls: int
    total_us: float
    acelyzer: dict[str, str] | None = None  # the kernel's row of an acelyzer summary CSV, when joined


class Row(msgspec.Struct, frozen=True):
    phase: str  # forward | backward
    file: str
    line: int
    code: str
    calls: int
    total_us: float
    share: float  # of all timed kernel time, 0..1
    kernels: list[KernelTime]


class TimeSummary(msgspec.Struct, frozen=True):
    """What ``--summary --format json`` prints (``schemas/provenance_time_summary``)."""

    version: int
    trace: str
    time_from: str | None  # one of TIME_SOURCES; None: no timed kernel event
    timed_events: int
    attributed: int
    total_us: float
    unattributed_us: float
    lines: list[Row]
    modules: list[Row]


class _Cell:
    __slots__ = ("calls", "kernels", "total")

    def __init__(self) -> None:
        self.calls = 0
        self.total = 0.0
        self.kernels: dict[Site, list[float]] = {}  # site -> [calls, total]


def _kind(event: dict[str, Any]) -> str | None:
    """Which kind of timed event ``event`` is, or None when it is never timed. Cheap tests
    first: this runs on every event of the trace."""
    if event.get("ph") != "X":
        return None
    name = event["name"]
    category = event.get("cat")
    if category == "kernel" or name.startswith(kernel_keys.EVENT_PREFIX[:14]):
        if category == "kernel" or key_of_event(name):
            return DEVICE
    elif name.endswith(" Cmpt Exec"):
        return TIMELINE
    elif category == "cpu_op" and (kernel_names.has_profiler_prefix(name) or name.startswith(("sdsc_", "cpp_fused"))):
        return CPU
    else:
        args = event.get("args")
        key = args.get("provenance_key") if isinstance(args, dict) else None
        if isinstance(key, str) and KEY_RE.fullmatch(key):  # a device event a tool renamed
            return DEVICE
    return None


def summarize(
    trace: str | os.PathLike[str], index: KernelIndex, acelyzer_csv: str | os.PathLike[str] | None = None
) -> TimeSummary:
    """The summary of ``trace`` against ``index``; raises UnusableInput for a trace that is
    not one (and for an acelyzer CSV that cannot be read)."""
    regions = attribution.Regions()
    kept: dict[str, list[dict[str, Any]]] = {k: [] for k in TIME_SOURCES}
    for kind, _, event in trace_stream.read_trace(trace):
        if kind != "event":
            continue
        timed = _kind(event)
        if timed is None:
            regions.add(event)
        elif isinstance(event.get("dur"), (int, float)):
            args = event.get("args")
            args = args if isinstance(args, dict) else {}
            kept[timed].append(
                {
                    "ph": "X",
                    "name": event["name"],
                    "cat": event.get("cat"),
                    "pid": event.get("pid"),
                    "tid": event.get("tid"),
                    "ts": event.get("ts"),
                    "dur": event["dur"],
                    "args": {k: args[k] for k in ("provenance_key", "debug_handles") if k in args},
                }
            )
    regions.done()
    source = next((k for k in TIME_SOURCES if kept[k]), None)
    events = kept[source] if source else []
    attributor = attribution.Attributor(index, regions)
    lines: dict[tuple[str, str, int, str], _Cell] = {}
    modules: dict[tuple[str, str, int, str], _Cell] = {}
    total = unattributed = 0.0
    attributed = 0
    places: dict[Site, tuple[str, list[tuple[str, int, str]], list[tuple[str, int, str]]]] = {}
    for event in events:
        dur = float(event["dur"])
        total += dur
        verdict = attributor.verdict(event)
        if verdict.status != "annotated" or verdict.site is None:
            unattributed += dur
            continue
        attributed += 1
        site = verdict.site
        if site not in places:
            places[site] = _place(index, site)
        phase, own, callers = places[site]
        for where, table in ((own, lines), (callers, modules)):
            for file, line, code in where:
                cell = table.setdefault((phase, file, line, code), _Cell())
                cell.calls += 1
                cell.total += dur
                per_kernel = cell.kernels.setdefault(site, [0, 0.0])
                per_kernel[0] += 1
                per_kernel[1] += dur
    joined = read_acelyzer_csv(acelyzer_csv) if acelyzer_csv is not None else None
    return TimeSummary(
        SUMMARY_VERSION,
        str(trace),
        source,
        len(events),
        attributed,
        total,
        unattributed,
        _rows(lines, total, index, joined),
        _rows(modules, total, index, joined),
    )


def _place(index: KernelIndex, site: Site) -> tuple[str, list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """(phase, the site's own user lines, the user frames calling them) from its traces."""
    graph = index.graphs[site[0]]
    own: dict[tuple[str, int, str], None] = {}
    callers: dict[tuple[str, int, str], None] = {}
    for trace in graph.stack_traces.get(site[1]) or []:
        if not isinstance(trace, str):
            continue
        user = [(f.file, f.line, f.code.strip()) for f in stack_frames(trace) if is_user_frame(f.file)]
        if user:
            own[user[-1]] = None
            for frame in user[:-1]:
                callers[frame] = None
    phase = "backward" if graph.graph == "backward" else "forward"
    return phase, list(own) or [(NO_LINE, 0, "")], [c for c in callers if c not in own]


def _rows(
    table: dict[tuple[str, str, int, str], _Cell],
    total: float,
    index: KernelIndex,
    joined: dict[str, dict[str, str]] | None,
) -> list[Row]:
    rows = []
    for (phase, file, line, code), cell in table.items():
        kernels = []
        for site, (calls, spent) in sorted(cell.kernels.items(), key=lambda kv: (-kv[1][1], kv[0])):
            graph = index.graphs[site[0]]
            kernel = split_key(site[1])[0] or site[1]
            bundle = graph.bundles.get(site[1]) or {}
            row = None if joined is None else _acelyzer_row(joined, kernel, bundle.get("folder"))
            kernels.append(
                KernelTime(kernel, site[1], f"{graph.model} {graph.compile_id} {graph.graph}", int(calls), spent, row)
            )
        share = cell.total / total if total else 0.0
        rows.append(Row(phase, file, line, code, cell.calls, cell.total, share, kernels))
    # heaviest first; ties in a fixed order, so the same trace prints the same summary
    rows.sort(key=lambda r: (r.phase != "forward", -r.total_us, r.file, r.line))
    return rows


# --- IBM's trace analyzer: its per-kernel summary CSV, joined by kernel ------------------


def read_acelyzer_csv(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """An ``acelyzer`` summary CSV (``<name>_summary.csv``) as {kernel: its row}. acelyzer
    1.3 writes it tab-separated with padded cells (``Time \t Total Time\t Calls\t ... \t
    pid\t Name``); the ``Name`` column names the kernel (a device-timeline name is read back
    to its bundle folder). Comma-separated files with a ``Name`` (else first) column read too."""
    from spyre_provenance.base.errors import UnusableInput

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnusableInput(str(path), f"cannot be read: {exc}") from None
    header = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), delimiter="\t" if "\t" in header else ",")
    fields = [f.strip() for f in next(reader, [])]
    if not any(fields):
        raise UnusableInput(str(path), "no header row: not an acelyzer summary CSV")
    column = fields.index("Name") if "Name" in fields else 0
    found: dict[str, dict[str, str]] = {}
    for cells in reader:
        row = dict(zip(fields, (c.strip() for c in cells), strict=False))
        name = row.get(fields[column], "")
        if not name:
            continue
        timeline = kernel_names.DEVICE_TIMELINE.fullmatch(name)
        found.setdefault(timeline["folder"] if timeline else name, row)
    return found


def _acelyzer_row(joined: dict[str, dict[str, str]], kernel: str, folder: str | None) -> dict[str, str] | None:
    for name in (folder, kernel):
        if name and name in joined:
            return joined[name]
    return None


# --- output ---------------------------------------------------------------------------------


def render_text(summary: TimeSummary) -> str:
    if summary.time_from is None:
        return f"{summary.trace}: no timed kernel event (no device kernel, Cmpt Exec or CPU kernel event)\n"
    out = [
        f"kernel time per source line: {_ms(summary.total_us)} in {summary.timed_events} {summary.time_from}, "
        f"{summary.attributed} placed in their call site"
        + (f", {_ms(summary.unattributed_us)} not (see annotate)" if summary.unattributed_us else "")
    ]
    out.append("  (a kernel fused from several lines counts under each; a module counts what runs under its call)")
    for title, rows in (("source line", summary.lines), ("module (the call into it)", summary.modules)):
        for phase in ("forward", "backward"):
            chosen = [r for r in rows if r.phase == phase]
            if not chosen:
                continue
            out.append(f"{phase}, by {title}:")
            out.append(f"  {'share':>6}  {'total':>10}  {'calls':>6}  where")
            for row in chosen[:LISTED_ROWS]:
                where = NO_LINE if row.file == NO_LINE else f"{row.file}:{row.line}  {row.code}"
                out.append(f"  {row.share:6.1%}  {_ms(row.total_us):>10}  {row.calls:>6}  {where}")
                for kernel in row.kernels:
                    extra = f"  acelyzer: {_acelyzer_text(kernel.acelyzer)}" if kernel.acelyzer else ""
                    out.append(
                        f"  {'':>6}  {_ms(kernel.total_us):>10}  {kernel.calls:>6}    {kernel.call_site}"
                        f"  ({kernel.graph}){extra}"
                    )
            if len(chosen) > LISTED_ROWS:
                out.append(f"  ... and {len(chosen) - LISTED_ROWS} more (--format json or csv lists all)")
    return "\n".join(out) + "\n"


def _acelyzer_text(row: dict[str, str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in ("Total Time", "Calls", "Mean") if k in row)


def _ms(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} us"


CSV_COLUMNS = ("table", "phase", "file", "line", "code", "calls", "total_us", "share", "kernel", "call_site", "graph")


def render_csv(summary: TimeSummary) -> str:
    """One row per (table, line or module, kernel) plus one total row per line or module
    (``kernel`` empty): a spreadsheet sums the kernels or reads the totals."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for table, rows in (("line", summary.lines), ("module", summary.modules)):
        for row in rows:
            base = [table, row.phase, row.file, row.line, row.code]
            writer.writerow([*base, row.calls, f"{row.total_us:.3f}", f"{row.share:.6f}", "", "", ""])
            for k in row.kernels:
                writer.writerow([*base, k.calls, f"{k.total_us:.3f}", "", k.kernel, k.call_site, k.graph])
    return buffer.getvalue()


def render_json(summary: TimeSummary) -> str:
    return msgspec.json.encode(summary).decode() + "\n"


def sites_total(rows: Iterable[Row]) -> float:
    """The time of the distinct kernel calls under ``rows`` (a kernel counted once)."""
    seen: dict[str, float] = {}
    for row in rows:
        for k in row.kernels:
            seen[f"{k.graph} {k.call_site}"] = k.total_us
    return sum(seen.values())
