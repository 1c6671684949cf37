"""What the viewer reads, validated: every graph folder under an ``--out`` folder (``graph_*``,
any depth, each rank's too; ``tlparse/`` and ``sdsc/`` are not searched), or, where there are
none, the graphs of its TORCH_TRACE logs (``viewer.logged``).

A graph folder is read from its artifact files: the node mapping (required), kernel stack
traces, OpSpec debug handles, diagnostics and the ``spyre_source_lines`` document. Each
artifact is validated as it is read: a truncated or invalid one makes the input unusable
(one line, naming the file and the JSON path), never a page that shows half of it.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import LoggedGraph
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.layout import NO_GRAPH_FOLDERS, Layout
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
    artifact_file,
)
from spyre_provenance.validate import read_once, schemas
from spyre_provenance.viewer.logged import LoggedGraphInput, LogGraphs, log_of, logged_inputs
from spyre_provenance.viewer.sources import file_problem

_SKIPPED = NO_GRAPH_FOLDERS


class GraphFolder:
    """One graph folder's artifacts, validated, and where its bundles are."""

    def __init__(self, folder: Path, root: Path) -> None:
        self.folder = folder
        self.relative = folder.relative_to(root).as_posix()
        self.mapping: dict[str, Any] = _artifact(folder, NODE_MAPPINGS) or {}
        self.stack_traces: dict[str, Any] = _artifact(folder, KERNEL_STACK_TRACES) or {}
        self.opspecs: dict[str, Any] | None = _artifact(folder, OPSPEC_DEBUG_HANDLES)
        self.diagnostics: dict[str, Any] | None = _artifact(folder, DIAGNOSTICS)
        self.sources: dict[str, Any] | None = source_lines(folder)
        label, folder_cid = folders.label_and_compile_id(folder.name) or (None, "")
        # an unlabeled graph folder is its parent's model (a rank's: the run's folder)
        parent = folder.parent
        while folders.rank_of_folder(parent.name) is not None and parent != root:
            parent = parent.parent
        self.model = label or parent.name
        self.compile_id = str((self.diagnostics or {}).get("compile_id") or folder_cid)
        kind = (self.diagnostics or {}).get("graph")
        self.kind = kind if isinstance(kind, str) else folders.kind_of_folder(folder.name)
        parts = folder.relative_to(root).parts
        # a tracked process's folder of a `run` (program, torchrun's rank, pid), if any
        self.process = next((f for p in parts if (f := folders.process_of_folder(p)) is not None), None)
        self.rank = next((r for p in parts if (r := folders.rank_of_folder(p)) is not None), None)
        if self.rank is None and self.process is not None:
            self.rank = self.process.rank
        bundles = Layout(folder.parent, self.model).bundle_root
        self.bundle_root = bundles if bundles.is_dir() else None

    @property
    def pid(self) -> int | None:
        """The process of a `run` whose graph this is (None: a compile's own folder): two
        processes of one program, ranks or not, are told apart by it."""
        return self.process.pid if self.process is not None else None

    @property
    def label(self) -> str:
        rank = f"rank{self.rank} " if self.rank is not None else ""
        pid = f"pid{self.pid} " if self.pid is not None else ""
        return f"{self.model} {rank}{pid}{self.compile_id} {self.kind}"


def graph_folders(out: Path) -> list[GraphFolder | LoggedGraphInput]:
    """The graph folders under ``out`` (or ``out`` itself), in path order; where there are
    none, the graphs of ``out``'s TORCH_TRACE logs (or of the log ``out``: torch's own flags,
    as ``open`` reads them). Raises UnusableInput when there is no graph with a node mapping."""
    if not out.exists():
        raise UnusableInput(str(out), "no such folder")
    if out.is_file():
        if not tracelog.looks_like_trace_log(out):
            raise UnusableInput(str(out), "not a TORCH_TRACE log (view reads a compile --out folder or a log)")
        found: list[GraphFolder | LoggedGraphInput] = list(logged_inputs(out))
    else:
        found = [GraphFolder(path, out if path != out else out.parent) for path in _graph_paths(out)]
        found = found or list(logged_inputs(out))
    if not found:
        raise UnusableInput(
            str(out),
            f"no graph folder with a {artifact_file(NODE_MAPPINGS)} here, nor a TORCH_TRACE log with one"
            " (compile with --out writes them; TORCH_TRACE=DIR INDUCTOR_PROVENANCE=1 too)",
        )
    return found


def has_graph_folders(out: Path) -> bool:
    return next(_graph_paths(out), None) is not None


def _graph_paths(out: Path) -> Iterator[Path]:
    if (out / artifact_file(NODE_MAPPINGS)).is_file():
        yield out
        return
    for root, dirs, _ in os.walk(out):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED and not d.startswith("."))
        for name in dirs:
            path = Path(root) / name
            if name.startswith(folders.GRAPH_PREFIX) and (path / artifact_file(NODE_MAPPINGS)).is_file():
                yield path


def _artifact(folder: Path, artifact: str) -> dict[str, Any] | None:
    """The artifact's file in ``folder``, validated (by ``validate`` a moment before, inside
    ``read_once.reading_once``, else here); None when it has none."""
    path = folder / artifact_file(artifact)
    data = read_once.valid_bytes(path, artifact, jsonio.default_max_bytes())
    if data is None:
        if not path.is_file():
            return None
        data = jsonio.read_file(path)
        report = schemas.validate_bytes(data, artifact, location=str(path))
        if not report.ok:
            raise UnusableInput(str(path), str(report.problems[0]))
    doc = jsonio.load_json(data, location=str(path))
    if not isinstance(doc, dict):  # the schemas say so too; keep the type checker told
        raise UnusableInput(str(path), "$: not a JSON object")
    return doc


def source_lines(folder: Path) -> dict[str, Any] | None:
    path = folder / artifact_file(SOURCE_LINES)
    if not path.is_file():
        return None
    data = jsonio.read_file(path)
    doc = jsonio.load_json(data, location=str(path))
    wrong = file_problem(data, doc)
    if wrong is not None:
        raise UnusableInput(str(path), wrong)
    return doc


def logged_graphs(found: list[GraphFolder | LoggedGraphInput]) -> list[LoggedGraph | None]:
    """Each graph's records in its log: a log's own graph, or a graph folder's in its model's
    ``trace/<label>.log`` (matched by compile id, kind and order; each log read once)."""
    logs: dict[Path, LogGraphs] = {}
    seen: dict[tuple[Path, str, str], int] = {}
    out: list[LoggedGraph | None] = []
    for g in found:
        if isinstance(g, LoggedGraphInput):
            out.append(g.logged)
            continue
        log = log_of(g.folder, g.model)
        if log is not None and log not in logs:
            logs[log] = LogGraphs(log)  # a damaged payload is unusable input, as an artifact is
        graphs = logs.get(log) if log is not None else None
        if graphs is None or log is None:
            out.append(None)
            continue
        nth = seen.get((log, g.compile_id, g.kind), 0)
        seen[(log, g.compile_id, g.kind)] = nth + 1
        out.append(graphs.find(g.compile_id, g.kind, nth))
    return out
