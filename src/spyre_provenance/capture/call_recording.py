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
#: the files of ``_kinds`` that are machinery: most frames walked are torch's (8 on the per-op
#: path, 13 on a module's), and a set's ``in`` is the cheapest test for each
_machinery: set[str] = set()
#: Dynamo's transformed code objects (``torch._dynamo.utils.orig_code_map``, keyed by identity).
#: The compiled function's own frame runs one of them, in the user's file, at its ``def``
#: line: it is the compiled region, not who called it, so it is passed over.
_transformed: Any = ()
#: (id of a code object in a user's file, offset of the call in it) -> (the code object, the
#: range name, None for a transformed one): each call site is judged and named once. The
#: frame's line (``f_lineno``) is read from the code's line table, scanned from its start:
#: about 1 us at the end of a 300-line ``forward``, on every call. The code object is held so
#: its id is not reused while its entry stands; the whole cache is dropped past
#: ``_MAX_SITES`` (code made anew per call would grow it without end). Dynamo registers a
#: code object it makes before it runs, so what a code object is never changes once seen.
_sites: dict[tuple[int, int], tuple[Any, str | None]] = {}
_MAX_SITES = 4096
_warned = False


def _kind(file: str) -> str:
    kind = _kinds.get(file)
    if kind is None:
        kind = _kinds[file] = _USER if is_run_time_user_frame(file) else _OURS if is_this_package(file) else _MACHINERY
        if kind == _MACHINERY:
            _machinery.add(file)
    return kind


def find_call_site(depth: int = 2) -> str | None:
    """The range name for the innermost frame from ``depth`` up that is the user's at run
    time and not a function Dynamo compiled. None when no frame is, or when this package
    made the call (``compile --profile``, the pytest fixture): the frames above it are this
    package's caller (its command line's script), not a line of the model."""
    machinery = _machinery
    frame: Any = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        if code.co_filename not in machinery:
            kind = _kind(code.co_filename)
            if kind == _OURS:
                return None
            if kind == _USER:
                name = _site_name(frame, code)
                if name is not None:
                    return name
        frame = frame.f_back
    return None


def _site_name(frame: Any, code: Any) -> str | None:
    """The range name of the call ``frame`` (running ``code``, in a user's file) is making;
    None when ``code`` is one Dynamo transformed."""
    key = (id(code), frame.f_lasti)
    site = _sites.get(key)
    if site is None:
        if len(_sites) >= _MAX_SITES:
            _sites.clear()
        name = None if code in _transformed else call_sites.name(code.co_filename, frame.f_lineno, code.co_name)
        site = _sites[key] = (code, name)
    return site[1]


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
            # Inline, not a helper: this runs on every call while a profiler records, and a
            # Python call is a few tenths of a percent of a per-op call.
            scope = None
            try:
                name = find_call_site(2)  # above this wrapper
                if name is not None:
                    entered = _RecordFunctionFast(name)  # torch's cheapest range, one per call
                    entered.__enter__()
                    scope = entered
            except Exception as exc:  # noqa: BLE001 - never break a call of the user's model
                _warn_once(exc)
            if scope is None:
                return original(graph, inputs)
            try:
                return original(graph, inputs)
            finally:
                scope.__exit__(None, None, None)

        __call__.__wrapped__ = original  # type: ignore[attr-defined]
        return __call__

    patches.wrap(CompiledFxGraph, "__call__", wrap)


def _warn_once(exc: Exception) -> None:
    """Finding the call site failed: said once; the call itself runs whatever happens here."""
    global _warned
    if not _warned:
        _warned = True
        errors.warn(f"spyre-provenance: a call site not recorded: {type(exc).__name__}: {exc}", stacklevel=3)
