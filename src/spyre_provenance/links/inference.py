"""What the hook infers beyond a kernel's own nodes: source lines and pre-grad links.

Inductor's provenance rides each kernel's origins (post-grad nodes) and each node's
``from_node`` chain (pre-grad nodes). Three kinds of kernel fall through:

- write-backs: functionalization ends a graph with ``copy_`` nodes that write a mutated
  value back into its input (BatchNorm's running mean and variance); they carry no stack
  trace and no ``from_node``, while the value they copy has both;
- helpers of other nodes: the kernel that draws a graph's random seeds, a weight's layout
  copy; their readers say what they are for;
- gradients: the nodes autograd creates in the backward graph have no ``from_node`` chain
  into the pre-grad graph, but AOTAutograd gives each the ``seq_nr`` of the forward op it
  differentiates, and that forward op has its pre-grad nodes.

Each inference is recorded with its reason (diagnostics ``inferred_sources`` and
``inferred_pre_grad``), and a kernel that still has no source line or no pre-grad node is
named with why (``without_source``, ``without_pre_grad``): nothing is claimed silently.

Pure: no torch. The facts come in as a ``PostGradGraph`` whose ``facts`` the hook read from
the FX graph.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from spyre_provenance.model.frames import frames
from spyre_provenance.model.post_grad_graph import GraphNode, PostGradGraph
from spyre_provenance.model.records import InferredPreGrad, InferredSource, KernelGap, NodeMap

#: The op functionalization writes a mutated value back into its input with.
WRITE_BACK_OP = "aten.copy_"


def _computing(graph: PostGradGraph, name: str) -> str:
    """``name``, or for a view the node it re-describes (Inductor folds views away)."""
    seen = set()
    node = graph.get(name)
    while node is not None and node.is_view and node.inputs and name not in seen:
        seen.add(name)
        name = node.inputs[0]
        node = graph.get(name)
    return name


def written_back(graph: PostGradGraph, name: str) -> str | None:
    """The value a write-back node copies (looking through views), else None."""
    node = graph.get(name)
    if node is None or node.op != WRITE_BACK_OP or len(node.inputs) < 2:
        return None
    return _computing(graph, node.inputs[1])


def _readers(graph: PostGradGraph, name: str) -> list[str]:
    """The nodes reading ``name``, looking through views, in graph order."""

    def is_view(user: str) -> bool:
        node = graph.get(user)
        return node is not None and node.is_view

    return graph.users_past(name, is_view)


# --- source lines ---------------------------------------------------------------------------


def infer_sources(
    kernels: Mapping[str, Sequence[str]],
    own_traces: Mapping[str, Sequence[str]],
    graph: PostGradGraph,
    listed_because: Mapping[tuple[str, str], str] | None = None,
) -> list[InferredSource]:
    """Where each kernel without a stack trace of its own takes its source line from.

    ``kernels``: kernel key -> its post-grad nodes (the mapping's list); ``own_traces``:
    what Inductor's ``get_stack_traces`` gave each kernel; ``listed_because``: (node,
    kernel) -> why the mapping lists a node the kernel's origins do not (``inlined``,
    ``consumer``). In order of preference: a listed node that has a trace (it is computed
    there, or it is what the kernel serves), the value a write-back copies, the nodes that
    read what the kernel computes. Kernel order, then graph order.
    """
    listed_because = listed_because or {}
    found: list[InferredSource] = []
    for key, nodes in kernels.items():
        if any(t.strip() for t in own_traces.get(key, ())):
            continue
        if graph.all_inserted(nodes):  # a backend's own nodes: no source line they do not carry
            continue
        borrowed = [
            InferredSource(key, n, listed_because.get((n, key), "inlined")) for n in nodes if graph.stack_trace(n)
        ]
        if not borrowed:
            for name in nodes:
                copied = written_back(graph, name)
                if copied is not None and graph.stack_trace(copied):
                    borrowed.append(InferredSource(key, copied, "write-back"))
        if not borrowed:
            readers = dict.fromkeys(r for n in nodes for r in _readers(graph, n) if r not in nodes)
            borrowed = [InferredSource(key, r, "consumer") for r in readers if graph.stack_trace(r)]
        if not borrowed:
            operands = dict.fromkeys(o for n in nodes for o in _operands(graph, n) if o not in nodes)
            borrowed = [InferredSource(key, o, "inputs") for o in operands if graph.stack_trace(o)]
        found.extend(dict.fromkeys(borrowed))
    return found


def _operands(graph: PostGradGraph, name: str) -> list[str]:
    """The values ``name`` is computed from, looking through views, in input order."""
    node = graph.get(name)
    return list(dict.fromkeys(_computing(graph, i) for i in node.inputs)) if node is not None else []


def borrowed_traces(inferred: Sequence[InferredSource], graph: PostGradGraph) -> dict[str, list[str]]:
    """Kernel key -> the stack traces its inferred sources give it, once each."""
    traces: dict[str, list[str]] = {}
    for link in inferred:
        trace = graph.stack_trace(link.node)
        if trace and trace not in traces.setdefault(link.kernel, []):
            traces[link.kernel].append(trace)
    return traces


#: How a gap's reason names the option that fills it on stock Inductor.
BEYOND_UPSTREAM = "--beyond-upstream"


def source_gaps(
    missing: Sequence[str],
    kernels: Mapping[str, Sequence[str]],
    graph: PostGradGraph,
    not_taken: Sequence[InferredSource] = (),
) -> list[KernelGap]:
    """Why each kernel in ``missing`` (keys without a source line) has none. ``not_taken``:
    what ``infer_sources`` found but the hook did not apply (stock Inductor's own stack
    traces are kept unless asked)."""
    offered: dict[str, InferredSource] = {}
    for link in not_taken:
        offered.setdefault(link.kernel, link)
    gaps = []
    for key in missing:
        nodes = list(kernels.get(key, ()))
        inputs = [n for n in nodes if (node := graph.get(n)) is not None and node.kind == "placeholder"]
        if graph.all_inserted(nodes):
            why = f"its nodes ({', '.join(nodes)}) were inserted by the backend's own passes and carry no stack trace"
        elif key in offered:
            link = offered[key]
            how = {
                "write-back": "the value it writes back",
                "consumer": "a node reading what it computes",
                "inlined": "a node computed inside it",
                "inputs": "a value it is computed from",
            }[link.why]
            why = f"stock Inductor's stack traces give it none; {BEYOND_UPSTREAM} takes the one of {link.node}, {how}"
        elif nodes and len(inputs) == len(nodes):
            why = f"copies graph input {', '.join(inputs)}, and no node reading it carries a stack trace"
        elif nodes:
            why = (
                f"its nodes ({', '.join(nodes)}) carry no stack trace, nor do the values they write back,"
                " the nodes reading them or the values they are computed from"
            )
        else:
            why = "lists no post-grad node"
        gaps.append(KernelGap(key, why))
    return gaps


# --- pre-grad links -------------------------------------------------------------------------


def forward_links(graph: PostGradGraph, post_to_pre: Mapping[str, Sequence[str]]) -> dict[int, list[str]]:
    """A forward graph's autograd sequence numbers -> the pre-grad nodes of the op that
    created each: the first node in graph order with that ``seq_nr`` and a pre-grad link
    (AOTAutograd's own rule: later nodes of the same number created no autograd node)."""
    links: dict[int, list[str]] = {}
    for node in graph.nodes:
        seq = graph.fact(node.name).seq_nr
        if seq is not None and seq not in links and post_to_pre.get(node.name):
            links[seq] = list(post_to_pre[node.name])
    return links


def infer_pre_grad(
    graph: PostGradGraph,
    pre_to_post: NodeMap,
    post_to_pre: NodeMap,
    forward: Mapping[int, Sequence[str]] | None = None,
    saved: Mapping[str, Sequence[str]] | None = None,
    held: Mapping[str, Sequence[str]] | None = None,
    pre_lines: Mapping[str, str] | None = None,
) -> list[InferredPreGrad]:
    """Link post-grad compute nodes that no ``from_node`` chain links to the pre-grad
    top level, in place, only where something says it is the node they compute: a node
    traced from a higher-order op's subgraph (``held``: ``mapping.subgraph_relation``) to
    the op holding it; a write-back to the pre-grad nodes of the value it copies; a
    gradient (``forward``: the forward graph's ``forward_links``, for a backward graph) to
    those of the forward op with its ``seq_nr``; last, a node computed from linked values
    (a gradient accumulation; a weight gradient a post-grad pattern fused, which lost its
    ``seq_nr``) to those of their pre-grad nodes that stand on its own source line
    (``pre_lines``: pre-grad node -> ``source_line``; ``saved``: the forward's
    ``postToPre``, for a backward graph's inputs, the forward's saved values under their
    forward names). The nodes reading a value are never evidence of what computes it
    (issue 37: a checkpointed block's kernels all lit the head), nor is an operand of
    another line. Graph order; each node once."""
    linker = _Linker(pre_to_post, post_to_pre)
    _link_subgraph_nodes(graph, linker, held or {})
    # a node the backend inserted after the graph was logged links only by its own metadata
    computing = [n for n in graph.nodes if n.computes and n.name not in graph.inserted]
    _link_write_backs_and_gradients(graph, linker, computing, forward)
    _link_by_operands(graph, linker, computing, saved or {}, pre_lines or {})
    linker.found.sort(key=lambda link: graph.index(link.node))
    return linker.found


class _Linker:
    """Links a post-grad node to pre-grad nodes in both maps, in place, and keeps each link
    made (``found``, in the order made)."""

    def __init__(self, pre_to_post: NodeMap, post_to_pre: NodeMap) -> None:
        self.pre_to_post, self.post_to_pre = pre_to_post, post_to_pre
        self.found: list[InferredPreGrad] = []

    def linked(self, name: str) -> bool:
        return bool(self.post_to_pre.get(name))

    def link(self, name: str, pre: Sequence[str], why: str) -> None:
        pre = list(dict.fromkeys(pre))
        self.post_to_pre[name] = list(pre)
        for p in pre:
            posts = self.pre_to_post.setdefault(p, [])
            if name not in posts:
                posts.append(name)
        self.found.append(InferredPreGrad(name, pre, why))


def _link_subgraph_nodes(graph: PostGradGraph, linker: _Linker, held: Mapping[str, Sequence[str]]) -> None:
    """A node traced from a higher-order op's subgraph, to the op holding it."""
    for node in graph.nodes:  # views too: the forward op of a gradient's seq_nr may be one
        if node.kind == "call" and not linker.linked(node.name) and held.get(node.name):
            linker.link(node.name, held[node.name], "subgraph")


def _link_write_backs_and_gradients(
    graph: PostGradGraph,
    linker: _Linker,
    computing: Sequence[GraphNode],
    forward: Mapping[int, Sequence[str]] | None,
) -> None:
    """A write-back, to the pre-grad nodes of the value it copies; else a gradient, to those
    of the forward op with its ``seq_nr`` (a gradient accumulation differentiates none)."""
    for node in computing:
        if linker.linked(node.name):
            continue
        copied = written_back(graph, node.name)
        if copied is not None and linker.linked(copied):
            linker.link(node.name, linker.post_to_pre[copied], "write-back")
            continue
        facts = graph.fact(node.name)
        if forward is not None and facts.seq_nr is not None and not facts.gradient_acc and forward.get(facts.seq_nr):
            linker.link(node.name, forward[facts.seq_nr], "seq_nr")


def _link_by_operands(
    graph: PostGradGraph,
    linker: _Linker,
    computing: Sequence[GraphNode],
    saved: Mapping[str, Sequence[str]],
    pre_lines: Mapping[str, str],
) -> None:
    """A node computed from linked values (a backward graph's inputs: ``saved``), to those
    of their pre-grad nodes that stand on the node's own source line."""
    for node in computing:  # operands first, so a chain of accumulations links through
        own = source_line(graph.stack_trace(node.name))
        if linker.linked(node.name) or own is None:
            continue
        operands = [
            p
            for o in _operands(graph, node.name)
            for p in (linker.post_to_pre.get(o) or (saved.get(o, ()) if _is_input(graph, o) else ()))
        ]
        same_line = [p for p in operands if pre_lines.get(p) == own]
        if same_line:
            linker.link(node.name, same_line, "inputs")


def prefer_own_line(
    graph: PostGradGraph, post_to_pre: NodeMap, pre_to_post: NodeMap, pre_lines: Mapping[str, str]
) -> dict[str, list[str]]:
    """Where a node's ``from_node`` chain reaches pre-grad nodes on its own source line and
    others too, keep the ones on its line, in place: a value an op passes through unchanged
    (``dropout`` in eval mode returns its input) has the op in its chain, though the node
    computes what the line before wrote. A node with no pre-grad node on its line keeps
    all. Returns node -> the names taken out."""
    taken: dict[str, list[str]] = {}
    for post, pres in post_to_pre.items():
        own = source_line(graph.stack_trace(post))
        if own is None:
            continue
        kept = [p for p in pres if pre_lines.get(p) == own]
        if kept and len(kept) != len(pres):
            taken[post] = [p for p in pres if p not in kept]
            for p in taken[post]:
                if post in pre_to_post.get(p, ()):
                    pre_to_post[p].remove(post)
                    if not pre_to_post[p]:
                        del pre_to_post[p]
            pres[:] = kept
    return taken


def drop_repeated(found: Sequence[InferredPreGrad], repeated: Collection[str]) -> list[InferredPreGrad]:
    """``found`` without the links ``hide_repeated`` takes out."""
    kept = [InferredPreGrad(link.node, [p for p in link.pre_grad if p not in repeated], link.why) for link in found]
    return [link for link in kept if link.pre_grad]


def hide_repeated(post_to_pre: NodeMap, pre_to_post: NodeMap, repeated: Collection[str]) -> dict[str, list[str]]:
    """Take out, in place, the links to pre-grad nodes whose name the pre-grad graph prints
    on more than one line (a top-level ``linear`` and a checkpointed block's, ``cond``'s
    branches): tlparse lights a name's last line, which may be another node's. Returns
    post-grad node -> the names taken out, for the reasons of the kernels left without."""
    hidden: dict[str, list[str]] = {}
    if not repeated:
        return hidden
    for post, pres in post_to_pre.items():
        kept = [p for p in pres if p not in repeated]
        if len(kept) != len(pres):
            hidden[post] = [p for p in pres if p in repeated]
            pres[:] = kept
    for pre in [p for p in pre_to_post if p in repeated]:
        del pre_to_post[pre]
    for post in [p for p, pres in post_to_pre.items() if not pres]:
        del post_to_pre[post]
    return hidden


def source_line(trace: str | None) -> str | None:
    """``PATH:LINE`` of a stack trace's innermost frame (the line the code was written on)."""
    found = frames(trace) if trace else []
    return f"{found[-1].file}:{found[-1].line}" if found else None


def _is_input(graph: PostGradGraph, name: str) -> bool:
    node = graph.get(name)
    return node is not None and node.kind == "placeholder"


def pre_grad_gaps(
    missing: Sequence[str],
    kernels: Mapping[str, Sequence[str]],
    graph: PostGradGraph,
    *,
    pre_grad_known: bool,
    backward: bool,
    beyond: bool = True,
    not_taken: Sequence[InferredPreGrad] = (),
    hidden: Mapping[str, Sequence[str]] | None = None,
    left_out: Mapping[str, Sequence[str]] | None = None,
) -> list[KernelGap]:
    """Why each kernel in ``missing`` (keys reaching no pre-grad node) reaches none.

    ``pre_grad_known``: the compile's pre-grad graph id was at hand; ``beyond``: the hook
    completes the mapping (False: stock Inductor's own mapping is kept); ``not_taken``: what
    ``infer_pre_grad`` found but the hook did not apply; ``hidden``: what ``hide_repeated``
    took out; ``left_out``: kernel -> its post-grad nodes ``mapping.leave_out_shadowed`` took out."""
    offered = {link.node: link for link in not_taken}
    hidden, left_out = hidden or {}, left_out or {}
    gaps = []
    for key in missing:
        nodes = [n for n in kernels.get(key, ()) if graph.get(n) is not None]
        if not pre_grad_known:
            why = "no pre-grad graph was logged for this compile"
        else:
            would = next((offered[n] for n in nodes if n in offered), None)
            why = (
                _why_left_out(graph, nodes, left_out.get(key, ()), hidden)
                or (_why_not_applied(would) if would is not None else None)
                or _why_unlinked(graph, nodes, backward=backward, beyond=beyond)
            )
        gaps.append(KernelGap(key, why))
    return gaps


#: how ``infer_pre_grad`` links a node, by its reason, as a gap's reason says it
_HOW_INFERRED = {
    "subgraph": "as the higher-order op holding the subgraph it was traced from",
    "seq_nr": "through the forward op it differentiates (seq_nr)",
    "write-back": "as the value it writes back",
    "consumer": "through the nodes reading it",
    "inputs": "through the values it is computed from",
}


def _why_left_out(
    graph: PostGradGraph, nodes: Sequence[str], shadowed: Sequence[str], hidden: Mapping[str, Sequence[str]]
) -> str | None:
    """The kernel's link was there to make and was left out or never made: the page would
    light another node (``shadowed``: its post-grad nodes; ``hidden``: their pre-grad
    nodes), or the backend inserted its nodes. None: neither."""
    if shadowed and not nodes:
        which = (
            f"node {shadowed[0]} shares its name"
            if len(shadowed) == 1
            else f"nodes {', '.join(shadowed)} share their names"
        )
        return (
            f"its post-grad {which} with a node of a higher-order op's subgraph: the page would light that"
            " node, so the link is left out"
        )
    if graph.all_inserted(nodes):
        return f"its nodes ({', '.join(nodes)}) were inserted by the backend's own passes: no pre-grad node made them"
    names = list(dict.fromkeys(p for n in nodes for p in hidden.get(n, ())))
    if names:
        which = f"node {names[0]} shares its name" if len(names) == 1 else f"nodes {', '.join(names)} share their names"
        return (
            f"its pre-grad {which} with another node of the pre-grad graph (a higher-order op's subgraph prints"
            " it too): the page would light the other, so the link is left out"
        )
    return None


def _why_not_applied(would: InferredPreGrad) -> str:
    """Stock Inductor's mapping is kept: the link ``infer_pre_grad`` found, named."""
    return (
        f"stock Inductor links only from_node chains; {BEYOND_UPSTREAM} links {would.node} to"
        f" {', '.join(would.pre_grad)} {_HOW_INFERRED[would.why]}"
    )


def _why_unlinked(graph: PostGradGraph, nodes: Sequence[str], *, backward: bool, beyond: bool) -> str:
    """Nothing links the kernel's nodes: a copy of an input, or (a backward graph) nodes no
    forward op's sequence number leads from, or no from_node chain."""
    facts = [graph.fact(n) for n in nodes]
    if nodes and all(_is_input(graph, n) for n in nodes):
        return f"copies graph input {', '.join(nodes)}" + (
            " (the nodes reading the copy are not evidence of what it computes)"
            if beyond
            else f": stock Inductor's mapping lists only the input, which has no pre-grad node ({BEYOND_UPSTREAM}"
            " lists the nodes reading the copy)"
        )
    if backward and facts and all(f.gradient_acc for f in facts):
        return "a gradient accumulation: it differentiates no forward op of its own"
    if backward and facts and all(f.seq_nr is None for f in facts):
        return (
            "its nodes have no autograd sequence number and no from_node chain into the pre-grad graph (the"
            " nodes reading what it computes are not evidence of what it computes)"
        )
    if backward:
        seqs = sorted({f.seq_nr for f in facts if f.seq_nr is not None})
        return f"the forward op of its autograd sequence number ({', '.join(map(str, seqs))}) links no pre-grad node"
    return (
        "its nodes have no from_node chain into the pre-grad graph (the nodes reading what it computes"
        " are not evidence of what it computes)"
    )
