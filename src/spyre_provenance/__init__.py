"""spyre-provenance's public API: the names in ``__all__``, and only these.

``enable``/``disable``/``tracking`` track the compiles of a block of code;
``compile_request(CompileRequest(model=...))`` is the ``compile`` command's compile, with
its verdict (a ``RanksOutcome`` for ``ranks=N``). Both default to the command line's backend
(``auto``). ``lookup``, ``annotate``, ``time_summary`` and ``compare`` answer as the commands
of the same names do.

Everything in the package's folders (``base/``, ``model/`` ... ``cli/``, one folder per
layer) is internal: it may change in any release. The API, the ``spyre-provenance``
command and the ``provenance_regression`` fixture are what users rely on.

The pure core imports no torch; the names of the compile are imported on first use, so
``import spyre_provenance`` stays cheap for the validator.
"""

from __future__ import annotations

# written once, in base/ where every layer can read it (pyproject reads it there too)
from spyre_provenance.base.version import __version__

# not ``from typing import TYPE_CHECKING``: the package is imported at every interpreter's
# start-up when SPYRE_PROVENANCE_OUT is set (plugin.startup), and typing costs milliseconds
TYPE_CHECKING = False

if TYPE_CHECKING:  # the lazy names below, for type checkers and the API pages (read statically)
    from spyre_provenance.base.errors import ProvenanceWarning, TorchNotInstalled, UnsupportedTorch, UnusableInput
    from spyre_provenance.capture.hook import Session
    from spyre_provenance.capture.tracking import disable, enable, tracking
    from spyre_provenance.compile.job import CompileOutcome, CompileRequest, compile_request
    from spyre_provenance.compile.ranks import RanksOutcome
    from spyre_provenance.model.compare_records import Comparison
    from spyre_provenance.model.lookup_records import LookupDocument
    from spyre_provenance.model.records import GraphDiagnostics, GraphResult, KernelRecord
    from spyre_provenance.plugin.pytest_fixture import ProvenanceRegression, ProvenanceToolchainHint
    from spyre_provenance.runtime.time_summary import TimeSummary


__all__ = [
    "__version__",
    # tracking the compiles of a block of code
    "enable",
    "disable",
    "tracking",
    "Session",
    "GraphResult",
    "GraphDiagnostics",
    "KernelRecord",
    # the command line's compile, and its lookups, from Python
    "compile_request",
    "CompileRequest",
    "CompileOutcome",
    "RanksOutcome",
    "lookup",
    "LookupDocument",
    "annotate",
    "time_summary",
    "TimeSummary",
    "compare",
    "Comparison",
    # errors and warnings
    "UnusableInput",
    "TorchNotInstalled",
    "UnsupportedTorch",
    "ProvenanceWarning",
    # the pytest fixture's types (the fixture itself comes from the plugin, entry point pytest11)
    "ProvenanceRegression",
    "ProvenanceToolchainHint",
]

#: Where each lazy name lives (the TYPE_CHECKING imports above name the same; a test holds them
#: equal): imported on first use, so the compile's modules, torch's seams and pytest load only then.
_LAZY = {
    "ProvenanceWarning": "spyre_provenance.base.errors",
    "TorchNotInstalled": "spyre_provenance.base.errors",
    "UnsupportedTorch": "spyre_provenance.base.errors",
    "UnusableInput": "spyre_provenance.base.errors",
    "GraphDiagnostics": "spyre_provenance.model.records",
    "GraphResult": "spyre_provenance.model.records",
    "KernelRecord": "spyre_provenance.model.records",
    "enable": "spyre_provenance.capture.tracking",
    "disable": "spyre_provenance.capture.tracking",
    "tracking": "spyre_provenance.capture.tracking",
    "Session": "spyre_provenance.capture.hook",
    "compile_request": "spyre_provenance.compile.job",
    "CompileRequest": "spyre_provenance.compile.job",
    "CompileOutcome": "spyre_provenance.compile.job",
    "RanksOutcome": "spyre_provenance.compile.ranks",  # what compile_request returns for ranks=N
    "LookupDocument": "spyre_provenance.model.lookup_records",
    "TimeSummary": "spyre_provenance.runtime.time_summary",
    "Comparison": "spyre_provenance.model.compare_records",
    "ProvenanceRegression": "spyre_provenance.plugin.pytest_fixture",
    "ProvenanceToolchainHint": "spyre_provenance.plugin.pytest_fixture",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'spyre_provenance' has no attribute {name!r}")


def _paths(from_) -> list:
    """``from_`` as a list of paths: one path (str, bytes, PathLike) or several."""
    return [from_] if isinstance(from_, (str, bytes)) or hasattr(from_, "__fspath__") else list(from_)


def lookup(*names: str, from_=()) -> LookupDocument:
    """``spyre-provenance lookup``: a ``LookupDocument`` for ``names``, read from ``from_``
    (``--out`` folders, TORCH_TRACE logs; default ``./out``)."""
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime import lookup as lookup_names

    return lookup_names.lookup(list(names), index.build(_paths(from_)))


def annotate(trace, from_=(), output=None):
    """``spyre-provenance annotate``: ``trace`` (a torch.profiler Chrome trace) written to
    ``output`` (default: in place) with each known kernel event's provenance; the summary."""
    from spyre_provenance.runtime import annotate as annotate_trace
    from spyre_provenance.runtime import index

    return annotate_trace.annotate(trace, index.build(_paths(from_)), output if output is not None else trace)


def time_summary(trace, from_=(), acelyzer_csv=None) -> TimeSummary:
    """``spyre-provenance annotate TRACE --summary``: where ``trace``'s kernel time went, per
    source line and per module (a ``TimeSummary``), read from ``from_``."""
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime import time_summary as summaries

    return summaries.summarize(trace, index.build(_paths(from_)), acelyzer_csv)


def compare(a, b, trace_a=None, trace_b=None, find_traces=True) -> Comparison:
    """``spyre-provenance compare A B``: two compiles side by side per source line (a
    ``Comparison``). ``a`` and ``b`` are ``--out`` folders (or logs, run folders), or
    ``PATH:COMPILE_ID`` for one compile of one; times from ``trace_a``/``trace_b``, else
    (``find_traces``) the traces ``compile --profile`` wrote beside their logs."""
    from spyre_provenance.runtime.compare_folders import compare_folders

    return compare_folders(str(a), str(b), trace_a=trace_a, trace_b=trace_b, find_traces=find_traces)
