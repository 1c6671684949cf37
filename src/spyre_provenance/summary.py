"""After a compile: re-read what was written, validate it, measure coverage, print a summary.

Everything here reads files (the TORCH_TRACE log, the ``--out`` artifacts), not the hook's
memory: the summary describes what tlparse and a CI job will actually see.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from spyre_provenance import coverage

if TYPE_CHECKING:
    from spyre_provenance.compile_run import CompileReport


class GraphCheck(msgspec.Struct):
    compile_id: str
    coverage: coverage.GraphCoverage | None


class OutputCheck(msgspec.Struct):
    """What validate and coverage say about a compile's outputs."""

    artifacts: int
    invalid: list[str]  # "location: first problem"
    graphs: list[GraphCheck]

    @property
    def all_valid(self) -> bool:
        return not self.invalid


def check_outputs(paths: Path | list[Path], log: Path | None) -> OutputCheck:
    """Validate every artifact in ``paths`` (a folder, or this run's graph folders) and in
    ``log``, and measure each graph the log holds.

    A compile names only its own folders and log: another run may be writing into the
    same ``--out`` at the same time, and its half-written files are not this run's verdict.
    """
    from spyre_provenance import schemas
    from spyre_provenance.invariants import read_log_graphs

    targets = [paths] if isinstance(paths, Path) else list(paths)
    targets += [log] if log is not None and log not in targets else []
    results = schemas.validate_paths(targets) if targets else []
    invalid = [f"{r.location}: {r.problems[0]}" for r in results if not r.ok]
    graphs: list[GraphCheck] = []
    if log is not None:
        for graph in read_log_graphs(log):
            measured = None
            if graph.node_mappings is not None and graph.output_code is not None:
                measured = coverage.measure(
                    graph.output_code, graph.node_mappings, graph.post_grad_graph, graph.stack_traces
                )
            graphs.append(GraphCheck(graph.compile_id, measured))
    return OutputCheck(artifacts=len(results), invalid=invalid, graphs=graphs)


def render(report: CompileReport, checked: OutputCheck, pages: list[Path], out: Path) -> str:
    lines = [
        f"compiled {report.model} ({report.dtype}{', train' if report.train else ''}) "
        f"on the {report.backend} backend: {len(report.graphs)} graph(s)",
        f"  output vs eager: {'match' if report.matches_eager else 'MISMATCH'} "
        f"(max abs error {report.max_abs_error:.3g})",
    ]
    if not report.graphs:
        lines.append("  NO GRAPH RECORDED: the hook saw no kernel code generation")
    for graph, logged in zip(report.graphs, checked.graphs + [None] * len(report.graphs)):
        d = graph.diagnostics
        kernels = len(graph.records)
        lines.append(f"  graph {graph.compile_id} {graph.kind}: {kernels} kernel call site(s)")
        cov = logged.coverage if logged is not None else None
        if cov is not None:
            lines += [
                f"    mapped call sites:     {cov.mapped_call_sites}/{cov.call_sites}"
                + (f"  unmapped: {', '.join(cov.unmapped_call_sites)}" if cov.unmapped_call_sites else ""),
                f"    post-grad nodes reached: {cov.reached_compute_nodes}/{cov.compute_nodes}"
                f" ({cov.no_kernel_nodes} view/metadata node(s) emit no kernel)"
                + (f"  unreached: {', '.join(cov.unreached_nodes)}" if cov.unreached_nodes else ""),
                f"    kernels with a source line: {cov.kernels_with_source}/{cov.kernels}",
            ]
        if d.opspecs:
            lines.append(
                f"    OpSpecs: {d.opspecs}, without handle: {d.handleless_opspecs}, "
                f"handle/origin disagreements: {len(d.disagreements)}"
                + (f" ({', '.join(d.disagreements)})" if d.disagreements else "")
            )
        if d.faults:
            lines.append("    PARTIAL: " + "; ".join(d.faults))
            if d.mapping == "upstream":
                lines.append("    mapping left out: the log holds Inductor's own mapping for this graph")
    lines.append(
        f"  artifacts: {checked.artifacts} validated, "
        + ("all valid" if checked.all_valid else f"{len(checked.invalid)} INVALID")
    )
    lines += [f"    {problem}" for problem in checked.invalid]
    lines.append(f"  written to {out}")
    for page in pages:
        lines.append(f"  provenance page: {page}")
    return "\n".join(lines)
