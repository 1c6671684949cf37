"""An ``--out`` folder's artifacts (or a plain TORCH_TRACE log's, ``viewer.logged``) as the
viewer's one JSON document.

The graphs come validated from ``viewer.inputs`` (every graph folder's artifacts, or a
log's graphs) and their SuperDSC bundles from ``viewer.bundles``; here they become the page's
document. It keeps each name once and refers to it by position (the page builds its panels
from positions), and holds, for every element, what a click on it lights (``lights``, made
by ``viewer.relation``, the one rule: the page only follows it). Its shape is
``model.viewer_records.ViewerDocument`` (``schemas/spyre_viewer_document``).

Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spyre_provenance.links.misnamed import beside
from spyre_provenance.logs.graphs import LoggedGraph
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.viewer_records import VIEWER_DOCUMENT_VERSION
from spyre_provenance.runtime import index
from spyre_provenance.runtime.index import IndexedGraph
from spyre_provenance.runtime.lookup import GraphView, own_nodes
from spyre_provenance.validate import spyre_sidecar
from spyre_provenance.validate.coverage import handle_nodes
from spyre_provenance.viewer.bundles import (
    BUNDLE_BUDGET,
    BUNDLE_TEXT_FLOOR,
    BUNDLE_TEXT_LIMIT,
    Bundles,
    bundle_text,
    served_bundles,
)
from spyre_provenance.viewer.inputs import GraphFolder, graph_folders, logged_graphs
from spyre_provenance.viewer.logged import LoggedGraphInput, graph_code, wrapper_calls
from spyre_provenance.viewer.module_names import add_modules
from spyre_provenance.viewer.relation import relation
from spyre_provenance.viewer.sources import handle_lines, kernel_lines


class _Lines:
    """Source lines across every graph, each once: (file, line) -> position."""

    def __init__(self) -> None:
        self.files: list[dict[str, Any]] = []
        self.file_index: dict[str, int] = {}
        self.lines: list[list[int]] = []
        self.index: dict[tuple[str, int], int] = {}

    def add_snapshot(self, doc: dict[str, Any] | None) -> None:
        for path, entry in ((doc or {}).get("files") or {}).items():
            f = self.files[self._file(path)]
            for n, text in entry["lines"].items():
                f["text"].setdefault(n, text)
            if entry["error"] and not f["error"]:
                f["error"] = entry["error"]

    def _file(self, path: str) -> int:
        if path not in self.file_index:
            self.file_index[path] = len(self.files)
            self.files.append({"path": path, "text": {}, "error": None})
        return self.file_index[path]

    def of(self, file: str, line: int) -> int:
        key = (file, line)
        if key not in self.index:
            self.index[key] = len(self.lines)
            self.lines.append([self._file(file), line])
        return self.index[key]


def _names(*groups: Any) -> list[str]:
    found: dict[str, None] = {}
    for group in groups:
        for name in group:
            found[name] = None
    return list(found)


def _graph(
    g: GraphFolder | LoggedGraphInput,
    lines: _Lines,
    served: dict[str, dict[str, Any]],
    limit: int,
    logged: LoggedGraph | None,
    sidecars: list[dict[str, Any]],
) -> dict[str, Any]:
    pre, post, pre_post = _nodes(g.mapping)
    reader = _CallSites(g, lines, {name: i for i, name in enumerate(post)}, Bundles(g, served))
    wrapper = wrapper_calls(logged.output_code if logged is not None else None)
    calls = [reader.call(c, key, posts, wrapper.get(key)) for c, (key, posts) in enumerate(_call_posts(g).items())]
    _torch_spyre(_indexed(g, logged), g.opspecs, sidecars, calls, lines)
    for bundle in reader.bundles.found:
        bundle_text(bundle, reader.specs, limit)
    graph = {
        "label": g.label,
        "model": g.model,
        "rank": g.rank,
        "pid": g.pid,
        "compile_id": g.compile_id,
        "kind": g.kind,
        "folder": g.relative,
        "complete": (g.diagnostics or {}).get("complete"),
        "per_op": _per_op(g, logged),  # the ATen op of a per-op (eager) compile, else None
        "pre": pre,
        "post": post,
        "pre_to_post": [sorted(s) for s in pre_post],
        "calls": calls,
        "opspecs": reader.specs,
        "handles": reader.used_handles,
        "bundles": reader.bundles.found,
        # the graphs' code as logged, each node on its line (None: no log beside the folder)
        "code": {
            "pre": graph_code(logged.pre_grad_graph if logged is not None else None, pre),
            "post": graph_code(logged.post_grad_graph if logged is not None else None, post),
        },
    }
    add_modules(graph, g.stack_traces, g.diagnostics)
    graph["lights"] = relation(graph)
    return graph


def _call_posts(g: GraphFolder | LoggedGraphInput) -> dict[str, set[str]]:
    """Every call site of the graph (the mapping's both ways, then the OpSpec artifact's), in
    that order, with the post-grad nodes the mapping gives it."""
    code_to_post: dict[str, list[str]] = g.mapping.get("cppCodeToPost") or {}
    post_to_code: dict[str, list[str]] = g.mapping.get("postToCppCode") or {}
    specs_doc = (g.opspecs or {}).get("kernels") or {}
    keys = _names(code_to_post, (k for ks in post_to_code.values() for k in ks), specs_doc)
    call_posts: dict[str, set[str]] = {key: set(code_to_post.get(key) or ()) for key in keys}
    for name, ks in post_to_code.items():
        for key in ks:
            call_posts[key].add(name)
    return call_posts


class _CallSites:
    """A graph's call sites as the page holds them, and the OpSpecs, handles and bundles they
    gather on the way (``specs`` indexed by the calls' ``opspecs``)."""

    def __init__(self, g: GraphFolder | LoggedGraphInput, lines: _Lines, post_at: dict[str, int], bundles: Bundles):
        doc = g.opspecs or {}
        self.g, self.lines, self.post_at, self.bundles = g, lines, post_at, bundles
        self.kernels: dict[str, Any] = doc.get("kernels") or {}
        self.handles: dict[str, Any] = doc.get("handles") or {}
        self.recorded: Any = doc.get("bundles") or {}
        self.specs: list[dict[str, Any]] = []
        self.used_handles: dict[str, Any] = {}
        #: OpSpecs whose handle names another op or line than its nodes (the diagnostics')
        self.own_nodes = own_nodes(g.diagnostics)

    def call(self, c: int, key: str, posts: set[str], wrapped: Any) -> dict[str, Any]:
        """Call site number ``c``; ``wrapped``: its handle comment and call in the wrapper, as logged."""
        name, _ = split_key(key)
        folder = (self.recorded.get(key) or {}).get("folder") if isinstance(self.recorded, dict) else None
        folder = folder if isinstance(folder, str) and folder else name or key
        kernel_specs = self.kernels.get(key) or ()
        written = {s.get("buffer") for s in kernel_specs if s.get("buffer")}
        spec_at = [self._spec((c, key), i, spec, folder, written) for i, spec in enumerate(kernel_specs)]
        return {
            "key": key,
            "post_nodes": sorted(self.post_at[p] for p in posts),
            "lines": [self.lines.of(f, n) for f, n in kernel_lines(key, self.g.stack_traces, self.g.opspecs)],
            "opspecs": spec_at,
            "wrapper_lines": wrapped,
        }

    def _spec(self, call: tuple[int, str], i: int, spec: dict[str, Any], folder: str, written: set[Any]) -> int:
        """The ``i``-th OpSpec of call site ``call`` (its number and key), added to ``specs``:
        its index there."""
        c, key = call
        hid: Any = spec.get("debug_handle")
        handle = self.handles.get(hid) if isinstance(hid, str) else None
        if handle is not None:
            self.used_handles[hid] = handle
            for child in _children(handle, self.handles):
                self.used_handles[child] = self.handles[child]
        b = self.bundles.place(folder, i, hid, len(self.specs))
        own = self.own_nodes.get((key, spec.get("buffer"), hid))
        self.specs.append(
            {
                "call": c,
                "index": i,
                "op": spec.get("op"),
                "is_reduction": spec.get("is_reduction"),
                "iteration_space": spec.get("iteration_space"),
                "buffer": spec.get("buffer"),
                "handle": hid,
                "missing_handle": spec.get("missing_handle"),
                "lines": sorted({self.lines.of(f, n) for f, n in handle_lines(handle, self.handles)}),
                # the post-grad nodes its handle names (ir_chain, fused-from children's)
                "post_nodes": sorted(
                    {self.post_at[n] for n in handle_nodes(hid, self.handles, written) if n in self.post_at}
                    if isinstance(hid, str)
                    else ()
                ),
                "bundle": b,
                # whether the bundle's debug_handle_ is this OpSpec's (a kernel-cache hit
                # serves an earlier compile's bundle): said, not assumed
                "bundle_is_its_own": b is not None and str(self.bundles.found[b]["id"]) == str(hid),
                # where its handle names another op or line than its nodes: theirs, and why
                "handle_names_other": None
                if own is None
                else beside(own.nodes, own.aten_ops, own.sources, own.differs),
            }
        )
        return len(self.specs) - 1


def _per_op(g: GraphFolder | LoggedGraphInput, logged: LoggedGraph | None) -> str | None:
    """The ATen op when the graph is a per-op compile (torch-spyre's eager mode), by the one
    rule (``links.per_op``, asked as ``lookup`` asks it: ``GraphView.per_op``, whose call
    sites' ATen ops come from the wrapper's comments, the OpSpec handles or the post-grad
    graph)."""
    return GraphView.of(_indexed(g, logged)).per_op


def _indexed(g: GraphFolder | LoggedGraphInput, logged: LoggedGraph | None) -> IndexedGraph:
    """The graph as ``lookup``'s index holds it, so the viewer asks the index's own rules."""
    return IndexedGraph(
        model=g.model,
        compile_id=g.compile_id,
        graph=g.kind,
        origin=str(g.folder),
        mapping=g.mapping,
        stack_traces=g.stack_traces,
        opspecs=g.opspecs,
        output_code=logged.output_code if logged is not None else None,
        post_grad_graph=logged.post_grad_graph if logged is not None else None,
        spyre_provenance=logged.spyre_provenance if logged is not None else None,
    )


def _torch_spyre(
    graph: IndexedGraph,
    opspecs: dict[str, Any] | None,
    sidecars: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    lines: _Lines,
) -> None:
    """torch-spyre's own provenance (PR #3449's sidecar, logged in the graph's compile or a
    file under the folder, chosen by the index's rule ``index.sidecar_for``) as more evidence.
    Each call site it holds gets torch-spyre's provenance key (``spyre_key``), its direct handles
    (``spyre_handles``) and, where the hook's OpSpec handles disagree, ``cross_check``'s lines (``spyre_disagreements``,
    as the compile summary lists them); its handles' source lines (fused constituents too)
    join the call site's lines, kernel-wide evidence as its stack traces are. Where no
    sidecar holds the graph, nothing is added."""
    doc = index.sidecar_for(graph, sidecars)
    if doc is None:
        return
    keys, closures = index.sidecar_evidence(graph, sidecars)
    found = spyre_sidecar.disagreements(opspecs, doc) if opspecs is not None else {}
    for call in calls:
        key = keys.get(call["key"])
        if key is None:
            continue
        call["spyre_key"] = key
        call["spyre_handles"] = list(doc["kernelIdentities"][key]["directHandleIds"])
        call["spyre_disagreements"] = found.get(call["key"], [])
        more = [lines.of(f, n) for h in sorted(closures[call["key"]]) for f, n in handle_lines(doc["handles"][h], {})]
        call["lines"] = list(dict.fromkeys(call["lines"] + more))


def _nodes(m: dict[str, Any]) -> tuple[list[str], list[str], list[set[int]]]:
    """The graph's pre-grad and post-grad node names, and each pre-grad node's post-grad
    nodes (by index), from both directions of the mapping."""
    pre_to_post: dict[str, list[str]] = m.get("preToPost") or {}
    post_to_pre: dict[str, list[str]] = m.get("postToPre") or {}
    pre = _names(pre_to_post, (p for ps in post_to_pre.values() for p in ps))
    post = _names(
        post_to_pre,
        m.get("postToCppCode") or {},
        (p for ps in pre_to_post.values() for p in ps),
        (p for ps in (m.get("cppCodeToPost") or {}).values() for p in ps),
    )
    pre_at = {name: i for i, name in enumerate(pre)}
    post_at = {name: i for i, name in enumerate(post)}
    pre_post: list[set[int]] = [set() for _ in pre]
    for name, posts in pre_to_post.items():
        pre_post[pre_at[name]].update(post_at[p] for p in posts)
    for name, pres in post_to_pre.items():
        for p in pres:
            pre_post[pre_at[p]].add(post_at[name])
    return pre, post, pre_post


def _children(handle: dict[str, Any], handles: dict[str, Any]) -> Iterator[str]:
    for child in handle.get("fused_from") or ():
        if isinstance(child, str) and child in handles:
            yield child
            yield from _children(handles[child], handles)


Side = tuple[str | None, list[GraphFolder | LoggedGraphInput]]


def build(out: Path, timing: Any = None, bundles: list[Path] | None = None) -> dict[str, Any]:
    """The page's document for ``out``; ``timing`` (``viewer.timing.Timing``) adds each call
    site's time and calls; ``bundles``: folders of torch-spyre's bundle folders, beside
    ``out``'s own ``sdsc/``."""
    sidecars = index.sidecars_under(out) if out.is_dir() else []
    return document(str(out), [(None, graph_folders(out))], out, timing, bundles, sidecars)


def document(
    name: str,
    sides: list[Side],
    out: Path,
    timing: Any = None,
    bundles: list[Path] | None = None,
    sidecars: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The document of the graphs of ``sides`` (one side, None, for a page of one folder; A's
    and B's for ``view A --compare B``, each graph tagged with its side), sharing one list of
    source lines; ``timing`` times the first side's graphs, read from ``out``; ``sidecars``:
    torch-spyre's own provenance files found beside them (``index.sidecars_under``)."""
    found = [g for _, graphs in sides for g in graphs]
    served = served_bundles(bundles or [])
    lines = _Lines()
    for g in found:
        lines.add_snapshot(g.sources)
    opspecs = sum(len(specs) for g in found for specs in ((g.opspecs or {}).get("kernels") or {}).values())
    limit = max(BUNDLE_TEXT_FLOOR, min(BUNDLE_TEXT_LIMIT, BUNDLE_BUDGET // max(1, opspecs)))
    graphs = [
        _graph(g, lines, served, limit, logged, sidecars or [])
        for g, logged in zip(found, logged_graphs(found), strict=True)
    ]
    sided = [side for side, of_side in sides for _ in of_side]
    for graph, side in zip(graphs, sided, strict=True):
        if side is not None:
            graph["side"] = side
    if timing is not None:
        timing.apply(graphs[: len(sides[0][1])], out, lines.index, lines.of)
    return {
        "version": VIEWER_DOCUMENT_VERSION,
        "out": name,
        "files": lines.files,
        "lines": lines.lines,
        "graphs": graphs,
        "trace": timing.summary() if timing is not None else None,
    }
