"""What ``run`` says when COMMAND has ended: the screen (``launch.run_summary``, per process),
then the pages (``viewer.pages``), as data the command prints.

What was made early of a process that had ended (``launch.early_end``) is not made again.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from spyre_provenance.launch import run_summary
from spyre_provenance.launch.early_end import ProcessEnd
from spyre_provenance.launch.run_summary import ProcessSummary
from spyre_provenance.logs import tlparse_render
from spyre_provenance.model.layout import ProcessLayouts
from spyre_provenance.viewer import pages as page_writer
from spyre_provenance.viewer.pages import Pages


class RunPages(msgspec.Struct):
    """A run's pages as ``run`` lists them: why tlparse's were not written (its lines come
    first), then (label, page) lines, a process's per-op pages folded one line per op kind."""

    problems: list[str]
    lines: list[tuple[str, str]]


def summaries(processes: ProcessLayouts, ended: dict[str, ProcessEnd]) -> list[ProcessSummary]:
    """Every tracked process's summary (``processes``: the run's, ``Layout.processes``), the
    ones made early kept."""
    return [
        ended[layout.out.name].summary if layout.out.name in ended else run_summary.summarize_process(process, layout)
        for process, layout in processes
    ]


def pages(
    processes: ProcessLayouts,
    into: Path,
    summaries: list[ProcessSummary],
    tlparse: str | None,
    ended: dict[str, ProcessEnd] | None = None,
) -> RunPages:
    """tlparse's pages (into ``into``, the run's ``Layout.pages_root``) and the viewer's, in
    that order. tlparse runs in processes of its own while this one writes the viewer pages
    (they read and write different files), so the program's user waits for the longer of the
    two, not both."""
    ended = ended or {}
    made = {name: end.pages for name, end in ended.items() if end.pages is not None}
    made_viewers = {name: end.viewer for name, end in ended.items() if end.viewer is not None}
    if tlparse is None:
        viewers = page_writer.write_run(processes, into, tlparse=None, made_viewers=made_viewers)
        problem = f"tlparse is not installed ({tlparse_render.INSTALL_HINT})"
        return RunPages([_not_written(problem)], fold_pages(viewers.labelled, summaries))
    with ThreadPoolExecutor(max_workers=1) as pool:
        graphs = pool.submit(page_writer.write_run, processes, into, tlparse=tlparse, viewer=False, made=made)
        viewers = page_writer.write_run(processes, into, tlparse=None, made_viewers=made_viewers)
        written: Pages = graphs.result()
    problems = [] if written.tlparse_problem is None else [_not_written(str(written.tlparse_problem))]
    return RunPages(problems, fold_pages([*written.labelled, *viewers.labelled], summaries))


def _not_written(why: str) -> str:
    return f"  tlparse pages: NOT WRITTEN: {why}"


def fold_pages(lines: list[tuple[str, str]], summaries: list[ProcessSummary]) -> list[tuple[str, str]]:
    """The pages' (label, page) lines, a process's per-op compiles' pages (tlparse writes one
    per graph) as one line per op kind where its first page stood: that page, and how many
    more of the op's graphs have one beside it. A page with a note keeps its own line."""
    op_of = {
        f"{s.folder.name} {compile_id}": (s.folder.name, op)
        for s in summaries
        for op, tally in s.per_op.items()
        for compile_id in tally.compile_ids
    }
    kept: list[tuple[str, str]] = []
    found: dict[tuple[str, str], list[str]] = {}
    for label, where in lines:
        group = op_of.get(" ".join(label.split(" ")[:2]))
        if group is None or "  (" in where:  # a ranked report's page, the viewer's, or a page with a note
            kept.append((label, where))
            continue
        if group not in found:
            kept.append(("\0", "\0".join(group)))  # where the op's line goes
        found.setdefault(group, []).append(where)
    return [_op_pages(line[1], found) if line[0] == "\0" else line for line in kept]


def _op_pages(key: str, found: dict[tuple[str, str], list[str]]) -> tuple[str, str]:
    owner, op = key.split("\0")
    where = found[(owner, op)]
    more = f" and {len(where) - 1} more beside it" if len(where) > 1 else ""
    return f"{owner} {op} per-op, {len(where)} graph(s)", f"{where[0]}{more}"
