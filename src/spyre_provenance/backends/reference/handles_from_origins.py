"""Building a DebugHandle from a buffer's ``origins`` and ``origin_node``, as torch-spyre
main's ``provenance.build_debug_handle`` does (``torch_spyre/_inductor/provenance.py:133-208``,
REFERENCE.md section 4): the reference backend's handles.

No torch import: the builder works on anything shaped like an Inductor buffer (``origins``
of objects with ``name`` and ``meta``, ``origin_node``, ``get_name()``), so it is
unit-testable on fakes.

The rule is main's, with no deliberate difference:
- ``origin_node``, when Inductor set it, names the op (``aten_op``) and its line (``source``).
  Inductor's ``assign_origin_node`` (``torch/_inductor/ir.py``, called per FX node from
  ``GraphLowering.run_node``) gives a buffer the *last* FX node whose lowering returned it
  unchanged, so a no-op that passes a result through re-points it: the op a linear reads is
  named by that linear's ``expand`` of its input to its own shape (``aten.linear``), the
  operand of ``q @ k^T`` by the matmul's (``aten.expand``), a tensor-parallel matmul by the
  collective's ``wait_tensor``. It is run-dependent in that sense (REFERENCE.md section 5);
  the reference's graph makes the same pass-through nodes as main's (``lowering``), so it
  lands where main's does.
- else the origins' agreement (none where they disagree; the per-origin ones in ``fused_from``).
- ``stable_id`` is torch-spyre's version-2 rule (``model.handles.handle_id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spyre_provenance.backends.reference.lookalike import DebugHandle, ProvenanceTransform, SourceLoc
from spyre_provenance.model.frames import user_frame
from spyre_provenance.model.handles import handle_id

#: FX ``node.meta`` key under which a graph pass records what it did to the nodes it created,
#: as a tuple of ``(kind, pass_name, reason)`` tuples (plain data: node meta gets copied).
TRANSFORMS_META_KEY = "spyre_provenance_transforms"

#: Marks the n -> 1 fusion of several FX nodes into one buffer during Inductor lowering.
LOWERING_FUSION_PASS = "inductor.lowering"


def source_from_stack_trace(stack_trace: str | None) -> SourceLoc | None:
    """Where an FX node's ``stack_trace`` says the op was written: its user frame
    (``model.frames.user_frame``) as a SourceLoc; None without a frame."""
    where = user_frame(stack_trace)
    return None if where is None else SourceLoc(file=where.file, start_line=where.line)


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
    """The DebugHandle of one buffer, from its ``origins`` and ``origin_node`` (REFERENCE.md
    section 4, main's ``provenance.build_debug_handle``).

    - origins sorted by name (the set's own order is not stable);
    - ``source`` and ``aten_op``: the ``origin_node``'s innermost user frame and
      ``meta["original_aten"]`` when Inductor set one (its source, when it has no stack
      trace, the origins' agreed one); else each the one value all origins that have one
      agree on, else None (the per-origin values live in ``fused_from``);
    - ``ir_chain``: origin names, then the buffer name;
    - ``fused_from``: one single-origin child handle per origin when there are several;
    - ``transform_history``: what passes recorded (decomposition, ...) plus ``fusion`` when
      several FX nodes became this one buffer.
    Returns None for a buffer without origins.
    """
    nodes = sorted(getattr(buffer, "origins", None) or (), key=_sort_key)
    if not nodes:
        return None
    per_node = [(str(getattr(n, "name", "")), *_provenance_of(n)) for n in nodes]
    source = _single(src for _, src, _ in per_node)
    aten_op = _single(aten for _, _, aten in per_node)
    origin_node = getattr(buffer, "origin_node", None)
    if origin_node is not None:
        origin_source, aten_op = _provenance_of(origin_node)
        source = origin_source or source
    get_name = getattr(buffer, "get_name", None)
    buffer_name = get_name() if callable(get_name) else None
    ir_chain = [name for name, _, _ in per_node] + ([buffer_name] if buffer_name else [])
    fused_from: tuple[DebugHandle, ...] = ()
    if len(per_node) > 1:
        fused_from = tuple(make_handle(src, aten, (name,)) for name, src, aten in per_node)
    return make_handle(
        source=source,
        aten_op=aten_op,
        ir_chain=ir_chain,
        fused_from=fused_from,
        transform_history=_transforms_of(buffer, nodes),
    )


def _provenance_of(node: Any) -> tuple[SourceLoc | None, str | None]:
    """An FX node's source line and ATen op (``meta["stack_trace"]``, ``["original_aten"]``)."""
    meta = _meta(node)
    return source_from_stack_trace(meta.get("stack_trace")), aten_op_name(meta.get("original_aten"))
