"""Coverage of one graph's provenance: the one judge behind every verdict on it.

The summary of ``compile``, the diagnostics artifact, the invariants of ``golden check`` and
``golden update`` and the tests all call ``judge``, on what tlparse reads: the generated
wrapper code, the post-grad graph, the node mappings and, on Spyre backends, the OpSpec
debug handles. Coverage, not op counts:

1. ``call-sites``: every kernel call in the wrapper is announced by one
   ``[Provenance debug handles] name:N`` comment whose ``name:N`` is a mapping key, the line
   tlparse highlights for it is that call, and every mapping key has its call.
2. ``kernel-link``: every mapping key lists at least one post-grad node that has a line of
   its own in the post-grad graph (a graph input has none: tlparse can highlight nothing),
   and only nodes the graph has.
3. ``node-reach``: every post-grad compute node reaches a kernel, or needs none for a stated
   reason: a view or metadata op (by rule, ``model.post_grad_graph.NO_KERNEL_OPS``), dead code
   (no user, not an output), a constant no kernel needs. A node computed inside its users' kernels (inlined)
   must be listed there.
4. ``opspec-handle``: every OpSpec carries a debug handle whose ``ir_chain`` names real
   post-grad nodes, all mapped to its kernel.
5. ``fused-constituents``: a handle naming several nodes lists one constituent per node.

For stock Inductor (``upstream=True``) the mapping is torch's own: its gaps are reported as
hints, not violations. The post-grad graph comes in as a ``PostGradGraph``, read from the
logged text (``logs.post_grad.parse_post_grad_graph``) or from the FX graph itself (the hook); both
readers give the same nodes (tests/models/test_zoo.py checks it on every graph of the zoo).
``judge_logged`` and ``check_log`` judge the graphs of a TORCH_TRACE log
(``logs.graphs.read_log_graphs``): golden files pin *what* the provenance says, these rules
say it is *complete*, for any model on any compiler version.

Pure module: no torch import.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from spyre_provenance.links.mapping import kernels_by_node, kernels_of_users
from spyre_provenance.logs import wrapper_code
from spyre_provenance.model.handles import named_nodes
from spyre_provenance.model.post_grad_graph import FACTORY_OPS, GraphNode, PostGradGraph
from spyre_provenance.model.records import CoverageCounts, CoverageCountsV4, ExemptNodes, Violation

if TYPE_CHECKING:
    from spyre_provenance.logs.graphs import LoggedGraph

# --- the judge --------------------------------------------------------------------------------


class GraphCoverage(msgspec.Struct):
    """The judge's verdict on one graph: counts, violations (failures), hints (not)."""

    counts: CoverageCountsV4
    violations: list[Violation]
    hints: list[str]
    linked: list[str] = msgspec.field(default_factory=list)  # the call sites counted as linked
    without_source: list[str] = msgspec.field(default_factory=list)  # kernel keys without a source line
    without_pre_grad: list[str] = msgspec.field(default_factory=list)  # kernel keys reaching no pre-grad node

    @property
    def complete(self) -> bool:
        return not self.violations

    @property
    def kernels(self) -> int:
        return self.counts.kernels

    @property
    def kernels_with_source(self) -> int:
        return self.counts.kernels_with_source


def judge(
    output_code: str | None,
    graph: PostGradGraph | None,
    node_mappings: Mapping[str, Any] | None,
    opspec_handles: Mapping[str, Any] | None = None,
    stack_traces: Mapping[str, Sequence[str]] | None = None,
    *,
    upstream: bool = False,
    where: str = "",
) -> GraphCoverage:
    """Every coverage rule on one graph.

    ``opspec_handles`` None skips rules 4 and 5 (backends without OpSpecs). ``upstream``:
    the mapping is stock Inductor's own, so its gaps are hints. A missing wrapper, graph or
    mapping is itself a violation: coverage cannot be shown.
    """
    found = _Findings(where, upstream)
    counts = CoverageCountsV4()
    linked: list[str] = []
    cpp_to_post = _map((node_mappings or {}).get("cppCodeToPost"))
    if node_mappings is None:
        found.bad("call-sites", "", "no node mappings to check")
    if output_code is None:
        found.bad("call-sites", "", "no wrapper code to check the mapping keys against")
    else:
        counts.call_sites, counts.linked_call_sites = _call_sites(output_code, cpp_to_post, graph, found, linked)
    if graph is None:
        found.bad("node-reach", "", "no post-grad graph to check node coverage against")
    else:
        _kernel_links(graph, cpp_to_post, found)
        _node_reach(graph, cpp_to_post, counts, found)
    if opspec_handles is not None:
        names = {n.name for n in graph.nodes} if graph is not None else None
        holders = {n.name for n in graph.nodes if n.op.startswith(HIGHER_ORDER)} if graph is not None else set()
        shadowed = graph.shadowed if graph is not None else frozenset()
        _opspecs(opspec_handles, cpp_to_post, names, found, holders, shadowed)
    traces = stack_traces or {}
    post_to_pre = _map((node_mappings or {}).get("postToPre"))
    without_source = [k for k in cpp_to_post if not any(t.strip() for t in traces.get(k, ()))]
    without_pre_grad = [k for k, nodes in cpp_to_post.items() if not any(post_to_pre.get(n) for n in nodes)]
    counts.kernels = len(cpp_to_post)
    counts.kernels_with_source = counts.kernels - len(without_source)
    counts.kernels_with_pre_grad = counts.kernels - len(without_pre_grad)
    return GraphCoverage(
        counts=counts,
        violations=found.violations,
        hints=found.hints,
        linked=linked,
        without_source=without_source,
        without_pre_grad=without_pre_grad,
    )


#: The namespace of higher-order ops as a post-grad node's op reads (``higher_order.cond``).
HIGHER_ORDER = "higher_order."


class _Findings:
    def __init__(self, where: str, upstream: bool) -> None:
        self.where = where
        self.upstream = upstream
        self.violations: list[Violation] = []
        self.hints: list[str] = []

    def _place(self, place: str) -> str:
        if self.where and place:
            return f"{self.where}: {place}"
        return place or self.where or "graph"

    def bad(self, rule: str, place: str, message: str) -> None:
        self.violations.append(Violation(rule, self._place(place), message))

    def gap(self, rule: str, place: str, message: str) -> None:
        """A gap of the mapping: a violation, or on stock Inductor upstream's own (a hint)."""
        if self.upstream:
            self.hints.append(f"{self._place(place)}: {message} (a gap of stock Inductor's own mapping) [{rule}]")
        else:
            self.bad(rule, place, message)


def _map(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): [str(x) for x in v] for k, v in value.items() if isinstance(v, list)}


def _call_sites(
    code: str,
    cpp_to_post: Mapping[str, list[str]],
    graph: PostGradGraph | None,
    found: _Findings,
    linked_keys: list[str],
) -> tuple[int, int]:
    """(call sites, linked call sites); the linked ones' keys go to ``linked_keys``, the
    call-sites rule's findings to ``found``."""
    sites = wrapper_code.call_sites(code)
    comments = wrapper_code.handle_comments(code)
    shown_at = wrapper_code.TlparseLines(code)
    linked = 0
    for site in sites:
        if _site_mapped(site, cpp_to_post, graph, found) and _site_lit(site, shown_at, found):
            assert site.key is not None  # a mapped site has its key
            if graph is None or any(graph.has_line(n) and n not in graph.shadowed for n in cpp_to_post[site.key]):
                linked += 1
                linked_keys.append(site.key)
    _check_comments(comments, sites, cpp_to_post, found)
    return len(sites), linked


def _site_mapped(
    site: wrapper_code.CallSite, cpp_to_post: Mapping[str, list[str]], graph: PostGradGraph | None, found: _Findings
) -> bool:
    """Whether a call site has a handle comment whose key the mapping maps to nodes; else
    the call-sites rule's finding (a hint where the hook left the links out on purpose)."""
    if site.key is None:
        found.gap("call-sites", f"wrapper line {site.line}", f"call of {site.name} has no handle comment")
        return False
    if not cpp_to_post.get(site.key) and site.key in cpp_to_post and graph is not None and graph.shadowed:
        # the hook left its links out (mapping.leave_out_shadowed): a key, no false link
        found.hints.append(
            f"{found._place(site.key)}: mapped to no node: its post-grad nodes' names repeat in a higher-order"
            " op's subgraph, whose line the page would light instead, so the link is left out [kernel-link]"
        )
        return False
    if not cpp_to_post.get(site.key):
        found.bad(
            "call-sites",
            site.key,
            f"called at wrapper line {site.line} but not a mapping key"
            + (" (mapped to no node)" if site.key in cpp_to_post else ""),
        )
        return False
    return True


def _site_lit(site: wrapper_code.CallSite, shown_at: wrapper_code.TlparseLines, found: _Findings) -> bool:
    """Whether tlparse lights the call itself for the site's key; else the finding saying
    what it lights instead (a hint for a call in a subgraph function, which it never searches)."""
    assert site.key is not None
    shown = shown_at.line(site.key)
    if shown == site.line:
        return True
    if site.subgraph is not None:
        # tlparse searches a key from ``def call(args)`` on: a call in a subgraph function
        # written before it (a cond branch) is never lit. The mapping has it; the page cannot.
        found.hints.append(
            f"{found._place(site.key)}: called in {site.subgraph} (a higher-order op's subgraph, wrapper line"
            f" {site.line}), which tlparse does not search: its page does not light this call [call-sites]"
        )
        return False
    what = f"line {shown}" if shown is not None else "every line naming the kernel"
    if shown is not None and wrapper_code.is_pool_allocation(shown_at.lines[shown - 1], site.name):
        what = f"the pool allocation at line {shown}"
    message = f"tlparse highlights {what}, not the call at wrapper line {site.line}"
    if site.name not in shown_at.lines[site.line - 1]:
        # torch's timeline profile wrapper (wrapper_code.profile_wrappers): the call line
        # never names the kernel, so tlparse cannot find it; on stock Inductor a hint
        found.gap("call-sites", site.key, f"{message}, which calls it through torch's timeline profile wrapper")
    else:
        found.bad("call-sites", site.key, message)
    return False


def _check_comments(
    comments: list[str], sites: list[wrapper_code.CallSite], cpp_to_post: Mapping[str, list[str]], found: _Findings
) -> None:
    """Each key announced once, followed by its call, and each mapping key announced."""
    seen: set[str] = set()
    for key in comments:
        if key in seen:
            found.bad("call-sites", key, "announced by more than one handle comment")
        seen.add(key)
    called = {site.key for site in sites if site.key}
    for key in comments:
        if key not in called:
            found.bad("call-sites", key, "a handle comment announces it, but no kernel call follows")
    for key in cpp_to_post:
        if key not in seen:
            found.bad("call-sites", key, "mapping key without a call site in the wrapper")


def _kernel_links(graph: PostGradGraph, cpp_to_post: Mapping[str, list[str]], found: _Findings) -> None:
    for key, names in cpp_to_post.items():
        missing = [n for n in names if graph.get(n) is None]
        for name in missing:
            # on stock Inductor a gap of torch's own mapping (a hint): it lists a cond
            # branch's kernels with the branch's own nodes, which the graph does not hold
            found.gap("kernel-link", key, f"maps to {name}, which is not a node of the post-grad graph")
        if names and not missing and all(n in graph.shadowed for n in names):
            # stock Inductor's own mapping, kept as torch wrote it (the hook leaves these out)
            found.hints.append(
                f"{found._place(key)}: maps only to {', '.join(names)}, whose name(s) a higher-order op's subgraph"
                " prints too: the page lights the subgraph's line, not this kernel's node [kernel-link]"
            )
        elif names and not missing and not any(graph.has_line(n) for n in names):
            found.gap(
                "kernel-link",
                key,
                f"maps only to {', '.join(names)}, which {'has' if len(names) == 1 else 'have'} no line of"
                " its own in the post-grad graph (graph inputs): tlparse highlights nothing for it",
            )


def _node_reach(
    graph: PostGradGraph, cpp_to_post: Mapping[str, list[str]], counts: CoverageCounts, found: _Findings
) -> None:
    kernels_of = kernels_by_node(cpp_to_post)
    exempt = ExemptNodes()
    outputs = set(graph.outputs)
    for node in graph.nodes:
        if node.is_view:
            exempt.view += 1
            continue
        if not node.computes:
            continue
        counts.compute_nodes += 1
        if node.name in kernels_of:
            counts.reached_nodes += 1
            continue
        if not graph.users(node.name) and node.name not in outputs:
            exempt.dead += 1
            continue
        if node.name in graph.shadowed:
            # its links are left out (mapping.leave_out_shadowed): not reached, not a violation
            found.hints.append(
                f"{found._place(node.name)}: post-grad compute node ({node.op}) listed by no kernel: its name repeats"
                " in a higher-order op's subgraph, whose line the page would light instead [node-reach]"
            )
            continue
        inside = kernels_of_users(graph, node.name, kernels_of)
        if inside:
            found.gap(
                "node-reach",
                node.name,
                f"post-grad compute node ({node.op}) is computed inside {', '.join(inside)} (inlined into its"
                " users), but no kernel lists it",
            )
        elif _is_constant(graph, node):
            exempt.constant += 1
        else:
            found.gap("node-reach", node.name, f"post-grad compute node ({node.op}) reaches no kernel")
    counts.exempt_nodes = exempt


def _is_constant(graph: PostGradGraph, node: GraphNode) -> bool:
    """A factory op of no tensor: its value needs no kernel unless a user reads it."""
    _, _, op = node.op.partition(".")
    return op in FACTORY_OPS and not any(graph.get(i) is not None for i in node.inputs)


# --- OpSpec handles (rules 4 and 5) ---------------------------------------------------------


def _opspecs(
    doc: Mapping[str, Any],
    cpp_to_post: Mapping[str, list[str]],
    graph_nodes: set[str] | None,
    found: _Findings,
    holders: set[str] = frozenset(),  # type: ignore[assignment]
    shadowed: Collection[str] = frozenset(),
) -> None:
    """Every OpSpec has a handle naming nodes of its kernel's mapping. A kernel of a
    higher-order op's subgraph (mapped to the op holding it, a ``cond``) has handles naming
    the subgraph's own nodes, which are not the graph's: only their presence is checked."""
    kernels, handles = (_table(doc, name) for name in ("kernels", "handles"))
    for key, specs in kernels.items():
        if key not in cpp_to_post:
            found.bad("opspec-handle", key, "has OpSpecs but is not a mapping key")
        specs = specs if isinstance(specs, list) else []
        buffers = {buffer for s in specs if isinstance(s, Mapping) and (buffer := s.get("buffer"))}
        mapped = set(cpp_to_post.get(key, ()))
        in_subgraph = bool(mapped) and mapped <= holders
        for i, spec in enumerate(specs):
            place = f"{key} OpSpec {i} ({spec.get('buffer') or '?'}, {spec.get('op')})"
            hid = spec.get("debug_handle")
            if hid is None:
                found.bad("opspec-handle", place, "carries no debug handle")
                continue
            if not isinstance(handles.get(hid), Mapping):
                found.bad("opspec-handle", place, f"debug handle {hid} is not in the handles table")
                continue
            named = handle_nodes(hid, handles, buffers)
            if not named:
                found.bad("opspec-handle", place, "debug handle names no post-grad node (empty ir_chain)")
            if in_subgraph:
                continue
            for name in named:
                if graph_nodes is not None and name not in graph_nodes:
                    found.bad("opspec-handle", place, f"debug handle names {name}, which is not a post-grad node")
                elif name not in mapped and name not in shadowed:  # a shadowed node's link is left out
                    found.bad("opspec-handle", place, f"debug handle names {name}, which the kernel's mapping lacks")
            _fused(hid, handles, buffers, place, found, set())


def _table(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``doc[name]`` when it is an object, else empty (nothing of a malformed table to check)."""
    value = doc.get(name)
    return value if isinstance(value, Mapping) else {}


def _own_nodes(handle: Mapping[str, Any], buffers: Iterable[str]) -> list[str]:
    skip = set(buffers)
    return [n for n in handle.get("ir_chain") or () if n not in skip]


def handle_nodes(hid: str, handles: Mapping[str, Any], buffers: Iterable[str]) -> list[str]:
    """Nodes a handle of the artifact's flattened table names (``model.handles.named_nodes``;
    an id missing from the table names nothing)."""

    def entry(key: str) -> Mapping[str, Any]:
        found = handles.get(key)
        return found if isinstance(found, Mapping) else {}

    return named_nodes(
        hid, lambda key: entry(key).get("ir_chain") or (), lambda key: entry(key).get("fused_from") or (), buffers
    )


def _fused(
    hid: str, handles: Mapping[str, Any], buffers: set[str], place: str, found: _Findings, seen: set[str]
) -> None:
    if hid in seen:
        return
    seen.add(hid)
    handle = handles.get(hid)
    if not isinstance(handle, Mapping):
        return
    own = _own_nodes(handle, buffers)
    children = list(handle.get("fused_from") or ())
    listed = [n for c in children if isinstance(handles.get(c), Mapping) for n in _own_nodes(handles[c], buffers)]
    if len(own) > 1 or children:
        missing = [n for n in own if n not in listed]
        extra = [n for n in listed if n not in own]
        if missing:
            found.bad(
                "fused-constituents",
                place,
                f"handle fuses {', '.join(own)} but lists no constituent for {', '.join(missing)}",
            )
        if extra:
            found.bad(
                "fused-constituents", place, f"handle lists constituent(s) {', '.join(extra)} outside its ir_chain"
            )
        for child in children:
            if child not in handles:
                found.bad("fused-constituents", place, f"constituent handle {child} is not in the handles table")
    for child in children:
        _fused(child, handles, buffers, place, found, seen)


# --- on a log -----------------------------------------------------------------------------------


def judge_logged(graph: LoggedGraph, where: str = "") -> GraphCoverage:
    """The judge's full verdict (counts, violations, hints) on one logged graph."""
    # Imported here, not at the top: the hook judges every graph it tracks but never reads
    # a log, and a tracked process should not pay for importing the log readers.
    from spyre_provenance.logs.post_grad import parse_post_grad_graph

    parsed = parse_post_grad_graph(graph.post_grad_graph) if graph.post_grad_graph is not None else None
    return judge(
        graph.output_code,
        parsed,
        graph.node_mappings,
        graph.opspec_handles,
        graph.stack_traces,
        upstream=graph.upstream,
        where=where,
    )


def check_log(path: str | os.PathLike[str], *, labels: Iterable[str] | None = None) -> list[Violation]:
    """Every rule on every graph of a TORCH_TRACE log (``labels`` names the graphs)."""
    from spyre_provenance.logs.graphs import read_log_graphs  # see judge_logged

    graphs = read_log_graphs(path)
    names = list(labels) if labels is not None else []
    found: list[Violation] = []
    for i, graph in enumerate(graphs):
        label = names[i] if i < len(names) else f"graph {i} {graph.compile_id}"
        found += judge_logged(graph, label).violations
    return found
