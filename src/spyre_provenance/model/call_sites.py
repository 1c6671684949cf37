"""The call site a tracked process records at each call into a compiled graph while a
``torch.profiler`` session records (``capture.call_recording`` writes it, ``runtime.launches``
reads it): a ``record_function`` range around the call, named

    spyre_provenance.call_site: FILE:LINE (FUNCTION)

with the frame's file as Python knows it (``co_filename``), its current line (``f_lineno``:
the line that made the call, where the profiler's own Python events name a function by its
first line) and its function. The kernel events of the call nest in the range on its thread
(or their launching CPU op does), so every reader of the trace sees who called. Pure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

PREFIX = "spyre_provenance.call_site: "
# FILE may hold ':' (a Windows drive) and spaces: the line and function are read from the end
_NAME = re.compile(re.escape(PREFIX) + r"(?P<file>.+):(?P<line>[0-9]+) \((?P<function>[^()]*)\)")


class CallSite(NamedTuple):
    file: str
    line: int  # the line that made the call
    function: str


def name(file: str, line: int, function: str) -> str:
    """The range's name for a call from ``file:line`` in ``function``."""
    return f"{PREFIX}{file}:{line} ({function})"


def parse(text: str) -> CallSite | None:
    """The call site a range's name records; None for any other name."""
    if not text.startswith(PREFIX):
        return None
    match = _NAME.fullmatch(text)
    return CallSite(match["file"], int(match["line"]), match["function"]) if match else None
