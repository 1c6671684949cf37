"""The TORCH_TRACE log's side of the page: each graph's code as tlparse shows it.

- the pre-grad graph (``before_pre_grad_graph``) and the post-grad graph, each node on the
  line tlparse finds it by (``logs.post_grad.line_name``, tlparse's ``extract_node_name``):
  the first line naming it;
- the wrapper's kernel call sites: each call's line and the handle comment before it
  (``logs.wrapper_code.call_sites``).

A graph folder's log is its model's ``trace/<label>.log`` beside it; its graphs are matched to
the folders by compile id, graph kind and order. A plain TORCH_TRACE folder or log (torch's
own flags, no ``--out``) gives the graphs themselves (``LoggedGraphInput``).

Pure: no torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import LoggedGraph, read_log_graphs
from spyre_provenance.logs.post_grad import line_name
from spyre_provenance.logs.wrapper_code import call_sites
from spyre_provenance.model.layout import Layout
from spyre_provenance.runtime.index import graph_kind

#: torch's ``# graph id: <id(graph)>`` comment: an address, different in every run; left out
#: so that a page of the same compile is the same bytes
_GRAPH_ID = re.compile(r"^\s*# graph id: \d+\s*$")


def graph_code(text: str | None, nodes: list[str]) -> dict[str, Any] | None:
    """A graph's code as the page shows it: ``text`` and, per node, its 0-based line (-1: none)."""
    if text is None:
        return None
    lines = [line for line in text.splitlines() if not _GRAPH_ID.match(line)]
    while lines and not lines[-1].strip():  # what the graph id's comment left behind it
        lines.pop()
    first: dict[str, int] = {}
    for n, line in enumerate(lines):
        name = line_name(line)
        if name is not None and name not in first:
            first[name] = n
    return {"text": "\n".join(lines), "node_lines": [first.get(node, -1) for node in nodes]}


def wrapper_calls(code: str | None) -> dict[str, list[str]]:
    """Each call key's lines in the wrapper: its handle comment and its call, as written."""
    if code is None:
        return {}
    lines = code.splitlines()
    found: dict[str, list[str]] = {}
    for site in call_sites(code):
        if site.key is not None and site.key not in found and site.handle_line is not None:
            found[site.key] = [lines[site.handle_line - 1].strip(), lines[site.line - 1].strip()]
    return found


class LogGraphs:
    """One log's graphs, each found once by (compile id, graph kind, n-th of those)."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.graphs = read_log_graphs(log)
        self._by: dict[tuple[str, str, int], LoggedGraph] = {}
        seen: dict[tuple[str, str], int] = {}
        for graph in self.graphs:
            cid, kind = graph.compile_id.strip("[]"), graph_kind(graph.diagnostics, graph.output_code)
            nth = seen[(cid, kind)] = seen.get((cid, kind), -1) + 1
            self._by[(cid, kind, nth)] = graph

    def find(self, compile_id: str, kind: str, nth: int) -> LoggedGraph | None:
        return self._by.get((compile_id, kind, nth))


def log_of(folder: Path, model: str) -> Path | None:
    """The log a graph folder's compile wrote: ``trace/<model>.log`` beside it."""
    log = Layout(folder.parent, model).trace_log
    return log if log.is_file() else None


class LoggedGraphInput:
    """A graph of a plain TORCH_TRACE log, read as ``viewer.inputs.GraphFolder`` reads a graph
    folder: its mapping, stack traces, OpSpecs and diagnostics as logged."""

    def __init__(self, log: Path, graph: LoggedGraph, root: Path, nth: int) -> None:
        self.folder = log
        self.relative = f"{log.relative_to(root).as_posix() if log.is_relative_to(root) else log.name}#{nth}"
        self.logged = graph
        self.mapping: dict[str, Any] = graph.node_mappings or {}
        self.stack_traces: dict[str, Any] = graph.stack_traces or {}
        self.opspecs: dict[str, Any] | None = graph.opspec_handles
        self.diagnostics: dict[str, Any] | None = graph.diagnostics
        self.sources: dict[str, Any] | None = None
        self.model = log.stem
        self.compile_id = graph.compile_id.strip("[]")
        self.kind = graph_kind(graph.diagnostics, graph.output_code)
        self.rank: int | None = None
        self.pid: int | None = None  # a log names its process by its own file name
        owner = Layout.of_log(log, self.model)
        bundles = owner.bundle_root if owner is not None else None
        self.bundle_root = bundles if bundles is not None and bundles.is_dir() else None

    @property
    def label(self) -> str:
        return f"{self.model} {self.compile_id} {self.kind}"


def logged_inputs(target: Path) -> list[LoggedGraphInput]:
    """The graphs with a node mapping of a TORCH_TRACE log, or of the logs of a folder
    (``open``'s rule, ``logs.tlparse_render.find_logs``)."""
    root = target if target.is_dir() else target.parent
    found = []
    for log in tlparse_render.find_logs(target):
        try:
            graphs = read_log_graphs(log)
        except OSError as exc:
            raise UnusableInput(str(log), exc.strerror or type(exc).__name__) from None
        mapped = [g for g in graphs if isinstance(g.node_mappings, dict)]
        found += [LoggedGraphInput(log, g, root, n) for n, g in enumerate(mapped)]
    return found
