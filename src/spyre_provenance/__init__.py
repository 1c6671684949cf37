"""spyre-provenance: tlparse-compatible compiler provenance for Spyre compiles.

``enable``/``disable``/``tracking`` track the compiles of a block of code;
``compile_request(CompileRequest(model=...))`` is the ``compile`` command's compile, with
its verdict. Both default to the command line's backend (``backends.DEFAULT_BACKEND``).
The pure core (records, mapping, schemas, golden) imports no torch; the hook and the
backends do, lazily, so ``import spyre_provenance`` stays cheap for the validator.
"""

from __future__ import annotations

# the one place the version is written: pyproject reads it ([tool.hatch.version]), and
# CHANGELOG.md's newest released heading must equal it (tests/unit/test_docs.py)
__version__ = "0.1.0"

__all__ = [
    "__version__",
    "enable",
    "disable",
    "tracking",
    "compile_request",
    "CompileRequest",
    "CompileOutcome",
    "RanksOutcome",
    "lookup",
    "annotate",
    "time_summary",
]


def __getattr__(name: str):
    if name in ("enable", "disable", "tracking"):
        from spyre_provenance.capture import tracking

        return getattr(tracking, name)
    if name in ("compile_request", "CompileRequest", "CompileOutcome"):
        # the compile the command line runs, with its verdict (``outcome.verdict``)
        from spyre_provenance.compile import job as compile_job

        return getattr(compile_job, name)
    if name == "RanksOutcome":  # what compile_request returns for CompileRequest(ranks=N)
        from spyre_provenance.compile.ranks import RanksOutcome

        return RanksOutcome
    if name in ("lookup", "annotate", "time_summary"):
        return globals()[f"_{name}"]
    raise AttributeError(name)


def _lookup(*names: str, from_=()):
    """``spyre-provenance lookup``: a ``model.lookup_records.LookupDocument`` for ``names``, read
    from ``from_`` (``--out`` folders, TORCH_TRACE logs; default ``./out``)."""
    from spyre_provenance.runtime import index, lookup

    return lookup.lookup(
        list(names), index.build([from_] if isinstance(from_, (str, bytes)) or hasattr(from_, "__fspath__") else from_)
    )


def _annotate(trace, from_=(), output=None):
    """``spyre-provenance annotate``: ``trace`` (a torch.profiler Chrome trace) written to
    ``output`` (default: in place) with each known kernel event's provenance; the summary."""
    from spyre_provenance.runtime import annotate, index

    paths = [from_] if isinstance(from_, (str, bytes)) or hasattr(from_, "__fspath__") else from_
    return annotate.annotate(trace, index.build(paths), output if output is not None else trace)


def _time_summary(trace, from_=(), acelyzer_csv=None):
    """``spyre-provenance annotate TRACE --summary``: where ``trace``'s kernel time went, per
    source line and per module (a ``runtime.time_summary.TimeSummary``), read from ``from_``."""
    from spyre_provenance.runtime import index, time_summary

    paths = [from_] if isinstance(from_, (str, bytes)) or hasattr(from_, "__fspath__") else from_
    return time_summary.summarize(trace, index.build(paths), acelyzer_csv)
