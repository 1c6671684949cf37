"""torch-spyre's OpSpec and DebugHandle, modelled without torch-spyre.

torch-spyre builds one ``OpSpec`` per ComputedBuffer of a kernel and (newer releases) hangs a
``DebugHandle`` on it that says where the op came from. The dataclasses below have the field
names, order and defaults of torch-spyre main's (``torch_spyre/_inductor/op_spec.py``), so code
written against them reads real OpSpecs too; the readers further down go by field name only
(``getattr`` with a default), so an older OpSpec without the later fields reads as well. The rules that build a handle from a buffer's
``origins`` follow REFERENCE.md section 4 and torch-spyre's ``provenance.py``.

No torch import: the handle builder works on anything shaped like an Inductor buffer (``origins``
of objects with ``name`` and ``meta``, ``get_name()``), so it is unit-testable on fakes.

Where this model deliberately differs from torch-spyre (documented so nobody "fixes" it back):
- torch-spyre prefers ``buffer.origin_node`` for ``source``/``aten_op`` when Inductor set it;
  that attribute is run-dependent (REFERENCE.md section 5), so here provenance rides ``origins``
  only.
- none about ids: ``stable_id`` is torch-spyre's version-2 rule (``model.handles.handle_id``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spyre_provenance.model import records
from spyre_provenance.model.handles import handle_id

# --- the dataclasses (field names, order and defaults as in torch-spyre main) -------------
# They stand for torch-spyre's own classes (REFERENCE.md section 4), which the adapter reads
# as they are; the reference backend builds them too, so both backends hand the hook the
# same shapes. The rest of the package reads the records ``debug_handle_record`` and
# ``opspec_record`` make of either (``model.records``): the fields repeat there on purpose.


@dataclasses.dataclass(frozen=True)
class SourceLoc:
    file: str
    start_line: int
    start_col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ProvenanceTransform:
    kind: str  # rewrite | fusion | decomposition | clone | remap
    pass_name: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class DebugHandle:
    id: int
    source: SourceLoc | None = None
    aten_op: str | None = None
    ir_chain: tuple[str, ...] = ()
    fused_from: tuple[DebugHandle, ...] = ()
    transform_history: tuple[ProvenanceTransform, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON shape; the id is a string because 63 bits overflow a JavaScript number."""
        return {
            "id": str(self.id),
            "source": self.source.to_dict() if self.source else None,
            "aten_op": self.aten_op,
            "ir_chain": list(self.ir_chain),
            "fused_from": [h.to_dict() for h in self.fused_from],
            "transform_history": [t.to_dict() for t in self.transform_history],
        }


@dataclasses.dataclass
class TensorArg:
    """One tensor an OpSpec reads or writes: torch-spyre main's first seven fields.

    ``device_dtype`` is torch-spyre's ``DataFormats`` enum there, text here; ``allocation``
    holds one of ``hbm``, ``lx``, ``hbm_pool``. Left out: ``device_tile_advance_expr``,
    ``element_arrangement``, ``work_division`` (tiling and core ownership; nothing here reads
    them).
    """

    is_input: bool
    arg_index: int  # position in the kernel's argument list; -1 for kernel-local buffers
    device_dtype: str
    device_size: list[int | str]
    device_coordinates: list[str]  # index expressions, as text
    allocation: dict[str, Any] = dataclasses.field(default_factory=dict)
    name: str | None = None


@dataclasses.dataclass
class OpSpec:
    """torch-spyre main's OpSpec, every field: symbols and sympy expressions as text."""

    op: str
    is_reduction: bool
    iteration_space: dict[str, tuple[int | str, int]]  # symbol -> (range, work division)
    args: Sequence[TensorArg]
    op_info: dict[str, Any]
    #: per enclosing loop, innermost first, the symbols that loop tiles ([] outside loops)
    tiled_symbols: list[list[str]] = dataclasses.field(default_factory=list)
    tiled_symbol_trip_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    #: a dynamic-shape symbol's name -> (max, granularity)
    symbolic_dim_bounds: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    #: the written node's full logical output ranges; None when it exposes none
    node_output_ranges: tuple[int | str, ...] | None = None
    debug_handle: DebugHandle | None = None

    def __post_init__(self) -> None:
        # debug_handle was the sixth field before main put its tiling fields in between: a
        # handle passed by position would silently become tiled_symbols and the op handleless
        if isinstance(self.tiled_symbols, DebugHandle):
            raise TypeError("OpSpec: pass debug_handle by keyword; the sixth field is tiled_symbols")


# --- building a DebugHandle from a buffer's origins ---------------------------------------

#: FX ``node.meta`` key under which a graph pass records what it did to the nodes it created,
#: as a tuple of ``(kind, pass_name, reason)`` tuples (plain data: node meta gets copied).
TRANSFORMS_META_KEY = "spyre_provenance_transforms"

#: Marks the n -> 1 fusion of several FX nodes into one buffer during Inductor lowering.
LOWERING_FUSION_PASS = "inductor.lowering"

_FRAME_RE = re.compile(r'File "([^"]+)", line (\d+)')


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
#: The one file of this package that holds *model* code: its frames are user source.
_EXAMPLES_FILE = os.path.join(_PACKAGE_DIR, "examples.py")


@functools.lru_cache(maxsize=1)
def _internal_roots() -> tuple[str, ...]:
    """Folders whose frames are compiler machinery, not model source: torch and this package."""
    roots = [_PACKAGE_DIR]
    spec = importlib.util.find_spec("torch")  # finds torch without importing it
    if spec and spec.submodule_search_locations:
        roots.extend(os.path.realpath(r) for r in spec.submodule_search_locations)
    return tuple(os.path.join(r, "") for r in roots)


def is_internal_frame(path: str) -> bool:
    """True for frames inside torch or spyre_provenance (the built-in example models excepted).

    Dynamo already leaves torch's own frames out of ``stack_trace``; this filter matters for
    traces recorded by other tools and keeps the rule explicit.
    """
    real = os.path.realpath(path)
    if real == _EXAMPLES_FILE:
        return False
    return any(real.startswith(root) for root in _internal_roots())


def source_from_stack_trace(stack_trace: str | None) -> SourceLoc | None:
    """The innermost non-internal frame of an FX ``stack_trace`` (frames run outer -> inner).

    When every frame is internal, the innermost frame overall (as torch-spyre does): a line in
    torch is still a better lead than nothing.
    """
    if not stack_trace:
        return None
    frames = _FRAME_RE.findall(stack_trace)
    if not frames:
        return None
    user = [f for f in frames if not is_internal_frame(f[0])]
    file, line = (user or frames)[-1]
    return SourceLoc(file=file, start_line=int(line))


def aten_op_name(original_aten: Any) -> str | None:
    """``meta["original_aten"]`` as text: ``str()`` of the OpOverload, e.g. ``aten.addmm.default``.

    torch-spyre's rule (``str(op)``); the overload suffix is kept so an op is named exactly.
    """
    return None if original_aten is None else str(original_aten)


def _meta(node: Any) -> Mapping[str, Any]:
    return getattr(node, "meta", None) or {}


def _sort_key(node: Any) -> tuple[str, str]:
    # FX names are unique per graph; the aten text only breaks ties between synthetic nodes.
    return (str(getattr(node, "name", "")), str(_meta(node).get("original_aten", "")))


def stable_id(
    source: SourceLoc | None,
    aten_op: str | None,
    ir_chain: Sequence[str],
    fused_from: Sequence[DebugHandle] = (),
) -> int:
    """A handle's id from its content (``model.handles.handle_id``, torch-spyre's rule),
    children by their own ids; the transform history is not part of an op's identity."""
    return handle_id(source.to_dict() if source else None, aten_op, ir_chain, [h.id for h in fused_from])


def make_handle(
    source: SourceLoc | None,
    aten_op: str | None,
    ir_chain: Sequence[str],
    fused_from: Sequence[DebugHandle] = (),
    transform_history: Sequence[ProvenanceTransform] = (),
) -> DebugHandle:
    """A DebugHandle whose id is computed from the other fields."""
    return DebugHandle(
        id=stable_id(source, aten_op, ir_chain, fused_from),
        source=source,
        aten_op=aten_op,
        ir_chain=tuple(ir_chain),
        fused_from=tuple(fused_from),
        transform_history=tuple(transform_history),
    )


def _single(values: Iterable[Any]) -> Any:
    """The one distinct non-None value, else None: never pick an arbitrary representative."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    return distinct[0] if len(distinct) == 1 else None


def _transforms_of(buffer: Any, nodes: Sequence[Any]) -> tuple[ProvenanceTransform, ...]:
    # torch-spyre keeps lower-IR history on the buffer; graph passes leave theirs in node meta.
    history = list(getattr(buffer, "_spyre_prov_history", ()) or ())
    for node in nodes:
        for kind, pass_name, reason in _meta(node).get(TRANSFORMS_META_KEY, ()):
            history.append(ProvenanceTransform(kind, pass_name, reason))
    if len(nodes) > 1:
        history.append(
            ProvenanceTransform("fusion", LOWERING_FUSION_PASS, f"{len(nodes)} FX nodes lowered into one buffer")
        )
    return tuple(dict.fromkeys(history))  # drop repeats, keep first-seen order


def build_debug_handle(buffer: Any) -> DebugHandle | None:
    """The DebugHandle of one buffer, from its ``origins`` (REFERENCE.md section 4).

    - origins sorted by name (the set's own order is not stable);
    - ``source``: each origin's innermost non-internal stack frame; the headline only when all
      origins that have one agree, else None (the per-origin sources live in ``fused_from``);
    - ``aten_op``: the same agreement rule over ``meta["original_aten"]``;
    - ``ir_chain``: origin names, then the buffer name;
    - ``fused_from``: one single-origin child handle per origin when there are several;
    - ``transform_history``: what passes recorded (decomposition, ...) plus ``fusion`` when
      several FX nodes became this one buffer.
    Returns None for a buffer without origins.
    """
    nodes = sorted(getattr(buffer, "origins", None) or (), key=_sort_key)
    if not nodes:
        return None
    per_node = [
        (
            str(getattr(n, "name", "")),
            source_from_stack_trace(_meta(n).get("stack_trace")),
            aten_op_name(_meta(n).get("original_aten")),
        )
        for n in nodes
    ]
    get_name = getattr(buffer, "get_name", None)
    buffer_name = get_name() if callable(get_name) else None
    ir_chain = [name for name, _, _ in per_node] + ([buffer_name] if buffer_name else [])
    fused_from: tuple[DebugHandle, ...] = ()
    if len(per_node) > 1:
        fused_from = tuple(make_handle(src, aten, (name,)) for name, src, aten in per_node)
    return make_handle(
        source=_single(src for _, src, _ in per_node),
        aten_op=_single(aten for _, _, aten in per_node),
        ir_chain=ir_chain,
        fused_from=fused_from,
        transform_history=_transforms_of(buffer, nodes),
    )


# --- converting (real or stand-in) OpSpecs to records -------------------------------------
# Duck-typed on purpose: the torch-spyre adapter feeds real torch-spyre objects through here.


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
