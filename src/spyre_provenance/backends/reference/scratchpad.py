"""The copies torch-spyre main's scratchpad makes, as post-grad graph passes on the CPU:
``clone_shared_inputs`` (of a graph input read more than once, ``scratchpad/allocator.py``)
and ``lx_relayout_copies`` (of a result its reader takes in other slices among the cores,
an LX relayout, by main's work division: ``core_division``), both made after lowering on
main; and the node facts they and ``lowering``'s passes read (``fake_value``,
``static_val``, ``static_shape``, a no-op ``expand``).

``lowering.SplitAddmmPass`` runs them after the linear passes.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import torch

from spyre_provenance.backends.reference import core_division
from spyre_provenance.backends.reference.ops import ATEN_FALLBACKS, DEVICE

aten = torch.ops.aten

CLONE_INPUTS_PASS = "spyre_reference.clone_shared_inputs"


def fake_value(target: Any, args: tuple[Any, ...]) -> Any:
    """``node.meta["val"]`` for a new node: run the op on its inputs' fake values."""
    from torch._guards import detect_fake_mode

    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    fake_mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        return target(*vals)


def static_val(node: Any) -> torch.Tensor | None:
    """A node's fake value on the device with static sizes, else None."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.device.type != DEVICE:
        return None
    return val if all(isinstance(d, int) for d in val.shape) else None


def static_shape(node: Any) -> list[int] | None:
    """A node's static shape on the device (``static_val``), else None."""
    val = static_val(node)
    return None if val is None else list(val.shape)


# --- main's clone of a graph input read more than once ----------------------------------

#: ops that only re-index their input: a read through them is a read of the input
_VIEWS = frozenset(
    getattr(aten, name).default
    for name in ("view", "reshape", "_unsafe_view", "permute", "t", "expand", "unsqueeze", "squeeze", "alias")
)
#: ops that read an input indirectly (a gather's table): main's scratchpad never clones those
#: and an input an extern (ATen fallback) call reads is not cloned either
_UNCLONED = frozenset(
    (aten.embedding.default, aten.index.Tensor, aten.gather.default, aten.index_select.default, *ATEN_FALLBACKS)
)


#: views that keep the layout: a read through any other (a transpose, a broadcast) is a
#: layout change, which on a card is a restickify, and main's scratchpad does not clone
_SAME_LAYOUT = frozenset(getattr(aten, name).default for name in ("view", "reshape", "_unsafe_view", "alias"))


def _no_op_expand(node: torch.fx.Node) -> bool:
    """Whether ``node`` expands a tensor to its own shape (torch's matmul does, main's
    linear through it): Inductor's ``expand`` lowering returns such an input unchanged."""
    if node.target is not aten.expand.default or not isinstance(node.args[0], torch.fx.Node):
        return False
    shape = static_shape(node)
    return shape is not None and shape == static_shape(node.args[0])


def _through_no_op_expands(node: torch.fx.Node) -> list[tuple[torch.fx.Node, torch.fx.Node]]:
    """Each op reading ``node``, with the node it reads it by: ``node`` itself, or a no-op
    ``expand`` of it (``_no_op_expand``), looked through."""
    reads: list[tuple[torch.fx.Node, torch.fx.Node]] = []
    for user in node.users:
        if _no_op_expand(user):
            reads.extend((reader, user) for reader in user.users)
        else:
            reads.append((user, node))
    return reads


def _copy(
    graph: torch.fx.Graph,
    node: torch.fx.Node,
    after: torch.fx.Node,
    reads: list[tuple[torch.fx.Node, torch.fx.Node]],
    made_by: str,
) -> torch.fx.Node:
    """An ``aten.clone`` of ``node`` right after ``after``, which each ``(reader, via)`` of
    ``reads`` reads instead of ``via``: the backend's own node, with no stack trace and a
    ``from_node`` that says only that the pass ``made_by`` created it, as main's copy (made
    at scheduling, outside any graph pass) has none.

    ``from_node`` is set after the reads move: Inductor runs the pass under a
    GraphTransformObserver, whose replace hook records each ``via`` as a node the clone
    replaced, and so links the clone to ``via``'s pre-grad op and line (a graph input's, a
    forward activation's in a backward graph, or the op whose no-op ``expand`` it is).

    A no-op ``expand`` between ``node`` and its readers keeps reading ``node``, with no
    readers left: main copies after lowering (its scratchpad, at scheduling), so that
    expand, lowered before, re-pointed ``node``'s ``origin_node``, never the copy's;
    Inductor still lowers it, as it lowers every node of the graph."""
    from torch.fx.traceback import NodeSource, NodeSourceAction

    with graph.inserting_after(after):
        clone = graph.create_node("call_function", aten.clone.default, (node,), name="clone")
    clone.meta["val"] = fake_value(aten.clone.default, (node,))
    for reader, via in reads:
        reader.replace_input_with(via, clone)
    clone.meta["from_node"] = [NodeSource(None, made_by, NodeSourceAction.CREATE)]
    return clone


def _readers(node: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The ops reading ``node`` through views that keep its layout; None when a read
    changes its layout or broadcasts it (a transpose, an expand, a smaller operand), or
    when an op writes it (a BatchNorm running statistic's ``copy_`` write-back): main
    clones what is read, and a write redirected to the clone would never reach the input."""
    found: list[torch.fx.Node] = []
    for user in node.users:
        if _writes(user, node):
            return None
        if user.target in _VIEWS:
            if user.target not in _SAME_LAYOUT and not _no_op_expand(user):
                return None
            inner = _readers(user)
            if inner is None:
                return None
            found.extend(inner)
        elif _broadcast(node, user):
            return None
        else:
            found.append(user)
    return found


def _writes(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether ``user`` mutates ``node`` (an argument its schema marks written, ``Tensor(a!)``)."""
    schema = getattr(user.target, "_schema", None)
    if schema is None:
        return False
    for position, argument in enumerate(schema.arguments):
        value = user.args[position] if position < len(user.args) else user.kwargs.get(argument.name)
        if value is node and argument.alias_info is not None and argument.alias_info.is_write:
            return True
    return False


def _broadcast(node: torch.fx.Node, user: torch.fx.Node) -> bool:
    """Whether ``user`` reads ``node`` broadcast (its result larger than ``node``)."""
    mine, out = node.meta.get("val"), user.meta.get("val")
    return isinstance(mine, torch.Tensor) and isinstance(out, torch.Tensor) and out.numel() > mine.numel()


def clone_shared_inputs(gm: torch.fx.GraphModule) -> int:
    """Clone each CPU graph input that two or more ops read, before anything else runs,
    and let them read the clone, as torch-spyre main's scratchpad allocator does: it pins
    such an input in the core's scratchpad (LX) by a ``clone`` (``scratchpad/allocator.py``:
    an input read more than once, in full, not indirectly, by no extern kernel, behind no
    restickify), and where its readers divide it alike among the cores (``_divided_unlike``,
    main's work division). Its further conditions depend on a card's memory, which the CPU
    has not. Returns how many were cloned.

    A clone is the backend's own node (``_copy``): the input it copies is no origin of it,
    where a backward graph's input (a forward activation AOTAutograd saved) would link it
    to a pre-grad op of another source line."""
    graph = gm.graph
    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    count = 0
    for node in inputs:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.device.type != DEVICE:
            continue
        readers = _readers(node)
        if (
            readers is None
            or len(readers) < 2
            or any(r.op != "call_function" or r.target in _UNCLONED for r in readers)
            or _divided_unlike(node)
        ):
            continue
        _copy(graph, node, inputs[-1], _through_no_op_expands(node), CLONE_INPUTS_PASS)
        count += 1
    if count:
        gm.recompile()
    return count


def _divided_unlike(node: torch.fx.Node) -> bool:
    """Whether main's readers of a shared graph input divide it so that main keeps it in
    HBM, uncloned (a core-division mismatch, ``get_ncores_for_buffers``,
    ``scratchpad/utils.py:449-513``, which ``allocator.py:_input_residency_reason`` turns
    down): a reader whose slices of the input cover fewer cores than it runs on (a matmul
    splitting N reads the whole of its left operand on the cores N is split over: a
    broadcast read; main's division of a linear at width 128 does), or two readers slicing
    it differently. Judged by main's work division (``_division``) where the model reaches
    the reader; one it does not reach is taken as agreeing, as before."""
    divisions = [_division(reader, via) for reader, via in _through_no_op_expands(node)]
    known = [d for d in divisions if d is not None]
    if any(math.prod(split for _, split, _ in d.view()) != d.cores for d in known):
        return True
    return len({d.view() for d in known}) > 1


# --- main's LX relayout copy of a matmul's result --------------------------------------

LX_RELAYOUT_PASS = "spyre_reference.lx_relayout"
_MATMULS = frozenset((aten.mm.default, aten.bmm.default))


def _matmul(node: torch.fx.Node) -> core_division.Matmul | None:
    """The matmul an ``mm``/``bmm`` node is, in the terms of main's work division; None
    where the model does not reach: sizes of 1 (main's loops drop them), a left operand
    not stored row by row (its stick would not be K), or not 2-byte floats (64 a stick)."""
    out, left, right = (static_val(n) for n in (node, *node.args[:2]))
    if node.op != "call_function" or out is None or left is None or right is None or out.dtype.itemsize != 2:
        return None
    if 1 in out.shape or left.shape[-1] == 1 or not left.is_contiguous():
        return None
    *batch, m, n = out.shape
    shared = not batch or right.stride()[0] == 0  # a linear's weight, expanded over the batch
    return core_division.Matmul(tuple(batch), m, n, left.shape[-1], shared)


def _pointwise(node: torch.fx.Node, shape: Any) -> bool:
    """Whether ``node`` is a pointwise op of ``shape`` whose operands are stored row by row
    (their stick the last dimension, as the output's), all 2-byte floats (main counts a
    stick by the widest elements of an op's tensors, ``work_division.py:317-360``) but
    for scalars, no size of 1."""
    out = static_val(node)
    if node.op != "call_function" or torch.Tag.pointwise not in getattr(node.target, "tags", ()):
        return False
    if out is None or out.shape != shape or out.dtype.itemsize != 2 or 1 in out.shape:
        return False
    operands = [static_val(a) for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.fx.Node)]
    return all(
        v is not None and v.dim() <= out.dim() and v.is_contiguous() and (v.dim() == 0 or v.dtype.itemsize == 2)
        for v in operands
    )


def _division(node: torch.fx.Node, tensor: torch.fx.Node) -> core_division.Division | None:
    """How ``node`` divides ``tensor`` (its own result, or one it reads once, element for
    element): a pointwise op of its shape, or a matmul on it or on its left operand; None
    where the model does not reach."""
    value = static_val(tensor)
    if value is None:  # dynamic sizes (a shared input of a dynamic-shape graph): not reached
        return None
    shape = value.shape
    reads = [a for a in (*node.args, *node.kwargs.values()) if a is tensor]
    if node is not tensor and len(reads) != 1:
        return None
    if node.op == "call_function" and node.target in _MATMULS:
        matmul = _matmul(node)
        operand = "out" if node is tensor else "left" if node.args[0] is tensor else None
        if matmul is None or operand is None:
            return None
        return core_division.matmul_division_of(matmul, operand, _STICK)
    return core_division.pointwise_division(shape, _STICK) if _pointwise(node, shape) else None


_STICK = core_division.STICK_BYTES // 2  # 2-byte floats (``_matmul``, ``_pointwise``)


def _copy_views(node: torch.fx.Node) -> list[tuple[Any, list[tuple[torch.fx.Node, torch.fx.Node]]]]:
    """The copies main makes of ``node``'s result: (view, the ``(reader, via)`` reading it,
    ``_through_no_op_expands``)."""
    reads = _through_no_op_expands(node)
    if static_val(node) is None or not reads:
        return []
    writer = _division(node, node)
    divisions = [_division(reader, via) for reader, via in reads]
    if writer is None or any(d is None for d in divisions):
        return []
    found = core_division.relayouts(writer, divisions)  # type: ignore[arg-type]  # no None left
    groups: dict[Any, list[tuple[torch.fx.Node, torch.fx.Node]]] = {}
    for read, copied in zip(reads, found or (), strict=False):
        if copied is not None:
            groups.setdefault(copied, []).append(read)
    return list(groups.items())


def lx_relayout_copies(gm: torch.fx.GraphModule) -> int:
    """Copy a result for its readers where torch-spyre main does: an ``aten.clone`` right
    after the op, read by them instead (main's LX relayout ``identity``,
    ``scratchpad/lx_relayout.py:356-371``; the rule in ``core_division``). Judged where the
    op and every reader of its result are pointwise ops of its shape or matmuls on it
    (``_division``): main gives up on a tensor any reader of which it cannot relayout
    (``:271-345``). The copy is the backend's own node (``_copy``): not the op's whose
    result it copies, nor, through its no-op ``expand``, the reader's.
    Returns how many copies were made."""
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        place = node
        for _, reads in _copy_views(node):
            place = _copy(graph, node, place, reads, LX_RELAYOUT_PASS)
            count += 1
    if count:
        gm.recompile()
    return count
