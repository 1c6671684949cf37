"""``run``'s end, begun while the program is still ending.

A tracked process says it has ended: at exit, once its log is flushed, it creates a file
named after its folder in the folder ``SPYRE_PROVENANCE_ENDED`` names (``capture.attach``),
which ``run`` made for it. Its line of the screen, its tlparse pages (a process of no rank:
torchrun's ranks share a report, made when all have ended) and its viewer page are read from
its own folder alone, so ``run`` makes them then, while the interpreter is still tearing
down (over a second, for a program that compiled with torch here) instead of after it.

Nothing is claimed that the end would not have said: what was made early is kept only when
the process's folder is still as it was when the work began (every file's inode, size and
modification time; the viewer page, which that work writes, aside), else it is made again at
the end, as is everything that failed early (where its error is reported as usual).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from spyre_provenance.base import environment
from spyre_provenance.model import folders
from spyre_provenance.model.layout import VIEWER_PAGE, Layout

if TYPE_CHECKING:  # imported when a process has ended, not before COMMAND starts
    from spyre_provenance.launch.run_summary import ProcessSummary
    from spyre_provenance.logs.tlparse_render import GraphPage
    from spyre_provenance.viewer.pages import Page

#: how often ``run`` looks for processes that ended, while it waits for COMMAND (seconds)
POLL = 0.05

#: a folder as it was: (path under it, inode, size, modification time in ns) of every file
FolderState = tuple[tuple[str, int, int, int], ...]


class ProcessEnd(msgspec.Struct):
    """What ``run`` made of one process's folder once the process said it had ended."""

    summary: ProcessSummary
    pages: list[GraphPage] | None = None  # tlparse's, of a process of no rank; None: not made
    viewer: Page | None = None  # the viewer page, or why it was not written; None: not made


def folder_state(folder: Path) -> FolderState:
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder)
            if relative == VIEWER_PAGE:  # written by the early end itself
                continue
            try:
                stat = os.stat(path)
            except OSError:  # gone meanwhile: the state differs by its absence
                continue
            found.append((relative, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(found))


class EarlyEnd:
    """The processes of one ``run`` that said they ended, and what was made of each."""

    def __init__(self, run: Layout, *, pages: bool, tlparse: str | None) -> None:
        self.run = run  # the run's folder, each process's a folder of it
        self.pages = pages
        self.tlparse = tlparse
        self.markers = Path(tempfile.mkdtemp(prefix="spyre-provenance-ended-"))
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="spyre-provenance-end")
        self._begun: dict[str, tuple[Path, FolderState, Future[ProcessEnd], Future[list[GraphPage]] | None]] = {}

    @property
    def environment(self) -> dict[str, str]:
        """What COMMAND's environment needs for its processes to say they ended."""
        return {environment.ENDED: str(self.markers)}

    def poll(self) -> None:
        """Begin the end of every process that said it ended since the last look."""
        try:
            said = os.listdir(self.markers)
        except OSError:
            return
        for name in sorted(said):
            process = folders.process_of_folder(name)
            if name in self._begun or process is None:
                continue
            layout = self.run.process(process)
            self._begun[name] = (layout.out, folder_state(layout.out), *self._end(process, layout))

    def ended(self) -> dict[str, ProcessEnd]:
        """Every process's end made early that still holds (by its folder's name), once made."""
        self.poll()
        kept: dict[str, ProcessEnd] = {}
        for name, (folder, state, made, pages) in self._begun.items():
            try:
                end = made.result()
                if pages is not None:
                    end.pages = pages.result()
            except Exception:  # noqa: BLE001 - made again at the end, where its error is told
                continue
            if folder_state(folder) == state:
                kept[name] = end
        return kept

    def other_backends(self) -> dict[str, list[str]]:
        """The processes whose compiles all went to backends tracking does not record (their
        folders, removed at their exit, by name) and those backends' names."""
        where = self.markers / environment.OTHER_BACKENDS
        try:
            said = sorted(where.iterdir()) if where.is_dir() else []
            return {p.name: p.read_text(encoding="utf-8").split() for p in said}
        except OSError:
            return {}

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        shutil.rmtree(self.markers, ignore_errors=True)

    def _end(
        self, process: folders.ProcessFolder, layout: Layout
    ) -> tuple[Future[ProcessEnd], Future[list[GraphPage]] | None]:
        """The summary and the viewer page in one thread, tlparse's pages (a process of its
        own) in the other: the end waits for the longer, not both."""
        logs = layout.trace_logs()
        pages: Future[list[GraphPage]] | None = None
        if self.pages and self.tlparse is not None and process.rank is None and len(logs) == 1:
            pages = self._pool.submit(self._tlparse_pages, layout, logs[0])
        return self._pool.submit(self._summary_and_viewer, process, layout), pages

    def _tlparse_pages(self, layout: Layout, log: Path) -> list[GraphPage]:
        from spyre_provenance.viewer import pages

        into = self.run.pages_root / layout.out.name
        written = pages.write(layout.out, into, tlparse=self.tlparse, viewer=False, logs=[log])
        if written.tlparse_problem is not None:  # made again at the end, where it is told
            raise written.tlparse_problem
        return [page for _, page in written.graphs]

    def _summary_and_viewer(self, process: folders.ProcessFolder, layout: Layout) -> ProcessEnd:
        from spyre_provenance.launch.run_summary import summarize_process
        from spyre_provenance.validate.read_once import reading_once
        from spyre_provenance.viewer import pages

        with reading_once():
            summary = summarize_process(process, layout)
            viewer = pages.write(layout.out, layout.pages, tlparse=None, logs=[]).viewer if self.pages else None
        return ProcessEnd(summary, viewer=viewer)
