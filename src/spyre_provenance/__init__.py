"""spyre-provenance's public API: the names in ``__all__`` here and in ``spyre_provenance.types``.

The verbs: ``enable``/``disable``/``tracking`` track the compiles of a block of code;
``compile_request(CompileRequest(model=...))`` is the ``compile`` command's compile, with
its verdict (a ``RanksOutcome`` for ``ranks=N``). Both default to the command line's backend
(``auto``). ``lookup``, ``annotate``, ``time_summary`` and ``compare`` answer as the commands
of the same names do. Beside them, what they hand back (the outcomes) and what they raise
(the errors); the records inside the outcomes, and the types a caller hands in, live in
``spyre_provenance.types``.

Everything in the package's folders (``base/``, ``model/`` ... ``cli/``, one folder per
layer) is internal: it may change in any release. The API, the ``spyre-provenance``
command and the ``provenance_regression`` fixture are what users rely on.

The pure core imports no torch; the names of the compile are imported on first use, so
``import spyre_provenance`` stays cheap for the validator.
"""

from __future__ import annotations

import os  # loaded at every interpreter's start-up already

# written once, in base/ where every layer can read it (pyproject reads it there too)
from spyre_provenance.base.version import __version__

# not ``from typing import TYPE_CHECKING``: with SPYRE_PROVENANCE_OUT set the package is imported
# in every process that imports torch (spyre_provenance_startup), and typing costs milliseconds
TYPE_CHECKING = False

if TYPE_CHECKING:  # the lazy names below, for type checkers and the API pages (read statically)
    from collections.abc import Iterable

    from spyre_provenance.base.errors import (
        ProvenanceWarning,
        TorchNotInstalled,
        UnsupportedTorch,
        UnusableInput,
        Verdict,
    )
    from spyre_provenance.capture.hook import Session
    from spyre_provenance.capture.tracking import disable, enable, tracking
    from spyre_provenance.compile.job import CompileRequest, compile_request
    from spyre_provenance.compile.outcome import CompileOutcome
    from spyre_provenance.compile.ranks import RanksOutcome
    from spyre_provenance.model.compare_records import Comparison
    from spyre_provenance.model.lookup_records import LookupDocument
    from spyre_provenance.runtime.annotate import AnnotateSummary
    from spyre_provenance.runtime.time_summary import TimeSummary

    #: a path as the API takes one; ``from_`` takes one or several
    StrPath = str | os.PathLike[str]

__all__ = [
    "__version__",
    # the verbs
    "enable",
    "disable",
    "tracking",
    "compile_request",
    "lookup",
    "annotate",
    "time_summary",
    "compare",
    # what they take and hand back
    "CompileRequest",
    "Session",
    "CompileOutcome",
    "RanksOutcome",
    "Verdict",
    "LookupDocument",
    "AnnotateSummary",
    "TimeSummary",
    "Comparison",
    # errors and warnings
    "UnusableInput",
    "TorchNotInstalled",
    "UnsupportedTorch",
    "ProvenanceWarning",
]

#: Where each lazy name lives (the TYPE_CHECKING imports above name the same; a test holds them
#: equal): imported on first use, so the compile's modules, torch's seams and pytest load only then.
_LAZY = {
    "ProvenanceWarning": "spyre_provenance.base.errors",
    "TorchNotInstalled": "spyre_provenance.base.errors",
    "UnsupportedTorch": "spyre_provenance.base.errors",
    "UnusableInput": "spyre_provenance.base.errors",
    "Verdict": "spyre_provenance.base.errors",
    "Session": "spyre_provenance.capture.hook",
    "enable": "spyre_provenance.capture.tracking",
    "disable": "spyre_provenance.capture.tracking",
    "tracking": "spyre_provenance.capture.tracking",
    "compile_request": "spyre_provenance.compile.job",
    "CompileRequest": "spyre_provenance.compile.job",
    "CompileOutcome": "spyre_provenance.compile.outcome",
    "RanksOutcome": "spyre_provenance.compile.ranks",  # what compile_request returns for ranks=N
    "AnnotateSummary": "spyre_provenance.runtime.annotate",
    "LookupDocument": "spyre_provenance.model.lookup_records",
    "TimeSummary": "spyre_provenance.runtime.time_summary",
    "Comparison": "spyre_provenance.model.compare_records",
}

#: The names the top level also had before (since 0.1.0), each still served for one release with a
#: DeprecationWarning: a record type, from its one home ``spyre_provenance.types``, or an
#: internal seam (home, what to use instead).
_DEPRECATED = {
    **{
        name: ("spyre_provenance.types", f"spyre_provenance.types.{name}")
        for name in (
            "Backend",
            "GraphResult",
            "GraphDiagnostics",
            "KernelRecord",
            "CompileReport",
            "OutputCheck",
            "AuditFiles",
            "RankResult",
            "RankPage",
            "ProvenanceRegression",
            "ProvenanceToolchainHint",
        )
    },
    "Layout": ("spyre_provenance.model.layout", "enable(out_dir=..., label=...): the Layout is internal"),
    "Inductor": ("spyre_provenance.capture.inductor", "nothing: the Inductor seam is internal"),
}


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "types":  # ``spyre_provenance.types.GraphResult`` without importing it first
        return importlib.import_module("spyre_provenance.types")
    if name in _DEPRECATED:
        home, instead = _DEPRECATED[name]
        _deprecated(name, instead)
        return getattr(importlib.import_module(home), name)
    raise AttributeError(f"module 'spyre_provenance' has no attribute {name!r}")


def _paths(from_: StrPath | Iterable[StrPath]) -> list[StrPath]:
    """``from_`` as a list of paths: one path (str, PathLike) or several."""
    return [from_] if isinstance(from_, (str, os.PathLike)) else list(from_)


def lookup(*names: str, from_: StrPath | Iterable[StrPath] = ()) -> LookupDocument:
    """``spyre-provenance lookup NAME... --from PATH``: a ``LookupDocument`` for ``names``,
    read from ``from_`` (``--out`` folders, TORCH_TRACE logs, folders of them; default ``./out``)."""
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime import lookup as lookup_names

    return lookup_names.lookup(list(names), index.build(_paths(from_)))


def annotate(
    trace: StrPath,
    from_: StrPath | Iterable[StrPath] = (),
    output: StrPath | None = None,
    *,
    in_place: bool = False,
) -> AnnotateSummary:
    """``spyre-provenance annotate TRACE --from PATH [-o OUTPUT]``: ``trace`` (a torch.profiler
    Chrome trace) written with each known kernel event's provenance to ``output``, by default
    beside it as the command writes it (``TRACE.annotated.json``); ``in_place``: over ``trace``
    itself. Returns what was annotated (an ``AnnotateSummary``)."""
    from pathlib import Path

    from spyre_provenance.runtime import annotate as annotate_trace
    from spyre_provenance.runtime import index

    if in_place and output is not None:
        raise ValueError("annotate: give output or in_place, not both")
    target = trace if in_place else output if output is not None else annotate_trace.default_output(Path(trace))
    return annotate_trace.annotate(trace, index.build(_paths(from_)), target)


def time_summary(
    trace: StrPath,
    from_: StrPath | Iterable[StrPath] = (),
    acelyzer: StrPath | None = None,
    *,
    acelyzer_csv: StrPath | None = None,
) -> TimeSummary:
    """``spyre-provenance annotate TRACE --from PATH --summary [--acelyzer CSV]``: where
    ``trace``'s kernel time went, per source line and per module (a ``TimeSummary``), read
    from ``from_``; ``acelyzer``: an acelyzer summary CSV joined by kernel (``acelyzer_csv``,
    its name in 0.1.0, is deprecated)."""
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime import time_summary as summaries

    if acelyzer_csv is not None:
        _deprecated("time_summary(acelyzer_csv=...)", "acelyzer=...")
        acelyzer = acelyzer if acelyzer is not None else acelyzer_csv
    return summaries.summarize(trace, index.build(_paths(from_)), acelyzer)


def compare(
    a: StrPath,
    b: StrPath,
    trace_a: StrPath | None = None,
    trace_b: StrPath | None = None,
    no_trace: bool = False,
    *,
    find_traces: bool | None = None,
) -> Comparison:
    """``spyre-provenance compare A B [--trace-a TRACE] [--trace-b TRACE] [--no-trace]``: two
    compiles side by side per source line (a ``Comparison``). ``a`` and ``b`` are ``--out``
    folders (or logs, run folders), or ``PATH:COMPILE_ID`` for one compile of one; times from
    ``trace_a``/``trace_b``, else (unless ``no_trace``) the traces ``compile --profile`` wrote
    beside their logs. (``find_traces=False``, 0.1.0's spelling of ``no_trace``, is deprecated.)"""
    from spyre_provenance.runtime.compare_folders import compare_folders

    if find_traces is not None:
        _deprecated("compare(find_traces=...)", "no_trace=...")
        no_trace = no_trace or not find_traces
    return compare_folders(str(a), str(b), trace_a=trace_a, trace_b=trace_b, find_traces=not no_trace)


def _deprecated(old: str, new: str) -> None:
    import warnings

    warnings.warn(f"spyre_provenance.{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
