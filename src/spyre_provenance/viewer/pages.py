"""The one writer of a folder's pages: tlparse's provenance pages, the viewer's page and
``compile --profile``'s annotated trace, as typed results (where each went, or why none was
written) that every door and command prints from.

``write`` serves every folder that has pages: a ``compile --out`` folder (or a trace folder,
or a log), a ``compile --ranks N`` folder (tlparse's multi-rank report) and a ``run`` folder,
whose processes it lists once and hands to ``write_run`` (one multi-rank report per program
torchrun ran, the pages of every other process, each process's viewer page). ``compile``,
``compile --ranks``, ``open`` and ``run``'s early end call ``write``; ``run``'s end, which has
listed its processes already, calls ``write_run``; none reads a printed line back.

Pure: no torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.tlparse_render import GraphPage
from spyre_provenance.model import folders
from spyre_provenance.model.layout import Layout, ProcessLayouts

if TYPE_CHECKING:
    from spyre_provenance.runtime.annotate import AnnotateSummary


class Page(msgspec.Struct, frozen=True):
    """One page: where it was written, or why none was (``problem``)."""

    path: Path | None
    problem: str | None = None

    @property
    def shown(self) -> str:
        """What a line listing the page says: its path, or that it was not written and why."""
        return str(self.path) if self.path is not None else f"NOT WRITTEN: {self.problem}"


class Profiled(msgspec.Struct, frozen=True):
    """``compile --profile``'s trace, annotated: where, with what annotating it found
    (``summary``), or why it was not written (``problem``)."""

    path: Path | None
    problem: str | None = None
    summary: AnnotateSummary | None = None

    @property
    def lines(self) -> list[str]:
        """What ``compile`` prints of it, last."""
        if self.summary is None:
            return [f"  PROFILE NOT WRITTEN: {self.problem}"]
        lines = [f"  profile: {self.summary.line()}"]
        if self.summary.annotated != self.summary.kernel_events:
            lines.append("  PROFILE INCOMPLETE: kernel events without provenance (listed above)")
        return lines


class ProfileRun(NamedTuple):
    """A compile's model rerun under torch.profiler (``compile.profile``): its raw trace, where
    the annotated one goes, the log it is annotated from, and why the rerun failed, if it did."""

    raw: Path
    annotated: Path
    log: Path
    failed: str | None


class Pages(msgspec.Struct):
    """What a folder's pages came to. Every page is owned by its log's folder: ``""`` for a
    compile's own folder, a model's name of ``compile --ranks``, a process folder's name or a
    program's (its ranks' report) of ``run``."""

    graphs: list[tuple[str, GraphPage]] = msgspec.field(default_factory=list)  # tlparse's, a page per graph
    landings: list[tuple[str, Path]] = msgspec.field(default_factory=list)  # multi-rank reports' landing pages
    tlparse_problem: UnusableInput | None = None  # why tlparse wrote no pages (where, what)
    viewers: list[tuple[str, Page]] = msgspec.field(default_factory=list)  # the viewer's page of each folder
    profile: Profiled | None = None  # with ``profile``; None: the run never came to profiling

    @property
    def labelled(self) -> list[tuple[str, str]]:
        """The pages as (label, page) lines, each owner first: the multi-rank landing pages,
        every graph's page (with its note), each viewer page."""
        return [
            *((_owned(stem, "ranks"), str(landing)) for stem, landing in self.landings),
            *((_owned(owner, page.label), f"{page.page}{page.note}") for owner, page in self.graphs),
            *((_owned(owner, "viewer"), page.shown) for owner, page in self.viewers),
        ]

    @property
    def viewer(self) -> Page | None:
        """The one viewer page of a compile's or a ranks folder, if written or tried."""
        return self.viewers[0][1] if self.viewers else None


def _owned(owner: str, label: str) -> str:
    return f"{owner} {label}" if owner else label


def write(
    folder: Path,
    into: Path,
    *,
    tlparse: str | None,
    viewer: bool = True,
    logs: Sequence[Path] | None = None,
    rank_logs: Mapping[str, dict[int, Path]] | None = None,
    own_places: bool = False,
    profile: ProfileRun | None = None,
    refuse: bool = False,
) -> Pages:
    """The pages of ``folder``, tlparse's into ``into``. ``tlparse``: its binary (None: no
    tlparse pages); ``viewer``: write the viewer's page(s) too. By the folder's shape:

    - a ``run`` folder: ``write_run`` of its processes;
    - a ``compile --ranks`` folder (or ``rank_logs``, by model): one multi-rank report per
      model, into ``into`` (``into/<model>`` for several);
    - else a compile's folder, a trace folder or a log: the pages of each of ``logs``
      (default: the logs found there), into ``into``; several logs, or ``own_places``
      (open's default) for a compile's log, each into its compile's ``Layout.pages`` when it
      has one, else ``into/<log stem>``.

    The profile goes first, then tlparse's pages, then the viewer's (which shows every file
    written). tlparse's failure is ``tlparse_problem``; with ``refuse`` (``open``'s) it is
    raised instead, before a viewer page is written."""
    processes = Layout(folder).processes() if logs is None and rank_logs is None and folder.is_dir() else []
    if processes:
        return write_run(processes, into, tlparse=tlparse, viewer=viewer, refuse=refuse)
    pages = Pages(profile=_profile(profile) if profile is not None else None)
    with _tlparse_failure(pages, refuse):
        if rank_logs is not None:
            _ranks_folder(pages, folder, into, tlparse, rank_logs)
        elif logs is not None:
            _logs(pages, list(logs), into, tlparse, own_places)
        elif models := tlparse_render.find_rank_logs(folder):
            _ranks_folder(pages, folder, into, tlparse, models)
        else:
            _logs(pages, tlparse_render.find_logs(folder), into, tlparse, own_places)
    if viewer:
        pages.viewers = [("", write_viewer(viewer_folder(folder)))]
    return pages


def write_run(
    processes: ProcessLayouts,
    into: Path,
    *,
    tlparse: str | None,
    viewer: bool = True,
    made: Mapping[str, list[GraphPage]] | None = None,
    made_viewers: Mapping[str, Page] | None = None,
    refuse: bool = False,
) -> Pages:
    """The pages of a ``run`` folder's ``processes`` (``Layout.processes``, listed once by the
    caller): one multi-rank report per program torchrun ran and the pages of every other
    process, into ``into``; each process's viewer page. ``made`` and ``made_viewers``: the
    pages already made of a process (by folder name), kept. tlparse's failure as ``write``'s."""
    pages = Pages()
    with _tlparse_failure(pages, refuse):
        _run_folder(pages, processes, into, tlparse, made or {})
    if viewer:
        pages.viewers = _viewers(processes, made_viewers or {})
    return pages


@contextlib.contextmanager
def _tlparse_failure(pages: Pages, refuse: bool) -> Iterator[None]:
    """tlparse's failure is the pages' ``tlparse_problem`` (the viewer's page is still
    written); with ``refuse`` (``open``'s) it is raised."""
    try:
        yield
    except UnusableInput as exc:
        if refuse:
            raise
        pages.tlparse_problem = exc


def viewer_folder(target: Path) -> Path:
    """The folder whose viewer page stands beside ``target``'s tlparse pages: a compile
    folder's own, for its log or trace folder. A compile folder the user named ``trace``
    (``compile --out runs/trace``) is its own: it holds graph folders."""
    if target.is_dir() and any(target.glob(f"{folders.GRAPH_PREFIX}*")):
        return target
    owner = Layout.of_log(target) if target.is_file() else Layout.of_trace_dir(target)
    return owner.out if owner is not None else target


def write_viewer(folder: Path) -> Page:
    """The viewer's page of ``folder``, written now; a folder the page cannot be made of is
    said, never a failure of the command that printed it."""
    from spyre_provenance.viewer.page import write_page

    try:
        target, _ = write_page(folder)
    except UnusableInput as exc:
        return Page(None, str(exc))
    return Page(target)


def _run_folder(
    pages: Pages,
    processes: ProcessLayouts,
    into: Path,
    tlparse: str | None,
    made: Mapping[str, list[GraphPage]],
) -> None:
    if tlparse is None or not processes:
        return
    where = processes[0][1].out.parent  # the run's folder, which tlparse's failure names
    ranked, others = tlparse_render.process_logs(processes)
    for stem, logs in sorted(ranked.items()):
        report = _all_ranks(tlparse, logs, into / stem, where)
        pages.landings.append((stem, report.landing))
        pages.graphs += [(stem, page) for page in report.pages]
    for name, log in others:
        early = made.get(name)
        found = early if early is not None else _rendered(tlparse, log, into / name, where)
        pages.graphs += [(name, page) for page in found]


def _logs(pages: Pages, logs: list[Path], into: Path, tlparse: str | None, own_places: bool) -> None:
    if tlparse is None or not logs:
        return
    per_log = len(logs) > 1 or (own_places and Layout.of_log(logs[0]) is not None)
    for log in logs:
        owner = Layout.of_log(log, log.stem)
        where = (owner.pages if own_places and owner is not None else into / log.stem) if per_log else into
        pages.graphs += [("", page) for page in _rendered(tlparse, log, where, log)]


def _ranks_folder(
    pages: Pages, folder: Path, into: Path, tlparse: str | None, models: Mapping[str, dict[int, Path]]
) -> None:
    if tlparse is None or not models:
        return
    for stem, logs in models.items():
        report = _all_ranks(tlparse, logs, into if len(models) == 1 else into / stem, folder)
        pages.landings.append((stem, report.landing))
        pages.graphs += [(stem, page) for page in report.pages]


def _viewers(processes: ProcessLayouts, made: Mapping[str, Page]) -> list[tuple[str, Page]]:
    """Each process's viewer page of a run folder, the ones made early kept."""
    found = []
    for _, layout in processes:
        early = made.get(layout.out.name)
        found.append((layout.out.name, early if early is not None else write_viewer(layout.out)))
    return found


def _rendered(tlparse: str, log: Path, into: Path, where: Path) -> list[GraphPage]:
    try:
        return tlparse_render.render_pages(tlparse, log, into)
    except tlparse_render.TlparseError as exc:
        raise UnusableInput(str(where), str(exc)) from None


def _all_ranks(tlparse: str, logs: dict[int, Path], into: Path, where: Path) -> tlparse_render.MultiRankReport:
    try:
        return tlparse_render.render_all_ranks(tlparse, logs, into)
    except tlparse_render.TlparseError as exc:
        raise UnusableInput(str(where), str(exc)) from None


def _profile(run: ProfileRun) -> Profiled | None:
    """The raw trace annotated from the compile's log (``runtime.annotate``), then removed."""
    if run.failed is not None:
        return Profiled(None, f"the profiled run failed: {run.failed}")
    if not run.raw.is_file():
        return None
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime.annotate import annotate

    try:
        summary = annotate(run.raw, index.build([run.log]), run.annotated)
    except UnusableInput as exc:
        return Profiled(None, str(exc))
    finally:
        run.raw.unlink(missing_ok=True)
    return Profiled(run.annotated, summary=summary)
