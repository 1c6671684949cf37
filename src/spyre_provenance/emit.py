"""Where artifacts go: the TORCH_TRACE log, the Inductor debug dir, and ``--out``.

The only module besides the hook that reaches into Inductor at compile time; everything it
writes has been validated by the hook first, and every file is written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from spyre_provenance import mapping
from spyre_provenance.model.folders import graph_folder
from spyre_provenance.model.names import DIAGNOSTICS, KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES
from spyre_provenance.model.records import GraphNode, NodeMap, PostGradGraph
from spyre_provenance.support import atomic_write_bytes, remove_stale_temporaries

if TYPE_CHECKING:
    from spyre_provenance.hook import GraphResult


def current_compile_id() -> str:
    """The compile id tlparse names folders after (``0/0``, ``1/0_1`` with an attempt)."""
    from torch._guards import CompileContext

    trace_id = CompileContext.current_trace_id()
    return "none" if trace_id is None else str(trace_id)


def current_pre_grad_graph_id() -> int | None:
    """The id compile_fx recorded when it logged ``before_pre_grad_graph`` (None: unset)."""
    import torch._inductor.debug as inductor_debug

    graph_id = getattr(inductor_debug, "_pre_grad_graph_id", None)
    return graph_id if isinstance(graph_id, int) and graph_id > 0 else None


def pre_post_relation_for(graph: Any, pre_grad_graph_id: int | None) -> tuple[NodeMap, NodeMap]:
    """The pre-grad <-> post-grad relation of the graph being lowered.

    ``graph.module`` is the post-grad GraphModule that GraphLowering interprets; its nodes'
    ``from_node`` chains lead back to the pre-grad graph with id ``pre_grad_graph_id``.
    """
    from torch.fx.traceback import get_graph_provenance_json

    if pre_grad_graph_id is None:
        return {}, {}
    provenance = get_graph_provenance_json(graph.module.graph)
    return mapping.pre_post_relation(provenance, pre_grad_graph_id)


def post_grad_graph(graph: Any) -> PostGradGraph:
    """The post-grad graph being lowered, node by node as it is printed for tlparse
    (``GraphModule.print_readable``: one line per op and constant, graph inputs in the
    ``def forward`` line only)."""
    nodes: list[GraphNode] = []
    outputs: tuple[str, ...] = ()
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
    return PostGradGraph(nodes, outputs)


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


def output_code(graph: Any) -> str | None:
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


def log_artifact(name: str, document: Any) -> None:
    """One structured-log artifact (encoding json) under the current compile id."""
    from torch._logging import trace_structured

    payload = mapping.to_json_bytes(document).decode("utf-8")
    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": name, "encoding": "json"},
        payload_fn=lambda: payload,
    )


def replace_kernel_stack_traces(stack_traces: dict[str, list[str]] | None) -> None:
    """Make compile_fx log our stack traces as this graph's stack-traces artifact.

    compile_fx serializes ``torch._inductor.debug._inductor_kernel_stack_trace`` right
    after asking for the mapping; rebinding it keeps the two artifacts of a graph about the
    same call sites. ``reset_provenance_globals`` restores upstream's dict after the compile.
    """
    import torch._inductor.debug as inductor_debug

    inductor_debug._inductor_kernel_stack_trace = dict(stack_traces or {})


def artifact_files(result: GraphResult) -> dict[str, bytes]:
    """File name -> bytes for one graph's provenance artifacts (those it has)."""
    files = {}
    if result.node_mappings is not None:
        files[f"{NODE_MAPPINGS}.json"] = mapping.to_json_bytes(result.node_mappings)
    if result.stack_traces is not None:
        files[f"{KERNEL_STACK_TRACES}.json"] = mapping.to_json_bytes(result.stack_traces)
    if result.opspec_handles is not None:
        files[f"{OPSPEC_DEBUG_HANDLES}.json"] = mapping.to_json_bytes(result.opspec_handles)
    return files


def graph_folder_name(result: GraphResult, label: str | None = None) -> str:
    """The graph's folder (``folders.graph_folder``), named with ``label`` or else the
    result's own model label, so compiles of different models share one ``--out``."""
    return graph_folder(result.index, result.compile_id, result.kind, label if label is not None else result.label)


def diagnostics_file(document: Any) -> dict[str, bytes]:
    return {f"{DIAGNOSTICS}.json": mapping.to_json_bytes(document)}


def write_graph_files(result: GraphResult, graph: Any, out_dir: Path | None) -> None:
    """Write into the Inductor debug dir (when ``trace.enabled``) and into ``out_dir``."""
    _write(artifact_files(result), result, out_dir)


def write_diagnostics(result: GraphResult, document: Any, graph: Any, out_dir: Path | None) -> None:
    """The graph's diagnostics artifact, beside its other artifacts (written even when
    those were left out)."""
    _write(diagnostics_file(document), result, out_dir)


def _write(files: dict[str, bytes], result: GraphResult, out_dir: Path | None) -> None:
    for folder in _graph_folders(result, out_dir):
        remove_stale_temporaries(folder, recursive=False)  # a killed writer's leftovers
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)


def _graph_folders(result: GraphResult, out_dir: Path | None) -> list[Path]:
    from torch._inductor import config
    from torch._inductor.virtualized import V

    folders: list[Path] = []
    if config.trace.enabled:
        debug_dir = getattr(V.debug, "_path", None)
        if debug_dir:
            folders.append(Path(debug_dir))
    if out_dir is not None:
        folders.append(Path(out_dir) / graph_folder_name(result))
    return folders
