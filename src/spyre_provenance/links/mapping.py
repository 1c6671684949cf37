"""Pure builders: KernelRecords + the pre/post-grad relation -> upstream-format artifacts.

Also what the diagnostics artifact says of a graph: the cross-check of OpSpec handles with
the kernels' origins, the comparison with upstream's own mapping, and the document itself.

No torch import. Order is deterministic and meaningful: kernels in call-site (handle) order,
post-grad nodes in the order the records list them, pre-grad nodes in the order the
``from_node`` walk meets them. Lists never hold duplicates.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from spyre_provenance.base.process import gc_paused
from spyre_provenance.links.misnamed import misnamed_handles
from spyre_provenance.model.handles import named_nodes
from spyre_provenance.model.post_grad_graph import PostGradGraph
from spyre_provenance.model.records import (
    SHOWN_UPSTREAM_DIFFERENCES,
    BundleHandlesV4,
    DebugHandle,
    DiagnosticsV6,
    GraphDiagnostics,
    GraphResult,
    Inferred,
    KernelRecord,
    KernelStackTraces,
    NodeMap,
    NodeMappingsV2,
    OpSpecRecord,
    UpstreamComparison,
    UpstreamLink,
)

MAPPING_VERSION = 2.0
OPSPEC_ARTIFACT_VERSION = 2


def _append_unique(target: dict[str, list[str]], key: str, value: str) -> None:
    values = target.setdefault(key, [])
    if value not in values:
        values.append(value)


# --- pre-grad <-> post-grad ---------------------------------------------------------------


def pre_post_relation(
    provenance: Mapping[str, Sequence[Mapping[str, Any]]], pre_grad_graph_id: int | None
) -> tuple[NodeMap, NodeMap]:
    """Link post-grad nodes to the pre-grad nodes their ``from_node`` chains reach.

    ``provenance`` is ``{post_grad_node: [NodeSource dict, ...]}`` as
    ``torch.fx.traceback.get_graph_provenance_json`` returns it; a NodeSource dict has
    ``name``, ``graph_id`` and its own ``from_node`` list. Only sources whose ``graph_id``
    is the pre-grad graph's count. The walk is depth first, visiting a source before its
    ancestors and later siblings first, which is the order upstream Inductor reports, so
    the two mappings compare equal list for list.
    """
    pre_to_post: NodeMap = {}
    post_to_pre: NodeMap = {}
    if pre_grad_graph_id is None:
        return pre_to_post, post_to_pre
    for post_node, sources in provenance.items():
        for source in sources:
            if source.get("graph_id") == pre_grad_graph_id:
                _link(pre_to_post, post_to_pre, source["name"], post_node)
            pending = list(source.get("from_node", ()))
            while pending:
                ancestor = pending.pop()
                if ancestor.get("graph_id") == pre_grad_graph_id:
                    _link(pre_to_post, post_to_pre, ancestor["name"], post_node)
                pending.extend(ancestor.get("from_node", ()))
    return pre_to_post, post_to_pre


def subgraph_relation(
    provenance: Mapping[str, Sequence[Mapping[str, Any]]], holders: Mapping[int, Sequence[str]]
) -> NodeMap:
    """Post-grad node -> the top-level pre-grad nodes holding the higher-order op subgraph
    its ``from_node`` chain reaches (``holders``: a subgraph's graph id -> those nodes).

    A checkpointed block, a ``cond`` branch or a score function is traced from its own
    subgraph: the chains of the nodes it becomes end at that subgraph's nodes, never at the
    pre-grad graph's top level; the op holding the subgraph is the pre-grad node they
    compute. A subgraph held by two ops (``invoke_subgraph`` called twice) links neither:
    the chain does not say which call a node came from. Walked as ``pre_post_relation``
    walks."""
    post_to_holders: NodeMap = {}
    for post_node, sources in provenance.items():
        pending = list(reversed(sources))
        while pending:
            source = pending.pop()
            held_by = holders.get(source.get("graph_id"), ())
            if len(held_by) == 1:  # a subgraph two ops call (invoke_subgraph) cannot tell which
                _append_unique(post_to_holders, post_node, held_by[0])
            pending.extend(reversed(source.get("from_node", ())))
    return post_to_holders


def _link(pre_to_post: NodeMap, post_to_pre: NodeMap, pre: str, post: str) -> None:
    _append_unique(pre_to_post, pre, post)
    _append_unique(post_to_pre, post, pre)


# --- kernels --------------------------------------------------------------------------------


def handle_nodes(handle: DebugHandle, buffers: Iterable[str]) -> list[str]:
    """Post-grad nodes a DebugHandle record names (``model.handles.named_nodes``)."""
    return named_nodes(handle, lambda h: h.ir_chain, lambda h: h.fused_from, buffers)


class KernelNodes(msgspec.Struct, frozen=True):
    """The post-grad nodes a kernel call site maps to, and how sure we are."""

    nodes: list[str]
    handleless_opspecs: int = 0
    #: nodes the handles name that Inductor's origins do not, and the reverse
    only_in_handles: list[str] = []
    only_in_origins: list[str] = []

    @property
    def agrees(self) -> bool:
        return not self.only_in_handles and not self.only_in_origins


def kernel_nodes(record: KernelRecord) -> KernelNodes:
    """Nodes for one call site: from OpSpec handles where the backend has them.

    A call site of a higher-order op's subgraph lists the top-level nodes holding it
    (``held_by``). Backends without OpSpecs (stock Inductor) use the kernel's origins, as
    upstream does.
    With OpSpecs the handles drive; an OpSpec without a handle cannot say what it computes,
    so the origins fill in for it rather than leaving the kernel short.
    """
    if record.held_by:  # a subgraph's call site: its own nodes are not the graph's
        return KernelNodes(nodes=list(record.held_by))
    if record.opspecs is None:
        return KernelNodes(nodes=list(record.post_grad_nodes))
    buffers = [spec.buffer for spec in record.opspecs if spec.buffer]
    from_handles: list[str] = []
    handleless = 0
    for spec in record.opspecs:
        if spec.debug_handle is None:
            handleless += 1
            continue
        for name in handle_nodes(spec.debug_handle, buffers):
            if name not in from_handles:
                from_handles.append(name)
    nodes = list(from_handles)
    if handleless or not record.opspecs:
        nodes += [n for n in record.post_grad_nodes if n not in nodes]
    origins = set(record.post_grad_nodes)
    return KernelNodes(
        nodes=nodes,
        handleless_opspecs=handleless,
        only_in_handles=[n for n in from_handles if n not in origins],
        only_in_origins=([] if handleless else [n for n in record.post_grad_nodes if n not in from_handles]),
    )


def leave_out_shadowed(mappings: NodeMappingsV2, shadowed: Collection[str]) -> dict[str, list[str]]:
    """Take out, in place, every link of a post-grad node whose name a higher-order op's
    subgraph prints again (``PostGradGraph.shadowed``): tlparse lights a name's last printed
    line, the subgraph's, so the link would light another node. A kernel keeps its key,
    with fewer nodes or none. Returns kernel key -> the names taken out of its list."""
    left_out: dict[str, list[str]] = {}
    if not shadowed:
        return left_out
    for key, nodes in mappings.cppCodeToPost.items():
        gone = [n for n in nodes if n in shadowed]
        if gone:
            left_out[key] = gone
            nodes[:] = [n for n in nodes if n not in shadowed]
    for name in [n for n in mappings.postToCppCode if n in shadowed]:
        del mappings.postToCppCode[name]
    for name in [n for n in mappings.postToPre if n in shadowed]:
        del mappings.postToPre[name]
    for pre, posts in list(mappings.preToPost.items()):
        posts[:] = [n for n in posts if n not in shadowed]
        if not posts:
            del mappings.preToPost[pre]
    return left_out


def build_node_mappings(
    records: Sequence[KernelRecord],
    pre_to_post: NodeMap,
    post_to_pre: NodeMap,
    inferred: Sequence[Inferred] = (),
) -> NodeMappingsV2:
    """The upstream ``inductor_provenance_tracking_node_mappings`` document, version 2.0.

    ``inferred`` links (``infer_links``) follow a kernel's own nodes in its list.
    """
    cpp_to_post: NodeMap = {}
    post_to_cpp: NodeMap = {}
    extra: dict[str, list[str]] = {}
    for link in inferred:
        extra.setdefault(link.kernel, []).append(link.node)
    with gc_paused():  # 100k call sites make millions of lists: no cyclic-GC rescans
        for record in sorted(records, key=lambda r: r.handle):
            key = record.key  # one string per call site, shared by every list naming it
            # kernel_nodes(record).nodes, without its copy and cross-check where there are
            # no OpSpecs: the nodes are the record's own then
            nodes = record.post_grad_nodes if record.opspecs is None else kernel_nodes(record).nodes
            nodes = list(dict.fromkeys([*nodes, *extra.get(key, ())] if extra else nodes))
            cpp_to_post[key] = nodes
            for node in nodes:  # _append_unique, inlined: this loop runs once per reference
                keys = post_to_cpp.get(node)
                if keys is None:
                    keys = post_to_cpp[node] = []
                if key not in keys:
                    keys.append(key)
        return NodeMappingsV2(
            version=MAPPING_VERSION,
            preToPost={k: list(v) for k, v in pre_to_post.items()},
            postToPre={k: list(v) for k, v in post_to_pre.items()},
            cppCodeToPost=cpp_to_post,
            postToCppCode=post_to_cpp,
        )


def build_stack_traces(
    records: Sequence[KernelRecord], borrowed: Mapping[str, Sequence[str]] | None = None
) -> KernelStackTraces:
    """``inductor_provenance_tracking_kernel_stack_traces``: call site -> stack traces;
    ``borrowed`` (``inference.borrowed_traces``) follow a kernel's own."""
    borrowed = borrowed or {}
    return {
        r.key: list(dict.fromkeys([*r.stack_traces, *borrowed.get(r.key, ())]))
        for r in sorted(records, key=lambda r: r.handle)
    }


# --- the Spyre companion artifact ---------------------------------------------------------


def build_opspec_artifact(records: Sequence[KernelRecord]) -> dict[str, Any] | None:
    """``spyre_opspec_debug_handles`` v2: per call site its OpSpecs, handles by id, and
    the bundle it runs (provenance key, folder name).

    Handles are flattened into one ``handles`` table so a fused handle refers to its
    constituents by id instead of repeating them. None when no record has OpSpecs.
    """
    with_specs = [r for r in sorted(records, key=lambda r: r.handle) if r.opspecs is not None]
    if not with_specs:
        return None
    kernels: dict[str, list[dict[str, Any]]] = {}
    handles: dict[str, dict[str, Any]] = {}
    for record in with_specs:
        kernels[record.key] = [_opspec_entry(spec, handles) for spec in record.opspecs or ()]
    bundles = {r.key: {"provenance_key": r.provenance_key, "folder": r.bundle_folder} for r in with_specs}
    return {"version": OPSPEC_ARTIFACT_VERSION, "kernels": kernels, "handles": handles, "bundles": bundles}


def _opspec_entry(spec: OpSpecRecord, handles: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "op": spec.op,
        "is_reduction": spec.is_reduction,
        "iteration_space": list(spec.iteration_space),
        "buffer": spec.buffer,
        "debug_handle": None if spec.debug_handle is None else _flatten(spec.debug_handle, handles),
    }


def _flatten(handle: DebugHandle, handles: dict[str, dict[str, Any]]) -> str:
    key = str(handle.id)
    if key not in handles:
        handles[key] = {
            "source": msgspec.to_builtins(handle.source),
            "aten_op": handle.aten_op,
            "ir_chain": list(handle.ir_chain),
            "fused_from": [_flatten(child, handles) for child in handle.fused_from],
            "transform_history": msgspec.to_builtins(list(handle.transform_history)),
        }
    return key


# json.dumps(..., ensure_ascii=False) is this encoder's encode(); used piecewise below.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_CHUNK = 16384  # map entries encoded at a time: bounds the text held besides the output


def to_json_bytes(document: Any) -> bytes:
    """Canonical bytes for an artifact: key order as built, compact separators like upstream.

    Upstream serializes with ``json.dumps`` defaults (``", "`` and ``": "``); we do the
    same so a byte comparison with an upstream artifact is meaningful.

    The bytes are exactly ``json.dumps(msgspec.to_builtins(document), ensure_ascii=False)``
    encoded as UTF-8, written piece by piece: top-level values one at a time and large maps
    ``_CHUNK`` entries at a time, into one growing buffer. A 100 MB mapping then needs no
    builtins copy of itself and no whole-document text next to the bytes (peak memory about
    the document plus its bytes, not three times that).
    """
    with gc_paused():
        items = _top_level_items(document)
        if items is None:
            return _encode(document)
        out = io.BytesIO()
        out.write(b"{")
        for index, (key, value) in enumerate(items):
            if index:
                out.write(b", ")
            out.write(_encode(key))
            out.write(b": ")
            if isinstance(value, dict) and len(value) > _CHUNK:
                _write_map(out, value)
            else:
                out.write(_encode(value))
        out.write(b"}")
        return out.getvalue()  # hands over the buffer itself, no copy


def _top_level_items(document: Any) -> list[tuple[str, Any]] | None:
    """(key, value) pairs as ``msgspec.to_builtins`` would give them, or None when the
    top level is something this writer leaves to the one-shot encoder."""
    if isinstance(document, dict):
        return list(document.items()) if all(type(k) is str for k in document) else None
    if isinstance(document, msgspec.Struct):
        config = document.__struct_config__
        if config.omit_defaults or config.array_like or config.tag_field is not None:
            return None
        return [
            (field.encode_name, value)
            for field in msgspec.structs.fields(document)
            if (value := getattr(document, field.name)) is not msgspec.UNSET
        ]
    return None


def _write_map(out: io.BytesIO, value: dict[Any, Any]) -> None:
    """``{...}`` of a large map, written in chunks; the same bytes as encoding it at once."""
    entries = iter(value.items())
    out.write(b"{")
    first = True
    while chunk := dict(itertools.islice(entries, _CHUNK)):
        if not first:
            out.write(b", ")
        out.write(_encode(chunk)[1:-1])  # the chunk's entries without its braces
        first = False
    out.write(b"}")


def _encode(value: Any) -> bytes:
    """``json.dumps(msgspec.to_builtins(value), ensure_ascii=False)`` as UTF-8 bytes.

    Plain JSON values (dicts, lists, strings, numbers) encode as they are, which is what
    ``to_builtins`` would hand over anyway; anything else (Structs, sets, bytes, ...) goes
    through ``to_builtins`` first, as before.
    """
    try:
        text = _ENCODER.encode(value)
    except TypeError:
        text = _ENCODER.encode(msgspec.to_builtins(value))
    return text.encode("utf-8")


def kernels_by_node(cpp_to_post: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Post-grad node -> the kernel keys listing it, in key order (a map's inverse)."""
    kernels_of: dict[str, list[str]] = {}
    for key, names in cpp_to_post.items():
        for name in names:
            kernels_of.setdefault(name, []).append(key)
    return kernels_of


def kernels_of_users(graph: PostGradGraph, name: str, kernels_of: Mapping[str, Sequence[str]]) -> list[str]:
    """The kernels that compute the users of ``name``: its users' own, and for users no
    kernel lists (a view, an inlined op), theirs, transitively. In graph order, once each."""
    found: list[str] = []
    for user in graph.users_past(name, lambda user: user not in kernels_of):
        found.extend(k for k in kernels_of[user] if k not in found)
    return found


def _reads(graph: PostGradGraph, name: str) -> set[str]:
    """The nodes ``name`` reads, looking through views (Inductor folds a view into the
    indexing of its reader, so the reader reads what the view describes)."""
    found: set[str] = set()
    node = graph.get(name)
    pending = list(node.inputs) if node is not None else []
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.add(current)
        read = graph.get(current)
        if read is not None and read.is_view:
            pending.extend(read.inputs)
    return found


def infer_links(records: Sequence[KernelRecord], graph: PostGradGraph) -> list[Inferred]:
    """Post-grad nodes a kernel computes or serves that its schedule's origins leave out.

    - ``consumer``: a kernel whose nodes are all graph inputs (a weight's layout copy) has
      nothing tlparse can highlight; it is listed with the nodes that read what it writes
      and read that input, directly or through views (``KernelRecord.consumers``).
    - ``inlined``: a compute node no kernel lists but whose users' kernels compute it (a
      constant fill inlined into a scatter's initialisation): listed with those kernels.

    Graph order, then call-site order; nothing a kernel already lists.
    """
    nodes_of = {
        r.key: list(dict.fromkeys(kernel_nodes(r).nodes if r.opspecs is not None else r.post_grad_nodes))
        for r in records
    }
    found: list[Inferred] = []
    for record in sorted(records, key=lambda r: r.handle):
        own = nodes_of[record.key]
        if not own or any(graph.get(n) is None or graph.has_line(n) for n in own):
            continue
        for name in record.consumers:
            node = graph.get(name)
            if node is not None and node.line and _reads(graph, name) & set(own) and name not in own:
                found.append(Inferred(name, record.key, "consumer"))
    kernels_of = kernels_by_node(nodes_of)
    for link in found:
        kernels_of.setdefault(link.node, []).append(link.kernel)
    outputs = set(graph.outputs)
    for node in graph.nodes:
        if not node.computes or node.name in kernels_of:
            continue
        if not graph.users(node.name) and node.name not in outputs:
            continue  # dead code: nothing computes it
        found.extend(Inferred(node.name, key, "inlined") for key in kernels_of_users(graph, node.name, kernels_of))
    return found


# --- the graph's diagnostics ------------------------------------------------------------------


def cross_check(records: list[KernelRecord], diag: GraphDiagnostics, graph: PostGradGraph | None = None) -> None:
    """Count handle-less OpSpecs and call sites whose handles disagree with the origins: on
    the nodes, or, where the FX graph is at hand, on a node's own op or line
    (``links.misnamed``: torch-spyre main's ``origin_node`` rule, each OpSpec listed in
    ``misnamed_handles``)."""
    diag.misnamed_handles = misnamed_handles(records, graph) if graph is not None else []
    misnamed = {m.kernel for m in diag.misnamed_handles}
    for record in records:
        if record.opspecs is None:
            continue
        nodes = kernel_nodes(record)
        diag.opspecs += len(record.opspecs)
        diag.handleless_opspecs += nodes.handleless_opspecs
        if (not nodes.agrees or record.key in misnamed) and record.key not in diag.disagreements:
            diag.disagreements.append(record.key)


#: The maps two mappings are compared on: the other two are their inverses (the validator
#: holds every mapping to that), so comparing them again would count each link twice.
COMPARED_MAPS = ("preToPost", "cppCodeToPost")


def matches_upstream(ours: NodeMappingsV2, upstream: dict[str, Any]) -> UpstreamComparison | None:
    """How our mapping relates to Inductor's own for the graph, link by link: ``equal``,
    ``extends`` it (every link of Inductor's, and more: the links the hook adds), or
    ``differs`` (some link of Inductor's is not ours). None when Inductor had nothing
    comparable (no ``cppCodeToPost``). The order inside one list is no difference."""
    theirs = upstream or {}
    if not theirs.get("cppCodeToPost"):
        return None
    mine = msgspec.to_builtins(ours)
    added, missing = 0, []
    for field in COMPARED_MAPS:
        our_links = _links(mine.get(field))
        their_links = _links(theirs.get(field))
        added += len(our_links - their_links)
        missing += [UpstreamLink(field, key, value) for key, value in sorted(their_links - our_links)]
    relation = "differs" if missing else "extends" if added else "equal"
    return UpstreamComparison(
        relation=relation, added=added, missing=len(missing), differences=missing[:SHOWN_UPSTREAM_DIFFERENCES]
    )


def _links(table: Any) -> set[tuple[str, str]]:
    """A map's ``(key, value)`` pairs; what is not a map of lists has none."""
    if not isinstance(table, dict):
        return set()
    return {(str(k), str(v)) for k, values in table.items() if isinstance(values, list) for v in values}


def diagnostics_document(result: GraphResult) -> dict[str, Any]:
    """The ``spyre_provenance_diagnostics`` document of a graph, as it is logged and written."""
    diag = result.diagnostics
    return msgspec.to_builtins(
        DiagnosticsV6(
            compile_id=result.compile_id,
            graph=result.kind,
            backend=result.backend,
            partial=diag.partial,
            complete=diag.complete,
            mapping=diag.mapping,
            faults=list(diag.fault_records),
            kernels=len(result.records),
            opspecs=diag.opspecs,
            handleless_opspecs=diag.handleless_opspecs,
            disagreements=list(diag.disagreements),
            matches_upstream=diag.matches_upstream,
            coverage=diag.coverage,
            inferred=list(diag.inferred),
            violations=list(diag.violations),
            hints=list(diag.hints),
            bundle_handles=diag.bundle_handles,
            inferred_sources=list(diag.inferred_sources),
            inferred_pre_grad=list(diag.inferred_pre_grad),
            without_source=list(diag.without_source),
            without_pre_grad=list(diag.without_pre_grad),
            cache=diag.cache,
            misnamed_handles=list(diag.misnamed_handles),
            module_stacks={r.key: r.module_stacks for r in result.records if r.module_stacks},
        )
    )


def check_bundle_handles(
    opspecs: Sequence[OpSpecRecord],
    served: Sequence[Mapping[str, Any] | None],
    compile_handles: Collection[str] = (),
) -> BundleHandlesV4:
    """A kernel's bundles (their ``debug_handle_``, one per OpSpec in order) against the
    handles of this call site's OpSpecs, by id. A bundle with another handle is ``shared``
    when that handle is one of this compile's (``compile_handles``, the ids of every
    OpSpec handle of its call sites: one kernel called from several call sites has its
    bundles written once, from the first) and ``stale`` when it is none of them (an
    earlier compile's, served from the kernel cache). An OpSpec without a bundle counts as
    missing, a bundle without an OpSpec as stale when it carries a handle: never silently
    skipped."""
    stale = missing = shared = 0
    checked = max(len(opspecs), len(served))
    for i in range(checked):
        mine = opspecs[i].debug_handle if i < len(opspecs) else None
        theirs = served[i] if i < len(served) else None
        if i >= len(served) or (theirs is None and mine is not None):
            missing += 1
        elif theirs is not None and (mine is None or str(theirs.get("id")) != str(mine.id)):
            if str(theirs.get("id")) in compile_handles:
                shared += 1
            else:
                stale += 1
    return BundleHandlesV4(checked=checked, stale=stale, missing=missing, shared=shared)


def handle_ids(records: Iterable[KernelRecord]) -> set[str]:
    """The ids of every OpSpec debug handle of these call sites (``check_bundle_handles``)."""
    return {str(spec.debug_handle.id) for r in records for spec in r.opspecs or () if spec.debug_handle is not None}
