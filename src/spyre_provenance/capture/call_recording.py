"""Call sites recorded at launch: while tracking is on and a ``torch.profiler`` session
records, each call of a compiled graph runs inside a ``record_function`` range naming the
line that made it (``model.call_sites``), so its kernel events nest in that range.

The profiler cannot say it alone: with ``with_stack=True`` it names each Python frame by the
line where it met it (a function's ``def`` line), and torch-spyre's eager mode calls every
per-op compile from its own dispatch. Here the frame is read at the call, its current line.

The seam is ``CompiledFxGraph.__call__`` (torch 2.13 ``_inductor/output_code.py``): every
call into an Inductor graph, whole or per-op, forward or backward, comes through it. It is
patched for the class while tracking is on, so it covers every ``CompiledFxGraph`` called
then (also one compiled before tracking began: telling the tracked ones apart would cost a
lookup per call and buys nothing, each call is a real launch). With no profiler recording the
cost is one check of torch's own flag (what ``CompiledFxGraph.__call__`` itself reads).
Finding the frame never breaks the call: a failure is warned once, the call runs unrecorded.
"""

from __future__ import annotations

import sys
from typing import Any

from spyre_provenance.base import errors
from spyre_provenance.base.patches import Patches
from spyre_provenance.model import call_sites
from spyre_provenance.model.frames import is_run_time_user_frame, is_this_package

#: co_filename -> what a frame there is at run time: the regexes once per file
_kinds: dict[str, str] = {}
_USER, _OURS, _MACHINERY = "user", "ours", "machinery"
#: Dynamo's transformed code objects (``torch._dynamo.utils.orig_code_map``, keyed by identity).
#: The compiled function's own frame runs one of them, in the user's file, at its ``def``
#: line: it is the compiled region, not who called it, so it is passed over.
_transformed: Any = ()
_warned = False


def _kind(file: str) -> str:
    kind = _kinds.get(file)
    if kind is None:
        kind = _kinds[file] = _USER if is_run_time_user_frame(file) else _OURS if is_this_package(file) else _MACHINERY
    return kind


def find_call_site(depth: int = 2) -> str | None:
    """The range name for the innermost frame from ``depth`` up that is the user's at run
    time and not a function Dynamo compiled. None when no frame is, or when this package
    made the call (``compile --profile``, the pytest fixture): the frames above it are this
    package's caller (its command line's script), not a line of the model."""
    frame: Any = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        kind = _kind(code.co_filename)
        if kind == _OURS:
            return None
        if kind == _USER and code not in _transformed:
            return call_sites.name(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


def record_call_sites(patches: Patches) -> None:
    """Wrap ``CompiledFxGraph.__call__`` with the call site range, undone with ``patches``."""
    import torch.autograd.profiler as profiler
    from torch._C._profiler import _RecordFunctionFast
    from torch._dynamo.utils import orig_code_map
    from torch._inductor.output_code import CompiledFxGraph

    global _transformed
    _transformed = orig_code_map  # cleared in place by torch._dynamo.reset(), never replaced

    def wrap(original: Any) -> Any:
        def __call__(graph: Any, inputs: Any) -> Any:
            if not profiler._is_profiler_enabled:  # the one check a call pays without a profiler
                return original(graph, inputs)
            scope = _enter(_RecordFunctionFast)
            if scope is None:
                return original(graph, inputs)
            try:
                return original(graph, inputs)
            finally:
                scope.__exit__(None, None, None)

        __call__.__wrapped__ = original  # type: ignore[attr-defined]
        return __call__

    patches.wrap(CompiledFxGraph, "__call__", wrap)


def _enter(record_function: Any) -> Any:
    """The entered range of this call's site; None when there is no user frame, or finding
    it failed (warned once: the call itself must run whatever happens here)."""
    global _warned
    try:
        found = find_call_site(3)  # above _enter and the wrapper
        if found is None:
            return None
        scope = record_function(found)
        scope.__enter__()
        return scope
    except Exception as exc:  # noqa: BLE001 - never break a call of the user's model
        if not _warned:
            _warned = True
            errors.warn(f"spyre-provenance: a call site not recorded: {type(exc).__name__}: {exc}", stacklevel=3)
        return None
