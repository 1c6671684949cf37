"""Building a DebugHandle from a buffer's ``origins``, as torch-spyre's ``provenance.py`` does
(REFERENCE.md section 4): the reference backend's handles.

No torch import: the builder works on anything shaped like an Inductor buffer (``origins``
of objects with ``name`` and ``meta``, ``get_name()``), so it is unit-testable on fakes.

Where this model deliberately differs from torch-spyre (documented so nobody "fixes" it back):
- torch-spyre prefers ``buffer.origin_node`` for ``source``/``aten_op`` when Inductor set it;
  that attribute is run-dependent (REFERENCE.md section 5: on a tensor-parallel linear it is
  the collective's ``wait_tensor``, not the matmul), so here provenance rides ``origins`` only.
  Where ``origin_node`` is the one origin that computes and the others only re-index (a
  matmul with its operand's transpose or views, ``q @ k^T``), the ``aten_op`` is the same
  either way: the computing origins' (``compute_origins``).
- none about ids: ``stable_id`` is torch-spyre's version-2 rule (``model.handles.handle_id``).
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

#: FX targets (by overload packet) that only re-index a tensor or pick a tuple element: an
#: origin of one of them computes nothing, and never names a buffer's op.
VIEW_OPS = frozenset(
    "view reshape _unsafe_view permute t transpose expand unsqueeze squeeze slice select "
    "alias as_strided getitem".split()
)

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


def packet_name(target: Any) -> str:
    """An FX target's op name without its overload: ``relu`` for ``aten.relu.default``."""
    packet = getattr(target, "_overloadpacket", None)
    return getattr(packet, "__name__", None) or getattr(target, "__name__", str(target)).split(".")[0]


def compute_origins(nodes: Sequence[Any]) -> list[Any]:
    """The origins that compute: those whose target is no view op (``VIEW_OPS``); all of
    them when every one is a view (a buffer that only copies)."""
    computing = [n for n in nodes if packet_name(getattr(n, "target", "")) not in VIEW_OPS]
    return computing or list(nodes)


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
    - ``aten_op``: the same agreement rule over the ``meta["original_aten"]`` of the origins
      that compute (``compute_origins``: a transpose or view fused into a matmul is none);
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
    computing = {id(n) for n in compute_origins(nodes)}
    return make_handle(
        source=_single(src for _, src, _ in per_node),
        aten_op=_single(aten for n, (_, _, aten) in zip(nodes, per_node, strict=True) if id(n) in computing),
        ir_chain=ir_chain,
        fused_from=fused_from,
        transform_history=_transforms_of(buffer, nodes),
    )
