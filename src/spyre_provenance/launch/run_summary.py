"""A whole run's verdict, process by process: what ``spyre-provenance run`` prints at the end
(and ``validate`` of a run folder).

A run's ``OUT`` holds one folder per tracked process (``Layout.processes``), each with its
TORCH_TRACE log. Everything here is read from those logs with the same judge ``compile``,
``validate`` and ``golden`` use (``coverage.judge_logged``), so the screen never claims
more than the artifacts hold: a graph is counted finished only when the log holds its code
and its diagnostics, and a compile the process started but never ended (it was killed or
interrupted in the middle) is reported unfinished, never complete.

Per-op compiles (torch-spyre's eager mode: ``links.per_op``) are folded into one line per op
kind, which says how many graphs and call sites it stands for and names every graph of it
whose coverage is not complete; which graphs are per-op is ``runtime.lookup.logged_per_op``'s
rule, below this layer.

Pure: reads files, imports no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from spyre_provenance.base.errors import UnusableInput, Verdict
from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.folders import ProcessFolder
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.records import CACHE_STATES
from spyre_provenance.runtime.lookup import logged_per_op
from spyre_provenance.validate import coverage

#: The screen's word for a process's verdict (``ProcessSummary.verdict``, the compile judge's
#: record, ``base.errors.Verdict``): ok is complete; found wanting is said by the kind of its
#: first reason, the worst first
COMPLETE = "complete"
UNFINISHED = "unfinished"  # a compile or graph the process never finished
PARTIAL = "partial"  # a finished graph's coverage is not complete, or the log is damaged
NO_GRAPH = "no graph"  # the process logged no compiled graph

#: what tracking records, said where a run's compiles went to another backend
RECORDED = (
    "tracking records torch.compile's compiles through Inductor"
    ' (backend "inductor", the default; torch-spyre\'s compile through it too)'
)


class Tally(msgspec.Struct):
    """Finished graphs counted together: a process's, or one op kind's per-op compiles."""

    graphs: int = 0  # finished graphs: code and diagnostics logged
    complete_graphs: int = 0  # of them, those whose coverage is complete
    call_sites: int = 0  # kernel call sites of the finished graphs
    linked_call_sites: int = 0  # of them, those the mapping links (tlparse highlights them)
    incomplete: list[str] = msgspec.field(default_factory=list)  # compile ids whose coverage is not
    compile_ids: list[str] = msgspec.field(default_factory=list)  # every graph counted, as tlparse names them

    def add(self, compile_id: str, verdict: coverage.GraphCoverage) -> None:
        self.compile_ids.append(compile_id)
        self.graphs += 1
        self.complete_graphs += verdict.complete
        self.call_sites += verdict.counts.call_sites
        self.linked_call_sites += verdict.counts.linked_call_sites
        if not verdict.complete:
            self.incomplete.append(compile_id)


class ProcessSummary(msgspec.Struct):
    """One tracked process of a run, as its log says."""

    process: ProcessFolder
    folder: Path
    graphs: int = 0  # finished graphs: code and diagnostics logged
    complete_graphs: int = 0  # of them, those whose coverage is complete
    call_sites: int = 0  # kernel call sites of the finished graphs
    linked_call_sites: int = 0  # of them, those the mapping links (tlparse highlights them)
    #: compile id of each finished graph that came from an Inductor cache entry, and how
    #: (diagnostics ``cache``: cached, cached without provenance)
    cached: dict[str, str] = msgspec.field(default_factory=dict)
    unfinished: list[str] = msgspec.field(default_factory=list)  # compile ids, as tlparse names them
    #: compile ids of graphs Inductor finished (their code logged) with no diagnostics: the
    #: hook never saw them, so their provenance was not recorded; not unfinished
    unrecorded: list[str] = msgspec.field(default_factory=list)
    failed: list[str] = msgspec.field(default_factory=list)  # compiles torch records as failed
    problems: list[str] = msgspec.field(default_factory=list)  # a log that cannot be read
    #: ATen op -> its per-op compiles among the finished graphs (counted in the fields above too)
    per_op: dict[str, Tally] = msgspec.field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        """The process's verdict, in the record the compile's judge gives (``Verdict``): ok,
        or found wanting with one reason per thing its log lacks."""
        return Verdict.judge(wanting=[reason for _, reason in self._wanting()])

    @property
    def word(self) -> str:
        """What the screen says of ``verdict``: complete when ok, else its first reason's kind."""
        wanting = self._wanting()
        return wanting[0][0] if wanting else COMPLETE

    def _wanting(self) -> list[tuple[str, str]]:
        """(kind, reason) of everything the process's log lacks, the worst kind first."""
        found = [(UNFINISHED, f"compile {cid} {_UNFINISHED}") for cid in self.unfinished]
        found += [(PARTIAL, problem) for problem in self.problems]
        found += [(PARTIAL, f"compile {cid} {_UNRECORDED}") for cid in self.unrecorded]
        if self.complete_graphs < self.graphs:
            found.append((PARTIAL, f"{self.graphs - self.complete_graphs} graph(s) with incomplete coverage"))
        if not found and not self.graphs:
            found.append((NO_GRAPH, "no compiled graph logged"))
        return found


_UNFINISHED = "UNFINISHED: the process stopped in the middle of it"
_UNRECORDED = "NOT RECORDED: compiled, but the hook saw none of it"


def summarize_run(out: Path) -> list[ProcessSummary]:
    """Every tracked process of the run in ``out``, ranks first (``Layout.processes``)."""
    return [summarize_process(process, layout) for process, layout in Layout(out).processes()]


def summarize_process(process: ProcessFolder, layout: Layout) -> ProcessSummary:
    summary = ProcessSummary(process, layout.out)
    for log in layout.trace_logs():
        try:
            _count_log(summary, log)
        except (UnusableInput, OSError) as exc:
            summary.problems.append(f"{log}: {exc}")
    return summary


def _count_log(summary: ProcessSummary, log: Path) -> None:
    unfinished = tracelog.unfinished_compiles(log)
    for graph in read_log_graphs(log):
        if graph.output_code is not None and graph.diagnostics is None:
            if graph.compile_id not in unfinished:  # finished, but nothing of the hook's logged
                summary.unrecorded.append(graph.compile_id)
            continue
        if graph.output_code is None or graph.diagnostics is None:
            # the post-grad graph was logged, its code never was
            if graph.compile_id not in unfinished:
                unfinished.append(graph.compile_id)
            continue
        verdict = coverage.judge_logged(graph)
        summary.graphs += 1
        summary.complete_graphs += verdict.complete
        summary.call_sites += verdict.counts.call_sites
        summary.linked_call_sites += verdict.counts.linked_call_sites
        cache = graph.diagnostics.get("cache", CACHE_STATES[0])
        if cache != CACHE_STATES[0]:
            summary.cached[graph.compile_id] = str(cache)
        op = logged_per_op(graph)
        if op is not None:
            summary.per_op.setdefault(op, Tally()).add(graph.compile_id, verdict)
    summary.unfinished += unfinished
    summary.failed += [str(failure) for failure in tracelog.compile_failures(log)]


def render(
    summaries: list[ProcessSummary], out: Path, other_backends: Mapping[str, list[str]] | None = None
) -> list[str]:
    """The run's screen: one line per process (what it is, graphs, call sites linked,
    verdict), then what is unfinished or failed; never more than was counted.
    ``other_backends``: the processes (by folder name) whose compiles all went to backends
    tracking does not record, and their names."""
    other = dict(other_backends or {})
    if not summaries:
        left = f"nothing in {out}" if out.is_dir() else f"no folder left at {out}"
        if other:
            backends, shown = _other_backends(other)
            return [
                f"spyre-provenance run: nothing recorded: {RECORDED}; this run compiled with {backends} instead"
                f" ({shown}); {left}"
            ]
        return [f"spyre-provenance run: no process compiled anything tracking could record; {left}"]
    lines = [f"spyre-provenance run: {len(summaries)} process(es) compiled, in {out}"]
    if other:
        backends, shown = _other_backends(other)
        lines.append(f"  not recorded: {shown} compiled with {backends} only; {RECORDED}")
    width = max(len(s.folder.name) for s in summaries)
    for s in summaries:
        lines.append(
            f"  {s.folder.name.ljust(width)}  {s.graphs} graph(s){_from_cache(s)}, {s.linked_call_sites}/{s.call_sites}"
            f" kernel call site(s) linked: {s.word}"
        )
        lines += [
            f"    compile {cid} CACHED WITHOUT PROVENANCE: its Inductor cache entry held none"
            for cid, how in s.cached.items()
            if how == CACHE_STATES[2]
        ]
        lines += [f"    compile {cid} {_UNFINISHED}" for cid in s.unfinished]
        lines += [f"    compile {cid} {_UNRECORDED}" for cid in s.unrecorded]
        lines += [f"    {failure}" for failure in s.failed]
        lines += [f"    {problem}" for problem in s.problems]
        lines += per_op_lines(s)
        if s.complete_graphs < s.graphs:
            lines.append(f"    {s.graphs - s.complete_graphs} graph(s) with incomplete coverage: validate {s.folder}")
    return lines


def _other_backends(other: dict[str, list[str]]) -> tuple[str, str]:
    """The backends (``aot_eager and my_backend``) and the processes (``ae_pid12``) of
    ``other``, as said on the screen."""
    names = sorted({name for names in other.values() for name in names})
    backends = " and ".join(names) or "a backend other than Inductor"
    shown = ", ".join(sorted(other)[:3]) + (f" and {len(other) - 3} more" if len(other) > 3 else "")
    return backends, shown


def _from_cache(s: ProcessSummary) -> str:
    """How many of the process's graphs a cache entry gave, when any did."""
    return f" ({len(s.cached)} from Inductor's cache)" if s.cached else ""


def per_op_lines(s: ProcessSummary) -> list[str]:
    """One line per op kind of the process's per-op compiles (graphs, call sites linked, its
    verdict, and each graph of it whose coverage is not complete), then the other graphs' line;
    nothing when no graph is a per-op compile."""
    if not s.per_op:
        return []
    folded = sum(t.graphs for t in s.per_op.values())
    lines = [f"    per-op compiles (eager mode): {folded} graph(s) of {len(s.per_op)} op(s), one line per op"]
    width = max(map(len, s.per_op))
    for op, t in sorted(s.per_op.items()):
        verdict = (
            COMPLETE
            if not t.incomplete
            else f"{PARTIAL}, {len(t.incomplete)} with incomplete coverage ({', '.join(t.incomplete)})"
        )
        lines.append(
            f"      {op.ljust(width)}  {t.graphs} graph(s), {t.linked_call_sites}/{t.call_sites}"
            f" kernel call site(s) linked: {verdict}"
        )
    others = Tally(
        graphs=s.graphs - folded,
        call_sites=s.call_sites - sum(t.call_sites for t in s.per_op.values()),
        linked_call_sites=s.linked_call_sites - sum(t.linked_call_sites for t in s.per_op.values()),
    )
    lines.append(
        f"    other graphs: {others.graphs} graph(s), {others.linked_call_sites}/{others.call_sites}"
        " kernel call site(s) linked"
    )
    return lines
