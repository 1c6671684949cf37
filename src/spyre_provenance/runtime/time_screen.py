"""``annotate --summary``'s default text: a ``TimeSummary`` on one screen (``--all`` prints
``time_summary.render_text``, every row; JSON and CSV are always complete).

On a real model one kernel is often fused from many lines, and per line it counts in full
under each of them (``time_summary``): listed per line, it fills every top row with the same
time (FMS's llama ``micro``: 20 rows at 97.3%, 524 lines of text). So the screen shows

- the **heaviest lines**, each once, with its *exclusive* time (kernels it alone made; a
  per-op compile's launches from that line) apart from its time in kernels *fused* with other
  lines, and how many kernels. Lines that share exactly the same fused kernels and nothing
  else cannot be told apart by time: they are one row naming the first few and a count;
- the **heaviest kernels**, each once, with its time, calls and the lines fused into it
  (a per-op compile's op: the lines that launched it), the first few named, then a count;
- the **heaviest module calls**, each once, without their kernels;

each list capped over both phases (the heaviest rows, whichever phase they are in), printed
per phase, and a last line saying what was left out. About 60 lines in all. Ties are broken
by name, so one summary prints one text. Pure: no torch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from spyre_provenance.runtime.time_summary import (
    BY_MODULE,
    NO_LINE,
    PER_OP,
    PHASES,
    Row,
    TimeSummary,
    header,
    kernel_label,
    ms,
    no_timed_event,
    where,
)

#: rows per list, over both phases: with the header these keep the text near 60 lines
LINES_SHOWN, KERNELS_SHOWN, MODULES_SHOWN = 20, 12, 8
#: lines a grouped row or a kernel names before it gives a count
NAMED = 3
#: misnamed torch-spyre handles the header lists (one line each; a real model has a few per kernel)
MISNAMED_SHOWN = 3


@dataclass
class LineEntry:
    """One row of the heaviest lines: one source line, or lines fused into the same kernels."""

    phase: str
    rows: list[Row]  # one, or the lines sharing exactly the same fused kernels
    total_us: float
    exclusive_us: float
    kernels: int


@dataclass
class KernelEntry:
    """One row of the heaviest kernels: a call site (or a per-op compile's op) in one phase."""

    phase: str
    label: str
    graph: str
    calls: int = 0
    total_us: float = 0.0
    per_op: bool = False
    lines: list[Row] = field(default_factory=list)


def _identity(phase: str, kernel_graph: str, call_site: str, kernel: str) -> tuple[str, str, str, str]:
    return phase, kernel_graph, call_site, kernel


def kernel_entries(summary: TimeSummary) -> list[KernelEntry]:
    """Each kernel once, heaviest first, with the lines it counts under."""
    found: dict[tuple[str, str, str, str], KernelEntry] = {}
    for row in summary.lines:
        for k in row.kernels:
            key = _identity(row.phase, k.graph, k.call_site, k.kernel)
            entry = found.setdefault(
                key, KernelEntry(row.phase, kernel_label(k), k.graph, per_op=k.call_site == PER_OP)
            )
            if entry.per_op:  # a per-op event counts under the one line that launched it: lines add up
                entry.calls += k.calls
                entry.total_us += k.total_us
            else:  # a fused kernel's events count in full under each of its lines: the same figures
                entry.calls = max(entry.calls, k.calls)
                entry.total_us = max(entry.total_us, k.total_us)
            entry.lines.append(row)
    entries = list(found.values())
    for entry in entries:  # named in line order, whatever order the summary's rows came in
        entry.lines.sort(key=lambda r: (r.file, r.line, r.code))
    entries.sort(key=lambda e: (-e.total_us, e.phase, e.label, e.graph))
    return entries


def line_entries(summary: TimeSummary) -> list[LineEntry]:
    """Each line once, heaviest first; lines with the same fused kernels and nothing else, one entry."""
    lines_of: dict[tuple[str, str, str, str], int] = {}
    for row in summary.lines:
        for k in row.kernels:
            key = _identity(row.phase, k.graph, k.call_site, k.kernel)
            lines_of[key] = lines_of.get(key, 0) + 1
    groups: dict[tuple[str, frozenset[tuple[str, str, str, str]]], LineEntry] = {}
    entries: list[LineEntry] = []
    for row in summary.lines:
        keys = [_identity(row.phase, k.graph, k.call_site, k.kernel) for k in row.kernels]
        # a per-op kernel's time under a line is that line's own launches: exclusive
        exclusive = sum(
            k.total_us for k, key in zip(row.kernels, keys, strict=True) if k.call_site == PER_OP or lines_of[key] == 1
        )
        if exclusive or not keys:
            entries.append(LineEntry(row.phase, [row], row.total_us, exclusive, len(keys)))
            continue
        group = groups.get((row.phase, frozenset(keys)))
        if group is None:
            groups[(row.phase, frozenset(keys))] = group = LineEntry(row.phase, [], row.total_us, 0.0, len(keys))
            entries.append(group)
        group.rows.append(row)
    for entry in entries:  # named in line order, whatever order the summary's rows came in
        entry.rows.sort(key=lambda r: (r.file, r.line, r.code))
    entries.sort(key=lambda e: (-e.total_us, e.phase, e.rows[0].file, e.rows[0].line))
    return entries


def _short(row: Row) -> str:
    """A line in a list of lines: its file's name and line number (the full path is in --all)."""
    if row.placed_by == BY_MODULE:
        return f"module {row.code}"
    return NO_LINE if row.file == NO_LINE else f"{os.path.basename(row.file)}:{row.line}"


def _places(rows: list[Row]) -> str:
    """What rows are called together: lines, or modules where no frame is the user's."""
    modules = sum(r.placed_by == BY_MODULE for r in rows)
    return "modules" if modules == len(rows) else "lines" if not modules else "lines and modules"


def _named(rows: list[Row]) -> str:
    shown = ", ".join(_short(r) for r in rows[:NAMED])
    return shown + (f" +{len(rows) - NAMED} more" if len(rows) > NAMED else "")


def _line_text(entry: LineEntry, total: float) -> str:
    share = entry.total_us / total if total else 0.0
    fused = entry.total_us - entry.exclusive_us
    place = (
        where(entry.rows[0])
        if len(entry.rows) == 1
        else f"{len(entry.rows)} {_places(entry.rows)}, same kernels: {_named(entry.rows)}"
    )
    return f"  {share:6.1%}  {ms(entry.total_us):>10}  {ms(entry.exclusive_us):>10}  {ms(fused):>10}  {entry.kernels:>7}  {place}"


def _kernel_text(entry: KernelEntry, total: float) -> str:
    share = entry.total_us / total if total else 0.0
    count = len(entry.lines)
    if entry.per_op:
        lines = f"launched from {count} line{'s' if count > 1 else ''}: {_named(entry.lines)}"
    elif count > 1:
        lines = f"fused from {count} {_places(entry.lines)}: {_named(entry.lines)}"
    else:
        lines = f"from {_named(entry.lines)}"
    return f"  {share:6.1%}  {ms(entry.total_us):>10}  {entry.calls:>6}  {entry.label}  ({entry.graph})  {lines}"


def _module_text(row: Row) -> str:
    return f"  {row.share:6.1%}  {ms(row.total_us):>10}  {row.calls:>6}  {where(row)}"


#: each list: its title, its columns, and what its rows are called in the last line
_LINES = (
    "heaviest source lines (exclusive: kernels only this line made; fused: kernels it shares with other lines)",
    f"  {'share':>6}  {'total':>10}  {'exclusive':>10}  {'fused':>10}  {'kernels':>7}  where",
)
_KERNELS = (
    "heaviest kernels (each once, with the lines fused into it)",
    f"  {'share':>6}  {'total':>10}  {'calls':>6}  kernel  (graph)  lines",
)
_MODULES = ("heaviest module calls (the call into it)", f"  {'share':>6}  {'total':>10}  {'calls':>6}  where")


def render(summary: TimeSummary) -> str:
    """The summary on one screen; ``time_summary.render_text`` prints every row."""
    if summary.time_from is None:
        return no_timed_event(summary)
    total = summary.total_us
    lines, kernels = line_entries(summary), kernel_entries(summary)
    modules = sorted(summary.modules, key=lambda r: (-r.total_us, r.phase, r.file, r.line))
    out = header(summary, MISNAMED_SHOWN)
    out += _table(_LINES, [(e.phase, _line_text(e, total)) for e in lines[:LINES_SHOWN]])
    out += _table(_KERNELS, [(e.phase, _kernel_text(e, total)) for e in kernels[:KERNELS_SHOWN]])
    out += _table(_MODULES, [(r.phase, _module_text(r)) for r in modules[:MODULES_SHOWN]])
    left = [
        (sum(len(e.rows) for e in lines[LINES_SHOWN:]), len(summary.lines), "source lines"),
        (len(kernels) - KERNELS_SHOWN, len(kernels), "kernels"),
        (len(modules) - MODULES_SHOWN, len(modules), "module calls"),
    ]
    left_out = [f"{n} of {of} {what}" for n, of, what in left if n > 0]
    if left_out:
        out.append(f"not shown: {', '.join(left_out)}; --all lists every row (--format json and csv always do)")
    return "\n".join(out) + "\n"


def _table(title: tuple[str, str], rows: list[tuple[str, str]]) -> list[str]:
    """``rows`` (already the heaviest, over both phases) printed per phase under ``title``."""
    out: list[str] = []
    for phase in PHASES:
        chosen = [text for row_phase, text in rows if row_phase == phase]
        if chosen:
            out += [f"{phase}, {title[0]}:", title[1], *chosen]
    return out
