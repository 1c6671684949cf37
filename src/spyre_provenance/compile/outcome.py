"""What one compile came to: its ``CompileOutcome`` (what the hook recorded, what was
written and re-read, the pages, the audit files) and the one verdict on it (``judge``).

Shared by the compile's door (``compile.job``), the summary (``compile.summary``) and the
command line; it imports nothing of theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from spyre_provenance.base.errors import UnusableInput, Verdict
from spyre_provenance.compile.request import CompileRequest

if TYPE_CHECKING:
    from spyre_provenance.audit.report import Changes
    from spyre_provenance.compile.output_check import OutputCheck
    from spyre_provenance.compile.tracked import CompileReport
    from spyre_provenance.model.audit_records import AuditV1
    from spyre_provenance.runtime.annotate import AnnotateSummary


class AuditFiles(msgspec.Struct):
    """The provenance audit of a compile: the document, what changed since ``audit_against``,
    the files written, and why they were not (an invalid audit is never written)."""

    document: AuditV1
    changes: Changes | None  # None without audit_against
    written: list[Path]
    problems: list[str]
    refused: UnusableInput | None = None  # no graph was audited: unusable, nothing written


class CompileOutcome(msgspec.Struct):
    """One compile as it went: what the hook recorded (``report``), what was written and
    re-read (``checked``, None without ``out``), the pages, the audit, and the verdict."""

    request: CompileRequest
    out: Path | None  # where it wrote (a rank's folder for a rank)
    backend_choice: str  # which backend, and why: ``backend reference (auto: ...)``
    report: CompileReport  # what the hook recorded, and the comparison with eager
    checked: OutputCheck | None  # None when nothing was written
    pages: list[Path]
    page_problems: list[str]  # tlparse could not render the pages: why
    audit: AuditFiles | None
    verdict: Verdict
    profile: Path | None = None  # with ``profile``: the annotated trace; None: not written
    viewer: Path | None = None  # with ``viewer``: the viewer's page; None: not written
    viewer_problem: str | None = None  # why the viewer's page could not be written
    profile_problem: str | None = None  # why the annotated trace was not written
    profile_summary: AnnotateSummary | None = None  # what annotating the trace found

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def compile_reasons(self) -> list[str]:
        """The verdict's reasons about the compile itself, the audit files' aside."""
        audit = set(self.audit.problems) if self.audit is not None else set()
        return [r for r in self.verdict.reasons if r not in audit]


#: A ``spyre`` compile whose kernels are all Inductor's own: never reported as torch-spyre's.
NO_TORCH_SPYRE_KERNEL = (
    "no kernel was compiled by torch-spyre: Inductor compiled the model with its own CPU kernels"
    " (torch-spyre's compile_fx wrapper engages only for tensors on device spyre)"
)


def judge(report: CompileReport, checked: OutputCheck | None = None, audit: AuditFiles | None = None) -> Verdict:
    """The one verdict on a compile (``report``, a ``CompileReport``), on what it wrote
    (``checked``; None: nothing was written, the hook's records are judged alone) and on its
    audit files. A compiled run that failed is unusable input, its artifacts kept; anything
    lost or missing is found wanting."""
    unusable = [] if report.run_error is None else [f"the compiled code failed as it ran ({report.run_error})"]
    wanting = []
    # no graph recorded means the hook saw nothing (a cache hit it could not bypass, or a
    # model that compiled no code): never a silent success
    if not report.graphs:
        wanting.append("no graph recorded: the hook saw no kernel code generation")
    if report.graphs and report.torch_spyre_kernels == 0:
        wanting.append(NO_TORCH_SPYRE_KERNEL)
    if report.run_error is None and not report.matches_eager:
        wanting.append(f"the compiled output does not match eager (max abs error {report.max_abs_error:.3g})")
    for graph in report.graphs:
        if not graph.diagnostics.complete:
            d = graph.diagnostics
            why = "; ".join(d.faults) or (
                "no mapping was built"
                if graph.node_mappings is None
                else f"coverage incomplete ({len(d.violations)} violation(s))"
            )
            wanting.append(f"graph {graph.compile_id} {graph.kind}: {why}")
    if checked is not None:
        wanting += [f"invalid artifact: {problem}" for problem in checked.invalid]
        for graph, logged in zip(report.graphs, checked.paired, strict=True):
            if logged is None:
                wanting.append(f"graph {graph.compile_id} {graph.kind}: the log holds no code for it")
        wanting += [
            f"graph {g.compile_id}: its coverage on the log is not complete" for g in checked.graphs if not g.complete
        ]
    if audit is not None:
        wanting += audit.problems
        unusable += [str(audit.refused)] if audit.refused is not None else []
    return Verdict.judge(wanting=wanting, unusable=unusable)
