"""Everything the hook reads from Inductor, and the two things it hands back to it.

One class, one method per thing read (a call site's origins, stack traces and kernel
metadata; the graph's kind, compile id, post-grad graph, pre/post relation and wrapper
code) or written (a structured-log artifact, the graph's kernel stack traces). The session
holds one ``Inductor``; a test that must make one step fail hands it a subclass whose
method raises, instead of patching names in here. Reads what torch 2.13 has, by the names
REFERENCE.md lists; torch is imported only when a method runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spyre_provenance.links import inference, mapping
from spyre_provenance.model import modules
from spyre_provenance.model.names import POST_GRAD_GRAPHS
from spyre_provenance.model.post_grad_graph import NO_FACTS, GraphNode, NodeFacts, PostGradGraph, PreGradSubgraphs
from spyre_provenance.model.records import NodeMap

#: On a GraphLowering: its post-grad graph's node names as last logged, and as compile_fx
#: logged them (before a backend's own passes).
_LOGGED_POST_GRAD = "_spyre_provenance_logged_post_grad"
_COMPILE_FX_POST_GRAD = "_spyre_provenance_compile_fx_post_grad"
_METADATA = re.compile(r"Source Nodes: \[(?P<src>[^\]]*)\], Original ATen: \[(?P<aten>[^\]]*)\]")


class Inductor:
    """The hook's view of Inductor while a graph is lowered (``V.graph``)."""

    # -- one kernel call site (``node_schedule``: scheduler nodes, or an extern kernel) ------

    def origin_names(self, node_schedule: Any, is_extern: bool) -> list[str]:
        """Post-grad node names in a call site's schedule, as upstream collects them."""
        return list(self._origins(node_schedule, is_extern))

    def module_stacks(self, node_schedule: Any, is_extern: bool) -> list[list[list[str]]]:
        """The distinct ``nn_module_stack`` of the call site's own nodes (``origin_names``),
        each ``[[path, class], ...]`` outermost first (``model.modules.recorded_stack``)."""
        found: dict[str, list[list[str]]] = {}
        for origin in self._origins(node_schedule, is_extern).values():
            stack = modules.recorded_stack(origin.meta.get("nn_module_stack"))
            if stack:
                found.setdefault(repr(stack), stack)
        return list(found.values())

    def _origins(self, node_schedule: Any, is_extern: bool) -> dict[str, Any]:
        """Post-grad node name -> node, in the order upstream collects them."""
        found: dict[str, Any] = {}
        if is_extern:
            origin_node = getattr(node_schedule, "origin_node", None)
            origins = [origin_node] if origin_node is not None else node_schedule.origins
            for origin in origins:
                found.setdefault(origin.name, origin)
            return found
        for snode in node_schedule:
            ir_node = getattr(snode, "node", None)  # reduction markers carry no node
            if ir_node is None:
                continue
            for origin in ir_node.origins:
                found.setdefault(origin.name, origin)
        return found

    def consumers(self, node_schedule: Any, own: list[str]) -> list[str]:
        """Post-grad nodes of the scheduler nodes that read what this call site writes."""
        found: list[str] = []
        for snode in node_schedule:
            outputs = snode.get_outputs() if hasattr(snode, "get_outputs") else ()
            for buffer in outputs:
                for user in getattr(buffer, "users", ()):
                    if getattr(user, "is_weak", False):
                        continue
                    user_node = user.node
                    inner = user_node.get_nodes() if hasattr(user_node, "get_nodes") else [user_node]
                    for node in inner:
                        ir_node = getattr(node, "node", None)
                        for origin in getattr(ir_node, "origins", None) or ():
                            if origin.name not in own and origin.name not in found:
                                found.append(origin.name)
        return found

    def stack_traces(self, node_schedule: Any, is_extern: bool) -> list[str]:
        if is_extern:
            return list(node_schedule.get_stack_traces())
        traces: dict[str, None] = {}
        for snode in node_schedule:
            ir_node = getattr(snode, "node", None)
            if ir_node is not None:
                traces.update(dict.fromkeys(ir_node.get_stack_traces()))
        return list(traces)

    def kernel_metadata(self, node_schedule: Any) -> tuple[list[str], list[str]]:
        """(source nodes, original ATen ops) from Inductor's ``get_kernel_metadata``."""
        from torch._inductor.utils import get_kernel_metadata
        from torch._inductor.virtualized import V

        summary, _detail = get_kernel_metadata(node_schedule, V.graph.wrapper_code)
        match = _METADATA.search(summary)
        if match is None:
            return [], []
        split = lambda text: [part.strip() for part in text.split(",") if part.strip()]  # noqa: E731
        return split(match["src"]), split(match["aten"])

    def reset_handle_counter(self) -> None:
        """Start Inductor's call-site counter (the N of ``name:N``) at 0, as a fresh process
        has it. compile_fx zeroes it for each compile but puts the old value back after, and
        a backward compiled lazily, outside that scope, counts on from whatever the process
        left there (an earlier training step's backward): its N would depend on history."""
        import torch._inductor.debug as inductor_debug

        reset = getattr(inductor_debug, "reset_inductor_kernel_provenance_debug_handle", None)
        if callable(reset):
            reset()

    # -- the graph being lowered -------------------------------------------------------------

    def graph(self) -> Any:
        """The graph being compiled: for a higher-order op's subgraph lowered apart (a
        ``cond`` branch), the top-level graph it belongs to, whose wrapper holds its calls."""
        from torch._inductor.virtualized import V

        graph = V.graph
        while getattr(graph, "parent", None) is not None:
            graph = graph.parent
        return graph

    def holders(self) -> list[str]:
        """For a call site of a subgraph lowered apart (``SubgraphLowering``): the top-level
        post-grad nodes holding that subgraph, nested ones through their parents; [] at
        the top level. A node holds a subgraph when an input of it is the subgraph module."""
        from torch._inductor.virtualized import V

        graph, held = V.graph, []
        while (parent := getattr(graph, "parent", None)) is not None:
            held = [
                node.name
                for node in parent.module.graph.nodes
                if node.op == "call_function"
                and any(
                    arg.op == "get_attr" and getattr(parent.module, str(arg.target), None) is graph.module
                    for arg in node.all_input_nodes
                )
            ]
            graph = parent
        return held

    def graph_kind(self, graph: Any) -> str:
        if getattr(graph, "is_backward", False):
            return "backward"
        if getattr(graph, "is_inference", False):
            return "inference"
        return "forward"

    def compile_id(self) -> str:
        """The compile id tlparse names folders after (``0/0``, ``1/0_1`` with an attempt)."""
        from torch._guards import CompileContext

        trace_id = CompileContext.current_trace_id()
        return "none" if trace_id is None else str(trace_id)

    def pre_grad_graph_id(self) -> int | None:
        """The id compile_fx recorded when it logged ``before_pre_grad_graph`` (None: unset)."""
        import torch._inductor.debug as inductor_debug

        graph_id = getattr(inductor_debug, "_pre_grad_graph_id", None)
        return graph_id if isinstance(graph_id, int) and graph_id > 0 else None

    def pre_grad_subgraphs(self, module: Any) -> PreGradSubgraphs:
        """What a pre-grad GraphModule holds beyond its top level: each subgraph of a
        higher-order op (checkpoint's ``wrap_body_<i>``, ``cond``'s branches, a
        ``while_loop``'s body, ``flex_attention``'s score functions, ``invoke_subgraph``),
        by the id ``from_node`` gives its graph, with the top-level nodes holding it, and
        every node name printed anywhere in the module (tlparse lights a name's last line,
        so a name printed twice may light another node). Read before the pre-grad passes
        run, as compile_fx logs the graph."""
        import torch

        holders: dict[int, list[str]] = {}
        printed: dict[str, int] = {}

        def walk(gm: Any, top: str | None) -> None:
            for node in gm.graph.nodes:
                if node.op != "output":
                    printed[node.name] = printed.get(node.name, 0) + 1
                if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
                    continue
                for arg in node.all_input_nodes:
                    sub = getattr(gm, str(arg.target), None) if arg.op == "get_attr" else None
                    if isinstance(sub, torch.fx.GraphModule):
                        held = holders.setdefault(id(sub.graph), [])
                        holder = top if top is not None else node.name
                        if holder not in held:
                            held.append(holder)
                        walk(sub, holder)

        walk(module, None)
        lines = {}
        for node in module.graph.nodes:
            line = inference.source_line(node.stack_trace if isinstance(node.stack_trace, str) else None)
            if line is not None:
                lines[node.name] = line
        return PreGradSubgraphs(holders, [name for name, count in printed.items() if count > 1], lines)

    def pre_post_relation(self, graph: Any, pre_grad_graph_id: int | None) -> tuple[NodeMap, NodeMap]:
        """The pre-grad <-> post-grad relation of the graph being lowered.

        ``graph.module`` is the post-grad GraphModule that GraphLowering interprets; its
        nodes' ``from_node`` chains lead back to the pre-grad graph with id
        ``pre_grad_graph_id``.
        """
        from torch.fx.traceback import get_graph_provenance_json

        if pre_grad_graph_id is None:
            return {}, {}
        provenance = get_graph_provenance_json(graph.module.graph)
        return mapping.pre_post_relation(provenance, pre_grad_graph_id)

    def subgraph_relation(self, graph: Any, subgraphs: PreGradSubgraphs) -> NodeMap:
        """Post-grad node -> the top-level pre-grad nodes holding the subgraph its
        ``from_node`` chain reaches (``mapping.subgraph_relation``)."""
        from torch.fx.traceback import get_graph_provenance_json

        if not subgraphs.holders:
            return {}
        return mapping.subgraph_relation(get_graph_provenance_json(graph.module.graph), subgraphs.holders)

    def post_grad_graph(self, graph: Any) -> PostGradGraph:
        """The post-grad graph being lowered, node by node as it is printed for tlparse
        (``GraphModule.print_readable``: one line per op and constant, graph inputs in the
        ``def forward`` line only)."""
        nodes: list[GraphNode] = []
        outputs: tuple[str, ...] = ()
        facts: dict[str, NodeFacts] = {}
        for node in graph.module.graph.nodes:
            if node.op == "placeholder":
                nodes.append(GraphNode(node.name, "placeholder", line=False))
            elif node.op == "output":
                outputs = tuple(n.name for n in node.all_input_nodes)
            elif node.op == "get_attr":
                nodes.append(GraphNode(node.name, "get_attr"))
            else:
                inputs = tuple(dict.fromkeys(n.name for n in node.all_input_nodes))
                nodes.append(GraphNode(node.name, "call", _op_name(node), inputs))
                fact = _facts(node.meta)
                if fact != NO_FACTS:
                    facts[node.name] = fact
        shadowed = {n.name for n in nodes} & set(self.subgraph_node_names(graph))
        return PostGradGraph(nodes, outputs, facts, self.inserted_nodes(graph), shadowed)

    def subgraph_node_names(self, graph: Any) -> dict[str, str]:
        """Node name -> the subgraph printing it, for every higher-order op subgraph of the
        post-grad graph (a ``cond``'s ``true_graph_0``), nested ones included: the page
        lights a name's last printed line, which for these is the subgraph's."""
        import torch

        names: dict[str, str] = {}

        def walk(module: Any) -> None:
            for node in module.graph.nodes:
                sub = getattr(module, str(node.target), None) if node.op == "get_attr" else None
                if isinstance(sub, torch.fx.GraphModule):
                    for inner in sub.graph.nodes:
                        if inner.op not in ("placeholder", "output"):
                            names[inner.name] = str(node.target)  # the last printed wins, as on the page
                    walk(sub)

        walk(graph.module)
        return names

    def random_ops(self, graph: Any) -> list[tuple[str, str | None]]:
        """(op, stack trace) of each node of the graph being lowered that draws random
        numbers: ops tagged ``nondeterministic_seeded`` (``bernoulli_``, ``rand``, a
        fallback ``native_dropout``) and Inductor's own ``inductor_random`` /
        ``inductor_randint``, named by the ATen op they came from. Once each."""
        import torch

        drawing = {"inductor_random", "inductor_randint"}
        found: dict[tuple[str, str | None], None] = {}
        for node in graph.module.graph.nodes:
            target = node.target
            if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
                continue
            if target.name() == "prims::inductor_seeds":
                continue  # draws the seeds of the ops below: they are what the user wrote
            tagged = torch.Tag.nondeterministic_seeded in target.tags
            if not tagged and target._overloadpacket.__name__ not in drawing:
                continue
            if tagged and _draws_nothing(node, target):
                continue
            original = node.meta.get("original_aten")
            trace = node.meta.get("stack_trace")
            found[(str(original if original is not None else target), trace if isinstance(trace, str) else None)] = None
        return list(found)

    def output_code(self, graph: Any) -> str | None:
        """The wrapper code of the graph just compiled, as logged for tlparse; None before
        ``compile_to_module`` wrote it (AOT compiles keep theirs elsewhere)."""
        path = getattr(graph, "cache_path", None)
        if not path:
            return None
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read()
        except OSError:
            return None

    def debug_dir(self) -> Path | None:
        """Inductor's debug folder of this graph, when ``trace.enabled`` (else None)."""
        from torch._inductor import config
        from torch._inductor.virtualized import V

        if not config.trace.enabled:
            return None
        debug_dir = getattr(V.debug, "_path", None)
        return Path(debug_dir) if debug_dir else None

    # -- handing back ------------------------------------------------------------------------

    def note_logged_post_grad_graph(self, graph: Any) -> None:
        """Remember the post-grad graph's nodes as last logged; the first time (a
        GraphLowering is built right after compile_fx logs ``inductor_post_grad_graph``,
        from that graph), also as compile_fx made it."""
        names = _node_names(graph.module.graph)
        graph.__dict__[_LOGGED_POST_GRAD] = names
        graph.__dict__.setdefault(_COMPILE_FX_POST_GRAD, names)

    def inserted_nodes(self, graph: Any) -> list[str]:
        """The post-grad nodes a backend's own passes added after compile_fx logged the
        graph (torch-spyre's ``restickify_default*``, ``clone``s, ``constant_default*``)."""
        made = graph.__dict__.get(_COMPILE_FX_POST_GRAD)
        if made is None:
            return []
        made = set(made)
        return [name for name in _node_names(graph.module.graph) if name not in made]

    def post_grad_graph_moved(self, graph: Any) -> list[str]:
        """The nodes a backend's own passes added to the post-grad graph since it was logged
        (torch-spyre: ``restickify_default*``, ``clone``s, ``constant_default*``), or, when
        they only removed or reordered nodes, the whole graph's; empty when it is as logged
        or was never noted."""
        logged = graph.__dict__.get(_LOGGED_POST_GRAD)
        now = _node_names(graph.module.graph)
        if logged is None or now == logged:
            return []
        added = [name for name in now if name not in set(logged)]
        return added or list(now)

    def log_post_grad_graph(self, graph: Any) -> str:
        """Log the post-grad graph again, as it is now, under the current compile id and
        printed as compile_fx prints it; noted, so a later check compares with this one.

        The log's readers (tlparse, ``logs.graphs``) take a graph's last
        ``inductor_post_grad_graph``; logged before the wrapper code, it stays with its graph
        (``tracelog.GraphSplitter``)."""
        import inspect

        from torch._logging import trace_structured

        module = graph.module
        options = {"print_output": False, "include_stride": True, "include_device": True}
        if "fast_sympy_print" in inspect.signature(module.print_readable).parameters:
            options["fast_sympy_print"] = True
        text = module.print_readable(**options)
        trace_structured(
            "artifact",
            metadata_fn=lambda: {"name": POST_GRAD_GRAPHS[0], "encoding": "string"},
            payload_fn=lambda: text,
        )
        self.note_logged_post_grad_graph(graph)
        return text

    def log_artifact(self, name: str, document: Any) -> None:
        """One structured-log artifact (encoding json) under the current compile id."""
        from torch._logging import trace_structured

        payload = mapping.to_json_bytes(document).decode("utf-8")
        trace_structured(
            "artifact",
            metadata_fn=lambda: {"name": name, "encoding": "json"},
            payload_fn=lambda: payload,
        )

    def replace_kernel_stack_traces(self, stack_traces: dict[str, list[str]] | None) -> None:
        """Make compile_fx log our stack traces as this graph's stack-traces artifact.

        compile_fx serializes ``torch._inductor.debug._inductor_kernel_stack_trace`` right
        after asking for the mapping; rebinding it keeps the two artifacts of a graph about
        the same call sites. ``reset_provenance_globals`` restores upstream's dict after the
        compile.
        """
        import torch._inductor.debug as inductor_debug

        inductor_debug._inductor_kernel_stack_trace = dict(stack_traces or {})


#: The argument that says how many numbers a seeded op draws: attention's dropout, a
#: dropout's or bernoulli's probability. At 0 (a constant) the op draws none.
_PROBABILITY_ARGUMENTS = ("dropout_p", "p")


def _node_names(fx_graph: Any) -> tuple[str, ...]:
    return tuple(node.name for node in fx_graph.nodes)


def _draws_nothing(node: Any, target: Any) -> bool:
    """A seeded op called with a constant probability of 0: attention with
    ``dropout_p=0.0`` (Hugging Face's default in evaluation and in many configs)."""
    for position, argument in enumerate(target._schema.arguments):
        if argument.name not in _PROBABILITY_ARGUMENTS:
            continue
        value = node.kwargs.get(
            argument.name, node.args[position] if position < len(node.args) else argument.default_value
        )
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0
    return False


def _facts(meta: dict[str, Any]) -> NodeFacts:
    """What a node's meta says of where it came from (``NodeFacts``)."""
    trace = meta.get("stack_trace")
    seq_nr = meta.get("seq_nr")
    return NodeFacts(
        stack_trace=trace if isinstance(trace, str) and trace.strip() else None,
        seq_nr=seq_nr if isinstance(seq_nr, int) and not isinstance(seq_nr, bool) else None,
        gradient_acc=bool(meta.get("is_gradient_acc", False)),
        original_aten=None if meta.get("original_aten") is None else str(meta["original_aten"]),
    )


def _op_name(node: Any) -> str:
    """``aten.relu`` for ``torch.ops.aten.relu.default``, as the printed graph shows it."""
    import operator

    import torch

    target = node.target
    if node.op != "call_function":
        return "python"
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target._overloadpacket.__name__}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name.replace("::", ".")
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"{target.namespace}.{target.name()}"
    return "python"


def fallback_random() -> Any:
    """A context in which Inductor's random ops call ATen as eager does
    (``torch._inductor.config.fallback_random``): from one seed they draw eager's numbers."""
    from torch._inductor import config

    return config.patch(fallback_random=True)
