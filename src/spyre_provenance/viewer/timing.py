"""A profiled run's Chrome trace on the page: time per call site, per source line and per
element, all from ``runtime.time_summary`` (``annotate --summary``'s), so one rule says
which events are timed, where each ran and which lines it counts under:

- which events: torch-spyre's device kernel events when the trace has any, else the device
  timeline's, else the CPU kernel events (never CPU launch spans beside device events);
- where each ran: ``runtime.attribution`` (torch-spyre's kernel key, its ``debug_handles``,
  Inductor's ``graph_<i>_`` prefix, the compiled region around the event); an event it
  cannot place in one call site (ambiguous, another build, no such kernel) is counted,
  never attributed;
- per call site: its events' time and count; per source line: the time of the call sites
  whose stack traces end at that line (the innermost user frame), per graph; per element:
  the time of the call sites the click lights or marks as containers (the page adds them);
- per line a tracked process recorded at launch (``model.call_sites``: the summary's rows
  ``placed_by`` ``recorded at launch``, the line that made a call into a compiled graph or a
  per-op kernel's launch): the time of the kernels launched from it, on each graph they ran
  in (a per-op compile's: the op's, over all its graphs, as the summary counts it), the line
  added to the page where the compile did not record it, and lighting those call sites.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_summary
from spyre_provenance.viewer.module_names import module_times
from spyre_provenance.viewer.relation import ENTRY

_CALLS = ENTRY.index("call")  # where a line's entry in ``lights`` lists the call sites it lights


class Timing:
    """A trace to place on an out folder's call sites (``apply``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.result: time_summary.TimeSummary | None = None

    def apply(
        self,
        graphs: list[dict[str, Any]],
        out: Path,
        line_at: Mapping[tuple[str, int], int],
        line_of: Callable[[str, int], int] | None = None,
    ) -> None:
        """Add ``time_us`` (total duration) and ``calls`` (events) to each call site of ``graphs`` (the
        viewer's, read from ``out``) its events ran in, and ``line_time_us`` (line position -> us) and
        ``module_time_us`` (module position -> us, ``viewer.module_names``) to each graph; with ``line_of``
        (a line's position in the document, added if new), ``launched_time_us`` (``recorded_lines``). Raises
        UnusableInput when the trace is no trace or times no kernel."""
        try:
            index = kernel_index.build([out])
        except UnusableInput:  # graph folders without one call site: nothing to place events in
            index = kernel_index.KernelIndex([])
        self.result = result = time_summary.summarize(self.path, index)
        if result.timed_events == 0:
            raise UnusableInput(
                self.path, f"no kernel event in traceEvents: nothing to time ({', '.join(time_summary.TIME_SOURCES)})"
            )
        by_label = {_unranked(g): g for g in graphs}
        sites: dict[tuple[str, str], time_summary.KernelTime] = {}
        for row in result.lines:
            for kernel in row.kernels:
                sites.setdefault((kernel.graph, kernel.call_site), kernel)
                g = by_label.get(kernel.graph)
                at = line_at.get((row.file, row.line))
                if g is not None and at is not None:
                    times = g.setdefault("line_time_us", {})
                    times[str(at)] = times.get(str(at), 0.0) + kernel.total_us
        for g in graphs:
            module_times(g, [*result.lines, *result.modules], _unranked(g))
            for call in g["calls"]:
                timed = sites.get((_unranked(g), call["key"]))
                if timed is not None:
                    call["time_us"], call["calls"] = timed.total_us, timed.calls
        if line_of is not None:
            recorded_lines(graphs, [*result.lines, *result.modules], line_of)

    def summary(self) -> dict[str, Any]:
        result = self.result
        assert result is not None, "apply first"
        return {
            "path": self.path,
            "time_from": result.time_from,
            "matched_events": result.attributed,
            "total_us": result.total_us - result.unattributed_us,
            "unmatched_events": result.timed_events - result.attributed,
            "unmatched_us": result.unattributed_us,
        }


def recorded_lines(graphs: list[dict[str, Any]], rows: list[Any], line_of: Callable[[str, int], int]) -> None:
    """Give each graph ``launched_time_us`` (line position -> us): the summary's rows recorded at launch, by
    the graphs of their kernels (a whole graph's by its label, a per-op entry's by its op), and
    light those call sites from the line (``lights``)."""
    by_label = {_unranked(g): g for g in graphs}
    for row in rows:
        if row.placed_by != time_summary.BY_RECORDED:
            continue
        at = str(line_of(row.file, row.line))
        for kernel in row.kernels:
            if kernel.call_site == time_summary.PER_OP:
                found = [(g, list(range(len(g["calls"])))) for g in graphs if g.get("per_op") == kernel.kernel]
            else:
                g = by_label.get(kernel.graph)
                found = (
                    [] if g is None else [(g, [c for c, x in enumerate(g["calls"]) if x["key"] == kernel.call_site])]
                )
            for g, calls in found:
                times = g.setdefault("launched_time_us", {})
                times[at] = times.get(at, 0.0) + kernel.total_us
                lit = g["lights"]["line"].setdefault(at, [])
                lit.extend([] for _ in range(_CALLS + 1 - len(lit)))
                lit[_CALLS] = sorted(set(lit[_CALLS]) | set(calls))


def _unranked(g: dict[str, Any]) -> str:
    """The graph's label as the index names it (``<model> <compile id> <kind>``, no rank)."""
    return f"{g['model']} {g['compile_id']} {g['kind']}"


def read(path: str | os.PathLike[str]) -> Timing:
    if not Path(path).is_file():
        raise UnusableInput(str(path), "no such file (--trace names a profiled run's Chrome trace)")
    return Timing(path)
