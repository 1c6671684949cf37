"""The public record types: what the outcomes of ``spyre_provenance``'s verbs hold, and the
types a caller hands in (a ``Backend`` of its own; the fixture's).

``spyre_provenance`` holds the verbs, their outcomes and the errors; this module the rest of
what a caller meets, read field by field (``CompileOutcome.report.graphs[0].diagnostics``).
Both are the API; everything in the package's folders is internal. Like the top level, the
names are imported on first use: ``import spyre_provenance.types`` loads no torch.
"""

from __future__ import annotations

# not ``from typing import TYPE_CHECKING``: see ``spyre_provenance/__init__.py``
TYPE_CHECKING = False

if TYPE_CHECKING:  # the lazy names below, for type checkers and the API pages (read statically)
    from spyre_provenance.backends.base import Backend
    from spyre_provenance.compile.outcome import AuditFiles
    from spyre_provenance.compile.output_check import OutputCheck
    from spyre_provenance.compile.ranks import RankPage, RankResult
    from spyre_provenance.compile.tracked import CompileReport
    from spyre_provenance.model.records import GraphDiagnostics, GraphResult, KernelRecord
    from spyre_provenance.plugin.pytest_fixture import ProvenanceRegression, ProvenanceToolchainHint

__all__ = [
    # what a tracked compile recorded, per graph and per kernel (``Session.results``)
    "GraphResult",
    "GraphDiagnostics",
    "KernelRecord",
    # what a CompileOutcome holds, and each rank's of a RanksOutcome
    "CompileReport",
    "OutputCheck",
    "AuditFiles",
    "RankResult",
    "RankPage",
    # what a caller hands in: a backend adapter of its own (``enable(MyBackend())``)
    "Backend",
    # the ``provenance_regression`` fixture's types (the fixture comes from the plugin, entry point pytest11)
    "ProvenanceRegression",
    "ProvenanceToolchainHint",
]

#: Where each name lives (the TYPE_CHECKING imports above name the same; a test holds them equal).
_LAZY = {
    "Backend": "spyre_provenance.backends.base",
    "GraphDiagnostics": "spyre_provenance.model.records",
    "GraphResult": "spyre_provenance.model.records",
    "KernelRecord": "spyre_provenance.model.records",
    "CompileReport": "spyre_provenance.compile.tracked",
    "OutputCheck": "spyre_provenance.compile.output_check",
    "AuditFiles": "spyre_provenance.compile.outcome",
    "RankResult": "spyre_provenance.compile.ranks",
    "RankPage": "spyre_provenance.compile.ranks",
    "ProvenanceRegression": "spyre_provenance.plugin.pytest_fixture",
    "ProvenanceToolchainHint": "spyre_provenance.plugin.pytest_fixture",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'spyre_provenance.types' has no attribute {name!r}")
