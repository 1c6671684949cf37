"""From a name copied at run time to the kernel's provenance (``spyre-provenance lookup``).

``lookup(names, index)`` answers each name with every kernel it matches (which model,
compile, graph) and each of its call sites: post-grad and pre-grad nodes, source lines (the
lines fused into the kernel, then the enclosing calls: ``source_lines``), Original ATen ops
(its own nodes': ``GraphView._aten``), OpSpecs with their handles, bundle files. What it
says comes from the mapping, the stack traces and the OpSpec handles as written; nothing is
guessed. An unknown name gets the closest known names (difflib).

Pure: no torch.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from spyre_provenance.links.misnamed import read_misnamed
from spyre_provenance.links.per_op import per_op_kind
from spyre_provenance.logs.graphs import LoggedGraph
from spyre_provenance.logs.post_grad import parse_post_grad_graph
from spyre_provenance.logs.wrapper_code import HANDLE_COMMENT, defined_kernels
from spyre_provenance.model import folders
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.frames import Frame, is_user_frame, line_index
from spyre_provenance.model.frames import frames as stack_frames
from spyre_provenance.model.layout import bundle_files, kernel_bundle_folder
from spyre_provenance.model.lookup_records import (
    LOOKUP_VERSION,
    Answer,
    CallSite,
    LookupDocument,
    Match,
    ModuleEntry,
    OpSpecEntry,
    OwnNode,
    SourceLine,
)
from spyre_provenance.model.modules import module_names, read_module_stacks
from spyre_provenance.runtime import kernel_names
from spyre_provenance.runtime.index import IndexedGraph, KernelIndex, Site

_ORIGINAL_ATEN = re.compile(r"Original ATen: \[(?P<aten>[^\]]*)\]")
CLOSEST = 5


def lookup(queries: list[str], index: KernelIndex) -> LookupDocument:
    return LookupDocument(LOOKUP_VERSION, [answer(q, index) for q in queries])


def answer(text: str, index: KernelIndex) -> Answer:
    query = kernel_names.parse(text)
    if query.form == "handle":
        sites = _sites_of_handle(text, index)
    elif query.provenance_key is not None:  # a device event, or its bare key
        sites = list(index.by_provenance_key.get(query.provenance_key, ()))
    elif query.renamed_event is not None:  # a device event acelyzer renamed
        sites = index.sites_of_renamed_event(query.renamed_event)
    elif query.form == "key":
        # the name part in any form (graph_<i>_ prefix, suffix), the handle as written
        sites = [
            s
            for name in kernel_names.resolve(query.name, index.by_name)
            for s in index.by_name[name]
            if s[1] == f"{name}:{query.handle}"
        ]
    elif query.launch_spec is not None and query.name not in index.by_folder:
        # a compiled kernel's path: the kernel its launch spec names, else the folder's parts
        kernel = launch_spec_kernel(query.launch_spec)
        sites = sites_of_name(kernel, index) if kernel else []
        sites = sites or sites_of_name(query.name, index)
    else:  # a kernel name, a CPU span's or a bundle folder (as recorded, else by its parts)
        sites = sites_of_name(query.name, index)
    matches = _matches(sites, index)
    closest = (
        [] if matches else difflib.get_close_matches(query.name or text, list(index.by_name), n=CLOSEST, cutoff=0.5)
    )
    return Answer(text, query.form, matches, closest)


def launch_spec_kernel(path: str) -> str | None:
    """The ``kernel_name`` of torch-spyre's ``launch_spec.json`` at ``path`` (version 1, as
    ``codegen/kernel_launchspec.py`` writes it); None when there is no such readable file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeError, ValueError):
        return None
    name = doc.get("kernel_name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) and name else None


def sites_of_name(name: str, index: KernelIndex) -> list[Site]:
    """The call sites a kernel name or bundle folder stands for: a recorded bundle folder
    (with or without its ``<uuid8>_``) names its one kernel; else ``names.resolve``."""
    if name in index.by_folder:
        return list(index.by_folder[name])
    return [s for kernel in kernel_names.resolve(name, index.by_name) for s in index.by_name[kernel]]


def _matches(sites: list[tuple[int, str]], index: KernelIndex) -> list[Match]:
    grouped: dict[tuple[int, str], list[str]] = {}
    for position, key in sites:
        grouped.setdefault((position, split_key(key)[0]), []).append(key)
    found = []
    for (position, kernel), keys in grouped.items():
        graph = index.graphs[position]
        view = GraphView.of(graph)
        found.append(
            Match(
                graph.model,
                graph.compile_id,
                graph.graph,
                kernel,
                graph.origin,
                [view.call_site(k) for k in keys],
                view.per_op,
            )
        )
    return found


def _sites_of_handle(handle_id: str, index: KernelIndex) -> list[tuple[int, str]]:
    """Call sites with an OpSpec whose handle is ``handle_id`` or was fused from it."""
    found = []
    for position, graph in enumerate(index.graphs):
        view = GraphView.of(graph)
        for key in graph.keys:
            # the hook's OpSpec handles, else torch-spyre's own (its sidecar) for the call site
            if handle_id in view.handle_closure(key) or handle_id in graph.sidecar_handles.get(key, ()):
                found.append((position, key))
    return found


class GraphView:
    """What one graph's artifacts say about its call sites, parsed once per graph (and
    kept on the graph, so it lives as long as the index)."""

    @classmethod
    def of(cls, graph: IndexedGraph) -> GraphView:
        if graph.view is None:
            graph.view = cls(graph)
        return graph.view

    def __init__(self, graph: IndexedGraph) -> None:
        self.graph = graph
        self.post_to_pre = graph.mapping.get("postToPre") or {}
        self.kernel_opspecs = (graph.opspecs or {}).get("kernels") or {}
        self.handles = (graph.opspecs or {}).get("handles") or {}
        self._wrapper_aten = _wrapper_aten(graph.output_code)
        self._defined = set(defined_kernels(graph.output_code or ""))
        self.own_nodes = own_nodes(graph.diagnostics)
        self.module_stacks = read_module_stacks(graph.diagnostics)
        self._node_ops: dict[str, str] | None = None
        self._per_op: tuple[str | None] | None = None

    @property
    def per_op(self) -> str | None:
        """The ATen op when this graph is a per-op compile (``links.per_op``), else None."""
        if self._per_op is None:
            keys = [k for k in self.graph.mapping.get("cppCodeToPost") or {} if isinstance(k, str)]
            self._per_op = (per_op_kind(self.graph.mapping, (self.call_site(k).aten_ops for k in keys)),)
        return self._per_op[0]

    def call_site(self, key: str) -> CallSite:
        post = [n for n in self.graph.mapping.get("cppCodeToPost", {}).get(key, []) if isinstance(n, str)]
        pre = list(dict.fromkeys(p for n in post for p in self.post_to_pre.get(n, []) if isinstance(p, str)))
        aten, aten_from = self._aten(key, post)
        kernel, handle = split_key(key)
        bundle = self.graph.bundles.get(key) or {}
        traces = self.graph.stack_traces.get(key) or []
        return CallSite(
            key=key,
            handle=int(handle),
            post_grad_nodes=post,
            pre_grad_nodes=pre,
            source=source_lines(traces),
            aten_ops=aten,
            aten_from=aten_from,
            opspecs=[self._opspec(key, o) for o in self.kernel_opspecs.get(key, []) if isinstance(o, dict)],
            bundle_files=_bundle_files(self.graph, bundle.get("folder")),
            provenance_key=bundle.get("provenance_key") or self.graph.sidecar_keys.get(key),
            bundle_folder=bundle.get("folder"),
            modules=self.modules(key, traces),
        )

    def modules(self, key: str, traces: list[Any]) -> list[ModuleEntry]:
        """The modules naming a call site none of whose frames is the user's (``model.modules``)."""
        named = module_names(traces, self.module_stacks.get(key))
        if named is None:
            return []
        return [
            ModuleEntry(m.path, m.cls, m.name, role)
            for role, part in (("fused", named.own), ("enclosing", named.enclosing))
            for m in part
        ]

    def _opspec(self, key: str, opspec: dict[str, Any]) -> OpSpecEntry:
        handle_id = opspec.get("debug_handle")
        handle = self.handles.get(handle_id) if isinstance(handle_id, str) else None
        source = (handle or {}).get("source")
        where = f"{source['file']}:{source['start_line']}" if isinstance(source, dict) and "file" in source else None
        own = self.own_nodes.get((key, opspec.get("buffer"), handle_id))
        return OpSpecEntry(
            str(opspec.get("op")), opspec.get("buffer"), handle_id, (handle or {}).get("aten_op"), where, own
        )

    def handle_closure(self, key: str) -> set[str]:
        """The ids of a call site's OpSpec handles and of every handle they were fused from."""
        seen: set[str] = set()
        todo = [o.get("debug_handle") for o in self.kernel_opspecs.get(key, []) if isinstance(o, dict)]
        while todo:
            handle_id = todo.pop()
            if not isinstance(handle_id, str) or handle_id in seen:
                continue
            seen.add(handle_id)
            todo += (self.handles.get(handle_id) or {}).get("fused_from") or []
        return seen

    def _aten(self, key: str, post: list[str]) -> tuple[list[str], str | None]:
        """Original ATen ops: the ops of the call site's own nodes, by one rule.

        The wrapper's comment on the call (Inductor's ``get_kernel_metadata``) where it is the
        call site's own: for a kernel the wrapper defines, the comment and the mapping are
        made from the same scheduler nodes' ``origins``. An extern call (``extern_kernels.*``,
        a fallback op: a name the wrapper does not define) is another matter: the mapping
        gives it its ``origin_node`` alone, while the comment lists every origin of the IR
        node, inputs realized into it included (``[aten.relu, aten.t, aten.addmm]`` above a
        lone ``addmm``). There only the comment's ops that are its own nodes' ops are kept
        (``wrapper comment, own nodes``), else its nodes' ops; the comment as written only
        when the post-grad graph is missing and nothing can tell them apart. Without a
        comment: the OpSpec handles', else the post-grad nodes' ops."""
        comment = self._wrapper_aten.get(key)
        if comment is not None and split_key(key)[0] in self._defined:
            return comment, "wrapper comment"
        own = self.own_ops(post)
        if comment is not None:
            packets = {_packet(o) for o in own}
            kept = [op for op in comment if _packet(op) in packets]
            if kept:
                return kept, "wrapper comment, own nodes"
            return (own, "post-grad nodes") if own else (comment, "wrapper comment")
        from_handles = [
            a
            for h in sorted(self.handle_closure(key))
            if isinstance(a := (self.handles.get(h) or {}).get("aten_op"), str)
        ]
        if from_handles:
            return sorted(set(from_handles)), "OpSpec handles"
        return own, ("post-grad nodes" if own else None)

    def own_ops(self, post: list[str]) -> list[str]:
        """The ops of the post-grad nodes ``post``, each once: ATen and prims ops only (a
        getitem or a symbolic expression is no ATen op)."""
        ops = self.node_ops()
        return list(dict.fromkeys(ops[n] for n in post if "." in ops.get(n, "")))

    def node_ops(self) -> dict[str, str]:
        if self._node_ops is None:
            self._node_ops = {}
            if self.graph.post_grad_graph:
                graph = parse_post_grad_graph(self.graph.post_grad_graph)
                self._node_ops = {n.name: n.op for n in graph.nodes if n.kind == "call" and n.op}
        return self._node_ops


def own_nodes(diagnostics: dict[str, Any] | None) -> dict[tuple[Any, Any, Any], OwnNode]:
    """(call site, buffer, handle id) -> what the nodes of an OpSpec whose handle names
    another op or line are themselves (the diagnostics' ``misnamed_handles``, as written)."""
    return {
        (m.kernel, m.buffer, m.handle): OwnNode(
            nodes=m.nodes, aten_ops=m.node_ops, sources=m.node_lines, differs=m.differs
        )
        for m in read_misnamed(diagnostics)
    }


def _packet(op: str) -> str:
    """An op's overload packet, as the wrapper's comment names ops: ``aten.addmm.default``
    -> ``aten.addmm`` (a comment's ``aten.addmm`` stays itself)."""
    return ".".join(op.split(".")[:2])


def _wrapper_aten(code: str | None) -> dict[str, list[str]]:
    """``name:N`` -> the ops of the ``Original ATen: [...]`` comment just above its handle comment."""
    found: dict[str, list[str]] = {}
    previous = ""
    for line in (code or "").splitlines():
        comment = HANDLE_COMMENT.match(line)
        if comment:
            aten = _ORIGINAL_ATEN.search(previous)
            if aten:
                found[comment["key"]] = list(dict.fromkeys(a.strip() for a in aten["aten"].split(",") if a.strip()))
        previous = line
    return found


def source_lines(stack_traces: list[Any]) -> list[SourceLine]:
    """The frames of a call site's stack traces, each ``file:line`` once, by what it is
    (``SourceLine.role``): first the lines fused into the kernel, one per trace (its node's
    innermost user frame, else its innermost frame: ``model.frames.user_frame``), in trace
    order; then the enclosing calls (the frames outside that line on its stack: the module
    calls that led there), innermost first; then the frames inside it (torch's code the line
    ran). A frame that is a fused line in one trace is one, whatever it is in another."""
    stacks = [_split_at_line(stack_frames(t)) for t in stack_traces if isinstance(t, str)]
    found: dict[tuple[str, int], SourceLine] = {}
    for role, part in (("fused", 1), ("enclosing", 0), ("inner", 2)):
        for stack in stacks:
            for frame in reversed(stack[part]):
                if (frame.file, frame.line) not in found:
                    found[(frame.file, frame.line)] = SourceLine(
                        frame.file, frame.line, frame.code.strip(), is_user_frame(frame.file), role
                    )
    return list(found.values())


def _split_at_line(stack: list[Frame]) -> tuple[list[Frame], list[Frame], list[Frame]]:
    """A stack (outermost first) as the frames outside its line, its line (the innermost
    user frame, else the innermost frame, as ``model.frames.user_frame``), the frames inside."""
    at = line_index(stack)
    if at is None:
        return [], [], []
    return stack[:at], stack[at : at + 1], stack[at + 1 :]


def _bundle_files(graph: IndexedGraph, folder_name: Any) -> list[str]:
    """The bundle files of a call site: in the folder its OpSpec artifact records, under the
    graph's bundle root (``model.layout.kernel_bundle_folder``)."""
    if graph.bundle_root is None or not isinstance(folder_name, str) or not folders.is_one_name(folder_name):
        return []
    return [str(p) for p in bundle_files(kernel_bundle_folder(graph.bundle_root, folder_name))]


def logged_per_op(graph: LoggedGraph) -> str | None:
    """The ATen op when a graph of a TORCH_TRACE log is a per-op compile (``graph_per_op``).
    The run summary that reads logs (``launch.run_summary``, above this layer) imports it."""
    return graph_per_op(
        graph.node_mappings or {},
        graph.stack_traces or {},
        graph.opspec_handles,
        output_code=graph.output_code,
        post_grad_graph=graph.post_grad_graph,
    )


def graph_per_op(
    mapping: dict[str, Any],
    stack_traces: dict[str, Any],
    opspecs: dict[str, Any] | None,
    *,
    output_code: str | None = None,
    post_grad_graph: str | None = None,
) -> str | None:
    """The ATen op when a graph's artifacts are a per-op compile's, by the one rule
    (``links.per_op``), asked as ``lookup`` asks it (``GraphView.per_op``: call sites' ATen ops
    from the wrapper's comments, the OpSpec handles or the post-grad graph)."""
    indexed = IndexedGraph(
        model="",
        compile_id="",
        graph="unknown",
        origin="",
        mapping=mapping,
        stack_traces=stack_traces,
        opspecs=opspecs,
        output_code=output_code,
        post_grad_graph=post_grad_graph,
    )
    return GraphView(indexed).per_op
