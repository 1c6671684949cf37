"""The post-grad graph, as far as coverage is concerned: its nodes, what the FX graph says of
them beyond their printed lines, the pre-grad graph's subgraphs, and which ops never get a
kernel (``NO_KERNEL_OPS``) or make a constant (``FACTORY_OPS``).

Read from the FX graph by the hook (``capture.inductor``) and from a log's printed graph
(``logs.post_grad``); the coverage judge and the link inference read it. Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

#: ATen ops that only re-describe memory (or say nothing of it): Inductor folds them into
#: the indexing of the kernels around them, so they never get a kernel of their own.
NO_KERNEL_OPS = frozenset(
    {
        "view",
        "_unsafe_view",
        "reshape",
        "permute",
        "t",
        "transpose",
        "expand",
        "squeeze",
        "unsqueeze",
        "as_strided",
        "slice",
        "select",
        "alias",
        "detach",
        "lift_fresh_copy",
        "_reshape_alias",
        "split",
        "split_with_sizes",
        "unbind",
        "sym_size",
        "sym_stride",
        "sym_numel",
        "sym_storage_offset",
    }
)
#: Ops that make a tensor from nothing but their arguments: a constant.
FACTORY_OPS = frozenset({"full", "zeros", "ones", "empty", "empty_strided", "scalar_tensor", "arange", "iota"})


class GraphNode(msgspec.Struct, frozen=True):
    """One node of a post-grad graph, as far as coverage is concerned.

    ``kind``: ``placeholder`` (a graph input), ``call`` (an op), ``get_attr`` (a constant
    attribute). ``op``: ``aten.relu`` for ``torch.ops.aten.relu.default``, ``getitem`` for
    a tuple element, ``python`` for anything else (symbolic arithmetic). ``line``: whether
    the node has a line of its own in the printed graph, which is what tlparse can highlight.
    """

    name: str
    kind: str
    op: str = ""
    inputs: tuple[str, ...] = ()
    line: bool = True

    @property
    def computes(self) -> bool:
        """An op that needs a kernel (or a stated reason for having none)."""
        if self.kind != "call" or self.op in ("getitem", "python"):
            return False
        namespace, _, op = self.op.partition(".")
        return not (namespace == "aten" and op in NO_KERNEL_OPS)

    @property
    def is_view(self) -> bool:
        namespace, _, op = self.op.partition(".")
        return self.kind == "call" and (
            self.op in ("getitem", "python") or (namespace == "aten" and op in NO_KERNEL_OPS)
        )


class NodeFacts(msgspec.Struct, frozen=True):
    """What an FX post-grad node carries beyond its printed line: read by the hook from
    the FX graph (a logged graph's text has none of it, so a log's graph has no facts)."""

    stack_trace: str | None = None
    #: autograd's sequence number: a gradient node has the one of the forward op it
    #: differentiates (AOTAutograd copies it onto the backward nodes)
    seq_nr: int | None = None
    #: AOTAutograd's ``is_gradient_acc``: a sum of gradient contributions, no op's own
    gradient_acc: bool = False
    #: the ATen op the node came from (``meta["original_aten"]``, ``aten.mul.Tensor``)
    original_aten: str | None = None


NO_FACTS = NodeFacts()


class PreGradSubgraphs(msgspec.Struct, frozen=True):
    """The subgraphs of higher-order ops in a pre-grad graph (``Inductor.pre_grad_subgraphs``)."""

    #: a subgraph's graph id (as ``from_node`` names it) -> the top-level pre-grad nodes
    #: holding it (more than one: a subgraph called twice, ``invoke_subgraph``)
    holders: dict[int, list[str]] = {}
    #: node names printed on more than one line of the pre-grad graph (top level and
    #: subgraphs): tlparse lights a name's last line, so a link to one may light another
    repeated: list[str] = []
    #: top-level node -> ``PATH:LINE`` of its stack trace's innermost frame
    lines: dict[str, str] = {}


class PostGradGraph:
    """The nodes of a post-grad graph in graph order, and what the graph returns; users
    and lookups by name are derived once. ``facts``: node name -> ``NodeFacts``, where
    the FX graph was at hand."""

    def __init__(
        self,
        nodes: Sequence[GraphNode],
        outputs: Sequence[str] = (),
        facts: Mapping[str, NodeFacts] | None = None,
        inserted: Iterable[str] = (),
        shadowed: Iterable[str] = (),
    ) -> None:
        self.nodes = list(nodes)
        self.outputs = tuple(outputs)
        self.facts = dict(facts or {})
        #: nodes a backend's own passes added after compile_fx logged the graph (torch-spyre:
        #: ``restickify_default*``, ``clone``s, ``constant_default*``): they come from no
        #: pre-grad node and no source line but what their own metadata says
        self.inserted = frozenset(inserted)
        #: top-level nodes whose name a higher-order op's subgraph prints again (a ``cond``
        #: branch's ``add``): tlparse lights a name's last printed line, the subgraph's, so
        #: the page cannot light these; the hook leaves their links out (``mapping.leave_out_shadowed``)
        self.shadowed = frozenset(shadowed)
        self._by_name = {n.name: n for n in self.nodes}
        self._index = {n.name: i for i, n in enumerate(self.nodes)}
        users: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        for node in self.nodes:
            for name in node.inputs:
                if name in users and node.name not in users[name]:
                    users[name].append(node.name)
        self._users = users

    def get(self, name: str) -> GraphNode | None:
        return self._by_name.get(name)

    def all_inserted(self, names: Iterable[str]) -> bool:
        """Whether ``names`` are some nodes, every one of them inserted by the backend."""
        names = list(names)
        return bool(names) and all(n in self.inserted for n in names)

    def users(self, name: str) -> list[str]:
        return self._users.get(name, [])

    def users_past(self, name: str, passes: Callable[[str], bool]) -> list[str]:
        """The users of ``name``, where a user ``passes`` says to look past stands for its
        own users, transitively: breadth first, each once, in the order reached."""
        found: list[str] = []
        pending, seen = list(self.users(name)), {name}
        while pending:
            user = pending.pop(0)
            if user in seen:
                continue
            seen.add(user)
            if passes(user):
                pending.extend(self.users(user))
            else:
                found.append(user)
        return found

    def has_line(self, name: str) -> bool:
        node = self._by_name.get(name)
        return node is not None and node.line

    def index(self, name: str) -> int:
        """The node's position in graph order (-1 for a name the graph lacks)."""
        return self._index.get(name, -1)

    def fact(self, name: str) -> NodeFacts:
        return self.facts.get(name, NO_FACTS)

    def stack_trace(self, name: str) -> str | None:
        """The node's stack trace when it has a non-empty one."""
        trace = self.fact(name).stack_trace
        return trace if trace and trace.strip() else None
