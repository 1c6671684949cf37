"""Coverage invariants: what every compile's provenance must satisfy, whatever the op count.

Golden files pin *what* the provenance says; these rules say it is *complete*, and they hold
for any model on any compiler version (op counts do not: they change with the compiler).
Each graph is checked against what tlparse reads: the generated wrapper code, the post-grad
graph, the node mappings and, on backends with OpSpecs, the OpSpec debug handles.

1. ``call-sites``: every kernel call site in the wrapper is announced by a
   ``[Provenance debug handles] name:N`` comment whose ``name:N`` is a mapping key, and every
   mapping key is announced by exactly one comment (1:1).
2. ``node-reach``: every post-grad compute node reaches at least one kernel; nodes that emit
   no kernel (views, metadata) are recognised by rule (``coverage.NO_KERNEL_OPS``), never by
   name. Every node a kernel maps to is a real post-grad node.
3. ``opspec-handle``: every OpSpec carries a debug handle whose ``ir_chain`` names real
   post-grad nodes, all of them mapped to the OpSpec's kernel.
4. ``fused-constituents``: a handle naming several nodes lists each of them in its
   ``fused_from`` constituents, and no others.

Pure module: no torch import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from spyre_provenance import coverage, schemas, wrapper_code
from spyre_provenance.records import KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES

RULES = ("call-sites", "node-reach", "opspec-handle", "fused-constituents")
POST_GRAD_GRAPHS = ("inductor_post_grad_graph", "after_post_grad_graph")
OUTPUT_CODE = "inductor_output_code"


class Violation(msgspec.Struct, frozen=True):
    """One broken rule: which, where (graph, kernel, OpSpec), and what is wrong."""

    rule: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message} [{self.rule}]"


class LoggedGraph(msgspec.Struct):
    """One compiled graph's records in a TORCH_TRACE log (payloads as logged)."""

    compile_id: str
    post_grad_graph: str | None = None
    output_code: str | None = None
    node_mappings: dict | None = None
    stack_traces: dict | None = None
    opspec_handles: dict | None = None


def read_log_graphs(path: str | os.PathLike[str]) -> list[LoggedGraph]:
    """The graphs of a TORCH_TRACE log, in compile order: a graph starts at each post-grad
    graph record of its compile id, and owns the records of that id up to the next one."""
    from spyre_provenance import tracelog

    artifacts = {NODE_MAPPINGS: "node_mappings", KERNEL_STACK_TRACES: "stack_traces", OPSPEC_DEBUG_HANDLES: "opspec_handles"}
    names = {*POST_GRAD_GRAPHS, OUTPUT_CODE, *artifacts}
    graphs: list[LoggedGraph] = []
    current: dict[str, LoggedGraph] = {}
    for compile_id, name, payload in tracelog.artifact_payloads(path, names):
        graph = current.get(compile_id)
        if graph is None or name in POST_GRAD_GRAPHS or (name == OUTPUT_CODE and graph.output_code is not None):
            graph = current[compile_id] = LoggedGraph(compile_id)
            graphs.append(graph)
        if name in POST_GRAD_GRAPHS:
            graph.post_grad_graph = payload
        elif name == OUTPUT_CODE:
            graph.output_code = payload
        else:
            # the validator's reader: deep nesting, bad JSON and duplicate keys are one clear
            # error (UnusableInput), never an internal error or a value silently kept
            value = schemas.load_json(payload, location=f"{path}:{compile_id} {name}")
            setattr(graph, artifacts[name], value if isinstance(value, dict) else None)
    return graphs


def check_graph(
    output_code: str | None,
    post_grad_graph: str | None,
    node_mappings: Mapping[str, Any] | None,
    opspec_handles: Mapping[str, Any] | None = None,
    *,
    where: str = "",
) -> list[Violation]:
    """Every rule on one graph; an empty list means the provenance is complete.

    ``opspec_handles`` None skips rules 3 and 4 (backends without OpSpecs, stock Inductor).
    A missing wrapper, graph or mapping is itself a violation: coverage cannot be shown.
    """
    prefix = f"{where}: " if where else ""
    found: list[Violation] = []

    def bad(rule: str, place: str, message: str) -> None:
        found.append(Violation(rule, f"{prefix}{place}" if place else (where or "graph"), message))

    if node_mappings is None:
        bad("call-sites", "", "no node mappings to check")
        return found
    cpp_to_post = _map(node_mappings.get("cppCodeToPost"))
    nodes: list[coverage.PostGradNode] = []
    if output_code is None:
        bad("call-sites", "", "no wrapper code to check the mapping keys against")
    else:
        _call_sites(output_code, cpp_to_post, bad)
    if post_grad_graph is None:
        bad("node-reach", "", "no post-grad graph to check node coverage against")
    else:
        nodes = coverage.post_grad_nodes(post_grad_graph)
        _node_reach(nodes, cpp_to_post, bad)
    if opspec_handles is not None:
        _opspecs(opspec_handles, cpp_to_post, {n.name for n in nodes} if post_grad_graph else None, bad)
    return found


def _map(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): [str(x) for x in v] for k, v in value.items() if isinstance(v, list)}


def _call_sites(code: str, cpp_to_post: Mapping[str, list[str]], bad: Any) -> None:
    sites = wrapper_code.call_sites(code)
    comments = wrapper_code.handle_comments(code)
    for site in sites:
        if site.key is None:
            bad("call-sites", f"wrapper line {site.line}", f"call of {site.name} has no handle comment")
        elif not cpp_to_post.get(site.key):
            bad("call-sites", site.key, f"called at wrapper line {site.line} but not a mapping key"
                + (" (mapped to no node)" if site.key in cpp_to_post else ""))
    seen: set[str] = set()
    for key in comments:
        if key in seen:
            bad("call-sites", key, "announced by more than one handle comment")
        seen.add(key)
    called = {site.key for site in sites if site.key}
    for key in comments:
        if key not in called:
            bad("call-sites", key, "a handle comment announces it, but no kernel call follows")
    for key in cpp_to_post:
        if key not in seen:
            bad("call-sites", key, "mapping key without a call site in the wrapper")


def _node_reach(nodes: list[coverage.PostGradNode], cpp_to_post: Mapping[str, list[str]], bad: Any) -> None:
    mapped = {n for targets in cpp_to_post.values() for n in targets}
    names = {n.name for n in nodes}
    for node in nodes:
        if node.emits_kernel and node.name not in mapped:
            bad("node-reach", node.name, f"post-grad compute node ({node.op}) reaches no kernel")
    for key, targets in cpp_to_post.items():
        for name in targets:
            if name not in names:
                bad("node-reach", key, f"maps to {name}, which is not a node of the post-grad graph")


def _opspecs(doc: Mapping[str, Any], cpp_to_post: Mapping[str, list[str]], graph_nodes: set[str] | None, bad: Any) -> None:
    kernels = doc.get("kernels") if isinstance(doc.get("kernels"), Mapping) else {}
    handles = doc.get("handles") if isinstance(doc.get("handles"), Mapping) else {}
    for key, specs in kernels.items():
        if key not in cpp_to_post:
            bad("opspec-handle", key, "has OpSpecs but is not a mapping key")
        buffers = {s.get("buffer") for s in specs if isinstance(s, Mapping) and s.get("buffer")}
        mapped = set(cpp_to_post.get(key, ()))
        for i, spec in enumerate(specs if isinstance(specs, list) else ()):
            place = f"{key} OpSpec {i} ({spec.get('buffer') or '?'}, {spec.get('op')})"
            hid = spec.get("debug_handle")
            if hid is None:
                bad("opspec-handle", place, "carries no debug handle")
                continue
            handle = handles.get(hid)
            if not isinstance(handle, Mapping):
                bad("opspec-handle", place, f"debug handle {hid} is not in the handles table")
                continue
            named = _handle_nodes(hid, handles, buffers)
            if not named:
                bad("opspec-handle", place, "debug handle names no post-grad node (empty ir_chain)")
            for name in named:
                if graph_nodes is not None and name not in graph_nodes:
                    bad("opspec-handle", place, f"debug handle names {name}, which is not a post-grad node")
                elif name not in mapped:
                    bad("opspec-handle", place, f"debug handle names {name}, which the kernel's mapping lacks")
            _fused(hid, handles, buffers, place, bad, set())


def _own_nodes(handle: Mapping[str, Any], buffers: set[str]) -> list[str]:
    return [n for n in handle.get("ir_chain") or () if n not in buffers]


def _handle_nodes(hid: str, handles: Mapping[str, Any], buffers: set[str]) -> list[str]:
    """Nodes a handle names: its ir_chain and its constituents' (buffers are not nodes)."""
    found: list[str] = []
    pending, seen = [hid], set()
    while pending:
        current = pending.pop(0)
        if current in seen or not isinstance(handles.get(current), Mapping):
            continue
        seen.add(current)
        for name in _own_nodes(handles[current], buffers):
            if name not in found:
                found.append(name)
        pending.extend(handles[current].get("fused_from") or ())
    return found


def _fused(hid: str, handles: Mapping[str, Any], buffers: set[str], place: str, bad: Any, seen: set[str]) -> None:
    if hid in seen:
        return
    seen.add(hid)
    handle = handles.get(hid)
    if not isinstance(handle, Mapping):
        return
    own = _own_nodes(handle, buffers)
    children = [c for c in handle.get("fused_from") or ()]
    listed = [n for c in children if isinstance(handles.get(c), Mapping) for n in _own_nodes(handles[c], buffers)]
    if len(own) > 1 or children:
        missing = [n for n in own if n not in listed]
        extra = [n for n in listed if n not in own]
        if missing:
            bad("fused-constituents", place, f"handle fuses {', '.join(own)} but lists no constituent for {', '.join(missing)}")
        if extra:
            bad("fused-constituents", place, f"handle lists constituent(s) {', '.join(extra)} outside its ir_chain")
        for child in children:
            if child not in handles:
                bad("fused-constituents", place, f"constituent handle {child} is not in the handles table")
    for child in children:
        _fused(child, handles, buffers, place, bad, seen)


def check_log(path: str | os.PathLike[str], *, labels: Iterable[str] | None = None) -> list[Violation]:
    """Every rule on every graph of a TORCH_TRACE log (``labels`` names the graphs)."""
    graphs = read_log_graphs(path)
    names = list(labels) if labels is not None else []
    found: list[Violation] = []
    for i, graph in enumerate(graphs):
        label = names[i] if i < len(names) else f"graph {i} {graph.compile_id}"
        found += check_graph(
            graph.output_code, graph.post_grad_graph, graph.node_mappings, graph.opspec_handles, where=label
        )
    return found
