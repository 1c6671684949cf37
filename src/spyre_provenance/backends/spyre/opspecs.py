"""Reading torch-spyre's OpSpecs and DebugHandles (real ones, or the reference backend's
look-alikes in ``reference.lookalike``) into the records the rest of the package reads
(``model.records``).

Duck-typed on purpose: fields are read by name (``getattr`` with a default), so an OpSpec of
an older torch-spyre without the later fields reads as well; LoopSpecs are flattened and an
``UnimplementedOp`` is kept, with why it has no handle. No torch import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spyre_provenance.model import records


def extent(value: Any) -> int | str:
    """A size as plain data: an int when concrete, else its text (``s0``, ``2*s1``).

    Iteration-space entries are torch-spyre's (range, work division) pairs: the range is kept.
    """
    if isinstance(value, (tuple, list)) and value:
        value = value[0]
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        return str(value)
    return as_int if as_int == value else str(value)


def _iteration_space(space: Any) -> list[int | str]:
    if space is None:
        return []
    values = space.values() if isinstance(space, Mapping) else space
    return [extent(v) for v in values]


def _source_record(src: Any) -> records.SourceLoc | None:
    if src is None:
        return None
    end_line = getattr(src, "end_line", None)
    end_col = getattr(src, "end_col", None)
    return records.SourceLoc(
        file=str(src.file),
        start_line=int(src.start_line),
        start_col=int(getattr(src, "start_col", 0) or 0),
        end_line=None if end_line is None else int(end_line),
        end_col=None if end_col is None else int(end_col),
    )


def debug_handle_record(handle: Any) -> records.DebugHandle | None:
    """A (real or stand-in) DebugHandle as ``records.DebugHandle``; None stays None."""
    if handle is None:
        return None
    return records.DebugHandle(
        id=int(handle.id),  # int, or its decimal string on JSON paths
        source=_source_record(getattr(handle, "source", None)),
        aten_op=getattr(handle, "aten_op", None),
        ir_chain=tuple(str(x) for x in getattr(handle, "ir_chain", ()) or ()),
        fused_from=tuple(
            r for r in (debug_handle_record(h) for h in getattr(handle, "fused_from", ()) or ()) if r is not None
        ),
        transform_history=tuple(
            records.ProvenanceTransform(
                kind=str(t.kind),
                pass_name=str(getattr(t, "pass_name", "")),
                reason=str(getattr(t, "reason", "") or ""),
            )
            for t in getattr(handle, "transform_history", ()) or ()
        ),
    )


def _buffer_of(obj: Any, handle: Any) -> str | None:
    """The buffer an OpSpec writes: its output TensorArg's name, else the IR chain's tail."""
    explicit = getattr(obj, "buffer", None)
    if explicit:
        return str(explicit)
    for arg in getattr(obj, "args", ()) or ():
        if getattr(arg, "is_input", True) is False and getattr(arg, "name", None):
            return str(arg.name)
    chain = getattr(handle, "ir_chain", None) if handle is not None else None
    return str(chain[-1]) if chain else None


#: What an OpSpec has besides ``op``; torch-spyre's ``UnimplementedOp`` (two classes of that
#: name, in ``op_spec.py`` and ``spyre_kernel.py``) has none of them.
_OPSPEC_ONLY_FIELDS = ("is_reduction", "iteration_space", "args", "op_info")
UNIMPLEMENTED = "torch-spyre has no implementation of this op (UnimplementedOp)"
LOST_HANDLE = "the backend built no debug handle for it"


def opspec_record(obj: Any) -> records.OpSpecRecord:
    """One OpSpec (real torch-spyre, this module's model, or UnimplementedOp) as a record.

    An OpSpec of a generation with a ``debug_handle`` field that holds None lost its handle;
    an ``UnimplementedOp`` computes nothing the device can run: for both ``missing_handle``
    says why, so the hook counts and reports it. An OpSpec of a generation without the field
    never had a handle.
    """
    if not any(hasattr(obj, field) for field in _OPSPEC_ONLY_FIELDS):
        return records.OpSpecRecord(op=str(getattr(obj, "op", "")), is_reduction=False, missing_handle=UNIMPLEMENTED)
    handle = getattr(obj, "debug_handle", None)
    lost = handle is None and hasattr(obj, "debug_handle")
    return records.OpSpecRecord(
        op=str(getattr(obj, "op", "")),
        is_reduction=bool(getattr(obj, "is_reduction", False)),
        iteration_space=_iteration_space(getattr(obj, "iteration_space", None)),
        buffer=_buffer_of(obj, handle),
        debug_handle=debug_handle_record(handle),
        missing_handle=LOST_HANDLE if lost else None,
    )


def opspec_records(specs: Iterable[Any]) -> list[records.OpSpecRecord]:
    """A kernel's spec list in emission order, loop bodies (torch-spyre's LoopSpec) flattened;
    every entry becomes a record, an UnimplementedOp too (never dropped)."""
    out: list[records.OpSpecRecord] = []
    for spec in specs:
        body = getattr(spec, "body", None)
        if body is not None and not hasattr(spec, "op"):
            out.extend(opspec_records(body))
        else:
            out.append(opspec_record(spec))
    return out
