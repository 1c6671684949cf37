"""Where a profiled run's kernel time went, by source line and by module
(``spyre-provenance annotate TRACE --from OUT --summary``).

Each timed kernel event is placed in its call site by ``runtime.attribution`` (the same
rule ``annotate`` follows); its ``dur`` then counts under:

- every **source line** of the call site: the innermost frame of each of its stack traces
  that is the user's (not torch's, not the standard library's). A kernel fused from
  several lines counts under each of them, so line shares may add up past 100%;
- every **module** call around it: the user's outer frames of the same traces (the line
  that called the submodule, ``x = self.block(x)``), inclusive as a profiler's call tree.

A call site none of whose frames is the user's (a model built of torch's own modules) is
named by the modules its nodes ran in instead (``model.modules``): its rows are module
evidence, never source lines (file ``(module)``, line 0, code the module's name,
``placed_by`` ``module``): its own modules as lines, the modules around them as modules.

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

from spyre_provenance.links.misnamed import ORIGIN_NODE_RULE, describe, read_misnamed
from spyre_provenance.model import kernel_keys
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.frames import frames as stack_frames
from spyre_provenance.model.frames import is_user_frame
from spyre_provenance.model.kernel_keys import KEY_RE, key_of_event
from spyre_provenance.model.modules import (
    MODULE_EVIDENCE,
    MODULE_FILE,
    ModuleCall,
    module_names,
    module_text,
    read_module_stacks,
)
from spyre_provenance.runtime import attribution, kernel_names, launches, trace_stream
from spyre_provenance.runtime.index import KernelIndex, Site

SUMMARY_VERSION = 2
#: where a row's place came from: the compile's stack traces, the launch's own Python stack (the
#: profiler's frames: a function, at its first line), or the call site the tracked process
#: recorded at launch (``model.call_sites``: the line that made the call)
BY_COMPILE, BY_LAUNCH, BY_RECORDED = "compile", "launch", launches.BY_RECORDED
#: a row named by a module (``model.modules``: no frame of its call sites is the user's), its
#: file MODULE and its code the module's name: module evidence, not a source line
BY_MODULE = MODULE_EVIDENCE
#: the hint a summary gives for a trace whose launches are placed at functions only
TAKE_LINES = (
    "run it under tracking (spyre-provenance run, SPYRE_PROVENANCE_OUT or spyre_provenance.enable()) and"
    " each call records the line that made it"
)
#: the call site of a row's kernel entry that stands for every per-op compile of one op
PER_OP = "per-op"
#: the hint a summary gives for a trace without Python stacks
TAKE_STACKS = "torch.profiler.profile(..., with_stack=True)"
#: the kinds of timed event, in the order one is preferred over the next
DEVICE, TIMELINE, CPU = "device kernel events", "device timeline Cmpt Exec events", "CPU kernel events"
TIME_SOURCES = (DEVICE, TIMELINE, CPU)
NO_LINE = "(no source line)"
PHASES = ("forward", "backward")  # the order every text form prints them in


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
    #: BY_LAUNCH: the user's function that launched them; BY_RECORDED: the line; BY_MODULE: a module
    placed_by: str = BY_COMPILE


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
    stacks: bool = False  # the trace holds Python stacks (with_stack=True)
    per_op_events: int = 0  # placed events of per-op compiles (links.per_op)
    unplaced: int = 0  # per-op events whose launch the trace's stacks do not hold: in no line
    unplaced_us: float = 0.0
    #: the timed kernels' OpSpecs whose torch-spyre handle names another op or line than
    #: their node (the diagnostics' ``misnamed_handles``): ``<graph>: <both sides>``
    misnamed: list[str] = []
    call_sites: int = 0  # call site ranges the tracked process recorded at launch (model.call_sites)
    recorded: int = 0  # placed events with such a range around their launch: placed at its line


class _Cell:
    __slots__ = ("calls", "kernels", "placed_by", "total")

    def __init__(self) -> None:
        self.calls = 0
        self.total = 0.0
        self.kernels: dict[Any, list[float]] = {}  # call site (or per-op kind) -> [calls, total]
        self.placed_by = BY_COMPILE


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
    stacks = launches.Launches()
    kept: dict[str, list[dict[str, Any]]] = {k: [] for k in TIME_SOURCES}
    for kind, _, event in trace_stream.read_trace(trace):
        if kind != "event":
            continue
        stacks.add(event)
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
                    "args": {k: args[k] for k in ("provenance_key", "debug_handles", "correlation") if k in args},
                }
            )
    regions.done()
    stacks.done()
    source = next((k for k in TIME_SOURCES if kept[k]), None)
    events = kept[source] if source else []
    tally = _Tally(index, attribution.Attributor(index, regions), stacks)
    for event in events:
        tally.add(event)
    joined = read_acelyzer_csv(acelyzer_csv) if acelyzer_csv is not None else None
    return TimeSummary(
        SUMMARY_VERSION,
        str(trace),
        source,
        len(events),
        tally.attributed,
        tally.total,
        tally.unattributed,
        _rows(tally.lines, tally.total, index, joined, tally.per_op_graphs),
        _rows(tally.modules, tally.total, index, joined, tally.per_op_graphs),
        stacks.has_stacks,
        tally.per_op_events,
        tally.unplaced,
        tally.unplaced_us,
        _misnamed(index, tally.lines),
        stacks.call_sites,
        tally.recorded,
    )


def _misnamed(index: KernelIndex, lines: dict[tuple[str, str, int, str], _Cell]) -> list[str]:
    """The OpSpecs of the timed call sites whose handle names another op or line than their
    node, each ``<graph>: <OpSpec, handle's op and line, the node's>`` (``links.misnamed``)."""
    timed = {site for cell in lines.values() for site in cell.kernels if isinstance(site, tuple) and site[0] != PER_OP}
    found: list[str] = []
    for position, graph in enumerate(index.graphs):
        for misnamed in read_misnamed(graph.diagnostics):
            if (position, misnamed.kernel) in timed:
                found.append(f"{graph.label}: {describe(misnamed)}")
    return list(dict.fromkeys(found))


_Where = list[tuple[str, int, str]]
#: a kernel under a row: its call site, or (PER_OP, op) for all per-op compiles of one op
_KernelKey = tuple[Any, str]


class _Tally:
    """Each timed event's ``dur`` under its lines and modules, as ``annotate`` places it."""

    def __init__(self, index: KernelIndex, attributor: attribution.Attributor, stacks: launches.Launches) -> None:
        self.index = index
        self.attributor = attributor
        self.stacks = stacks
        self.places = launches.per_op_places(index, stacks) if stacks.has_stacks else None
        self.lines: dict[tuple[str, str, int, str], _Cell] = {}
        self.modules: dict[tuple[str, str, int, str], _Cell] = {}
        self.total = self.unattributed = self.unplaced_us = 0.0
        self.attributed = self.per_op_events = self.unplaced = self.recorded = 0
        self.per_op_graphs: dict[str, set[int]] = {}  # op -> graph positions
        self._places: dict[Site, tuple[str, _Where, _Where]] = {}
        self._module_stacks: dict[int, dict[str, list[list[ModuleCall]]]] = {}  # per graph, read once

    def add(self, event: dict[str, Any]) -> None:
        dur = float(event["dur"])
        self.total += dur
        verdict = self.attributor.verdict(event)
        if verdict.status != "annotated" or verdict.site is None:
            self.unattributed += dur
            return
        self.attributed += 1
        site = verdict.site
        if site not in self._places:
            if site[0] not in self._module_stacks:
                self._module_stacks[site[0]] = read_module_stacks(self.index.graphs[site[0]].diagnostics)
            self._places[site] = _place(self.index, site, self._module_stacks[site[0]].get(site[1]))
        phase, own, callers = self._places[site]
        op = launches.per_op(self.index, site[0])
        launch = self.stacks.of(event) if self.places is not None else None
        user = launches.user_frames(launch[0]) if launch else []
        recorded = launches.recorded_site(self.stacks, self.places, event, op is not None)
        if recorded is not None:
            self.recorded += 1
            user = launches.with_recorded(user, recorded)
        if op is None:  # a whole graph: its lines are the compile's; the launching frames call into it
            self._count(dur, phase, own, [*callers, *(_launch_where(f) for f in user)], site, BY_COMPILE, recorded)
            return
        self.per_op_events += 1
        self.per_op_graphs.setdefault(op, set()).add(site[0])
        if recorded is not None:  # the line that made the call, and the functions around it
            around = [_launch_where(f) for f in user[:-1]]
            self._count(dur, phase, [_launch_where(recorded)], around, (PER_OP, op), BY_RECORDED, recorded)
            return
        if self.places is None:  # no stacks at all: the compile's line, and the summary says so
            self._count(dur, phase, own, callers, (PER_OP, op), BY_COMPILE)
            return
        placed = self.places.place(launch[0]) if launch else None
        if placed is None:  # stacks, but none with a user frame launching this one: no line claimed
            self.unplaced += 1
            self.unplaced_us += dur
            return
        inner, outer = placed
        self._count(dur, phase, [_launch_where(inner)], [_launch_where(f) for f in outer], (PER_OP, op), BY_LAUNCH)

    def _count(
        self,
        dur: float,
        phase: str,
        own: _Where,
        callers: _Where,
        kernel: _KernelKey,
        placed_by: str,
        recorded: launches.LaunchFrame | None = None,
    ) -> None:
        exact = _launch_where(recorded) if recorded is not None else None
        for where, table in ((own, self.lines), (callers, self.modules)):
            for file, line, code in dict.fromkeys(where):
                cell = table.setdefault((phase, file, line, code), _Cell())
                if file == MODULE_FILE:
                    cell.placed_by = BY_MODULE
                elif (file, line, code) == exact:
                    cell.placed_by = BY_RECORDED
                elif table is self.lines:
                    cell.placed_by = placed_by
                cell.calls += 1
                cell.total += dur
                per_kernel = cell.kernels.setdefault(kernel, [0, 0.0])
                per_kernel[0] += 1
                per_kernel[1] += dur


def _launch_where(frame: launches.LaunchFrame) -> tuple[str, int, str]:
    """A launch frame as a row's (file, line, code): the trace has no code line, so the code
    names the function (``in forward``), and the line is the one the profiler wrote."""
    return frame.file, frame.line, f"in {frame.function}"


def _place(
    index: KernelIndex, site: Site, module_stacks: list[list[ModuleCall]] | None
) -> tuple[str, list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """(phase, the site's own user lines, the user frames calling them) from its traces; where
    no frame is the user's, its own modules and the modules around them (``model.modules``,
    from the site's recorded ``module_stacks``)."""
    graph = index.graphs[site[0]]
    phase = "backward" if graph.graph == "backward" else "forward"
    traces = graph.stack_traces.get(site[1]) or []
    named = module_names(traces, module_stacks)
    if named is not None:
        return phase, module_rows(named.own), module_rows(named.enclosing)
    own: dict[tuple[str, int, str], None] = {}
    callers: dict[tuple[str, int, str], None] = {}
    for trace in traces:
        if not isinstance(trace, str):
            continue
        user = [(f.file, f.line, f.code.strip()) for f in stack_frames(trace) if is_user_frame(f.file)]
        if user:
            own[user[-1]] = None
            for frame in user[:-1]:
                callers[frame] = None
    return phase, list(own) or [(NO_LINE, 0, "")], [c for c in callers if c not in own]


def module_rows(modules: list[ModuleCall]) -> list[tuple[str, int, str]]:
    """Modules as a row's (file, line, code): MODULE_FILE, no line, the module's name."""
    return [(MODULE_FILE, 0, m.name) for m in modules]


def _rows(
    table: dict[tuple[str, str, int, str], _Cell],
    total: float,
    index: KernelIndex,
    joined: dict[str, dict[str, str]] | None,
    per_op_graphs: dict[str, set[int]],
) -> list[Row]:
    rows = []
    for (phase, file, line, code), cell in table.items():
        kernels = []
        for site, (calls, spent) in sorted(cell.kernels.items(), key=lambda kv: (-kv[1][1], str(kv[0]))):
            if site[0] == PER_OP:  # one entry per op kind, however many graphs compiled it
                graphs = sorted(per_op_graphs[site[1]])
                models = sorted({index.graphs[g].model for g in graphs})
                what = f"{', '.join(models)} per-op compile, {len(graphs)} graph{'s' if len(graphs) > 1 else ''}"
                kernels.append(KernelTime(site[1], PER_OP, what, int(calls), spent))
                continue
            graph = index.graphs[site[0]]
            kernel = split_key(site[1])[0] or site[1]
            bundle = graph.bundles.get(site[1]) or {}
            row = None if joined is None else _acelyzer_row(joined, kernel, bundle.get("folder"))
            kernels.append(KernelTime(kernel, site[1], graph.label, int(calls), spent, row))
        share = cell.total / total if total else 0.0
        rows.append(Row(phase, file, line, code, cell.calls, cell.total, share, kernels, cell.placed_by))
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
    """Every row with every kernel under it (``--summary --all``; the default text is
    ``runtime.time_screen``'s, which fits a screen)."""
    if summary.time_from is None:
        return no_timed_event(summary)
    out = header(summary)
    for title, rows in (("source line", summary.lines), ("module (the call into it)", summary.modules)):
        for phase in PHASES:
            chosen = [r for r in rows if r.phase == phase]
            if not chosen:
                continue
            out.append(f"{phase}, by {title}:")
            out.append(f"  {'share':>6}  {'total':>10}  {'calls':>6}  where")
            for row in chosen:
                out.append(f"  {row.share:6.1%}  {ms(row.total_us):>10}  {row.calls:>6}  {where(row)}")
                for kernel in row.kernels:
                    extra = f"  acelyzer: {_acelyzer_text(kernel.acelyzer)}" if kernel.acelyzer else ""
                    out.append(
                        f"  {'':>6}  {ms(kernel.total_us):>10}  {kernel.calls:>6}    {kernel_label(kernel)}"
                        f"  ({kernel.graph}){extra}"
                    )
    return "\n".join(out) + "\n"


def no_timed_event(summary: TimeSummary) -> str:
    return f"{summary.trace}: no timed kernel event (no device kernel, Cmpt Exec or CPU kernel event)\n"


def where(row: Row) -> str:
    """A row's place as the text prints it: ``file:line  code``, marked when recorded at launch;
    a module by its name, marked as one."""
    if row.placed_by == BY_MODULE:
        return module_text(row.code)
    text = NO_LINE if row.file == NO_LINE else f"{row.file}:{row.line}  {row.code}"
    return text + ("  [line recorded at launch]" if row.placed_by == BY_RECORDED else "")


def header(summary: TimeSummary, misnamed_shown: int | None = None) -> list[str]:
    """The lines every text form starts with: the totals, then what to know to read the rows;
    ``misnamed_shown``: how many misnamed OpSpecs to list (a real model has many; None: all)."""
    out = [
        f"kernel time per source line: {ms(summary.total_us)} in {summary.timed_events} {summary.time_from}, "
        f"{summary.attributed} placed in their call site"
        + (f", {ms(summary.unattributed_us)} not (see annotate)" if summary.unattributed_us else "")
    ]
    out.append("  (a kernel fused from several lines counts under each; a module counts what runs under its call)")
    out.extend(_per_op_notes(summary))
    out.extend(_launch_line_notes(summary))
    if summary.misnamed:
        out.append(
            f"  torch-spyre handles naming another op or line than their node: {len(summary.misnamed)}; the rows"
            f" follow each kernel's stack traces (Inductor's), not its handles ({ORIGIN_NODE_RULE})"
        )
        listed = summary.misnamed if misnamed_shown is None else summary.misnamed[:misnamed_shown]
        out.extend(f"    {line}" for line in listed)
        if len(listed) < len(summary.misnamed):
            out.append(f"    ... and {len(summary.misnamed) - len(listed)} more (--all lists them)")
    return out


def kernel_label(kernel: KernelTime) -> str:
    return kernel.kernel if kernel.call_site == PER_OP else kernel.call_site


def _per_op_notes(summary: TimeSummary) -> list[str]:
    """What the summary says of per-op kernels (torch-spyre's eager mode): where their lines
    come from, and what it could not place."""
    if not summary.per_op_events:
        return []
    if not summary.stacks:
        return [
            f"  {summary.per_op_events} events of per-op compiles, one op each: the trace has no Python stacks, so"
            " they are shown at their compile's line (the first call's only); profile with"
            f" {TAKE_STACKS} to place each launch at the user's function that launched it"
        ]
    notes = [
        f"  {summary.per_op_events} events of per-op compiles, one op each: each placed by its launch's Python stack,"
        " at the user's function that launched it (the profiler names a frame by its first line: 'in <function>')"
    ]
    if summary.unplaced:
        notes.append(
            f"  NOT PLACED: {summary.unplaced} per-op events ({ms(summary.unplaced_us)}): the trace's stacks"
            " hold no user frame launching them; counted in no line"
        )
    return notes


def _launch_line_notes(summary: TimeSummary) -> list[str]:
    """What the summary says of the lines launches were placed on: recorded at launch (exact),
    or, with stacks but none recorded, the profiler's functions only, and how to get lines."""
    if summary.recorded:
        return [
            f"  {summary.recorded} events placed at the line that made the call, recorded at launch by the"
            " tracked process (rows marked [line recorded at launch])"
        ]
    if summary.stacks and not summary.call_sites:
        return [f"  launches are placed at the user's function only (its first line): {TAKE_LINES}"]
    return []


def _acelyzer_text(row: dict[str, str]) -> str:
    return ", ".join(f"{k}={row[k]}" for k in ("Total Time", "Calls", "Mean") if k in row)


def ms(us: float) -> str:
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
