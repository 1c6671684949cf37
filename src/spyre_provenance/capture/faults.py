"""Never break a compile: the hook's failures, kept per graph instead of raised.

Every stage of the hook runs under ``Faults.stage``: an exception becomes one ``Fault`` of
its graph (its stage, and what was lost and why, on one line, paths redacted) and one
``ProvenanceWarning`` per stage and session; ``settle`` moves a graph's faults into its
diagnostics, which makes it partial.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from spyre_provenance.base import errors
from spyre_provenance.model.records import Fault, GraphDiagnostics


class Faults:
    """One session's faults by graph (``id`` of Inductor's graph), and the stages warned of."""

    def __init__(self, redactor: Any = None) -> None:
        self.redactor = redactor  # a redact.Redactor: paths in the errors rewritten
        self._by_graph: dict[int, list[Fault]] = {}
        self._warned: set[str] = set()

    @contextlib.contextmanager
    def stage(self, stage: str, graph_key: int) -> Iterator[None]:
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - provenance must never fail a compile
            self.fault(stage, graph_key, exc)

    def fault(self, stage: str, graph_key: int | None, exc: BaseException) -> None:
        """Note a failure of ``stage`` on a graph (None: the current one, if it can be told)
        and warn once per stage and session."""
        if graph_key is None:
            try:
                from torch._inductor.virtualized import V

                graph_key = id(V.graph)
            except Exception:  # noqa: BLE001
                graph_key = 0
        self.note(stage, graph_key, f"{type(exc).__name__}: {str(exc)}")

    def note(self, stage: str, graph_key: int, error: str) -> None:
        """Record a loss of ``stage`` on a graph (``error``: what was lost, and why) and warn
        once per stage and session; the graph becomes partial."""
        error = _one_line(error)
        if self.redactor is not None:
            error = self.redactor.redact_text(error)
        self._by_graph.setdefault(graph_key, []).append(Fault(stage, error))
        if stage not in self._warned:
            self._warned.add(stage)
            errors.warn(
                f"spyre-provenance: {stage}: {error} (the compile goes on; this graph's provenance is partial)",
                stacklevel=3,
            )

    def settle(self, diag: GraphDiagnostics, graph_key: int) -> None:
        """Move the graph's faults so far into its diagnostics."""
        diag.fault_records = diag.fault_records + self._by_graph.pop(graph_key, [])
        diag.faults = [f"{f.stage}: {f.error}" for f in diag.fault_records]
        diag.partial = bool(diag.fault_records)


def _one_line(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
