"""Where everything under an ``--out`` folder goes, in one value: ``Layout(out, label)``.

A compile builds one ``Layout`` (its ``--out`` folder and the model's label,
``compile.request.label_of``) and hands it down; every writer and every reader names its
paths through it, and no other module spells a folder of ``OUT``
(``tests/unit/test_layout.py`` holds that)::

    OUT/
      trace/<label>.log                  the run's TORCH_TRACE log (renamed when the compile is done)
      trace/<label>.model                which model the label stands for
      graph_<label>_NN_<compile id>_<kind>/   one folder per compiled graph (model.folders)
      sdsc/<label>/inductor-spyre/<uuid8>_<kernel>_<suffix>/sdsc_<i>.json
                                         the SuperDSC bundles, one folder per kernel, laid
                                         out as torch-spyre main lays them in its cache_dir()
                                         (bundle_root, bundle_folder)
      tlparse/<label>/                   tlparse's pages (of every rank, for compile --ranks)
      profile/<label>.trace.json         compile --profile's annotated Chrome trace
      provenance_audit.json, .md         compile --audit's, one per OUT: the last audited run's
      view.html                          the viewer's page of every graph in OUT
      rank<r>/                           rank r of compile --ranks N: its own OUT, as above
      <program>_rank<r>_local<l>_pid<p>/ one tracked process of ``run`` / SPYRE_PROVENANCE_OUT:
                                         its own OUT, as above, labeled with the program

A model's own output is named after its label, so runs of several models share one ``OUT``.
A reader that does not know the label (``open OUT``, ``golden``) uses ``Layout(out)``.

Pure: imports nothing but ``model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from spyre_provenance.model import folders
from spyre_provenance.model.names import AUDIT

TRACE_FOLDER = "trace"  # TORCH_TRACE logs: <model>.log
SDSC_FOLDER = "sdsc"  # SuperDSC bundles: <model>/inductor-spyre/<kernel folder>/sdsc_<i>.json
#: torch-spyre main's folder of kernel bundle folders in its ``cache_dir()``
#: (``execution/async_compile.py`` ``get_output_dir``); a model's bundle root holds one too.
SPYRE_BUNDLES_FOLDER = "inductor-spyre"
TLPARSE_FOLDER = "tlparse"  # tlparse's pages: <model>/...
PROFILE_FOLDER = "profile"  # compile --profile's traces: <model>.trace.json
#: Beside a model's log, ``<label>.model`` names the model its folders are of: two models
#: whose labels agree (``a/model.py:build`` and ``b/model.py:build``) never share them.
MODEL_SUFFIX = ".model"
VIEWER_PAGE = "view.html"
#: Folders of an ``OUT`` that hold no compile's log (tlparse copies it there as ``raw.log``):
#: a reader walking ``OUT`` for logs skips them.
NO_LOG_FOLDERS = frozenset({TLPARSE_FOLDER, SDSC_FOLDER})
#: Folders of an ``OUT`` that hold no graph folder: a reader walking ``OUT`` for graphs skips them.
NO_GRAPH_FOLDERS = NO_LOG_FOLDERS | {TRACE_FOLDER}


class Layout(msgspec.Struct, frozen=True):
    """The paths under one ``--out`` folder for the model ``label`` (None: unlabeled, or a
    reader that does not know it: ``trace_log``, ``bundle_root`` and ``pages`` need one)."""

    out: Path
    label: str | None = None

    # --- the TORCH_TRACE log ----------------------------------------------------------------

    @property
    def trace_dir(self) -> Path:
        """Where torch writes the run's log (``TORCH_TRACE``), under its own name first."""
        return self.out / TRACE_FOLDER

    @property
    def trace_log(self) -> Path:
        return self.trace_dir / f"{self._named}.log"

    @property
    def model_marker(self) -> Path:
        return self.trace_dir / f"{self._named}{MODEL_SUFFIX}"

    def trace_logs(self) -> list[Path]:
        """Every model's log in ``trace/``, in name order."""
        return sorted(p for p in self.trace_dir.glob("*.log") if p.is_file()) if self.trace_dir.is_dir() else []

    @staticmethod
    def of_log(log: Path, label: str | None = None) -> Layout | None:
        """The layout whose ``trace/`` holds ``log`` (a compile's log), else None."""
        return Layout(log.parent.parent, label) if log.parent.name == TRACE_FOLDER else None

    @staticmethod
    def of_trace_dir(folder: Path) -> Layout | None:
        """The layout whose ``trace/`` folder ``folder`` is, else None."""
        return Layout(folder.parent) if folder.name == TRACE_FOLDER else None

    # --- graph folders ----------------------------------------------------------------------

    def graph_folder(self, index: int, compile_id: str, kind: str | None = None) -> Path:
        return self.out / folders.graph_folder(index, compile_id, kind, self.label)

    def graph_folders(self) -> list[Path]:
        """This model's graph folders in ``out``, in name order (another model's stay out)."""
        return [
            p
            for p in sorted(self.out.glob(f"{folders.GRAPH_PREFIX}*"))
            if folders.is_graph_folder_of(p.name, self.label)
        ]

    # --- bundles, pages, profile, audit, viewer -----------------------------------------------

    @property
    def bundle_root(self) -> Path:
        """Where a Spyre backend writes this model's SuperDSC bundles (unlabeled: every
        model's bundles): what torch-spyre's ``cache_dir()`` is to its bundles
        (``bundle_folder``). The one line that decides it."""
        return self.out / SDSC_FOLDER / self.label if self.label else self.out / SDSC_FOLDER

    def bundle_folder(self, name: str) -> Path:
        """The bundle folder ``name`` of this model (``kernel_bundle_folder``)."""
        return kernel_bundle_folder(self.bundle_root, name)

    def bundle_folders(self) -> list[tuple[str | None, Path]]:
        """Every kernel's bundle folder under ``bundle_root``, with the label of the model it
        is of (None for a labeled layout's own, or an unlabeled compile's), in path order;
        an unlabeled reader gets every model's."""
        roots: list[tuple[str | None, Path]] = [(None, self.bundle_root)]
        if self.label is None and self.bundle_root.is_dir():
            roots += [(p.name, p) for p in sorted(self.bundle_root.iterdir()) if p.name != SPYRE_BUNDLES_FOLDER]
        found = []
        for label, root in roots:
            spyre = root / SPYRE_BUNDLES_FOLDER
            if spyre.is_dir():
                found += [(label, p) for p in sorted(spyre.iterdir()) if p.is_dir()]
        return found

    @property
    def pages(self) -> Path:
        """tlparse's pages of this model's log (of all ranks' logs, for ``compile --ranks``)."""
        return self.out / TLPARSE_FOLDER / self._named

    @property
    def pages_root(self) -> Path:
        """tlparse's output for ``open OUT`` (one subfolder per log)."""
        return self.out / TLPARSE_FOLDER

    @property
    def profile_trace(self) -> Path:
        return self.out / PROFILE_FOLDER / f"{self._named}.trace.json"

    @property
    def profile_raw(self) -> Path:
        """The profiler's own trace, before it is annotated (hidden, removed afterwards)."""
        return self.out / PROFILE_FOLDER / f".{self._named}.raw.trace.json"

    @property
    def audit_json(self) -> Path:
        return self.out / f"{AUDIT}.json"

    @property
    def audit_markdown(self) -> Path:
        return self.out / f"{AUDIT}.md"

    @property
    def viewer_page(self) -> Path:
        return self.out / VIEWER_PAGE

    @property
    def compare_page(self) -> Path:
        """The viewer's page of this folder beside another (``view --compare``)."""
        return self.out / f"compare.{VIEWER_PAGE}"

    # --- what one model's run owns ---------------------------------------------------------

    def own_folders(self) -> list[Path]:
        """Everything a run of this model writes into ``out`` besides its log: graph
        folders, bundles, pages. Another model's stay out of it."""
        return [*self.graph_folders(), self.bundle_root, self.pages]

    def shared_folders(self) -> list[Path]:
        """The folders several models' runs write into: removed by a discarded run only when empty."""
        return [Layout(self.out).bundle_root, self.pages_root]

    # --- ranks -------------------------------------------------------------------------------

    def rank(self, rank: int) -> Layout:
        """Rank ``rank``'s own ``OUT`` in a ``compile --ranks N`` run: ``out/rank<r>/``."""
        return Layout(self.out / folders.rank_folder(rank), self.label)

    def ranks(self) -> list[tuple[int, Layout]]:
        """The ``rank<r>/`` folders ``out`` holds, in rank order."""
        if not self.out.is_dir():
            return []
        found = [(r, p) for p in self.out.iterdir() if p.is_dir() and (r := folders.rank_of_folder(p.name)) is not None]
        return [(r, Layout(p, self.label)) for r, p in sorted(found)]

    # --- the processes of a run (``spyre-provenance run``, ``SPYRE_PROVENANCE_OUT``) ----------

    def process(self, process: folders.ProcessFolder) -> Layout:
        """A tracked process's own ``OUT``: ``out/<program>_rank<r>_local<l>_pid<p>/``, its
        files named after its program."""
        return Layout(self.out / process.name, process.program)

    def processes(self) -> list[tuple[folders.ProcessFolder, Layout]]:
        """The tracked processes' folders ``out`` holds, ranks first in rank order. A link is
        no process's folder (a process makes its own, ``capture.attach``): it is passed over."""
        if not self.out.is_dir():
            return []
        found = [
            (f, p)
            for p in self.out.iterdir()
            if p.is_dir() and not p.is_symlink() and (f := folders.process_of_folder(p.name))
        ]
        return [(f, self.process(f)) for f, _ in sorted(found, key=lambda item: item[0].order)]

    def holds_runs(self) -> bool:
        """Whether ``out`` holds what ``compile`` or ``run`` writes: a ``trace/`` folder, rank
        folders or process folders. Then its ``NO_LOG_FOLDERS`` hold copies and bundles,
        which a reader of every artifact in ``out`` passes over."""
        return self.trace_dir.is_dir() or bool(self.ranks()) or bool(self.processes())

    @property
    def _named(self) -> str:
        if self.label is None:
            raise ValueError(f"{self.out}: a model's own path needs its label")
        return self.label


#: A run's tracked processes as ``Layout.processes`` lists them: each process's folder name
#: read, and its own ``Layout``. A run's end lists them once and hands the list on.
ProcessLayouts = Sequence[tuple[folders.ProcessFolder, Layout]]


def kernel_bundle_folder(root: Path, name: str) -> Path:
    """The folder of one kernel's bundles under a bundle root, as torch-spyre main lays it
    out: ``<root>/inductor-spyre/<name>/`` with ``name`` = ``<uuid8>_<kernel>_<suffix>``
    (``folders.bundle_folder_name``). ``root`` is torch-spyre's ``cache_dir()`` or a model's
    ``Layout.bundle_root``: the reference backend writes, and every reader finds, both kinds
    of bundles by this one rule, the name being what the OpSpec artifact records
    (``bundles[<call site>].folder``)."""
    return root / SPYRE_BUNDLES_FOLDER / name


def bundle_files(folder: Path) -> list[Path]:
    """The bundles of one kernel's folder, ``sdsc_<i>.json``, by index as a number (``sdsc_2``
    before ``sdsc_10``); none when ``folder`` is no folder."""
    if not folder.is_dir():
        return []
    found = [
        (int(m[1]), p) for p in folder.iterdir() if (m := folders.BUNDLE_FILE_RE.fullmatch(p.name)) and p.is_file()
    ]
    return [p for _, p in sorted(found)]
