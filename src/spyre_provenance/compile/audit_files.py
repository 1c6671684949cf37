"""The audit files of a compile: ``provenance_audit.json`` and ``.md``, built and written.

Shared by ``compile --audit`` and ``audit`` (one code path): ``build`` makes the document
from what the tracked compile's probe counted, ``write`` validates it and writes both files
atomically into ``--out``.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model.layout import Layout

if TYPE_CHECKING:
    from spyre_provenance.audit.report import Changes
    from spyre_provenance.compile.tracked import CompileReport
    from spyre_provenance.model.audit_records import AuditV1


def build(report: CompileReport) -> AuditV1:
    """The audit document of a compile report."""
    from spyre_provenance.audit import report as audit_report
    from spyre_provenance.capture.audit_probe import toolchain

    return audit_report.make_audit(
        [g.audit for g in report.graphs],
        model=report.model,
        dtype=report.dtype,
        backend=report.backend,
        train=report.train,
        toolchain=toolchain(),
        tracking_level=report.tracking_level,
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def write(
    report: CompileReport,
    layout: Layout,
    document: AuditV1 | None = None,
    changes: Changes | None = None,
    against: str | None = None,
) -> tuple[list[Path], list[str]]:
    """Validate the audit, then write ``provenance_audit.json`` and ``.md`` into ``layout.out``
    atomically. Returns (files written, problems); an invalid audit is never written."""
    from spyre_provenance.audit import report as audit_report
    from spyre_provenance.base.files import atomic_write_bytes

    document = document if document is not None else build(report)
    problems = audit_report.check(document)
    if problems:
        return [], problems
    if not any(g.audit is not None for g in report.graphs):
        raise UnusableInput(report.model, "no graph was audited (the compile generated no code)")
    files = [
        atomic_write_bytes(layout.audit_json, audit_report.to_json_bytes(document)),
        atomic_write_bytes(
            layout.audit_markdown, audit_report.render_markdown(document, changes, against).encode("utf-8")
        ),
    ]
    return files, []
