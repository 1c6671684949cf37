"""The graphs of a TORCH_TRACE log: each compiled graph's records, as logged.

One graph per compile id and order (``tracelog.GraphSplitter``): the wrapper code, the
post-grad graph, the node mappings, stack traces, OpSpec debug handles and diagnostics.
The payloads are read with the validator's JSON reader, so deep nesting, bad JSON and
duplicate keys are one clear error (``UnusableInput``).

Pure: no torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import msgspec

from spyre_provenance.base import files
from spyre_provenance.logs import tracelog
from spyre_provenance.model import jsonio
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    OUTPUT_CODE,
    POST_GRAD_GRAPHS,
    PRE_GRAD_GRAPH,
    SPYRE_SIDECAR,
)

#: The backend whose mappings are torch's own: their gaps are hints, not violations.
UPSTREAM_BACKEND = "inductor"


class LoggedGraph(msgspec.Struct):
    """One compiled graph's records in a TORCH_TRACE log (payloads as logged)."""

    compile_id: str
    #: the graph Inductor was handed (``before_pre_grad_graph``), logged once per compile id
    #: before its graphs: a training compile's backward shows its forward's, as its mapping
    #: names that graph's nodes
    pre_grad_graph: str | None = None
    post_grad_graph: str | None = None
    output_code: str | None = None
    node_mappings: dict | None = None
    stack_traces: dict | None = None
    opspec_handles: dict | None = None
    diagnostics: dict | None = None
    #: torch-spyre's own provenance as it logged it during this graph's compile (PR #3449's
    #: ``spyre_provenance``; the whole sidecar so far, every compile it merged)
    spyre_provenance: dict | None = None

    @property
    def upstream(self) -> bool:
        """Whether the mapping is stock Inductor's: no hook in play (no diagnostics), or
        the hook on stock Inductor (diagnostics v2 name the backend; a v1 log tells it by
        the absence of OpSpecs, which every Spyre backend has)."""
        if self.diagnostics is None:
            return True
        backend = self.diagnostics.get("backend")
        if backend is not None or self.diagnostics.get("version") != 1:
            return backend == UPSTREAM_BACKEND
        return self.opspec_handles is None


#: A log's graphs by (path, inode, size, modification time), inside ``reading_each_log_once``
_READ: ContextVar[dict[files.Stamp, list[LoggedGraph]] | None] = ContextVar("logs_read", default=None)


@contextmanager
def reading_each_log_once() -> Iterator[None]:
    """Inside it (this thread), ``read_log_graphs`` reads an unchanged log once and gives
    every later caller the same graphs, which they must then only read: ``run``'s end reads
    a process's log for its line of the screen and again for its viewer page."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def read_log_graphs(path: str | os.PathLike[str]) -> list[LoggedGraph]:
    """The graphs of a TORCH_TRACE log, in compile order, split by ``tracelog.GraphSplitter``
    (the rule ``logs.tlparse_render`` splits logs by, too)."""
    read = _READ.get()
    if read is None:
        return _read_log_graphs(path)
    key = files.stamp(path)
    if key not in read:
        read[key] = _read_log_graphs(path)
    return list(read[key])


def _read_log_graphs(path: str | os.PathLike[str]) -> list[LoggedGraph]:
    artifacts = {
        NODE_MAPPINGS: "node_mappings",
        KERNEL_STACK_TRACES: "stack_traces",
        OPSPEC_DEBUG_HANDLES: "opspec_handles",
        DIAGNOSTICS: "diagnostics",
        SPYRE_SIDECAR: "spyre_provenance",
    }
    names = {PRE_GRAD_GRAPH, *POST_GRAD_GRAPHS, OUTPUT_CODE, *artifacts}
    graphs: list[LoggedGraph] = []
    current: dict[str, LoggedGraph] = {}
    splitter = tracelog.GraphSplitter()
    pre_grad: dict[str, str] = {}  # the compile id's pre-grad graph: it starts no graph of its own
    for compile_id, name, payload in tracelog.artifact_payloads(path, names):
        if name == PRE_GRAD_GRAPH:
            pre_grad[compile_id] = payload
            continue
        if splitter.place(compile_id, name)[1]:
            graph = current[compile_id] = LoggedGraph(compile_id, pre_grad_graph=pre_grad.get(compile_id))
            graphs.append(graph)
        graph = current[compile_id]
        if name in POST_GRAD_GRAPHS:
            graph.post_grad_graph = payload
        elif name == OUTPUT_CODE:
            graph.output_code = payload
        else:
            # the validator's reader: deep nesting, bad JSON and duplicate keys are one clear
            # error (UnusableInput), never an internal error or a value silently kept
            value = jsonio.load_json(payload, location=f"{path}:{compile_id} {name}")
            setattr(graph, artifacts[name], value if isinstance(value, dict) else None)
    return graphs
