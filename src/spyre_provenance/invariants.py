"""Coverage invariants of a TORCH_TRACE log: ``coverage.judge`` on every graph it holds.

Golden files pin *what* the provenance says; the coverage rules (``coverage``, where they
are written) say it is *complete*, for any model on any compiler version (op counts do not
hold: they change with the compiler). This module reads each graph's records from a log
(the wrapper code, the post-grad graph, the node mappings, the OpSpec debug handles, the
diagnostics) and hands them to the judge.

Pure module: no torch import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from spyre_provenance import coverage
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    OUTPUT_CODE,
    POST_GRAD_GRAPHS,
)
from spyre_provenance.model.records import Violation
from spyre_provenance.validate import schemas

#: The backend whose mappings are torch's own: their gaps are hints, not violations.
UPSTREAM_BACKEND = "inductor"

__all__ = ["LoggedGraph", "Violation", "check_graph", "check_log", "judge_logged", "read_log_graphs"]


class LoggedGraph(msgspec.Struct):
    """One compiled graph's records in a TORCH_TRACE log (payloads as logged)."""

    compile_id: str
    post_grad_graph: str | None = None
    output_code: str | None = None
    node_mappings: dict | None = None
    stack_traces: dict | None = None
    opspec_handles: dict | None = None
    diagnostics: dict | None = None

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


def read_log_graphs(path: str | os.PathLike[str]) -> list[LoggedGraph]:
    """The graphs of a TORCH_TRACE log, in compile order, split by ``tracelog.GraphSplitter``
    (the rule ``tlparse_run`` splits logs by, too)."""
    from spyre_provenance import tracelog

    artifacts = {
        NODE_MAPPINGS: "node_mappings",
        KERNEL_STACK_TRACES: "stack_traces",
        OPSPEC_DEBUG_HANDLES: "opspec_handles",
        DIAGNOSTICS: "diagnostics",
    }
    names = {*POST_GRAD_GRAPHS, OUTPUT_CODE, *artifacts}
    graphs: list[LoggedGraph] = []
    current: dict[str, LoggedGraph] = {}
    splitter = tracelog.GraphSplitter()
    for compile_id, name, payload in tracelog.artifact_payloads(path, names):
        if splitter.place(compile_id, name)[1]:
            graph = current[compile_id] = LoggedGraph(compile_id)
            graphs.append(graph)
        graph = current[compile_id]
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
    upstream: bool = False,
    where: str = "",
) -> list[Violation]:
    """Every rule on one graph's logged texts; an empty list means the provenance is complete."""
    graph = coverage.parse_post_grad_graph(post_grad_graph) if post_grad_graph is not None else None
    return coverage.judge(
        output_code, graph, node_mappings, opspec_handles, upstream=upstream, where=where
    ).violations


def judge_logged(graph: LoggedGraph, where: str = "") -> coverage.GraphCoverage:
    """The judge's full verdict (counts, violations, hints) on one logged graph."""
    parsed = coverage.parse_post_grad_graph(graph.post_grad_graph) if graph.post_grad_graph is not None else None
    return coverage.judge(
        graph.output_code, parsed, graph.node_mappings, graph.opspec_handles, graph.stack_traces,
        upstream=graph.upstream, where=where,
    )


def check_log(path: str | os.PathLike[str], *, labels: Iterable[str] | None = None) -> list[Violation]:
    """Every rule on every graph of a TORCH_TRACE log (``labels`` names the graphs)."""
    graphs = read_log_graphs(path)
    names = list(labels) if labels is not None else []
    found: list[Violation] = []
    for i, graph in enumerate(graphs):
        label = names[i] if i < len(names) else f"graph {i} {graph.compile_id}"
        found += judge_logged(graph, label).violations
    return found
