"""Handles that name another op or line than the nodes they say an OpSpec computes.

torch-spyre main builds a debug handle from the buffer an OpSpec writes
(``torch_spyre/_inductor/provenance.py``, ``build_debug_handle``): its ``ir_chain`` is the
buffer's origins, but its ``aten_op`` and ``source`` are the buffer's ``origin_node``'s when
Inductor set one. Inductor gives a buffer the *last* FX node whose lowering returned it
unchanged (``assign_origin_node``), so a no-op re-points it: the multiply of an RMSNorm
before a batched linear (``x = self.weight * x``) gets the linear's ``expand`` of its input,
and its handle says ``aten.linear`` and the linear's line. Without an ``origin_node`` main
names only what all origins agree on, so a handle's op or line that none of its nodes has
can only come from that rule.

The nodes' own ``original_aten`` and stack traces (``NodeFacts``, read from the FX graph)
are the evidence: a handle whose op is none of its nodes' ops, or whose line is on none of
their stack traces, is a ``MisnamedHandle``. Nodes without an op or a trace say nothing, and
a handle without an op or a line is judged on what it has. Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from spyre_provenance.model.frames import frames, user_frame
from spyre_provenance.model.handles import named_nodes
from spyre_provenance.model.post_grad_graph import PostGradGraph
from spyre_provenance.model.records import DebugHandle, KernelRecord, MisnamedHandle, OpSpecRecord

#: Why a handle names another op or line than its nodes: said wherever one is shown.
ORIGIN_NODE_RULE = (
    "torch-spyre's provenance, not this project's: torch-spyre main names a handle by the buffer's"
    " origin_node (torch_spyre/_inductor/provenance.py), the last FX node whose lowering returned the"
    " buffer unchanged, so a no-op that reads it (a batched linear's expand of its input) re-points it"
)


def misnamed_handles(records: Sequence[KernelRecord], graph: PostGradGraph) -> list[MisnamedHandle]:
    """Every OpSpec of ``records`` whose handle names another op or line than its nodes,
    in call-site order, then OpSpec order."""
    found: list[MisnamedHandle] = []
    for record in sorted(records, key=lambda r: r.handle):
        buffers = [spec.buffer for spec in record.opspecs or () if spec.buffer]
        for spec in record.opspecs or ():
            if spec.debug_handle is not None:
                misnamed = judge(record.key, spec, spec.debug_handle, buffers, graph)
                if misnamed is not None:
                    found.append(misnamed)
    return found


def judge(
    key: str, spec: OpSpecRecord, handle: DebugHandle, buffers: Sequence[str], graph: PostGradGraph
) -> MisnamedHandle | None:
    """The handle of one OpSpec against its nodes' own op and lines; None when they agree
    or when the nodes carry nothing to judge by."""
    nodes = named_nodes(handle, lambda h: h.ir_chain, lambda h: h.fused_from, buffers)
    own_ops = list(dict.fromkeys(op for n in nodes if (op := graph.fact(n).original_aten) is not None))
    traces = [trace for n in nodes if (trace := graph.stack_trace(n)) is not None]
    own_lines = list(dict.fromkeys(f"{f.file}:{f.line}" for t in traces if (f := user_frame(t)) is not None))
    on_traces = {f"{f.file}:{f.line}" for t in traces for f in frames(t)}
    source = handle.source
    handle_line = None if source is None else f"{source.file}:{source.start_line}"
    differs = []
    if handle.aten_op is not None and own_ops and handle.aten_op not in own_ops:
        differs.append("op")
    if handle_line is not None and on_traces and handle_line not in on_traces:
        differs.append("line")
    if not differs:
        return None
    return MisnamedHandle(
        kernel=key,
        opspec=spec.op,
        buffer=spec.buffer,
        handle=str(handle.id),
        nodes=nodes,
        handle_op=handle.aten_op,
        handle_line=handle_line,
        node_ops=own_ops,
        node_lines=own_lines,
        differs=differs,
    )


def describe(misnamed: MisnamedHandle) -> str:
    """One line: the OpSpec, what its handle names, what its nodes are (no reason)."""
    said = " at ".join(x for x in (misnamed.handle_op, misnamed.handle_line) if x)
    own = " at ".join(x for x in (", ".join(misnamed.node_ops), ", ".join(misnamed.node_lines)) if x)
    return (
        f"{misnamed.kernel} OpSpec {misnamed.opspec} -> {misnamed.buffer or '?'}: handle {misnamed.handle}"
        f" says {said}; its node {', '.join(misnamed.nodes)} is {own or '(no op or line recorded)'}"
    )


def beside(nodes: Sequence[str], ops: Sequence[str], lines: Sequence[str], differs: Sequence[str]) -> str:
    """What ``lookup`` and the viewer say beside a misnamed handle: its node's own op and
    line, what the handle names otherwise, and why."""
    own = " at ".join(x for x in (", ".join(ops), ", ".join(lines)) if x)
    return (
        f"its node {', '.join(nodes)}: {own or '(no op or line recorded)'};"
        f" the handle names another {' and '.join(differs)}: {ORIGIN_NODE_RULE}"
    )


def read_misnamed(diagnostics: Any) -> list[MisnamedHandle]:
    """The ``misnamed_handles`` of a diagnostics document as read from a file or a log
    (entries of another shape are passed over: ``validate`` is what reports them)."""
    entries = diagnostics.get("misnamed_handles") if isinstance(diagnostics, dict) else None
    found = []
    for entry in entries if isinstance(entries, list) else ():
        try:
            found.append(msgspec.convert(entry, MisnamedHandle))
        except msgspec.ValidationError:
            continue
    return found
