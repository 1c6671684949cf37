"""Where artifacts go: the TORCH_TRACE log, the Inductor debug dir, and ``--out``.

The only module besides the hook that reaches into Inductor at compile time; everything it
writes has been validated by the hook first, and every file is written atomically.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spyre_provenance import mapping
from spyre_provenance.fsutil import atomic_write_bytes
from spyre_provenance.records import (
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    NodeMap,
)

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
    """File name -> bytes for one graph's artifacts."""
    files = {f"{NODE_MAPPINGS}.json": mapping.to_json_bytes(result.node_mappings)}
    if result.stack_traces is not None:
        files[f"{KERNEL_STACK_TRACES}.json"] = mapping.to_json_bytes(result.stack_traces)
    if result.opspec_handles is not None:
        files[f"{OPSPEC_DEBUG_HANDLES}.json"] = mapping.to_json_bytes(result.opspec_handles)
    return files


def graph_folder_name(result: GraphResult) -> str:
    """``graph_00_0-0_forward``: compile order, compile id, graph kind; sortable, unique."""
    compile_id = re.sub(r"[^0-9A-Za-z_]+", "-", result.compile_id).strip("-")
    return f"graph_{result.index:02d}_{compile_id}_{result.kind}"


def write_graph_files(result: GraphResult, graph: Any, out_dir: Path | None) -> None:
    """Write into the Inductor debug dir (when ``trace.enabled``) and into ``out_dir``."""
    from torch._inductor import config
    from torch._inductor.virtualized import V

    files = artifact_files(result)
    folders: list[Path] = []
    if config.trace.enabled:
        debug_dir = getattr(V.debug, "_path", None)
        if debug_dir:
            folders.append(Path(debug_dir))
    if out_dir is not None:
        folders.append(Path(out_dir) / graph_folder_name(result))
    for folder in folders:
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)
