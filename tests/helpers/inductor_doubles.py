"""The session's view of Inductor (``capture.inductor.Inductor``), with a recorder or a fault.

Handed to ``capture.tracking.start(..., inductor=...)``: a test sees what the hook logs,
or makes one step fail, through the same seam the hook reads Inductor by, without patching
names inside the package.
"""

from __future__ import annotations

import json
from typing import Any

from spyre_provenance.capture.inductor import Inductor


class Injected(RuntimeError):
    """The fault a test injected (never raised by real code)."""


class RecordingInductor(Inductor):
    """Logs for real, and keeps every logged artifact as (name, JSON-decoded document)."""

    def __init__(self) -> None:
        self.logged: list[tuple[str, Any]] = []

    def log_artifact(self, name: str, document: Any) -> None:
        super().log_artifact(name, document)
        self.logged.append((name, json.loads(json.dumps(document))))

    def logged_docs(self, name: str) -> list[Any]:
        return [doc for n, doc in self.logged if n == name]


def faulty(method: str) -> RecordingInductor:
    """A recording Inductor whose ``method`` raises ``Injected``."""
    if not callable(getattr(Inductor, method, None)):
        raise AttributeError(f"Inductor has no method {method!r}")

    def fail(self: Inductor, *args: Any, **kwargs: Any) -> Any:
        raise Injected("injected fault")

    return type(f"Faulty_{method}", (RecordingInductor,), {method: fail})()
