"""An ``--out`` folder's artifacts (or a plain TORCH_TRACE log's, ``viewer.logged``) as the
viewer's one JSON document.

Every graph folder under OUT (``graph_*``, any depth, each rank's too; ``tlparse/`` and
``sdsc/`` are not searched) is read from its artifact files: the node mapping (required),
kernel stack traces, OpSpec debug handles, diagnostics and the ``spyre_source_lines``
document; each call site's SuperDSC bundles from the folder its OpSpec artifact records
(``bundles[<call site>].folder``), under ``sdsc/<model>/`` or a ``--bundles`` folder by one
rule (``model.layout.kernel_bundle_folder``). Each artifact is
validated as it is read: a truncated or invalid one makes the input unusable (one line,
naming the file and the JSON path), never a page that shows half of it.

The document keeps each name once and refers to it by position (the page builds its
panels from positions), and holds, for every element, what a click on it lights
(``rel``, made by ``viewer.relation``, the one rule: the page only follows it).

Pure: no torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.links.misnamed import beside
from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import LoggedGraph
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.layout import NO_GRAPH_FOLDERS, Layout, bundle_files, kernel_bundle_folder
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
    artifact_file,
)
from spyre_provenance.model.superdsc import handle_of
from spyre_provenance.runtime import index
from spyre_provenance.runtime.index import IndexedGraph
from spyre_provenance.runtime.lookup import GraphView, own_nodes
from spyre_provenance.validate import schemas, spyre_sidecar
from spyre_provenance.validate.coverage import handle_nodes
from spyre_provenance.viewer.logged import LoggedGraphInput, LogGraphs, graph_code, log_of, logged_inputs, wrapper_calls
from spyre_provenance.viewer.module_names import add_modules
from spyre_provenance.viewer.relation import relation
from spyre_provenance.viewer.sources import file_problem, handle_lines, kernel_lines

DOCUMENT_VERSION = 1
#: A bundle's JSON is shown up to this many characters, and all of a page's bundles up to
#: about BUNDLE_BUDGET: real bundles run to tens of kB, and a page of 10k kernels has 30k.
BUNDLE_TEXT_LIMIT = 8_000
BUNDLE_TEXT_FLOOR = 1_000
BUNDLE_BUDGET = 16_000_000
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
        self.sources: dict[str, Any] | None = _source_lines(folder)
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
    """The artifact's file in ``folder``, validated; None when it has none."""
    path = folder / artifact_file(artifact)
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


def _source_lines(folder: Path) -> dict[str, Any] | None:
    path = folder / artifact_file(SOURCE_LINES)
    if not path.is_file():
        return None
    data = jsonio.read_file(path)
    doc = jsonio.load_json(data, location=str(path))
    wrong = file_problem(data, doc)
    if wrong is not None:
        raise UnusableInput(str(path), wrong)
    return doc


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
    reader = _CallSites(g, lines, {name: i for i, name in enumerate(post)}, _Bundles(g, served))
    wrapper = wrapper_calls(logged.output_code if logged is not None else None)
    calls = [reader.call(c, key, posts, wrapper.get(key)) for c, (key, posts) in enumerate(_call_posts(g).items())]
    _torch_spyre(_indexed(g, logged), g.opspecs, sidecars, calls, lines)
    for bundle in reader.bundles.found:
        _bundle_text(bundle, reader.specs, limit)
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
        "pp": [sorted(s) for s in pre_post],
        "calls": calls,
        "specs": reader.specs,
        "handles": reader.used_handles,
        "bundles": reader.bundles.found,
        # the graphs' code as logged, each node on its line (None: no log beside the folder)
        "code": {
            "pre": graph_code(logged.pre_grad_graph if logged is not None else None, pre),
            "post": graph_code(logged.post_grad_graph if logged is not None else None, post),
        },
    }
    add_modules(graph, g.stack_traces, g.diagnostics)
    graph["rel"] = relation(graph)
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
    gather on the way (``specs`` indexed by the calls' ``s``)."""

    def __init__(self, g: GraphFolder | LoggedGraphInput, lines: _Lines, post_at: dict[str, int], bundles: _Bundles):
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
            "k": key,
            "p": sorted(self.post_at[p] for p in posts),
            "l": [self.lines.of(f, n) for f, n in kernel_lines(key, self.g.stack_traces, self.g.opspecs)],
            "s": spec_at,
            "w": wrapped,
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
                "c": c,
                "i": i,
                "op": spec.get("op"),
                "red": spec.get("is_reduction"),
                "it": spec.get("iteration_space"),
                "buf": spec.get("buffer"),
                "h": hid,
                "miss": spec.get("missing_handle"),
                "l": sorted({self.lines.of(f, n) for f, n in handle_lines(handle, self.handles)}),
                # the post-grad nodes its handle names (ir_chain, fused-from children's)
                "p": sorted(
                    {self.post_at[n] for n in handle_nodes(hid, self.handles, written) if n in self.post_at}
                    if isinstance(hid, str)
                    else ()
                ),
                "b": b,
                # whether the bundle's debug_handle_ is this OpSpec's (a kernel-cache hit
                # serves an earlier compile's bundle): said, not assumed
                "ba": b is not None and str(self.bundles.found[b]["id"]) == str(hid),
                # where its handle names another op or line than its nodes: theirs, and why
                "own": None if own is None else beside(own.nodes, own.aten_ops, own.sources, own.differs),
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
    Each call site it holds gets torch-spyre's provenance key (``sk``), its direct handles
    (``sh``) and, where the hook's OpSpec handles disagree, ``cross_check``'s lines (``sd``,
    as the compile summary lists them); its handles' source lines (fused constituents too)
    join the call site's lines, kernel-wide evidence as its stack traces are. Where no
    sidecar holds the graph, nothing is added."""
    doc = index.sidecar_for(graph, sidecars)
    if doc is None:
        return
    keys, closures = index.sidecar_evidence(graph, sidecars)
    found = spyre_sidecar.disagreements(opspecs, doc) if opspecs is not None else {}
    for call in calls:
        key = keys.get(call["k"])
        if key is None:
            continue
        call["sk"] = key
        call["sh"] = list(doc["kernelIdentities"][key]["directHandleIds"])
        call["sd"] = found.get(call["k"], [])
        more = [lines.of(f, n) for h in sorted(closures[call["k"]]) for f, n in handle_lines(doc["handles"][h], {})]
        call["l"] = list(dict.fromkeys(call["l"] + more))


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


class _Bundles:
    """A graph's bundles, each once: one file per bundle folder and OpSpec index. A kernel
    called from several call sites has one set of bundles, made at its first, which each
    call site's OpSpec points at; its folder is the one the OpSpec artifact records."""

    def __init__(self, g: GraphFolder | LoggedGraphInput, served: dict[str, dict[str, Any]]) -> None:
        self.g, self.served = g, served
        self.found: list[dict[str, Any]] = []
        self._at: dict[str, int] = {}

    def place(self, folder: str, i: int, hid: Any, spec: int) -> int | None:
        """The index of OpSpec ``spec``'s bundle (the ``i``-th of ``folder``), or None."""
        path = f"{folder}/{folders.BUNDLE_FILE.format(i)}"
        if path not in self._at and (bundle := _bundle(self.g, folder, i)) is not None:
            self._add(path, bundle)
        elif path not in self._at and path in self.served:  # the recorded folder under --bundles
            self._add(path, {**self.served[path], "s": []})  # a copy: its own list of OpSpecs
        elif path not in self._at and isinstance(hid, str) and hid in self.served:
            # no folder recorded (an OpSpec artifact of version 1): found by the handle the
            # bundle carries
            path = self.served[hid]["path"]
            if path not in self._at:
                self._add(path, {**self.served[hid], "s": []})
        b = self._at.get(path)
        if b is not None:
            self.found[b]["s"].append(spec)
        return b

    def _add(self, path: str, bundle: dict[str, Any]) -> None:
        self._at[path] = len(self.found)
        self.found.append(bundle)


def _children(handle: dict[str, Any], handles: dict[str, Any]) -> Iterator[str]:
    for child in handle.get("fused_from") or ():
        if isinstance(child, str) and child in handles:
            yield child
            yield from _children(handles[child], handles)


def _bundle(g: GraphFolder | LoggedGraphInput, folder: str, index: int) -> dict[str, Any] | None:
    """The bundle ``sdsc_<index>.json`` of the bundle folder ``folder`` of the graph's model
    (``sdsc/<model>/inductor-spyre/<folder>/``); None when absent, or when ``folder`` can
    name no folder there (``folders.is_one_name``)."""
    if g.bundle_root is None or not folders.is_one_name(folder):
        return None
    path = kernel_bundle_folder(g.bundle_root, folder) / folders.BUNDLE_FILE.format(index)
    return _bundle_file(path, f"{folder}/{path.name}") if path.is_file() else None


def _bundle_file(path: Path, shown: str) -> dict[str, Any]:
    data = jsonio.read_file(path)
    try:
        doc = msgspec.json.decode(data)
        served = handle_of(doc, strict=False)
    except msgspec.DecodeError as exc:
        raise UnusableInput(str(path), f"not valid JSON: {exc}") from None
    except ValueError as exc:
        raise UnusableInput(str(path), f"$: {exc}") from None
    return {
        "path": shown,
        "id": str(served["id"]) if served and "id" in served else None,
        "doc": doc,  # made text by _bundle_text once its OpSpecs are known
        "s": [],  # the OpSpecs it is the bundle of
    }


def _bundle_text(bundle: dict[str, Any], specs: list[dict[str, Any]], limit: int) -> None:
    """The bundle as the page shows it: compact JSON, cut at ``limit`` characters. Where
    its ``debug_handle_`` is the handle of every OpSpec it serves (the same id), the page shows
    that handle from the OpSpec artifact, so the bundle keeps only its id (``handle``: true)."""
    doc = bundle.pop("doc")
    bundle["handle"] = bundle["id"] is not None and all(specs[s]["ba"] for s in bundle["s"])
    if bundle["handle"]:
        ((key, body),) = doc.items()
        doc = {key: {**body, "debug_handle_": {"id": bundle["id"]}}}
    text = msgspec.json.encode(doc).decode("utf-8")
    bundle["text"] = text[:limit]
    bundle["cut"] = len(text) > limit


def _logged(found: list[GraphFolder | LoggedGraphInput]) -> list[LoggedGraph | None]:
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


def served_bundles(roots: list[Path]) -> dict[str, dict[str, Any]]:
    """Bundles in folders as torch-spyre writes them (``inductor-spyre/<uuid8>_<kernel>_<8>/``,
    under a cache folder or named directly), by their path ``<folder>/sdsc_<i>.json`` (a call
    site's recorded folder finds them, as in ``sdsc/<model>/``), and by the id of the
    ``debug_handle_`` each carries (for OpSpec artifacts that record no folder)."""
    found: dict[str, dict[str, Any]] = {}
    for root in roots:
        if not root.is_dir():
            raise UnusableInput(str(root), "no such folder (--bundles names a folder of SuperDSC bundle folders)")
        first = folders.BUNDLE_FILE.format(0)
        # os.walk, not rglob: passes over a bundle folder a running compile removes meanwhile
        for folder in sorted(Path(r) for r, _, files in os.walk(root) if first in files):
            for path in bundle_files(folder):
                bundle = _bundle_file(path, f"{folder.name}/{path.name}")
                found.setdefault(bundle["path"], bundle)
                if bundle["id"] is not None:
                    found.setdefault(str(bundle["id"]), bundle)
    return found


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
        _graph(g, lines, served, limit, logged, sidecars or []) for g, logged in zip(found, _logged(found), strict=True)
    ]
    sided = [side for side, of_side in sides for _ in of_side]
    for graph, side in zip(graphs, sided, strict=True):
        if side is not None:
            graph["side"] = side
    if timing is not None:
        timing.apply(graphs[: len(sides[0][1])], out, lines.index, lines.of)
    return {
        "version": DOCUMENT_VERSION,
        "out": name,
        "files": lines.files,
        "lines": lines.lines,
        "graphs": graphs,
        "trace": timing.summary() if timing is not None else None,
    }
